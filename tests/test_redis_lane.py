"""The Redis store's commit connections (its lane), on a real Redis: replies of any size, error replies
raised as redis-py raises them on a connection that stays in use, a connection Redis closed while idle
replaced without an error, and a Redis that answers more than it was asked failing that exchange
instead of handing a later command the wrong answer. Each runs through hiredis (the `redis` extra) and
through redis-py's own reading (hiredis not installed)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis
from redis_server import redis_proxy

from mockllm.runtime.engine.engine import Engine
from mockllm.server.state.redis.store import RedisStore

_T = TypeVar("_T")
READINGS = ["hiredis", "redis-py"]


def on_lane(url: str, reading: str, body: Callable[[Any], Awaitable[_T]]) -> _T:
    """``body(lane)`` on a store's lane to ``url``, read as ``reading`` says; the store closed after."""

    async def run() -> _T:
        store = RedisStore(Engine(None), url, timeout=10.0)
        lane = store._lane
        if reading == "redis-py":
            lane._pack = None  # as when hiredis is not installed
        try:
            return await body(lane)
        finally:
            await store.close()

    return asyncio.run(run())


def wires(lane: Any) -> list[object]:
    """How each idle connection is read: a wire (hiredis) or None (redis-py)."""
    return [wire for _, wire in lane._idle]


@pytest.mark.parametrize("reading", READINGS)
def test_replies_of_any_size_and_error_replies_keep_one_connection(redis_url: str, reading: str) -> None:
    big = "é" * 400_000  # 800,000 bytes: the reply arrives in many pieces

    async def body(lane: Any) -> tuple[object, object, list[object]]:
        assert await lane.run("SET", "mockllm-test:big", big) == "OK"
        got = await lane.run("GET", "mockllm-test:big")
        with pytest.raises(redis.exceptions.NoScriptError):
            await lane.run("EVALSHA", "0" * 40, 0)
        with pytest.raises(redis.exceptions.ResponseError, match="wrong kind of value"):
            await lane.run("LPUSH", "mockllm-test:big", "x")
        return got, await lane.run("PING"), wires(lane)

    got, pong, idle = on_lane(redis_url, reading, body)
    assert got == big
    assert pong in ("PONG", True)
    assert len(idle) == 1  # the same connection all along
    assert (idle[0] is not None) == (reading == "hiredis")


@pytest.mark.parametrize("reading", READINGS)
def test_a_connection_redis_closed_while_idle_is_replaced_without_an_error(redis_url: str, reading: str) -> None:
    async def body(lane: Any) -> tuple[int, object, int]:
        await lane.run("CLIENT", "SETNAME", "mockllm-lane")
        own = await lane.run("CLIENT", "ID")
        client = redis.Redis.from_url(redis_url)
        try:
            client.client_kill_filter(_id=own)
        finally:
            client.close()
        await asyncio.sleep(0.05)
        return own, await lane.run("ECHO", "still here"), await lane.run("CLIENT", "ID")

    if reading == "redis-py":  # redis-py finds out only when it writes: that exchange fails
        with pytest.raises(redis.exceptions.ConnectionError):
            on_lane(redis_url, reading, body)
        return
    before, echoed, after = on_lane(redis_url, reading, body)
    assert echoed == "still here"
    assert after != before  # a new connection


def test_a_redis_that_answers_more_than_it_was_asked_never_answers_the_next_command_with_it(redis_url: str) -> None:
    """The first answer answers the command (failing it would send a commit Redis already ran once more);
    the second drops the connection before the next command, which gets its own answer."""

    async def body(lane: Any) -> tuple[object, object, object]:
        first = await lane.run("ECHO", "once")
        await asyncio.sleep(0.05)
        return first, await lane.run("PING"), await lane.run("GET", "mockllm-test:absent")

    with redis_proxy(redis_url, twice=b"ECHO") as (url, _):
        first, pong, absent = on_lane(url, "hiredis", body)
    assert first == "once"
    assert pong in ("PONG", True)
    assert absent is None


@pytest.mark.parametrize("reading", READINGS)
def test_push_messages_around_a_commit_neither_fail_it_nor_send_it_twice(redis_url: str, reading: str) -> None:
    """RESP3 push messages (client tracking here; maintenance notifications on managed Redis) may arrive
    before or with an answer: the commit is answered once, journalled once, on the same connection."""
    import json

    from mockllm.dsl.machines.compiler import load_and_compile
    from mockllm.runtime.providers.registry import adapter_for
    from mockllm.runtime.request import HttpRequest
    from mockllm.server.state.redis.store import PREFIX

    script = Path(__file__).resolve().parent.parent / "bench" / "scenarios" / "chat.mockllm"
    library, _, diagnostics = load_and_compile([str(script)])
    assert library is not None, diagnostics
    adapter = adapter_for("openai")
    body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "Hello"}]}).encode()
    chat = adapter.parse(HttpRequest("POST", "/v1/chat/completions", {}, {"content-type": "application/json"}, body))

    async def run() -> tuple[list[int], int, int, list[Any], list[int]]:
        store = RedisStore(Engine(library), redis_url, timeout=10.0)
        lane = store._lane
        if reading == "redis-py":
            lane._pack = None
        try:
            await store.sync_library()
            await lane.run("HELLO", "3")  # pushes need RESP3 (redis-py 8 speaks it by default)
            await lane.run("CLIENT", "TRACKING", "ON")  # every key the commit reads, then writes: a push
            ids = [await lane.run("CLIENT", "ID")]
            seen: list[Any] = []
            entries = []
            for _ in range(3):
                outcome = await store.handle(chat, seen.append)
                entries.append(outcome.entry_id)
                ids.append(await lane.run("CLIENT", "ID"))
            journal = await lane.run("XLEN", PREFIX + "journal")
            counted = int(await lane.run("GET", PREFIX + "next"))
            return entries, journal, counted, seen, ids
        finally:
            await store.close()

    entries, journal, counted, seen, ids = asyncio.run(run())
    assert journal == 3 and counted == 3  # each commit ran once
    assert entries == [entries[0], entries[0] + 1, entries[0] + 2]
    assert len({o.response_id for o in seen}) == 3  # once per decision (a first commit that finds the script
    # not loaded yet is sent again: the same decision)
    assert len(set(ids)) == 1  # and no connection was dropped


def test_a_reply_rendered_ahead_is_given_back_only_for_the_outcome_it_was_rendered_for() -> None:
    """The server renders while Redis commits the decided turn; when the commit decides again (another
    process moved the conversation on) to something it does not render ahead -- an error, no match --
    the reply rendered for the first decision must not be sent."""
    import json

    from mockllm.runtime.engine.outcome import Outcome
    from mockllm.runtime.providers.base import RenderContext
    from mockllm.runtime.providers.registry import adapter_for
    from mockllm.runtime.reply.plan import ErrorPlan, MessagePlan
    from mockllm.runtime.request import HttpRequest
    from mockllm.server.http.responder import RenderAhead, debug_headers, response_head

    adapter = adapter_for("openai")
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Hello"}]}).encode()
    chat = adapter.parse(HttpRequest("POST", "/v1/chat/completions", {}, {"content-type": "application/json"}, body))
    contexts: list[str | None] = []

    def context(response_id: str | None) -> RenderContext:
        contexts.append(response_id)
        return RenderContext(response_id=response_id or "fresh", created=1, request_id="req_1")

    first = Outcome("c", 0, MessagePlan("m", text="first decision"), response_id="r1")
    again = Outcome("c", 0, ErrorPlan("m", 429, "busy"), response_id="r2")
    ahead = RenderAhead(adapter, chat, context)
    ahead(first)
    ahead(again)  # not rendered ahead: an error is rendered when it is sent
    assert ahead.take(again) is None
    assert ahead.take(Outcome("c", 7, first.plan, response_id="r2")) is None
    taken = ahead.take(first.with_entry_id(7))  # the committed outcome: the same decision, its entry id
    assert taken is not None
    ctx, rendered, head = taken
    assert ctx.response_id == "r1" and contexts == ["r1"]
    assert b"first decision" in rendered.body
    # the head of the reply sent whole, made ahead too: what deliver would have written
    assert head == response_head(rendered, debug_headers(first), len(rendered.body))
    assert (b"content-length", str(len(rendered.body)).encode()) in head
    assert (b"x-mockllm-conversation", b"c") in head
    scripted = Outcome("c", 0, MessagePlan("m", text="x", headers=(("x-bad name", "v"),)), response_id="r3")
    ahead(scripted)  # a scripted header's head is made when it is sent (an invalid name is reported once)
    assert ahead.take(scripted) is not None and ahead.take(scripted)[2] is None  # type: ignore[index]
    ahead(first)
    other = Outcome("d", 7, first.plan, response_id="r1")  # (the head names the conversation: made again)
    assert ahead.take(other) is not None and ahead.take(other)[2] is None  # type: ignore[index]


def test_more_exchanges_than_connections_wait_their_turn_and_a_cancelled_one_gives_its_turn_on(
    redis_url: str,
) -> None:
    """The lane runs at most its size of exchanges at once (one per connection); the others wait, first
    come first served; one cancelled while it waits, or just as its turn came, takes no slot with it."""

    async def body(lane: Any) -> tuple[list[object], int, list[int]]:
        lane._free = 2  # (a lane of two connections)
        # each holds its connection until its key gets a value
        held = [asyncio.ensure_future(lane.run("BLPOP", f"mockllm-test:q{n}", 5)) for n in range(2)]
        await asyncio.sleep(0.05)
        waiting = asyncio.ensure_future(lane.run("PING"))  # no free slot: waits
        cancelled = asyncio.ensure_future(lane.run("PING"))
        await asyncio.sleep(0.05)
        assert not waiting.done() and len(lane._queue) == 2
        cancelled.cancel()
        pusher = RedisStore(Engine(None), redis_url)
        try:
            await pusher._client.rpush("mockllm-test:q0", "a")  # the first held exchange ends
            pong = await asyncio.wait_for(waiting, 5)
            await pusher._client.rpush("mockllm-test:q1", "b")
            answers = await asyncio.gather(*held)
        finally:
            await pusher.close()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        # handed its turn just as it is cancelled: the slot goes on to the next
        handed = asyncio.ensure_future(lane._wait_turn())
        after = asyncio.ensure_future(lane.run("PING"))
        lane._free = 0
        await asyncio.sleep(0)
        lane._next_turn()  # handed to `handed` ...
        handed.cancel()  # ... cancelled before it resumes
        with pytest.raises(asyncio.CancelledError):
            await handed
        assert await asyncio.wait_for(after, 5) in ("PONG", True)
        return [*answers, pong], lane._free, [len(lane._queue)]

    answers, free, queued = on_lane(redis_url, "hiredis", body)
    assert answers[:2] == [["mockllm-test:q0", "a"], ["mockllm-test:q1", "b"]]
    assert answers[2] in ("PONG", True)
    assert free == 1 and queued == [0]  # every slot back (the test took the other away), nobody left waiting
