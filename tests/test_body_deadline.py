"""The request-body deadline (server/body_deadline.py) follows the event loop it runs on: an app served
by one loop after another (a test session's servers), or by loops in two threads at once, has each
body read registered under its own task and swept by a sweeper on its own loop. (The end-to-end
408 for an abandoned upload is in tests/test_reliability_clients.py.)"""

from __future__ import annotations

import asyncio
import threading

from mockllm.server.body_deadline import BodyDeadline, BodyTimeout


async def _read(deadline: BodyDeadline, hold_s: float = 0.0) -> tuple[bool, bool]:
    """One body read: whether the current task was registered, and whether it was let go after."""
    task = deadline.enter()
    registered = task is asyncio.current_task() and task in deadline._waiting
    if hold_s:
        await asyncio.sleep(hold_s)
    deadline.leave(task)
    return registered, task not in deadline._waiting


def test_reads_on_one_loop_after_another_are_each_registered_under_their_own_task() -> None:
    deadline = BodyDeadline(limit_s=30.0)
    for _ in range(3):  # a new loop each time: the one seen before is not running any more
        assert asyncio.run(_read(deadline)) == (True, True)


def test_reads_on_loops_in_two_threads_at_once_stay_apart() -> None:
    deadline = BodyDeadline(limit_s=30.0)
    results: list[tuple[bool, bool]] = []
    started = threading.Barrier(2)

    def serve() -> None:
        async def run() -> tuple[bool, bool]:
            started.wait()  # both loops are running before either reads
            return await _read(deadline, hold_s=0.05)

        results.append(asyncio.run(run()))

    threads = [threading.Thread(target=serve) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == [(True, True), (True, True)]


def test_a_read_past_the_deadline_on_a_second_loop_is_cut_by_that_loops_sweeper() -> None:
    deadline = BodyDeadline(limit_s=0.05)
    asyncio.run(_read(deadline))  # a first loop, gone

    async def stuck() -> bool:
        task = deadline.enter()
        try:
            await asyncio.sleep(5)  # a body that never comes
        except asyncio.CancelledError:
            if deadline.expired(task):
                raise BodyTimeout from None
            raise
        finally:
            deadline.leave(task)
        return False

    try:
        asyncio.run(asyncio.wait_for(stuck(), 3))
    except BodyTimeout:
        return
    raise AssertionError("the stuck read was not cut by the deadline")
