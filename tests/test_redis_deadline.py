"""The Redis store's deadline: a Redis that accepts connections but never answers gives each request a
clear 503 reason after the store's timeout, a request cancelled meanwhile (its client left) stays
cancelled, and a store on a real Redis answers and shuts its watchdog down on close."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from mockllm.dsl.machines.compiler import load_and_compile
from mockllm.errors import StateUnavailable
from mockllm.runtime.engine.engine import Engine
from mockllm.runtime.providers.registry import adapter_for
from mockllm.runtime.request import ChatRequest, HttpRequest
from mockllm.server.redis_store import RedisStore

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


def test_a_redis_that_never_answers_fails_the_request_with_the_deadline() -> None:
    async def run() -> str:
        async with silent_redis() as url:
            store = RedisStore(engine(), url, timeout=0.3)
            try:
                with pytest.raises(StateUnavailable) as raised:
                    await store.handle(chat())
            finally:
                await store.close()
        return str(raised.value)

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
