"""The journal in Redis stays about as long as the store's journal limit: the commit appends without
cutting (cheaper for Redis), and cuts the journal to its limit every 64 entries. How answers went is
written by a commit sent in the loop turn they were settled in, or on their own."""

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


def test_a_delivery_rides_on_the_next_commit_and_is_read_back_at_once(redis_url: str, tmp_path: Path) -> None:
    """A delivery settled before a commit is sent in the same loop turn rides on it (no script of its
    own); one no commit carries is read back by this process at once (a read writes what is pending
    first), and is written on its own at the next loop turn, for the other processes."""
    library, chat = _library_and_chat(tmp_path)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    scripts: list[str] = []

    async def run() -> None:
        store = RedisStore(Engine(library), redis_url)
        send = store._run_script

        async def counted(script: object, *args: object, **kwargs: object) -> object:
            scripts.append("commit" if script is store._commit else "settle")
            return await send(script, *args, **kwargs)  # type: ignore[arg-type]

        store._run_script = counted  # type: ignore[method-assign]
        try:
            first = await store.handle(chat)
            store.settle(first.entry_id, Delivery(201, note="first"))
            second = await store.handle(chat)
            store.settle(second.entry_id, Delivery(202, note="second"))
            # (no await since: the second's delivery waits for the next loop turn; the first's is in Redis)
            assert '"note":"first"' in (client.hget(PREFIX + "fin", str(first.entry_id)) or "")
            assert client.hget(PREFIX + "fin", str(second.entry_id)) is None
            assert scripts == ["commit", "commit"]
            [entry] = await store.journal_find([second.entry_id])
            assert (entry["status"], entry["note"]) == (202, "second")
            third = await store.handle(chat)
            store.settle(third.entry_id, Delivery(203, note="third"))
            for _ in range(400):  # no commit follows: the delivery goes on its own
                if client.hget(PREFIX + "fin", str(third.entry_id)) is not None:
                    break
                await asyncio.sleep(0.005)
            assert '"note":"third"' in (client.hget(PREFIX + "fin", str(third.entry_id)) or "")
            assert scripts == ["commit", "commit", "settle", "commit", "settle"]
        finally:
            await store.close()

    try:
        asyncio.run(run())
    finally:
        client.close()
