"""CORS for applications that call the mock from a browser (`mockllm serve --cors ORIGIN …`, off by
default): Starlette's own CORS middleware in front of the app, answering preflights (``OPTIONS`` with
``Access-Control-Request-Method``) itself and adding ``Access-Control-Allow-Origin`` to the answers of
the origins given (``*``: any). The admin API (``/_mockllm/…``) is left out unless the admin token is
set: without a token it trusts loopback callers, and a web page on any origin is one."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from mockllm.server.http.admin import ADMIN_PREFIX

__all__ = ["Cors"]

#: what a browser page may read of an answer besides the CORS-safelisted headers: the request ids and
#: retry headers the SDKs read, and every provider's own
EXPOSED = ("*",)


class Cors:
    """``app`` behind CORS for ``origins``; the admin API behind it only when ``admin_guarded``."""

    def __init__(self, app: ASGIApp, origins: Sequence[str], admin_guarded: bool) -> None:
        self.app = app
        self.admin_guarded = admin_guarded
        self.cors = CORSMiddleware(
            app,
            allow_origins=list(origins),
            allow_methods=["GET", "POST", "PUT", "DELETE", "OPTIONS"],
            allow_headers=["*"],
            expose_headers=list(EXPOSED),
            max_age=600,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (self.admin_guarded or not scope["path"].startswith(ADMIN_PREFIX)):
            await self.cors(scope, receive, send)
            return
        await self.app(scope, receive, send)
