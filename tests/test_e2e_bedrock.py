"""AWS Bedrock Runtime through its official clients -- boto3's ``bedrock-runtime`` (Converse,
ConverseStream, InvokeModel, InvokeModelWithResponseStream) and ``anthropic.AnthropicBedrock`` --
against a real mockllm server on loopback. botocore checks the event-stream CRCs on every message."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import botocore
import botocore.exceptions
import jsonschema
import pytest
import urllib3
from conftest import ServeText
from provider_cases import CELSIUS_CALL, limited_then, one_reply, scripted_vector, tool_loop
from sdk_clients import bedrock

MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"],
}
TOOLS: Any = {
    "tools": [{"toolSpec": {"name": "get_weather", "description": "Weather", "inputSchema": {"json": SCHEMA}}}]
}
ANTHROPIC_TOOLS: Any = [{"name": "get_weather", "input_schema": SCHEMA}]

SCRIPT = tool_loop(
    None,
    ['thinking "I should call the tool."', CELSIUS_CALL, "usage 30 in, 12 out"],
    ['text "It is sunny in {{city}}, says {{request.model}}."', "stream by word", "usage 50 in, 9 out"],
    tools_include=True,
)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def collect(stream: Iterator[dict[str, Any]]) -> dict[str, Any]:
    """A ConverseStream rebuilt as a Converse answer: content blocks, stop reason, usage."""
    blocks: dict[int, dict[str, Any]] = {}
    out: dict[str, Any] = {"events": []}
    for event in stream:
        (kind, body) = next(iter(event.items()))
        out["events"].append(kind)
        if kind == "contentBlockStart":
            use = body["start"]["toolUse"]
            blocks[body["contentBlockIndex"]] = {"toolUse": {**use, "input": ""}}
        elif kind == "contentBlockDelta":
            delta = body["delta"]
            block = blocks.setdefault(body["contentBlockIndex"], {})
            if "text" in delta:
                block["text"] = block.get("text", "") + delta["text"]
            elif "toolUse" in delta:
                block["toolUse"]["input"] += delta["toolUse"]["input"]
            elif "text" in delta.get("reasoningContent", {}):
                reasoning = block.setdefault("reasoningContent", {"reasoningText": {"text": ""}})
                reasoning["reasoningText"]["text"] += delta["reasoningContent"]["text"]
            elif "signature" in delta.get("reasoningContent", {}):
                block["reasoningContent"]["reasoningText"]["signature"] = delta["reasoningContent"]["signature"]
        elif kind == "messageStop":
            out["stopReason"] = body["stopReason"]
        elif kind == "metadata":
            out["usage"] = body["usage"]
            out["metrics"] = body["metrics"]
    for block in blocks.values():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"])
    out["content"] = [blocks[i] for i in sorted(blocks)]
    return out


def converse(c: Any, stream: bool, **kw: Any) -> dict[str, Any]:
    if stream:
        return collect(c.converse_stream(modelId=MODEL, **kw)["stream"])
    r = c.converse(modelId=MODEL, **kw)
    return {"content": r["output"]["message"]["content"], "stopReason": r["stopReason"], "usage": r["usage"], **r}


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse_stream"])
def test_converse_tool_loop(serve_text: ServeText, stream: bool) -> None:
    """reasoning + toolUse, then the toolResult turn; the model id arrives decoded (`:` was `%3A`)."""
    with serve_text(SCRIPT) as url:
        c = bedrock(url)
        messages: list[Any] = [user("What is the weather in Lima?")]
        first = converse(c, stream, messages=messages, toolConfig=TOOLS)
        assert first["stopReason"] == "tool_use"
        reasoning, use = first["content"]
        assert reasoning["reasoningContent"]["reasoningText"]["text"] == "I should call the tool."
        assert reasoning["reasoningContent"]["reasoningText"]["signature"]
        assert use["toolUse"]["name"] == "get_weather"
        assert use["toolUse"]["input"] == {"city": "Lima", "unit": "celsius"}
        assert use["toolUse"]["toolUseId"].startswith("tooluse_") and len(use["toolUse"]["toolUseId"]) == 30
        assert first["usage"] == {"inputTokens": 30, "outputTokens": 12, "totalTokens": 42}
        messages.append({"role": "assistant", "content": first["content"]})
        result = {"toolUseId": use["toolUse"]["toolUseId"], "content": [{"json": {"sky": "sunny"}}]}
        messages.append({"role": "user", "content": [{"toolResult": result}]})
        second = converse(c, stream, messages=messages, toolConfig=TOOLS)
        assert second["stopReason"] == "end_turn"
        assert second["content"] == [{"text": f"It is sunny in Lima, says {MODEL}."}]
        assert second["usage"] == {"inputTokens": 50, "outputTokens": 9, "totalTokens": 59}
        assert second["metrics"]["latencyMs"] >= 1
        if stream:
            assert second["events"][0] == "messageStart" and second["events"][-2:] == ["messageStop", "metadata"]
            assert second["events"].count("contentBlockDelta") == 7  # stream by word


def test_converse_text_and_system(serve_text: ServeText) -> None:
    script = """
scenario "s":
    step a:
        when:
            system prompt contains "pirate"
            model is "amazon.nova-pro-v1:0"
        reply:
            text "Arr, {{request.last_user_message}}"
"""
    with serve_text(script) as url:
        r = bedrock(url).converse(
            modelId="amazon.nova-pro-v1:0", messages=[user("hello")], system=[{"text": "You are a pirate."}]
        )
    assert r["output"]["message"] == {"role": "assistant", "content": [{"text": "Arr, hello"}]}
    assert r["stopReason"] == "end_turn"
    assert r["ResponseMetadata"]["HTTPHeaders"]["x-amzn-requestid"]


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse_stream"])
def test_parallel_tool_calls(serve_text: ServeText, stream: bool) -> None:
    script = """
scenario "p":
    step a:
        reply:
            tool call get_weather {"city": "Rome", "unit": "celsius"}
            tool call get_weather {"city": "Oslo", "unit": "celsius"}
    step b:
        when:
            tool result for "get_weather" is present
        reply:
            text "done {{tool_result.get_weather}}"
"""
    with serve_text(script) as url:
        c = bedrock(url)
        messages: list[Any] = [user("two cities")]
        first = converse(c, stream, messages=messages, toolConfig=TOOLS)
        uses = [b["toolUse"] for b in first["content"]]
        assert [u["input"]["city"] for u in uses] == ["Rome", "Oslo"]
        assert len({u["toolUseId"] for u in uses}) == 2
        messages.append({"role": "assistant", "content": first["content"]})
        results = [{"toolResult": {"toolUseId": u["toolUseId"], "content": [{"text": "ok"}]}} for u in uses]
        # answering only one of the two calls is what Bedrock refuses
        with pytest.raises(c.exceptions.ValidationException, match=r"Expected toolResult blocks at messages\.2"):
            converse(c, stream, messages=[*messages, {"role": "user", "content": results[:1]}], toolConfig=TOOLS)
        messages.append({"role": "user", "content": results})
        assert converse(c, stream, messages=messages, toolConfig=TOOLS)["content"] == [{"text": "done ok"}]


def test_throttling_is_retried_by_boto3(serve_text: ServeText) -> None:
    """A 429 is a ThrottlingException, which boto3 retries (legacy mode: up to 4 retries) by itself."""
    script = limited_then("Too many requests, please wait before trying again.", "finally", after=None, times=1)
    with serve_text(script) as url:
        r = bedrock(url).converse(modelId=MODEL, messages=[user("hi")])
    assert r["output"]["message"]["content"] == [{"text": "finally"}]
    assert r["ResponseMetadata"]["RetryAttempts"] == 1


@pytest.mark.parametrize(
    ("status", "message", "code"),
    [
        (429, "Too many requests", "ThrottlingException"),
        (400, "Malformed input", "ValidationException"),
        (500, "Internal failure", "InternalServerException"),
        (503, "Bedrock is unavailable", "ServiceUnavailableException"),
        (408, "Model timed out", "ModelTimeoutException"),
        (429, "ModelNotReadyException: The model is loading", "ModelNotReadyException"),
    ],
)
def test_errors_are_bedrock_exceptions(serve_text: ServeText, status: int, message: str, code: str) -> None:
    script = f'scenario "e":\n    step a:\n        always\n        reply:\n            error {status} "{message}"\n'
    with serve_text(script) as url:
        c = bedrock(url, retries={"total_max_attempts": 1})
        with pytest.raises(getattr(c.exceptions, code)) as err:
            c.converse(modelId=MODEL, messages=[user("hi")])
        assert err.value.response["Error"] == {"Code": code, "Message": message.rpartition(": ")[2]}
        assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
        with pytest.raises(getattr(c.exceptions, code)):
            c.invoke_model(modelId=MODEL, body=json.dumps(anthropic_body("hi")))


def test_server_errors_are_retried_then_raised(serve_text: ServeText) -> None:
    script = 'scenario "e":\n    step a:\n        always\n        reply:\n            error 503 "down"\n'
    with serve_text(script) as url:
        c = bedrock(url, retries={"total_max_attempts": 2})
        with pytest.raises(c.exceptions.ServiceUnavailableException) as err:
            c.converse(modelId=MODEL, messages=[user("hi")])
    assert err.value.response["ResponseMetadata"]["RetryAttempts"] == 1


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("The model failed", "modelStreamErrorException"),
        ("ThrottlingException: Too many tokens", "throttlingException"),
    ],
)
def test_mid_stream_fault_is_an_exception_event(serve_text: ServeText, message: str, code: str) -> None:
    script = f"""
scenario "f":
    step a:
        reply:
            text "one two three four five"
            stream error "{message}" after 2 chunks
"""
    with serve_text(script) as url:
        events: list[Any] = []
        stream = bedrock(url).converse_stream(modelId=MODEL, messages=[user("hi")])["stream"]
        with pytest.raises(botocore.exceptions.EventStreamError) as err:
            events.extend(stream)
        stream.close()  # an event stream cut by an error keeps its connection until closed
    assert [e["contentBlockDelta"]["delta"]["text"] for e in events[1:]] == ["one", " two"]
    assert err.value.response["Error"] == {"Code": code, "Message": message.rpartition(": ")[2]}


def test_missing_signature_is_refused(serve_text: ServeText) -> None:
    with serve_text("") as url:
        c = bedrock(url, signature_version=botocore.UNSIGNED)
        with pytest.raises(botocore.exceptions.ClientError) as err:
            c.converse(modelId=MODEL, messages=[user("hi")])
    assert err.value.response["Error"]["Code"] == "MissingAuthenticationTokenException"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_history_rules(serve_text: ServeText) -> None:
    with serve_text("") as url:
        c = bedrock(url)
        with pytest.raises(c.exceptions.ValidationException, match="must start with a user message"):
            c.converse(modelId=MODEL, messages=[{"role": "assistant", "content": [{"text": "hi"}]}])
        with pytest.raises(c.exceptions.ValidationException, match="must alternate"):
            c.converse(modelId=MODEL, messages=[user("a"), user("b")])
        use = {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {}}}
        result = {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "x"}]}}
        history = [user("a"), {"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
        with pytest.raises(c.exceptions.ValidationException, match="toolConfig field must be defined"):
            c.converse(modelId=MODEL, messages=history)
        with pytest.raises(c.exceptions.ValidationException, match=r"at messages\.0 is empty"):
            c.converse(modelId=MODEL, messages=[{"role": "user", "content": []}])
        with pytest.raises(c.exceptions.ValidationException, match=r"at messages\.0\.content\.0 is blank"):
            c.converse(modelId=MODEL, messages=[user("  ")])
        with pytest.raises(c.exceptions.ValidationException, match="toolUse blocks are only allowed in assistant"):
            c.converse(modelId=MODEL, messages=[{"role": "user", "content": [use]}], toolConfig=TOOLS)
        wrong = {"toolResult": {"toolUseId": "tooluse_2", "content": [{"text": "x"}]}}
        with pytest.raises(c.exceptions.ValidationException, match="tooluse_2"):
            c.converse(modelId=MODEL, messages=[*history[:2], {"role": "user", "content": [wrong]}], toolConfig=TOOLS)


def test_echo_double_calls_the_named_tool_with_schema_valid_arguments(serve_text: ServeText) -> None:
    with serve_text("") as url:
        c = bedrock(url)
        for stream in (False, True):
            r = converse(c, stream, messages=[user(f"please call get_weather ({stream})")], toolConfig=TOOLS)
            use = next(b["toolUse"] for b in r["content"] if "toolUse" in b)
            assert use["name"] == "get_weather" and r["stopReason"] == "tool_use"
            jsonschema.validate(use["input"], SCHEMA)
        plain = c.converse(modelId=MODEL, messages=[user("just echo me")])
        assert plain["output"]["message"]["content"] == [{"text": "just echo me"}]


# ---------------------------------------------------------------- InvokeModel with Anthropic bodies


def anthropic_body(text: str, **kw: Any) -> dict[str, Any]:
    return {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 200,
        "messages": [{"role": "user", "content": text}],
        **kw,
    }


def test_invoke_model_whole_and_streamed(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        c = bedrock(url)
        body = anthropic_body("What is the weather in Quito?", tools=ANTHROPIC_TOOLS)
        r = c.invoke_model(modelId=MODEL, body=json.dumps(body))
        assert r["contentType"] == "application/json"
        first = json.loads(r["body"].read())
        assert first["id"].startswith("msg_bdrk_01") and first["stop_reason"] == "tool_use"
        assert [b["type"] for b in first["content"]] == ["thinking", "tool_use"]
        use = first["content"][1]
        assert use["id"].startswith("toolu_bdrk_01") and use["input"] == {"city": "Quito", "unit": "celsius"}
        assert first["usage"] == {
            "input_tokens": 30,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 12,
        }
        assert "caller" not in use  # the first-party API's field, not Bedrock's
        assert r["ResponseMetadata"]["HTTPHeaders"]["x-amzn-bedrock-cache-read-input-token-count"] == "0"
        headers = r["ResponseMetadata"]["HTTPHeaders"]
        assert headers["x-amzn-bedrock-input-token-count"] == "30"
        assert headers["x-amzn-bedrock-output-token-count"] == "12"
        body["messages"] += [
            {"role": "assistant", "content": first["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "sunny"}]},
        ]
        s = c.invoke_model_with_response_stream(modelId=MODEL, body=json.dumps(body))
        assert s["contentType"] == "application/json"
        events = [json.loads(e["chunk"]["bytes"]) for e in s["body"]]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert "ping" not in kinds
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert text == f"It is sunny in Quito, says {MODEL}."
    assert events[-1]["amazon-bedrock-invocationMetrics"]["outputTokenCount"] == 9


def test_invoke_model_refuses_other_bodies(serve_text: ServeText) -> None:
    with serve_text("") as url:
        c = bedrock(url)
        with pytest.raises(c.exceptions.ValidationException, match="anthropic_version"):
            c.invoke_model(modelId="amazon.titan-text-express-v1", body=json.dumps({"inputText": "hi"}))


def test_invoke_stream_fault(serve_text: ServeText) -> None:
    script = one_reply('text "a b c d"', 'stream error "boom" after 1 chunks')
    with serve_text(script) as url:
        s = bedrock(url).invoke_model_with_response_stream(modelId=MODEL, body=json.dumps(anthropic_body("hi")))
        with pytest.raises(botocore.exceptions.EventStreamError) as err:
            list(s["body"])
        s["body"].close()
    assert err.value.response["Error"] == {"Code": "modelStreamErrorException", "Message": "boom"}


# ---------------------------------------------------------------- anthropic.AnthropicBedrock


def anthropic_bedrock(url: str, **kw: Any) -> anthropic.AnthropicBedrock:
    return anthropic.AnthropicBedrock(
        base_url=url, aws_region="us-east-1", aws_access_key="x", aws_secret_key="x", **kw
    )


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_anthropic_bedrock_tool_loop(serve_text: ServeText, stream: bool) -> None:
    with serve_text(SCRIPT) as url, anthropic_bedrock(url) as c:
        messages: list[Any] = [{"role": "user", "content": "What is the weather in Bogota?"}]

        def ask() -> anthropic.types.Message:
            if stream:
                with c.messages.stream(model=MODEL, max_tokens=100, messages=messages, tools=ANTHROPIC_TOOLS) as s:
                    return s.get_final_message()
            return c.messages.create(model=MODEL, max_tokens=100, messages=messages, tools=ANTHROPIC_TOOLS)

        first = ask()
        assert [b.type for b in first.content] == ["thinking", "tool_use"]
        use = first.content[1]
        assert use.type == "tool_use" and use.input == {"city": "Bogota", "unit": "celsius"}
        assert use.id.startswith("toolu_bdrk_01") and first.id.startswith("msg_bdrk_01")
        messages.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]}
        )
        second = ask()
        assert second.content[0].text == f"It is sunny in Bogota, says {MODEL}."  # type: ignore[union-attr]
        assert (second.usage.input_tokens, second.usage.output_tokens) == (50, 9)


def test_anthropic_bedrock_errors(serve_text: ServeText) -> None:
    script = """
scenario "e":
    step throttled:
        repeat 1
        reply:
            error 429 "Too many requests"
    step fault:
        reply:
            text "a b c"
            stream error "model failed" after 1 chunks
"""
    hi: Any = [{"role": "user", "content": "hi"}]
    with serve_text(script) as url, anthropic_bedrock(url, max_retries=0) as c:
        with pytest.raises(anthropic.RateLimitError, match="Too many requests"):
            c.messages.create(model=MODEL, max_tokens=10, messages=hi)
        with pytest.raises(anthropic.APIStatusError, match="model failed"):
            with c.messages.stream(model=MODEL, max_tokens=10, messages=hi) as s:
                s.get_final_message()


# ---------------------------------------------------------------- scenarios/examples/bedrock_throttled_agent.mockllm

EXAMPLE = Path(__file__).resolve().parent.parent / "scenarios" / "examples" / "bedrock_throttled_agent.mockllm"


def test_example_throttled_agent(serve_text: ServeText) -> None:
    """What the example promises: boto3 retries the 429 by itself; the toolUse is answered by id; the
    first streamed answer breaks with a modelStreamErrorException after three pieces; asking again
    gets the whole answer."""
    lookup: Any = {"tools": [{"toolSpec": {"name": "lookup_order", "inputSchema": {"json": {"type": "object"}}}}]}
    with serve_text(EXAMPLE.read_text(encoding="utf-8")) as url:
        c = bedrock(url)
        messages: list[Any] = [user("Where is order 1234?")]
        first = c.converse(modelId=MODEL, messages=messages, toolConfig=lookup)
        assert first["ResponseMetadata"]["RetryAttempts"] == 1
        [use] = [b["toolUse"] for b in first["output"]["message"]["content"]]
        assert use["input"] == {"order_id": "1234"}
        messages.append(first["output"]["message"])
        result = {"toolUseId": use["toolUseId"], "content": [{"text": "shipped"}]}
        messages.append({"role": "user", "content": [{"toolResult": result}]})
        pieces: list[str] = []
        with pytest.raises(botocore.exceptions.EventStreamError, match="modelStreamErrorException"):
            for event in c.converse_stream(modelId=MODEL, messages=messages, toolConfig=lookup)["stream"]:
                pieces += [event["contentBlockDelta"]["delta"]["text"]] if "contentBlockDelta" in event else []
        assert pieces == ["Order", " 1234", " has"]
        again = collect(c.converse_stream(modelId=MODEL, messages=messages, toolConfig=lookup)["stream"])
        assert again["content"] == [{"text": "Order 1234 has shipped and arrives tomorrow."}]


def test_arn_model_ids_arrive_decoded(serve_text: ServeText) -> None:
    """boto3 percent-encodes the whole model id (`:` and `/`); the scenario sees it as written."""
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0"
    script = f'scenario "a":\n    step a:\n        when:\n            model is "{arn}"\n'
    script += '        reply:\n            text "ok"\n'
    with serve_text(script) as url:
        r = bedrock(url).converse(modelId=arn, messages=[user("hi")])
    assert r["output"]["message"]["content"] == [{"text": "ok"}]


def test_disconnect_mid_stream(serve_text: ServeText) -> None:
    script = one_reply('text "one two three four"', "disconnect after 2 chunks")
    with serve_text(script) as url:
        texts: list[str] = []
        stream = bedrock(url).converse_stream(modelId=MODEL, messages=[user("hi")])["stream"]
        with pytest.raises(urllib3.exceptions.ProtocolError, match="ended prematurely"):  # boto3 does not wrap it
            for event in stream:
                texts += [event["contentBlockDelta"]["delta"]["text"]] if "contentBlockDelta" in event else []
    assert texts == ["one", " two"]


# ---------------------------------------------------------------- InvokeModel with embedding bodies


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_titan_and_cohere_embeddings(serve_text: ServeText) -> None:
    """Unscripted: the default embedder's unit vectors, of the model's usual or the requested size."""
    with serve_text("") as url:
        c = bedrock(url)

        def titan(text: str, **kw: Any) -> dict[str, Any]:
            r = c.invoke_model(modelId="amazon.titan-embed-text-v2:0", body=json.dumps({"inputText": text, **kw}))
            out: dict[str, Any] = json.loads(r["body"].read())
            return out

        cat, kitten = titan("the cat sat on the mat"), titan("a cat on a mat")
        assert len(cat["embedding"]) == 1024 and cat["embeddingsByType"]["float"] == cat["embedding"]
        assert cat["inputTextTokenCount"] >= 1
        assert len(titan("x", dimensions=256)["embedding"]) == 256
        assert cosine(cat["embedding"], kitten["embedding"]) > cosine(cat["embedding"], titan("tax law")["embedding"])
        v1 = json.loads(c.invoke_model(modelId="amazon.titan-embed-text-v1", body='{"inputText": "hi"}')["body"].read())
        assert len(v1["embedding"]) == 1536 and "embeddingsByType" not in v1

        body = {"texts": ["first", "second"], "input_type": "search_document"}
        r = c.invoke_model(modelId="cohere.embed-english-v3", body=json.dumps(body))
        cohere = json.loads(r["body"].read())
        assert cohere["response_type"] == "embeddings_floats" and cohere["texts"] == ["first", "second"]
        assert [len(v) for v in cohere["embeddings"]] == [1024, 1024]
        typed = {**body, "embedding_types": ["float"]}
        r = c.invoke_model(modelId="cohere.embed-english-v3", body=json.dumps(typed))
        assert json.loads(r["body"].read())["embeddings"]["float"] == cohere["embeddings"]

        with pytest.raises(c.exceptions.ValidationException, match="inputText"):
            c.invoke_model(modelId="amazon.titan-embed-text-v2:0", body=json.dumps({"inputText": 3}))


def test_scripted_embedding(serve_text: ServeText) -> None:
    script = scripted_vector("bedrock")
    with serve_text(script) as url:
        r = bedrock(url).invoke_model(modelId="amazon.titan-embed-text-v2:0", body=json.dumps({"inputText": "hi"}))
    assert json.loads(r["body"].read())["embedding"] == pytest.approx([0.6, 0.8], abs=1e-6)


def test_conversation_header_through_a_boto3_event_hook(serve_text: ServeText) -> None:
    """Two chats with the same opening share one state, unless each sends `x-mockllm-conversation`
    (boto3 adds a header from a `before-sign` hook)."""
    script = 'scenario "c":\n    step a:\n        reply:\n            text "first"\n'
    script += '    step b:\n        reply:\n            text "second"\n'
    with serve_text(script) as url:
        answers = []
        for name in ("one", "two"):
            c = bedrock(url)

            def tag(request: Any, name: str = name, **_: Any) -> None:
                request.headers["x-mockllm-conversation"] = name

            c.meta.events.register("before-sign.bedrock-runtime.*", tag)
            answers.append(c.converse(modelId=MODEL, messages=[user("same opening")])["output"]["message"])
    assert [m["content"] for m in answers] == [[{"text": "first"}], [{"text": "first"}]]


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse_stream"])
def test_refusal_and_null_arguments(serve_text: ServeText, stream: bool) -> None:
    script = """
scenario "r":
    step refuse:
        when:
            last user message contains "forbidden"
        reply:
            refusal "I can't help with that."
scenario "n":
    step null:
        when:
            last user message contains "ping"
        reply:
            tool call ping null
"""
    with serve_text(script) as url:
        c = bedrock(url)
        refused = converse(c, stream, messages=[user(f"forbidden {stream}")])
        assert refused["content"] == [{"text": "I can't help with that."}]
        assert refused["stopReason"] == "content_filtered"
        pinged = converse(c, stream, messages=[user(f"ping {stream}")], toolConfig=TOOLS)
        assert [b["toolUse"]["input"] for b in pinged["content"]] == [{}]


def test_count_tokens_of_a_converse_and_an_invoke_model_body(serve_text: ServeText) -> None:
    """CountTokens (botocore's `count_tokens`): the same text counts the same in either body; a longer
    history counts more; a body the operation would refuse is a ValidationException."""
    with serve_text(SCRIPT) as url:
        c = bedrock(url)
        short = c.count_tokens(modelId=MODEL, input={"converse": {"messages": [user("x" * 40)]}})
        longer = c.count_tokens(
            modelId=MODEL, input={"converse": {"messages": [user("x" * 400)], "system": [{"text": "be brief"}]}}
        )
        body = json.dumps(anthropic_body("x" * 40)).encode()
        invoked = c.count_tokens(modelId=MODEL, input={"invokeModel": {"body": body}})
        with pytest.raises(botocore.exceptions.ClientError) as info:
            c.count_tokens(modelId=MODEL, input={"converse": {"messages": [{"role": "robot", "content": []}]}})
    assert short["inputTokens"] >= 10
    assert longer["inputTokens"] > short["inputTokens"] + 80
    assert invoked["inputTokens"] == short["inputTokens"]
    assert info.value.response["Error"]["Code"] == "ValidationException"
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
