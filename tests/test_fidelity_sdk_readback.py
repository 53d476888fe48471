"""Each recorded request of Azure, Vertex, Bedrock, Cohere and Mistral, sent through the provider's
official SDK to a mock scripted with the recorded answer (issue 34): the SDK reads the answer back
without error, and what it hands the application is what the real API gave (the text, the tool calls,
the error's status). :mod:`test_fidelity_recordings` compares the raw answers' structure; this is the
same traffic as the SDKs see it."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import pytest
from conftest import compile_text
from sdk_clients import azure, bedrock, cohere_v2, mistral, oa, vertex
from test_fidelity_recordings import RECORDINGS, _Answer, _read_back, scenario_for

from mockllm.server.background import BackgroundServer

PROVIDERS = ("az_", "br_", "co_", "ms_", "vx_")


def _cases() -> list[str]:
    if not RECORDINGS.is_dir():
        return []
    return sorted(p.stem for p in RECORDINGS.glob("*.json") if p.stem.startswith(PROVIDERS))


class Read:
    """What an SDK handed back: the text, the tool calls' names and arguments, an error's status."""

    def __init__(self) -> None:
        self.text = ""
        self.calls: list[tuple[str, Any]] = []
        self.status: int | None = None


def _azure(url: str, rec: dict[str, Any], got: Read) -> None:
    import openai

    request = rec["request"]
    body = dict(request["body"])
    path = request["path"]
    if path.startswith("/openai/deployments/"):
        version = request["query"].removeprefix("api-version=")
        client: openai.OpenAI = azure(url, api_version=version)
    else:
        client = oa(url + "/openai")  # oa adds /v1: the v1 route
    try:
        if body.pop("stream", False):
            for chunk in client.chat.completions.create(**body, stream=True):
                for choice in chunk.choices:
                    got.text += choice.delta.content or ""
            return
        out = client.chat.completions.create(**body)
    except openai.APIStatusError as e:
        got.status = e.status_code
        return
    message = out.choices[0].message
    got.text = message.content or ""
    got.calls = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]  # type: ignore[union-attr]


def _bedrock(url: str, rec: dict[str, Any], got: Read) -> None:
    from botocore.exceptions import ClientError

    request = rec["request"]
    model, operation = unquote(request["path"]).removeprefix("/model/").rsplit("/", 1)
    client = bedrock(url)
    body = request["body"]
    try:
        if operation == "converse":
            out = client.converse(modelId=model, **body)
            for block in out["output"]["message"]["content"]:
                got.text += block.get("text", "")
        elif operation == "converse-stream":
            calls: dict[int, list[str]] = {}
            for event in client.converse_stream(modelId=model, **body)["stream"]:
                if "contentBlockStart" in event and "toolUse" in event["contentBlockStart"]["start"]:
                    start = event["contentBlockStart"]
                    calls[start["contentBlockIndex"]] = [start["start"]["toolUse"]["name"], ""]
                elif "contentBlockDelta" in event:
                    delta = event["contentBlockDelta"]
                    got.text += delta["delta"].get("text", "")
                    if "toolUse" in delta["delta"]:
                        calls[delta["contentBlockIndex"]][1] += delta["delta"]["toolUse"]["input"]
            got.calls = [(name, json.loads(args)) for name, args in (calls[i] for i in sorted(calls))]
        else:
            stream = client.invoke_model_with_response_stream(modelId=model, body=json.dumps(body))["body"]
            for event in stream:
                inner = json.loads(event["chunk"]["bytes"])
                if inner["type"] == "content_block_delta":
                    got.text += inner["delta"].get("text", "")
    except ClientError as e:
        got.status = e.response["ResponseMetadata"]["HTTPStatusCode"]


def _cohere(url: str, rec: dict[str, Any], got: Read) -> None:
    import cohere

    body = dict(rec["request"]["body"])
    client = cohere_v2(url)
    if rec["api"] == "cohere-embed":
        out = client.embed(**{k: v for k, v in body.items() if v is not None})
        got.text = f"{len(out.embeddings.float_ or [])} vectors"
        return
    try:
        if body.pop("stream", False):
            calls: dict[int, list[str]] = {}
            for event in client.chat_stream(**body):
                if event.type == "tool-plan-delta":
                    got.text += event.delta.message.tool_plan  # type: ignore[union-attr]
                elif event.type == "content-delta":
                    got.text += event.delta.message.content.text  # type: ignore[union-attr]
                elif event.type == "tool-call-start":
                    calls[event.index] = [event.delta.message.tool_calls.function.name, ""]  # type: ignore[union-attr]
                elif event.type == "tool-call-delta":
                    calls[event.index][1] += event.delta.message.tool_calls.function.arguments  # type: ignore[union-attr]
                elif event.type == "message-end" and event.delta.finish_reason == "ERROR":  # type: ignore[union-attr]
                    got.status = 200  # the in-band error, read as the SDK hands it over
            got.calls = [(name, json.loads(args)) for name, args in (calls[i] for i in sorted(calls))]
            return
        out = client.chat(**body)
    except cohere.core.ApiError as e:
        got.status = e.status_code
        return
    got.text = "".join(c.text for c in out.message.content or [] if c.type == "text")


def _mistral(url: str, rec: dict[str, Any], got: Read) -> None:
    body = dict(rec["request"]["body"])
    client = mistral(url)
    if body.pop("stream", False):
        for event in client.chat.stream(**body):
            delta = event.data.choices[0].delta
            got.text += delta.content if isinstance(delta.content, str) else ""
            for call in delta.tool_calls or []:
                got.calls.append((call.function.name, json.loads(str(call.function.arguments))))
        return
    out = client.chat.complete(**body)
    message = out.choices[0].message
    got.text = message.content if isinstance(message.content, str) else ""
    got.calls = [(c.function.name, json.loads(str(c.function.arguments))) for c in message.tool_calls or []]


def _vertex(url: str, rec: dict[str, Any], got: Read) -> None:
    from google.genai import types

    request = rec["request"]
    model = request["path"].rsplit("/models/", 1)[1].split(":")[0]
    body = request["body"]
    client = vertex(url)
    if rec["api"] == "vertex-embed":
        texts = [p["text"] for p in body["content"]["parts"]]
        out = client.models.embed_content(model=model, contents=texts)
        got.text = f"{len(out.embeddings or [])} vectors"
        return
    fields = {k: v for k, v in body.items() if k in ("systemInstruction", "tools", "toolConfig")}
    config = types.GenerateContentConfig.model_validate({**body.get("generationConfig", {}), **fields})
    answer = client.models.generate_content(model=model, contents=body["contents"], config=config)
    got.text = answer.text or ""
    got.calls = [(c.name, c.args) for c in answer.function_calls or []]


READERS = {"azure": _azure, "bedrock": _bedrock, "cohere": _cohere, "mistral": _mistral, "vertex": _vertex}


@pytest.mark.parametrize("case", _cases())
def test_the_sdk_reads_the_recorded_answer_back(case: str) -> None:
    rec = json.loads((RECORDINGS / f"{case}.json").read_text())
    expected = _Answer()
    if not rec["api"].endswith("-embed"):
        _read_back(rec, expected)
    got = Read()
    with BackgroundServer(compile_text(scenario_for(rec))) as server:
        READERS[rec["provider"]](server.url, rec, got)
    if rec["response"]["status"] >= 400:
        assert got.status == rec["response"]["status"]
    elif expected.stream_error is not None:
        assert got.status == 200, "the SDK never handed over the stream's error"
        assert got.text == expected.text
    elif rec["api"].endswith("-embed"):
        assert got.text == "1 vectors"
    else:
        assert got.status is None
        assert got.text == expected.text
        assert got.calls == expected.calls


def test_every_recording_of_the_five_is_read() -> None:
    """All eighteen recordings of the five providers are found (a renamed folder fails here, not silently)."""
    if not RECORDINGS.is_dir():
        pytest.skip(f"no recordings at {RECORDINGS}")
    assert len(_cases()) >= 18
    assert {c[:3] for c in _cases()} == set(PROVIDERS)
