"""Embedding and moderation routes as adapters: the provider's chat adapter answers auth and errors
(so every error has that provider's shape), the route's own functions parse and render.

Each provider module (``embed_openai``, ``embed_gemini``, ``embed_ollama``) offers one parse/render pair
per route; :data:`ROUTES` names them. A provider added later (Azure, Mistral, Cohere, Bedrock, Vertex)
adds its pair here and its path in ``server/routes.py``: the engine, the language, the default embedder
and the journal need nothing new, because every pair produces the same provider-neutral request (the
texts in ``inputs``, ``operation`` set) and renders the same plan (``vectors`` or ``flags``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mockllm.runtime.providers.base import Adapter, ProviderError, RenderContext, Rendered
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest, Operation, Provider

Parse = Callable[[HttpRequest], ChatRequest]
Render = Callable[[MessagePlan, ChatRequest, RenderContext], Rendered]


def inputs_request(
    provider: Provider,
    operation: Operation,
    http: HttpRequest,
    model: str,
    inputs: tuple[str, ...],
    body: Any,
    dimensions: int | None = None,
) -> ChatRequest:
    """The provider-neutral request of an embedding or moderation call: no messages, never streamed."""
    return ChatRequest(
        provider=provider,
        endpoint=http.path,
        model=model,
        stream=False,
        messages=(),
        headers=dict(http.headers),
        body=body,
        operation=operation,
        inputs=inputs,
        dimensions=dimensions,
    )


class InputsAdapter:
    """An :class:`~mockllm.runtime.providers.base.Adapter` for one embedding or moderation route."""

    __slots__ = ("base", "parse_body", "provider", "render_plan")

    def __init__(self, base: Adapter, parse_body: Parse, render_plan: Render) -> None:
        self.base = base
        self.provider: Provider = base.provider
        self.parse_body = parse_body
        self.render_plan = render_plan

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        return self.base.check_auth(http)

    def parse(self, http: HttpRequest) -> ChatRequest:
        return self.parse_body(http)

    def validate_history(self, chat: ChatRequest) -> None:
        return None  # no history

    def render(self, plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
        return self.render_plan(plan, chat, ctx)

    def render_error(
        self, status: int, message: str, ctx: RenderContext, code: str | None = None, param: str | None = None
    ) -> Rendered:
        return self.base.render_error(status, message, ctx, code, param)

    def stream_error_frame(self, message: str, ctx: RenderContext, sequence: int = 0) -> bytes:
        return self.base.stream_error_frame(message, ctx, sequence)


_FIXED_PATHS = {
    "/v1/embeddings": "openai.embeddings",
    "/v1/moderations": "openai.moderations",
    "/api/embed": "ollama.embed",
    "/api/embeddings": "ollama.embeddings",
}
_GEMINI_METHODS = ("embedContent", "batchEmbedContents")


def route_for_path(path: str) -> str | None:
    """The input route a request path names (``/v1/embeddings`` → ``"openai.embeddings"``,
    ``/v1beta/models/M:batchEmbedContents`` → ``"gemini.batchEmbedContents"``), None for other paths."""
    found = _FIXED_PATHS.get(path)
    if found is not None:
        return found
    method = path.rpartition(":")[2]
    if "/models/" in path and method in _GEMINI_METHODS:
        return f"gemini.{method}"
    return None


def route_functions(route: str) -> tuple[Parse, Render]:
    """The parse/render pair of an input route (``"openai.embeddings"``, ``"gemini.batchEmbedContents"`` …)."""
    if route.startswith("openai."):
        from mockllm.runtime.providers import embed_openai

        return embed_openai.ROUTES[route]
    if route.startswith("gemini."):
        from mockllm.runtime.providers import embed_gemini

        return embed_gemini.ROUTES[route]
    from mockllm.runtime.providers import embed_ollama

    return embed_ollama.ROUTES[route]
