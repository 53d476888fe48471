"""The baseline the HTTP rows of the benchmark are measured against: a bare Starlette route that answers
an OpenAI chat request with the same bytes mockllm sends, on the same server with the same settings.

`POST /v1/chat/completions` parses the JSON body (as any real handler would), then:

- without ``stream``: returns the canned chat completion through ``JSONResponse`` (fresh ``id`` and
  ``created``, the same compact JSON and the same response headers as mockllm);
- with ``stream``: streams the canned SSE events, one body message per event, each serialised with
  ``json.dumps`` per request, back to back;
- with ``stream`` and model ``bench-timed``: waits the scripted latency, then sends the canned events
  with content events spaced the scripted interval apart (measured from the first, as mockllm does).

The canned bodies are what `bench/run.py` captured from the running mockllm server (``--reply``,
``--stream``, ``--timed``); the copies under ``bench/scenarios/`` are used when none are given.

Run: ``python bench/baseline_app.py [--port 0] [--server hypercorn|uvicorn|granian]``; the first stdout line
is ``baseline listening on http://HOST:PORT``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mockllm.server import runner
from mockllm.server.hosts.table import DEFAULT_HOST, HOST_NAMES, HOSTS, Stopping

HERE = Path(__file__).resolve().parent
DEFAULT_REPLY = HERE / "scenarios" / "reply.json"
DEFAULT_STREAM = HERE / "scenarios" / "stream.sse"
DEFAULT_TIMED = HERE / "scenarios" / "timed.sse"
TIMED_MODEL = "bench-timed"
TIMED_LATENCY_S = 0.050  # the `latency 50ms` of bench/scenarios/serve.mockllm
TIMED_INTERVAL_S = 0.020  # its `stream 5 chunks, 20ms apart`

Event = Any  # a parsed JSON event, or the raw bytes of a non-JSON one (`[DONE]`)


def sse_events(data: bytes) -> list[bytes]:
    """The events of an SSE body, each without its blank-line terminator."""
    return [e for e in data.replace(b"\r\n", b"\n").split(b"\n\n") if e.strip()]


def event_json(event: bytes) -> Any | None:
    """The JSON payload of a ``data: {...}`` event, else None."""
    if not event.startswith(b"data: "):
        return None
    payload = event[len(b"data: ") :]
    if not payload.startswith((b"{", b"[")):
        return None
    try:
        return json.loads(payload)
    except ValueError:
        return None


def is_content(obj: Any) -> bool:
    """Whether a parsed OpenAI chunk carries text (what `stream … apart` spaces)."""
    if not isinstance(obj, dict):
        return False
    choices = obj.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return False
    delta = choices[0].get("delta") or {}
    return bool(isinstance(delta, dict) and (delta.get("content") or delta.get("tool_calls")))


def load_events(path: Path) -> list[Event]:
    out: list[Event] = []
    for raw in sse_events(path.read_bytes()):
        obj = event_json(raw)
        out.append(raw if obj is None else obj)
    return out


def _encode(event: Event) -> bytes:
    if isinstance(event, bytes):
        return event + b"\n\n"
    return b"data: " + json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


def _headers() -> dict[str, str]:
    """The extra headers mockllm sends, with values of the same size."""
    return {
        "x-request-id": "req_" + uuid.uuid4().hex[:24],
        "x-mockllm-conversation": "0123456789abcdef",
        "x-mockllm-step": "bench/answer",
    }


def create_app(reply: dict[str, Any], stream: Sequence[Event], timed: Sequence[Event]) -> Starlette:
    def fresh_id() -> str:
        return "chatcmpl-" + uuid.uuid4().hex[:24]

    async def whole() -> Response:
        body = dict(reply)
        body["id"] = fresh_id()
        body["created"] = int(time.time())
        return JSONResponse(body, headers=_headers())

    async def streamed() -> Response:
        async def frames() -> AsyncIterator[bytes]:
            for event in stream:
                yield _encode(event)

        return StreamingResponse(frames(), media_type="text/event-stream", headers=_headers())

    async def spaced() -> Response:
        await asyncio.sleep(TIMED_LATENCY_S)

        async def frames() -> AsyncIterator[bytes]:
            loop = asyncio.get_running_loop()
            first: float | None = None
            sent = 0
            for event in timed:
                if not isinstance(event, bytes) and is_content(event):
                    if first is None:
                        first = loop.time()
                    else:
                        delay = first + sent * TIMED_INTERVAL_S - loop.time()
                        if delay > 0:
                            await asyncio.sleep(delay)
                    sent += 1
                yield _encode(event)

        return StreamingResponse(frames(), media_type="text/event-stream", headers=_headers())

    async def chat(request: Request) -> Response:
        payload = await request.json()
        if not isinstance(payload, dict) or not payload.get("stream"):
            return await whole()
        if payload.get("model") == TIMED_MODEL:
            return await spaced()
        return await streamed()

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


# ------------------------------------------------------------------------------------------------
# Serving, through `mockllm serve`'s own functions: the same server settings and event loop


def serve(app: Starlette, sock: socket.socket, server: str, loop: str | None = None) -> int:
    """Serve ``app`` as `mockllm serve` does: mockllm's runner functions for ``server``, on the event
    loop it would choose (or ``loop``)."""
    missing = runner.server_missing(server)
    if missing is not None:
        print(f"baseline: {missing}", file=sys.stderr)
        return 2
    try:
        factory = runner.loop_factory(loop or runner.default_loop(server))
    except ImportError:
        print("baseline: uvloop is not installed", file=sys.stderr)
        return 2
    serving = HOSTS[server].serve()

    async def main() -> None:
        await serving(app, sock, Stopping(runner.stop_on_signals().wait))

    with contextlib.suppress(KeyboardInterrupt), asyncio.Runner(loop_factory=factory) as run:
        run.run(main())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Bare Starlette baseline for the mockllm benchmark.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--server", choices=HOST_NAMES, default=DEFAULT_HOST)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default=None, help="default: as `mockllm serve`")
    parser.add_argument("--reply", type=Path, default=DEFAULT_REPLY, help="the non-streamed JSON body to return")
    parser.add_argument("--stream", type=Path, default=DEFAULT_STREAM, help="the SSE body to stream")
    parser.add_argument("--timed", type=Path, default=DEFAULT_TIMED, help="the SSE body of the timed stream")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
    try:
        reply = json.loads(args.reply.read_bytes())
        stream = load_events(args.stream)
        timed = load_events(args.timed)
    except (OSError, ValueError) as exc:
        print(f"baseline: cannot read the canned replies: {exc}", file=sys.stderr)
        return 1
    app = create_app(reply, stream, timed)
    try:
        sock = runner.bind_socket(args.host, args.port)
    except OSError as exc:
        print(f"baseline: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    print(f"baseline listening on http://{args.host}:{sock.getsockname()[1]}", flush=True)
    try:
        return serve(app, sock, args.server, args.loop)
    finally:
        sock.close()


if __name__ == "__main__":
    sys.exit(main())
