"""Uvicorn (the ``fast`` extra: httptools) on an already bound socket, in the running event loop,
stopping gracefully as :func:`mockllm.server.hosts.hypercorn_server.serve_hypercorn` does, with
mockllm's cheaper httptools protocol (:mod:`mockllm.server.hosts.uvicorn_protocol`)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mockllm.errors import ServerError
from mockllm.server.hosts.hypercorn_server import FINISH_S, KEEP_ALIVE_S
from mockllm.server.hosts.table import HOSTS, Stopping

if TYPE_CHECKING:
    from mockllm.server.tls.files import TlsFiles


async def serve_uvicorn(app: Any, sock: socket.socket, stopping: Stopping, tls: TlsFiles | None = None) -> None:
    """Run Uvicorn (httptools) on an already bound socket, in the running event loop, until
    ``stopping.trigger()`` returns; then as :func:`serve_hypercorn` does: open responses get
    ``stopping.grace_s`` seconds, ``stopping.finish`` is called, and what still runs :data:`FINISH_S`
    later is cancelled. The caller owns the signals: Uvicorn's own handlers would re-raise SIGTERM
    after shutting down, and
    the process would die of it instead of exiting 0. With ``tls``: HTTPS and WSS (Uvicorn's
    ``ssl_certfile``/``ssl_keyfile``)."""
    missing = HOSTS["uvicorn"].missing()
    if missing is not None:
        raise ServerError(missing)
    uvicorn = importlib.import_module("uvicorn")

    class Server(uvicorn.Server):  # type: ignore[misc, name-defined]
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    from mockllm.server.hosts.uvicorn_protocol import uvicorn_protocol

    config = uvicorn.Config(
        app,
        http=uvicorn_protocol(),  # httptools; one write per response, a lean head
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=max(stopping.grace_s, 0.0) + FINISH_S,
        timeout_keep_alive=KEEP_ALIVE_S,
        # The client address is the peer's, as on the other servers (the admin API reads the headers a
        # proxy on this machine adds, on every server): no middleware around every request.
        proxy_headers=False,
        ssl_certfile=tls.cert if tls is not None else None,
        ssl_keyfile=tls.key if tls is not None else None,
    )
    server = Server(config)

    async def stop_when_triggered() -> None:
        await stopping.trigger()
        server.should_exit = True
        if stopping.finish is not None:
            await asyncio.sleep(max(stopping.grace_s, 0.0))
            stopping.finish()

    watcher = asyncio.ensure_future(stop_when_triggered())
    try:
        await server.serve(sockets=[sock])
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await watcher
