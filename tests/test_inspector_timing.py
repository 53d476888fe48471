"""Per-request timing, reply bodies and late changes in the journal (docs/inspector.md, docs/admin-api.md):
when a request arrived, when its reply's first byte went out, when it ended or the client went away,
read through the admin API's JSON and the inspector's live feed with httpx, in memory and in Redis.

The server runs on a fake clock that only the scripted waits move (a latency, a stream's spacing) or
the test itself: every timing asserted is exact, none is read from the wall clock."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from conftest import compile_text

from mockllm.runtime.clock import FakeClock
from mockllm.runtime.engine.engine import Engine
from mockllm.runtime.engine.journal import REPLY_CHARS, JournalEntry
from mockllm.server.background import BackgroundServer
from mockllm.server.options import ServerOptions

TIMED = """\
scenario "Timed":
    order any
    step slow:
        when:
            last user message contains "slow"
        always
        reply:
            text "Finally."
            latency 2s
    step streamed:
        when:
            last user message contains "stream"
        always
        reply:
            text "one two three four"
            latency 1s
            stream 4 chunks, 250ms apart
    step held:
        when:
            last user message contains "hold"
        always
        reply:
            hang
    step big:
        when:
            last user message contains "big"
        always
        reply:
            text "{big}"
"""
API = "/_mockllm/ui/api/"
HANG_S = 600.0  # the hang limit: a wait this long is held until the client goes


class Timeline:
    """The server's clock and sleep: a scripted wait moves the clock by exactly what it asked, at once;
    a hang is held (really) until the client goes."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        if seconds >= HANG_S:
            await asyncio.Event().wait()  # cancelled when the client goes
        self.sleeps.append(seconds)
        self.clock.advance(seconds)
        await asyncio.sleep(0)


@contextmanager
def timed_server(timeline: Timeline, state: str | None = None, **engine: Any) -> Iterator[BackgroundServer]:
    script = TIMED.replace("{big}", "x" * (REPLY_CHARS + 4000))
    options = ServerOptions(clock=timeline.clock, sleep=timeline.sleep, hang_limit_s=HANG_S, state=state, no_auth=True)
    with BackgroundServer(Engine(compile_text(script), clock=timeline.clock, **engine), options=options) as server:
        yield server


def chat(url: str, text: str, stream: bool = False) -> httpx.Response:
    body = {"model": "gpt-4o", "stream": stream, "messages": [{"role": "user", "content": text}]}
    return httpx.post(url + "/v1/chat/completions", json=body, headers={"x-mockllm-conversation": text}, timeout=10)


def journal(url: str) -> list[dict[str, Any]]:
    answer: list[dict[str, Any]] = httpx.get(url + "/_mockllm/requests").json()
    return answer


def settled(url: str, count: int) -> list[dict[str, Any]]:
    """The journal once its first ``count`` entries have ended (a shared store writes that a moment
    after the answer: the wait is bounded and polls)."""
    for _ in range(200):
        entries = journal(url)
        if len(entries) >= count and all(e["duration_ms"] is not None for e in entries[:count]):
            return entries
        time.sleep(0.05)
    raise AssertionError(f"the journal's first {count} entries did not end: {entries}")


@contextmanager
def held_request(url: str) -> Iterator[None]:
    """A request to the `hang` step on a raw connection, which the test closes when it leaves."""
    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hold"}]}).encode()
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\ncontent-type: application/json\r\n"
        f"x-mockllm-conversation: hold\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    try:
        yield
    finally:
        sock.close()


def wait_for(read: Any, what: str) -> Any:
    for _ in range(200):
        found = read()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


@pytest.mark.parametrize("shared", [False, True], ids=["memory", "redis"])
def test_each_request_says_when_it_arrived_its_first_byte_went_and_it_ended(redis_url: str, shared: bool) -> None:
    timeline = Timeline()
    with timed_server(timeline, redis_url if shared else None) as server:
        url = server.url
        start = timeline.clock.now()
        assert chat(url, "slow").json()["choices"][0]["message"]["content"] == "Finally."
        streamed = chat(url, "stream", stream=True)
        assert streamed.text.rstrip().endswith("data: [DONE]")
        slow, stream = settled(url, 2)[:2]
        # the whole reply waits its latency: its first byte and its end 2 s after it arrived
        assert (slow["arrived"], slow["first_byte_ms"], slow["duration_ms"]) == (start, 2000.0, 2000.0)
        # the stream starts after its latency, and ends after its chunks' spacing
        assert stream["arrived"] == start + 2.0 and stream["first_byte_ms"] == 1000.0
        spacing = sum(timeline.sleeps[2:])
        assert spacing == 0.75 and stream["duration_ms"] == 1000.0 + spacing * 1000.0
        # the reply bodies are kept, a stream's frames joined, in memory and in Redis alike
        assert json.loads(slow["reply"])["choices"][0]["message"]["content"] == "Finally."
        assert stream["reply"].startswith("data: {") and stream["reply"].rstrip().endswith("data: [DONE]")
        # the inspector's rows and detail say the same
        rows = httpx.get(url + API + "journal").json()["entries"]
        assert [(r["id"], r["duration_ms"], r["done"], r["operation"]) for r in rows] == [
            (stream["id"], 1750.0, True, "chat"),
            (slow["id"], 2000.0, True, "chat"),
        ]
        detail = httpx.get(url + API + f"entry?id={slow['id']}").json()
        assert detail["first_byte_ms"] == 2000.0 and "Finally." in detail["reply"]
        # and the Python API's entries (server.requests()) read them back
        again = JournalEntry.from_json(stream)
        assert (again.arrived, again.first_byte_ms, again.duration_ms, again.operation) == (
            start + 2.0,
            1000.0,
            1750.0,
            "chat",
        )


@pytest.mark.parametrize("shared", [False, True], ids=["memory", "redis"])
def test_a_row_on_show_changes_when_its_client_goes_away_later(redis_url: str, shared: bool) -> None:
    timeline = Timeline()
    with timed_server(timeline, redis_url if shared else None) as server:
        url = server.url
        with held_request(url):
            held = wait_for(lambda: journal(url), "the held request is journalled")[0]
            assert (held["status"], held["duration_ms"], held["client_gone"]) == (200, None, False)
            for i in range(3):
                assert chat(url, f"slow {i}").status_code == 200
            feed = httpx.get(url + API + f"feed?ids={held['id']},999&open={held['id']}").json()
            assert feed["missing"] == [999] and feed["newest"] == held["id"] + 3
            assert [(r["id"], r["done"], r["duration_ms"]) for r in feed["rows"]] == [(held["id"], False, None)]
            timeline.clock.advance(7.5)  # the client holds on for 7.5 s, then goes
        ask = f"feed?ids={held['id']}&open={held['id']}"
        rows = wait_for(lambda: [r for r in httpx.get(url + API + ask).json()["rows"] if r["done"]], "the row ends")
        assert [(r["status"], r["client_gone"], r["duration_ms"], r["first_byte_ms"]) for r in rows] == [
            (0, True, 7500.0 + 6000.0, None)  # (the three slow requests' latency moved the clock 6 s too)
        ]
        # new rows since a cursor: only those above it, newest first; a done row is not sent again
        feed = httpx.get(url + API + f"feed?after={held['id'] + 1}&ids={held['id']}").json()
        assert [e["id"] for e in feed["entries"]] == [held["id"] + 3, held["id"] + 2] and feed["rows"] == []
        assert httpx.get(url + API + "feed?ids=1,x").status_code == 400


def test_reply_bodies_in_redis_are_bounded_per_body_and_per_journal(redis_url: str) -> None:
    timeline = Timeline()
    with timed_server(timeline, redis_url, journal_total_bytes=20_000) as server:
        url = server.url
        assert chat(url, "big").status_code == 200
        big = settled(url, 1)[0]["reply"]
        assert len(big) == REPLY_CHARS  # one body: its first 16 KB
        for i in range(12):
            assert chat(url, f"slow {i}").status_code == 200
        entries = settled(url, 13)
        kept = [e["reply"] for e in entries if e["reply"] is not None]
        # the oldest replies went first, so that all kept stay within the journal's 20,000 bytes
        assert entries[0]["reply"] is None and entries[-1]["reply"] is not None
        assert sum(len(r) for r in kept) <= 20_000 and len(kept) >= 10
        assert all(e["duration_ms"] is not None for e in entries)  # how each went is kept regardless


MCP_LIBRARY = """\
mcp server "weather":
    tool get_forecast "Forecast for a city":
        input {"type": "object", "properties": {"city": {"type": "string"}}}

scenario "Forecast tool":
    step paris:
        when:
            tool is "get_forecast"
        always
        reply:
            latency 300ms
            result {"city": "Paris", "sky": "clear"}
"""


@pytest.mark.parametrize("shared", [False, True], ids=["memory", "redis"])
def test_an_mcp_call_is_a_row_with_its_operation_and_how_long_it_took(redis_url: str, shared: bool) -> None:
    from mcp import Client

    timeline = Timeline()
    options = ServerOptions(clock=timeline.clock, sleep=timeline.sleep, state=redis_url if shared else None)
    engine = Engine(compile_text(MCP_LIBRARY), clock=timeline.clock)
    with BackgroundServer(engine, options=options) as server:

        async def call() -> Any:
            async with Client(server.url + "/mcp/weather") as client:
                return await client.call_tool("get_forecast", {"city": "Paris"})

        assert asyncio.run(asyncio.wait_for(call(), 20)).structured_content == {"city": "Paris", "sky": "clear"}
        [entry] = settled(server.url, 1)
        # settled by the MCP service, which does not time it: it ends when settled, from when journalled
        assert (entry["operation"], entry["duration_ms"]) == ("mcp", 300.0)
        [row] = httpx.get(server.url + API + "journal?operation=mcp").json()["entries"]
        assert (row["id"], row["done"], row["step"]) == (entry["id"], True, "Forecast tool / paris")
        assert httpx.get(server.url + API + "journal?operation=chat").json()["entries"] == []
