"""The Starlette application: adapts HTTP to the pure core (adapters + engine) and back.

Provider routes are plain ASGI endpoints (they read the body with a limit, watch for the client
leaving and stream frame by frame); the admin API under ``/_mockllm/`` is ordinary Starlette."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mockllm.errors import MockllmError, StateUnavailable
from mockllm.runtime.engine.journal import Delivery
from mockllm.runtime.providers import registry
from mockllm.runtime.providers.base import Adapter, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.common import LowerCaseHeaders
from mockllm.runtime.providers.pairs import InputsAdapter, route_functions
from mockllm.runtime.request import ChatRequest, HttpRequest, Provider
from mockllm.server.http.admin import ADMIN_PREFIX, admin_mount
from mockllm.server.http.body_deadline import BodyDeadline, BodyTimeout
from mockllm.server.http.responder import Answer, RenderAhead, deliver, header_bytes, send_whole
from mockllm.server.http.routes import ROUTES, RouteSpec, openai_prefixed, provider_for
from mockllm.server.http.routes import split_model_path as _split
from mockllm.server.http.server_state import ServerState
from mockllm.server.http.server_state import server_state as server_state  # (its old home: still imported from here)
from mockllm.server.http.streaming import DRAIN_CAP, Channel
from mockllm.server.inspector.routes import inspector_routes
from mockllm.server.mcp.http import McpEndpoint, mcp_routes
from mockllm.server.media.images import image_routes
from mockllm.server.metrics.routes import metrics_routes
from mockllm.server.options import ServerOptions
from mockllm.server.realtime.routes import realtime_routes
from mockllm.server.state.opening import open_store
from mockllm.server.state.store import StateStore

if TYPE_CHECKING:
    from mockllm.runtime.engine.engine import Engine

log = logging.getLogger("mockllm.server")

_DRAIN_CAP = DRAIN_CAP  # unread request bodies are dropped up to this, then the connection closes


def to_response(rendered: Rendered, extra: list[tuple[str, str]] | None = None) -> Response:
    """A Starlette response for a non-streamed :class:`Rendered` (used by error handlers)."""
    response = Response(rendered.body, status_code=rendered.status, media_type=rendered.media_type)
    for name, value in header_bytes([*rendered.headers, *(extra or [])]):
        response.headers[name.decode()] = value.decode("latin-1")
    return response


# ------------------------------------------------------------------------------------------------
# Reading the request


_HEADER_NAMES: dict[bytes, str] = {}  # request header names seen, as bytes -> as read (lower-case)
_HEADER_NAMES_LIMIT = 1024
_HEADER_NAME_BYTES = 64  # longer names (a client may send any size) are read each time, not kept


def _headers(scope: Scope) -> dict[str, str]:
    out = LowerCaseHeaders()
    names = _HEADER_NAMES
    for raw_name, raw_value in scope.get("headers", []):
        name = names.get(raw_name) if type(raw_name) is bytes else None
        if name is None:
            name = raw_name.decode("latin-1").lower()
            if len(names) < _HEADER_NAMES_LIMIT and type(raw_name) is bytes and len(raw_name) <= _HEADER_NAME_BYTES:
                names[raw_name] = name
        if name in out:  # a repeated header: its values joined, as one
            out[name] = f"{out[name]}, {raw_value.decode('latin-1')}"
        else:
            out[name] = raw_value.decode("latin-1")
    return out


def _query(scope: Scope) -> dict[str, str]:
    raw = scope.get("query_string", b"")
    return dict(parse_qsl(raw.decode("latin-1"), keep_blank_values=True)) if raw else {}


#: Request bodies larger than this are parsed, and their replies rendered, in a worker thread.
OFFLOAD_BYTES = 256 * 1024


def _parse(adapter: Adapter, http: HttpRequest, lenient: bool, parsed: list[ChatRequest]) -> ChatRequest:
    """The parsed, checked request; ``parsed`` receives it before the history check, so a refused
    history is journalled with its model and conversation."""
    chat = adapter.parse(http)
    parsed.append(chat)
    if not lenient:
        adapter.validate_history(chat)
    return chat


class ClientGone(MockllmError):
    """The client hung up before it sent the whole request body: nothing is processed or answered."""


async def read_body(
    receive: Receive, headers: Mapping[str, str], limit: int, deadline: BodyDeadline | None = None
) -> bytes | None:
    """The whole request body, or None as soon as it is known to exceed ``limit`` bytes (from
    ``content-length`` before reading anything, else while reading). Raises :class:`ClientGone` when
    the client hangs up first (even if what it sent so far happens to be a complete JSON text), and
    :class:`BodyTimeout` when the body takes longer than ``deadline`` allows."""
    declared = headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > limit:
        return None
    parts: list[bytes] = []
    size = 0
    task = deadline.enter() if deadline is not None else None
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return None
            parts.append(chunk)
            if not message.get("more_body", False):
                break
    except asyncio.CancelledError:
        if deadline is not None and deadline.expired(task):
            raise BodyTimeout from None
        raise
    finally:
        if deadline is not None:
            deadline.leave(task)
    if size > OFFLOAD_BYTES:  # a large upload is joined in a thread, which lets go of the interpreter's lock
        return await asyncio.to_thread(b"".join, parts)  # while it copies: the loop answers others meanwhile
    return b"".join(parts)


class DrainBody:
    """ASGI middleware: before a response starts, read and drop whatever of the request body the
    handler left unread (404s, 405s, GETs with a body, a refused oversized body). Hypercorn closes a
    keep-alive connection whose request was not fully received when the response ends, and the client's
    next request on it would fail; draining first keeps the connection usable. Bodies beyond
    ``_DRAIN_CAP`` are not drained: that response says ``connection: close``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        done = False

        async def tracked_receive() -> Message:
            nonlocal done
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                done = True
            return message

        async def draining_send(message: Message) -> None:
            nonlocal done
            if message["type"] == "http.response.start" and not done:
                seen = 0
                while not done and seen <= _DRAIN_CAP:
                    seen += len((await tracked_receive()).get("body", b""))
                if not done:
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        await self.app(scope, tracked_receive, draining_send)


# ------------------------------------------------------------------------------------------------
# Provider endpoints


class ProviderEndpoint:
    """The ASGI app behind one provider route."""

    def __init__(self, state: ServerState, spec: RouteSpec) -> None:
        self.state = state
        self.spec = spec
        # the adapter of an input route (embeddings, speech, images …) by provider and `:METHOD`
        self._inputs: dict[tuple[Provider, str | None], InputsAdapter] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = self.state
        clock = state.options.clock
        arrived = clock.monotonic()  # scripted latency counts from here; the journal times from here
        method = scope["method"]
        path = scope["path"]
        channel = Channel(receive, send, clock)
        provider: Provider = self.spec.provider or "openai"
        track: list[int] = []  # the journal entry, from when the engine has one until it is settled
        try:
            headers = _headers(scope)
            provider = self.spec.provider_of(path, headers)  # this route's provider, or the claim that holds
            path_params: dict[str, str] = {}
            handler = self.spec.handler
            if handler == "model_path":
                model, gmethod = _split(str(scope.get("path_params", {}).get("rest", "")))
                route_error = _model_path_error(method, model, gmethod, registry.entry(provider).model_methods)
                if route_error is not None:
                    await send_whole(channel, _route_error(state, provider, route_error, method, path))
                    return
                path_params = {"model": model}
                if gmethod is not None:
                    path_params["method"] = gmethod
            adapter = state.adapter(provider)
            body = await read_body(receive, headers, state.options.max_body_bytes, state.body_deadline)
            if body is None:
                limit = state.options.max_body_bytes
                message = f"mockllm: request body is larger than the limit of {limit} bytes"
                methods = registry.entry(provider).model_methods
                if handler == "chat" or methods.get(path_params.get("method", "")) == "chat":  # a chat request refused
                    await state.store.reject(provider, path, 413, message)
                await send_whole(channel, adapter.render_error(413, message, state.context(), "request_too_large"))
                return
            channel.body_done = True
            http = HttpRequest(method, path, _query(scope), headers, body, path_params)
            gmethod_name = path_params.get("method")
            operation = None
            if gmethod_name is not None:  # `{model}:METHOD`
                operation = registry.entry(provider).model_methods.get(gmethod_name)
            if handler == "chat" or operation == "chat":
                await self._chat(http, adapter, channel, track, arrived, scope)
            elif handler == "inputs" or operation == "inputs":
                inputs = self._inputs.get((provider, gmethod_name))
                if inputs is None:  # (made once per provider and method: the same for every request)
                    route = self.spec.inputs_for(provider) or f"{provider}.{gmethod_name}"
                    inputs = self._inputs[provider, gmethod_name] = InputsAdapter(adapter, *route_functions(route))
                await self._chat(http, inputs, channel, track, arrived, scope)
            else:
                await self._other(http, provider, adapter, channel)
        except ClientGone:
            pass  # nobody to answer, nothing processed
        except BodyTimeout:
            channel.body_done = True  # the rest will not come: answer without waiting for it, then close
            timeout = state.options.body_timeout_s
            message = f"mockllm: the request body did not arrive within {timeout:g}s"
            rendered = state.adapter(provider).render_error(408, message, state.context(), "request_timeout")
            await send_whole(channel, rendered, [("connection", "close")])
        except Exception as exc:  # a bug, never the user's input: answer 500 in the provider's shape
            log.exception("mockllm: internal error while answering %s %s", method, path)
            if not channel.started:
                text = f"mockllm: internal error: {type(exc).__name__}: {exc}"
                await send_whole(channel, state.adapter(provider).render_error(500, text, state.context()))
            if track:
                self._finish(track[0], Delivery(channel.status or 500, note="internal error"))
        finally:
            await channel.close()

    async def _chat(
        self, http: HttpRequest, adapter: Adapter, channel: Channel, track: list[int], arrived: float, scope: Scope
    ) -> None:
        state = self.state
        if not state.options.no_auth:
            denied = adapter.check_auth(http)
            if denied is not None:
                ctx = state.context()
                await state.store.reject(adapter.provider, http.path, denied.status, denied.message)
                state.metrics.rejected(adapter.provider, self.spec.operation or "chat", denied.status)
                await send_whole(channel, adapter.render_error(denied.status, denied.message, ctx, denied.code))
                return
        offload = len(http.body) > OFFLOAD_BYTES
        parsed: list[ChatRequest] = []
        try:
            if offload:  # a large body is parsed in a worker thread: other requests are answered meanwhile
                chat = await asyncio.to_thread(_parse, adapter, http, state.options.lenient, parsed)
            else:
                chat = _parse(adapter, http, state.options.lenient, parsed)
        except ProviderError as err:
            ctx = state.context()
            await state.store.reject(
                adapter.provider, http.path, err.status, err.message, parsed[0] if parsed else None
            )
            state.metrics.rejected(adapter.provider, self.spec.operation or "chat", err.status)
            await send_whole(channel, adapter.render_error(err.status, err.message, ctx, err.code, err.param))
            return
        state.note_model(chat.model)
        store = state.store
        ahead = None
        try:
            if store.shared:  # the reply is rendered while the turn is committed
                ahead = None if offload else RenderAhead(adapter, chat, state.context)
                outcome = await store.handle(chat, ahead)
            else:
                outcome = state.engine.handle(chat)
        except StateUnavailable as exc:
            await send_whole(channel, adapter.render_error(503, str(exc), state.context(), "service_unavailable"))
            return
        track.append(outcome.entry_id)
        rendered = ahead.take(outcome) if ahead is not None else None
        ctx = rendered[0] if rendered is not None else state.context(outcome.response_id or None)
        entry = outcome.entry_id

        def record(delivery: Delivery) -> None:  # how the answer went: the one write of its journal status
            track.clear()
            clock = state.options.clock
            seconds = clock.monotonic() - arrived
            first = channel.first_byte
            delivery = delivery.timed(clock.now() - seconds, None if first is None else first - arrived, seconds)
            self._finish(entry, delivery)
            state.metrics.observe(chat.provider, chat.operation, delivery, outcome.plan is not None, seconds)

        if state.passthrough is not None and state.passthrough.wants(outcome, chat, state.engine.library is None):
            await state.passthrough.answer(scope, http, adapter.provider, channel, ctx, record)
            return
        answer = Answer(
            outcome,
            chat,
            adapter,
            ctx,
            arrived,
            offload,
            rendered[1] if rendered is not None else None,
            rendered[2] if rendered is not None else None,
        )
        await deliver(answer, channel, state.options, state.shutdown, record)

    def _finish(self, entry: int, delivery: Delivery) -> None:
        try:
            self.state.store.settle(entry, delivery)
        except Exception:
            log.exception("mockllm: could not record the end of journal entry %s", entry)

    async def _other(self, http: HttpRequest, provider: Provider, adapter: Adapter, channel: Channel) -> None:
        """Model listings, token counts, Ollama's tags/version and the root banner."""
        state = self.state
        ctx = state.context()
        handler = self.spec.handler
        if handler == "root":  # the banner: no credentials asked
            try:
                rendered = adapter.banner(ctx)
            except ProviderError as err:
                rendered = adapter.render_error(err.status, err.message, ctx, err.code, err.param)
            await send_whole(channel, rendered, [("x-mockllm", "mockllm")])
            return
        if not state.options.no_auth:
            denied = adapter.check_auth(http)
            if denied is not None:
                await send_whole(channel, adapter.render_error(denied.status, denied.message, ctx, denied.code))
                return
        try:
            rendered = self._render_other(handler, http, provider, ctx)
        except ProviderError as err:
            rendered = adapter.render_error(err.status, err.message, ctx, err.code, err.param)
        await send_whole(channel, rendered)

    def _render_other(self, handler: str, http: HttpRequest, provider: Provider, ctx: RenderContext) -> Rendered:
        adapter = self.state.adapter(provider)
        if handler == "count_tokens" or http.path_params.get("method") == "countTokens":
            return adapter.count_tokens(http, ctx)
        if handler in ("models", "tags"):
            return adapter.models(self.state.model_ids(), ctx)
        if handler == "model_path":  # GET /v1/models/{id}
            return adapter.model(http.path_params["model"], ctx)
        return adapter.version(ctx)  # handler == "version"


def _model_path_error(method: str, model: str, gmethod: str | None, methods: Mapping[str, str]) -> int | None:
    """404/405 for `/…/models/{rest}` requests that name no operation of the provider's (``methods``)."""
    if not model:
        return 404
    if gmethod is None:
        return None if method in ("GET", "HEAD") else 405
    if gmethod not in methods:
        return 404
    return None if method == "POST" else 405


def _route_error(state: ServerState, provider: Provider, status: int, method: str, path: str) -> Rendered:
    if status == 405:
        message = f"mockllm: method {method} is not allowed on {path}"
    else:
        message = f"mockllm: unknown route {method} {path}"
    return state.adapter(provider).render_error(status, message, state.context())


# ------------------------------------------------------------------------------------------------
# The application


def _admin_routes(state: ServerState) -> list[BaseRoute]:
    return [admin_mount(state.engine, state.options, state.store)]


# The one place a subsystem adds its routes to the app, after the providers' routes, in this order: a
# function from the server's state to its routes. A new transport (server/audio/, server/mcp/,
# server/realtime/ …; docs/architecture.md, "Adding a transport") adds its function here, one a line.
SUBSYSTEM_ROUTES: tuple[Callable[[ServerState], list[BaseRoute]], ...] = (
    inspector_routes,  # /_mockllm/ui: the inspector page (server/inspector/), before the admin API's mount
    metrics_routes,  # /_mockllm/metrics: Prometheus's text (server/metrics/), before the admin API's mount
    _admin_routes,  # /_mockllm: the admin API
    mcp_routes,  # /mcp/NAME: the library's `mcp server` blocks (server/mcp/)
    image_routes,  # /mockllm/images/…: the pictures images answers give as URLs (server/media/)
    realtime_routes,  # /v1/realtime …: WebSocket sessions, the registry's "realtime" routes (server/realtime/)
)


class MockllmApp(Starlette):
    """Starlette, with the chat routes dispatched before the middleware stack and the router.

    A ``POST`` to a chat path (``/v1/chat/completions``, ``/v1/messages``, ``/v1/responses``,
    ``/api/chat``) or a fixed embedding or moderation path (``/v1/embeddings``, ``/api/embed`` …)
    goes straight to its :class:`ProviderEndpoint`, which reads the body, drains what it leaves unread
    and answers its own errors -- what the middleware would do for it -- so the hot path skips three
    middleware layers, the route scan and their per-request closures. Everything else (other methods
    and paths, the admin API, 404s and 405s) goes through Starlette as before."""

    fast_routes: dict[str, ProviderEndpoint]
    fast_prefixes: tuple[tuple[str, ASGIApp], ...] = ()  # a subsystem's paths by prefix (/mcp/NAME)

    cors: ASGIApp | None = None  # `--cors`: server/http/cors.py in front of dispatch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.cors is not None:
            await self.cors(scope, receive, send)
            return
        await self.dispatch(scope, receive, send)

    async def dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        for prefix, app in self.fast_prefixes:
            if scope["type"] == "http" and scope["path"].startswith(prefix) and not scope.get("root_path"):
                await app(scope, receive, send)
                return
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("root_path"):
            endpoint = self.fast_routes.get(scope["path"])
            if endpoint is not None:
                scope["app"] = self
                await endpoint(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def create_app(
    engine: Engine,
    options: ServerOptions | None = None,
    *,
    adapters: Mapping[Provider, Adapter] | None = None,
    store: StateStore | None = None,
) -> Starlette:
    """The ASGI application serving ``engine``, its state kept in ``store`` (default: in memory).
    ``app.state.mockllm`` is its :class:`ServerState`."""
    opts = options or ServerOptions()
    state = ServerState(
        engine, opts, adapters, store or open_store(engine, opts.state, opts.scenario_base, opts.state_poll_s)
    )
    specs = (*ROUTES, *openai_prefixed(opts.openai_prefixes))
    endpoints = [(spec, ProviderEndpoint(state, spec)) for spec in specs if spec.transport == "http"]
    routes: list[BaseRoute] = [Route(spec.path, endpoint, methods=list(spec.methods)) for spec, endpoint in endpoints]
    for subsystem in SUBSYSTEM_ROUTES:
        routes += subsystem(state)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        path = request.url.path
        method = request.method
        status = exc.status_code
        if path.startswith(ADMIN_PREFIX):
            return JSONResponse({"error": exc.detail}, status_code=status, headers=exc.headers)
        if status not in (404, 405):
            log.warning("mockllm: unexpected HTTP error %s for %s %s", status, method, path)
        provider = provider_for(path, _headers(request.scope))
        rendered = _route_error(state, provider, 405 if status == 405 else 404, method, path)
        return to_response(rendered, list((exc.headers or {}).items()))

    async def server_error(request: Request, exc: Exception) -> Response:
        log.error("mockllm: internal error while answering %s %s", request.method, request.url.path, exc_info=exc)
        text = f"mockllm: internal error: {type(exc).__name__}: {exc}"
        if request.url.path.startswith(ADMIN_PREFIX):
            return JSONResponse({"error": text}, status_code=500)
        return PlainTextResponse(text, status_code=500)

    app = MockllmApp(
        routes=routes,
        middleware=[Middleware(DrainBody)],
        exception_handlers={HTTPException: http_error, Exception: server_error},
    )
    app.fast_routes = {
        spec.path: endpoint
        for spec, endpoint in endpoints
        if spec.handler in ("chat", "inputs") and spec.methods == ("POST",) and "{" not in spec.path
    }
    app.fast_prefixes = tuple(
        (r.app.prefix, r.app) for r in routes if isinstance(r, Route) and isinstance(r.app, McpEndpoint)
    )
    if opts.cors:
        from mockllm.server.http.cors import Cors

        app.cors = Cors(app.dispatch, opts.cors, admin_guarded=opts.admin_token is not None)
    app.state.mockllm = state
    return app
