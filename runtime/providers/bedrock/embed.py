"""Bedrock InvokeModel with embedding bodies: Amazon Titan Text Embeddings (``{"inputText", "dimensions",
"normalize"}`` → ``{"embedding", "inputTextTokenCount"}``, and ``embeddingsByType`` for v2) and Cohere
Embed (``{"texts", "input_type", "embedding_types"}`` → ``{"embeddings", "id", "response_type",
"texts"}``). The vectors come from the script or the default embedder, like every embedding route."""

from __future__ import annotations

from typing import Any

from mockllm.runtime.embed.embedder import vector_json
from mockllm.runtime.embed.models import MAX_DIMENSIONS
from mockllm.runtime.providers.base import ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.bedrock.wire import JSON_MEDIA, request_id
from mockllm.runtime.providers.common import describe, json_text
from mockllm.runtime.providers.pairs import inputs_request
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest

TITAN_V2_DIMENSIONS = (256, 512, 1024)
MAX_TEXTS = 96  # Cohere Embed's limit per call


def _malformed(problem: str) -> ProviderError:
    return ProviderError(400, f"Malformed input request: {problem}, please reformat your input and try again.")


def is_embedding(body: dict[str, Any], model: str) -> bool:
    """A Cohere Embed body (``texts``), or a Titan body with ``inputText`` that is not a Titan Text
    generation request (those name no embedding model and carry no embedding options)."""
    if "texts" in body:
        return True
    if "inputText" not in body or "textGenerationConfig" in body:
        return False
    return "embed" in model or any(key in body for key in ("dimensions", "normalize", "embeddingTypes"))


def parse_embed(http: HttpRequest, model: str, body: dict[str, Any]) -> ChatRequest:
    if "inputText" in body:
        text = body["inputText"]
        if not isinstance(text, str):
            raise _malformed(f"#/inputText: expected type: String, found: {describe(text)}")
        return inputs_request("bedrock", "embeddings", http, model, (text,), body, _titan_dimensions(body))
    texts = body["texts"]
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise _malformed("#/texts: expected an array of strings")
    if not 1 <= len(texts) <= MAX_TEXTS:
        raise _malformed(f"#/texts: expected between 1 and {MAX_TEXTS} texts, got {len(texts)}")
    return inputs_request("bedrock", "embeddings", http, model, tuple(texts), body)


def _titan_dimensions(body: dict[str, Any]) -> int | None:
    value = body.get("dimensions")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIMENSIONS:
        raise _malformed(f"#/dimensions: {describe(value)} is not a valid value")
    return value


def render_embed(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    body: dict[str, Any] = chat.body
    headers = (
        ("x-amzn-requestid", request_id(ctx)),
        ("x-amzn-bedrock-input-token-count", str(plan.input_tokens)),
    )
    if "inputText" in body:
        vector = vector_json(plan.vectors[0]) if plan.vectors else "[]"
        by_type = f',"embeddingsByType":{{"float":{vector}}}' if "v1" not in chat.model else ""
        text = f'{{"embedding":{vector}{by_type},"inputTextTokenCount":{plan.input_tokens}}}'
    else:
        vectors = "[" + ",".join(vector_json(v) for v in plan.vectors) + "]"
        typed = isinstance(body.get("embedding_types"), list)
        embeddings = f'{{"float":{vectors}}}' if typed else vectors
        kind = "embeddings_by_type" if typed else "embeddings_floats"
        head = f'{{"embeddings":{embeddings},"id":"{request_id(ctx)}","response_type":"{kind}"'
        text = f'{head},"texts":{json_text(list(chat.inputs))}}}'
    return Rendered(status=200, media_type=JSON_MEDIA, headers=headers, body=text.encode("utf-8"))


__all__ = ["is_embedding", "parse_embed", "render_embed"]
