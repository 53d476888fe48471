"""A deadline for receiving a request body, so an abandoned upload does not hold its socket forever.

Neither Hypercorn nor Uvicorn times out a request whose headers arrived but whose body stopped
coming (their keep-alive timeout covers only the time between requests). A timer per request would
cost every request a scheduled callback; instead each body read registers its task and start time in
a dict, and one sweeper task per server and event loop -- running while bodies are being read, and
a tick after -- cancels the reads that have waited past the limit. The reader turns that cancellation into
:class:`BodyTimeout`, answered with 408 and ``connection: close``."""

from __future__ import annotations

import asyncio
import threading

from mockllm.errors import MockllmError

DEFAULT_BODY_TIMEOUT_S = 30.0


class BodyTimeout(MockllmError):
    """The request body did not arrive within the deadline."""


class _Reads:
    """The body reads of one event loop: their tasks and start times, the tasks cut, the sweeper."""

    __slots__ = ("expired", "loop", "sweeper", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: dict[asyncio.Task[object], float] = {}
        self.expired: set[asyncio.Task[object]] = set()
        self.sweeper: asyncio.Task[None] | None = None


class BodyDeadline:
    """The deadline of every body read of one server. Reads are kept per event loop (per thread: a
    thread runs one loop at a time), each loop's by its own sweeper, so a loop never cancels another
    loop's task."""

    __slots__ = ("_seen", "limit_s")

    def __init__(self, limit_s: float = DEFAULT_BODY_TIMEOUT_S) -> None:
        self.limit_s = limit_s
        self._seen = threading.local()  # `.reads`: the reads of the loop this thread ran last

    def enter(self) -> asyncio.Task[object] | None:
        """Start the clock for the current task's body read."""
        # The current task of the loop this thread ran last: none when that loop is not running any
        # more (on Python 3.11 asking for the running loop costs a system call, getpid, each time).
        reads: _Reads | None = getattr(self._seen, "reads", None)
        task = asyncio.current_task(reads.loop) if reads is not None else None
        if reads is None or task is None:
            loop = asyncio.get_running_loop()
            task = asyncio.current_task(loop)
            if task is None:
                return None
            if reads is None or reads.loop is not loop:
                reads = self._seen.reads = _Reads(loop)
        reads.waiting[task] = reads.loop.time()
        if reads.sweeper is None or reads.sweeper.done():
            reads.sweeper = reads.loop.create_task(self._sweep(reads))
        return task

    def leave(self, task: asyncio.Task[object] | None) -> None:
        reads: _Reads | None = getattr(self._seen, "reads", None)
        if task is not None and reads is not None:
            reads.waiting.pop(task, None)

    def expired(self, task: asyncio.Task[object] | None) -> bool:
        """Whether ``task`` was cancelled by the deadline (and, if so, take the cancellation back)."""
        reads: _Reads | None = getattr(self._seen, "reads", None)
        if task is None or reads is None or task not in reads.expired:
            return False
        reads.expired.discard(task)
        task.uncancel()
        return True

    async def _sweep(self, reads: _Reads) -> None:
        # It waits a tick before it looks, and ends only when a look finds no read waiting: a body that
        # was already there when its read began is read and let go before the sweeper first runs, and a
        # sweeper that looked first would end at once, to be made again by the next request (a task
        # made and run for every request: about 4 µs of a small upload's CPU on the wire).
        loop = reads.loop
        tick = min(max(self.limit_s / 4, 0.05), 1.0)
        while True:
            await asyncio.sleep(tick)
            if not reads.waiting:
                break
            now = loop.time()
            for task, since in list(reads.waiting.items()):
                if now - since > self.limit_s:
                    del reads.waiting[task]
                    reads.expired.add(task)
                    task.cancel()
        reads.sweeper = None
