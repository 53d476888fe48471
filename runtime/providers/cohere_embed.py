"""Cohere ``POST /v2/embed``: ``texts`` (or ``inputs`` of text and image parts), a required
``input_type``, ``embedding_types`` (``float`` when absent) and ``output_dimension``; answered as
``{"id", "embeddings": {"float": […], "int8": […], …}, "texts", "meta", "response_type"}`` with one
array per requested type, each derived from the same vector (int8/uint8 scaled, binary/ubinary as
packed sign bits, base64 as the float32 bytes), in Cohere's error shape."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from mockllm.runtime.embed.embedder import float32_bytes, vector_json
from mockllm.runtime.providers.base import RenderContext, Rendered
from mockllm.runtime.providers.cohere import CACHE_HEADERS, count_headers, trace_headers, uuid_for
from mockllm.runtime.providers.cohere_rerank import ROUTES as RERANK_ROUTES
from mockllm.runtime.providers.common import (
    JSON_MEDIA,
    FieldPath,
    as_int,
    as_list,
    as_str,
    invalid_value,
    json_text,
    load_json_object,
    objects,
    one_of,
    optional_list,
    require,
    require_list,
    require_str,
    utf8_json,
)
from mockllm.runtime.providers.pairs import Parse, Render, inputs_request
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest

MAX_INPUTS = 96  # Cohere's documented limit per call
INPUT_TYPES = ("search_document", "search_query", "classification", "clustering", "image")
EMBEDDING_TYPES = ("float", "int8", "uint8", "binary", "ubinary", "base64")
OUTPUT_DIMENSIONS = (256, 512, 1024, 1536)
_ROOT = FieldPath()


def _input_texts(value: list[Any], path: FieldPath) -> tuple[str, ...]:
    """``inputs``: each ``{"content": [{"type": "text", "text": …} | {"type": "image_url", …}]}``, its
    text parts joined with "\\n" (an image alone embeds as empty text)."""
    out: list[str] = []
    for at, item in objects(value, path):
        texts: list[str] = []
        for part_at, part in objects(require_list(item, "content", at), at.key("content")):
            if one_of(require(part, "type", part_at), ("text", "image_url"), part_at.key("type")) == "text":
                texts.append(require_str(part, "text", part_at))
        out.append("\n".join(texts))
    return tuple(out)


def _texts(body: dict[str, Any]) -> tuple[str, ...]:
    texts = optional_list(body, "texts", _ROOT)
    inputs = optional_list(body, "inputs", _ROOT)
    images = optional_list(body, "images", _ROOT)
    if texts is not None:
        found = tuple(as_str(t, _ROOT.key("texts").at(i)) for i, t in enumerate(texts))
    elif inputs is not None:
        found = _input_texts(inputs, _ROOT.key("inputs"))
    elif images is not None:
        found = tuple("" for _ in images)
    else:
        raise invalid_value(_ROOT, "one of 'texts', 'images' or 'inputs' must be provided")
    if not found:
        raise invalid_value(_ROOT, "the list of texts, images or inputs must not be empty")
    if len(found) > MAX_INPUTS:
        raise invalid_value(_ROOT, f"at most {MAX_INPUTS} texts, images or inputs per call, got {len(found)}")
    return found


def embedding_types(body: Any) -> tuple[str, ...]:
    raw = body.get("embedding_types") if isinstance(body, dict) else None
    if raw is None:
        return ("float",)
    path = _ROOT.key("embedding_types")
    kinds = tuple(dict.fromkeys(one_of(v, EMBEDDING_TYPES, path.at(i)) for i, v in enumerate(as_list(raw, path))))
    return kinds or ("float",)


def parse_embed(http: HttpRequest) -> ChatRequest:
    body = load_json_object(http.body)
    model = require_str(body, "model", _ROOT)
    one_of(require(body, "input_type", _ROOT), INPUT_TYPES, _ROOT.key("input_type"))
    texts = _texts(body)
    embedding_types(body)
    dimensions = None
    if body.get("output_dimension") is not None:
        dimensions = as_int(body["output_dimension"], _ROOT.key("output_dimension"))
        if dimensions not in OUTPUT_DIMENSIONS:
            allowed = ", ".join(map(str, OUTPUT_DIMENSIONS))
            raise invalid_value(_ROOT.key("output_dimension"), f"must be one of {allowed}, got {dimensions}")
    return inputs_request("cohere", "embeddings", http, model, texts, body, dimensions)


def _clamp(value: float, low: int, high: int) -> int:
    return max(low, min(high, round(value)))


def _packed(vector: Sequence[float], signed: bool) -> list[int]:
    """One bit per dimension (1 for a positive value), eight to a byte, most significant first."""
    out: list[int] = []
    values = list(vector)
    for start in range(0, len(values), 8):
        byte = 0
        for v in values[start : start + 8]:
            byte = (byte << 1) | (1 if v > 0 else 0)
        byte <<= 8 - len(values[start : start + 8])
        out.append(byte - 128 if signed else byte)
    return out


def encoded(kind: str, vector: Sequence[float]) -> str:
    """One vector as ``kind``: int8 and uint8 scale the largest magnitude to the end of the range."""
    if kind == "float":
        return vector_json(vector)
    if kind == "base64":
        return '"' + base64.b64encode(float32_bytes(vector)).decode("ascii") + '"'
    if kind in ("int8", "uint8"):
        scale = max((abs(v) for v in vector), default=0.0) or 1.0
        if kind == "int8":
            return json_text([_clamp(v / scale * 127, -128, 127) for v in vector])
        return json_text([_clamp(v / scale * 127.5 + 127.5, 0, 255) for v in vector])
    return json_text(_packed(vector, signed=kind == "binary"))


def render_embed(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    kinds = embedding_types(chat.body)
    arrays = ",".join(f"{json_text(kind)}:[" + ",".join(encoded(kind, v) for v in plan.vectors) + "]" for kind in kinds)
    meta = {"api_version": {"version": "2"}, "billed_units": {"image_tokens": 0, "input_tokens": plan.input_tokens}}
    body = (
        f'{{"id":{json_text(uuid_for(ctx.response_id))},"embeddings":{{{arrays}}},"texts":{json_text(list(chat.inputs))},'
        f'"meta":{json_text(meta)},"response_type":"embeddings_by_type"}}'
    )
    chars = sum(len(text) for text in chat.inputs)
    headers = (*trace_headers(ctx), *CACHE_HEADERS, *count_headers(chars, plan.input_tokens))
    return Rendered(200, JSON_MEDIA, headers=headers, body=utf8_json(body))


ROUTES: dict[str, tuple[Parse, Render]] = {"cohere.embed": (parse_embed, render_embed), **RERANK_ROUTES}
