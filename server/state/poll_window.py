"""How long a process polls for Redis's answer before it lets its core sleep (``--state-poll``).

A request with its state in Redis waits for one round trip. When nothing else is ready, the event loop
would sleep in the kernel, and on a virtual machine waking a sleeping core costs tens of microseconds --
about as long as Redis takes to answer on the same host. Polling for a short window instead (the loop
keeps looking for I/O without sleeping, the other connections served as usual) takes the answer as it
comes: the kernel's halt polling, done in the process, for the waits where it pays. At each turn of
the poll the process offers its core to any other ready on it (``sched_yield``), so a Redis that shares
the core is not kept waiting by the poll for its own answer.

:class:`PollWindow` decides when it pays. It polls each wait for at most ``limit`` seconds; an answer
that comes within the window is a hit. When answers keep coming later than the window (Redis on another
host, or a process so busy that its waits end late anyway), polling only burns the core: after
:data:`MISSES_TO_REST` misses in a row it stops for the next :data:`REST_WAITS` waits, then tries again.
Plain synchronous code over the wait times it is given; the store measures them."""

from __future__ import annotations

import attrs

DEFAULT_POLL_S = 200e-6  # Redis on the same host answers within this; the bench measures what it buys
MAX_POLL_S = 0.1  # the longest window `--state-poll` accepts
MISSES_TO_REST = 8  # answers later than the window in a row before polling rests
REST_WAITS = 256  # waits not polled after that, before polling is tried again


@attrs.define
class PollWindow:
    """When to poll a wait for Redis's answer, and for how long (``limit`` seconds; 0: never)."""

    limit: float = attrs.field(
        validator=attrs.validators.and_(attrs.validators.ge(0.0), attrs.validators.le(MAX_POLL_S))
    )
    misses: int = 0  # answers in a row that came after the window
    resting: int = 0  # waits left that are not polled

    def polls(self) -> bool:
        """Whether to poll the next wait (called once per wait: a wait not polled counts down the rest)."""
        if self.resting:
            self.resting -= 1
            return False
        return self.limit > 0

    def answered(self, waited: float) -> None:
        """A polled wait ended ``waited`` seconds after its command was sent."""
        if waited <= self.limit:
            self.misses = 0
            return
        self.misses += 1
        if self.misses >= MISSES_TO_REST:
            self.misses = 0
            self.resting = REST_WAITS
