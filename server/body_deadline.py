"""A deadline for receiving a request body, so an abandoned upload does not hold its socket forever.

Neither Hypercorn nor Uvicorn times out a request whose headers arrived but whose body stopped
coming (their keep-alive timeout covers only the time between requests). A timer per request would
cost every request a scheduled callback; instead each body read registers its task and start time in
a dict, and one sweeper task per server -- running only while some body is being read -- cancels
the reads that have waited past the limit. The reader turns that cancellation into
:class:`BodyTimeout`, answered with 408 and ``connection: close``."""

from __future__ import annotations

import asyncio
import contextlib
import threading

from mockllm.errors import MockllmError

DEFAULT_BODY_TIMEOUT_S = 30.0


class BodyTimeout(MockllmError):
    """The request body did not arrive within the deadline."""


class BodyDeadline:
    __slots__ = ("_expired", "_seen", "_sweeper", "_waiting", "limit_s")

    def __init__(self, limit_s: float = DEFAULT_BODY_TIMEOUT_S) -> None:
        self.limit_s = limit_s
        self._waiting: dict[asyncio.Task[object], float] = {}
        self._expired: set[asyncio.Task[object]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._seen = threading.local()  # per thread: the loop of its last read (`.loop`)

    def enter(self) -> asyncio.Task[object] | None:
        """Start the clock for the current task's body read."""
        # The current task of the loop this thread ran last: none when that loop is not running any
        # more (on Python 3.11 asking for the running loop costs a system call, getpid, each time).
        seen = self._seen
        loop: asyncio.AbstractEventLoop | None = getattr(seen, "loop", None)
        task = asyncio.current_task(loop) if loop is not None else None
        if loop is None or task is None:
            loop = seen.loop = asyncio.get_running_loop()
            task = asyncio.current_task(loop)
            if task is None:
                return None
        self._waiting[task] = loop.time()
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = loop.create_task(self._sweep())
        return task

    def leave(self, task: asyncio.Task[object] | None) -> None:
        if task is not None:
            self._waiting.pop(task, None)

    def expired(self, task: asyncio.Task[object] | None) -> bool:
        """Whether ``task`` was cancelled by the deadline (and, if so, take the cancellation back)."""
        if task is None or task not in self._expired:
            return False
        self._expired.discard(task)
        task.uncancel()
        return True

    async def _sweep(self) -> None:
        loop = asyncio.get_running_loop()
        tick = min(max(self.limit_s / 4, 0.05), 1.0)
        while self._waiting:
            await asyncio.sleep(tick)
            now = loop.time()
            for task, since in list(self._waiting.items()):
                if now - since > self.limit_s:
                    del self._waiting[task]
                    self._expired.add(task)
                    task.cancel()
        with contextlib.suppress(Exception):
            self._sweeper = None
