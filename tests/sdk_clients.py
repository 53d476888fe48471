"""Official SDK clients for the tests, each closed when its test ends (conftest's autouse fixture
calls :func:`close_opened`): a client left open keeps its connection pool, and Python warns
(``ResourceWarning: unclosed socket``) when it is collected."""

from __future__ import annotations

from typing import Protocol, TypeVar

import ollama
import openai
from google import genai
from google.genai import types


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
