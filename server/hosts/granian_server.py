"""Granian (the `granian` extra) on an already bound socket, in the running event loop, stopping
gracefully as :func:`mockllm.server.hosts.hypercorn_server.serve_hypercorn` does.

Granian's HTTP/1.1 and HTTP/2 handling is Rust (hyper); only the ASGI app runs in Python, on this
process's event loop (Granian's embedded server: one worker, no child processes, the caller owns
the signals). Requests are tracked while they run, so on stop the server can give open responses
the grace period, ask them to finish at once, and cancel what still runs after that."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import re
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mockllm.errors import ServerError
from mockllm.server.hosts.hypercorn_server import ACCEPT_WARNING_EVERY_S, FINISH_S, KEEP_ALIVE_S, wind_down
from mockllm.server.hosts.table import HOSTS, Stopping

if TYPE_CHECKING:
    from mockllm.server.tls.files import TlsFiles

log = logging.getLogger("mockllm.server")


#: Granian's own log lines go to stderr (stdout carries the listening line), errors only: its
#: embedded mode announces itself as experimental at the warning level on every start.
_LOGGING = {
    "handlers": {
        "console": {"formatter": "generic", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"},
        "access": {"formatter": "access", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"},
    },
}


class _AcceptErrors(logging.Filter):
    """Granian's failed accepts (out of descriptors; it retries by itself) said in mockllm's one line,
    at most every :data:`ACCEPT_WARNING_EVERY_S`, as on Hypercorn."""

    def __init__(self) -> None:
        super().__init__()
        self._said = -ACCEPT_WARNING_EVERY_S

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if not text.startswith("Failed to accept connection"):
            return True
        now = time.monotonic()
        if now - self._said >= ACCEPT_WARNING_EVERY_S:
            self._said = now
            reason = _REASON.search(text)
            log.warning(
                "mockllm: cannot accept connections (%s); retrying every second", reason.group(1) if reason else "error"
            )
        return False


_REASON = re.compile(r'message: "([^"]*)"')


def _server_class(embed: Any) -> Any:
    from granian._granian import SocketHolder

    class Server(embed.Server):  # type: ignore[misc]
        """Granian's embedded server, serving on a socket bound by the caller."""

        def __init__(self, fd: int, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._fd = fd

        def _init_shared_socket(self) -> None:
            self._ssp = None  # Granian owns the descriptor from here, and closes it when it stops
            self._shd = SocketHolder(self._fd, False, 1024)  # type: ignore[call-arg]
            self._sfd = self._fd

    return Server


async def serve_granian(app: Any, sock: socket.socket, stopping: Stopping, tls: TlsFiles | None = None) -> None:
    """Serve ``app`` (ASGI) on ``sock`` until ``stopping.trigger()`` returns, then: stop accepting,
    give open responses ``stopping.grace_s`` seconds, call ``stopping.finish``, give them
    :data:`FINISH_S` more, and cancel what is left. With ``tls``: HTTPS (Granian's ``ssl_cert``/``ssl_key``;
    TLS 1.3 at least, Granian's default)."""
    missing = HOSTS["granian"].missing()
    if missing is not None:
        raise ServerError(missing)
    embed = importlib.import_module("granian.server.embed")
    from granian.constants import HTTPModes, Interfaces, TaskImpl
    from granian.http import HTTP1Settings
    from granian.log import LogLevels

    # Accepted connections inherit this (Linux): without it a stream's last write waits for the
    # client's delayed ACK of the one before (Nagle), 40 ms per response on loopback.
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    running: set[asyncio.Task[Any]] = set()

    async def tracked(scope: Any, receive: Any, send: Any) -> None:
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - Granian runs each request as an asyncio task
            await app(scope, receive, send)
            return
        running.add(task)
        try:
            await app(scope, receive, send)
        finally:
            running.discard(task)

    server = _server_class(embed)(
        sock.detach(),
        tracked,
        interface=Interfaces.ASGINL,
        # real tasks: what still runs at the end can be cancelled, as can a stuck Redis exchange (state/redis/lane.py)
        task_impl=TaskImpl.asyncio,
        http=HTTPModes.auto,
        # an idle keep-alive connection is closed after KEEP_ALIVE_S, as on the other servers
        http1_settings=HTTP1Settings(header_read_timeout=int(KEEP_ALIVE_S * 1000)),
        websockets=True,  # realtime sessions (server/realtime/)
        backlog=1024,
        log_level=LogLevels.error,
        log_dictconfig=_LOGGING,
        ssl_cert=Path(tls.cert) if tls is not None else None,
        ssl_key=Path(tls.key) if tls is not None else None,
    )
    accept_errors = _AcceptErrors()
    for handler in logging.getLogger("_granian").handlers:  # configured by the server; Rust logs to child loggers
        handler.addFilter(accept_errors)
    serving = asyncio.ensure_future(server.serve())
    try:
        stop = asyncio.ensure_future(stopping.trigger())
        await asyncio.wait({serving, stop}, return_when=asyncio.FIRST_COMPLETED)
        if serving.done():  # Granian could not start: say why
            stop.cancel()
            serving.result()
            return
    finally:
        server.interrupt_signal = True  # stop accepting; idle keep-alive connections close
        server.main_loop_interrupt.set()
        await wind_down(running, stopping)
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(serving, FINISH_S)
