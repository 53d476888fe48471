"""The Gemini adapter: parsing, history checks, rendering, and the bytes fed to the real google-genai SDK."""

from __future__ import annotations

import json
import re
from typing import Any

import attrs
import httpx
import plans
import pytest
import sdk_errors
from google import genai
from google.genai import errors, types
from plans import error_of, planned
from sdk_bridge import AdapterServer
from sdk_clients import opened
from strategies import any_json_test

from mockllm.runtime.providers import gemini
from mockllm.runtime.providers.base import ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.gemini import GeminiAdapter, json_schema
from mockllm.runtime.reply import tokens
from mockllm.runtime.reply.ids import gemini_response_id
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest

ADAPTER = GeminiAdapter()
CTX = RenderContext(response_id="resp42", created=1_700_000_000, request_id="req_1")
RESPONSE_ID = gemini_response_id("resp42")  # 23 url-safe base64 characters, like the real ones
KEY = {"x-goog-api-key": "k", "content-type": "application/json"}
ROUTE = re.compile(r"^/(?:v1|v1beta)/models/(?P<model>[^/:]+):(?P<method>\w+)$")


def http(body: Any, method: str = "generateContent", headers: dict[str, str] | None = None) -> HttpRequest:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    path = f"/v1beta/models/gemini-2.5-flash:{method}"
    params = {"model": "gemini-2.5-flash", "method": method}
    return HttpRequest("POST", path, {}, KEY if headers is None else headers, raw, params)


def parse(body: Any, method: str = "generateContent") -> ChatRequest:
    return ADAPTER.parse(http(body, method))


def text_plan(text: str = "Hello there!", **kw: Any) -> MessagePlan:
    return plans.text_plan("gemini-2.5-flash", text, 5, 5, **kw)


def call_plan() -> MessagePlan:
    return MessagePlan(
        model="gemini-2.5-flash",
        tool_calls=(planned("get_weather", {"city": "Paris"}, "k1"), planned("get_time", {"tz": "CET"}, "k2")),
        finish="tool_calls",
    )


def sse_events(rendered: Rendered) -> list[dict[str, Any]]:
    assert rendered.frames is not None
    out = []
    for frame in rendered.frames:
        text = frame.data.decode()
        # CRLF framing, as the real API sends
        assert text.startswith("data: ") and text.endswith("\r\n\r\n") and text.count("\n") == 2
        out.append(json.loads(text[len("data: ") :]))
    return out


# ---- parsing ----


def test_parse_camel_and_snake_case() -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "weather in"}, {"text": "Paris?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "hmm", "thought": True},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                ],
            },
            {
                "role": "user",
                "parts": [{"function_response": {"name": "get_weather", "response": {"result": "sunny"}}}],
            },
        ],
        "system_instruction": {"role": "user", "parts": [{"text": "be nice"}, {"text": "be brief"}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "w",
                        "parameters": {
                            "type": "OBJECT",
                            "properties": {"city": {"type": "STRING"}},
                            "required": ["city"],
                        },
                    }
                ]
            },
            {
                "function_declarations": [
                    {
                        "name": "get_time",
                        "parameters_json_schema": {"type": "object", "properties": {"tz": {"type": "string"}}},
                    }
                ]
            },
            {"googleSearch": {}},
        ],
    }
    chat = parse(body)
    assert chat.provider == "gemini" and chat.model == "gemini-2.5-flash" and not chat.stream
    assert chat.system == "be nice\nbe brief"
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool"]
    assert chat.messages[0].text == "weather in\nParis?"
    assistant = chat.messages[1]
    assert assistant.text == "" and [(c.id, c.name, c.arguments) for c in assistant.tool_calls] == [
        (None, "get_weather", {"city": "Paris"})
    ]
    result = chat.messages[2].tool_result
    assert result is not None and result.name == "get_weather" and result.content == "sunny"
    assert not result.is_error and chat.messages[2].index == 2
    assert chat.tool_names() == ("get_weather", "get_time")
    assert chat.tools[0].parameters == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    assert chat.tools[1].parameters["properties"] == {"tz": {"type": "string"}}
    ADAPTER.validate_history(chat)
    assert parse(body, "streamGenerateContent").stream


def test_streamed_model_turn_merges_and_errors_are_flagged() -> None:
    chat = parse(
        {
            "contents": [
                {"parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"text": "Hel"}]},
                {"role": "model", "parts": [{"text": "lo"}, {"functionCall": {"name": "f", "id": "c1"}}]},
                {
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"name": "f", "id": "c1", "response": {"error": "nope"}}},
                        {"text": "and?"},
                    ],
                },
            ]
        }
    )
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool", "user"]
    assert chat.messages[1].text == "Hello" and chat.messages[1].tool_calls[0].arguments == {}
    result = chat.messages[2].tool_result
    assert result is not None and result.is_error and result.call_id == "c1"
    assert chat.last_user_message() == "and?"
    ADAPTER.validate_history(chat)


def test_schema_conversion_keeps_property_names() -> None:
    schema = {
        "type": "OBJECT",
        "property_ordering": ["min_items"],
        "properties": {"min_items": {"type": "ARRAY", "items": {"type": "INTEGER"}, "min_items": 1}},
        "any_of": [{"type": "NULL"}],
    }
    assert json_schema(schema) == {
        "type": "object",
        "properties": {"min_items": {"type": "array", "items": {"type": "integer"}, "minItems": 1}},
        "anyOf": [{"type": "null"}],
    }


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{oops", "Invalid JSON payload received"),
        (b"", "request body is empty"),
        ({}, "contents is not specified"),
        ({"contents": {"parts": []}}, "'contents': expected a list"),
        ({"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]}, "Please use a valid role: user, model."),
        ({"contents": [{"role": "user", "parts": []}]}, "contents.parts must not be empty"),
        ({"contents": [{"parts": [{"text": 5}]}]}, "contents[0].parts[0].text"),
        ({"contents": [{"parts": [{"functionCall": {"args": {}}}]}]}, "Name cannot be empty"),
        (
            {
                "contents": [{"parts": [{"text": "x"}]}],
                "tools": [{"functionDeclarations": [{"name": "f", "parameters": 3}]}],
            },
            "parameters",
        ),
    ],
)
def test_bad_requests_are_invalid_argument(body: Any, needle: str) -> None:
    err = error_of(lambda: parse(body))
    assert err.status == 400 and needle in err.message


def test_unknown_method_is_not_found() -> None:
    err = error_of(lambda: parse({"contents": []}, "embedContent"))
    assert err.status == 404


@pytest.mark.parametrize(
    ("contents", "needle"),
    [
        (
            [{"parts": [{"functionResponse": {"name": "f", "response": {}}}]}],
            "turn before it made no function call",
        ),
        (
            [
                {"parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "f"}}, {"functionCall": {"name": "g"}}]},
                {"parts": [{"functionResponse": {"name": "f", "response": {}}}]},
            ],
            "has 1 function response(s) for 2 function call(s) in contents[1]",
        ),
        (
            [
                {"parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "f"}}]},
                {"parts": [{"functionResponse": {"name": "g", "response": {}}}]},
            ],
            "contents[2] has a function response for 'g'",
        ),
    ],
)
def test_history_validation(contents: list[Any], needle: str) -> None:
    err = error_of(lambda: ADAPTER.validate_history(parse({"contents": contents})))
    assert err.status == 400 and needle in err.message


def test_check_auth() -> None:
    assert ADAPTER.check_auth(http({}, headers={"x-goog-api-key": "k"})) is None
    keyed = HttpRequest("POST", "/v1/models/m:generateContent", {"key": "k"}, {}, b"{}")
    assert ADAPTER.check_auth(keyed) is None
    err = ADAPTER.check_auth(http({}, headers={}))
    assert err is not None and err.status == 403 and "unregistered callers" in err.message


# ---- rendering ----


def test_render_text_and_calls() -> None:
    chat = parse({"contents": [{"parts": [{"text": "hi"}]}]})
    rendered = ADAPTER.render(text_plan(thinking="Let me think."), chat, CTX)
    assert rendered.status == 200 and rendered.media_type == "application/json; charset=UTF-8"
    body = json.loads(rendered.body)
    candidate = body["candidates"][0]
    assert candidate["content"] == {
        "parts": [{"text": "Let me think.", "thought": True}, {"text": "Hello there!"}],
        "role": "model",
    }
    assert candidate["finishReason"] == "STOP" and body["responseId"] == RESPONSE_ID
    thoughts = tokens.estimate("Let me think.")
    assert body["usageMetadata"] == {
        "promptTokenCount": 5,
        "candidatesTokenCount": 3 - thoughts,
        "totalTokenCount": 8,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 5}],
        "thoughtsTokenCount": thoughts,
    }
    body = json.loads(ADAPTER.render(call_plan(), chat, CTX).body)
    assert body["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
        {"functionCall": {"name": "get_time", "args": {"tz": "CET"}}},
    ]
    finishes = {
        f: json.loads(ADAPTER.render(text_plan(finish=f), chat, CTX).body) for f in ("length", "content_filter")
    }
    assert finishes["length"]["candidates"][0]["finishReason"] == "MAX_TOKENS"
    assert finishes["content_filter"]["candidates"][0]["finishReason"] == "SAFETY"
    empty = json.loads(ADAPTER.render(MessagePlan(model="m"), chat, CTX).body)
    assert empty["candidates"][0]["content"]["parts"] == [{"text": ""}]
    thought_only = json.loads(ADAPTER.render(MessagePlan(model="m", thinking="hmm"), chat, CTX).body)
    assert thought_only["candidates"][0]["content"]["parts"] == [{"text": "hmm", "thought": True}, {"text": ""}]


def test_stream_frames() -> None:
    chat = parse({"contents": [{"parts": [{"text": "hi"}]}]}, "streamGenerateContent")
    rendered = ADAPTER.render(text_plan("Hello there!"), chat, CTX)
    assert rendered.media_type == "text/event-stream"
    evs = sse_events(rendered)
    assert ["".join(p["text"] for p in e["candidates"][0]["content"]["parts"]) for e in evs] == ["Hello", " ther", "e!"]
    assert [e["candidates"][0].get("finishReason") for e in evs] == [None, None, "STOP"]
    assert evs[-1]["usageMetadata"]["totalTokenCount"] == 8
    # every chunk carries the candidates count so far, growing to the total
    running = [e["usageMetadata"]["candidatesTokenCount"] for e in evs]
    assert running == sorted(running) and running[0] >= 1 and running[-1] == 3
    assert ("content-disposition", "attachment") in rendered.headers
    assert rendered.frames is not None and all(f.content for f in rendered.frames)

    evs = sse_events(ADAPTER.render(call_plan(), chat, CTX))
    assert [e["candidates"][0]["content"]["parts"] for e in evs] == [
        [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}],
        [{"functionCall": {"name": "get_time", "args": {"tz": "CET"}}}],
    ]
    rendered = ADAPTER.render(MessagePlan(model="m", thinking="hmm", thinking_chunks=("h", "mm")), chat, CTX)
    evs = sse_events(rendered)
    assert evs[-1]["candidates"][0]["content"]["parts"] == [{"text": ""}]
    assert rendered.frames is not None and [f.content for f in rendered.frames] == [True, True, False]


def test_errors() -> None:
    rendered = ADAPTER.render_error(429, "Quota exceeded.", CTX)
    assert rendered.status == 429
    assert json.loads(rendered.body) == {
        "error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}
    }
    for status, name in [
        (400, "INVALID_ARGUMENT"),
        (403, "PERMISSION_DENIED"),
        (404, "NOT_FOUND"),
        (500, "INTERNAL"),
        (503, "UNAVAILABLE"),
        (504, "DEADLINE_EXCEEDED"),
    ]:
        assert json.loads(ADAPTER.render_error(status, "x", CTX).body)["error"]["status"] == name
    frame = ADAPTER.stream_error_frame("boom", CTX)
    assert frame == b'data: {"error":{"code":500,"message":"boom","status":"INTERNAL"}}\r\n\r\n'


def test_count_tokens_and_models() -> None:
    rendered = gemini.count_tokens(http({"contents": [{"parts": [{"text": "a" * 40}]}]}, "countTokens"), CTX)
    assert json.loads(rendered.body) == {"totalTokens": 10}
    nested = {"generateContentRequest": {"model": "models/x", "contents": [{"parts": [{"text": "abcd" * 3}]}]}}
    assert json.loads(gemini.count_tokens(http(nested, "countTokens"), CTX).body) == {"totalTokens": 3}
    with pytest.raises(ProviderError):
        gemini.count_tokens(http({}, "countTokens"), CTX)
    models = json.loads(gemini.models_response(["gemini-2.5-flash"], CTX).body)["models"]
    assert models[0]["name"] == "models/gemini-2.5-flash"


# ---- the real google-genai SDK reading these bytes ----


class Server(AdapterServer):
    """The adapter as the server runs it, behind Gemini's model routes and model listing."""

    def __init__(self, plans: list[MessagePlan] | None = None, error: tuple[int, str] | None = None) -> None:
        super().__init__(ADAPTER, CTX, httpx, plans, error)

    def path_params(self, path: str) -> dict[str, str]:
        found = ROUTE.match(path)
        return found.groupdict() if found is not None else {}

    def other(self, req: HttpRequest) -> Rendered | None:
        if not req.path_params:
            if req.path.endswith("/models"):
                return gemini.models_response(["gemini-2.5-flash"], CTX)
            return ADAPTER.render_error(404, f"no route {req.path}", CTX)
        if req.path_params["method"] == "countTokens":
            return gemini.count_tokens(req, CTX)
        return None


def sdk(server: Server, api_version: str | None = None) -> genai.Client:
    transport = httpx.MockTransport(server)
    options = types.HttpOptions(
        base_url="http://mock", api_version=api_version, httpx_client=opened(httpx.Client(transport=transport))
    )
    return opened(genai.Client(api_key="k", http_options=options))


WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="weather",
            parameters=types.Schema(type=types.Type.OBJECT, properties={"city": types.Schema(type=types.Type.STRING)}),
        ),
        types.FunctionDeclaration(name="get_time", parameters_json_schema={"type": "object"}),
    ]
)


def test_sdk_generate_content() -> None:
    server = Server([text_plan(thinking="Considering.")])
    config = types.GenerateContentConfig(system_instruction="be nice")
    response = sdk(server).models.generate_content(model="gemini-2.5-flash", contents="hi", config=config)
    assert response.text == "Hello there!"
    assert response.candidates is not None and response.candidates[0].finish_reason == types.FinishReason.STOP
    assert response.usage_metadata is not None and response.usage_metadata.total_token_count == 8
    assert response.response_id == RESPONSE_ID and response.model_version == "gemini-2.5-flash"
    chat = server.chats[0]
    assert chat.system == "be nice" and chat.last_user_message() == "hi" and chat.endpoint.startswith("/v1/")


def test_sdk_generate_content_stream_on_v1beta() -> None:
    server = Server([text_plan("The quick brown fox.")])
    stream = sdk(server, "v1beta").models.generate_content_stream(model="models/gemini-2.5-flash", contents="hi")
    chunks = list(stream)
    assert "".join(c.text or "" for c in chunks) == "The quick brown fox."
    assert all(c.text is not None for c in chunks)
    assert chunks[-1].candidates is not None and chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert server.chats[0].stream and server.chats[0].endpoint.startswith("/v1beta/")


def test_sdk_function_call_round_trip() -> None:
    server = Server([call_plan(), text_plan("Sunny in Paris.")])
    client = sdk(server)
    config = types.GenerateContentConfig(tools=[WEATHER])
    first = client.models.generate_content(model="gemini-2.5-flash", contents="weather in Paris?", config=config)
    calls = first.function_calls or []
    assert [(c.name, c.args, c.id) for c in calls] == [
        ("get_weather", {"city": "Paris"}, None),
        ("get_time", {"tz": "CET"}, None),
    ]
    assert first.candidates is not None and first.candidates[0].content is not None
    contents: list[Any] = [
        types.Content(role="user", parts=[types.Part.from_text(text="weather in Paris?")]),
        first.candidates[0].content,
        types.Content(
            role="user",
            parts=[types.Part.from_function_response(name=c.name or "", response={"result": "ok"}) for c in calls],
        ),
    ]
    second = client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
    assert second.text == "Sunny in Paris."
    chat = server.chats[1]
    assert chat.tool_names() == ("get_weather", "get_time")
    assert chat.tools[0].parameters == {"type": "object", "properties": {"city": {"type": "string"}}}
    result = chat.latest_tool_result("get_time")
    assert result is not None and result.content == "ok"

    with pytest.raises(errors.ClientError, match="number of function response parts") as info:
        client.models.generate_content(
            model="gemini-2.5-flash",
            contents=[*contents[:2], contents[2].model_copy(update={"parts": contents[2].parts[:1]})],
            config=config,
        )
    assert info.value.code == 400 and info.value.status == "INVALID_ARGUMENT"


def test_sdk_automatic_function_calling() -> None:
    seen: list[str] = []

    def get_weather(city: str) -> str:
        """Weather for a city."""
        seen.append(city)
        return "sunny"

    plan = MessagePlan(model="gemini-2.5-flash", tool_calls=(planned("get_weather", {"city": "Oslo"}, "k"),))
    server = Server([plan, text_plan("Sunny in Oslo.")])
    config = types.GenerateContentConfig(tools=[get_weather])
    response = sdk(server).models.generate_content(model="gemini-2.5-flash", contents="weather in Oslo", config=config)
    assert response.text == "Sunny in Oslo." and seen == ["Oslo"]
    result = server.chats[1].latest_tool_result("get_weather")
    assert result is not None and result.content == "sunny"


def test_sdk_chat_keeps_streamed_turns() -> None:
    server = Server([text_plan("First answer."), text_plan("Second answer.")])
    chat = sdk(server).chats.create(model="gemini-2.5-flash")
    assert "".join(c.text or "" for c in chat.send_message_stream("one")) == "First answer."
    assert "".join(c.text or "" for c in chat.send_message_stream("two")) == "Second answer."
    history = chat.get_history()
    assert [c.role for c in history][:2] == ["user", "model"] and len(history) >= 4
    second = server.chats[1]
    assert [(m.role, m.text) for m in second.messages] == [
        ("user", "one"),
        ("assistant", "First answer."),
        ("user", "two"),
    ]


def test_sdk_chat_keeps_thinking_only_turn() -> None:
    server = Server([MessagePlan(model="m", thinking="hmm", thinking_chunks=("h", "mm")), text_plan("ok")])
    chat = sdk(server).chats.create(model="gemini-2.5-flash")
    list(chat.send_message_stream("one"))
    list(chat.send_message_stream("two"))
    assert [m.role for m in server.chats[1].messages] == ["user", "assistant", "user"]


@pytest.mark.parametrize(("status", "exc"), sdk_errors.GEMINI)
def test_sdk_error_statuses(status: int, exc: type[errors.APIError]) -> None:
    server = Server(error=(status, "mockllm: scripted failure"))
    with pytest.raises(exc) as info:
        sdk(server).models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert info.value.code == status and info.value.message == "mockllm: scripted failure"
    assert info.value.status == gemini.status_name(status)


def test_sdk_missing_key_is_permission_denied() -> None:
    server = Server([text_plan()])
    client = sdk(server)
    client._api_client._http_options.headers = {}  # what a keyless caller would send
    with pytest.raises(errors.ClientError) as info:
        client.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert info.value.code == 403 and info.value.status == "PERMISSION_DENIED"


def test_sdk_mid_stream_error_raises() -> None:
    server = Server([text_plan("a long reply that streams")])
    server.mid_stream_error = "The model is overloaded."
    stream = sdk(server).models.generate_content_stream(model="gemini-2.5-flash", contents="hi")
    with pytest.raises(errors.ServerError, match="overloaded"):
        list(stream)


def test_sdk_count_tokens_and_list_models() -> None:
    client = sdk(Server())
    assert client.models.count_tokens(model="gemini-2.5-flash", contents="a" * 40).total_tokens == 10
    names = [m.name for m in client.models.list()]
    assert names == ["models/gemini-2.5-flash"]


# ---- no input crashes ----

VOCAB = [
    "contents",
    "role",
    "parts",
    "text",
    "thought",
    "functionCall",
    "function_call",
    "functionResponse",
    "name",
    "args",
    "id",
    "response",
    "error",
    "systemInstruction",
    "tools",
    "functionDeclarations",
    "parameters",
    "parametersJsonSchema",
    "type",
    "properties",
    "items",
    "OBJECT",
    "STRING",
]


test_any_json_is_parsed_or_rejected_cleanly = any_json_test(
    ADAPTER, parse, lambda body: {"contents": body}, VOCAB, text_plan(), CTX
)


def test_function_response_text_unwraps_the_sdk_result_wrapper() -> None:
    """google-genai wraps a return value as {"result": value}; conditions and templates read the value,
    as they do on the other providers. Other response objects stay JSON."""
    from mockllm.runtime.providers.gemini import result_text

    assert result_text({"result": "sunny"}) == "sunny"
    assert result_text({"output": {"t": 18}}) == '{"t":18}'
    assert result_text({"temperature": 18, "sky": "clear"}) == '{"temperature":18,"sky":"clear"}'
    assert result_text({"error": "boom"}) == '{"error":"boom"}'


def test_gemini_3_function_call_stream_ends_with_an_empty_chunk() -> None:
    """Gemini 3 streams a function call, then a last chunk with an empty text part and the finish
    reason (two chunks, as recorded); earlier models finish on the call's own chunk."""
    chat = parse({"contents": [{"parts": [{"text": "hi"}]}]}, "streamGenerateContent")
    plan = attrs.evolve(call_plan(), model="gemini-3-pro-preview")
    evs = sse_events(ADAPTER.render(plan, chat, CTX))
    assert evs[-1]["candidates"][0]["content"]["parts"] == [{"text": ""}]
    assert evs[-1]["candidates"][0]["finishReason"] == "STOP"
    assert [e["candidates"][0].get("finishReason") for e in evs[:-1]] == [None] * (len(evs) - 1)
    older = sse_events(ADAPTER.render(call_plan(), chat, CTX))
    assert "functionCall" in older[-1]["candidates"][0]["content"]["parts"][0]
    assert older[-1]["candidates"][0]["finishReason"] == "STOP"
