"""Mistral ``POST /v1/embeddings`` (the path OpenAI's embeddings share; the registry's claim decides):
``input`` is a string or a list of strings, ``output_dimension`` sets the length, ``output_dtype`` is
``float`` (the default), ``int8``, ``uint8``, ``binary`` or ``ubinary`` (each derived from the same
vector as Cohere derives its types), and the answer is ``{"id", "object": "list", "data": [{"object":
"embedding", "embedding": […], "index": i}], "model", "usage"}`` in Mistral's error shape."""

from __future__ import annotations

from mockllm.runtime.embed.models import MAX_DIMENSIONS
from mockllm.runtime.providers.base import RenderContext, Rendered
from mockllm.runtime.providers.cohere_embed import encoded
from mockllm.runtime.providers.common import (
    JSON_MEDIA,
    FieldPath,
    as_int,
    invalid_value,
    json_text,
    load_json_object,
    one_of,
    require,
    require_str,
    utf8_json,
)
from mockllm.runtime.providers.mistral import completion_id, request_headers
from mockllm.runtime.providers.openai_embed import embedding_inputs
from mockllm.runtime.providers.pairs import Parse, Render, inputs_request
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest

OUTPUT_DTYPES = ("float", "int8", "uint8", "binary", "ubinary")
_ROOT = FieldPath()


def _dtype(body: object) -> str:
    value = body.get("output_dtype") if isinstance(body, dict) else None
    return "float" if value is None else one_of(value, OUTPUT_DTYPES, _ROOT.key("output_dtype"))


def parse_embeddings(http: HttpRequest) -> ChatRequest:
    body = load_json_object(http.body)
    model = require_str(body, "model", _ROOT)
    texts = embedding_inputs(require(body, "input", _ROOT))
    _dtype(body)
    dimensions = None
    if body.get("output_dimension") is not None:
        path = _ROOT.key("output_dimension")
        dimensions = as_int(body["output_dimension"], path, minimum=1)
        if dimensions > MAX_DIMENSIONS:
            raise invalid_value(path, f"ask for at most {MAX_DIMENSIONS} dimensions, got {dimensions}")
    return inputs_request("mistral", "embeddings", http, model, texts, body, dimensions)


def render_embeddings(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    dtype = _dtype(chat.body)
    items = ",".join(
        f'{{"object":"embedding","embedding":{encoded(dtype, v)},"index":{i}}}' for i, v in enumerate(plan.vectors)
    )
    usage = {"prompt_tokens": plan.input_tokens, "total_tokens": plan.input_tokens, "completion_tokens": 0}
    body = (
        f'{{"id":"{completion_id(ctx.response_id)}","object":"list","data":[{items}],'
        f'"model":{json_text(plan.model)},"usage":{json_text(usage)}}}'
    )
    return Rendered(200, JSON_MEDIA, headers=request_headers(ctx), body=utf8_json(body))


ROUTES: dict[str, tuple[Parse, Render]] = {"mistral.embeddings": (parse_embeddings, render_embeddings)}
