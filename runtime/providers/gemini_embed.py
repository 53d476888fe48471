"""Gemini ``models/{model}:embedContent`` and ``:batchEmbedContents`` (under ``/v1beta`` and ``/v1``):
parsing with Gemini's limits and error shape, rendering ``{"embedding": {"values": …}}`` and
``{"embeddings": [{"values": …}, …]}``. The google-genai SDK sends every ``embed_content`` call to
``batchEmbedContents``, at most 100 requests in one batch. ``outputDimensionality`` (on a request or
in its ``embedContentConfig``) sets the dimension; in a batch, the first request's applies to all."""

from __future__ import annotations

from typing import Any

from mockllm.runtime.embed.embedder import vector_json
from mockllm.runtime.embed.models import DIMENSIONS, MAX_DIMENSIONS
from mockllm.runtime.providers import common
from mockllm.runtime.providers.base import RenderContext, Rendered
from mockllm.runtime.providers.gemini import FIELDS, _get, _target
from mockllm.runtime.providers.pairs import Parse, Render, inputs_request
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest

MAX_BATCH = 100  # Gemini's documented limit on batchEmbedContents
_JSON = "application/json"


def _content_text(request: dict[str, Any], where: str) -> str:
    content = _get(request, "content")
    if content is None:
        raise FIELDS.bad(f"* {where}.content: content is not specified")
    parts = FIELDS.array(_get(FIELDS.obj(content, f"{where}.content"), "parts"), f"{where}.content.parts")
    texts: list[str] = []
    for j, part in enumerate(parts):
        text = FIELDS.opt_str(FIELDS.obj(part, f"{where}.content.parts[{j}]"), "text", f"{where}.content.parts[{j}]")
        if text is not None:
            texts.append(text)
    text = "\n".join(texts)
    if not text.strip():
        raise FIELDS.bad(f"* {where}.content: the content has no text to embed")
    return text


def _dimensions(request: dict[str, Any], where: str, model: str) -> int | None:
    config = _get(request, "embedContentConfig")
    value = _get(request, "outputDimensionality")
    if value is None and isinstance(config, dict):
        value = _get(config, "outputDimensionality")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise FIELDS.bad(f"Invalid value at '{where}.output_dimensionality' (TYPE_INT32), {common.describe(value)}")
    native = DIMENSIONS.get(model)
    if value < 1 or value > (native if native is not None else MAX_DIMENSIONS):
        top = native if native is not None else MAX_DIMENSIONS
        raise FIELDS.bad(f"* {where}.output_dimensionality: must be between 1 and {top}, got {value}")
    return value


def _check_model(request: dict[str, Any], where: str, model: str) -> None:
    named = FIELDS.opt_str(request, "model", where)
    if named is not None and named.removeprefix("models/") != model:
        raise FIELDS.bad(f"* {where}.model: '{named}' does not match the model in the URL, 'models/{model}'")


def parse_embed(http: HttpRequest) -> ChatRequest:
    model = _target(http).model
    data = FIELDS.load_body(http.body)
    where = "EmbedContentRequest"
    _check_model(data, where, model)
    texts = (_content_text(data, where),)
    return inputs_request("gemini", "embeddings", http, model, texts, data, _dimensions(data, where, model))


def parse_batch(http: HttpRequest) -> ChatRequest:
    model = _target(http).model
    data = FIELDS.load_body(http.body)
    requests = _get(data, "requests")
    if requests is None or requests == []:
        raise FIELDS.bad("* BatchEmbedContentsRequest.requests: requests is not specified")
    requests = FIELDS.array(requests, "requests")
    if len(requests) > MAX_BATCH:
        raise FIELDS.bad(f"* BatchEmbedContentsRequest.requests: at most {MAX_BATCH} requests can be in one batch")
    texts: list[str] = []
    dims: int | None = None
    for i, raw in enumerate(requests):
        where = f"BatchEmbedContentsRequest.requests[{i}]"
        request = FIELDS.obj(raw, where)
        _check_model(request, where, model)
        texts.append(_content_text(request, where))
        found = _dimensions(request, where, model)
        dims = found if dims is None else dims
    return inputs_request("gemini", "embeddings", http, model, tuple(texts), data, dims)


def _usage(plan: MessagePlan) -> dict[str, int]:
    return {"promptTokenCount": plan.input_tokens, "totalTokenCount": plan.input_tokens}


def render_embed(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    values = vector_json(plan.vectors[0]) if plan.vectors else "[]"
    body = f'{{"embedding":{{"values":{values}}},"usageMetadata":{common.json_text(_usage(plan))}}}'
    return Rendered(200, _JSON, body=body.encode("utf-8"))


def render_batch(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    items = ",".join('{"values":' + vector_json(v) + "}" for v in plan.vectors)
    body = f'{{"embeddings":[{items}],"usageMetadata":{common.json_text(_usage(plan))}}}'
    return Rendered(200, _JSON, body=body.encode("utf-8"))


ROUTES: dict[str, tuple[Parse, Render]] = {
    "gemini.embedContent": (parse_embed, render_embed),
    "gemini.batchEmbedContents": (parse_batch, render_batch),
}
