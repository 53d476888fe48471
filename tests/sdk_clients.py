"""Official SDK clients for the tests, each closed when its test ends (conftest's autouse fixture
calls :func:`close_opened`): a client left open keeps its connection pool, and Python warns
(``ResourceWarning: unclosed socket``) when it is collected.

The clients of the providers that need more than a base URL (Azure's endpoint and API version,
Vertex's project and credentials, Cohere's and Mistral's HTTP clients, boto3's region and keys) are
built here once. ``headers`` are sent with every request: :func:`conversation` opens a fresh
conversation, so that a test's turns never meet another client's."""

from __future__ import annotations

import uuid
from typing import Any, Protocol, TypeVar

import boto3
import botocore.config
import cohere
import httpx
import httpx2
import ollama
import openai
from google import genai
from google.genai import types
from mistralai.client import Mistral


class _Closable(Protocol):
    def close(self) -> None: ...


_C = TypeVar("_C", bound=_Closable)
_OPEN: list[_Closable] = []


def opened(client: _C) -> _C:
    """``client``, to be closed when the test ends."""
    _OPEN.append(client)
    return client


def close_opened() -> None:
    while _OPEN:
        _OPEN.pop().close()


def oa(url: str) -> openai.OpenAI:
    return opened(openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0))


def gm(url: str, api_version: str | None = None) -> genai.Client:
    return opened(genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url, api_version=api_version)))


def ol(url: str) -> ollama.Client:
    return opened(ollama.Client(host=url))


def conversation(name: str | None = None) -> dict[str, str]:
    """The header that puts a client's requests in conversation ``name`` (a fresh one by default)."""
    return {"x-mockllm-conversation": name or uuid.uuid4().hex}


AZURE_API_VERSION = "2024-10-21"


def azure(
    url: str, headers: dict[str, str] | None = None, api_version: str = AZURE_API_VERSION, **kw: Any
) -> openai.AzureOpenAI:
    """``AzureOpenAI`` on the server at ``url`` (``azure_deployment=`` … in ``kw``)."""
    return opened(
        openai.AzureOpenAI(
            azure_endpoint=url,
            api_version=api_version,
            api_key="test",
            default_headers=headers,
            **kw,
        )
    )


def vertex(url: str, headers: dict[str, str] | None = None, **options: Any) -> genai.Client:
    """google-genai with ``vertexai=True``, a fixed OAuth token (no network, no ADC); ``options`` are
    :class:`HttpOptions` fields (``api_version``, ``retry_options`` …)."""
    from google.oauth2.credentials import Credentials

    http = types.HttpOptions(base_url=url, headers=headers, **options)
    return opened(
        genai.Client(
            vertexai=True,
            project="test",
            location="us-central1",
            credentials=Credentials(token="test"),
            http_options=http,
        )
    )


def cohere_v2(url: str, headers: dict[str, str] | None = None, **kw: Any) -> cohere.ClientV2:
    """``cohere.ClientV2``; its HTTP client (the SDK's way to add headers) is closed with the test."""
    http = opened(httpx.Client(headers=headers, timeout=60))
    return cohere.ClientV2(base_url=url, api_key="test", httpx_client=http, **kw)


def mistral(url: str, headers: dict[str, str] | None = None, **kw: Any) -> Mistral:
    """``Mistral``; its HTTP client (unless ``client=`` is given) is closed with the test."""
    if "client" not in kw:
        kw["client"] = opened(httpx2.Client(headers=headers))
    return Mistral(server_url=url, api_key="test", **kw)


def bedrock(url: str, **config: Any) -> Any:
    """boto3's ``bedrock-runtime`` client; ``config`` are :class:`botocore.config.Config` fields."""
    return opened(
        boto3.client(
            "bedrock-runtime",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
            config=botocore.config.Config(**config) if config else None,
        )
    )
