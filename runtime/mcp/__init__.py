"""MCP tool servers scripted by `mcp server` blocks: JSON-RPC messages in, answers out (no I/O here)."""
