"""200 OpenAI Realtime sessions at once, through the official `openai` SDK's realtime client: each
session is its own conversation, with its own captures and its own place in the scenario, so every
answer names its own session and none another's (the speed and memory of the same, against aimock,
are `bench/bench_realtime.py`'s)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import compile_text
from openai import AsyncOpenAI

from mockllm.server.background import BackgroundServer

SESSIONS = 200
LIBRARY = """\
scenario "Many sessions":
    step first:
        when:
            endpoint is "realtime"
        capture n from last user message /session (\\d+)/
        reply:
            text "Answer for session {{n}}."
    step second:
        when:
            endpoint is "realtime"
        reply:
            text "Session {{n}} again."
"""
TEXT = {"type": "realtime", "output_modalities": ["text"]}


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(compile_text(LIBRARY)) as running:
        yield running


async def _answer(conn: Any) -> str:
    text = ""
    async for event in conn:
        if event.type == "response.output_text.delta":
            text += event.delta
        elif event.type == "error":
            return f"error: {event.error.message}"
        elif event.type == "response.done":
            return text
    return "closed before response.done"


async def _session(client: AsyncOpenAI, n: int) -> tuple[str, str]:
    """Session ``n``'s two answers: the first step's (capturing ``n``), then the second's."""
    async with client.realtime.connect(model="gpt-realtime") as conn:
        await conn.session.update(session=TEXT)
        say = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"I am session {n}."}]}
        await conn.conversation.item.create(item=say)
        await conn.response.create()
        first = await _answer(conn)
        await conn.response.create()
        return first, await _answer(conn)


def test_200_sessions_at_once_each_get_their_own_answers(server: BackgroundServer) -> None:
    client = AsyncOpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)

    async def all_at_once() -> list[tuple[str, str]]:
        return list(await asyncio.gather(*(_session(client, n) for n in range(SESSIONS))))

    answers = asyncio.run(asyncio.wait_for(all_at_once(), 120))
    wrong = [(n, got) for n, got in enumerate(answers) if got != (f"Answer for session {n}.", f"Session {n} again.")]
    assert not wrong, wrong[:5]
    page = httpx.get(server.url + "/_mockllm/requests", params={"limit": 1000}).json()  # one page: 400 entries
    entries = [e for e in page if e["endpoint"] == "/v1/realtime"]
    steps_by_conversation: dict[str, list[str]] = {}
    for entry in entries:
        steps_by_conversation.setdefault(entry["conversation"], []).append(entry["matched"]["step"])
    assert len(steps_by_conversation) == SESSIONS  # one conversation per session, none shared
    assert Counter(tuple(s) for s in steps_by_conversation.values()) == {("first", "second"): SESSIONS}
