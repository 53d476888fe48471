"""Vertex AI Gemini (docs/providers/vertex.md): Gemini's bodies on Vertex's resource paths.

Routes: ``/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:{method}`` for
``generateContent``, ``streamGenerateContent``, ``countTokens``, ``embedContent``,
``batchEmbedContents`` and ``predict`` (embeddings of the ``text-embedding-*`` models), the same under
``/v1beta1/`` (google-genai's default for Vertex), and the express-mode paths without the project
(``/v1beta1/publishers/google/models/{model}:{method}``). The Gemini adapter parses and renders; this
module adds what Vertex adds:

- auth: an OAuth ``Authorization: Bearer`` token (express mode: ``x-goog-api-key`` or ``?key=``),
  else 401 ``UNAUTHENTICATED``, as Google's front end answers;
- ``createTime`` on every answer and ``trafficType`` and ``candidatesTokensDetails`` in its usage, no
  ``index`` on its candidates, and an ``id`` on each function call of a gemini-3 model, as Vertex
  reports them (recorded Vertex traffic, ``tests/test_fidelity_recordings.py``);
- ``promptTokensDetails`` in an ``embedContent`` answer's usage.
"""

from __future__ import annotations

import datetime
from typing import Any

import attrs

from mockllm.runtime.embed.embedder import vector_json
from mockllm.runtime.embed.models import DIMENSIONS, MAX_DIMENSIONS
from mockllm.runtime.providers import common
from mockllm.runtime.providers.base import ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.gemini import GeminiAdapter, _bad, _get, _list, _load_body, _obj, _target
from mockllm.runtime.providers.gemini_embed import parse_batch, parse_embed, render_batch
from mockllm.runtime.providers.pairs import Parse, Render, inputs_request
from mockllm.runtime.reply.ids import hex_id
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest, Provider

__all__ = ["ROUTES", "VertexAdapter"]

NO_CREDENTIALS = (
    "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or "
    "other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
)
MAX_INSTANCES = 250  # Vertex's limit on one text-embedding predict request


def _create_time(ctx: RenderContext) -> str:
    moment = datetime.datetime.fromtimestamp(ctx.created, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class VertexAdapter(GeminiAdapter):
    """generateContent and streamGenerateContent on Vertex's paths."""

    provider: Provider = "vertex"

    def check_auth(self, http: HttpRequest) -> ProviderError | None:
        if common.bearer_token(http.headers) is not None or super().check_auth(http) is None:
            return None
        return ProviderError(401, NO_CREDENTIALS, code="UNAUTHENTICATED")

    def answer(self, response: dict[str, Any], ctx: RenderContext) -> dict[str, Any]:
        """Gemini's response as Vertex reports it: ``createTime``; ``candidatesTokensDetails`` and
        ``trafficType`` in the usage; candidates without ``index``; function calls of gemini-3 models
        with an ``id`` (eight lower-case letters)."""
        usage = response.get("usageMetadata")
        if isinstance(usage, dict):
            if "candidatesTokenCount" in usage:
                details = [{"modality": "TEXT", "tokenCount": usage["candidatesTokenCount"]}]
                usage["candidatesTokensDetails"] = details
            usage["trafficType"] = "ON_DEMAND"
        gemini_3 = str(response.get("modelVersion", "")).startswith("gemini-3")
        for candidate in response.get("candidates", ()):
            candidate.pop("index", None)
            parts = candidate.get("content", {}).get("parts", ())
            for i, part in enumerate(parts):
                call = part.get("functionCall")
                if gemini_3 and isinstance(call, dict) and "id" not in call:
                    part["functionCall"] = {"id": function_call_id(ctx, i), **call}
        response["createTime"] = _create_time(ctx)
        return response


def function_call_id(ctx: RenderContext, index: int) -> str:
    """A Vertex function call's ``id``: eight lower-case letters, from the response and the part's place."""
    digits = hex_id(f"{ctx.response_id}:{index}", 0, 16)
    return "".join(chr(ord("a") + int(digits[j : j + 2], 16) % 26) for j in range(0, 16, 2))


# ---------------------------------------------------------------- embeddings


def _as_vertex(parse: Parse) -> Parse:
    def parse_vertex(http: HttpRequest) -> ChatRequest:
        return attrs.evolve(parse(http), provider="vertex")

    return parse_vertex


def parse_predict(http: HttpRequest) -> ChatRequest:
    """``:predict`` for the ``text-embedding-*`` models: ``{"instances": [{"content": …}], "parameters":
    {"outputDimensionality": N}}``."""
    model = _target(http).model
    data = _load_body(http.body)
    instances = _get(data, "instances")
    if not instances:
        raise _bad("* PredictRequest.instances: instances is not specified")
    instances = _list(instances, "instances")
    if len(instances) > MAX_INSTANCES:
        raise _bad(f"* PredictRequest.instances: at most {MAX_INSTANCES} instances can be in one request")
    texts: list[str] = []
    for i, raw in enumerate(instances):
        content = _obj(raw, f"instances[{i}]").get("content")
        if not isinstance(content, str) or not content.strip():
            raise _bad(f"* PredictRequest.instances[{i}].content: the instance has no text to embed")
        texts.append(content)
    parameters = _obj(_get(data, "parameters") or {}, "parameters")
    dims = _get(parameters, "outputDimensionality")
    if dims is not None:
        top = DIMENSIONS.get(model, MAX_DIMENSIONS)
        if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= top:
            raise _bad(f"* parameters.output_dimensionality: must be between 1 and {top}, got {common.describe(dims)}")
    return inputs_request("vertex", "embeddings", http, model, tuple(texts), data, dims)


def render_predict(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    """``{"predictions": [{"embeddings": {"values", "statistics"}}], "metadata": {"billableCharacterCount"}}``."""
    count = max(1, plan.input_tokens // max(1, len(plan.vectors)))
    statistics = common.json_text({"truncated": False, "token_count": count})
    items = ",".join(f'{{"embeddings":{{"values":{vector_json(v)},"statistics":{statistics}}}}}' for v in plan.vectors)
    characters = sum(len(text) for text in chat.inputs)
    body = f'{{"predictions":[{items}],"metadata":{{"billableCharacterCount":{characters}}}}}'
    return Rendered(200, "application/json; charset=UTF-8", body=body.encode("utf-8"))


def render_embed_vertex(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    """Gemini's ``embedContent`` answer with the usage's ``promptTokensDetails``, as Vertex sends it."""
    values = vector_json(plan.vectors[0]) if plan.vectors else "[]"
    count = plan.input_tokens
    usage = {
        "promptTokenCount": count,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": count}],
        "totalTokenCount": count,
    }
    body = f'{{"embedding":{{"values":{values}}},"usageMetadata":{common.json_text(usage)}}}'
    return Rendered(200, "application/json; charset=UTF-8", body=body.encode("utf-8"))


ROUTES: dict[str, tuple[Parse, Render]] = {
    "vertex.embedContent": (_as_vertex(parse_embed), render_embed_vertex),
    "vertex.batchEmbedContents": (_as_vertex(parse_batch), render_batch),
    "vertex.predict": (parse_predict, render_predict),
}
