"""Routes answered by their own parse/render pairs (embeddings, moderations, speech, transcriptions,
images), as adapters: the provider's chat adapter answers auth and errors (so every error has that
provider's shape), the route's own functions parse and render.

Each provider module (``openai_embed``, ``gemini_embed``, ``ollama_embed``) offers one parse/render pair
per route in its ``ROUTES``; the provider's registry entry names the module (``pairs``) and each
route's path (``Route(..., "embeddings", "NAME.ROUTE")``). A provider added later adds its module and
those entry fields: the engine, the language, the default embedder and the journal need nothing new,
because every pair produces the same provider-neutral request (``operation`` set) and renders a plan."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mockllm.runtime.providers import registry
from mockllm.runtime.providers.base import Adapter, ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.common import lower_headers
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import Attachment, ChatRequest, HttpRequest, Operation, Provider

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
    *,
    stream: bool = False,
    attachments: tuple[Attachment, ...] = (),
    audio_seconds: float | None = None,
    body_size: int | None = None,
) -> ChatRequest:
    """The provider-neutral request of an embedding, moderation, speech, transcription or images call:
    no messages (an upload's ``stream``, ``attachments`` and ``audio_seconds`` given here, not changed
    after: a request is built once). ``body_size``: the length of the JSON ``body`` was parsed from
    (``ChatRequest.body_size``: the journal then keeps a small body without measuring it first).
    Without ``dimensions`` of its own, an embedding request asks for its model's usual dimension
    (the provider's, for a model mockllm does not know)."""
    if dimensions is None and operation == "embeddings":
        dimensions = registry.usual_dimensions(provider, model)
    return ChatRequest(
        provider,  # (the five required fields by position: keywords cost more, on every request)
        http.path,  # endpoint
        model,
        stream,
        (),  # messages
        headers=lower_headers(http.headers),  # (the server's lower-cased headers, shared: not copied)
        body=body,
        body_size=body_size,
        operation=operation,
        inputs=inputs,
        dimensions=dimensions,
        attachments=attachments,
        audio_seconds=audio_seconds,
    )


class InputsAdapter:
    """An :class:`~mockllm.runtime.providers.base.Adapter` for one embedding or moderation route."""

    __slots__ = ("base", "parse", "provider", "render")

    def __init__(self, base: Adapter, parse_body: Parse, render_plan: Render) -> None:
        self.base = base
        self.provider: Provider = base.provider
        # the route's own functions, called as the adapter's parse and render (not through a method
        # that calls them: a Python call fewer each, on every request)
        self.parse: Parse = parse_body
        self.render: Render = render_plan

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        return self.base.check_auth(http)

    def validate_history(self, chat: ChatRequest) -> None:
        return None  # no history

    def render_error(
        self, status: int, message: str, ctx: RenderContext, code: str | None = None, param: str | None = None
    ) -> Rendered:
        return self.base.render_error(status, message, ctx, code, param)

    def stream_error_frame(self, message: str, ctx: RenderContext, sequence: int = 0) -> bytes:
        return self.base.stream_error_frame(message, ctx, sequence)

    def models(self, model_ids: Sequence[str], ctx: RenderContext) -> Rendered:
        return self.base.models(model_ids, ctx)

    def count_tokens(self, http: HttpRequest, ctx: RenderContext) -> Rendered:
        return self.base.count_tokens(http, ctx)

    def model(self, model_id: str, ctx: RenderContext) -> Rendered:
        return self.base.model(model_id, ctx)

    def version(self, ctx: RenderContext) -> Rendered:
        return self.base.version(ctx)

    def banner(self, ctx: RenderContext) -> Rendered:
        return self.base.banner(ctx)


def route_for_path(path: str, headers: Mapping[str, str] | None = None) -> str | None:
    """The input route a request path names (``/v1/embeddings`` → ``"openai.embeddings"``,
    ``/v1beta/models/M:batchEmbedContents`` → ``"gemini.batchEmbedContents"``), None for other paths.
    Where providers share a path, ``headers`` (lower-cased names) tell whose it is, as in serving
    (Mistral's ``/v1/embeddings``)."""
    spec = registry.route_at(path)
    if spec is None:
        return None
    provider = spec.provider_of(path, headers or {})
    if spec.handler == "inputs":
        return spec.inputs_for(provider)
    method = path.rpartition(":")[2]
    if spec.handler == "model_path" and registry.entry(provider).model_methods.get(method) == "inputs":
        return f"{provider}.{method}"
    return None


@functools.cache  # (asked on every request of an input route: the answer never changes)
def route_functions(route: str) -> tuple[Parse, Render]:
    """The parse/render pair of an input route (``"openai.embeddings"``, ``"gemini.batchEmbedContents"`` …):
    the ``ROUTES`` of the module the provider's registry entry names in ``pairs``."""
    module = registry.entry(route.partition(".")[0]).pairs
    if module is None:
        raise KeyError(route)
    pairs: dict[str, tuple[Parse, Render]] = importlib.import_module(f"mockllm.runtime.providers.{module}").ROUTES
    return pairs[route]
