"""The forms a syntax tree is written out in: canonical text (``mockllm fmt``) and JSON."""
