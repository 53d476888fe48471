"""``mockllm mcp NAME [PATH …]``: one `mcp server` block served over stdio, for clients that spawn
their tool servers (MCP's stdio transport: one compact JSON-RPC message per line, both ways).

stdout carries only JSON-RPC lines; problems go to stderr. The process is one session and one
conversation (its own engine: state, journal and steps are this process's). Requests are answered
concurrently, so a `hang` step holds only its own call; `disconnect after 0 chunks` ends the
process, which is what a client sees when a tool server dies. End of input ends the process."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from typing import IO, Any

from mockllm.runtime.mcp import protocol as p
from mockllm.server.mcp.service import McpService, Session

MAX_LINE = 64 * 1024 * 1024
ENV_SCENARIOS = "MOCKLLM_SCENARIOS"


def _line(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


class StdioServer:
    """Answers the messages read from ``reader``, writing each answer as a line to ``out``."""

    def __init__(self, service: McpService, name: str, out: IO[bytes]) -> None:
        server = service.server(name)
        assert server is not None
        self.server = server
        self.service = service
        self.session: Session = service.sessions.open()
        self.out = out
        self.tasks: set[asyncio.Task[None]] = set()
        self.dropped = asyncio.Event()

    def write(self, obj: Any) -> None:
        self.out.write(_line(obj))
        self.out.flush()

    async def serve(self, reader: asyncio.StreamReader) -> int:
        while not self.dropped.is_set():
            try:
                raw = await reader.readline()
            except ValueError:  # a line past the limit: its rest is dropped with it
                self.write(p.rpc_error(None, p.INVALID_REQUEST, "Invalid Request: message too large"))
                continue
            if not raw:
                break
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                self.write(p.rpc_error(None, p.PARSE_ERROR, f"Parse error: {exc}"))
                continue
            msg = p.read_message(obj)
            if isinstance(msg, dict):
                self.write(msg)
                continue
            task = asyncio.ensure_future(self.answer(msg))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        for task in list(self.tasks):
            task.cancel()
        return 1 if self.dropped.is_set() else 0

    async def answer(self, msg: p.Message) -> None:
        service = self.service
        handled = await service.handle(self.server, msg, self.session)
        call = handled.call
        if call is None:
            if handled.message is not None:
                self.write(handled.message)
            return
        if call.latency_s > 0:
            await asyncio.sleep(call.latency_s)
        if call.hang:
            service.settle(handled.entry_id, 0, note="hang: no answer on stdio")
            await asyncio.Event().wait()  # until the client closes our input (the task is cancelled)
        if call.drop:
            service.settle(handled.entry_id, 0, note="disconnect: the tool server process ended")
            self.dropped.set()
            return
        service.settle(handled.entry_id, call.status)
        if call.has_raw:
            self.out.write((call.raw if isinstance(call.raw, str) else json.dumps(call.raw)).encode() + b"\n")
            self.out.flush()
        elif call.message is not None:
            self.write(call.message)


def library_paths(paths: Sequence[str]) -> list[str]:
    if paths:
        return list(paths)
    return [x for x in os.environ.get(ENV_SCENARIOS, "").split(os.pathsep) if x.strip()]


def mcp_command(args: argparse.Namespace) -> int:
    """`mockllm mcp NAME [PATH …]`: the entry point the CLI calls."""
    from mockllm.dsl.diagnostics import render
    from mockllm.dsl.machines.compiler import load_and_compile
    from mockllm.runtime.engine.engine import Engine
    from mockllm.server.state.store import StateStore

    name = str(args.name)
    paths = library_paths(getattr(args, "paths", None) or [])
    if not paths:
        print("mockllm: give the scripts that declare the server: mockllm mcp NAME PATH …", file=sys.stderr)
        return 2
    library, loaded, diagnostics = load_and_compile(paths)
    if library is None or any(d.is_error for d in diagnostics):
        print(render(diagnostics, loaded.sources), file=sys.stderr)
        print("mockllm: not serving: the library has errors", file=sys.stderr)
        return 1
    engine = Engine(library)
    service = McpService(engine, StateStore(engine), getattr(args, "software", ""))
    if service.server(name) is None:
        known = ", ".join(f'"{n}"' for n in service.server_names()) or "none"
        print(f'mockllm: no `mcp server "{name}"` in {", ".join(paths)} (declared: {known})', file=sys.stderr)
        return 2
    return asyncio.run(_serve(service, name))


async def _serve(service: McpService, name: str) -> int:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    server = StdioServer(service, name, sys.stdout.buffer)
    return await server.serve(reader)
