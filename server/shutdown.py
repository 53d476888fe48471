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
from collections.abc import Awaitable

from mockllm.server.options import ServerOptions, Sleep


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


async def hold(options: ServerOptions, stopping: asyncio.Event, *also: Awaitable[object]) -> tuple[int, str]:
    """A `hang` step's wait, for every transport that serves one (chat requests, MCP calls, realtime
    responses): the first of the hang limit, ``stopping`` and each of ``also`` (the client leaving).
    Returns the status and note of the error that ends the hang: 503 when the server is stopping, else
    504 (the limit). A caller that also waits for its client checks first whether it left: then
    nothing is answered."""
    waits = [
        asyncio.ensure_future(options.sleep(options.hang_limit_s)),
        asyncio.ensure_future(stopping.wait()),
        *(asyncio.ensure_future(w) for w in also),
    ]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
    if stopping.is_set():
        return 503, "hang: the server is stopping"
    return 504, f"hang: held for the server's hang limit of {options.hang_limit_s:g}s"
