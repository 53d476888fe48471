"""`interleave calls`: fragments of parallel tool calls alternate in one stream, and the official
stream helpers still rebuild every call exactly (they accumulate by index / output_index)."""

from __future__ import annotations

import json
from typing import Any

import openai
from conftest import ServeText
from sdk_clients import opened

SCRIPT = """
scenario "Interleaved":
    step three:
        reply:
            tool call check {"name": "billing", "region": "eu-west-1"}
            tool call check {"name": "search", "region": "us-east-1"}
            tool call check {"name": "email", "region": "ap-south-1"}
            stream by 4 characters
            interleave calls
"""
EXPECTED = [
    {"name": "billing", "region": "eu-west-1"},
    {"name": "search", "region": "us-east-1"},
    {"name": "email", "region": "ap-south-1"},
]


def alternates(order: list[int]) -> bool:
    """The sequence of call indexes switches call on every fragment until a call runs out."""
    return order[:3] == [0, 1, 2] and order[3:6] == [0, 1, 2]


def test_responses_stream_interleaves_and_reconstructs(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        client = opened(openai.OpenAI(base_url=url + "/v1", api_key="k"))
        order: list[int] = []
        with client.responses.stream(model="m", input="check all three") as stream:
            for event in stream:
                if event.type == "response.function_call_arguments.delta":
                    order.append(event.output_index)
            final = stream.get_final_response()
    assert alternates(order), order
    calls: list[Any] = [item for item in final.output if item.type == "function_call"]
    assert [json.loads(c.arguments) for c in calls] == EXPECTED
    assert len({c.call_id for c in calls}) == 3


def test_openai_chat_stream_interleaves_and_reconstructs(serve_text: ServeText) -> None:
    """Raw chunks alternate between call indexes; the stream helper's final message is still exact."""
    with serve_text(SCRIPT) as url:
        client = opened(openai.OpenAI(base_url=url + "/v1", api_key="k"))
        order: list[int] = []
        buffers: dict[int, str] = {}
        for chunk in client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "check all three"}], stream=True
        ):
            for tc in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                if tc.function and tc.function.arguments:
                    order.append(tc.index)
                    buffers[tc.index] = buffers.get(tc.index, "") + tc.function.arguments
        assert alternates(order), order
        assert [json.loads(buffers[i]) for i in range(3)] == EXPECTED
        with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "check again"}]) as stream:
            final = stream.get_final_completion()
    calls: list[Any] = final.choices[0].message.tool_calls or []
    assert [json.loads(c.function.arguments) for c in calls] == EXPECTED


def test_openai_rejects_several_choices_clearly(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        client = opened(openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0))
        try:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], n=2)
        except openai.BadRequestError as e:
            assert "n > 1" in str(e) and e.param == "n"
        else:
            raise AssertionError("n=2 was accepted")
        try:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], n=0)
        except openai.BadRequestError as e:
            assert "at least 1" in str(e)
        else:
            raise AssertionError("n=0 was accepted")
