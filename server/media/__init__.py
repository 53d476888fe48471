"""What the media operations need beyond a provider route: the pictures an images answer gives as
``url``, served at ``/mockllm/images/…`` (``images.py``). Speech, transcription and images themselves
are provider routes like embeddings (their parse/render pairs are in ``runtime/providers/``)."""
