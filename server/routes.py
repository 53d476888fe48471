"""The route table, and which provider a path (or a request's headers) speaks for.

Routing is by path, never by ``Accept`` (docs/providers.md lists each API's paths). ``/v1/models`` is claimed by OpenAI,
Anthropic and Gemini v1 listings; the request's headers decide which shape answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

from mockllm.runtime.providers.base import Adapter
from mockllm.runtime.request import Provider

Handler = Literal["chat", "inputs", "count_tokens", "models", "model_path", "tags", "version", "root"]

GEMINI_EMBED_METHODS = ("embedContent", "batchEmbedContents")
GEMINI_METHODS = ("generateContent", "streamGenerateContent", "countTokens", *GEMINI_EMBED_METHODS)


@attrs.frozen
class RouteSpec:
    path: str  # Starlette path pattern
    methods: tuple[str, ...]
    handler: Handler
    provider: Provider | None  # None: decided per request (model listings)
    inputs: str | None = None  # for embedding and moderation routes: runtime/providers/inputs.py's route name


ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("/v1/chat/completions", ("POST",), "chat", "openai"),
    RouteSpec("/v1/responses", ("POST",), "chat", "responses"),
    RouteSpec("/v1/messages", ("POST",), "chat", "anthropic"),
    RouteSpec("/v1/messages/count_tokens", ("POST",), "count_tokens", "anthropic"),
    RouteSpec("/v1/embeddings", ("POST",), "inputs", "openai", "openai.embeddings"),
    RouteSpec("/v1/moderations", ("POST",), "inputs", "openai", "openai.moderations"),
    RouteSpec("/v1/models", ("GET",), "models", None),
    # Starlette cannot route a ':' inside a segment: Gemini's `{model}:{method}` is split by hand.
    RouteSpec("/v1/models/{rest:path}", ("GET", "POST"), "model_path", None),
    RouteSpec("/v1beta/models", ("GET",), "models", "gemini"),
    RouteSpec("/v1beta/models/{rest:path}", ("GET", "POST"), "model_path", "gemini"),
    RouteSpec("/api/chat", ("POST",), "chat", "ollama"),
    RouteSpec("/api/embed", ("POST",), "inputs", "ollama", "ollama.embed"),
    RouteSpec("/api/embeddings", ("POST",), "inputs", "ollama", "ollama.embeddings"),
    RouteSpec("/api/tags", ("GET",), "tags", "ollama"),
    RouteSpec("/api/version", ("GET",), "version", "ollama"),
    RouteSpec("/", ("GET",), "root", "ollama"),
)


def split_model_path(rest: str) -> tuple[str, str | None]:
    """``"gemini-2.5-flash:generateContent"`` → ``("gemini-2.5-flash", "generateContent")``;
    a plain model id gives ``(id, None)``. ``models/`` inside the id is kept as sent."""
    model, sep, method = rest.rpartition(":")
    if not sep:
        return rest, None
    return model, method


def provider_for(path: str, headers: Mapping[str, str] | None = None) -> Provider:
    """The provider whose error shape answers a request to ``path`` (headers lower-cased)."""
    hdrs = headers or {}
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith("/api/") or path == "/api":
        return "ollama"
    if path.startswith("/v1beta/"):
        return "gemini"
    if path.startswith("/v1/models/") and ":" in path.rsplit("/", 1)[-1]:
        return "gemini"
    if path.startswith("/v1/responses"):
        return "responses"
    if path.startswith("/v1/models"):
        return models_provider(hdrs)
    return "openai"


def models_provider(headers: Mapping[str, str]) -> Provider:
    """Whose listing ``GET /v1/models`` returns, from the request's headers."""
    if "anthropic-version" in headers:
        return "anthropic"
    if "x-goog-api-key" in headers:
        return "gemini"
    return "openai"


_ADAPTERS: dict[str, Adapter] = {}


def adapter_for(provider: Provider) -> Adapter:
    """The (stateless, shared) adapter for ``provider``."""
    found = _ADAPTERS.get(provider)
    if found is not None:
        return found
    adapter: Adapter
    if provider == "openai":
        from mockllm.runtime.providers.openai_chat import OpenAIChatAdapter

        adapter = OpenAIChatAdapter()
    elif provider == "anthropic":
        from mockllm.runtime.providers.anthropic import AnthropicAdapter

        adapter = AnthropicAdapter()
    elif provider == "responses":
        from mockllm.runtime.providers.responses import ResponsesAdapter

        adapter = ResponsesAdapter()
    elif provider == "gemini":
        from mockllm.runtime.providers.gemini import GeminiAdapter

        adapter = GeminiAdapter()
    else:
        from mockllm.runtime.providers.ollama import OllamaAdapter

        adapter = OllamaAdapter()
    _ADAPTERS[provider] = adapter
    return adapter
