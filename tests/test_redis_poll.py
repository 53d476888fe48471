"""A process waiting for Redis's answer polls instead of sleeping, within its window (``--state-poll``;
server/state/poll_window.py), on a real Redis: seen from the event loop's selector, which is asked to wait with
no timeout while the loop polls and with one when it may sleep. The window's policy itself is in
tests/test_poll_window.py."""

from __future__ import annotations

import asyncio
import selectors
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from redis_server import redis_proxy
from sdk_clients import oa

from mockllm.runtime.engine.engine import Engine
from mockllm.server.state.poll_window import MISSES_TO_REST, REST_WAITS
from mockllm.server.state.redis.store import RedisStore

_T = TypeVar("_T")


class RecordingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The loop's selector, noting the timeout of each wait for I/O (0: a poll; None or more: may sleep)."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        self.timeouts.append(timeout)
        return super().select(timeout)  # type: ignore[no-any-return]


def on_lane(
    url: str, poll: float, body: Callable[[Any, RecordingSelector], Awaitable[_T]], reading: str = "hiredis"
) -> _T:
    """``body(lane, selector)`` on the lane of a store polling ``poll`` seconds, read as ``reading`` says
    (tests/test_redis_lane.py), on a loop whose waits for I/O ``selector`` notes; the store closed after."""
    selector = RecordingSelector()
    loop = asyncio.SelectorEventLoop(selector)

    async def run() -> _T:
        # (a long timeout: the watchdog's own wake-ups, every quarter of it, stay out of the record)
        store = RedisStore(Engine(None), url, timeout=3600.0, poll=poll)
        if reading == "redis-py":
            store._lane._pack = None  # as when hiredis is not installed
        try:
            return await body(store._lane, selector)
        finally:
            await store.close()

    try:
        return loop.run_until_complete(run())
    finally:
        loop.close()


def waiting(timeouts: list[float | None]) -> list[float | None]:
    """The waits for I/O of one exchange before its answer was read: all but the last, the turn of the
    loop that resumes the request (with it ready, a wait with a zero timeout)."""
    return timeouts[:-1]


def polls(timeouts: list[float | None]) -> int:
    return sum(1 for timeout in timeouts if timeout == 0)


def sleeps(timeouts: list[float | None]) -> int:
    return sum(1 for timeout in timeouts if timeout is None or timeout > 0)


@pytest.mark.parametrize("reading", ["hiredis", "redis-py"])
def test_waiting_within_the_window_the_loop_never_sleeps_and_stops_polling_once_answered(
    redis_url: str, reading: str
) -> None:
    async def body(lane: Any, selector: RecordingSelector) -> tuple[list[float | None], list[float | None], Any]:
        await lane.run("PING")  # connected
        selector.timeouts.clear()
        assert await lane.run("ECHO", "polled") == "polled"
        during = waiting(selector.timeouts)
        selector.timeouts.clear()
        await asyncio.sleep(0.02)  # nothing waits for Redis: the loop sleeps
        return during, list(selector.timeouts), lane

    during, after, lane = on_lane(redis_url, 0.1, body, reading)
    assert polls(during) >= 1
    assert sleeps(during) == 0
    assert not lane._polling
    assert sleeps(after) == 1  # the 20 ms, slept (a poll still going would have spun through them)
    assert polls(after) <= 2  # the poll's last turn, finding nothing waiting; the turn after the sleep
    assert (lane._window.misses, lane._window.resting) == (0, 0)


@pytest.mark.parametrize("reading", ["hiredis", "redis-py"])
def test_a_window_of_zero_lets_the_loop_sleep_while_it_waits(redis_url: str, reading: str) -> None:
    async def body(lane: Any, selector: RecordingSelector) -> list[float | None]:
        await lane.run("PING")
        selector.timeouts.clear()
        assert await lane.run("ECHO", "slept") == "slept"
        return waiting(selector.timeouts)

    during = on_lane(redis_url, 0.0, body, reading)
    assert sleeps(during) >= 1
    assert polls(during) == 0


def test_answers_later_than_the_window_end_its_poll_and_in_a_row_rest_polling(redis_url: str) -> None:
    """Redis 30 ms away, a window of 5 ms: each wait polls, then sleeps; after enough of them in a row the
    waits are not polled at all, for a while."""

    async def body(lane: Any, selector: RecordingSelector) -> tuple[list[list[float | None]], list[float | None], Any]:
        await lane.run("PING")
        each = []
        for i in range(MISSES_TO_REST):
            selector.timeouts.clear()
            assert await lane.run("ECHO", str(i)) == str(i)
            each.append(waiting(selector.timeouts))
        selector.timeouts.clear()
        await lane.run("ECHO", "resting")
        return each, waiting(selector.timeouts), lane._window

    with redis_proxy(redis_url, slow=b"ECHO", delay=0.03) as (url, _):
        each, resting, window = on_lane(url, 0.005, body)
    for timeouts in each:
        assert polls(timeouts) >= 1
        assert sleeps(timeouts) >= 1
    assert polls(resting) == 0
    assert window.resting == REST_WAITS - 1
    assert window.misses == 0


def test_serve_state_poll_takes_microseconds_and_zero_and_refuses_the_rest(redis_url: str, tmp_path: Path) -> None:
    """`--state-poll 0` serves (never polling); out of range, or without `--state`, is refused before serving."""
    import subprocess

    from mockllm.server.state.poll_window import MAX_POLL_S

    for wrong in ("-1", str(round(MAX_POLL_S * 1e6) + 1), "0.5"):
        done = subprocess.run(
            [sys.executable, "-m", "mockllm", "serve", "--state", redis_url, "--state-poll", wrong],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2
        assert "argument --state-poll: expected" in done.stderr
    alone = subprocess.run(
        [sys.executable, "-m", "mockllm", "serve", "--state-poll", "50"], capture_output=True, text=True, timeout=60
    )
    assert alone.returncode == 2
    assert "mockllm: --state-poll needs --state redis://HOST:PORT/DB" in alone.stderr
    script = tmp_path / "hi.mockllm"
    script.write_text(
        'mockllm 1\nscenario "hi":\n    step hello:\n        when:\n            last user message contains "hi"\n'
        '        reply:\n            text "polled or not"\n'
    )
    argv = [sys.executable, "-m", "mockllm", "serve", "--port", "0", "--no-auth", "--state", redis_url]
    server = subprocess.Popen(
        [*argv, "--state-poll", "0", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        with server.stdout:
            line = server.stdout.readline()
        assert line.startswith("mockllm listening on "), line
        answer = oa(line.split()[-1]).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert answer.choices[0].message.content == "polled or not"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_window_given_reaches_the_store_and_the_default_is_200_microseconds(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the command line to the options `mockllm serve` serves with, and from the options to the store."""
    from mockllm.cli import build_parser
    from mockllm.server import runner
    from mockllm.server.http.app import create_app
    from mockllm.server.http.server_state import server_state
    from mockllm.server.options import ServerOptions

    served: list[ServerOptions] = []

    def run(library: object, **kwargs: Any) -> int:  # where serving would start: the options are kept instead
        served.append(kwargs["options"])
        return 0

    monkeypatch.setattr(runner, "run", run)
    for extra in (["--state-poll", "50"], ["--state-poll", "0"], []):
        args = build_parser().parse_args(["serve", "--state", redis_url, *extra])
        assert args.func(args) == 0
    assert [options.state_poll_s for options in served] == [50e-6, 0.0, 200e-6]

    async def limits() -> list[float]:
        found = []
        for options in served:
            store: Any = server_state(create_app(Engine(None), options)).store
            found.append(store._lane._window.limit)
            await store.close()
        return found

    assert asyncio.run(limits()) == [50e-6, 0.0, 200e-6]


@pytest.mark.parametrize("poll", [0.1, 0.0])
def test_on_uvloop_the_loop_keeps_turning_while_a_polled_wait_lasts(redis_url: str, poll: float) -> None:
    """uvloop (Uvicorn's and Granian's loop) hides its waits for I/O: there, the poll is seen turning the
    loop thousands of times through a 30 ms wait (a loop that slept would turn it once or twice), and not
    at all with a window of zero."""
    import uvloop

    async def body() -> int:
        store = RedisStore(Engine(None), url, timeout=3600.0, poll=poll)
        lane: Any = store._lane
        turns = 0
        poll_once = lane._poll

        def counted(loop: asyncio.AbstractEventLoop) -> None:
            nonlocal turns
            turns += 1
            poll_once(loop)

        lane._poll = counted
        try:
            await lane.run("PING")
            turns = 0
            assert await lane.run("ECHO", "uvloop") == "uvloop"
            return turns
        finally:
            await store.close()

    with redis_proxy(redis_url, slow=b"ECHO", delay=0.03) as (url, _):
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            turns = runner.run(body())
    if poll:
        assert turns >= 100
    else:
        assert turns == 0
