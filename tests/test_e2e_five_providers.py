"""One scenario file drives the same tool round trip through all five APIs, and every official
client reconstructs the same answer (issue: Gemini, Ollama and the OpenAI Responses API)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import ollama
import openai
import pytest
from conftest import ServeText
from google import genai
from google.genai import types
from provider_cases import CELSIUS_CALL, tool_loop
from sdk_clients import opened

SCRIPT = tool_loop(
    None,
    [CELSIUS_CALL],
    ['text "It is sunny in {{city}}, says {{request.model}}."', "stream by word"],
    tools_include=True,
)

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}
ARGS = {"city": "Lima", "unit": "celsius"}
QUESTION = "What is the weather in Lima?"


def answer(model: str) -> str:
    return f"It is sunny in Lima, says {model}."


def openai_chat(url: str, stream: bool) -> str:
    c = opened(openai.OpenAI(base_url=url + "/v1", api_key="k"))
    tools: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    first = c.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert json.loads(call.function.arguments) == ARGS  # type: ignore[union-attr]
    messages += [first.choices[0].message.model_dump(exclude_none=True)]
    messages += [{"role": "tool", "tool_call_id": call.id, "content": "sunny, 21C"}]
    if stream:
        with c.chat.completions.stream(model="gpt-4o", messages=messages, tools=tools) as s:
            return s.get_final_completion().choices[0].message.content or ""
    return c.chat.completions.create(model="gpt-4o", messages=messages, tools=tools).choices[0].message.content or ""


def openai_responses(url: str, stream: bool) -> str:
    c = opened(openai.OpenAI(base_url=url + "/v1", api_key="k"))
    tools: Any = [{"type": "function", "name": "get_weather", "parameters": SCHEMA}]
    if stream:
        with c.responses.stream(model="gpt-4.1", input=QUESTION, tools=tools) as s:
            first = s.get_final_response()
    else:
        first = c.responses.create(model="gpt-4.1", input=QUESTION, tools=tools)
    call = next(item for item in first.output if item.type == "function_call")
    assert json.loads(call.arguments) == ARGS  # type: ignore[union-attr]
    output: Any = [{"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21C"}]  # type: ignore[union-attr]
    # the history lives on the server: continue from the previous response
    if stream:
        with c.responses.stream(model="gpt-4.1", input=output, tools=tools, previous_response_id=first.id) as s:
            return s.get_final_response().output_text
    return c.responses.create(model="gpt-4.1", input=output, tools=tools, previous_response_id=first.id).output_text


def anthropic_messages(url: str, stream: bool) -> str:
    c = opened(anthropic.Anthropic(base_url=url, api_key="k"))
    tools: Any = [{"name": "get_weather", "input_schema": SCHEMA}]
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    first = c.messages.create(model="claude-x", max_tokens=200, messages=messages, tools=tools)
    use = next(b for b in first.content if b.type == "tool_use")
    assert use.input == ARGS  # type: ignore[union-attr]
    messages += [{"role": "assistant", "content": [b.model_dump() for b in first.content]}]
    messages += [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]}]  # type: ignore[union-attr]
    if stream:
        with c.messages.stream(model="claude-x", max_tokens=200, messages=messages, tools=tools) as s:
            return s.get_final_text()
    out = c.messages.create(model="claude-x", max_tokens=200, messages=messages, tools=tools)
    return "".join(b.text for b in out.content if b.type == "text")


def gemini(url: str, stream: bool) -> str:
    c = opened(genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url)))
    decl = types.FunctionDeclaration(name="get_weather", parameters_json_schema=SCHEMA)
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[decl])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    chat = c.chats.create(model="gemini-2.5-flash", config=config)
    first = chat.send_message(QUESTION)
    calls = first.function_calls or []
    assert [(fc.name, fc.args, fc.id) for fc in calls] == [("get_weather", ARGS, None)]
    part = types.Part.from_function_response(name="get_weather", response={"result": "sunny"})
    if stream:
        return "".join(chunk.text or "" for chunk in chat.send_message_stream(part))
    return chat.send_message(part).text or ""


def ollama_chat(url: str, stream: bool) -> str:
    c = opened(ollama.Client(host=url))
    tools: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    first = c.chat(model="llama3.2", messages=messages, tools=tools)
    calls = first.message.tool_calls or []
    assert [(tc.function.name, dict(tc.function.arguments)) for tc in calls] == [("get_weather", ARGS)]
    messages += [first.message, {"role": "tool", "tool_name": "get_weather", "content": "sunny"}]
    if stream:
        return "".join(part.message.content or "" for part in c.chat(model="llama3.2", messages=messages, stream=True))
    return c.chat(model="llama3.2", messages=messages).message.content or ""


CLIENTS: dict[str, tuple[Callable[[str, bool], str], str]] = {
    "openai": (openai_chat, "gpt-4o"),
    "responses": (openai_responses, "gpt-4.1"),
    "anthropic": (anthropic_messages, "claude-x"),
    "gemini": (gemini, "gemini-2.5-flash"),
    "ollama": (ollama_chat, "llama3.2"),
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("provider", list(CLIENTS))
def test_same_round_trip_through_every_api(serve_text: ServeText, provider: str, stream: bool) -> None:
    drive, model = CLIENTS[provider]
    with serve_text(SCRIPT) as url:
        assert drive(url, stream) == answer(model)


def test_provider_condition_routes_each_api(serve_text: ServeText) -> None:
    """`provider is …` tells the five APIs apart."""
    script = "\n".join(
        f'scenario "{p}":\n    when:\n        provider is {p}\n    step s:\n        always\n'
        f'        reply:\n            text "hello from {p}"\n'
        for p in CLIENTS
    )
    with serve_text(script) as url:
        oa = opened(openai.OpenAI(base_url=url + "/v1", api_key="k"))
        an = opened(anthropic.Anthropic(base_url=url, api_key="k"))
        ge = opened(genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url)))
        ol = opened(ollama.Client(host=url))
        hi: Any = [{"role": "user", "content": "hi"}]
        got = {
            "openai": oa.chat.completions.create(model="m", messages=hi).choices[0].message.content,
            "responses": oa.responses.create(model="m", input="hi").output_text,
            "anthropic": an.messages.create(model="m", max_tokens=5, messages=hi).content[0].text,  # type: ignore[union-attr]
            "gemini": ge.models.generate_content(model="m", contents="hi").text,
            "ollama": ol.chat(model="m", messages=hi).message.content,
        }
    assert got == {p: f"hello from {p}" for p in CLIENTS}


def test_errors_reach_each_client_as_its_own_exception(serve_text: ServeText) -> None:
    script = 'scenario "e":\n    step a:\n        always\n        reply:\n            error 429 "slow down"\n'
    with serve_text(script) as url:
        ge = opened(genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url)))
        with pytest.raises(genai.errors.ClientError) as g:
            ge.models.generate_content(model="m", contents="hi")
        assert g.value.code == 429 and g.value.status == "RESOURCE_EXHAUSTED" and "slow down" in str(g.value)
        with pytest.raises(ollama.ResponseError) as o:
            opened(ollama.Client(host=url)).chat(model="m", messages=[{"role": "user", "content": "hi"}])
        assert o.value.status_code == 429 and "slow down" in o.value.error
        oa = opened(openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0))
        with pytest.raises(openai.RateLimitError):
            oa.responses.create(model="m", input="hi")


def test_null_arguments_in_every_api(serve_text: ServeText) -> None:
    """`tool call NAME null`: OpenAI-style APIs get the string "null"; APIs whose arguments are an
    object (Anthropic, Gemini, Ollama) get {} rather than an invented parameter."""
    script = 'scenario "n":\n    step a:\n        always\n        reply:\n            tool call ping null\n'
    with serve_text(script) as url:
        oa = opened(openai.OpenAI(base_url=url + "/v1", api_key="k"))
        hi: Any = [{"role": "user", "content": "hi"}]
        call = oa.chat.completions.create(model="m", messages=hi).choices[0].message.tool_calls[0]  # type: ignore[index]
        assert call.function.arguments == "null"  # type: ignore[union-attr]
        an = opened(anthropic.Anthropic(base_url=url, api_key="k"))
        assert an.messages.create(model="m", max_tokens=5, messages=hi).content[0].input == {}  # type: ignore[union-attr]
        with an.messages.stream(model="m", max_tokens=5, messages=hi) as s:
            assert s.get_final_message().content[0].input == {}  # type: ignore[union-attr]
        ge = opened(genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url)))
        fc = ge.models.generate_content(model="m", contents="hi").function_calls
        assert fc is not None and fc[0].args == {}
        tc = opened(ollama.Client(host=url)).chat(model="m", messages=hi).message.tool_calls
        assert tc is not None and dict(tc[0].function.arguments) == {}
