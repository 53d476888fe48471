"""``mockllm mcp NAME [PATH …]``: one `mcp server` block served over stdio, for clients that spawn
their tool servers (MCP's stdio transport: one compact JSON-RPC message per line, both ways).

stdout carries only JSON-RPC lines; problems go to stderr. With PATH, the process serves the scripts
itself: one session and one conversation, its own engine (state, journal and steps are this
process's). With ``--url`` it relays every line to a running server's ``/mcp/NAME`` instead, so the
calls share that server's library, conversations and journal (``--conversation KEY`` ties them to a
chat, as the ``x-mockllm-conversation`` header does on HTTP). Requests are answered concurrently, so
a `hang` step holds only its own call; `disconnect after 0 chunks` ends the process, which is what a
client sees when a tool server dies. End of input ends the process."""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import sys
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from typing import IO, Any

from mockllm.runtime.mcp import protocol as p
from mockllm.server.mcp.service import McpService, Session, software_version

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
            raw = await _next_line(reader, self.dropped)
            if raw is None:
                break
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                self.write(p.rpc_error(None, p.PARSE_ERROR, f"Parse error: {exc}"))
                continue
            msg = p.read_message(obj, len(raw))
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
        try:
            await self._answer(msg)
        except Exception as exc:  # a bug must not leave the client waiting: a JSON-RPC error, on stderr too
            print(f"mockllm: internal error answering {msg.method}: {exc!r}", file=sys.stderr)
            if msg.kind == "request":
                self.write(p.rpc_error(msg.id, p.INTERNAL_ERROR, "mockllm: internal error"))

    async def _answer(self, msg: p.Message) -> None:
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


class Relay:
    """``--url``: each message POSTed to a running server's ``/mcp/NAME``, its answers written back."""

    def __init__(self, url: str, name: str, conversation: str | None, out: IO[bytes]) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url}")
        self.parts = parts
        self.path = parts.path.rstrip("/") + "/mcp/" + urllib.parse.quote(name)
        self.conversation = conversation
        self.out = out
        self.session_id: str | None = None
        self.lock = threading.Lock()
        self.dropped = asyncio.Event()

    def _connection(self) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self.parts.scheme == "https" else http.client.HTTPConnection
        return kind(self.parts.hostname or "", self.parts.port)

    def _headers(self) -> dict[str, str]:
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        if self.conversation:
            headers["x-mockllm-conversation"] = self.conversation
        return headers

    def post(self, body: bytes) -> list[bytes] | None:
        """The JSON-RPC messages answering ``body``; None when the connection dropped."""
        connection = self._connection()
        try:
            connection.request("POST", self.path, body, self._headers())
            response = connection.getresponse()
            data = response.read()
            session = response.getheader("mcp-session-id")
            kind = response.getheader("content-type") or ""
        except (OSError, http.client.HTTPException):
            return None
        finally:
            connection.close()
        if session:
            self.session_id = session
        if "text/event-stream" in kind:
            return [line[5:].strip() for line in data.splitlines() if line.startswith(b"data:") and line[5:].strip()]
        if not data.strip():
            return []
        return [_addressed(data, body)]

    def write(self, lines: list[bytes]) -> None:
        with self.lock:
            for line in lines:
                self.out.write(line.replace(b"\n", b"") + b"\n")
            self.out.flush()

    def end(self) -> None:
        """Close the session on the server (best effort: the process is ending)."""
        if not self.session_id:
            return
        connection = self._connection()
        try:
            connection.request("DELETE", self.path, headers=self._headers())
            connection.getresponse().read()
        except (OSError, http.client.HTTPException):
            pass
        finally:
            connection.close()

    async def serve(self, reader: asyncio.StreamReader) -> int:
        loop = asyncio.get_running_loop()

        def relay(body: bytes) -> None:
            lines = self.post(body)
            if lines is None:
                loop.call_soon_threadsafe(self.dropped.set)
            else:
                self.write(lines)

        while not self.dropped.is_set():
            raw = await _next_line(reader, self.dropped)
            if raw is None:
                break
            if raw.strip():
                _in_thread(relay, raw.strip())
        await asyncio.to_thread(self.end)
        return 1 if self.dropped.is_set() else 0


def _addressed(answer: bytes, request: bytes) -> bytes:
    """An HTTP error answer (``id: null``: HTTP ties it to its request) given the request's id, which
    is all a stdio client can match it by."""
    try:
        reply, sent = json.loads(answer), json.loads(request)
    except ValueError:
        return answer
    if isinstance(reply, dict) and reply.get("id", 0) is None and isinstance(sent, dict) and "id" in sent:
        return json.dumps({**reply, "id": sent["id"]}, ensure_ascii=False, separators=(",", ":")).encode()
    return answer


def _in_thread(work: Callable[[bytes], None], body: bytes) -> None:
    """A daemon thread, so a call the server holds (`hang`) never keeps the process alive."""
    threading.Thread(target=work, args=(body,), daemon=True).start()


async def _next_line(reader: asyncio.StreamReader, dropped: asyncio.Event) -> bytes | None:
    """The next input line; None at end of input or once the connection dropped."""
    reading = asyncio.ensure_future(reader.readline())
    waiting = asyncio.ensure_future(dropped.wait())
    await asyncio.wait((reading, waiting), return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if not reading.done():
        reading.cancel()
        return None
    try:
        line = reading.result()
    except ValueError:  # a line past the limit: answered as what it is, no JSON message
        return b"\xff"
    return line or None


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
    url = getattr(args, "url", None)
    if url:
        try:
            relay = Relay(url, name, getattr(args, "conversation", None), sys.stdout.buffer)
        except ValueError as exc:
            print(f"mockllm: --url: {exc}", file=sys.stderr)
            return 2
        return asyncio.run(_relay(relay))
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
    service = McpService(engine, StateStore(engine), software_version())
    if service.server(name) is None:
        known = ", ".join(f'"{n}"' for n in service.server_names()) or "none"
        print(f'mockllm: no `mcp server "{name}"` in {", ".join(paths)} (declared: {known})', file=sys.stderr)
        return 2
    return asyncio.run(_serve(service, name))


async def _stdin() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def _serve(service: McpService, name: str) -> int:
    server = StdioServer(service, name, sys.stdout.buffer)
    return await server.serve(await _stdin())


async def _relay(relay: Relay) -> int:
    return await relay.serve(await _stdin())
