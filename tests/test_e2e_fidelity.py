"""What the wire fidelity work (issue 11) changed, seen through a real server and the official SDKs:
id shapes and their uniqueness across conversations, the real APIs' headers, and the Responses API's
numbered `error` event."""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
import httpx
import openai
import pytest
from conftest import ServeText
from sdk_clients import opened

SCRIPT = """
scenario "Calls":
    step call:
        when:
            last user message contains "call"
        reply:
            tool call lookup {"q": "x"}
        always

scenario "Limited":
    step slow_down:
        when:
            last user message contains "limit"
        reply:
            error 429 "Slow down."
        always

scenario "Broken stream":
    step broken:
        when:
            last user message contains "break"
        reply:
            text "one two three four"
            stream error "upstream failed" after 2 chunks
        always
"""

TOOLS_OA: Any = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
TOOLS_AN: Any = [{"name": "lookup", "input_schema": {"type": "object"}}]


def test_tool_call_ids_have_the_real_shape_and_never_collide_across_conversations(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        oa = opened(openai.OpenAI(base_url=url + "/v1", api_key="k"))
        an = opened(anthropic.Anthropic(base_url=url, api_key="k"))
        oa_ids, an_ids = [], []
        for question in ("please call for Ann", "please call for Bob", "please call for Ann"):
            messages: Any = [{"role": "user", "content": question}]
            completion = oa.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS_OA)
            assert re.fullmatch(r"chatcmpl-[A-Za-z0-9]{29}", completion.id)
            oa_ids.append(completion.choices[0].message.tool_calls[0].id)  # type: ignore[index]
            message = an.messages.create(model="claude-x", max_tokens=50, messages=messages, tools=TOOLS_AN)
            assert re.fullmatch(r"msg_01[A-Za-z0-9]{22}", message.id)
            assert re.fullmatch(r"req_011[A-Za-z0-9]{21}", message._request_id or "")
            use = next(b for b in message.content if b.type == "tool_use")
            an_ids.append(use.id)
        assert all(re.fullmatch(r"call_[A-Za-z0-9]{24}", i) for i in oa_ids)
        assert all(re.fullmatch(r"toolu_01[A-Za-z0-9]{22}", i) for i in an_ids)
        # Ann's conversation twice: the same ids; Bob's: others
        assert oa_ids[0] == oa_ids[2] != oa_ids[1] and an_ids[0] == an_ids[2] != an_ids[1]


def test_headers_the_real_apis_send(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "call"}], "stream": True}
        got = httpx.post(url + "/v1/chat/completions", json=body, headers={"authorization": "Bearer k"})
        assert got.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert got.headers["openai-version"] == "2020-10-01" and got.headers["openai-processing-ms"].isdigit()
        assert re.fullmatch(r"req_[0-9a-f]{32}", got.headers["x-request-id"])

        limited = opened(anthropic.Anthropic(base_url=url, api_key="k", max_retries=0))
        with pytest.raises(anthropic.RateLimitError) as info:
            limited.messages.create(model="claude-x", max_tokens=5, messages=[{"role": "user", "content": "limit"}])
        assert info.value.response.headers["x-should-retry"] == "true"

        gemini = httpx.post(
            url + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            json={"contents": [{"role": "user", "parts": [{"text": "call"}]}]},
            headers={"x-goog-api-key": "k"},
        )
        assert gemini.headers["content-type"] == "text/event-stream"
        assert gemini.text.endswith("\r\n\r\n") and "\n\n" not in gemini.text.replace("\r\n", "")


def test_responses_error_event_is_numbered_and_raised(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        body = {"model": "gpt-4.1", "input": "break it", "stream": True}
        raw = httpx.post(url + "/v1/responses", json=body, headers={"authorization": "Bearer k"}).text
        events = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]
        assert events[-1]["type"] == "error"
        assert [e["sequence_number"] for e in events] == list(range(len(events)))

        client = opened(openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0))
        with pytest.raises(openai.APIError, match="upstream failed"):
            for _ in client.responses.create(model="gpt-4.1", input="break it", stream=True):
                pass
