"""Every provider's official SDK reaches the server through the handles the provider registry gives
(``MockServer.cohere_base_url`` …, the same on the pytest fixture) and through the environment
``mockllm_env`` sets: code that builds its client from the environment, as application code does,
talks to the mock. The registry's ``client`` of each entry is the one place these facts live."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import boto3
import cohere
import httpx
import httpx2
import ollama
import openai
import pytest
from anthropic import AnthropicBedrock
from google import genai
from google.oauth2.credentials import Credentials
from mistralai.client import Mistral

import mockllm
from mockllm.api import MockServer
from mockllm.pytest_plugin import MockLLM
from mockllm.runtime.providers import registry

QUESTION = "say hello"
BEDROCK_MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"


def _ask(provider: str, make: Any) -> str:
    """One chat turn through provider's SDK, the client built by ``make()``; the answer's text."""
    messages: Any = [{"role": "user", "content": QUESTION}]
    if provider in ("openai", "azure"):
        client = make()
        with client:
            return str(client.chat.completions.create(model="gpt-4o", messages=messages).choices[0].message.content)
    if provider == "responses":
        with make() as client:
            return str(client.responses.create(model="gpt-4o", input=QUESTION).output_text)
    if provider == "anthropic":
        with make() as client:
            reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=50, messages=messages)
            return str(reply.content[0].text)
    if provider in ("gemini", "vertex"):
        with make() as client:
            return str(client.models.generate_content(model="gemini-2.0-flash", contents=QUESTION).text)
    if provider == "ollama":
        client = make()
        try:
            return str(client.chat(model="llama3", messages=messages).message.content)
        finally:
            client._client.close()
    if provider == "cohere":
        client = make()
        return str(client.chat(model="command-r", messages=messages).message.content[0].text)
    if provider == "mistral":
        with make() as client:
            return str(client.chat.complete(model="mistral-small-latest", messages=messages).choices[0].message.content)
    assert provider == "bedrock"
    client = make()
    try:
        reply = client.converse(modelId=BEDROCK_MODEL, messages=[{"role": "user", "content": [{"text": QUESTION}]}])
        return str(reply["output"]["message"]["content"][0]["text"])
    finally:
        client.close()


def _by_handle(provider: str, server: MockServer | MockLLM) -> Any:
    """The client of ``provider`` built from the handle the docs' table names (docs/python-api.md)."""
    return {
        "openai": lambda: openai.OpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0),
        "responses": lambda: openai.OpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0),
        "anthropic": lambda: anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="test"),
        "gemini": lambda: genai.Client(api_key="test", http_options={"base_url": server.gemini_base_url}),
        "ollama": lambda: ollama.Client(host=server.ollama_host),
        "cohere": lambda: cohere.ClientV2(
            base_url=server.cohere_base_url, api_key="test", httpx_client=_httpx_closed_with_test()
        ),
        "mistral": lambda: Mistral(server_url=server.mistral_base_url, api_key="test", client=_closed_with_test()),
        "azure": lambda: openai.AzureOpenAI(
            azure_endpoint=server.azure_endpoint, api_key="test", api_version="2024-10-21", max_retries=0
        ),
        "vertex": lambda: genai.Client(
            vertexai=True,
            project="p",
            location="us-central1",
            credentials=Credentials(token="test"),
            http_options={"base_url": server.vertex_base_url},
        ),
        "bedrock": lambda: boto3.client(
            "bedrock-runtime",
            endpoint_url=server.bedrock_endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
        ),
    }[provider]


_OPEN: list[httpx.Client | httpx2.Client] = []


def _closed_with_test() -> httpx2.Client:
    """An HTTP client for Mistral's SDK (which leaves the one it makes open), closed after the test."""
    _OPEN.append(httpx2.Client())
    return _OPEN[-1]  # type: ignore[return-value]


def _httpx_closed_with_test() -> httpx.Client:
    """The same for Cohere's SDK."""
    _OPEN.append(httpx.Client(timeout=60))
    return _OPEN[-1]  # type: ignore[return-value]


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


#: each provider's client built from the environment alone, as application code builds it
FROM_ENV: dict[str, Any] = {
    "openai": lambda: openai.OpenAI(max_retries=0),
    "responses": lambda: openai.OpenAI(max_retries=0),
    "anthropic": lambda: anthropic.Anthropic(),
    "gemini": lambda: genai.Client(),
    "ollama": lambda: ollama.Client(),
    "cohere": None,  # its SDK reads its URL from the environment when imported, not when a client is made
    "mistral": None,  # its SDK reads no URL from the environment (docs/pytest.md)
    "azure": lambda: openai.AzureOpenAI(max_retries=0),
    # project and location given: without them the SDK posts to the base URL itself (docs/pytest.md)
    "vertex": lambda: genai.Client(
        vertexai=True, project="p", location="us-central1", credentials=Credentials(token="test")
    ),
    "bedrock": lambda: boto3.client("bedrock-runtime"),
}


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with mockllm.serve() as running:
        yield running


def test_every_provider_has_a_client_and_its_handle(server: MockServer) -> None:
    assert sorted(FROM_ENV) == sorted(registry.NAMES)
    for e in registry.ENTRIES:
        assert e.client is not None, f"{e.name}: no SdkClient in its registry entry"
        for holder in (MockServer, MockLLM):
            assert isinstance(getattr(holder, e.client.handle, None), property), f"{holder.__name__}.{e.client.handle}"
        assert getattr(server, e.client.handle) == server.base_url(e.name) == server.url + e.client.path


@pytest.mark.parametrize("provider", registry.NAMES)
def test_the_python_api_handle_reaches_the_server(server: MockServer, provider: str) -> None:
    server.reset()
    assert QUESTION in _ask(provider, _by_handle(provider, server))  # the echo responder repeats it
    assert [e.provider for e in server.requests()] == [provider]


@pytest.mark.parametrize("provider", registry.NAMES)
def test_the_fixture_handle_reaches_the_server(mockllm: MockLLM, provider: str) -> None:
    assert QUESTION in _ask(provider, _by_handle(provider, mockllm))
    assert [e.provider for e in mockllm.requests()] == [provider]


@pytest.mark.parametrize("provider", registry.NAMES)
def test_mockllm_env_points_each_sdk_at_the_server(mockllm_env: MockLLM, provider: str) -> None:
    make = FROM_ENV[provider]
    if provider == "mistral":  # the URL by hand, the key from the environment
        assert os.environ["MISTRAL_API_KEY"]
        make = lambda: Mistral(server_url=mockllm_env.mistral_base_url, client=_closed_with_test())  # noqa: E731
    elif provider == "cohere":
        assert os.environ["CO_API_KEY"]
        make = lambda: cohere.ClientV2(base_url=mockllm_env.cohere_base_url, httpx_client=_httpx_closed_with_test())  # noqa: E731
    assert QUESTION in _ask(provider, make)
    assert [e.provider for e in mockllm_env.requests()] == [provider]


def test_mockllm_env_points_anthropic_bedrock_at_the_server(mockllm_env: MockLLM) -> None:
    with AnthropicBedrock() as client:
        reply = client.messages.create(
            model=BEDROCK_MODEL, max_tokens=50, messages=[{"role": "user", "content": QUESTION}]
        )
    assert QUESTION in reply.content[0].text  # type: ignore[union-attr]
    assert [e.provider for e in mockllm_env.requests()] == ["bedrock"]


def test_mockllm_env_sets_only_unset_credentials(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.setenv("CO_API_KEY", "mine")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://elsewhere")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    handle: MockLLM = request.getfixturevalue("mockllm_env")
    assert os.environ["CO_API_KEY"] == "mine"  # a credential the user set stays
    assert os.environ["ANTHROPIC_BASE_URL"] == handle.anthropic_base_url  # a URL always points at the mock
    assert os.environ["AWS_DEFAULT_REGION"] == "us-east-1"
    assert os.environ["OPENAI_BASE_URL"] == handle.url + "/v1"


def test_the_docs_list_every_handle_and_variable() -> None:
    docs = Path(__file__).resolve().parent.parent / "docs"
    pytest_page = (docs / "pytest.md").read_text(encoding="utf-8")
    api_page = (docs / "python-api.md").read_text(encoding="utf-8")
    for client in registry.sdk_clients():
        assert f"| `{client.handle}` |" in pytest_page, f"docs/pytest.md: the fixture's {client.handle}"
        assert f"| `{client.handle}` |" in api_page, f"docs/python-api.md: MockServer.{client.handle}"
    env_table = pytest_page.split("## Environment variables", 1)[1].split("```", 1)[0]
    first_cells = [row.split("|")[1] for row in env_table.splitlines() if row.startswith("| `")]
    documented = {name for cell in first_cells for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cell)}
    urls, defaults = registry.sdk_environment("http://x")
    assert documented == set(urls) | set(defaults)
