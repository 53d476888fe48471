"""The inspector (docs/inspector.md): ``GET /_mockllm/ui``, a page that shows what the server is doing.

The page is three static files kept in this package (``index.html``, ``inspector.js``,
``inspector.css``: no framework, no build step, nothing fetched from another host) and a few
read-only JSON views under ``/_mockllm/ui/api/`` sized for it: lists come a page at a time and every
answer is bounded, so 10,000 journal entries and 1,000 conversations cost the page no more than ten.
The views read through the state store, never this process's engine tables, so the page shows a
Redis-backed fleet as a whole; changes (reset, loading a scenario text) go through the admin API.

Access is the admin API's (server/http/admin.py): loopback clients only, ``Host`` and ``Origin``
checked, or with ``--admin-token`` the token as ``Authorization: Bearer`` on every view. The static
files hold no data: with a token they are served to anyone who can reach the port, so a browser
can open the page and then send the token (given in the URL's fragment, or typed in)."""

from __future__ import annotations

from importlib.resources import files
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from mockllm.errors import MockllmError
from mockllm.server.http.admin import ADMIN_PREFIX, _int_param, _refusal, json_response
from mockllm.server.inspector.views import Filters, Views

if TYPE_CHECKING:
    from mockllm.server.http.server_state import ServerState

UI_PATH = ADMIN_PREFIX + "/ui"

# script-src 'self' and no 'unsafe-inline': a request body shown on the page can never run as script
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "content-security-policy": POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "x-frame-options": "DENY",
}
_ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "inspector.js": "text/javascript; charset=utf-8",
    "inspector.css": "text/css; charset=utf-8",
}


def _asset(name: str) -> bytes:
    return files("mockllm.server.inspector").joinpath(name).read_bytes()


def inspector_url(base: str) -> str:
    """The inspector's address on a server listening at ``base`` (``http://HOST:PORT``)."""
    return base.rstrip("/") + UI_PATH


def inspector_routes(state: ServerState) -> list[BaseRoute]:
    """The page, its files and its JSON views."""
    options = state.options
    views = Views(state.engine, state.store)

    def static(name: str) -> Any:
        body = _asset(name)
        media_type = _ASSETS[name]

        async def endpoint(request: Request) -> Response:
            if not options.admin_token:  # with a token the files (no data in them) load; the views ask for it
                refused = _refusal(request, options)
                if refused is not None:
                    return refused
            return Response(body, media_type=media_type, headers=_HEADERS)

        return endpoint

    def view(read: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            refused = _refusal(request, options)
            if refused is not None:
                return refused
            try:
                data = await read(request)
            except _BadParam as exc:
                return exc.response
            if isinstance(data, Response):
                return data
            response = json_response(data)
            response.headers.update(_HEADERS)
            return response

        return endpoint

    async def journal(request: Request) -> Any:
        limit = min(_number(request, "limit", 50, 1), 200)
        before = _number(request, "before", 0, 0) or None
        after = _number(request, "after", 0, 0)
        return await views.journal(limit, before, after, _filters(request))

    async def feed(request: Request) -> Any:
        limit = min(_number(request, "limit", 50, 1), 200)
        after = _number(request, "after", 0, 0) if "after" in request.query_params else None
        return await views.feed(after, limit, _filters(request), _ids(request, "ids"), _ids(request, "open"))

    async def entry(request: Request) -> Any:
        found = await views.entry(_number(request, "id", 0, 1))
        return found if found is not None else json_response({"error": "mockllm: no such journal entry"}, 404)

    async def library(request: Request) -> Any:
        return await views.library(request.query_params.get("known", ""))

    async def source(request: Request) -> Any:
        found = await views.source(request.query_params.get("scenario", ""), _number(request, "step", 0, 0))
        return found if found is not None else json_response({"error": "mockllm: no such step"}, 404)

    async def graph(request: Request) -> Any:
        found = await views.graph(request.query_params.get("scenario", ""))
        return found if found is not None else json_response({"error": "mockllm: no such scenario"}, 404)

    async def conversations(request: Request) -> Any:
        offset = _number(request, "offset", 0, 0)
        limit = min(_number(request, "limit", 50, 1), 200)
        return await views.conversations(offset, limit, request.query_params.get("q", ""))

    async def verify(request: Request) -> Any:
        return await views.verify()

    return [
        Route(UI_PATH, static("index.html"), methods=["GET"]),
        Route(UI_PATH + "/inspector.js", static("inspector.js"), methods=["GET"]),
        Route(UI_PATH + "/inspector.css", static("inspector.css"), methods=["GET"]),
        Route(UI_PATH + "/api/journal", view(journal), methods=["GET"]),
        Route(UI_PATH + "/api/feed", view(feed), methods=["GET"]),
        Route(UI_PATH + "/api/entry", view(entry), methods=["GET"]),
        Route(UI_PATH + "/api/library", view(library), methods=["GET"]),
        Route(UI_PATH + "/api/source", view(source), methods=["GET"]),
        Route(UI_PATH + "/api/graph", view(graph), methods=["GET"]),
        Route(UI_PATH + "/api/conversations", view(conversations), methods=["GET"]),
        Route(UI_PATH + "/api/verify", view(verify), methods=["GET"]),
    ]


class _BadParam(MockllmError):
    """A query parameter the view cannot use: carries the admin API's 400 for it."""

    def __init__(self, response: Response) -> None:
        super().__init__("bad query parameter")
        self.response = response


MAX_IDS = 200  # rows a feed looks up at most: a page's worth and more


def _filters(request: Request) -> Filters:
    query = request.query_params
    conversation, provider = query.get("conversation", ""), query.get("provider", "")
    return Filters(conversation, provider, query.get("matched", ""), query.get("operation", ""))


def _ids(request: Request, name: str) -> list[int]:
    """A list of journal entry ids, comma-separated (at most :data:`MAX_IDS`)."""
    text = request.query_params.get(name, "")
    parts = [p for p in text.split(",") if p.strip()] if text else []
    if len(parts) > MAX_IDS or not all(p.strip().isdigit() for p in parts):
        message = f"mockllm: {name} must be up to {MAX_IDS} journal entry ids, comma-separated, not {text[:80]!r}"
        raise _BadParam(json_response({"error": message}, 400))
    return [int(p) for p in parts]


def _number(request: Request, name: str, default: int, least: int) -> int:
    value = _int_param(request, name, default, least)
    if isinstance(value, Response):
        raise _BadParam(value)
    return value
