"""Every script in `scenarios/examples/`, served together as `mockllm serve scenarios/examples` would,
driven end to end by the official SDK of each provider it targets. Each test asserts what the
example's leading comment promises; `docs/cookbook.md` quotes these tests.

Every test opens its own conversation (a fresh `x-mockllm-conversation` header), so the examples'
state machines never see another test's progress."""

from __future__ import annotations

import ast
import io
import json
import re
import time
import uuid
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import cohere
import httpx
import httpx2
import ollama
import openai
import pytest
import sdk_clients
from audio_judge import probe
from google import genai
from google.genai import types as gtypes
from mistralai.client import Mistral
from mistralai.client import errors as mistral_errors
from sdk_clients import conversation as conversation_headers
from sdk_clients import opened

from mockllm.dsl.diagnostics import render
from mockllm.dsl.machines.compiler import compile_library, load_and_compile
from mockllm.dsl.parse.loader import load_paths, load_text
from mockllm.dsl.tree.nodes import ReplyBlock, ToolCall
from mockllm.server.background import BackgroundServer

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
EXAMPLES = SCENARIOS / "examples"
COOKBOOK = ROOT / "docs" / "cookbook.md"

OPENAI_MODEL = "gpt-4o"
ANTHROPIC_MODEL = "claude-mock-1"
GEMINI_MODEL = "gemini-2.5-flash"
OLLAMA_MODEL = "llama3.2"
COHERE_MODEL = "command-a-03-2025"
MISTRAL_MODEL = "mistral-small-latest"


# ---------------------------------------------------------------------------------------------------------
# The server and the clients


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """One server for the whole module, holding every example at once."""
    compiled, library, diagnostics = load_and_compile([str(EXAMPLES)])
    if compiled is None:
        pytest.fail("scenarios/examples does not compile:\n" + render(diagnostics, library.sources), pytrace=False)
    with BackgroundServer(compiled) as server:
        yield server.url


def openai_client(url: str, conversation: str | None = None, **kw: Any) -> openai.OpenAI:
    return opened(
        openai.OpenAI(base_url=url + "/v1", api_key="test", default_headers=conversation_headers(conversation), **kw)
    )


def anthropic_client(url: str, conversation: str | None = None, **kw: Any) -> anthropic.Anthropic:
    return opened(
        anthropic.Anthropic(base_url=url, api_key="test", default_headers=conversation_headers(conversation), **kw)
    )


def gemini_client(url: str) -> genai.Client:
    options = gtypes.HttpOptions(base_url=url, headers=conversation_headers())
    return opened(genai.Client(api_key="test", http_options=options))


def ollama_client(url: str) -> ollama.Client:
    return opened(ollama.Client(host=url, headers=conversation_headers()))


def cohere_client(url: str, **kw: Any) -> cohere.ClientV2:
    return sdk_clients.cohere_v2(url, conversation_headers(), **kw)


def mistral_client(url: str) -> Mistral:
    return sdk_clients.mistral(url, conversation_headers())


def journal(url: str, conversation: str) -> list[dict[str, Any]]:
    """The server's record of one conversation's requests, oldest first."""
    body = httpx.get(url + "/_mockllm/requests", params={"limit": 1000}).json()  # (the module's requests: over a page)
    entries: list[dict[str, Any]] = body["requests"] if isinstance(body, dict) else body
    return [e for e in entries if e.get("conversation") == conversation]


def scripted_calls(example: str, step: str) -> list[tuple[str, Any]]:
    """The `tool call` lines of one step of an example file: (name, arguments) as written."""
    library = load_paths([EXAMPLES / example])
    for scenario in library.files[0].scenarios:
        for s in scenario.steps:
            if s.name == step and isinstance(s.reply, ReplyBlock):
                return [(e.name, e.arguments) for e in s.reply.elements if isinstance(e, ToolCall)]
    raise AssertionError(f"no step {step!r} in {example}")


def openai_tools(*names: str) -> list[Any]:
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]


def cohere_tools(*names: str) -> list[Any]:
    return openai_tools(*names)  # Cohere v2 describes tools as OpenAI does


def mistral_tools(*names: str) -> list[Any]:
    return openai_tools(*names)


def anthropic_tools(*names: str) -> list[Any]:
    return [{"name": n, "input_schema": {"type": "object"}} for n in names]


def openai_turn(c: openai.OpenAI, stream: bool, **kw: Any) -> tuple[Any, list[str]]:
    """One Chat Completions turn through `create()` or the stream helper: the choice, and the text
    deltas the helper reported (empty for `create()`)."""
    if not stream:
        return c.chat.completions.create(model=OPENAI_MODEL, **kw).choices[0], []
    deltas: list[str] = []
    with c.chat.completions.stream(model=OPENAI_MODEL, **kw) as s:
        for event in s:
            if event.type == "content.delta" and event.delta:
                deltas.append(event.delta)
        return s.get_final_completion().choices[0], deltas


def anthropic_turn(c: anthropic.Anthropic, stream: bool, **kw: Any) -> tuple[Any, list[str]]:
    """One Messages turn through `create()` or the stream helper: the message and its text deltas."""
    if not stream:
        return c.messages.create(model=ANTHROPIC_MODEL, max_tokens=1024, **kw), []
    with c.messages.stream(model=ANTHROPIC_MODEL, max_tokens=1024, **kw) as s:
        deltas = list(s.text_stream)
        return s.get_final_message(), deltas


def assistant_message(choice: Any) -> dict[str, Any]:
    """An OpenAI assistant message as it goes back into the history."""
    message: dict[str, Any] = choice.message.model_dump(exclude_none=True, exclude={"parsed"})
    for call in message.get("tool_calls", []):
        call.pop("parsed_arguments", None)
    return message


def assistant_blocks(message: Any) -> dict[str, Any]:
    """An Anthropic assistant turn as it goes back into the history."""
    return {"role": "assistant", "content": [b.model_dump(exclude={"parsed_input"}) for b in message.content]}


# ---------------------------------------------------------------------------------------------------------
# weather.mockllm — the call id is answered, the captured city comes back, four chunks


@pytest.mark.parametrize("stream", [False, True])
def test_weather_round_trip_openai(url: str, stream: bool) -> None:
    c = openai_client(url)
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Lisbon?"}]
    tools = openai_tools("get_weather")

    first, _ = openai_turn(c, stream, messages=messages, tools=tools)
    assert first.finish_reason == "tool_calls"
    [call] = first.message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Lisbon", "unit": "celsius"}

    messages.append(assistant_message(first))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 18, "sky": "sunny"}'})
    second, deltas = openai_turn(c, stream, messages=messages, tools=tools)
    assert second.finish_reason == "stop"
    assert second.message.content == "It is 18°C and sunny in Lisbon."
    if stream:
        assert len(deltas) == 4 and "".join(deltas) == second.message.content


@pytest.mark.parametrize("stream", [False, True])
def test_weather_round_trip_anthropic(url: str, stream: bool) -> None:
    c = anthropic_client(url)
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Porto?"}]
    tools = anthropic_tools("get_weather")

    first, _ = anthropic_turn(c, stream, messages=messages, tools=tools)
    assert first.stop_reason == "tool_use"
    [use] = [b for b in first.content if b.type == "tool_use"]
    assert use.name == "get_weather" and use.input == {"city": "Porto", "unit": "celsius"}

    messages.append(assistant_blocks(first))
    messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18C"}]})
    second, deltas = anthropic_turn(c, stream, messages=messages, tools=tools)
    assert second.stop_reason == "end_turn"
    assert second.content[0].text == "It is 18°C and sunny in Porto."
    if stream:
        assert len(deltas) == 4 and "".join(deltas) == second.content[0].text


@pytest.mark.parametrize("stream", [False, True])
def test_weather_round_trip_responses(url: str, stream: bool) -> None:
    """The Responses API answers a call by `call_id`, in a `function_call_output` item."""
    c = openai_client(url)
    tools: list[Any] = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    history: list[Any] = [{"role": "user", "content": "What is the weather in Coimbra?"}]
    first = c.responses.create(model=OPENAI_MODEL, input=history, tools=tools)
    [call] = first.output
    assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Coimbra", "unit": "celsius"}

    history += [
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "18C"},
    ]
    if stream:
        with c.responses.stream(model=OPENAI_MODEL, input=history, tools=tools) as s:
            deltas = [e.delta for e in s if e.type == "response.output_text.delta"]
            second = s.get_final_response()
        assert len(deltas) == 4
    else:
        second = c.responses.create(model=OPENAI_MODEL, input=history, tools=tools)
    assert second.output_text == "It is 18°C and sunny in Coimbra."


def test_weather_four_chunks_forty_ms_apart_on_the_raw_stream(url: str) -> None:
    c = openai_client(url)
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Faro?"}]
    first = c.chat.completions.create(model=OPENAI_MODEL, messages=messages, tools=openai_tools("get_weather"))
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    messages += [assistant_message(first.choices[0]), {"role": "tool", "tool_call_id": call.id, "content": "18C"}]

    arrivals: list[float] = []
    texts: list[str] = []
    started = time.monotonic()
    for chunk in c.chat.completions.create(model=OPENAI_MODEL, messages=messages, stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            arrivals.append(time.monotonic())
            texts.append(chunk.choices[0].delta.content)
    assert "".join(texts) == "It is 18°C and sunny in Faro." and len(texts) == 4
    # the client timestamps a chunk after the SDK parsed it, so gaps between arrivals can look short on a
    # loaded machine; the time from sending to the last chunk cannot be shorter than the three gaps
    assert arrivals[-1] - started >= 3 * 0.04  # three 40 ms gaps, however loaded the machine


def test_weather_answering_a_wrong_call_id_is_rejected(url: str) -> None:
    """The mock validates the history as the real API does: a result for an unknown id is a 400."""
    c = openai_client(url, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Braga?"}]
    first = c.chat.completions.create(model=OPENAI_MODEL, messages=messages, tools=openai_tools("get_weather"))
    messages += [assistant_message(first.choices[0]), {"role": "tool", "tool_call_id": "call_wrong", "content": "18C"}]
    with pytest.raises(openai.BadRequestError, match="call_wrong"):
        c.chat.completions.create(model=OPENAI_MODEL, messages=messages)


# ---------------------------------------------------------------------------------------------------------
# parallel_tools.mockllm — every call of one turn answered by its own id


PARALLEL_SUMMARY = "Lisbon is sunny, it is 14:00 there, and there is a 09:10 flight."


@pytest.mark.parametrize("stream", [False, True])
def test_parallel_calls_answered_by_id_openai(url: str, stream: bool) -> None:
    c = openai_client(url)
    tools = openai_tools("get_weather", "get_time", "search_flights")
    messages: list[Any] = [{"role": "user", "content": "Please plan my trip to Lisbon."}]
    first, _ = openai_turn(c, stream, messages=messages, tools=tools)
    calls = first.message.tool_calls
    scripted = scripted_calls("parallel_tools.mockllm", "plan_trip")
    assert [(tc.function.name, json.loads(tc.function.arguments)) for tc in calls] == scripted
    assert len({tc.id for tc in calls}) == 3

    messages.append(assistant_message(first))
    for tc in calls:
        messages.append({"role": "tool", "tool_call_id": tc.id, "content": f"result of {tc.function.name}"})
    second, _ = openai_turn(c, stream, messages=messages, tools=tools)
    assert second.message.content == PARALLEL_SUMMARY


@pytest.mark.parametrize("stream", [False, True])
def test_parallel_calls_answered_by_id_anthropic(url: str, stream: bool) -> None:
    c = anthropic_client(url)
    tools = anthropic_tools("get_weather", "get_time", "search_flights")
    messages: list[Any] = [{"role": "user", "content": "Please plan my trip, Lisbon in May."}]
    first, _ = anthropic_turn(c, stream, messages=messages, tools=tools)
    uses = [b for b in first.content if b.type == "tool_use"]
    assert [(u.name, u.input) for u in uses] == scripted_calls("parallel_tools.mockllm", "plan_trip")
    assert len({u.id for u in uses}) == 3

    messages.append(assistant_blocks(first))
    results = [{"type": "tool_result", "tool_use_id": u.id, "content": f"result of {u.name}"} for u in uses]
    messages.append({"role": "user", "content": results})
    second, _ = anthropic_turn(c, stream, messages=messages, tools=tools)
    assert second.content[0].text == PARALLEL_SUMMARY


def test_parallel_calls_one_left_unanswered_is_rejected(url: str) -> None:
    c = openai_client(url, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "Please plan my trip to Lisbon, but forget one."}]
    first = c.chat.completions.create(model=OPENAI_MODEL, messages=messages)
    calls = first.choices[0].message.tool_calls or []
    messages.append(assistant_message(first.choices[0]))
    messages += [{"role": "tool", "tool_call_id": tc.id, "content": "ok"} for tc in calls[:2]]
    with pytest.raises(openai.BadRequestError, match=calls[2].id):
        c.chat.completions.create(model=OPENAI_MODEL, messages=messages)


# ---------------------------------------------------------------------------------------------------------
# agent_loop.mockllm — search, read, answer, and the loop stops


def run_openai_agent(c: openai.OpenAI, question: str, tools: list[Any]) -> tuple[list[str], str]:
    """A minimal agent loop: call tools until the model answers; returns the tools called and the answer."""
    messages: list[Any] = [{"role": "user", "content": question}]
    called: list[str] = []
    for _ in range(10):
        choice, _ = openai_turn(c, True, messages=messages, tools=tools)
        messages.append(assistant_message(choice))
        if not choice.message.tool_calls:
            return called, choice.message.content
        for tc in choice.message.tool_calls:
            called.append(tc.function.name)
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": f"{tc.function.name} output"})
    raise AssertionError("the agent loop never ended")


def test_agent_loop_openai_three_rounds(url: str) -> None:
    conversation = uuid.uuid4().hex
    c = openai_client(url, conversation)
    called, answer = run_openai_agent(c, "Please research mockllm for me.", openai_tools("web_search", "read_page"))
    assert called == ["web_search", "read_page"]
    assert answer == "mockllm scripts are ordered steps that answer like a real model."
    steps = [e["matched"]["step"] for e in journal(url, conversation)]
    assert steps == ["search", "read", "answer"]


def test_agent_loop_anthropic_three_rounds(url: str) -> None:
    c = anthropic_client(url)
    messages: list[Any] = [{"role": "user", "content": "Can you research mockllm?"}]
    called: list[str] = []
    while True:
        message = c.messages.create(
            model=ANTHROPIC_MODEL, max_tokens=1024, messages=messages, tools=anthropic_tools("web_search", "read_page")
        )
        messages.append(assistant_blocks(message))
        if message.stop_reason != "tool_use":
            break
        uses = [b for b in message.content if b.type == "tool_use"]
        called += [u.name for u in uses]
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "..."} for u in uses]}
        )
    assert called == ["web_search", "read_page"]
    assert message.content[0].text == "mockllm scripts are ordered steps that answer like a real model."  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------------------
# fragmented_arguments.mockllm — one-character fragments reconstruct exactly the scripted JSON


def test_fragmented_arguments_openai_stream_helper(url: str) -> None:
    [(name, arguments)] = scripted_calls("fragmented_arguments.mockllm", "fragmented")
    with openai_client(url).chat.completions.stream(
        model=OPENAI_MODEL, messages=[{"role": "user", "content": "Please create the ticket."}]
    ) as s:
        final = s.get_final_completion()
    [call] = final.choices[0].message.tool_calls or []
    assert call.function.name == name
    assert json.loads(call.function.arguments) == arguments


def test_fragmented_arguments_openai_raw_fragments_are_one_character(url: str) -> None:
    [(_, arguments)] = scripted_calls("fragmented_arguments.mockllm", "fragmented")
    fragments: list[str] = []
    stream = openai_client(url).chat.completions.create(
        model=OPENAI_MODEL, messages=[{"role": "user", "content": "Please create the ticket, raw."}], stream=True
    )
    for chunk in stream:
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            assert delta.index == 0
            if delta.function and delta.function.arguments:
                fragments.append(delta.function.arguments)
    assert {len(f) for f in fragments} == {1}
    assert json.loads("".join(fragments)) == arguments


@pytest.mark.parametrize("stream", [False, True])
def test_fragmented_arguments_anthropic(url: str, stream: bool) -> None:
    [(name, arguments)] = scripted_calls("fragmented_arguments.mockllm", "fragmented")
    message, _ = anthropic_turn(
        anthropic_client(url), stream, messages=[{"role": "user", "content": "create the ticket"}]
    )
    [use] = message.content
    assert use.type == "tool_use" and use.name == name and use.input == arguments


def test_fragmented_arguments_anthropic_raw_partial_json(url: str) -> None:
    [(_, arguments)] = scripted_calls("fragmented_arguments.mockllm", "fragmented")
    events = anthropic_client(url).messages.create(
        model=ANTHROPIC_MODEL, max_tokens=1024, messages=[{"role": "user", "content": "create the ticket"}], stream=True
    )
    pieces = [
        e.delta.partial_json for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    ]
    assert {len(p) for p in pieces if p} == {1}
    assert json.loads("".join(pieces)) == arguments


def test_fragmented_arguments_responses_stream(url: str) -> None:
    [(name, arguments)] = scripted_calls("fragmented_arguments.mockllm", "fragmented")
    deltas: list[str] = []
    with openai_client(url).responses.stream(model=OPENAI_MODEL, input="Please create the ticket now.") as s:
        for event in s:
            if event.type == "response.function_call_arguments.delta":
                deltas.append(event.delta)
        final = s.get_final_response()
    [item] = final.output
    assert item.type == "function_call" and item.name == name
    assert {len(d) for d in deltas} == {1}
    assert "".join(deltas) == item.arguments and json.loads(item.arguments) == arguments


# ---------------------------------------------------------------------------------------------------------
# interleaved_calls.mockllm — three calls' buffers kept apart by index


def test_interleaved_calls_openai_buffers_by_index(url: str) -> None:
    scripted = scripted_calls("interleaved_calls.mockllm", "three_calls")
    buffers: dict[int, str] = {}
    order: list[int] = []
    stream = openai_client(url).chat.completions.create(
        model=OPENAI_MODEL, messages=[{"role": "user", "content": "Please check all three services."}], stream=True
    )
    for chunk in stream:
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            order.append(delta.index)
            fragment = delta.function.arguments if delta.function else None
            buffers[delta.index] = buffers.get(delta.index, "") + (fragment or "")
            assert len(fragment or "") <= 3
    # `interleave calls`: the three calls are introduced, then their fragments alternate by index
    assert order[:6] == [0, 1, 2, 0, 1, 2] and set(order) == {0, 1, 2}
    assert [json.loads(buffers[i]) for i in range(3)] == [args for _, args in scripted]


def test_interleaved_calls_openai_stream_helper(url: str) -> None:
    scripted = scripted_calls("interleaved_calls.mockllm", "three_calls")
    done: list[tuple[int, str]] = []
    with openai_client(url).chat.completions.stream(
        model=OPENAI_MODEL, messages=[{"role": "user", "content": "check all three services"}]
    ) as s:
        for event in s:
            if event.type == "tool_calls.function.arguments.done":
                done.append((event.index, event.arguments))
        final = s.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert [(tc.function.name, json.loads(tc.function.arguments)) for tc in calls] == scripted
    # the final message is exact, but the helper announces a call "done" as soon as a fragment of
    # another index arrives: with interleaving, some `arguments.done` events carry partial JSON
    complete = [json.dumps(args, separators=(",", ":")) for _, args in scripted]
    assert any(arguments != complete[i] for i, arguments in done)


def test_interleaved_calls_anthropic_stream_helper(url: str) -> None:
    scripted = scripted_calls("interleaved_calls.mockllm", "three_calls")
    message, _ = anthropic_turn(
        anthropic_client(url), True, messages=[{"role": "user", "content": "Now check all three services, please."}]
    )
    assert [(b.name, b.input) for b in message.content] == scripted


# ---------------------------------------------------------------------------------------------------------
# calls_without_ids.mockllm — Gemini and Ollama calls carry no ids; the round trip still works


GET_USER_SCHEMA = {"type": "object", "properties": {"user_id": {"type": "integer"}}, "required": ["user_id"]}


@pytest.mark.parametrize("stream", [False, True])
def test_calls_without_ids_gemini_round_trip(url: str, stream: bool) -> None:
    g = gemini_client(url)
    declaration = gtypes.FunctionDeclaration(name="get_user", parameters_json_schema=GET_USER_SCHEMA)
    config = gtypes.GenerateContentConfig(tools=[gtypes.Tool(function_declarations=[declaration])])
    contents: list[Any] = [gtypes.Content(role="user", parts=[gtypes.Part(text="Please look up both users.")])]

    if stream:
        chunks = list(g.models.generate_content_stream(model=GEMINI_MODEL, contents=contents, config=config))
        calls = [fc for chunk in chunks for fc in chunk.function_calls or []]
        model_parts = [p for chunk in chunks for p in chunk.candidates[0].content.parts]  # type: ignore[index,union-attr]
    else:
        response = g.models.generate_content(model=GEMINI_MODEL, contents=contents, config=config)
        calls = response.function_calls or []
        model_parts = response.candidates[0].content.parts  # type: ignore[index,union-attr,assignment]
    assert [(fc.name, fc.args) for fc in calls] == scripted_calls("calls_without_ids.mockllm", "lookup")
    assert all(fc.id is None for fc in calls)

    # The client matches results to calls by name and position, as Gemini clients must.
    contents.append(gtypes.Content(role="model", parts=model_parts))
    responses = [gtypes.Part.from_function_response(name=fc.name or "", response={"result": fc.args}) for fc in calls]
    contents.append(gtypes.Content(role="user", parts=responses))
    answer = g.models.generate_content(model=GEMINI_MODEL, contents=contents, config=config)
    assert answer.text == "Both users are active."


@pytest.mark.parametrize("stream", [False, True])
def test_calls_without_ids_ollama_round_trip(url: str, stream: bool) -> None:
    o = ollama_client(url)
    tools: list[Any] = [{"type": "function", "function": {"name": "get_user", "parameters": GET_USER_SCHEMA}}]
    messages: list[Any] = [{"role": "user", "content": "Could you look up both users?"}]
    if stream:
        parts = list(o.chat(model=OLLAMA_MODEL, messages=messages, tools=tools, stream=True))
        calls = [tc for part in parts for tc in part.message.tool_calls or []]
        assert parts[-1].done
    else:
        calls = o.chat(model=OLLAMA_MODEL, messages=messages, tools=tools).message.tool_calls or []
    assert [(tc.function.name, dict(tc.function.arguments)) for tc in calls] == scripted_calls(
        "calls_without_ids.mockllm", "lookup"
    )
    assert all("id" not in tc.model_dump() for tc in calls)  # the client has no id to match by

    messages.append({"role": "assistant", "content": "", "tool_calls": [tc.model_dump() for tc in calls]})
    for tc in calls:
        messages.append({"role": "tool", "tool_name": tc.function.name, "content": '{"active": true}'})
    answer = o.chat(model=OLLAMA_MODEL, messages=messages, tools=tools)
    assert answer.message.content == "Both users are active."


def test_calls_without_ids_gemini_wire_has_no_id(url: str) -> None:
    """The SDK would show a missing id as None; the raw body confirms there is no `id` key at all."""
    body = httpx.post(
        url + f"/v1beta/models/{GEMINI_MODEL}:generateContent",
        headers={**conversation_headers(), "x-goog-api-key": "test"},
        json={"contents": [{"role": "user", "parts": [{"text": "look up both users"}]}]},
    ).json()
    parts = body["candidates"][0]["content"]["parts"]
    assert len(parts) == 2 and all("id" not in p["functionCall"] for p in parts)


def test_calls_without_ids_scenario_is_gemini_and_ollama_only(url: str) -> None:
    """The scenario-level `provider matches` keeps OpenAI out: it gets the echo fallback."""
    out = openai_client(url).chat.completions.create(
        model=OPENAI_MODEL, messages=[{"role": "user", "content": "look up both users"}]
    )
    assert out.choices[0].message.content == "look up both users"
    assert not out.choices[0].message.tool_calls


# ---------------------------------------------------------------------------------------------------------
# parameterless_tool.mockllm — `{}` and `null` arguments


@pytest.mark.parametrize("stream", [False, True])
def test_parameterless_tool_empty_object_openai(url: str, stream: bool) -> None:
    c = openai_client(url)
    messages: list[Any] = [{"role": "user", "content": "Tell me what time is it?"}]
    first, _ = openai_turn(c, stream, messages=messages, tools=openai_tools("get_current_time"))
    [call] = first.message.tool_calls
    assert call.function.name == "get_current_time"
    assert json.loads(call.function.arguments) == {}
    messages += [assistant_message(first), {"role": "tool", "tool_call_id": call.id, "content": "12:00"}]
    second, _ = openai_turn(c, stream, messages=messages)
    assert second.message.content == "It is noon."


def test_parameterless_tool_empty_object_anthropic(url: str) -> None:
    c = anthropic_client(url)
    messages: list[Any] = [{"role": "user", "content": "So, what time is it now?"}]
    first, _ = anthropic_turn(c, True, messages=messages, tools=anthropic_tools("get_current_time"))
    [use] = first.content
    assert use.name == "get_current_time" and use.input == {}
    messages += [
        assistant_blocks(first),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "12:00"}]},
    ]
    second, _ = anthropic_turn(c, True, messages=messages)
    assert second.content[0].text == "It is noon."


@pytest.mark.parametrize("stream", [False, True])
def test_parameterless_tool_null_arguments_openai(url: str, stream: bool) -> None:
    """`tool call get_current_date null`: the arguments string is `null`, which a careful client
    treats as no arguments."""
    c = openai_client(url)
    messages: list[Any] = [{"role": "user", "content": "Tell me what day is it?"}]
    first, _ = openai_turn(c, stream, messages=messages, tools=openai_tools("get_current_date"))
    [call] = first.message.tool_calls
    assert call.function.name == "get_current_date"
    assert call.function.arguments == "null"
    assert (json.loads(call.function.arguments) or {}) == {}
    messages += [assistant_message(first), {"role": "tool", "tool_call_id": call.id, "content": "Monday"}]
    second, _ = openai_turn(c, stream, messages=messages)
    assert second.message.content == "It is Monday."


# ---------------------------------------------------------------------------------------------------------
# tool_error_recovery.mockllm — the failure is reported as an error, the model retries, then answers


def test_tool_error_recovery_openai(url: str) -> None:
    c = openai_client(url)
    messages: list[Any] = [{"role": "user", "content": "Please convert 100 EUR to dollars."}]
    first = c.chat.completions.create(model=OPENAI_MODEL, messages=messages, tools=openai_tools("convert_currency"))
    [bad] = first.choices[0].message.tool_calls or []
    assert json.loads(bad.function.arguments)["to"] == "usd"
    error = json.dumps({"error": "unknown currency code 'usd'; use ISO 4217 upper case"})
    messages += [assistant_message(first.choices[0]), {"role": "tool", "tool_call_id": bad.id, "content": error}]

    retry = c.chat.completions.create(model=OPENAI_MODEL, messages=messages, tools=openai_tools("convert_currency"))
    [good] = retry.choices[0].message.tool_calls or []
    assert json.loads(good.function.arguments) == {"amount": 100, "from": "EUR", "to": "USD"}
    assert good.id != bad.id
    messages += [assistant_message(retry.choices[0]), {"role": "tool", "tool_call_id": good.id, "content": "108.2"}]

    answer = c.chat.completions.create(model=OPENAI_MODEL, messages=messages)
    assert answer.choices[0].message.content == "100 EUR is about 108 USD."


def test_tool_error_recovery_anthropic(url: str) -> None:
    c = anthropic_client(url)
    tools = anthropic_tools("convert_currency")
    messages: list[Any] = [{"role": "user", "content": "convert 100 EUR into USD"}]
    first, _ = anthropic_turn(c, True, messages=messages, tools=tools)
    [bad] = first.content
    messages += [
        assistant_blocks(first),
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": bad.id, "content": "unknown currency", "is_error": True}
            ],
        },
    ]
    retry, _ = anthropic_turn(c, True, messages=messages, tools=tools)
    [good] = retry.content
    assert good.input == {"amount": 100, "from": "EUR", "to": "USD"}
    messages += [
        assistant_blocks(retry),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": good.id, "content": "108.2"}]},
    ]
    answer, _ = anthropic_turn(c, True, messages=messages, tools=tools)
    assert answer.content[0].text == "100 EUR is about 108 USD."


def test_tool_error_recovery_needs_the_error_marker(url: str) -> None:
    """A failure sent back as a plain result (no `is_error`) is not recognised as an error, so the
    script's retry step does not run: a client that forgets the marker is caught."""
    c = anthropic_client(url)
    messages: list[Any] = [{"role": "user", "content": "convert 100 EUR, but forget the error flag"}]
    first, _ = anthropic_turn(c, False, messages=messages, tools=anthropic_tools("convert_currency"))
    messages += [
        assistant_blocks(first),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[0].id, "content": "failed"}]},
    ]
    answer, _ = anthropic_turn(c, False, messages=messages, tools=anthropic_tools("convert_currency"))
    assert [b.type for b in answer.content] == ["text"]  # no retry call


# ---------------------------------------------------------------------------------------------------------
# retry_429.mockllm — two 429s, then the answer, inside one SDK call


def test_retry_429_openai_default_retries(url: str) -> None:
    conversation = uuid.uuid4().hex
    started = time.monotonic()
    out = openai_client(url, conversation).chat.completions.create(
        model=OPENAI_MODEL, messages=[{"role": "user", "content": "please retry until it works"}]
    )
    elapsed = time.monotonic() - started
    assert out.choices[0].message.content == "Third time lucky."
    assert elapsed >= 1.9  # retry-after 1s, twice
    assert [e["status"] for e in journal(url, conversation)] == [429, 429, 200]


def test_retry_429_anthropic_default_retries(url: str) -> None:
    started = time.monotonic()
    out = anthropic_client(url).messages.create(
        model=ANTHROPIC_MODEL, max_tokens=100, messages=[{"role": "user", "content": "please retry, Claude"}]
    )
    elapsed = time.monotonic() - started
    assert out.content[0].text == "Third time lucky."  # type: ignore[union-attr]
    assert elapsed >= 1.9


def test_retry_429_without_retries_the_client_sees_the_rate_limit(url: str) -> None:
    with pytest.raises(openai.RateLimitError) as info:
        openai_client(url, max_retries=0).chat.completions.create(
            model=OPENAI_MODEL, messages=[{"role": "user", "content": "please retry, once only"}]
        )
    assert info.value.response.headers["retry-after"] == "1"


# ---------------------------------------------------------------------------------------------------------
# stream_cut_in_arguments.mockllm — the SDK raises and no complete call comes out


def test_stream_cut_in_arguments_openai(url: str) -> None:
    events: list[str] = []
    completed_calls: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        with openai_client(url).chat.completions.stream(
            model=OPENAI_MODEL, messages=[{"role": "user", "content": "Please book the meeting."}]
        ) as s:
            for event in s:
                events.append(event.type)
                if event.type == "tool_calls.function.arguments.done":
                    completed_calls.append(event.arguments)
    assert "tool_calls.function.arguments.delta" in events  # some arguments did arrive…
    assert completed_calls == []  # …but no call was ever complete


def test_stream_cut_in_arguments_anthropic(url: str) -> None:
    partial: list[str] = []
    finished_blocks: list[Any] = []
    with pytest.raises((anthropic.APIConnectionError, httpx2.TransportError)):
        with anthropic_client(url).messages.stream(
            model=ANTHROPIC_MODEL, max_tokens=1024, messages=[{"role": "user", "content": "book the meeting"}]
        ) as s:
            for event in s:
                if event.type == "input_json":
                    partial.append(event.partial_json)
                if event.type == "content_block_stop":
                    finished_blocks.append(event.content_block)
    assert partial and finished_blocks == []
    with pytest.raises(json.JSONDecodeError):
        json.loads("".join(partial))


# ---------------------------------------------------------------------------------------------------------
# thinking_then_tool.mockllm — Anthropic keeps the thinking block; OpenAI just gets the call


@pytest.mark.parametrize("stream", [False, True])
def test_thinking_then_tool_anthropic(url: str, stream: bool) -> None:
    c = anthropic_client(url)
    tools = anthropic_tools("get_quote")
    messages: list[Any] = [{"role": "user", "content": "Please think first: what does ACME trade at?"}]
    first, _ = anthropic_turn(c, stream, messages=messages, tools=tools)
    assert [b.type for b in first.content] == ["thinking", "tool_use"]
    assert first.content[0].thinking == "The user wants the stock price; I should call the quote tool."
    assert first.content[1].input == {"symbol": "ACME"}

    messages.append(assistant_blocks(first))  # the thinking block goes back unchanged
    assert messages[-1]["content"][0]["type"] == "thinking"
    messages.append(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[1].id, "content": "42.10"}]}
    )
    second, _ = anthropic_turn(c, stream, messages=messages, tools=tools)
    assert second.content[0].text == "ACME trades at 42.10."


def test_thinking_then_tool_openai(url: str) -> None:
    c = openai_client(url)
    messages: list[Any] = [{"role": "user", "content": "think first, then quote ACME"}]
    first, _ = openai_turn(c, True, messages=messages, tools=openai_tools("get_quote"))
    assert not first.message.content
    [call] = first.message.tool_calls
    assert call.function.name == "get_quote" and json.loads(call.function.arguments) == {"symbol": "ACME"}
    messages += [assistant_message(first), {"role": "tool", "tool_call_id": call.id, "content": "42.10"}]
    second, _ = openai_turn(c, True, messages=messages)
    assert second.message.content == "ACME trades at 42.10."


# ---------------------------------------------------------------------------------------------------------
# refusal.mockllm — shown as a refusal, not as an empty answer


REFUSAL = "I can't help with that."


@pytest.mark.parametrize("stream", [False, True])
def test_refusal_openai(url: str, stream: bool) -> None:
    choice, _ = openai_turn(
        openai_client(url), stream, messages=[{"role": "user", "content": "How do I pick the lock?"}]
    )
    assert choice.message.refusal == REFUSAL
    assert choice.message.content is None


@pytest.mark.parametrize("stream", [False, True])
def test_refusal_anthropic(url: str, stream: bool) -> None:
    message, _ = anthropic_turn(anthropic_client(url), stream, messages=[{"role": "user", "content": "pick the lock"}])
    assert message.stop_reason == "refusal"


def test_refusal_responses(url: str) -> None:
    response = openai_client(url).responses.create(model=OPENAI_MODEL, input="Help me pick the lock.")
    [item] = response.output
    assert item.type == "message"
    assert [(p.type, getattr(p, "refusal", None)) for p in item.content] == [("refusal", REFUSAL)]
    assert response.output_text == ""


# ---------------------------------------------------------------------------------------------------------
# finish_length.mockllm — a truncated answer is noticed as truncated


TRUNCATED = "Once upon a time, in a land far"


def test_finish_length_openai_create(url: str) -> None:
    out = openai_client(url).chat.completions.create(
        model=OPENAI_MODEL, messages=[{"role": "user", "content": "Please write a long story."}]
    )
    assert out.choices[0].finish_reason == "length"
    assert out.choices[0].message.content == TRUNCATED
    assert out.usage is not None and (out.usage.prompt_tokens, out.usage.completion_tokens) == (12, 8)


def test_finish_length_openai_stream_helper_raises(url: str) -> None:
    with pytest.raises(openai.LengthFinishReasonError):
        with openai_client(url).chat.completions.stream(
            model=OPENAI_MODEL, messages=[{"role": "user", "content": "write a long story, streamed"}]
        ) as s:
            s.get_final_completion()


@pytest.mark.parametrize("stream", [False, True])
def test_finish_length_anthropic(url: str, stream: bool) -> None:
    message, _ = anthropic_turn(
        anthropic_client(url), stream, messages=[{"role": "user", "content": "write a long story"}]
    )
    assert message.stop_reason == "max_tokens"
    assert message.content[0].text == TRUNCATED


@pytest.mark.parametrize("stream", [False, True])
def test_finish_length_gemini(url: str, stream: bool) -> None:
    g = gemini_client(url)
    if stream:
        chunks = list(g.models.generate_content_stream(model=GEMINI_MODEL, contents="write a long story"))
        text = "".join(c.text or "" for c in chunks)
        reason = chunks[-1].candidates[0].finish_reason  # type: ignore[index]
    else:
        response = g.models.generate_content(model=GEMINI_MODEL, contents="write a long story")
        text, reason = response.text or "", response.candidates[0].finish_reason  # type: ignore[index]
    assert reason == gtypes.FinishReason.MAX_TOKENS
    assert text == TRUNCATED


def test_finish_length_responses_and_ollama(url: str) -> None:
    response = openai_client(url).responses.create(model=OPENAI_MODEL, input="write a long story")
    assert response.status == "incomplete"
    assert response.incomplete_details is not None and response.incomplete_details.reason == "max_output_tokens"
    assert response.output_text == TRUNCATED

    reply = ollama_client(url).chat(model=OLLAMA_MODEL, messages=[{"role": "user", "content": "write a long story"}])
    assert reply.done_reason == "length" and reply.message.content == TRUNCATED


# ---------------------------------------------------------------------------------------------------------
# defaults.mockllm — anything else is echoed


def test_echo_fallback_every_provider(url: str) -> None:
    said = "Nothing in the examples matches this sentence."
    chat = openai_client(url).chat.completions.create(model=OPENAI_MODEL, messages=[{"role": "user", "content": said}])
    assert chat.choices[0].message.content == said
    message = anthropic_client(url).messages.create(
        model=ANTHROPIC_MODEL, max_tokens=100, messages=[{"role": "user", "content": said}]
    )
    assert message.content[0].text == said  # type: ignore[union-attr]
    assert openai_client(url).responses.create(model=OPENAI_MODEL, input=said).output_text == said
    g = gemini_client(url)  # keep the client referenced: a dropped genai.Client closes its connections
    assert g.models.generate_content(model=GEMINI_MODEL, contents=said).text == said
    reply = ollama_client(url).chat(model=OLLAMA_MODEL, messages=[{"role": "user", "content": said}])
    assert reply.message.content == said


def test_echo_fallback_streams_word_by_word(url: str) -> None:
    said = "an unscripted question gets streamed back"
    _, deltas = openai_turn(openai_client(url), True, messages=[{"role": "user", "content": said}])
    assert "".join(deltas) == said and len(deltas) == len(said.split())


# ---------------------------------------------------------------------------------------------------------
# azure_deployments.mockllm — the deployment is the model; a filtered answer says so


def azure_client(url: str, deployment: str | None = None) -> openai.AzureOpenAI:
    return sdk_clients.azure(url, conversation_headers(), azure_deployment=deployment)


def test_azure_deployments_answer_by_deployment(url: str) -> None:
    question: Any = [{"role": "user", "content": "Where is my refund?"}]
    summary = azure_client(url, "summaries-mini").chat.completions.create(model="gpt-4o-mini", messages=question)
    answer = azure_client(url).chat.completions.create(model="answers-4o", messages=question)
    assert summary.choices[0].message.content == "Summary: the customer wants a refund for order 1042."
    assert (summary.model, answer.model) == ("summaries-mini", "answers-4o")
    assert answer.choices[0].message.content == "Your refund for order 1042 is on its way."


@pytest.mark.parametrize("stream", [False, True])
def test_azure_deployments_filtered_answer(url: str, stream: bool) -> None:
    rude: Any = [{"role": "user", "content": "Write something rude about my landlord."}]
    client = azure_client(url)
    if stream:
        chunks = list(client.chat.completions.create(model="answers-4o", messages=rude, stream=True))
        choice = chunks[-1].model_dump()["choices"][0]
        assert chunks[0].model_dump()["prompt_filter_results"][0]["prompt_index"] == 0
    else:
        choice = client.chat.completions.create(model="answers-4o", messages=rude).model_dump()["choices"][0]
    assert choice["finish_reason"] == "content_filter"
    assert choice["content_filter_results"]["violence"] == {"filtered": True, "severity": "medium"}


# ---------------------------------------------------------------------------------------------------------
# vertex_quota.mockllm — a 429 the SDK retries, then a function-call round trip


def vertex_client(url: str, retry: gtypes.HttpRetryOptions | None = None) -> genai.Client:
    return sdk_clients.vertex(url, conversation_headers(), retry_options=retry)


FORECAST = gtypes.FunctionDeclaration(
    name="get_forecast",
    parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
)
FORECAST_CONFIG = gtypes.GenerateContentConfig(
    tools=[gtypes.Tool(function_declarations=[FORECAST])],
    automatic_function_calling=gtypes.AutomaticFunctionCallingConfig(disable=True),
)


@pytest.mark.parametrize("stream", [False, True])
def test_vertex_quota_retried_then_round_trip(url: str, stream: bool) -> None:
    g = vertex_client(url, gtypes.HttpRetryOptions(attempts=2, initial_delay=0.01, jitter=0))
    chat = g.chats.create(model=GEMINI_MODEL, config=FORECAST_CONFIG)
    first = chat.send_message("What is the forecast for Kyoto?")
    assert [(c.name, c.args) for c in first.function_calls or []] == [("get_forecast", {"city": "Kyoto", "days": 3})]
    result = gtypes.Part.from_function_response(name="get_forecast", response={"result": "sun"})
    if stream:
        answer = "".join(chunk.text or "" for chunk in chat.send_message_stream(result))
    else:
        answer = chat.send_message(result).text or ""
    assert answer == "Expect sun in Kyoto for the next three days."


def test_vertex_quota_without_retry_options_raises(url: str) -> None:
    g = vertex_client(url)
    with pytest.raises(genai.errors.ClientError) as info:
        g.models.generate_content(model=GEMINI_MODEL, contents="What is the forecast for Lima?", config=FORECAST_CONFIG)
    assert (info.value.code, info.value.status) == (429, "RESOURCE_EXHAUSTED")
    again = g.models.generate_content(
        model=GEMINI_MODEL, contents="What is the forecast for Lima?", config=FORECAST_CONFIG
    )
    assert [(c.name, c.args) for c in again.function_calls or []] == [("get_forecast", {"city": "Lima", "days": 3})]


# ---------------------------------------------------------------------------------------------------------
# docs/cookbook.md quotes the scripts verbatim


def fenced_blocks(language: str) -> list[str]:
    text = COOKBOOK.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


# ---------------------------------------------------------------------------------------------------------
# cohere_tool_plan.mockllm


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_cohere_tool_plan_round_trip(url: str, stream: bool) -> None:
    co = cohere_client(url)
    tools = cohere_tools("get_weather", "get_local_time")
    messages: list[Any] = [{"role": "user", "content": "Plan my trip to Seville"}]

    first = co.chat(model=COHERE_MODEL, messages=messages, tools=tools)
    assert first.message.tool_plan == "I will check the weather and the local time in Seville."
    weather, clock = first.message.tool_calls or []
    assert json.loads(weather.function.arguments) == {"city": "Seville"}  # type: ignore[union-attr, arg-type]
    assert clock.function.arguments == "null"  # type: ignore[union-attr]
    assert scripted_calls("cohere_tool_plan.mockllm", "plan_and_call")[1] == ("get_local_time", {})

    messages.append(first.message)
    for call in first.message.tool_calls or []:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "ok"})
    expected = "Pack for sun: Seville is warm, and it is morning there."
    if stream:
        events = list(co.chat_stream(model=COHERE_MODEL, messages=messages, tools=tools))
        deltas = [e.delta.message.content.text for e in events if e.type == "content-delta"]
        assert "".join(deltas) == expected and len(deltas) == len(expected.split())
        return
    second = co.chat(model=COHERE_MODEL, messages=messages, tools=tools)
    assert second.message.content[0].text == expected  # type: ignore[index, union-attr]


def test_cohere_tool_plan_needs_both_results(url: str) -> None:
    co = cohere_client(url)
    messages: list[Any] = [{"role": "user", "content": "Plan my trip to Porto"}]
    first = co.chat(model=COHERE_MODEL, messages=messages, tools=cohere_tools("get_weather", "get_local_time"))
    weather = (first.message.tool_calls or [])[0]
    messages += [first.message, {"role": "tool", "tool_call_id": weather.id, "content": "sunny"}]
    out = co.chat(model=COHERE_MODEL, messages=messages)  # one result only: the answer step does not match
    text = "".join(c.text for c in out.message.content or [] if c.type == "text")  # type: ignore[union-attr]
    assert "Pack for sun" not in text  # the library's echo fallback answered instead


# ---------------------------------------------------------------------------------------------------------
# mistral_call_ids.mockllm


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_mistral_call_ids_round_trip(url: str, stream: bool) -> None:
    m = mistral_client(url)
    tools = mistral_tools("get_price")
    messages: list[Any] = [{"role": "user", "content": "compare bread and cheese"}]

    first = m.chat.complete(model=MISTRAL_MODEL, messages=messages, tools=tools, tool_choice="any")
    calls = first.choices[0].message.tool_calls or []
    assert [json.loads(c.function.arguments) for c in calls] == [  # type: ignore[arg-type]
        args for _, args in scripted_calls("mistral_call_ids.mockllm", "call_two")
    ]
    assert all(re.fullmatch(r"[A-Za-z0-9]{9}", c.id or "") for c in calls)

    messages.append({"role": "assistant", "content": "", "tool_calls": [c.model_dump() for c in calls]})
    for call in calls:
        messages.append({"role": "tool", "tool_call_id": call.id, "name": call.function.name, "content": "2 EUR"})
    if stream:
        with m.chat.stream(model=MISTRAL_MODEL, messages=messages, tools=tools) as events:
            text = "".join(e.data.choices[0].delta.content or "" for e in events)  # type: ignore[misc]
        assert text == "Bread is cheaper than cheese."
        return
    second = m.chat.complete(model=MISTRAL_MODEL, messages=messages, tools=tools)
    assert second.choices[0].message.content == "Bread is cheaper than cheese."


def test_mistral_call_ids_an_invented_id_is_refused(url: str) -> None:
    m = mistral_client(url)
    messages: list[Any] = [{"role": "user", "content": "compare milk and eggs"}]
    first = m.chat.complete(model=MISTRAL_MODEL, messages=messages, tools=mistral_tools("get_price"), tool_choice="any")
    calls = first.choices[0].message.tool_calls or []
    invented = [{"id": f"call_{i}", "function": c.function.model_dump()} for i, c in enumerate(calls)]
    messages.append({"role": "assistant", "content": "", "tool_calls": invented})
    messages += [{"role": "tool", "tool_call_id": c["id"], "name": "get_price", "content": "1 EUR"} for c in invented]
    with pytest.raises(mistral_errors.SDKError) as info:
        m.chat.complete(model=MISTRAL_MODEL, messages=messages)
    assert info.value.status_code == 400 and "Tool call id was call_0" in info.value.body


def test_cookbook_quotes_every_script_verbatim() -> None:
    blocks = fenced_blocks("mockllm")
    files = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in SCENARIOS.rglob("*.mockllm")}
    missing = [name for name, text in files.items() if text not in blocks]
    assert missing == [], "docs/cookbook.md does not quote these files verbatim"
    for block in blocks:
        if block in files.values():
            continue
        # Any other script in the cookbook must check cleanly, as if it lived in scenarios/examples/.
        library = load_text(block, file="cookbook.mockllm", base_dir=str(EXAMPLES))
        compiled, diagnostics = compile_library(library)
        assert compiled is not None and diagnostics == [], render(diagnostics, library.sources)


def test_cookbook_python_snippets_parse() -> None:
    blocks = fenced_blocks("python")
    assert len(blocks) >= 15
    for block in blocks:
        ast.parse(block)


def test_cookbook_self_contained_snippets_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cookbook snippet that starts its own server (``mockllm.serve(…)``) runs as printed, from the
    repository root, with the keyword arguments it shows."""
    runnable = [b for b in fenced_blocks("python") if "\nwith mockllm.serve(" in b and "import pytest" in b]
    assert runnable, "the cookbook has no self-contained snippet"
    monkeypatch.chdir(ROOT)
    for block in runnable:
        exec(compile(block, "docs/cookbook.md", "exec"), {"__name__": "cookbook"})


# ---------------------------------------------------------------------------------------------------------
# voice_agent.mockllm — listen, call a tool, answer, speak


def recording() -> bytes:
    """The user's voice note: a WAV mockllm did not make (a second of faint noise at 16 kHz)."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(bytes(range(256)) * 125)
    return out.getvalue()


def test_voice_agent_listens_calls_a_tool_answers_and_speaks(url: str) -> None:
    conversation = uuid.uuid4().hex
    c = openai_client(url, conversation)
    heard = c.audio.transcriptions.create(model="whisper-1", file=("request.wav", recording()))
    assert heard.text == "Book a table for two at seven tonight."

    tools = openai_tools("book_table")
    messages: list[Any] = [{"role": "user", "content": heard.text}]
    choice, _ = openai_turn(c, False, messages=messages, tools=tools)
    (call,) = choice.message.tool_calls
    assert json.loads(call.function.arguments) == {"party": 2, "time": "19:00"}
    messages += [assistant_message(choice), {"role": "tool", "tool_call_id": call.id, "content": "confirmed: table 12"}]
    answer, _ = openai_turn(c, False, messages=messages, tools=tools)
    assert answer.message.content == "Your table for two at seven is booked."

    spoken = c.audio.speech.create(model="tts-1", voice="alloy", input=answer.message.content, response_format="mp3")
    assert probe(spoken.content, "mp3")[2] == pytest.approx(3.0, abs=0.05)  # `audio 3s`, judged by ffprobe
    again = c.audio.transcriptions.create(model="whisper-1", file=("answer.mp3", spoken.content))
    assert again.text == "Your table for two at seven is booked."  # the audio carries what it says

    entries = journal(url, conversation)
    assert [e["matched"]["step"] if e["matched"] else None for e in entries] == [
        "hear",
        "book",
        "confirm",
        "speak",
        None,
    ]
    assert entries[0]["attachments"] == [{"kind": "audio", "media_type": "audio/wav", "size": len(recording())}]


# realtime_concierge.mockllm — a realtime voice session: audio in, a tool call, a spoken answer


def test_realtime_concierge_hears_the_caller_checks_the_hours_and_answers_aloud(url: str) -> None:
    import asyncio
    import base64

    from mockllm.runtime.media import inband
    from mockllm.runtime.media.audio import speak

    conversation = uuid.uuid4().hex

    async def session() -> tuple[Any, list[Any]]:
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="test")
        headers = conversation_headers(conversation)
        async with client.realtime.connect(model="gpt-realtime", extra_headers=headers) as conn:
            voice = speak("Hi, are you open tonight?", "pcm")
            await conn.input_audio_buffer.append(audio=base64.b64encode(voice).decode())  # heard: a response starts
            events: list[Any] = []
            async for event in conn:
                events.append(event)
                if event.type == "response.function_call_arguments.done":
                    output = {"type": "function_call_output", "call_id": event.call_id, "output": "open until 23:00"}
                    await conn.conversation.item.create(item=output)  # type: ignore[arg-type]
                if event.type == "response.done" and event.response.output[0].type == "function_call":
                    await conn.response.create()
                elif event.type == "response.done":
                    return next(e for e in events if e.type == "response.function_call_arguments.done"), events
        raise AssertionError("the session ended early")

    call, events = asyncio.run(asyncio.wait_for(session(), 20))
    assert (call.name, json.loads(call.arguments)) == ("opening_hours", {"day": "today"})
    said = next(e for e in events if e.type == "response.output_audio_transcript.done").transcript
    assert said == "Yes, we are open until eleven tonight."
    pcm = b"".join(base64.b64decode(e.delta) for e in events if e.type == "response.output_audio.delta")
    assert len(pcm) == 2 * 24000 * 2  # `audio 2s`: two seconds of 24 kHz pcm16
    assert inband.read(pcm) == said  # the audio carries what it says
    entries = journal(url, conversation)
    assert [e["matched"]["step"] for e in entries] == ["check_hours", "answer"]
    assert [e["endpoint"] for e in entries] == ["/v1/realtime", "/v1/realtime"]
