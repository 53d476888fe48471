"""The request-body deadline (server/http/body_deadline.py) follows the event loop it runs on: an app served
by one loop after another (a test session's servers), or by loops in two threads at once, has each
body read registered under its own task, on its own loop, and cut by that loop's own sweeper. (The
end-to-end 408 for an abandoned upload is in tests/test_reliability_clients.py.)"""

from __future__ import annotations

import asyncio
import threading

from mockllm.server.http.body_deadline import BodyDeadline


async def _read(deadline: BodyDeadline) -> tuple[bool, bool]:
    """One body read: whether the current task was registered on this loop, and let go after."""
    task = deadline.enter()
    reads = deadline._seen.reads
    registered = task is asyncio.current_task() and task in reads.waiting and reads.loop is asyncio.get_running_loop()
    deadline.leave(task)
    return registered, task not in reads.waiting


async def _stuck(deadline: BodyDeadline) -> str:
    """A body read whose body never comes: "timeout" when the deadline cut it, from this loop."""
    task = deadline.enter()
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        if deadline.expired(task):
            return "timeout"
        raise
    finally:
        deadline.leave(task)
    return "never cut"


def test_reads_on_one_loop_after_another_are_each_registered_under_their_own_task() -> None:
    deadline = BodyDeadline(limit_s=30.0)
    for _ in range(3):  # a new loop each time: the one seen before is not running any more
        assert asyncio.run(_read(deadline)) == (True, True)


def test_a_read_past_the_deadline_on_a_later_loop_is_cut_by_that_loops_sweeper() -> None:
    deadline = BodyDeadline(limit_s=0.05)
    asyncio.run(_read(deadline))  # a first loop, gone
    assert asyncio.run(asyncio.wait_for(_stuck(deadline), 10)) == "timeout"


def test_stuck_reads_on_loops_in_two_threads_are_each_cut_by_their_own_loop() -> None:
    """Two servers' loops in two threads share the app: each loop's sweeper cuts its own stuck read
    (one sweeper for both would cancel a task of the other thread's loop, from the wrong thread)."""
    deadline = BodyDeadline(limit_s=0.2)
    outcomes: list[str] = []
    both_reading = threading.Barrier(2)

    def serve() -> None:
        async def run() -> str:
            both_reading.wait()
            return await asyncio.wait_for(_stuck(deadline), 10)

        try:
            outcomes.append(asyncio.run(run()))
        except BaseException as exc:  # reported by the assertion below
            outcomes.append(f"{type(exc).__name__}")

    threads = [threading.Thread(target=serve) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert outcomes == ["timeout", "timeout"]


def test_reads_one_after_another_are_watched_by_one_sweeper() -> None:
    """Bodies that are there at once, read one after another, are watched by the sweeper the first one
    started: not a new sweeper task per read (it waits a tick before it looks, and stays while reads go on)."""

    async def run() -> int:
        deadline = BodyDeadline(limit_s=30.0)
        sweepers = set()
        for _ in range(50):
            assert await _read(deadline) == (True, True)
            sweepers.add(deadline._seen.reads.sweeper)
            await asyncio.sleep(0)  # the sweeper runs its first step
        return len(sweepers)

    assert asyncio.run(run()) == 1
