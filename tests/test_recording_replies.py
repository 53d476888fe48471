"""What the recorder writes beyond text and tool calls: errors with their status, message and
`retry after`; a stream the upstream cut (`disconnect`); the measured timing with `--keep-timing`;
and never a credential, whatever form it takes, on any provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from recording_clients import KEY
from sdk_clients import opened
from test_recording import check_clean, recorder, replay

from mockllm.runtime.recording.exchange import Exchange

HI = [{"role": "user", "content": "hi"}]


def chat(url: str, **extra: Any) -> httpx.Response:
    body = {"model": "gpt-4o", "messages": HI, **extra}
    return httpx.post(url + "/v1/chat/completions", headers={"authorization": f"Bearer {KEY}"}, json=body)


def test_an_error_is_passed_through_and_recorded_with_its_retry_after(tmp_path: Path, serve_text: Any) -> None:
    script = (
        'scenario "e":\n    step a:\n        reply:\n            error 429 "slow down"\n            retry after 2s\n'
    )
    with serve_text(script) as upstream, recorder(upstream, tmp_path) as (url, _):
        r = chat(url)
    assert r.status_code == 429 and r.headers["retry-after"] == "2"
    [f] = check_clean(tmp_path)
    text = f.read_text(encoding="utf-8")
    assert 'error 429 "slow down"' in text and "retry after 2s" in text
    with replay(tmp_path) as server:
        client = opened(openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0))
        with pytest.raises(openai.RateLimitError) as err:
            client.chat.completions.create(model="gpt-4o", messages=HI)  # type: ignore[arg-type]
    assert "slow down" in str(err.value) and err.value.response.headers["retry-after"] == "2"


def test_a_cut_stream_is_passed_through_and_recorded_as_a_disconnect(tmp_path: Path, serve_text: Any) -> None:
    script = (
        'scenario "d":\n    step a:\n        reply:\n            text "one two three four five"\n'
        "            disconnect after 2 chunks\n"
    )
    with serve_text(script) as upstream, recorder(upstream, tmp_path) as (url, _):
        client = opened(openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0))
        got: list[str] = []
        with pytest.raises((httpx.HTTPError, openai.APIError)):
            for chunk in client.chat.completions.create(model="gpt-4o", messages=HI, stream=True):  # type: ignore[arg-type]
                got += [c.delta.content or "" for c in chunk.choices]
    [f] = check_clean(tmp_path)
    text = f.read_text(encoding="utf-8")
    assert "disconnect after 2 chunks" in text
    assert "".join(got) == "one two"


def test_keep_timing_writes_latency_and_spacing(tmp_path: Path, serve_text: Any) -> None:
    script = (
        'scenario "t":\n    step a:\n        reply:\n            latency 300ms\n            text "a b c d"\n'
        "            stream by word, 100ms apart\n"
    )
    with serve_text(script) as upstream, recorder(upstream, tmp_path, "--keep-timing") as (url, _):
        client = opened(openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0))
        pieces = [
            c.choices[0].delta.content or ""
            for c in client.chat.completions.create(model="gpt-4o", messages=HI, stream=True)
            if c.choices
        ]  # type: ignore[arg-type]
    assert "".join(pieces) == "a b c d"
    [f] = check_clean(tmp_path)
    lines = f.read_text(encoding="utf-8").splitlines()
    latency = next(line.split()[1] for line in lines if line.strip().startswith("latency "))
    assert latency.endswith("ms") and int(latency[:-2]) >= 250
    assert any(line.strip().startswith("stream by word, ") and line.strip().endswith("ms apart") for line in lines)


def _say(provider: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"hi from {provider}"}]


CREDENTIALS = {  # one conversation each: a different opening
    "openai": ("/v1/chat/completions", {"model": "m", "messages": _say("openai")}),
    "responses": ("/v1/responses", {"model": "m", "input": "hi from responses"}),
    "anthropic": ("/v1/messages", {"model": "m", "max_tokens": 5, "messages": _say("anthropic")}),
    "gemini": (
        "/v1beta/models/m:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "hi from gemini"}]}]},
    ),
    "ollama": ("/api/chat", {"model": "m", "messages": _say("ollama"), "stream": False}),
    "cohere": ("/v2/chat", {"model": "m", "messages": _say("cohere")}),
    "mistral": ("/v1/chat/completions", {"model": "m", "messages": _say("mistral")}),
    "azure": ("/openai/deployments/d/chat/completions?api-version=2024-10-21", {"messages": _say("azure")}),
    "vertex": (
        "/v1/projects/p/locations/us-central1/publishers/google/models/m:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "hi from vertex"}]}]},
    ),
    "bedrock": ("/model/m/converse", {"messages": [{"role": "user", "content": [{"text": "hi from bedrock"}]}]}),
}
#: what tells a request apart on a path providers share (Mistral's SDK sends its User-Agent)
SHARED_PATH = {"mistral": {"user-agent": "mistral-client-python/1.9.0"}}
#: how each provider's SDK really sends its credential, beside the generic ones
SIGV4 = (
    f"AWS4-HMAC-SHA256 Credential={KEY}/20261126/us-east-1/bedrock/aws4_request, "
    f"SignedHeaders=host;x-amz-date;x-amz-security-token, Signature={KEY}"
)
OWN_AUTH = {"bedrock": {"authorization": SIGV4}}


def test_no_credential_reaches_a_file_on_any_provider(tmp_path: Path, serve_text: Any) -> None:
    headers = {
        "authorization": f"Bearer {KEY}",
        "x-api-key": KEY,
        "x-goog-api-key": KEY,
        "api-key": KEY,
        "cookie": f"session={KEY}",
        "proxy-authorization": f"Basic {KEY}",
        "x-amz-security-token": KEY,  # AWS: a session token beside the SigV4 `authorization`
        "anthropic-version": "2023-06-01",
        "openai-organization": "org-visible",
    }
    with serve_text("") as upstream, recorder(upstream, tmp_path) as (url, _):
        for provider, (path, body) in CREDENTIALS.items():
            sent = {**headers, **SHARED_PATH.get(provider, {}), **OWN_AUTH.get(provider, {})}
            query = f"{'&' if '?' in path else '?'}key={KEY}&api_key={KEY}&X-Amz-Security-Token={KEY}"
            r = httpx.post(url + path + query, headers=sent, content=json.dumps(body))
            assert r.status_code == 200, r.text
            read = Exchange.of("POST", path + query, sent.items(), b"", 200, [("set-cookie", KEY)], b"")
            assert KEY not in repr((read.headers, read.query, read.response_headers))  # nothing left to write
    files = check_clean(tmp_path)
    assert len(files) == len(CREDENTIALS)
    for f in files:
        assert KEY not in f.read_text(encoding="utf-8")
    assert {f.name.split("_", 1)[0] for f in files} == set(CREDENTIALS)
