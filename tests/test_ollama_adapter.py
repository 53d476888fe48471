"""The Ollama adapter: parsing, rendering, and the bytes fed to the real ollama client."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import ollama
import plans
import pytest
from plans import error_of, planned
from sdk_bridge import AdapterServer
from sdk_clients import opened
from strategies import any_json_test

from mockllm.runtime.providers import ollama as ollama_adapter
from mockllm.runtime.providers.base import RenderContext, Rendered
from mockllm.runtime.providers.ollama import OllamaAdapter, rfc3339
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest

ADAPTER = OllamaAdapter()
CTX = RenderContext(response_id="r1", created=1_700_000_000, request_id="req_1")


def http(body: Any) -> HttpRequest:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return HttpRequest("POST", "/api/chat", {}, {"content-type": "application/json"}, raw)


def parse(body: Any) -> ChatRequest:
    return ADAPTER.parse(http(body))


def text_plan(text: str = "Hello there!", **kw: Any) -> MessagePlan:
    return plans.text_plan("llama3.2", text, 4, 6, **kw)


def call_plan() -> MessagePlan:
    calls = (planned("get_weather", {"city": "Tokyo"}, "k1"), planned("get_time", {"tz": "JST"}, "k2"))
    return MessagePlan(model="llama3.2", tool_calls=calls, finish="tool_calls")


def lines(rendered: Rendered) -> list[dict[str, Any]]:
    assert rendered.frames is not None
    out = []
    for frame in rendered.frames:
        text = frame.data.decode()
        assert text.endswith("\n") and text.count("\n") == 1 and text.strip()
        out.append(json.loads(text))
    return out


# ---- parsing ----


def test_stream_defaults_to_true() -> None:
    chat = parse({"model": "llama3.2", "messages": [{"role": "user", "content": "hi"}]})
    assert chat.stream and chat.provider == "ollama" and chat.model == "llama3.2"
    assert not parse({"model": "llama3.2", "messages": [], "stream": False}).stream
    assert parse({"model": "llama3.2"}).messages == ()


def test_parse_history_with_tool_calls() -> None:
    chat = parse(
        {
            "model": "llama3.2",
            "stream": False,
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "weather and time in Tokyo?"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}},
                        {"id": "call_t", "function": {"name": "get_time", "arguments": '{"tz": "JST"}'}},
                    ],
                },
                {"role": "tool", "content": "12:00", "tool_call_id": "call_t"},
                {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "get_weather", "description": "w", "parameters": {"type": "object"}},
                },
                {"type": "function", "function": {"name": "get_time"}},
            ],
        }
    )
    assert chat.system == "Be brief."
    assert [m.role for m in chat.messages] == ["system", "user", "assistant", "tool", "tool"]
    calls = chat.messages[2].tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        (None, "get_weather", {"city": "Tokyo"}),
        ("call_t", "get_time", {"tz": "JST"}),
    ]
    time_result = chat.messages[3].tool_result
    assert time_result is not None and (time_result.name, time_result.call_id) == ("get_time", "call_t")
    weather = chat.latest_tool_result("get_weather")
    assert weather is not None and weather.content == "sunny"
    assert chat.tool_names() == ("get_weather", "get_time")
    ADAPTER.validate_history(chat)


def test_untagged_tool_results_answer_calls_in_order() -> None:
    chat = parse(
        {
            "model": "m",
            "messages": [
                {"role": "assistant", "tool_calls": [{"function": {"name": "a"}}, {"function": {"name": "b"}}]},
                {"role": "tool", "content": "A"},
                {"role": "tool", "content": "B"},
            ],
        }
    )
    names = [m.tool_result.name for m in chat.messages if m.tool_result is not None]
    assert names == ["a", "b"]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"", "missing request body"),
        (b"{nope", "request body is not valid JSON"),
        ({"messages": []}, "model is required"),
        ({"model": "m", "stream": "yes"}, "stream must be a boolean"),
        ({"model": "m", "messages": {}}, "messages must be an array"),
        ({"model": "m", "messages": [{"role": "bot", "content": "x"}]}, "messages[0].role must be one of"),
        ({"model": "m", "messages": [{"role": "user", "content": 3}]}, "messages[0].content must be a string"),
        ({"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]}, "name is required"),
        ({"model": "m", "tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]}, "parameters"),
    ],
)
def test_bad_requests(body: Any, needle: str) -> None:
    err = error_of(lambda: parse(body))
    assert err.status == 400 and needle in err.message


def test_no_auth_needed() -> None:
    assert ADAPTER.check_auth(http({})) is None


# ---- rendering ----


def test_render_non_streaming() -> None:
    chat = parse({"model": "llama3.2", "stream": False})
    rendered = ADAPTER.render(text_plan(thinking="Hmm."), chat, CTX)
    assert rendered.status == 200 and rendered.media_type == "application/json; charset=utf-8"
    body = json.loads(rendered.body)
    assert body["message"] == {"role": "assistant", "content": "Hello there!", "thinking": "Hmm."}
    assert body["done"] is True and body["done_reason"] == "stop"
    assert body["prompt_eval_count"] == 6 and body["eval_count"] == 3
    for key in ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration"):
        assert isinstance(body[key], int) and body[key] > 0
    assert body["created_at"].startswith("2023-11-14T22:13:20.") and body["created_at"].endswith("Z")

    body = json.loads(ADAPTER.render(call_plan(), chat, CTX).body)
    assert "thinking" not in body["message"] and body["message"]["content"] == ""
    assert body["message"]["tool_calls"] == [
        {"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Tokyo"}}},
        {"function": {"index": 1, "name": "get_time", "arguments": {"tz": "JST"}}},
    ]
    assert json.loads(ADAPTER.render(text_plan(finish="length"), chat, CTX).body)["done_reason"] == "length"


def test_render_stream() -> None:
    chat = parse({"model": "llama3.2"})
    rendered = ADAPTER.render(text_plan(thinking="Hmm.", thinking_chunks=("H", "mm.")), chat, CTX)
    assert rendered.media_type == "application/x-ndjson"
    objs = lines(rendered)
    assert [o["message"].get("thinking") for o in objs] == ["H", "mm.", None, None, None, None]
    assert "".join(o["message"]["content"] for o in objs) == "Hello there!"
    assert [o["done"] for o in objs] == [False] * 5 + [True]
    assert objs[-1]["done_reason"] == "stop" and objs[-1]["eval_count"] == 3 and "done_reason" not in objs[0]
    assert rendered.frames is not None and [f.content for f in rendered.frames] == [True] * 5 + [False]
    stamps = [o["created_at"] for o in objs]
    assert stamps == sorted(stamps)

    objs = lines(ADAPTER.render(call_plan(), chat, CTX))
    assert [o["message"]["content"] for o in objs] == ["", "", ""]
    assert [o["message"].get("tool_calls") for o in objs[:2]] == [
        [{"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Tokyo"}}}],
        [{"function": {"index": 1, "name": "get_time", "arguments": {"tz": "JST"}}}],
    ]


def test_errors_and_helpers() -> None:
    rendered = ADAPTER.render_error(404, "model 'x' not found", CTX)
    assert rendered.status == 404 and json.loads(rendered.body) == {"error": "model 'x' not found"}
    assert ADAPTER.stream_error_frame("boom", CTX) == b'{"error":"boom"}\n'
    assert rfc3339(0, 1_500_000_001) == "1970-01-01T00:00:01.500000001Z"
    tags = json.loads(ollama_adapter.tags_response(["llama3.2", "qwen3:8b"], CTX).body)["models"]
    assert [t["name"] for t in tags] == ["llama3.2:latest", "qwen3:8b"]
    assert json.loads(ollama_adapter.version_response(CTX).body)["version"]


# ---- the real ollama client reading these bytes ----


class Server(AdapterServer):
    """The adapter as the server runs it, beside Ollama's tags and version routes."""

    def __init__(self, plans: list[MessagePlan] | None = None, error: tuple[int, str] | None = None) -> None:
        super().__init__(ADAPTER, CTX, httpx, plans, error)

    def other(self, req: HttpRequest) -> Rendered | None:
        if req.path == "/api/tags":
            return ollama_adapter.tags_response(["llama3.2"], CTX)
        if req.path == "/api/version":
            return ollama_adapter.version_response(CTX)
        return None


def sdk(server: Server) -> ollama.Client:
    return opened(ollama.Client(host="http://mock:11434", transport=httpx.MockTransport(server)))


TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "get_weather", "description": "w", "parameters": {"type": "object"}}}
]


def test_sdk_chat() -> None:
    server = Server([text_plan(thinking="Hmm.")])
    response = sdk(server).chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}])
    assert response.message.content == "Hello there!" and response.message.thinking == "Hmm."
    assert response.done and response.done_reason == "stop" and response.eval_count == 3
    assert not server.chats[0].stream and server.chats[0].last_user_message() == "hi"


def test_sdk_chat_stream() -> None:
    server = Server([text_plan("Streaming works fine.")])
    parts = list(sdk(server).chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}], stream=True))
    assert "".join(p.message.content or "" for p in parts) == "Streaming works fine."
    assert parts[-1].done and not parts[0].done and parts[-1].prompt_eval_count == 6
    assert server.chats[0].stream


def test_sdk_tool_call_round_trip() -> None:
    server = Server([call_plan(), text_plan("Sunny, noon.")])
    client = sdk(server)
    messages: list[Any] = [{"role": "user", "content": "weather in Tokyo?"}]
    first = client.chat(model="llama3.2", messages=messages, tools=TOOLS)
    calls = first.message.tool_calls or []
    assert [(c.function.name, dict(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Tokyo"}),
        ("get_time", {"tz": "JST"}),
    ]
    messages.append(first.message)
    messages += [{"role": "tool", "content": "ok", "tool_name": c.function.name} for c in calls]
    second = client.chat(model="llama3.2", messages=messages, tools=TOOLS)
    assert second.message.content == "Sunny, noon."
    chat = server.chats[1]
    assert [c.name for c in chat.messages[1].tool_calls] == ["get_weather", "get_time"]
    assert chat.latest_tool_result("get_time") is not None and chat.tool_names() == ("get_weather",)


def test_sdk_streamed_tool_calls() -> None:
    server = Server([call_plan()])
    parts = list(sdk(server).chat(model="llama3.2", messages=[{"role": "user", "content": "x"}], stream=True))
    calls = [c for p in parts for c in (p.message.tool_calls or [])]
    assert [(c.function.name, dict(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Tokyo"}),
        ("get_time", {"tz": "JST"}),
    ]


@pytest.mark.parametrize("status", [400, 404, 429, 500, 503])
def test_sdk_response_error(status: int) -> None:
    server = Server(error=(status, "mockllm: scripted failure"))
    with pytest.raises(ollama.ResponseError) as info:
        sdk(server).chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == status and info.value.error == "mockllm: scripted failure"


def test_sdk_bad_request_error_and_mid_stream_error() -> None:
    with pytest.raises(ollama.ResponseError, match="role must be one of") as info:
        sdk(Server()).chat(model="llama3.2", messages=[{"role": "bot", "content": "hi"}])
    assert info.value.status_code == 400
    server = Server([text_plan("a long reply that streams")])
    server.mid_stream_error = "model runner crashed"
    with pytest.raises(ollama.ResponseError, match="model runner crashed"):
        list(sdk(server).chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}], stream=True))


def test_sdk_list_and_version() -> None:
    client = sdk(Server())
    [model] = client.list().models
    assert model.model == "llama3.2:latest" and model.modified_at == datetime.fromtimestamp(1_700_000_000, UTC)
    assert model.details is not None and model.details.family == "llama"


# ---- no input crashes ----

VOCAB = [
    "model",
    "messages",
    "stream",
    "role",
    "content",
    "tool_calls",
    "function",
    "name",
    "arguments",
    "tool_name",
    "tool_call_id",
    "id",
    "tools",
    "type",
    "parameters",
    "system",
    "assistant",
    "tool",
]


test_any_json_is_parsed_or_rejected_cleanly = any_json_test(
    ADAPTER, parse, lambda body: {"model": "m", "messages": body}, VOCAB, text_plan(), CTX
)
