"""MCP tool servers on the wire: Streamable HTTP at ``/mcp/NAME`` (``http.py``) and stdio for
``mockllm mcp NAME`` (``stdio.py``), both answering through one :class:`~.service.McpService`.

JSON-RPC is handled here by hand rather than by the official ``mcp`` package's server: the package
stays an optional extra (``pip install mockllm`` keeps its few dependencies), every answer goes
through the engine (steps, faults, the journal) with no task group per session in between, and the
faults (latency, hang, a dropped connection) are sent exactly when the script says. The official
SDK's client is the judge in the tests (docs/mcp.md)."""
