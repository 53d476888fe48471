"""Hypercorn on an already bound socket, closing what clients close and stopping gracefully.

Why not Hypercorn's own ``worker_serve``:

- A connection whose client closed it stayed open (``CLOSE_WAIT``) until the keep-alive timeout
  ended. Hypercorn's per-connection ``TCPServer.run`` reads until end of file, then leaves its task
  group -- which waits for the idle-timeout task still sleeping out ``keep_alive_timeout`` -- and only
  then closes the socket. Under a small descriptor limit (``ulimit -n 256``, macOS's default) a test
  run that opens a client per test ran out of descriptors. :class:`_TCPServer` stops the idle task
  as soon as the client is gone, so the socket closes at once.
- Shutdown: ``worker_serve`` waits ``graceful_timeout`` and then leaves the connection tasks to be
  cancelled by whoever closes the loop, each with a traceback. :func:`serve_hypercorn` stops
  accepting, lets open responses run for the grace period, then asks them to finish at once
  (``finish``), and cancels only what still runs after that, quietly.
- An accept that fails for lack of descriptors (``EMFILE``) is logged by asyncio with a traceback
  and retried a second later; the loop's exception handler here says it in one line instead. A retry
  that fires after shutdown closed the listening socket (a ``ValueError`` on descriptor -1) is
  dropped quietly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import TYPE_CHECKING, Any

from hypercorn.asyncio.tcp_server import TCPServer
from hypercorn.asyncio.worker_context import WorkerContext
from hypercorn.config import Config
from hypercorn.utils import wrap_app

from mockllm.server.hosts.table import Stopping

if TYPE_CHECKING:
    from mockllm.server.tls.files import TlsFiles

log = logging.getLogger("mockllm.server")

#: How long an idle keep-alive connection is kept. Short: a connection pool reuses a connection
#: within milliseconds, and every idle socket costs the server a descriptor.
KEEP_ALIVE_S = 5.0
#: After the grace period, how long responses have to send their ending before they are cancelled.
FINISH_S = 1.0
#: While accepting fails for lack of descriptors, say so at most this often.
ACCEPT_WARNING_EVERY_S = 10.0
#: How long a TLS connection being closed waits for the client's close_notify. An idle keep-alive client
#: (a pool) never reads it: without a bound the close waits 30 s, asyncio's default, and holds up the stop.
TLS_SHUTDOWN_S = 0.5


class _TCPServer(TCPServer):
    """Hypercorn's connection handler, closing the connection as soon as the client has gone."""

    async def _read_data(self) -> None:
        await super()._read_data()
        # End of file or a reset: the idle task would keep the task group -- and the socket --
        # open until the keep-alive timeout. A response still being written ends through the
        # `http.disconnect` the app was just sent.
        await self.idle_task.stop()


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """One log line, not a traceback, when ``accept`` fails for lack of descriptors (asyncio retries
    after a second by itself); everything else goes to the loop's previous handler."""
    previous = loop.get_exception_handler()
    said = [-ACCEPT_WARNING_EVERY_S]

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and "accept" in str(context.get("message", "")):
            now = loop.time()
            if now - said[0] >= ACCEPT_WARNING_EVERY_S:
                said[0] = now
                log.warning("mockllm: cannot accept connections (%s); retrying every second", exc.strerror or exc)
            return
        if isinstance(exc, ValueError) and _is_accept_retry(context):
            # asyncio's retry (scheduled a second after the failed accept) fired after the server
            # closed its socket: there is nothing left to accept on.
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


def _is_accept_retry(context: dict[str, Any]) -> bool:
    callback = getattr(context.get("handle"), "_callback", None)
    return getattr(callback, "__name__", "") == "_start_serving"


def hypercorn_config(errorlog: logging.Logger | str | None = None) -> Config:
    config = Config()
    config.accesslog = None
    config.errorlog = errorlog if errorlog is not None else logging.getLogger("hypercorn.error")
    config.keep_alive_timeout = KEEP_ALIVE_S
    return config


async def serve_hypercorn(
    app: Any,
    sock: socket.socket,
    stopping: Stopping,
    tls: TlsFiles | None = None,
    errorlog: logging.Logger | str | None = None,
) -> None:
    """Serve ``app`` (ASGI) on ``sock`` until ``stopping.trigger()`` returns, then: stop accepting,
    close idle connections, give open responses ``stopping.grace_s`` seconds, call ``stopping.finish``
    (responses end at once, the provider's way), give them :data:`FINISH_S` more, and cancel what is
    left. With ``tls``: HTTPS and WSS (Hypercorn sees the TLS connection and tells the app its scheme)."""
    config = hypercorn_config(errorlog)
    wrapped = wrap_app(app, config.wsgi_max_body_size, "asgi")
    loop = asyncio.get_running_loop()
    quiet_accept_errors(loop)
    context = WorkerContext(None)
    connections: set[asyncio.Task[Any]] = set()

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connections.add(task)
        task.add_done_callback(connections.discard)
        # OSError while closing a TLS connection: a client that never answered the close (TimeoutError after
        # TLS_SHUTDOWN_S), or one whose last WebSocket frame came after it (SSLError); the socket is closed
        with contextlib.suppress(asyncio.CancelledError, OSError):
            await _TCPServer(wrapped, loop, config, context, {}, reader, writer)

    secure = tls.server_context() if tls is not None else None
    handshake_s = config.ssl_handshake_timeout if tls is not None else None
    server = await asyncio.start_server(
        on_connection,
        sock=sock,
        backlog=1024,
        ssl=secure,
        ssl_handshake_timeout=handshake_s,
        ssl_shutdown_timeout=TLS_SHUTDOWN_S if tls is not None else None,
    )
    try:
        await stopping.trigger()
    finally:
        server.close()  # stop accepting
        await context.terminated.set()  # idle keep-alive connections close; busy ones after their response
        await wind_down(connections, stopping)


async def wind_down(tasks: set[asyncio.Task[Any]], stopping: Stopping) -> None:
    if tasks:
        await asyncio.wait(set(tasks), timeout=max(stopping.grace_s, 0.0))
    if tasks and stopping.finish is not None:
        stopping.finish()
        await asyncio.wait(set(tasks), timeout=FINISH_S)
    for task in list(tasks):
        task.cancel()
    for task in list(tasks):
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
