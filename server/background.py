"""An in-process server on a real loopback socket, in a daemon thread with its own event loop, so
streaming timing and disconnects are real (the ASGI test clients buffer whole bodies)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from mockllm.errors import ServerError
from mockllm.server.options import ServerOptions

if TYPE_CHECKING:
    from mockllm.dsl.machines.compiled import CompiledLibrary
    from mockllm.runtime.engine.engine import Engine
    from mockllm.server.state.store import StateStore

_T = TypeVar("_T")

_START_TIMEOUT_S = 10.0
_CALL_TIMEOUT_S = 60.0


class BackgroundServer:
    """``with BackgroundServer(library) as server: httpx.get(server.url + "/_mockllm/health")``.

    ``engine_or_library`` is an :class:`Engine`, a compiled library, or None for the echo responder."""

    def __init__(
        self,
        engine_or_library: Engine | CompiledLibrary | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        options: ServerOptions | None = None,
    ) -> None:
        from mockllm.runtime.engine.engine import Engine
        from mockllm.server.http.app import create_app

        self.options = options or ServerOptions()
        if isinstance(engine_or_library, Engine):
            self.engine = engine_or_library
        else:
            self.engine = Engine(engine_or_library, clock=self.options.clock)
        self.app = create_app(self.engine, self.options)
        self.host = host
        self.port = port
        self.url = ""
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def start(self) -> BackgroundServer:
        """Bind, start serving, and return once the server accepts connections."""
        from mockllm.server.runner import bind_socket, url_for

        if self._thread is not None:
            return self
        if self.options.state:  # a shared store that does not answer: say so now, not on the first request
            from mockllm.server.runner import refuse_state

            refused = refuse_state(self.options.state, 1)
            if refused is not None:
                raise ServerError(str(refused))
        sock = bind_socket(self.host, self.port)
        self.port = sock.getsockname()[1]
        self.url = url_for(self.host, sock, self.options.tls is not None)
        self._thread = threading.Thread(target=self._run, args=(sock,), name=f"mockllm-{self.port}", daemon=True)
        self._thread.start()
        if not self._ready.wait(_START_TIMEOUT_S):
            raise ServerError(f"mockllm: the server on {self.url} did not start within {_START_TIMEOUT_S:g}s")
        if self._error is not None:
            raise ServerError(f"mockllm: the server on {self.url} failed to start: {self._error}") from self._error
        return self

    def _run(self, sock: object) -> None:
        import socket

        from mockllm.server.hosts.hypercorn_server import serve_hypercorn
        from mockllm.server.hosts.table import Stopping
        from mockllm.server.http.server_state import server_state

        assert isinstance(sock, socket.socket)
        app = self.app

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            stop = self._stop

            shutdown = server_state(app).shutdown
            shutdown.reset()

            async def trigger() -> None:
                # Awaited only once the server is accepting connections.
                self._ready.set()
                await stop.wait()
                shutdown.stopping.set()

            grace = self.options.shutdown_grace_s
            try:
                await serve_hypercorn(app, sock, Stopping(trigger, grace, shutdown.finishing.set), self.options.tls)
            finally:
                await server_state(app).store.close()
                passthrough = server_state(app).passthrough
                if passthrough is not None:
                    await passthrough.aclose()

        try:
            asyncio.run(main())
        except BaseException as exc:
            self._error = exc
        finally:
            sock.close()
            self._ready.set()

    @property
    def store(self) -> StateStore:
        """Where the server keeps its state (see server/state/store.py)."""
        from mockllm.server.http.server_state import server_state

        return server_state(self.app).store

    def run(self, work: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``work()`` on the server's event loop (where its state store's connections live) and wait
        for its result."""
        loop = self._loop
        if loop is None or self._thread is None:
            raise ServerError("mockllm: the server is not running")

        async def call() -> _T:
            return await work()

        return asyncio.run_coroutine_threadsafe(call(), loop).result(_CALL_TIMEOUT_S)

    def stop(self) -> None:
        """Stop serving: hangs end at once; open streams may run on for the grace period
        (``options.shutdown_grace_s``), then send the rest of their frames at once; the thread is joined."""
        thread, loop, stop = self._thread, self._loop, self._stop
        if thread is None:
            return
        if loop is not None and stop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:  # the loop already closed
                pass
        thread.join(self.options.shutdown_grace_s + 5.0)
        self._thread = None

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
