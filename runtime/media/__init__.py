"""Audio and pictures made and read without I/O: mockllm's speech, transcription and image replies.

Every writer here is plain Python over bytes (no codec library): the containers are simple, and the
sound is silence in frames each codec defines as valid, so ``ffprobe`` (and any decoder) reads them.
Audio that mockllm makes carries its text, which :func:`~mockllm.runtime.media.audio.listen` reads
back, so a test's speak → listen round trip needs no script. Pictures are PNG written with ``zlib``;
JPEG and WebP need Pillow (the ``images`` extra)."""
