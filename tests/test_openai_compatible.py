"""OpenAI-compatible services at their own base paths (issue 34), through the official ``openai`` SDK
pointed at each base URL: OpenRouter's ``/api/v1`` (its ``models`` fallback list, its ``provider``,
``gen-`` ids and usage with the cost), and a base path the user configures (``--openai-prefix``), here
Groq's ``/openai/v1`` under ``/groq`` (Azure keeps ``/openai/v1`` itself). The provider stays
``openai``: a script tells the services apart by ``endpoint``."""

from __future__ import annotations

import re

import httpx
import openai
from conftest import Serve
from sdk_clients import opened

SCRIPT = """
scenario "Compatible services":
    order any
    step openrouter:
        when:
            provider is openai
            endpoint is "/api/v1/chat/completions"
        reply:
            text "From OpenRouter."
            usage 10 in, 5 out
        always
    step groq:
        when:
            provider is openai
            endpoint is "/groq/openai/v1/chat/completions"
        reply:
            text "From Groq."
        always
    step openai:
        when:
            endpoint is "/v1/chat/completions"
        reply:
            text "From OpenAI."
        always
"""
ASK = [{"role": "user", "content": "hi"}]


def _client(base_url: str) -> openai.OpenAI:
    return opened(openai.OpenAI(base_url=base_url, api_key="sk-or-test", max_retries=0))


def test_openrouter_through_the_openai_sdk(serve: Serve) -> None:
    with serve(SCRIPT) as server:
        client = _client(server.url + "/api/v1")
        raw = client.chat.completions.with_raw_response.create(
            model="openai/gpt-4o-mini",
            messages=ASK,  # type: ignore[arg-type]
            extra_body={"models": ["openai/gpt-4o-mini", "anthropic/claude-3.5-haiku"]},
        )
        chunks = list(
            client.chat.completions.create(
                model="openai/gpt-4o-mini",
                messages=ASK,  # type: ignore[arg-type]
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        listed = client.models.list()
        # `models` alone, without `model`: the first is the model
        bare = httpx.post(
            server.url + "/api/v1/chat/completions",
            headers={"authorization": "Bearer k"},
            json={"models": ["meta-llama/llama-3.3-70b-instruct"], "messages": ASK},
        )
        plain = _client(server.url + "/v1").chat.completions.create(model="gpt-4o-mini", messages=ASK)  # type: ignore[arg-type]
    answer = raw.parse()
    assert answer.choices[0].message.content == "From OpenRouter."
    assert re.fullmatch(r"gen-\d+-[0-9A-Za-z]{20}", answer.id)
    body = raw.http_response.json()
    assert body["provider"] == "OpenAI" and "service_tier" not in body
    assert body["choices"][0]["native_finish_reason"] == "stop"
    usage = body["usage"]
    assert usage["cost"] > 0 and usage["is_byok"] is False and "upstream_inference_cost" in usage["cost_details"]
    assert answer.usage is not None and (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (10, 5)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "From OpenRouter."
    last = chunks[-1]
    assert last.usage is not None and last.usage.model_extra is not None and last.usage.model_extra["cost"] > 0
    assert {c.id for c in chunks} == {chunks[0].id} and chunks[0].id.startswith("gen-")
    assert listed.data and all(m.object == "model" for m in listed.data)
    assert bare.status_code == 200 and bare.json()["model"] == "meta-llama/llama-3.3-70b-instruct"
    assert plain.choices[0].message.content == "From OpenAI." and plain.id.startswith("chatcmpl-")


def test_a_configured_prefix_serves_a_groq_client(serve: Serve) -> None:
    with serve(SCRIPT, openai_prefixes=("/groq/openai/v1",)) as server:
        client = _client(server.url + "/groq/openai/v1")
        out = client.chat.completions.create(model="llama-3.3-70b-versatile", messages=ASK)  # type: ignore[arg-type]
        embedded = client.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
        # Azure's v1 route is still Azure's
        azure = httpx.post(
            server.url + "/openai/v1/chat/completions", headers={"api-key": "k"}, json={"model": "m", "messages": ASK}
        )
    assert out.choices[0].message.content == "From Groq."
    assert len(embedded.data) == 2
    assert "provider azure" in azure.json()["error"]["message"]  # Azure's no-match report, in Azure's shape


def test_without_the_option_the_prefix_is_not_served(serve: Serve) -> None:
    with serve(SCRIPT) as server:
        r = httpx.post(
            server.url + "/groq/openai/v1/chat/completions",
            headers={"authorization": "Bearer k"},
            json={"model": "m", "messages": ASK},
        )
    assert r.status_code == 404
