"""OpenAI ``POST /v1/embeddings`` and ``POST /v1/moderations``: parsing with OpenAI's limits and error
shape, and rendering vectors (``encoding_format`` float or base64) and moderation results.

``input`` is a string, an array of strings, an array of token ids, or an array of token-id arrays (at
most 2048 entries, none empty). A token array has no text mockllm could decode without a tokenizer,
so it is matched and embedded as its ids written out with spaces (``"791 1888 374"``): equal arrays get
equal vectors, arrays sharing ids are similar. ``dimensions`` is accepted by the ``text-embedding-3``
models (and unknown ones), up to the model's own dimension, as the real API does."""

from __future__ import annotations

import base64
from typing import Any

from mockllm.dsl.tree.nodes import MODERATION_CATEGORIES
from mockllm.runtime.embed.embedder import float32_bytes, vector_json
from mockllm.runtime.embed.models import DIMENSIONS, MAX_DIMENSIONS
from mockllm.runtime.providers.base import ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.common import (
    JSON_MEDIA,
    FieldPath,
    as_int,
    invalid_value,
    json_response,
    json_text,
    load_json_object,
    one_of,
    optional_str,
    require,
    require_str,
    wrong_type,
)
from mockllm.runtime.providers.pairs import Parse, Render, inputs_request
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest

MAX_INPUTS = 2048  # OpenAI's documented limit on an embedding batch
_ROOT = FieldPath()
_INPUT = _ROOT.key("input")
_NO_DIMENSIONS = frozenset({"text-embedding-ada-002"})
DEFAULT_MODERATION_MODEL = "omni-moderation-latest"
_FLAGGED_SCORE = 0.9
_CLEAR_SCORE = 1e-05


def _headers(ctx: RenderContext) -> tuple[tuple[str, str], ...]:
    return (("x-request-id", ctx.request_id),)


def _invalid_input(problem: str) -> ProviderError:
    return invalid_value(_INPUT, problem)


def _is_token(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _tokens_text(ids: list[Any], path: FieldPath) -> str:
    if not ids:
        raise invalid_value(path, "a token array must not be empty")
    for i, t in enumerate(ids):
        if not _is_token(t) or t < 0:
            raise wrong_type(path.at(i), "a token id (a non-negative integer)", t)
    return " ".join(str(t) for t in ids)


def embedding_inputs(value: Any) -> tuple[str, ...]:
    """The texts of an embeddings ``input`` (token arrays as their ids joined by spaces)."""
    if isinstance(value, str):
        if not value:
            raise _invalid_input("must not be an empty string")
        return (value,)
    if not isinstance(value, list):
        raise wrong_type(_INPUT, "a string, an array of strings or an array of token arrays", value)
    if not value:
        raise _invalid_input("must not be an empty array")
    if len(value) > MAX_INPUTS:
        raise _invalid_input(f"an array of at most {MAX_INPUTS} inputs is allowed, got {len(value)}")
    if all(_is_token(v) for v in value):
        return (_tokens_text(value, _INPUT),)
    out: list[str] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            if not item:
                raise invalid_value(_INPUT.at(i), "must not be an empty string")
            out.append(item)
        elif isinstance(item, list):
            out.append(_tokens_text(item, _INPUT.at(i)))
        else:
            raise wrong_type(_INPUT.at(i), "a string or a token array", item)
    return tuple(out)


def _dimensions(body: dict[str, Any], model: str) -> int | None:
    value = body.get("dimensions")
    if value is None:
        return None
    path = _ROOT.key("dimensions")
    dims = as_int(value, path, minimum=1)
    if model in _NO_DIMENSIONS:
        raise ProviderError(400, "This model does not support specifying dimensions.", param="dimensions")
    native = DIMENSIONS.get(model)
    if native is not None and dims > native:
        raise invalid_value(path, f"{model} has {native} dimensions; ask for at most {native}, got {dims}")
    if dims > MAX_DIMENSIONS:
        raise invalid_value(path, f"ask for at most {MAX_DIMENSIONS} dimensions, got {dims}")
    return dims


def parse_embeddings(http: HttpRequest) -> ChatRequest:
    body = load_json_object(http.body)
    model = require_str(body, "model", _ROOT)
    inputs = embedding_inputs(require(body, "input", _ROOT))
    if body.get("encoding_format") is not None:
        one_of(body["encoding_format"], ("float", "base64"), _ROOT.key("encoding_format"))
    optional_str(body, "user", _ROOT)
    return inputs_request("openai", "embeddings", http, model, inputs, body, _dimensions(body, model))


def _usage(plan: MessagePlan) -> dict[str, int]:
    return {"prompt_tokens": plan.input_tokens, "total_tokens": plan.input_tokens}


def render_embeddings(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    """``{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": …}], …}``; the
    vectors are written as JSON text directly (most of a default vector is zeros)."""
    as_base64 = isinstance(chat.body, dict) and chat.body.get("encoding_format") == "base64"
    items: list[str] = []
    for i, vector in enumerate(plan.vectors):
        if as_base64:
            value = '"' + base64.b64encode(float32_bytes(vector)).decode("ascii") + '"'
        else:
            value = vector_json(vector)
        items.append(f'{{"object":"embedding","index":{i},"embedding":{value}}}')
    tail = f',"model":{json_text(plan.model)},"usage":{json_text(_usage(plan))}}}'
    body = ('{"object":"list","data":[' + ",".join(items) + "]" + tail).encode("utf-8")
    return Rendered(200, JSON_MEDIA, headers=_headers(ctx), body=body)


# ---------------------------------------------------------------- moderations


def moderation_inputs(value: Any) -> tuple[str, ...]:
    """The texts of a moderations ``input``: a string, an array of strings (one result each), or an array
    of multi-modal parts (``{"type": "text", …}``, ``{"type": "image_url", …}``: one result in all)."""
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise wrong_type(_INPUT, "a string, an array of strings or an array of input parts", value)
    if not value:
        raise _invalid_input("must not be an empty array")
    if all(isinstance(v, str) for v in value):
        return tuple(value)
    texts: list[str] = []
    for i, part in enumerate(value):
        path = _INPUT.at(i)
        if not isinstance(part, dict):
            raise wrong_type(path, "an input part (an object)", part)
        kind = one_of(require(part, "type", path), ("text", "image_url"), path.key("type"))
        if kind == "text":
            texts.append(require_str(part, "text", path))
    return ("\n".join(texts),)


def parse_moderations(http: HttpRequest) -> ChatRequest:
    body = load_json_object(http.body)
    model = optional_str(body, "model", _ROOT) or DEFAULT_MODERATION_MODEL
    inputs = moderation_inputs(require(body, "input", _ROOT))
    return inputs_request("openai", "moderations", http, model, inputs, body)


def _result(flags: tuple[str, ...]) -> dict[str, Any]:
    return {
        "flagged": bool(flags),
        "categories": {c: c in flags for c in MODERATION_CATEGORIES},
        "category_scores": {c: _FLAGGED_SCORE if c in flags else _CLEAR_SCORE for c in MODERATION_CATEGORIES},
        "category_applied_input_types": {c: ["text"] for c in MODERATION_CATEGORIES},
    }


def render_moderations(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    results = [_result(plan.flags) for _ in chat.inputs]
    payload = {"id": f"modr-{ctx.response_id}", "model": plan.model, "results": results}
    return json_response(payload, headers=_headers(ctx))


ROUTES: dict[str, tuple[Parse, Render]] = {
    "openai.embeddings": (parse_embeddings, render_embeddings),
    "openai.moderations": (parse_moderations, render_moderations),
}
