"""The ASGI hosts that serve the app on a socket: Hypercorn (the default), Uvicorn on httptools with a
lean request cycle (the ``fast`` extra) and Granian (the ``granian`` extra)."""
