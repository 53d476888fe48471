"""The journal in Redis stays about as long as the store's journal limit: the commit appends without
cutting (cheaper for Redis), and cuts the journal to its limit every 64 entries."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from mockllm.dsl.machines.compiler import load_and_compile
from mockllm.runtime.engine.engine import Engine
from mockllm.runtime.engine.journal import Delivery
from mockllm.runtime.providers.registry import adapter_for
from mockllm.runtime.request import HttpRequest
from mockllm.server.state.redis.store import PREFIX, RedisStore

if TYPE_CHECKING:
    from mockllm.dsl.machines.compiled import CompiledLibrary
    from mockllm.runtime.request import ChatRequest

SCRIPT = """mockllm 1

scenario "always":
    step answer:
        reply:
            text "hi"
        always
"""


def _library_and_chat(tmp_path: Path) -> tuple[CompiledLibrary, ChatRequest]:
    """SCRIPT compiled, and a chat request in the conversation named ``one``."""
    path = tmp_path / "always.mockllm"
    path.write_text(SCRIPT, encoding="utf-8")
    library, _, diagnostics = load_and_compile([str(path)])
    assert library is not None, diagnostics
    body = b'{"model":"m","messages":[{"role":"user","content":"hello"}]}'
    headers = {"content-type": "application/json", "x-mockllm-conversation": "one"}
    return library, adapter_for("openai").parse(HttpRequest("POST", "/v1/chat/completions", {}, headers, body))


def test_the_journal_is_cut_to_about_its_limit_and_keeps_the_newest(redis_url: str, tmp_path: Path) -> None:
    library, chat = _library_and_chat(tmp_path)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.delete(PREFIX + "journal")
    limit, requests = 10, 700

    async def run() -> list[int]:
        store = RedisStore(Engine(library), redis_url, journal_limit=limit)
        try:
            ids = []
            for _ in range(requests):
                outcome = await store.handle(chat)
                store.settle(outcome.entry_id, Delivery(200))
                ids.append(outcome.entry_id)
            return ids
        finally:
            await store.close()

    ids = asyncio.run(run())
    kept = client.xrange(PREFIX + "journal")
    client.close()
    assert limit <= len(kept) <= limit + 64 + 100  # cut every 64 entries, whole stream nodes (100) at a time
    assert kept[-1][0] == f"{ids[-1]}-1"  # the newest entry is kept
    assert [int(i.split("-")[0]) for i, _ in kept] == ids[-len(kept) :]  # the last ones, in order


@pytest.mark.parametrize("before", [0, 61])
def test_the_journal_is_cut_when_turns_of_one_conversation_are_committed_in_batches(
    redis_url: str, tmp_path: Path, before: int
) -> None:
    """64 clients on one conversation: its turns are committed in batches (of 1 and 63 in turn, once
    settled), whose ids follow one another; each multiple of 64 among them cuts the journal, wherever
    the ids started (after 61 earlier entries, a test of the batch's first id alone never cut it)."""
    library, chat = _library_and_chat(tmp_path)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.delete(PREFIX + "journal")
    client.set(PREFIX + "next", before)
    limit, left = 10, [3000]
    batches: list[int] = []

    async def run() -> None:
        store = RedisStore(Engine(library), redis_url, journal_limit=limit)
        commit = store._run_commit

        async def counted(keys: list[str], args: list[object], meanwhile: object) -> object:
            batches.append(int(str(args[5])))  # the number of turns committed together
            return await commit(keys, args, meanwhile)  # type: ignore[arg-type]

        store._run_commit = counted  # type: ignore[method-assign]

        async def one_client() -> None:
            while left[0] > 0:
                left[0] -= 1
                outcome = await store.handle(chat)
                store.settle(outcome.entry_id, Delivery(200))

        try:
            await asyncio.gather(*[one_client() for _ in range(64)])
        finally:
            await store.close()

    asyncio.run(run())
    kept = client.xlen(PREFIX + "journal")
    client.close()
    assert max(batches) > 1  # turns were committed together
    assert limit <= kept <= limit + 64 + 100
