"""Conversation state and the journal in Redis (``mockllm serve --state redis://…``): the store
(store), the shared library every process serves (library), the Lua scripts it runs (``*.lua``, read by
scripts), the commit's own connections (lane) read below redis-py's API (wire, guarded), and how values
are written (codec)."""
