"""Ollama ``POST /api/embed`` (``input``: a string or a list of strings; ``{"embeddings": [[…], …]}``)
and the older ``POST /api/embeddings`` (``prompt``; ``{"embedding": […]}``), with Ollama's error
shape ``{"error": "…"}``. As Ollama does, an empty input embeds nothing: ``/api/embed`` answers an
empty list and ``/api/embeddings`` an empty vector. Ollama documents no batch limit."""

from __future__ import annotations

from typing import Any

from mockllm.runtime.embed.embedder import vector_json
from mockllm.runtime.embed.models import MAX_DIMENSIONS
from mockllm.runtime.providers import common
from mockllm.runtime.providers.base import ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.ollama import FIELDS
from mockllm.runtime.providers.pairs import Parse, Render, inputs_request
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest

_JSON = "application/json"
_NANOS_PER_TOKEN = 50_000  # a plausible total_duration: 50 µs per prompt token


def _model(data: dict[str, Any]) -> str:
    model = data.get("model")
    if model is None or model == "":
        raise ProviderError(400, "model is required")
    if not isinstance(model, str):
        raise FIELDS.wrong_type("model", "a string", model)
    return model


def _embed_inputs(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ProviderError(
        400, f"invalid input type: input must be a string or a list of strings, got {common.kind(value)}"
    )


def _dimensions(data: dict[str, Any]) -> int | None:
    value = data.get("dimensions")
    if value is None or value == 0:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise FIELDS.wrong_type("dimensions", "an integer", value)
    if value < 0:
        raise ProviderError(400, f"invalid dimensions: must be a positive integer, got {value}")
    if value > MAX_DIMENSIONS:
        raise ProviderError(400, f"invalid dimensions: must be at most {MAX_DIMENSIONS}, got {value}")
    return value


def parse_embed(http: HttpRequest) -> ChatRequest:
    data = FIELDS.load_body(http.body)
    texts = _embed_inputs(data.get("input"))
    return inputs_request("ollama", "embeddings", http, _model(data), texts, data, _dimensions(data))


def parse_embeddings(http: HttpRequest) -> ChatRequest:
    data = FIELDS.load_body(http.body)
    prompt = data.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise FIELDS.wrong_type("prompt", "a string", prompt)
    return inputs_request("ollama", "embeddings", http, _model(data), (prompt,) if prompt else (), data)


def _timing(plan: MessagePlan) -> dict[str, int]:
    return {"total_duration": plan.input_tokens * _NANOS_PER_TOKEN, "load_duration": 0}


def render_embed(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    head = {"model": plan.model}
    tail = {**_timing(plan), "prompt_eval_count": plan.input_tokens if chat.inputs else 0}
    vectors = ",".join(vector_json(v) for v in plan.vectors)
    body = common.json_text(head)[:-1] + f',"embeddings":[{vectors}],' + common.json_text(tail)[1:]
    return Rendered(200, _JSON, body=body.encode("utf-8"))


def render_embeddings(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    values = vector_json(plan.vectors[0]) if plan.vectors else "[]"
    return Rendered(200, _JSON, body=f'{{"embedding":{values}}}'.encode())


ROUTES: dict[str, tuple[Parse, Render]] = {
    "ollama.embed": (parse_embed, render_embed),
    "ollama.embeddings": (parse_embeddings, render_embeddings),
}

__all__ = ["ROUTES"]
