"""``mockllm record``: a recording proxy for every provider route on one port.

Each request is forwarded unchanged (auth included) to its provider's upstream with httpx, and the
answer is streamed back to the client as it arrives (:mod:`mockllm.server.passthrough.forward`, which
``mockllm serve --passthrough`` forwards with too). When an exchange ends, it is read with the same
wire knowledge as serving (:mod:`mockllm.runtime.recording`) and its conversation's script is
rewritten atomically, so a recorder killed at any moment leaves every completed exchange on disk.
Credentials are stripped before anything is kept (:mod:`mockllm.runtime.recording.exchange`).

httpx is not a dependency of ``pip install mockllm``: the ``record`` extra installs it."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mockllm.runtime.providers.base import RenderContext
from mockllm.runtime.recording.exchange import Exchange
from mockllm.runtime.recording.output import script_text
from mockllm.runtime.recording.translate import Turn, conversations, read_exchange, script
from mockllm.runtime.request import Provider
from mockllm.server.hosts.hypercorn_server import serve_hypercorn
from mockllm.server.hosts.table import Stopping
from mockllm.server.http.routes import provider_for
from mockllm.server.http.streaming import Channel
from mockllm.server.passthrough.forward import (
    PUBLIC_APIS,
    check_reachable,
    fetch_pictures,
    forward,
    named_upstreams,
    new_client,
    parse_upstreams,
)
from mockllm.server.record.script_files import write_assets, write_script
from mockllm.server.runner import bind_socket, run_until_interrupted, stop_on_signals, url_for

__all__ = ["PUBLIC_APIS", "Recorder", "check_reachable", "named_upstreams", "parse_upstreams", "record_command"]

HTTPX_MISSING = "mockllm record: the recording proxy needs httpx: pip install 'mockllm[record]'"


class Recorder:
    """The ASGI app: forwards, streams back, and writes each conversation's script as exchanges end."""

    def __init__(self, out_dir: Path, upstreams: Mapping[str, str], *, keep_timing: bool, timeout_s: float) -> None:
        self.out_dir = out_dir
        self.upstreams = dict(upstreams)
        self.keep_timing = keep_timing
        self.client = new_client(timeout_s)
        self.turns: list[Turn] = []
        self.lock = asyncio.Lock()
        self.written = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                pass
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return

        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        path = scope["path"]
        provider: Provider = provider_for(path, {k.lower(): v for k, v in headers})
        channel = Channel(receive, send)
        channel.body_done = True
        exchange = await forward(
            self.client,
            channel,
            provider=provider,
            base=self.upstreams[provider],
            method=scope["method"],
            raw_path=scope.get("raw_path") or path.encode(),  # as sent: a signed request (AWS SigV4) signs it
            path=path,
            query=scope.get("query_string", b"").decode("latin-1"),
            headers=headers,
            body=bytes(body),
            ctx=RenderContext("0" * 50, int(time.time()), "req_mockllm_record"),
            who="record",
        )
        if exchange is None:  # the upstream could not be reached: the client has its 502
            return
        await self._keep(exchange)
        if not exchange.disconnected:  # when cut, the client sees the same cut
            await channel.end()

    async def _keep(self, exchange: Exchange) -> None:
        turn = read_exchange(exchange, await fetch_pictures(self.client, exchange))
        if turn is None:
            return
        async with self.lock:
            self.turns.append(turn)
            for conv in conversations(self.turns):
                if any(t is turn for t in conv.turns):
                    s = script(conv, self.keep_timing)
                    write_assets(self.out_dir, s.assets)
                    path = write_script(self.out_dir, s.filename, script_text(s))
                    self.written += 1
                    print(f"mockllm record: {path} ({len(conv.turns)} steps)", file=sys.stderr, flush=True)


def record_command(args: argparse.Namespace) -> int:
    try:
        import httpx  # noqa: F401
    except ImportError:
        print(HTTPX_MISSING, file=sys.stderr)
        return 1
    upstreams = parse_upstreams(args.upstream)
    check_reachable(named_upstreams(args.upstream))
    out_dir = Path(args.out)
    recorder = Recorder(out_dir, upstreams, keep_timing=args.keep_timing, timeout_s=args.timeout)
    try:
        sock = bind_socket(args.host, args.port)
    except OSError as exc:
        print(f"mockllm record: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"mockllm recording on {url_for(args.host, sock)}", flush=True)

    async def main() -> None:
        stop = stop_on_signals()

        async def stopped() -> None:
            await stop.wait()

        try:
            await serve_hypercorn(recorder, sock, Stopping(stopped, grace_s=5.0))
        finally:
            await recorder.client.aclose()

    return run_until_interrupted(main, sock)
