"""``mockllm record``: a recording proxy in front of a real provider (recorder) and the script files it
writes (script_files)."""
