"""Vertex AI Gemini through the official `google-genai` SDK with `vertexai=True`, on a real server:
project/location/publisher paths (v1 and v1beta1, and express mode's), OAuth and API-key auth,
streaming, tool loops, faults, retries, countTokens, embeddings and the echo double. Credentials are
a fixed OAuth token (`google.oauth2.credentials.Credentials(token=…)`): no network, no ADC."""

from __future__ import annotations

import asyncio
import datetime
import json
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jsonschema
import pytest
import sdk_errors
from conftest import ServeText
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from provider_cases import CITY_CALL, SUNNY_BY_MODEL, limited_then, scripted_vector, tool_loop
from sdk_clients import conversation, opened
from sdk_clients import vertex as vertex_client

MODEL = "gemini-2.5-flash"
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def vertex(url: str, api_version: str | None = None, **options: Any) -> genai.Client:
    return vertex_client(url, conversation(), api_version=api_version, **options)


def tool_config(*decls: types.FunctionDeclaration) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=list(decls))],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


GET_WEATHER = types.FunctionDeclaration(name="get_weather", parameters_json_schema=WEATHER)
GET_TIME = types.FunctionDeclaration(name="get_time", parameters_json_schema={"type": "object"})

SCRIPT = (
    tool_loop("vertex", [CITY_CALL], SUNNY_BY_MODEL)
    + """
scenario "Two at once":
    step both:
        when:
            last user message contains "both"
        reply:
            tool call get_weather {"city": "Oslo"}
            tool call get_time {}
        always

scenario "Plain":
    step plain:
        when:
            last user message contains "hello"
        reply:
            text "Hello from Vertex."
            usage 12 in, 4 out
        always
"""
)


@pytest.mark.parametrize("api_version", [None, "v1"], ids=["v1beta1", "v1"])
def test_text_and_usage(serve_text: ServeText, api_version: str | None) -> None:
    with serve_text(SCRIPT) as url:
        client = vertex(url, api_version)  # held: a client nobody holds is closed under the call
        out = client.models.generate_content(model=MODEL, contents="hello")
    assert out.text == "Hello from Vertex."
    assert out.model_version == MODEL
    usage = out.usage_metadata
    assert usage is not None and (usage.prompt_token_count, usage.candidates_token_count) == (12, 4)
    assert usage.traffic_type == types.TrafficType.ON_DEMAND
    assert out.create_time is not None and out.create_time.tzinfo == datetime.UTC


def test_stream(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        client = vertex(url)
        chunks = list(client.models.generate_content_stream(model=MODEL, contents="hello"))
    assert [c.text for c in chunks] == ["Hello", " from", " Vertex."]
    last = chunks[-1]
    assert last.candidates and last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata is not None and last.usage_metadata.total_token_count == 16


def test_async_stream(serve_text: ServeText) -> None:
    async def run(url: str) -> str:
        pieces = []
        async with vertex(url).aio as client:
            async for chunk in await client.models.generate_content_stream(model=MODEL, contents="hello"):
                pieces.append(chunk.text or "")
        return "".join(pieces)

    with serve_text(SCRIPT) as url:
        assert asyncio.run(run(url)) == "Hello from Vertex."


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_tool_loop(serve_text: ServeText, stream: bool) -> None:
    with serve_text(SCRIPT) as url:
        client = vertex(url)
        chat = client.chats.create(model=MODEL, config=tool_config(GET_WEATHER, GET_TIME))
        if stream:
            first_chunks = list(chat.send_message_stream("What is the weather in Lima?"))
            calls = [call for chunk in first_chunks for call in chunk.function_calls or []]
        else:
            calls = chat.send_message("What is the weather in Lima?").function_calls or []
        assert [(c.name, c.args) for c in calls] == [("get_weather", {"city": "Lima"})]
        result = types.Part.from_function_response(name="get_weather", response={"result": "sunny"})
        if stream:
            answer = "".join(chunk.text or "" for chunk in chat.send_message_stream(result))
        else:
            answer = chat.send_message(result).text or ""
    assert answer == f"Sunny in Lima, says {MODEL}."


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_parallel_tool_calls(serve_text: ServeText, stream: bool) -> None:
    with serve_text(SCRIPT) as url:
        client = vertex(url)
        config = tool_config(GET_WEATHER, GET_TIME)
        if stream:
            chunks = client.models.generate_content_stream(model=MODEL, contents="both please", config=config)
            calls = [call for chunk in chunks for call in chunk.function_calls or []]
        else:
            calls = (
                client.models.generate_content(model=MODEL, contents="both please", config=config).function_calls or []
            )
    assert [(c.name, c.args) for c in calls] == [("get_weather", {"city": "Oslo"}), ("get_time", {})]


def test_retries_through_429_with_the_sdks_retry_options(serve_text: ServeText) -> None:
    script = limited_then("Resource exhausted. Please try again later.", "finally", after="10ms")
    retry = types.HttpRetryOptions(attempts=3, initial_delay=0.01, max_delay=0.05, jitter=0)
    with serve_text(script) as url:
        plain, retrying = vertex(url), vertex(url, retry_options=retry)
        with pytest.raises(genai_errors.ClientError) as info:  # no retry options: the SDK does not retry
            plain.models.generate_content(model=MODEL, contents="x")
        assert (info.value.code, info.value.status) == (429, "RESOURCE_EXHAUSTED")
        out = retrying.models.generate_content(model=MODEL, contents="x")
    assert out.text == "finally"


@pytest.mark.parametrize(("status", "name"), [(500, "INTERNAL"), (503, "UNAVAILABLE")])
def test_server_errors(serve_text: ServeText, status: int, name: str) -> None:
    script = sdk_errors.error_script(status)
    with serve_text(script) as url:
        client = vertex(url)
        with pytest.raises(genai_errors.ServerError) as info:
            client.models.generate_content(model=MODEL, contents="x")
    assert (info.value.code, info.value.status, info.value.message) == (status, name, f"boom {status}")


def test_faults_mid_stream(serve_text: ServeText) -> None:
    script = """
scenario "s":
    step broken:
        when:
            last user message contains "break"
        reply:
            text "one two three four five"
            stream error "exploded mid-stream" after 2 chunks
    step cut:
        when:
            last user message contains "cut"
        reply:
            text "one two three four five"
            disconnect after 2 chunks
"""
    with serve_text(script) as url:
        client = vertex(url)
        got: list[str] = []
        with pytest.raises(genai_errors.ServerError, match="exploded mid-stream"):
            for chunk in client.models.generate_content_stream(model=MODEL, contents="break it"):
                got.append(chunk.text or "")
        assert "".join(got) == "one two"
        with pytest.raises(httpx2.RemoteProtocolError):  # the transport's error: the stream ended mid-message
            list(client.models.generate_content_stream(model=MODEL, contents="cut it"))


def test_auth_as_google_answers(serve_text: ServeText) -> None:
    path = f"/v1/projects/p/locations/us-central1/publishers/google/models/{MODEL}:generateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
    with serve_text(SCRIPT) as url:
        missing = httpx.post(url + path, json=body)
        assert missing.status_code == 401
        assert missing.json()["error"]["status"] == "UNAUTHENTICATED"
        express = opened(genai.Client(vertexai=True, api_key="test-key", http_options=types.HttpOptions(base_url=url)))
        assert express.models.generate_content(model=MODEL, contents="hello").text == "Hello from Vertex."


def test_count_tokens(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        client = vertex(url)
        counted = client.models.count_tokens(model=MODEL, contents="one two three four five six seven eight")
    assert counted.total_tokens is not None and counted.total_tokens > 0


def test_embeddings(serve_text: ServeText) -> None:
    script = scripted_vector("vertex", "embedder")
    with serve_text(script) as url:
        client = vertex(url)
        scripted = client.models.embed_content(model="embedder", contents="anything")
        gemini = client.models.embed_content(model="gemini-embedding-001", contents=["red apple", "green apple"])
        older = client.models.embed_content(
            model="text-embedding-005", contents=["a", "b"], config=types.EmbedContentConfig(output_dimensionality=64)
        )
    assert scripted.embeddings and scripted.embeddings[0].values == pytest.approx([0.6, 0.8])
    assert [len(e.values or []) for e in gemini.embeddings or []] == [3072, 3072]
    assert [len(e.values or []) for e in older.embeddings or []] == [64, 64]  # through :predict


# ---------------------------------------------------------------- the echo double

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "calendar_create_event.json").read_text())


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_echo_double(serve_text: ServeText, stream: bool) -> None:
    config = tool_config(types.FunctionDeclaration(name="create_event", parameters_json_schema=SCHEMA))
    with serve_text("") as url:
        client = vertex(url)
        if stream:
            text = "".join(
                c.text or "" for c in client.models.generate_content_stream(model=MODEL, contents="Say this")
            )
            chunks = client.models.generate_content_stream(model=MODEL, contents="create event please", config=config)
            calls = [call for chunk in chunks for call in chunk.function_calls or []]
        else:
            text = client.models.generate_content(model=MODEL, contents="Say this").text or ""
            out = client.models.generate_content(model=MODEL, contents="create event please", config=config)
            calls = out.function_calls or []
    assert text == "Say this"
    (call,) = calls
    assert call.name == "create_event"
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(call.args)
