"""The OpenAI Responses adapter: parsing, history checks, rendering, and the bytes fed to the real SDK."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx2
import openai
import plans
import pytest
import sdk_errors
from plans import error_of
from sdk_bridge import AdapterServer
from sdk_clients import opened
from strategies import any_json_test

from mockllm.runtime.providers.base import RenderContext, Rendered
from mockllm.runtime.providers.responses import ResponsesAdapter
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall
from mockllm.runtime.request import ChatRequest, HttpRequest, Message, ToolCall, resolve_tool_names

ADAPTER = ResponsesAdapter()
CTX = RenderContext(response_id="abc123", created=1_700_000_000, request_id="req_1")
AUTH = {"authorization": "Bearer sk-test", "content-type": "application/json"}


def http(body: Any, headers: dict[str, str] | None = None) -> HttpRequest:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return HttpRequest("POST", "/v1/responses", {}, AUTH if headers is None else headers, raw)


def parse(body: Any) -> ChatRequest:
    return ADAPTER.parse(http(body))


def call(name: str, args: dict[str, Any], key: str, chunks: int = 1) -> PlannedToolCall:
    text = json.dumps(args, separators=(",", ":"))
    step = -(-len(text) // chunks)
    pieces = tuple(text[i : i + step] for i in range(0, len(text), step))
    return PlannedToolCall(name=name, arguments=args, arguments_json=text, argument_chunks=pieces, key=key)


def text_plan(text: str = "Hello there!", **kw: Any) -> MessagePlan:
    return plans.text_plan("gpt-4o-mini", text, 4, 7, **kw)


def tool_plan() -> MessagePlan:
    return MessagePlan(
        model="gpt-4o-mini",
        text="Let me check.",
        text_chunks=("Let me ", "check."),
        tool_calls=(call("get_weather", {"city": "Paris"}, "k1", chunks=3), call("get_time", {"tz": "CET"}, "k2")),
        finish="tool_calls",
    )


def events(rendered: Rendered) -> list[tuple[str, dict[str, Any]]]:
    assert rendered.frames is not None
    out = []
    for frame in rendered.frames:
        head, data, tail = frame.data.decode().split("\n", 2)
        assert head.startswith("event: ") and data.startswith("data: ") and tail == "\n"
        payload = json.loads(data[len("data: ") :])
        assert payload["type"] == head[len("event: ") :]
        out.append((payload["type"], payload))
    return out


# ---- parsing ----


def test_string_input_and_instructions() -> None:
    chat = parse({"model": "gpt-4o", "input": "hi there", "instructions": "Be brief.", "stream": True})
    assert chat.provider == "responses" and chat.model == "gpt-4o" and chat.stream
    assert [(m.role, m.text) for m in chat.messages] == [("user", "hi there")]
    assert chat.system == "Be brief."
    assert chat.endpoint == "/v1/responses"


def test_items_tools_and_name_resolution() -> None:
    chat = parse(
        {
            "model": "gpt-4o",
            "input": [
                {"role": "developer", "content": "Use tools."},
                {
                    "role": "user",
                    "content": [{"type": "input_text", "text": "weather"}, {"type": "input_text", "text": "in Paris?"}],
                },
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
                {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
                {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": "not json"},
                {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
                {"type": "reasoning", "id": "rs_1", "summary": []},
            ],
            "tools": [
                {"type": "function", "name": "get_weather", "description": "w", "parameters": {"type": "object"}},
                {"type": "web_search"},
            ],
            "previous_response_id": None,
        }
    )
    assert chat.system == "Use tools."
    assert [m.role for m in chat.messages] == ["system", "user", "assistant", "tool"]
    assert chat.messages[1].text == "weather\nin Paris?"
    assistant = chat.messages[2]
    assert assistant.text == "Checking." and assistant.index == 2
    assert [(c.id, c.name, c.arguments) for c in assistant.tool_calls] == [
        ("call_1", "get_weather", {"city": "Paris"}),
        ("call_2", "get_time", "not json"),
    ]
    result = chat.messages[3].tool_result
    assert result is not None and (result.call_id, result.name, result.content) == ("call_1", "get_weather", "sunny")
    assert chat.messages[3].index == 5
    assert chat.tool_names() == ("get_weather",)
    assert chat.tools[0].parameters == {"type": "object"}
    assert chat.previous_response_id is None and not chat.stream


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{not json", "could not parse the JSON body"),
        (b"", "request body is empty"),
        ([1, 2], "expected an object, but got an array"),
        ({"input": "hi"}, "Missing required parameter: 'model'."),
        ({"model": 3, "input": "hi"}, "Invalid type for 'model': expected a string, but got an integer"),
        ({"model": "m", "input": "hi", "stream": "yes"}, "Invalid type for 'stream'"),
        ({"model": "m"}, "Missing required parameter: 'input'."),
        ({"model": "m", "input": 5}, "Invalid type for 'input'"),
        ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "'input[0].role': \"robot\""),
        ({"model": "m", "input": [{"type": "weird"}]}, "input[0].type"),
        ({"model": "m", "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "input[0].call_id"),
        (
            {"model": "m", "input": [{"role": "user", "content": [{"type": "bogus"}]}]},
            "'input[0].content[0].type': \"bogus\"",
        ),
        ({"model": "m", "input": "x", "tools": [{"type": "function"}]}, "'tools[0].name'"),
        ({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f", "parameters": []}]}, "parameters"),
    ],
)
def test_bad_requests_are_400_with_a_clear_message(body: Any, needle: str) -> None:
    err = error_of(lambda: parse(body))
    assert err.status == 400
    assert needle in err.message


def test_orphan_function_call_output_is_rejected_without_previous_response() -> None:
    body: dict[str, Any] = {
        "model": "m",
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call_output", "call_id": "call_9", "output": "x"},
        ],
    }
    err = error_of(lambda: ADAPTER.validate_history(parse(body)))
    assert err.status == 400
    assert err.message.startswith("No tool call found for function call output with call_id call_9")
    assert "input[1]" in err.message
    ADAPTER.validate_history(parse({**body, "previous_response_id": "resp_1"}))


def test_answered_function_call_passes_validation() -> None:
    chat = parse(
        {
            "model": "m",
            "input": [
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "ok"}]},
            ],
        }
    )
    ADAPTER.validate_history(chat)
    assert chat.last_message() == "ok"


def test_check_auth_requires_bearer_key() -> None:
    assert ADAPTER.check_auth(http({}, AUTH)) is None
    for headers in ({}, {"authorization": "Bearer "}, {"authorization": "Basic abc"}):
        err = ADAPTER.check_auth(http({}, headers))
        assert err is not None and err.status == 401 and "didn't provide an API key" in err.message


# ---- rendering ----


def test_render_text_response() -> None:
    rendered = ADAPTER.render(text_plan(), parse({"model": "m", "input": "hi"}), CTX)
    assert rendered.status == 200 and rendered.media_type == "application/json" and not rendered.streamed
    assert ("x-request-id", "req_1") in rendered.headers
    body = json.loads(rendered.body)
    assert body["id"] == "resp_abc123" and body["object"] == "response" and body["status"] == "completed"
    assert body["created_at"] == 1_700_000_000 and body["model"] == "gpt-4o-mini"
    [message] = body["output"]
    assert re.fullmatch(r"msg_[0-9a-f]{50}", message["id"]) and message["role"] == "assistant"
    assert message["phase"] == "final_answer"
    assert body["reasoning"]["effort"] is None and body["completed_at"] == 1_700_000_000
    assert body["service_tier"] == "default" and body["text"] == {"format": {"type": "text"}, "verbosity": "medium"}
    assert message["content"] == [{"type": "output_text", "text": "Hello there!", "annotations": [], "logprobs": []}]
    assert body["usage"] == {
        "input_tokens": 7,
        "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10,
    }


def test_render_function_calls_and_length_and_refusal() -> None:
    chat = parse({"model": "m", "input": "hi"})
    body = json.loads(ADAPTER.render(tool_plan(), chat, CTX).body)
    assert [item["type"] for item in body["output"]] == ["message", "function_call", "function_call"]
    fc = body["output"][1]
    assert fc["id"].startswith("fc_") and fc["call_id"] == "call_k1" and fc["arguments"] == '{"city":"Paris"}'
    assert len({item["id"] for item in body["output"]}) == 3

    explicit = PlannedToolCall("f", {}, "{}", ("{}",), "k", explicit_id="call_mine")
    body = json.loads(ADAPTER.render(MessagePlan(model="m", tool_calls=(explicit,)), chat, CTX).body)
    assert [item["type"] for item in body["output"]] == ["function_call"]
    assert body["output"][0]["call_id"] == "call_mine"

    body = json.loads(ADAPTER.render(text_plan(finish="length"), chat, CTX).body)
    assert body["status"] == "incomplete" and body["incomplete_details"] == {"reason": "max_output_tokens"}

    body = json.loads(ADAPTER.render(MessagePlan(model="m", refusal="I can't help with that."), chat, CTX).body)
    assert body["output"][0]["content"] == [{"type": "refusal", "refusal": "I can't help with that."}]


def test_stream_event_order_and_sequence() -> None:
    chat = parse({"model": "m", "input": "hi", "stream": True})
    rendered = ADAPTER.render(tool_plan(), chat, CTX)
    assert rendered.media_type == "text/event-stream; charset=utf-8"
    evs = events(rendered)
    # the real API's function_call_arguments.done has no `name` (code reading it would break in production)
    done = [p for t, p in evs if t == "response.function_call_arguments.done"]
    assert done and all("name" not in p for p in done)
    assert all(p.get("obfuscation") for t, p in evs if t.endswith(".delta"))
    assert evs[2][1]["item"]["phase"] == "commentary"  # text said before the tool calls
    assert [p["sequence_number"] for _, p in evs] == list(range(len(evs)))
    assert [t for t, _ in evs] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert rendered.frames is not None
    content = [t for (t, _), f in zip(evs, rendered.frames, strict=True) if f.content]
    assert content == [t for t, _ in evs if t.endswith(".delta")]
    ids = {p["response"]["id"] for t, p in evs if "response" in p}
    assert ids == {"resp_abc123"}
    assert evs[0][1]["response"]["status"] == "in_progress" and evs[0][1]["response"]["output"] == []
    completed = evs[-1][1]["response"]
    assert (
        completed["status"] == "completed" and len(completed["output"]) == 3 and completed["usage"]["total_tokens"] == 2
    )


def test_reasoning_summary_only_when_asked_and_encrypted_content_when_included() -> None:
    plan = MessagePlan(model="gpt-5.5", thinking="Think first.", thinking_chunks=("Think ", "first."), text="Done.")
    plain = events(ADAPTER.render(plan, parse({"model": "gpt-5.5", "input": "hi", "stream": True}), CTX))
    assert not [t for t, _ in plain if "reasoning_summary" in t]  # no invented summary events
    reasoning = plain[2][1]["item"]
    assert reasoning["type"] == "reasoning" and reasoning["summary"] == [] and "encrypted_content" not in reasoning
    assert plain[0][1]["response"]["reasoning"]["effort"] == "medium"  # a reasoning model's default

    asked = parse(
        {
            "model": "gpt-5.5",
            "input": "hi",
            "stream": True,
            "reasoning": {"effort": "high", "summary": "auto"},
            "include": ["reasoning.encrypted_content"],
        }
    )
    evs = events(ADAPTER.render(plan, asked, CTX))
    assert "response.reasoning_summary_text.delta" in [t for t, _ in evs]
    final = evs[-1][1]["response"]
    item = final["output"][0]
    assert item["summary"] == [{"type": "summary_text", "text": "Think first."}]
    assert item["encrypted_content"].startswith("gAAAAA")
    assert final["reasoning"]["effort"] == "high" and final["reasoning"]["summary"] == "auto"


def test_stream_error_event_is_numbered() -> None:
    frame = ADAPTER.stream_error_frame("boom", CTX, sequence=7).decode()
    payload = json.loads(frame.split("data: ", 1)[1])
    assert payload["type"] == "error" and payload["sequence_number"] == 7 and payload["message"] == "boom"


def test_stream_of_truncated_reply_ends_incomplete() -> None:
    chat = parse({"model": "m", "input": "hi", "stream": True})
    evs = events(ADAPTER.render(text_plan(finish="length"), chat, CTX))
    assert evs[-1][0] == "response.incomplete"
    assert evs[-1][1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_render_error_and_stream_error_frame() -> None:
    rendered = ADAPTER.render_error(429, "Slow down.", CTX, code="rate_limit_exceeded")
    assert rendered.status == 429
    assert json.loads(rendered.body) == {
        "error": {"message": "Slow down.", "type": "rate_limit_error", "param": None, "code": "rate_limit_exceeded"}
    }
    assert json.loads(ADAPTER.render_error(503, "x", CTX).body)["error"]["type"] == "server_error"
    frame = ADAPTER.stream_error_frame("boom", CTX).decode()
    assert frame.startswith("event: error\ndata: ") and frame.endswith("\n\n")
    payload = json.loads(frame.split("data: ", 1)[1])
    assert payload["type"] == "error" and payload["message"] == "boom" and payload["code"] == "server_error"
    assert payload["error"]["message"] == "boom"


# ---- the real openai SDK reading these bytes ----


class Server(AdapterServer):
    """The adapter as the server runs it; a stream cut by an error gets five frames first."""

    frames_before_error = 5

    def __init__(self, plans: list[MessagePlan] | None = None, error: tuple[int, str] | None = None) -> None:
        super().__init__(ADAPTER, CTX, httpx2, plans, error)


def sdk(server: Server, headers: dict[str, str] | None = None) -> openai.OpenAI:
    transport = httpx2.MockTransport(server)
    http_client = opened(httpx2.Client(transport=transport))
    return opened(
        openai.OpenAI(
            api_key="sk-test",
            base_url="http://mock/v1",
            http_client=http_client,
            max_retries=0,
            default_headers=headers,
        )
    )


SDK_TOOLS: list[Any] = [
    {"type": "function", "name": "get_weather", "description": "weather", "parameters": {"type": "object"}},
    {"type": "function", "name": "get_time", "parameters": {"type": "object"}},
]


def test_sdk_create_text() -> None:
    server = Server([text_plan()])
    response = sdk(server).responses.create(model="gpt-4o-mini", input="hi", instructions="Be nice.")
    assert response.output_text == "Hello there!"
    assert response.id == "resp_abc123" and response.status == "completed"
    assert response.usage is not None and response.usage.total_tokens == 10
    assert server.chats[0].system == "Be nice." and server.chats[0].last_user_message() == "hi"


def test_sdk_function_call_round_trip() -> None:
    server = Server([tool_plan(), text_plan("It is sunny.")])
    client = sdk(server)
    first = client.responses.create(model="gpt-4o-mini", input="weather in Paris?", tools=SDK_TOOLS)
    calls = [item for item in first.output if item.type == "function_call"]
    assert [(c.name, c.call_id, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", "call_k1", {"city": "Paris"}),
        ("get_time", "call_k2", {"tz": "CET"}),
    ]
    follow: list[Any] = [{"role": "user", "content": "weather in Paris?"}, *first.output]
    follow += [{"type": "function_call_output", "call_id": c.call_id, "output": "sunny"} for c in calls]
    second = client.responses.create(model="gpt-4o-mini", input=follow, tools=SDK_TOOLS)
    assert second.output_text == "It is sunny."
    chat = server.chats[1]
    assert chat.latest_tool_result("get_weather") is not None and chat.latest_tool_result("get_time") is not None
    assert chat.tool_names() == ("get_weather", "get_time")

    with pytest.raises(openai.BadRequestError, match="No tool call found for function call output with call_id x"):
        client.responses.create(
            model="gpt-4o-mini", input=[{"type": "function_call_output", "call_id": "x", "output": "y"}]
        )


def test_sdk_stream_reconstructs_text_and_arguments() -> None:
    server = Server([tool_plan()])
    with sdk(server).responses.stream(model="gpt-4o-mini", input="hi", tools=SDK_TOOLS) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == "Let me check." and final.output_text == "Let me check."
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", '{"city":"Paris"}'), ("get_time", '{"tz":"CET"}')]
    assert server.chats[0].stream


def test_sdk_stream_with_reasoning_and_refusal() -> None:
    plan = MessagePlan(
        model="o3", thinking="Think first.", thinking_chunks=("Think ", "first."), text="Done.", output_tokens=9
    )
    server = Server([plan, MessagePlan(model="o3", refusal="No.")])
    client = sdk(server)
    with client.responses.stream(model="o3", input="hi") as stream:
        final = stream.get_final_response()
    assert [item.type for item in final.output] == ["reasoning", "message"] and final.output_text == "Done."
    assert final.usage is not None and final.usage.output_tokens_details.reasoning_tokens == 3
    with client.responses.stream(model="o3", input="hi") as stream:
        final = stream.get_final_response()
    message = final.output[0]
    assert message.type == "message" and message.content[0].type == "refusal"


def test_sdk_raw_stream_events() -> None:
    server = Server([text_plan()])
    stream = sdk(server).responses.create(model="gpt-4o-mini", input="hi", stream=True)
    kinds = [event.type for event in stream]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert kinds.count("response.output_text.delta") == 3


@pytest.mark.parametrize(("status", "exc"), sdk_errors.OPENAI)
def test_sdk_maps_error_statuses(status: int, exc: type[Exception]) -> None:
    server = Server(error=(status, "mockllm: scripted failure"))
    with pytest.raises(exc, match="scripted failure") as info:
        sdk(server).responses.create(model="m", input="hi")
    assert isinstance(info.value, openai.APIStatusError) and info.value.request_id == "req_1"


def test_sdk_missing_key_is_authentication_error() -> None:
    with pytest.raises(openai.AuthenticationError, match="didn't provide an API key"):
        sdk(Server([text_plan()]), {"Authorization": "Basic abc"}).responses.create(model="m", input="hi")


def test_sdk_raises_on_mid_stream_error_event() -> None:
    server = Server([text_plan("a long enough reply to stream")])
    server.mid_stream_error = "The server had an error."
    with pytest.raises(openai.APIError, match="The server had an error"):
        with sdk(server).responses.stream(model="m", input="hi") as stream:
            stream.get_final_response()


def test_resolve_tool_names_after_prepending_history() -> None:
    """With previous_response_id the call lives in the stored history: names resolve once it is prepended."""
    call = ToolCall("call_1", "get_weather", {})
    earlier = (*parse({"model": "m", "input": "weather?"}).messages, Message(role="assistant", tool_calls=(call,)))
    chat = parse(
        {
            "model": "m",
            "previous_response_id": "resp_x",
            "input": [{"type": "function_call_output", "call_id": "call_1", "output": "sunny"}],
        }
    )
    assert chat.messages[0].tool_result is not None and chat.messages[0].tool_result.name is None
    resolved = resolve_tool_names(earlier + chat.messages)
    result = resolved[-1].tool_result
    assert result is not None and result.name == "get_weather" and resolved[:2] == earlier


# ---- no input crashes ----

VOCAB = [
    "model",
    "input",
    "instructions",
    "tools",
    "stream",
    "previous_response_id",
    "type",
    "role",
    "content",
    "text",
    "call_id",
    "name",
    "arguments",
    "output",
    "parameters",
    "description",
    "message",
    "function_call",
    "function_call_output",
    "input_text",
    "output_text",
    "refusal",
    "reasoning",
]


test_any_json_is_parsed_or_rejected_cleanly = any_json_test(
    ADAPTER, parse, lambda body: {"model": "m", "input": body}, VOCAB, text_plan(), CTX
)
