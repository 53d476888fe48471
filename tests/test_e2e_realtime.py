"""OpenAI Realtime sessions at `/v1/realtime`, judged by the official `openai` SDK's realtime client
(`client.realtime.connect`) and, for what a well-behaved client never sends, a raw `websockets` client:
the lifecycle and its event order, text and audio out, audio in, tool calls mid-session, scripted
errors, latency, spacing and `disconnect`, cancelling, two sessions at once, the journal and
`verify`, and bad input (garbage, huge frames, clients that vanish or never read)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import httpx
import pytest
from conftest import SleepLog, compile_text
from openai import AsyncOpenAI

from mockllm.server.background import BackgroundServer
from mockllm.server.options import ServerOptions

T = TypeVar("T")
WAIT = 20.0

LIBRARY = """\
scenario "Weather agent":
    step asks:
        when:
            endpoint is "realtime"
            last user message contains "weather"
        reply:
            tool call get_weather {"city": "Paris"}
    step answers:
        when:
            tool result for "get_weather" contains "sunny"
        reply:
            text "It is sunny in Paris today."

scenario "Chat steps answer realtime too":
    step hello:
        when:
            last user message contains "good morning"
        reply:
            text "Good morning to you!"

scenario "Faults":
    order any
    step busy:
        when:
            last user message contains "busy please"
        always
        reply:
            error 429 "Slow down."
    step cut:
        when:
            last user message contains "cut me off"
        always
        reply:
            text "one two three four five six"
            disconnect after 2 chunks
    step slow:
        when:
            last user message contains "take your time"
        always
        reply:
            text "alpha beta gamma"
            latency 250ms
            stream by word, 10ms apart
    step endless:
        when:
            last user message contains "talk forever"
        always
        reply:
            text "LONG"
            stream by word, 5ms apart
""".replace("LONG", "la " * 3000)


@pytest.fixture(scope="module")
def sleeps() -> SleepLog:
    return SleepLog()


@pytest.fixture(scope="module")
def server(sleeps: SleepLog) -> Iterator[BackgroundServer]:
    with BackgroundServer(compile_text(LIBRARY), options=ServerOptions(sleep=sleeps)) as running:
        yield running


@pytest.fixture(scope="module")
def echo() -> Iterator[BackgroundServer]:
    """No script: the echo double."""
    with BackgroundServer(None) as running:
        yield running


def run(factory: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(factory(), WAIT))


def client(server: BackgroundServer) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=server.url + "/v1", api_key="test")


def conversation() -> dict[str, str]:
    """A conversation of the test's own: steps used up elsewhere are fresh here."""
    return {"x-mockllm-conversation": "rt-" + uuid.uuid4().hex}


async def until(conn: Any, last: str = "rate_limits.updated") -> list[Any]:
    """Every event up to and including the first of type ``last``."""
    out = []
    async for event in conn:
        out.append(event)
        if event.type == last:
            return out
    raise AssertionError(f"the session ended before {last}: {[e.type for e in out]}")


def journal(server: BackgroundServer) -> list[dict[str, Any]]:
    return [e for e in httpx.get(server.url + "/_mockllm/requests").json() if e["endpoint"] == "/v1/realtime"]


def say(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


TEXT = {"type": "realtime", "output_modalities": ["text"]}


def test_a_text_response_has_the_real_apis_events_in_order(echo: BackgroundServer) -> None:
    async def go() -> tuple[list[Any], list[Any]]:
        async with client(echo).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
            opened = [await conn.recv()]
            await conn.session.update(session=TEXT)
            opened.append(await conn.recv())
            await conn.conversation.item.create(item=say("hello there"))
            await conn.response.create()
            return opened, await until(conn)

    opened, events = run(go)
    assert [e.type for e in opened] == ["session.created", "session.updated"]
    assert opened[0].session.type == "realtime" and opened[0].session.model == "gpt-realtime"
    assert opened[1].session.output_modalities == ["text"]
    assert [e.type for e in events] == [
        "conversation.item.added",
        "conversation.item.done",
        "response.created",
        "response.output_item.added",
        "conversation.item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "conversation.item.done",
        "response.done",
        "rate_limits.updated",
    ]
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "hello there"
    created, done = events[2].response, events[-2].response
    assert created.status == "in_progress" and created.output == []
    assert done.id == created.id and done.status == "completed"
    assert done.output[0].content[0].text == "hello there"
    assert done.usage.input_tokens > 0 and done.usage.output_tokens > 0
    assert done.usage.total_tokens == done.usage.input_tokens + done.usage.output_tokens
    ids = {e.item_id for e in events if hasattr(e, "item_id")}
    assert ids == {events[3].item.id}
    assert all(e.event_id.startswith("event_") for e in events)
    assert len({e.event_id for e in events}) == len(events)


def test_a_chat_step_answers_a_realtime_response(server: BackgroundServer) -> None:
    async def go() -> list[Any]:
        async with client(server).realtime.connect(model="gpt-realtime", extra_headers=conversation()) as conn:
            await conn.session.update(session=TEXT)
            await conn.conversation.item.create(item=say("good morning"))
            await conn.response.create()
            return await until(conn)

    events = run(go)
    assert [e.text for e in events if e.type == "response.output_text.done"] == ["Good morning to you!"]
    (entry,) = [e for e in journal(server) if e["matched"] and e["matched"]["step"] == "hello"]
    assert entry["provider"] == "openai" and entry["status"] == 200 and entry["model"] == "gpt-realtime"
    assert entry["body"]["items"][-1] == {"type": "message", "role": "user", "text": "good morning"}
