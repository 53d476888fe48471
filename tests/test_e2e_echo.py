"""The echo double through the official SDKs, on a real server with no scenarios at all."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import jsonschema
import ollama
import openai
import pytest
from conftest import ServeText
from google import genai
from google.genai import types
from sdk_clients import opened

SCHEMAS = sorted(p for p in (Path(__file__).parent / "schemas").glob("*.json") if not p.name.startswith("gemini_"))

HISTORY: list[Any] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "First question"},
    {"role": "assistant", "content": "First answer"},
    {"role": "user", "content": "The second, final question — with ünïcödé and  two  spaces."},
]
LAST = HISTORY[-1]["content"]


@pytest.fixture
def echo_url(serve_text: ServeText) -> Iterator[str]:
    with serve_text("") as url:
        yield url


@pytest.mark.parametrize("stream", [False, True])
def test_openai_echoes_last_user_message(echo_url: str, stream: bool) -> None:
    c = opened(openai.OpenAI(base_url=echo_url + "/v1", api_key="k"))
    if stream:
        pieces = [
            ch.choices[0].delta.content
            for ch in c.chat.completions.create(model="m", messages=HISTORY, stream=True)
            if ch.choices and ch.choices[0].delta.content
        ]
        assert "".join(pieces) == LAST
        assert len(pieces) == len(LAST.split(" ")) - LAST.count("  ")  # word by word
        return
    out = c.chat.completions.create(model="m", messages=HISTORY)
    assert out.choices[0].message.content == LAST
    assert out.choices[0].finish_reason == "stop"
    assert out.usage is not None and out.usage.completion_tokens == max(1, len(LAST) // 4)


@pytest.mark.parametrize("stream", [False, True])
def test_every_other_provider_echoes(echo_url: str, stream: bool) -> None:
    an = opened(anthropic.Anthropic(base_url=echo_url, api_key="k"))
    msgs: Any = [m for m in HISTORY if m["role"] != "system"]
    if stream:
        with an.messages.stream(model="m", max_tokens=50, system="terse", messages=msgs) as s:
            assert s.get_final_text() == LAST
    else:
        assert an.messages.create(model="m", max_tokens=50, messages=msgs).content[0].text == LAST  # type: ignore[union-attr]

    oa = opened(openai.OpenAI(base_url=echo_url + "/v1", api_key="k"))
    if stream:
        with oa.responses.stream(model="m", input=msgs) as rs:
            assert rs.get_final_response().output_text == LAST
    else:
        assert oa.responses.create(model="m", input=msgs).output_text == LAST

    ge = opened(genai.Client(api_key="k", http_options=types.HttpOptions(base_url=echo_url)))
    contents = [
        types.Content(role="user", parts=[types.Part(text="First question")]),
        types.Content(role="model", parts=[types.Part(text="First answer")]),
        types.Content(role="user", parts=[types.Part(text=LAST)]),
    ]
    if stream:
        text = "".join(ch.text or "" for ch in ge.models.generate_content_stream(model="m", contents=contents))
    else:
        text = ge.models.generate_content(model="m", contents=contents).text or ""
    assert text == LAST

    ol = opened(ollama.Client(host=echo_url))
    if stream:
        assert "".join(p.message.content or "" for p in ol.chat(model="m", messages=HISTORY, stream=True)) == LAST
    else:
        assert ol.chat(model="m", messages=HISTORY).message.content == LAST


def tool(name: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": schema or {"type": "object"}}}


@pytest.mark.parametrize(
    "wording",
    [
        "please send_email now",
        "please sendEmail now",
        "please SendEmail now",
        "please send-email now",
        "please send email now",
        "Please SEND EMAIL to the team",
        "send an email to Bob",
    ],
)
def test_tool_named_in_any_style_is_called(echo_url: str, wording: str) -> None:
    c = opened(openai.OpenAI(base_url=echo_url + "/v1", api_key="k"))
    out = c.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": wording}],
        tools=[tool("send_email"), tool("get_weather")],  # type: ignore[list-item]
    )
    calls = out.choices[0].message.tool_calls or []
    assert [tc.function.name for tc in calls] == ["send_email"]  # type: ignore[union-attr]
    assert out.choices[0].finish_reason == "tool_calls"
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", calls[0].id)  # the real API's shape


def test_several_tools_called_in_parallel_in_the_order_named(echo_url: str) -> None:
    c = opened(openai.OpenAI(base_url=echo_url + "/v1", api_key="k"))
    with c.chat.completions.stream(
        model="m",
        messages=[{"role": "user", "content": "get_time, then get_weather, and calculate the sum"}],
        tools=[tool("get_weather"), tool("calculate"), tool("get_time"), tool("send_email")],  # type: ignore[list-item]
    ) as s:
        final = s.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert [tc.function.name for tc in calls] == ["get_time", "get_weather", "calculate"]  # type: ignore[union-attr]
    assert len({tc.id for tc in calls}) == 3


@pytest.mark.parametrize("path", SCHEMAS, ids=[p.stem for p in SCHEMAS])
def test_arguments_validate_against_the_schema(echo_url: str, path: Path) -> None:
    """The arguments the SDK receives validate against the tool's schema (with format checks)."""
    schema = json.loads(path.read_text())
    c = opened(openai.OpenAI(base_url=echo_url + "/v1", api_key="k"))
    with c.chat.completions.stream(
        model="m",
        messages=[{"role": "user", "content": "please call do_it"}],
        tools=[tool("do_it", schema)],  # type: ignore[list-item]
    ) as s:
        final = s.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert len(calls) == 1
    args = json.loads(calls[0].function.arguments)  # type: ignore[union-attr]
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls(schema, format_checker=cls.FORMAT_CHECKER).validate(args)


def test_anthropic_tool_input_validates(echo_url: str) -> None:
    schema = json.loads((Path(__file__).parent / "schemas" / "calendar_create_event.json").read_text())
    c = opened(anthropic.Anthropic(base_url=echo_url, api_key="k"))
    out = c.messages.create(
        model="m",
        max_tokens=100,
        messages=[{"role": "user", "content": "create event please"}],
        tools=[{"name": "create_event", "input_schema": schema}],
    )
    use = next(b for b in out.content if b.type == "tool_use")
    assert re.fullmatch(r"toolu_01[A-Za-z0-9]{22}", use.id)
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(use.input)


def test_same_request_same_answer_across_conversations(echo_url: str) -> None:
    """The same request gets the same answer in any conversation; tool-call ids are stable within a
    conversation and turn but differ between conversations (an app storing calls by id never collides)."""
    c = opened(openai.OpenAI(base_url=echo_url + "/v1", api_key="k"))
    schema = json.loads((Path(__file__).parent / "schemas" / "email_send_email.json").read_text())
    results = []
    ids = []
    for conversation in ("a", "b", "a"):
        out = c.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "send an email"}],
            tools=[tool("send_email", schema)],  # type: ignore[list-item]
            extra_headers={"x-mockllm-conversation": conversation},
        )
        message = out.choices[0].message
        results.append(message.model_dump(include={"content": True, "tool_calls": {"__all__": {"function"}}}))
        ids.append([call.id for call in message.tool_calls or []])
    assert results[0] == results[1] == results[2]
    assert ids[0] == ids[2] != ids[1]


def test_agent_loop_with_real_tool_schemas_runs_to_completion(echo_url: str) -> None:
    """A plain agent loop: call tools until the model stops asking; echo ends it after one round."""
    tools: Any = [
        tool(
            "get_weather",
            {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city", "unit"],
            },
        ),
        tool("get_time", {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}),
    ]
    impls = {"get_weather": lambda a: f"sunny in {a['city']}", "get_time": lambda a: f"noon in {a['timezone']}"}
    c = opened(openai.OpenAI(base_url=echo_url + "/v1", api_key="k"))
    messages: list[Any] = [
        {"role": "user", "content": "What is the weather and the time in Paris? Use get weather and get time."}
    ]
    rounds = 0
    while rounds < 5:
        rounds += 1
        msg = c.chat.completions.create(model="gpt-4o", messages=messages, tools=tools).choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            break
        for tc in msg.tool_calls:
            result = impls[tc.function.name](json.loads(tc.function.arguments))  # type: ignore[union-attr]
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": result})
    assert rounds == 2
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert messages[-1]["content"] == messages[0]["content"]


def test_fresh_serve_with_no_scenarios_answers_every_provider() -> None:
    """`mockllm serve` with no paths and no MOCKLLM_SCENARIOS is the echo double on every endpoint."""
    env = {k: v for k, v in os.environ.items() if k != "MOCKLLM_SCENARIOS"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mockllm", "serve", "--port", "0"], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("mockllm listening on http://127.0.0.1:")
        url = first.rsplit(" ", 1)[1]
        hi: Any = [{"role": "user", "content": "hello echo"}]
        oa = opened(openai.OpenAI(base_url=url + "/v1", api_key="k"))
        assert oa.chat.completions.create(model="m", messages=hi).choices[0].message.content == "hello echo"
        assert oa.responses.create(model="m", input="hello echo").output_text == "hello echo"
        an = opened(anthropic.Anthropic(base_url=url, api_key="k"))
        assert an.messages.create(model="m", max_tokens=9, messages=hi).content[0].text == "hello echo"  # type: ignore[union-attr]
        ge = opened(genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url)))
        assert ge.models.generate_content(model="m", contents="hello echo").text == "hello echo"
        assert opened(ollama.Client(host=url)).chat(model="m", messages=hi).message.content == "hello echo"
        assert httpx.get(url + "/_mockllm/health").status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        if proc.stdout is not None:
            proc.stdout.close()
