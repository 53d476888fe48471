"""The Redis store's deadline: a Redis that accepts connections but never answers gives each request a
clear 503 reason after the store's timeout, a request cancelled meanwhile (its client left) stays
cancelled, and a store on a real Redis answers and shuts its watchdog down on close."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path

import openai
import pytest
from redis_server import redis_proxy
from reliability import serve_process

from mockllm.dsl.machines.compiler import load_and_compile
from mockllm.errors import StateUnavailable
from mockllm.runtime.engine.engine import Engine
from mockllm.runtime.providers.registry import adapter_for
from mockllm.runtime.request import ChatRequest, HttpRequest
from mockllm.server.state.redis.store import RedisStore

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "scenarios" / "chat.mockllm"


def chat() -> ChatRequest:
    body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "Hello"}]}).encode()
    http = HttpRequest("POST", "/v1/chat/completions", {}, {"content-type": "application/json"}, body)
    return adapter_for("openai").parse(http)


def engine() -> Engine:
    library, _, diagnostics = load_and_compile([str(SCRIPT)])
    assert library is not None, diagnostics
    return Engine(library)


@asynccontextmanager
async def silent_redis() -> AsyncIterator[str]:
    """A TCP server that reads whatever it is sent and never answers: a Redis that hangs."""
    connections: list[asyncio.StreamWriter] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)
        while await reader.read(65536):
            pass

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        for writer in connections:
            writer.close()
        server.close()


async def refused(url: str) -> str:
    """Why a request to a store on ``url`` with a 0.3 s timeout fails."""
    store = RedisStore(engine(), url, timeout=0.3)
    try:
        with pytest.raises(StateUnavailable) as raised:
            await store.handle(chat())
    finally:
        await store.close()
    return str(raised.value)


def test_a_redis_that_never_answers_fails_the_request_with_the_deadline() -> None:
    async def run() -> str:
        async with silent_redis() as url:
            return await refused(url)

    message = asyncio.run(run())
    assert "no answer from Redis within 0.3s" in message
    assert "nothing was answered or recorded" in message


def test_a_request_cancelled_while_redis_is_silent_stays_cancelled() -> None:
    async def run() -> None:
        async with silent_redis() as url:
            store = RedisStore(engine(), url, timeout=30.0)
            try:
                waiting = asyncio.ensure_future(store.handle(chat()))
                await asyncio.sleep(0.2)
                assert not waiting.done()
                waiting.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await waiting
            finally:
                await store.close()

    asyncio.run(run())


def test_a_store_on_a_real_redis_answers_and_stops_its_watchdog_on_close(redis_url: str) -> None:
    async def run() -> tuple[list[int], set[asyncio.Task[object]]]:
        store = RedisStore(engine(), redis_url, timeout=5.0)
        await store.sync_library()
        outcomes = [await store.handle(chat()) for _ in range(3)]
        await store.close()
        left = {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}
        return [o.entry_id for o in outcomes], left

    entry_ids, left = asyncio.run(run())
    assert entry_ids == [entry_ids[0], entry_ids[0] + 1, entry_ids[0] + 2]
    assert left == set()


def redis_that_hangs_on_commits(upstream: str) -> AbstractContextManager[tuple[str, list[bytes]]]:
    """The Redis at ``upstream`` behind a proxy that passes every command on but a commit (``EVALSHA``),
    which it never answers: the proxy's URL, and the commands it received."""
    return redis_proxy(upstream, hang=b"EVALSHA")


def test_a_commit_that_timed_out_is_not_sent_again(redis_url: str) -> None:
    """Redis may have run a commit whose answer came too late: sending it again could take the turn twice."""

    with redis_that_hangs_on_commits(redis_url) as (url, received):
        message = asyncio.run(refused(url))

    assert "no answer from Redis within 0.3s" in message
    assert received.count(b"EVALSHA") == 1


def test_a_timeout_that_is_not_positive_is_refused() -> None:
    from mockllm.errors import UsageError

    with pytest.raises(UsageError, match="the Redis timeout must be positive, not 0"):
        RedisStore(engine(), "redis://127.0.0.1:1/0", timeout=0)


def test_a_not_loaded_report_redis_did_not_take_is_sent_at_the_next_sync(redis_url: str, tmp_path: Path) -> None:
    """The library is loaded all the same; the report is owed, and the next sync delivers it."""
    import redis

    from mockllm.server.state.posted import Posted

    with_file, without = tmp_path / "with", tmp_path / "without"
    with_file.mkdir()
    without.mkdir()
    (with_file / "shared.mockllm").write_text('mockllm 1\nreply greeting:\n    text "Hi."\n')
    text = 'mockllm 1\nuse "shared.mockllm" as shared\n\nscenario "Hi":\n    step hi:\n'
    text += "        reply like shared.greeting\n"
    posted = Posted(text)

    async def run() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        origin = RedisStore(engine(), redis_url, root=str(with_file))
        other = RedisStore(engine(), redis_url, root=str(without))
        try:
            await origin.sync_library()
            await other.sync_library()
            compiled, _, _ = posted.compile(str(with_file))
            assert compiled is not None
            await origin.post_library(posted, compiled)
            script = other.library._report_script

            async def unreachable(*args: object, **kwargs: object) -> object:
                raise redis.exceptions.ConnectionError("Redis went away")

            other.library._report_script = unreachable
            await other.sync_library()  # loads the library (without the post) but cannot report it
            before = await origin.not_loaded()
            other.library._report_script = script
            await other.sync_library()  # the same generation: the owed report goes now
            after = await origin.not_loaded()
        finally:
            await origin.close()
            await other.close()
        return before, after

    before, after = asyncio.run(run())
    assert before == []
    assert [(r["post"], r["scenario_base"]) for r in after] == [(1, str(without.resolve()))]


def test_a_request_cancelled_during_its_commit_leaves_the_other_connections_open(redis_url: str) -> None:
    """A client that leaves mid-commit costs its own connection (its exchange is cut short), not the
    others': the next commit goes on one still open instead of a new connection."""

    async def run(url: str, received: list[bytes]) -> tuple[int, int]:
        store = RedisStore(engine(), url, timeout=30.0)
        lane = store._lane  # the commits' own connections
        try:
            await lane.run("PING")  # one connection, idle: the commit takes it
            committing = asyncio.ensure_future(store.handle(chat()))
            while b"EVALSHA" not in received:
                await asyncio.sleep(0.01)
            await lane.run("PING")  # a second one meanwhile, idle again
            committing.cancel()
            with pytest.raises(asyncio.CancelledError):
                await committing
            before = received.count(b"CONNECTED")
            await lane.run("PING")
            after = received.count(b"CONNECTED")
        finally:
            await store.close()
        return before, after

    with redis_that_hangs_on_commits(redis_url) as (url, received):
        before, after = asyncio.run(run(url, received))
    assert after == before


def test_an_sdk_client_of_a_server_whose_redis_hangs_gets_a_503_after_the_deadline(redis_url: str) -> None:
    """What a user meets: `mockllm serve --state` on a Redis that stops answering, the OpenAI SDK."""
    with (
        redis_that_hangs_on_commits(redis_url) as (url, received),
        serve_process("--state", url, str(SCRIPT)) as (_, base, _),
        openai.OpenAI(base_url=base + "/v1", api_key="test", max_retries=0, timeout=60) as client,
        pytest.raises(openai.InternalServerError) as raised,
    ):
        client.chat.completions.create(model="bench", messages=[{"role": "user", "content": "Hello"}])
    assert raised.value.status_code == 503
    assert "the shared state store is unreachable" in raised.value.message
    assert "no answer from Redis within 10s" in raised.value.message
    assert received.count(b"EVALSHA") == 1  # the commit was not sent again: Redis may have taken it
