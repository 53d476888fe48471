"""The app's WebSocket routes for realtime sessions: one per registry route whose operation is
``"realtime"``, each answered by the protocol of the provider that serves it (:data:`PROTOCOLS`).

The upgrade request is checked as a chat request is (credentials, unless ``--no-auth``): a refused one
gets the provider's error as the HTTP answer to the upgrade, where the host lets the app answer it (the
ASGI ``websocket.http.response`` extension), else a close before accepting (the client sees a 403)."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.routing import BaseRoute, WebSocketRoute

from mockllm.runtime.engine.conversations import CONVERSATION_HEADER
from mockllm.runtime.providers.gemini_live import DEFAULT_MODEL as LIVE_MODEL
from mockllm.runtime.providers.gemini_live import GeminiLive
from mockllm.runtime.providers.openai_realtime import DEFAULT_MODEL, OpenAIRealtime
from mockllm.runtime.providers.registry import ROUTES, RouteSpec
from mockllm.runtime.realtime.protocol import RealtimeProtocol
from mockllm.runtime.realtime.session import Session
from mockllm.runtime.request import HttpRequest, Provider
from mockllm.server.realtime.driver import Driver

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from mockllm.server.http.server_state import ServerState

log = logging.getLogger("mockllm.server")

#: each provider's realtime protocol, by the provider's name: a class whose instances are protocols
PROTOCOLS: dict[str, Callable[[], RealtimeProtocol]] = {
    "openai": OpenAIRealtime,
    "gemini": GeminiLive,
    "vertex": GeminiLive,
}
#: the model a session uses when the URL names none, per provider
DEFAULT_MODELS: dict[str, str] = {"openai": DEFAULT_MODEL, "gemini": LIVE_MODEL, "vertex": LIVE_MODEL}


def realtime_routes(state: ServerState) -> list[BaseRoute]:
    """A WebSocket route for every realtime path of the provider registry."""
    return [WebSocketRoute(spec.path, RealtimeEndpoint(state, spec)) for spec in ROUTES if spec.handler == "realtime"]


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def _query(scope: Scope) -> dict[str, str]:
    from urllib.parse import parse_qsl

    raw = scope.get("query_string", b"")
    return dict(parse_qsl(raw.decode("latin-1"), keep_blank_values=True)) if raw else {}


class RealtimeEndpoint:
    """The ASGI app behind one realtime path."""

    def __init__(self, state: ServerState, spec: RouteSpec) -> None:
        self.state = state
        self.spec = spec

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = self.state
        headers = _headers(scope)
        query = _query(scope)
        path = scope["path"]
        provider: Provider = self.spec.provider_of(path, headers)
        make = PROTOCOLS.get(provider)
        first = await receive()  # websocket.connect
        if first["type"] != "websocket.connect":
            return
        if make is None:  # a route no protocol serves yet
            await send(
                {"type": "websocket.close", "code": 1008, "reason": f"mockllm: no realtime protocol for {provider}"}
            )
            return
        if not state.options.no_auth:
            adapter = state.adapter(provider)
            denied = adapter.check_auth(HttpRequest("GET", path, query, headers, b""))
            if denied is not None:
                await state.store.reject(provider, path, denied.status, denied.message)
                await self._deny(
                    scope, send, adapter.render_error(denied.status, denied.message, state.context(), denied.code)
                )
                return
        session_id = "sess_" + secrets.token_hex(12)
        key = headers.get(CONVERSATION_HEADER) or session_id
        model = query.get("model") or query.get("deployment") or DEFAULT_MODELS.get(provider, "")
        session = Session(session_id, key, provider, path, model, headers)
        await send({"type": "websocket.accept"})
        driver = Driver(state, make(), session, send)
        try:
            await driver.run(receive, query)
        except Exception:
            log.exception("mockllm: internal error in realtime session %s", session_id)
            if not driver.gone:
                try:
                    await send({"type": "websocket.close", "code": 1011, "reason": "mockllm: internal error"})
                except Exception:
                    pass

    async def _deny(self, scope: Scope, send: Send, rendered: object) -> None:
        from mockllm.runtime.providers.base import Rendered

        assert isinstance(rendered, Rendered)
        if "websocket.http.response" in scope.get("extensions", {}):
            body = rendered.body if isinstance(rendered.body, bytes) else str(rendered.body).encode()
            head = [(b"content-type", rendered.media_type.encode()), (b"content-length", str(len(body)).encode())]
            await send({"type": "websocket.http.response.start", "status": rendered.status, "headers": head})
            await send({"type": "websocket.http.response.body", "body": body})
            return
        await send({"type": "websocket.close", "code": 1008, "reason": "mockllm: credentials refused"})
