"""Azure OpenAI through the official `openai` SDK's `AzureOpenAI` and `AsyncAzureOpenAI` clients, on a
real server: deployment routes with `api-version`, the v1 routes, Azure's auth, error shape and
content-filter fields, streaming, tool loops, faults, retries, embeddings and the echo double."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import openai
import pytest
import sdk_errors
from conftest import ServeText
from provider_cases import CITY_CALL, SUNNY_BY_MODEL, ask, limited_then, scripted_vector, tool_loop
from sdk_clients import AZURE_API_VERSION as VERSION
from sdk_clients import azure as azure_client
from sdk_clients import conversation, opened

SAFE = {"filtered": False, "severity": "safe"}
OUTPUT_FILTERS = {"hate": SAFE, "self_harm": SAFE, "sexual": SAFE, "violence": SAFE}
PROMPT_FILTERS = [
    {
        "prompt_index": 0,
        "content_filter_results": {**OUTPUT_FILTERS, "jailbreak": {"filtered": False, "detected": False}},
    }
]
WEATHER: Any = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS: Any = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
]


def azure(url: str, **kw: Any) -> openai.AzureOpenAI:
    return azure_client(url, conversation(), **kw)


SCRIPT = (
    tool_loop("azure", [CITY_CALL, "stream by 3 characters"], SUNNY_BY_MODEL, tools_include=True)
    + """
scenario "Two at once":
    step both:
        when:
            last user message contains "both"
        reply:
            tool call get_weather {"city": "Oslo"}
            tool call get_time {}
            interleave calls
        always

scenario "Plain":
    step plain:
        when:
            last user message contains "hello"
        reply:
            text "Hello from Azure."
            usage 12 in, 4 out
        always

scenario "Filtered":
    step filtered:
        when:
            last user message contains "violent"
        reply:
            text "I cannot"
            finish content_filter
        always
"""
)


def test_text_usage_and_content_filter_fields(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        raw = azure(url).chat.completions.with_raw_response.create(model="gpt4o-prod", messages=ask("hello"))
    out = raw.parse()
    assert out.choices[0].message.content == "Hello from Azure."
    assert out.model == "gpt4o-prod"  # the deployment
    assert out.usage is not None and (out.usage.prompt_tokens, out.usage.completion_tokens) == (12, 4)
    extra = out.model_dump()
    assert extra["prompt_filter_results"] == PROMPT_FILTERS
    undetected = {"filtered": False, "detected": False}
    assert extra["choices"][0]["content_filter_results"] == {
        **OUTPUT_FILTERS,
        "protected_material_code": undetected,
        "protected_material_text": undetected,
    }
    assert len(raw.headers["apim-request-id"]) == 36


def test_deployment_in_the_path_is_the_model_the_scenario_sees(serve_text: ServeText) -> None:
    script = """
scenario "d":
    step a:
        when:
            model is "prod-gpt"
        reply:
            text "{{request.model}}"
"""
    with serve_text(script) as url:
        client = azure(url, azure_deployment="prod-gpt")
        out = client.chat.completions.create(model="what-the-body-says", messages=ask("x"))
        assert out.choices[0].message.content == "prod-gpt"
        # a body without "model", as curl users send it: the deployment still names the model
        body = httpx.post(
            f"{url}/openai/deployments/prod-gpt/chat/completions?api-version={VERSION}",
            headers={"api-key": "k"},
            json={"messages": ask("again")},
        )
    assert body.status_code == 200, body.text
    assert body.json()["model"] == "prod-gpt"


def test_stream_sends_prompt_filter_results_first_and_usage_last(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        chunks = list(
            azure(url).chat.completions.create(
                model="dep", messages=ask("hello"), stream=True, stream_options={"include_usage": True}
            )
        )
    first = chunks[0].model_dump()
    assert (first["id"], first["model"], first["choices"]) == ("", "", [])
    assert first["prompt_filter_results"] == PROMPT_FILTERS
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello from Azure."
    said = [c.model_dump()["choices"][0] for c in chunks if c.choices and c.choices[0].delta.content]
    assert all(choice["content_filter_results"] == OUTPUT_FILTERS for choice in said)
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 4


def test_async_client_streams(serve_text: ServeText) -> None:
    async def run(url: str) -> str:
        client = openai.AsyncAzureOpenAI(
            azure_endpoint=url, api_version=VERSION, api_key="k", default_headers=conversation()
        )
        async with client:
            async with client.chat.completions.stream(model="dep", messages=ask("hello")) as stream:
                deltas = [e.delta async for e in stream if e.type == "content.delta"]
                final = await stream.get_final_completion()
        assert [d for d in deltas if d] == ["Hello", " from", " Azure."]  # word by word
        return final.choices[0].message.content or ""

    with serve_text(SCRIPT) as url:
        assert asyncio.run(run(url)) == "Hello from Azure."


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_tool_loop(serve_text: ServeText, stream: bool) -> None:
    with serve_text(SCRIPT) as url:
        client = azure(url)
        messages: list[Any] = ask("What is the weather in Lima?")
        if stream:
            with client.chat.completions.stream(model="gpt4o", messages=messages, tools=TOOLS) as s:
                first = s.get_final_completion().choices[0]
        else:
            first = client.chat.completions.create(model="gpt4o", messages=messages, tools=TOOLS).choices[0]
        assert first.finish_reason == "tool_calls"
        (call,) = first.message.tool_calls or []
        assert call.type == "function" and call.id.startswith("call_")
        assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Lima"})
        messages += [first.message.model_dump(exclude_none=True)]
        messages += [{"role": "tool", "tool_call_id": call.id, "content": "sunny, 21C"}]
        if stream:
            usage: Any = {"include_usage": True}
            with client.chat.completions.stream(
                model="gpt4o", messages=messages, tools=TOOLS, stream_options=usage
            ) as s:
                answer = s.get_final_completion()
        else:
            answer = client.chat.completions.create(model="gpt4o", messages=messages, tools=TOOLS)
    assert answer.choices[0].message.content == "Sunny in Lima, says gpt4o."
    assert answer.usage is not None and answer.usage.total_tokens == 47


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_parallel_tool_calls(serve_text: ServeText, stream: bool) -> None:
    with serve_text(SCRIPT) as url:
        client = azure(url)
        if stream:
            with client.chat.completions.stream(model="dep", messages=ask("both please"), tools=TOOLS) as s:
                choice = s.get_final_completion().choices[0]
        else:
            choice = client.chat.completions.create(model="dep", messages=ask("both please"), tools=TOOLS).choices[0]
    calls = choice.message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [  # type: ignore[union-attr]
        ("get_weather", {"city": "Oslo"}),
        ("get_time", {}),
    ]
    assert len({c.id for c in calls}) == 2


def test_finish_content_filter_marks_the_answer_filtered(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        whole = azure(url).chat.completions.create(model="dep", messages=ask("something violent"))
        chunks = list(azure(url).chat.completions.create(model="dep", messages=ask("more violent"), stream=True))
    assert whole.choices[0].finish_reason == "content_filter"
    results = whole.model_dump()["choices"][0]["content_filter_results"]
    assert results["violence"] == {"filtered": True, "severity": "medium"}
    last = chunks[-1].model_dump()["choices"][0]
    assert last["finish_reason"] == "content_filter" and last["content_filter_results"]["violence"]["filtered"]


def test_retries_through_429_honouring_retry_after(serve_text: ServeText) -> None:
    script = limited_then(
        "Requests to the ChatCompletions_Create Operation have exceeded the rate limit.", "finally", after="300ms"
    )
    with serve_text(script) as url:
        started = time.monotonic()
        out = azure(url).chat.completions.create(model="dep", messages=ask("x"))
        elapsed = time.monotonic() - started
    assert out.choices[0].message.content == "finally"
    assert elapsed >= 0.55  # two retry-after waits of 300 ms (wall clock only from below: see conftest.SleepLog)


@pytest.mark.parametrize(
    ("status", "exc", "shape"),
    [
        (400, openai.BadRequestError, "openai"),
        (401, openai.AuthenticationError, "azure"),
        (404, openai.NotFoundError, "azure"),
        (429, openai.RateLimitError, "azure"),
        (500, openai.InternalServerError, "openai"),
        (503, openai.InternalServerError, "openai"),
    ],
)
def test_errors_in_azures_shape(serve_text: ServeText, status: int, exc: type[Exception], shape: str) -> None:
    script = sdk_errors.error_script(status)
    with serve_text(script) as url:
        with pytest.raises(exc) as info:
            azure(url, max_retries=0).chat.completions.create(model="dep", messages=ask("x"))
    error = info.value
    assert isinstance(error, openai.APIStatusError) and error.status_code == status
    assert error.message.endswith(f"boom {status}") or f"boom {status}" in str(error)
    if shape == "azure":  # the gateway's shape: a code naming the status, no type
        assert error.body == {"code": str(status), "message": f"boom {status}"}
        assert error.code == str(status)
    else:
        assert isinstance(error.body, dict) and error.body["type"] in ("invalid_request_error", "server_error")


def test_retries_through_a_5xx(serve_text: ServeText) -> None:
    script = limited_then("The service is temporarily unavailable.", "back", 503, after="10ms", times=1)
    with serve_text(script) as url:
        assert azure(url).chat.completions.create(model="dep", messages=ask("x")).choices[0].message.content == "back"


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
            tool call get_weather {"city": "Oslo", "unit": "celsius"}
            stream by 4 characters
            disconnect after 2 chunks
"""
    with serve_text(script) as url:
        client = azure(url, max_retries=0)
        got: list[str] = []
        with pytest.raises(openai.APIError, match="exploded mid-stream"):
            for chunk in client.chat.completions.create(model="dep", messages=ask("break it"), stream=True):
                if chunk.choices and chunk.choices[0].delta.content:
                    got.append(chunk.choices[0].delta.content)
        assert "".join(got) == "one two"
        with pytest.raises(openai.APIConnectionError):
            with client.chat.completions.stream(model="dep", messages=ask("cut it"), tools=TOOLS) as s:
                s.get_final_completion()


def test_auth_and_api_version_as_azure_answers(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        route = f"{url}/openai/deployments/dep/chat/completions"
        body = {"messages": ask("hello")}
        no_key = httpx.post(f"{route}?api-version={VERSION}", json=body)
        assert no_key.status_code == 401 and no_key.json()["error"]["code"] == "401"
        bearer = httpx.post(f"{route}?api-version={VERSION}", json=body, headers={"authorization": "Bearer t"})
        assert bearer.status_code == 200
        no_version = httpx.post(route, json=body, headers={"api-key": "k"})
        assert no_version.status_code == 404
        assert no_version.json() == {"error": {"code": "404", "message": "Resource not found"}}
        with pytest.raises(openai.BadRequestError) as info:
            azure(url, api_version="2024-13-45").chat.completions.create(model="dep", messages=ask("hello"))
        assert info.value.body == {"code": "BadRequest", "message": "API version not supported"}
        # the history is checked as OpenAI checks it, in OpenAI's shape
        with pytest.raises(openai.BadRequestError) as bad:
            azure(url).chat.completions.create(
                model="dep", messages=[{"role": "tool", "tool_call_id": "call_x", "content": "sunny"}]
            )
        assert isinstance(bad.value.body, dict) and bad.value.body["type"] == "invalid_request_error"


def test_v1_routes_take_the_openai_client(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        client = opened(openai.OpenAI(base_url=f"{url}/openai/v1/", api_key="k", default_headers=conversation()))
        out = client.chat.completions.create(model="gpt4o-prod", messages=ask("hello"))
        vectors = client.embeddings.create(model="text-embedding-3-large", input=["red apple", "green apple"])
    assert out.choices[0].message.content == "Hello from Azure."
    assert out.model_dump()["prompt_filter_results"] == PROMPT_FILTERS
    assert [len(v.embedding) for v in vectors.data] == [3072, 3072]


def test_embeddings_on_a_deployment(serve_text: ServeText) -> None:
    script = scripted_vector("azure", "embedder")
    with serve_text(script) as url:
        client = azure(url)
        scripted = client.embeddings.create(model="embedder", input="anything")
        default = client.embeddings.create(model="text-embedding-3-small", input="a", dimensions=256)
    assert scripted.data[0].embedding == pytest.approx([0.6, 0.8])
    assert scripted.model == "embedder"
    assert len(default.data[0].embedding) == 256


# ---------------------------------------------------------------- the echo double


SCHEMA = json.loads((Path(__file__).parent / "schemas" / "calendar_create_event.json").read_text())


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_echo_double(serve_text: ServeText, stream: bool) -> None:
    tools: Any = [{"type": "function", "function": {"name": "create_event", "parameters": SCHEMA}}]
    with serve_text("") as url:
        client = azure(url)
        if stream:
            with client.chat.completions.stream(model="dep", messages=ask("Say this back")) as s:
                text = s.get_final_completion().choices[0].message.content
            with client.chat.completions.stream(model="dep", messages=ask("create event please"), tools=tools) as s:
                calls = s.get_final_completion().choices[0].message.tool_calls or []
        else:
            text = client.chat.completions.create(model="dep", messages=ask("Say this back")).choices[0].message.content
            answer = client.chat.completions.create(model="dep", messages=ask("create event please"), tools=tools)
            calls = answer.choices[0].message.tool_calls or []
    assert text == "Say this back"
    (call,) = calls
    assert call.function.name == "create_event"  # type: ignore[union-attr]
    arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(arguments)
