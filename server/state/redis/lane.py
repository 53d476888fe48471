"""The commit's own connections to Redis (the store's lane): redis-py's connections, each running one
command at a time, read through a :class:`~mockllm.server.state.redis.wire.Wire` where hiredis is
installed, every exchange held to its deadline by one watchdog, and the event loop polling while an
answer is due (server/state/poll_window.py)."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from mockllm.server.state.poll_window import PollWindow
from mockllm.server.state.redis.wire import Wire

log = logging.getLogger("mockllm.server")

_yield_core: Callable[[], None] = getattr(os, "sched_yield", lambda: None)  # (none on Windows)


def _meanwhile(call: Callable[[], object]) -> None:
    """``call()`` while a command is on its way: whatever it raises is logged, never taken for a broken
    exchange (the command was sent; Redis may well run it)."""
    try:
        call()
    except Exception:
        log.exception("mockllm: error while waiting for Redis (the request goes on)")


class Lane:
    """The commit's own connections to Redis: redis-py's connections (the client's settings), each
    running one command at a time, without the client's per-command pool locks, retries and metrics
    -- most of the client's cost per request -- and read through a :class:`Wire` where hiredis is
    installed. One watchdog holds every exchange to its deadline instead of a timer per exchange
    (``asyncio.timeout`` costs a request as much as Redis's own work). While an exchange waits within
    its poll window (server/state/poll_window.py), the loop polls instead of sleeping: one callback kept ready,
    so each turn of the loop looks for I/O with a zero timeout."""

    def __init__(self, pool: Any, size: int, redis: Any, timeout: float, poll: float) -> None:
        self._pool = pool
        self._idle: list[tuple[Any, Wire | None]] = []
        # at most ``size`` exchanges at once; the others wait their turn, first come first served (what
        # asyncio.Semaphore does, without its coroutines when a slot is free: two fewer per exchange)
        self._free = size
        self._queue: deque[asyncio.Future[None]] = deque()
        self._replies = redis.exceptions.ResponseError  # an error reply: the connection stays usable
        self._broken = redis.exceptions.ConnectionError
        self._invalid = redis.exceptions.InvalidResponse
        self._timeout_error = redis.exceptions.TimeoutError
        self._timeout = timeout
        self._busy: dict[asyncio.Task[Any], float] = {}  # the exchanges under way and their deadlines
        self._late: set[asyncio.Task[Any]] = set()  # those the watchdog interrupted
        self._watchdog: asyncio.Task[None] | None = None
        self._window = PollWindow(poll)
        self._polling: asyncio.AbstractEventLoop | None = None  # the loop a _poll callback is ready on
        self._poll_until = 0.0  # the loop polls until then while exchanges wait
        try:
            import hiredis
        except ImportError:
            self._pack: Callable[[tuple[Any, ...]], bytes] | None = None
        else:
            self._pack = hiredis.pack_command
            self._hiredis = hiredis

    def _connection(self) -> tuple[Any, Wire | None]:
        pool = self._pool
        made: Any = pool.connection_class(**{**pool.connection_kwargs, "socket_timeout": None})
        return made, None

    async def _exchange(
        self,
        connection: Any,
        wire: Wire | None,
        args: tuple[Any, ...],
        meanwhile: Callable[[], object] | None,
        poll: bool = True,
    ) -> tuple[Any, Wire | None]:
        """The answer to ``args`` on ``connection``, and the wire it is read through from now on;
        ``meanwhile()`` is called once the command is sent, before its answer is awaited; ``poll``: whether
        that wait may be polled (see :meth:`_poll_from_now`)."""
        pack = self._pack
        if pack is not None:
            if wire is not None and wire.lost:  # Redis closed it while idle (a restart): connect again
                await connection.disconnect()
                wire = None
            if wire is None:
                if not connection.is_connected:
                    await connection.connect()
                wire = Wire.attach(connection, self._hiredis, self._invalid)
            if wire is not None:
                try:
                    waiting = wire.exchange(pack(args))
                    if meanwhile is not None:
                        _meanwhile(meanwhile)
                    polled = self._poll_from_now() if poll else None
                    answer = await waiting
                except ConnectionError as exc:
                    raise self._broken(str(exc)) from None
                self._poll_ended(polled)
                if isinstance(answer, Exception):  # an error reply, as redis-py's reader makes it
                    raise answer
                return answer, wire
        await connection.send_packed_command(connection.pack_command(*args), check_health=False)
        if meanwhile is not None:
            _meanwhile(meanwhile)
        polled = self._poll_from_now() if poll else None
        try:
            answer = await connection.read_response()
        except self._replies:  # an error reply: answered all the same, as on a wire
            self._poll_ended(polled)
            raise
        self._poll_ended(polled)
        return answer, None

    def _poll_from_now(self) -> float | None:
        """A command was sent: when its wait is polled (see :class:`PollWindow`), the loop polls until the
        window ends (or no exchange waits), and the time it started is returned; else None."""
        window = self._window
        if not window.polls():
            return None
        now = time.perf_counter()  # (uvloop's loop.time() counts whole milliseconds: too coarse here)
        self._poll_until = now + window.limit
        loop = asyncio.get_running_loop()
        if self._polling is not loop:  # (a loop closed with the chain pending left its own behind)
            self._polling = loop
            loop.call_soon(self._poll, loop)
        return now

    def _poll_ended(self, polled: float | None) -> None:
        """The answer to a command is in: how long its wait took, told to the window when it was polled
        (``polled``: what :meth:`_poll_from_now` returned)."""
        if polled is not None:
            self._window.answered(time.perf_counter() - polled)

    async def run(self, *args: Any, meanwhile: Callable[[], object] | None = None, poll: bool = True) -> Any:
        """The answer to the command ``args`` (an error reply raised as redis-py raises it); ``meanwhile()``
        is called while it is awaited (see :meth:`_exchange`); ``poll=False``: the wait is never polled (an
        answer nothing waits for: the loop may sleep meanwhile)."""
        if self._free and not self._queue:
            self._free -= 1
        else:
            await self._wait_turn()
        try:
            connection, wire = self._idle.pop() if self._idle else self._connection()
            task = asyncio.current_task()
            assert task is not None
            busy = self._busy
            busy[task] = asyncio.get_running_loop().time() + self._timeout
            if self._watchdog is None or self._watchdog.done():
                self._watchdog = asyncio.ensure_future(self._watch())
            try:
                answer, wire = await self._exchange(connection, wire, args, meanwhile, poll)
            except self._replies:
                del busy[task]
                self._idle.append((connection, wire))
                raise
            except BaseException as exc:  # a broken or interrupted exchange: this connection is not used again,
                del busy[task]  # nor, unless a request was merely cancelled, the idle ones (Redis may have gone)
                late = task in self._late
                if late:  # the watchdog's doing, unless the task was also cancelled from elsewhere
                    self._late.discard(task)
                    late = isinstance(exc, asyncio.CancelledError) and task.uncancel() == 0
                await connection.disconnect()
                if late or not isinstance(exc, asyncio.CancelledError):
                    await self.close()
                if late:
                    raise self._timeout_error(f"no answer from Redis within {self._timeout:g}s") from None
                raise
            del busy[task]
            self._idle.append((connection, wire))
            return answer
        finally:
            self._next_turn()

    def _poll(self, loop: asyncio.AbstractEventLoop) -> None:
        """Ready again while an exchange waits within the window: a loop with a callback ready polls
        for I/O without sleeping (the answer is read as it comes, the other connections served as usual),
        and the core is offered to any other process ready on it at each turn."""
        if self._polling is not loop:
            return  # a chain of a closed loop's, replaced
        if self._busy and time.perf_counter() < self._poll_until:
            _yield_core()  # a Redis (or anything) ready on this very core may run now, not after the window
            loop.call_soon(self._poll, loop)
        else:
            self._polling = None

    async def _wait_turn(self) -> None:
        """Wait until an exchange ends and hands its slot on (see :meth:`_next_turn`)."""
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # handed the slot as it was cancelled: hand it on
                self._next_turn()
            raise

    def _next_turn(self) -> None:
        """An exchange ended: its slot goes to the first that still waits, else back to the free ones."""
        queue = self._queue
        while queue:
            turn = queue.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self._free += 1

    async def _watch(self) -> None:
        """Interrupt the exchanges past their deadline, a few times per deadline."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self._timeout / 4)
            now = loop.time()
            for task, deadline in list(self._busy.items()):
                if deadline <= now and task not in self._late:
                    self._late.add(task)
                    task.cancel()

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection, _ in idle:
            await connection.disconnect()

    async def stop(self) -> None:
        """Close the connections and stop the watchdog."""
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.cancel()
            await asyncio.gather(watchdog, return_exceptions=True)
        await self.close()
