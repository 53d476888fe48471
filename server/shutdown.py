"""The two moments of a graceful stop, as responses see them.

``stopping``: the server was asked to stop (SIGTERM, ``MockServer.stop``). It accepts nothing new;
hangs end at once with a 503 (they wait for nothing); streams and latencies carry on.

``finishing``: the grace period (``--shutdown-grace``) is over. Every wait -- a scripted latency, the
spacing between chunks -- ends at once, so each open stream sends the rest of its frames straight
away and ends the provider's way (finish chunk and ``[DONE]``, ``message_stop``, the final
``done`` line, …) instead of being cut."""

from __future__ import annotations

import asyncio
import contextlib

from mockllm.server.options import Sleep


class Shutdown:
    __slots__ = ("_finishing", "_sleep", "_stopping")

    def __init__(self, sleep: Sleep) -> None:
        self._sleep = sleep
        self._stopping: asyncio.Event | None = None  # created in the serving loop, on first use
        self._finishing: asyncio.Event | None = None

    @property
    def stopping(self) -> asyncio.Event:
        if self._stopping is None:
            self._stopping = asyncio.Event()
        return self._stopping

    @property
    def finishing(self) -> asyncio.Event:
        if self._finishing is None:
            self._finishing = asyncio.Event()
        return self._finishing

    def reset(self) -> None:
        """A new serving run (a server started again): neither moment has come."""
        self._stopping = None
        self._finishing = None

    async def sleep(self, seconds: float) -> None:
        """``seconds`` of the server's sleep, cut short when the grace period ends."""
        finishing = self.finishing
        if finishing.is_set():
            return
        nap = asyncio.ensure_future(self._sleep(seconds))
        woken = asyncio.ensure_future(finishing.wait())
        try:
            await asyncio.wait((nap, woken), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (nap, woken):
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
