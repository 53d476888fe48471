"""``mockllm serve --passthrough``: what no step answers is asked of the real API instead.

A request the library matches is answered by its step as always. One that matches nothing (where the
server would answer the no-match 404) is forwarded with its own credentials to its provider's upstream
(:mod:`.forward`), and the answer streamed back byte for byte; so is a Responses request continuing
an answer that came from the upstream (its ``previous_response_id`` is the upstream's, which only the
upstream knows). With ``--record-missing DIR`` the exchange is then written into DIR (:mod:`.writer`)
before the client's answer ends, so once the client has its answer, the next run has the step.

The journal entry says so (``passed_through``, and ``recorded`` with the file), and ``verify`` does
not count such a request as unmatched: the test got a real answer."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mockllm.errors import ServerError, UsageError
from mockllm.runtime.engine.journal import Delivery
from mockllm.runtime.engine.outcome import Outcome
from mockllm.runtime.providers.base import RenderContext
from mockllm.runtime.reply.plan import ErrorPlan
from mockllm.runtime.request import ChatRequest, HttpRequest
from mockllm.server.http.responder import reply_text
from mockllm.server.passthrough.forward import (
    HTTPX_MISSING,
    RECORD_TO,
    Sink,
    check_reachable,
    fetch_pictures,
    forward,
    named_upstreams,
    new_client,
    parse_upstreams,
)
from mockllm.server.passthrough.settings import PassthroughOptions
from mockllm.server.passthrough.writer import ScriptWriter, Written

if TYPE_CHECKING:
    import httpx

__all__ = ["Passthrough", "PassthroughOptions", "options_from"]

log = logging.getLogger("mockllm.server")

_IDS_KEPT = 10_000
_RESPONSE_ID = re.compile(rb'"id"\s*:\s*"(resp_[^"]+)"')


class Passthrough:
    """One per server process: the upstream client, the writer, and the upstream's response ids seen."""

    def __init__(self, options: PassthroughOptions) -> None:
        self.options = options
        self.writer = (
            ScriptWriter(Path(options.record_dir), keep_timing=options.keep_timing) if options.record_dir else None
        )
        #: Where exchanges go when a request names no place (``x-mockllm-record-to``): the pytest
        #: plugin sets it to the running test's name.
        self.default_target: str | None = None
        self._client: httpx.AsyncClient | None = None
        self._upstream_ids: OrderedDict[str, None] = OrderedDict()

    def wants(self, outcome: Outcome, chat: ChatRequest, echo: bool = False) -> bool:
        """Whether the request is the upstream's to answer: no step matched it (``echo``: there are no
        scenarios at all, so none could; an embedding no step answers would get the default
        embedder's vectors), or it continues an answer the upstream gave."""
        if outcome.plan is None or echo:
            return True
        if chat.operation != "chat" and outcome.step is None and not outcome.fallback:
            return True
        prev = chat.previous_response_id
        return bool(prev) and isinstance(outcome.plan, ErrorPlan) and prev in self._upstream_ids

    async def answer(
        self,
        scope: Mapping[str, Any],
        http: HttpRequest,
        provider: str,
        sink: Sink,
        ctx: RenderContext,
        record: Callable[[Delivery], None],
    ) -> None:
        """Forward ``http`` (read from the ASGI ``scope``: its path and query as the client sent them)
        to ``provider``'s upstream, stream the answer into ``sink``, write it when asked, and ``record``
        how it went (once, before the answer ends)."""
        raw_path: bytes = scope.get("raw_path") or http.path.encode()
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        raw_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope.get("headers", [])]
        base = self.options.upstreams[provider]
        if self._client is None:
            self._client = new_client(self.options.timeout_s)
        exchange = await forward(
            self._client,
            sink,
            provider=provider,
            base=base,
            method=http.method,
            raw_path=raw_path,
            path=http.path,
            query=query,
            headers=raw_headers,
            body=http.body,
            ctx=ctx,
            who="serve --passthrough",
        )
        if exchange is None:  # the upstream could not be reached: the client has its error
            record(Delivery(502, note=f"passthrough: cannot reach the upstream {base}", passed_through=True))
            return
        self._note_ids(exchange.body)
        written: Written | None = None
        if self.writer is not None and not _transient(exchange.status) and not exchange.disconnected:
            target = http.headers.get(RECORD_TO) or self.default_target
            try:
                pictures = await fetch_pictures(self._client, exchange)
                written = await asyncio.to_thread(self.writer.add, exchange, target, pictures)
            except OSError as exc:
                log.warning("mockllm: could not write the passed-through exchange: %s", exc)
        where = f"passthrough: answered by {base}"
        if written is not None:
            where += f"; recorded in {written.path} (step {written.steps})"
        delivery = Delivery(
            exchange.status,
            note=where + ("; the upstream cut the stream" if exchange.disconnected else ""),
            reply=reply_text(exchange.response_headers.get("content-type", ""), exchange.body),
            passed_through=True,
            recorded=str(written.path) if written is not None else None,
        )
        record(delivery)
        if not exchange.disconnected:
            await sink.end()

    def _note_ids(self, body: bytes) -> None:
        """Keep the response ids of an answer, so a Responses request continuing it is forwarded too."""
        if b'"resp_' not in body:
            return
        try:
            data: Any = json.loads(body)
        except ValueError:  # a stream: every `"id": "resp_…"` in it
            data = None
        ids = [data["id"]] if isinstance(data, dict) and isinstance(data.get("id"), str) else []
        if data is None:
            ids = [m.decode() for m in _RESPONSE_ID.findall(body)]
        for rid in ids:
            self._upstream_ids[rid] = None
        while len(self._upstream_ids) > _IDS_KEPT:
            self._upstream_ids.popitem(last=False)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _transient(status: int) -> bool:
    """An error the next run should not replay: a rate limit or the API's own failure (the next
    run asks again instead)."""
    return status == 429 or status >= 500


def options_from(
    upstreams: Sequence[str] | None, record_dir: str | None, timeout_s: float = 600.0
) -> PassthroughOptions | None:
    """``--passthrough [PROVIDER=URL …]`` (None: not given) and ``--record-missing DIR`` as options;
    ``--record-missing`` alone forwards to the public APIs. The upstreams named are checked to answer
    at all, once, here; a missing httpx is said once, here too."""
    if upstreams is None and record_dir is None:
        return None
    try:
        import httpx  # noqa: F401
    except ImportError:
        raise ServerError(f"--passthrough: {HTTPX_MISSING}") from None
    values = list(upstreams or ())
    chosen = parse_upstreams(values, "--passthrough")
    check_reachable(named_upstreams(values), who="--passthrough")
    if record_dir is not None:
        folder = Path(record_dir)
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"--record-missing {record_dir}: not a directory")
    return PassthroughOptions(chosen, record_dir, timeout_s)
