"""``mockllm record``: a recording proxy for every provider route on one port.

Each request is forwarded unchanged (auth included) to its provider's upstream with httpx, and the
answer is streamed back to the client as it arrives. When an exchange ends, it is read with the same
wire knowledge as serving (:mod:`mockllm.runtime.recording`) and its conversation's script is
rewritten atomically, so a recorder killed at any moment leaves every completed exchange on disk.
Credentials are stripped before anything is kept (:mod:`mockllm.runtime.recording.exchange`).

httpx is not a dependency of ``pip install mockllm``: the ``record`` extra installs it."""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mockllm.errors import ServerError, UsageError
from mockllm.runtime.providers.base import RenderContext
from mockllm.runtime.providers.registry import ENTRIES
from mockllm.runtime.recording.exchange import Exchange, Timing
from mockllm.runtime.recording.output import script_text
from mockllm.runtime.recording.translate import Turn, conversations, read_exchange, script
from mockllm.runtime.request import Provider
from mockllm.server.hosts.hypercorn_server import serve_hypercorn
from mockllm.server.http.routes import adapter_for, provider_for
from mockllm.server.record.script_files import write_script
from mockllm.server.runner import bind_socket, run_until_interrupted, stop_on_signals, url_for

__all__ = ["PUBLIC_APIS", "Recorder", "check_reachable", "named_upstreams", "parse_upstreams", "record_command"]

PUBLIC_APIS: dict[str, str] = {e.name: e.upstream for e in ENTRIES}
HTTPX_MISSING = "mockllm record: the recording proxy needs httpx: pip install 'mockllm[record]'"
#: Not forwarded either way: they describe one hop, not the message.
_HOP = frozenset(
    {"host", "connection", "keep-alive", "transfer-encoding", "content-length", "te", "upgrade", "accept-encoding"}
)
_HOP_BACK = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"})


def named_upstreams(values: Sequence[str]) -> list[str]:
    """The upstream URLs ``--upstream`` names explicitly, each once, in order (the public APIs are
    not among them: the recorder trusts those to be there)."""
    urls = [value.partition("=")[2] if "://" not in value.partition("=")[0] else value for value in values]
    return list(dict.fromkeys(url.rstrip("/") for url in urls))


def check_reachable(urls: Sequence[str], timeout_s: float = 5.0) -> None:
    """Open (and close) a TCP connection to each upstream, so a recorder pointed at nothing says so once,
    at start, rather than answering 502 to every request. Nothing is sent: no credential is needed."""
    from urllib.parse import urlsplit

    for url in urls:
        parts = urlsplit(url)
        host = parts.hostname or ""
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
            socket.create_connection((host, port), timeout=timeout_s).close()
        except ConnectionRefusedError:
            reason = "connection refused; is it running?"
        except socket.gaierror:
            reason = f"unknown host {host!r}"
        except TimeoutError:
            reason = f"no answer within {timeout_s:g} s"
        except (OSError, ValueError) as exc:
            reason = str(getattr(exc, "strerror", None) or exc)
        else:
            continue
        raise ServerError(f"record: cannot reach the upstream {url}: {reason}")


def parse_upstreams(values: Sequence[str]) -> dict[str, str]:
    """``--upstream`` values → the base URL for each provider (the public APIs by default)."""
    out = dict(PUBLIC_APIS)
    for value in values:
        name, sep, url = value.partition("=")
        if sep and name in PUBLIC_APIS and not name.startswith("http"):
            out[name] = url.rstrip("/")
            for e in ENTRIES:  # Responses shares OpenAI's upstream unless given its own
                if e.upstream_from == name and not any(v.startswith(f"{e.name}=") for v in values):
                    out[e.name] = url.rstrip("/")
        elif sep and "://" not in name:
            raise UsageError(f"--upstream {value}: unknown provider {name!r} (one of {', '.join(PUBLIC_APIS)})")
        else:
            if "://" not in value:
                raise UsageError(f"--upstream {value}: expected a URL such as http://127.0.0.1:8080")
            out = {p: value.rstrip("/") for p in PUBLIC_APIS}
    return out


class Recorder:
    """The ASGI app: forwards, streams back, and writes each conversation's script as exchanges end."""

    def __init__(self, out_dir: Path, upstreams: Mapping[str, str], *, keep_timing: bool, timeout_s: float) -> None:
        import httpx

        self.out_dir = out_dir
        self.upstreams = dict(upstreams)
        self.keep_timing = keep_timing
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=10.0), follow_redirects=False)
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
        import httpx

        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        lower = {k.lower(): v for k, v in headers}
        path = scope["path"]
        query = scope.get("query_string", b"").decode("latin-1")
        provider: Provider = provider_for(path, lower)
        base = self.upstreams[provider]
        raw_path = scope.get("raw_path") or path.encode()  # as sent: a signed request (AWS SigV4) signs it
        url = base + raw_path.decode("latin-1") + (f"?{query}" if query else "")
        forward = [(k, v) for k, v in headers if k.lower() not in _HOP]
        started = time.monotonic()
        request = self.client.build_request(scope["method"], url, headers=forward, content=bytes(body))
        try:
            response = await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            print(f"mockllm record: cannot reach the {provider} upstream {base}: {reason}", file=sys.stderr, flush=True)
            ctx = RenderContext("0" * 50, int(time.time()), "req_mockllm_record")
            message_text = f"mockllm record: cannot reach the upstream {base}: {reason}"
            rendered = adapter_for(provider).render_error(502, message_text, ctx)
            await send(
                {
                    "type": "http.response.start",
                    "status": 502,
                    "headers": [(b"content-type", rendered.media_type.encode())],
                }
            )
            await send({"type": "http.response.body", "body": rendered.body})
            return
        back = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _HOP_BACK]
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in back],
            }
        )
        received = bytearray()
        first: float | None = None
        last = started
        gaps: list[float] = []
        disconnected = False
        try:
            async for chunk in response.aiter_bytes():
                now = time.monotonic()
                if first is None:
                    first = now
                else:
                    gaps.append((now - last) * 1000)
                last = now
                received += chunk
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.HTTPError:
            disconnected = True
        finally:
            await response.aclose()
        timing = Timing(((first or last) - started) * 1000, tuple(gaps))
        exchange = Exchange.of(
            scope["method"],
            path + (f"?{query}" if query else ""),
            headers,
            bytes(body),
            response.status_code,
            back,
            bytes(received),
            timing,
            disconnected,
        )
        await self._keep(exchange)
        if disconnected:
            return  # the client sees the same cut: the connection closes without the body's end
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _keep(self, exchange: Exchange) -> None:
        turn = read_exchange(exchange)
        if turn is None:
            return
        async with self.lock:
            self.turns.append(turn)
            for conv in conversations(self.turns):
                if any(t is turn for t in conv.turns):
                    s = script(conv, self.keep_timing)
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
            await serve_hypercorn(recorder, sock, stopped, grace_s=5.0)
        finally:
            await recorder.client.aclose()

    return run_until_interrupted(main, sock)
