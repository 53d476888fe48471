"""Anthropic message threads (beta ``message-threads-2026-08-12``) against a real server, through the
official SDK's tool runner with its default settings: from the second turn it sends only the new
messages and ``thread: {"type": "continue", "previous_message_id": …}``; a lost thread answers the
documented 404 ``thread_not_found`` and the SDK replays the whole conversation (issue 11)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import pytest
from anthropic import beta_tool
from conftest import Serve
from sdk_clients import opened

# Separate scenarios, each answering one situation whatever came before, so a replayed history is
# answered exactly like the threaded one.
SCRIPT = """
scenario "Ask for the weather":
    step ask:
        when:
            last user message contains "weather"
            tool result for "get_weather" is absent
        reply:
            tool call get_weather {"city": "Rome"}
        always

scenario "Then the time":
    step time:
        when:
            tool result for "get_weather" is present
            tool result for "get_time" is absent
        reply:
            tool call get_time {"city": "Rome"}
        always

scenario "Answer":
    step answer:
        when:
            tool result for "get_time" contains "noon"
        reply:
            text "Sunny in Rome at noon."
        always
"""


def weather_runner(client: anthropic.Anthropic, stream: bool, on_weather: Callable[[], None] = lambda: None) -> Any:
    """The SDK's tool runner (default settings: threads) on "What is the weather in Rome, and the time?"
    with a weather tool and a time tool."""

    @beta_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        on_weather()
        return f"sunny in {city}"

    @beta_tool
    def get_time(city: str) -> str:
        """The local time in a city."""
        return f"noon in {city}"

    return client.beta.messages.tool_runner(
        model="claude-sonnet-4-5",
        max_tokens=200,
        tools=[get_weather, get_time],
        messages=[{"role": "user", "content": "What is the weather in Rome, and the time?"}],
        stream=stream,
    )


def run_loop(url: str, on_weather: Callable[[], None] = lambda: None, stream: bool = False) -> Any:
    client = opened(anthropic.Anthropic(base_url=url, api_key="test", max_retries=0))
    return weather_runner(client, stream, on_weather).until_done()


@pytest.mark.parametrize("stream", [False, True])
def test_tool_runner_completes_a_threaded_tool_loop(serve: Serve, stream: bool) -> None:
    with serve(SCRIPT) as server:
        final = run_loop(server.url, stream=stream)
        assert final.stop_reason == "end_turn"
        assert [b.text for b in final.content if b.type == "text"] == ["Sunny in Rome at noon."]
        journal = server.engine.journal()
        assert [e["status"] for e in journal] == [200, 200, 200]
        assert [e["matched"]["step"] for e in journal] == ["ask", "time", "answer"]
        # one conversation: the continued turns joined the thread's history
        assert len({e["conversation"] for e in journal}) == 1
        assert httpx.get(server.url + "/_mockllm/verify").json()["ok"] is True


def test_a_lost_thread_is_replayed_by_the_sdk(serve: Serve) -> None:
    """The server forgets everything while the first tool runs (a reset: as if the thread were evicted);
    the next turn's continue gets thread_not_found and the SDK replays the full history."""
    with serve(SCRIPT) as server:

        def forget() -> None:
            httpx.post(server.url + "/_mockllm/reset")

        final = run_loop(server.url, on_weather=forget)
        assert [b.text for b in final.content if b.type == "text"] == ["Sunny in Rome at noon."]
        journal = server.engine.journal()  # since the reset
        assert [e["status"] for e in journal] == [404, 200, 200]
        assert journal[0]["matched"] is None and "eviction" in journal[0]["note"]
        assert [e["matched"]["step"] for e in journal[1:]] == ["time", "answer"]


def test_continue_from_an_unknown_message_answers_thread_not_found(serve: Serve) -> None:
    with serve(SCRIPT) as server:
        client = opened(anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0))
        with pytest.raises(anthropic.NotFoundError) as info:
            client.beta.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=50,
                messages=[{"role": "user", "content": "What is the weather?"}],
                thread={"type": "continue", "previous_message_id": "msg_01NeverAnsweredByThisServer"},
                betas=["message-threads-2026-08-12"],
            )
        error = info.value.body["error"]  # type: ignore[index]
        assert error["type"] == "not_found_error" and error["details"] == {"error_code": "thread_not_found"}
        assert "msg_01NeverAnsweredByThisServer" in error["message"]
