"""``GET /_mockllm/metrics``: the counts of :mod:`mockllm.server.metrics.metrics` in Prometheus's text
format, refused as the admin API refuses (a token, or loopback callers only)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from mockllm.server.http.admin import ADMIN_PREFIX, _refusal
from mockllm.server.http.server_state import ServerState
from mockllm.server.metrics.metrics import MEDIA_TYPE

__all__ = ["metrics_routes"]


def metrics_routes(state: ServerState) -> list[BaseRoute]:
    """``GET /_mockllm/metrics``, refused as the admin API refuses (a token, or loopback callers only)."""
    options = state.options

    async def endpoint(request: Request) -> Response:
        refused = _refusal(request, options)
        if refused is not None:
            return refused
        alive = len(await state.store.conversations())
        return Response(state.metrics.text(alive), media_type=MEDIA_TYPE)

    return [Route(ADMIN_PREFIX + "/metrics", endpoint, methods=["GET"])]
