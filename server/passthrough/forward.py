"""Forwarding one request to its provider's real API and streaming the answer back, byte for byte.

``mockllm record`` forwards every request this way; ``mockllm serve --passthrough`` forwards the ones
no step answers. The request goes unchanged (its own credentials included) to the upstream; the answer
is sent to the client as it arrives, and what was exchanged comes back as an :class:`Exchange` with the
credentials already stripped. An upstream that cannot be reached, or does not answer in time, gets the
client an error in its provider's own shape (502, or 504 for a timeout) and no exchange; an upstream's
own error status and body are passed on as they are.

httpx is not a dependency of ``pip install mockllm``: the ``record`` extra installs it."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from mockllm.errors import ServerError, UsageError
from mockllm.runtime.providers.base import RenderContext
from mockllm.runtime.providers.registry import ENTRIES, adapter_for
from mockllm.runtime.recording.exchange import Exchange, Timing
from mockllm.runtime.recording.media import picture_sources

if TYPE_CHECKING:
    import httpx

__all__ = [
    "HTTPX_MISSING",
    "PUBLIC_APIS",
    "RECORD_TO",
    "Sink",
    "check_reachable",
    "fetch_pictures",
    "forward",
    "named_upstreams",
    "new_client",
    "parse_upstreams",
]

PUBLIC_APIS: dict[str, str] = {e.name: e.upstream for e in ENTRIES}
HTTPX_MISSING = "forwarding to the real APIs needs httpx: pip install 'mockllm[record]'"
#: Not forwarded either way: they describe one hop, not the message.
HOP = frozenset(
    {"host", "connection", "keep-alive", "transfer-encoding", "content-length", "te", "upgrade", "accept-encoding"}
)
HOP_BACK = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"})
#: Where ``--record-missing`` writes a request's exchange: it steers mockllm, the real API has no use for it.
RECORD_TO = "x-mockllm-record-to"


class Sink(Protocol):
    """Where the answer goes (the server's :class:`~mockllm.server.http.streaming.Channel`)."""

    async def start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None: ...

    async def write(self, data: bytes) -> None: ...

    async def end(self, data: bytes = b"") -> None: ...


def named_upstreams(values: Sequence[str]) -> list[str]:
    """The upstream URLs named explicitly, each once, in order (the public APIs are not among them:
    they are trusted to be there)."""
    urls = [value.partition("=")[2] if "://" not in value.partition("=")[0] else value for value in values]
    return list(dict.fromkeys(url.rstrip("/") for url in urls))


def check_reachable(urls: Sequence[str], timeout_s: float = 5.0, *, who: str = "record") -> None:
    """Open (and close) a TCP connection to each upstream, so a proxy pointed at nothing says so once,
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
        raise ServerError(f"{who}: cannot reach the upstream {url}: {reason}")


def parse_upstreams(values: Sequence[str], option: str = "--upstream") -> dict[str, str]:
    """``PROVIDER=URL`` (or one ``URL`` for all) values → the base URL for each provider (the public
    APIs for those not named)."""
    out = dict(PUBLIC_APIS)
    for value in values:
        name, sep, url = value.partition("=")
        if sep and name in PUBLIC_APIS and not name.startswith("http"):
            out[name] = url.rstrip("/")
            for e in ENTRIES:  # Responses shares OpenAI's upstream unless given its own
                if e.upstream_from == name and not any(v.startswith(f"{e.name}=") for v in values):
                    out[e.name] = url.rstrip("/")
        elif sep and "://" not in name:
            raise UsageError(f"{option} {value}: unknown provider {name!r} (one of {', '.join(PUBLIC_APIS)})")
        else:
            if "://" not in value:
                raise UsageError(f"{option} {value}: expected a URL such as http://127.0.0.1:8080")
            out = {p: value.rstrip("/") for p in PUBLIC_APIS}
    return out


async def fetch_pictures(client: httpx.AsyncClient, exchange: Exchange) -> dict[str, bytes]:
    """The pictures an images answer gave as URLs, fetched (a real API's URLs expire within hours: a
    script keeps the pictures themselves), by URL. A picture that cannot be fetched is left out (its
    step then draws its own), with a line on stderr."""
    if exchange.status != 200 or "/images/" not in exchange.path or b'"url"' not in exchange.body:
        return {}
    fetched: dict[str, bytes] = {}
    for url in (p for p in picture_sources(exchange.body, exchange.response_headers) if isinstance(p, str)):
        try:
            got = await client.get(url)
        except Exception as exc:  # any transport failure: the picture is left out, the step kept
            print(f"mockllm: cannot fetch the picture {url}: {exc}", file=sys.stderr, flush=True)
            continue
        if got.status_code == 200:
            fetched[url] = got.content
    return fetched


def new_client(timeout_s: float) -> httpx.AsyncClient:
    """The client every forwarded request goes through: ``timeout_s`` to wait for each read."""
    import httpx

    return httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=10.0), follow_redirects=False)


async def forward(
    client: httpx.AsyncClient,
    sink: Sink,
    *,
    provider: str,
    base: str,
    method: str,
    raw_path: bytes,
    path: str,
    query: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    ctx: RenderContext,
    who: str,
) -> Exchange | None:
    """Send the request to ``base`` (``raw_path`` as the client sent it: a signed request signs it),
    stream the answer into ``sink``, and return the exchange (credentials removed); None when the
    upstream could not be reached or timed out (the client then has a 502 or 504 in ``provider``'s
    shape, and one line on stderr, led by ``who``, says why).

    The answer's end is left to the caller (``sink.end()``), so what it keeps of the exchange is kept
    before the client has the whole answer; when the upstream cut a stream (the exchange says
    ``disconnected``), the caller returns without ending it, and the client sees the same cut."""
    import httpx

    url = base + raw_path.decode("latin-1") + (f"?{query}" if query else "")
    sent = [(k, v) for k, v in headers if k.lower() not in HOP and k.lower() != RECORD_TO]
    started = time.monotonic()
    request = client.build_request(method, url, headers=sent, content=body)
    try:
        response = await client.send(request, stream=True)
    except httpx.HTTPError as exc:
        timed_out = isinstance(exc, httpx.TimeoutException)
        reason = str(exc) or type(exc).__name__
        if timed_out:
            reason = f"no answer within {client.timeout.read or 0:g} s ({type(exc).__name__})"
        print(f"mockllm {who}: cannot reach the {provider} upstream {base}: {reason}", file=sys.stderr, flush=True)
        status = 504 if timed_out else 502
        rendered = adapter_for(provider).render_error(
            status, f"mockllm {who}: cannot reach the upstream {base}: {reason}", ctx
        )
        await sink.start(status, [(b"content-type", rendered.media_type.encode())])
        await sink.end(rendered.body)
        return None
    back = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in HOP_BACK]
    await sink.start(response.status_code, [(k.encode("latin-1"), v.encode("latin-1")) for k, v in back])
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
            await sink.write(chunk)
    except httpx.HTTPError:
        disconnected = True
    finally:
        await response.aclose()
    timing = Timing(((first or last) - started) * 1000, tuple(gaps))
    exchange = Exchange.of(
        method,
        path + (f"?{query}" if query else ""),
        headers,
        body,
        response.status_code,
        back,
        bytes(received),
        timing,
        disconnected,
    )
    return exchange
