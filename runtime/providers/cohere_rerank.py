"""Cohere rerank, ``POST /v2/rerank`` and the ``/v1/rerank`` shape other services copy: a ``query`` and
``documents`` in (v2: strings; v1 also ``{"text": …}`` objects), the documents' indexes ranked by
relevance out, ``top_n`` of them, ``{"id", "results": [{"index", "relevance_score"}], "meta"}`` (v1
with ``return_documents``: each result's ``document``), in Cohere's error shape.

The request's inputs are the query then the documents, so ``input contains …`` holds when either
does and ``endpoint is "rerank"`` names the operation. The ranking is the default embedder's: each
document's cosine similarity to the query (the same vectors an embedding call of those texts gets),
as ``(1 + cosine) / 2``, so the order is the one a RAG test's retrieval step would see; ties keep the
documents' order. A scripted step answers with ``error``, ``latency``, ``usage`` and the like, as an
embedding step does."""

from __future__ import annotations

from typing import Any

from mockllm.runtime.embed.embedder import cosine
from mockllm.runtime.providers.base import RenderContext, Rendered
from mockllm.runtime.providers.cohere import CACHE_HEADERS, trace_headers, uuid_for
from mockllm.runtime.providers.common import (
    FieldPath,
    as_int,
    invalid_value,
    json_response,
    load_json_object,
    require_list,
    require_str,
)
from mockllm.runtime.providers.pairs import Parse, Render, inputs_request
from mockllm.runtime.reply.plan import MessagePlan
from mockllm.runtime.request import ChatRequest, HttpRequest

__all__ = ["ROUTES", "parse_rerank", "ranking", "render_rerank"]

MAX_DOCUMENTS = 1000  # Cohere's documented limit per call
_ROOT = FieldPath()


def _documents(body: dict[str, Any], v1: bool) -> tuple[str, ...]:
    raw = require_list(body, "documents", _ROOT)
    path = _ROOT.key("documents")
    out: list[str] = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            out.append(item)
        elif v1 and isinstance(item, dict):
            out.append(require_str(item, "text", path.at(i)))
        else:
            raise invalid_value(path.at(i), "must be a string" + (" or an object with 'text'" if v1 else ""))
    if not out:
        raise invalid_value(path, "must contain at least one document")
    if len(out) > MAX_DOCUMENTS:
        raise invalid_value(path, f"at most {MAX_DOCUMENTS} documents per call, got {len(out)}")
    return tuple(out)


def parse_rerank(http: HttpRequest) -> ChatRequest:
    body = load_json_object(http.body)
    v1 = http.path.startswith("/v1/")
    model = require_str(body, "model", _ROOT)
    query = require_str(body, "query", _ROOT)
    documents = _documents(body, v1)
    if body.get("top_n") is not None:
        top = as_int(body["top_n"], _ROOT.key("top_n"))
        if top < 1:
            raise invalid_value(_ROOT.key("top_n"), f"must be at least 1, got {top}")
    return inputs_request("cohere", "rerank", http, model, (query, *documents), body)


def ranking(plan: MessagePlan) -> list[tuple[int, float]]:
    """(document index, relevance score) from most to least relevant: each document's vector against
    the query's (the plan's first vector)."""
    query, *documents = plan.vectors
    scored = [(i, round((1.0 + cosine(query, vector)) / 2.0, 8)) for i, vector in enumerate(documents)]
    return sorted(scored, key=lambda pair: -pair[1])


def render_rerank(plan: MessagePlan, chat: ChatRequest, ctx: RenderContext) -> Rendered:
    body = chat.body if isinstance(chat.body, dict) else {}
    v1 = chat.endpoint.startswith("/v1/")
    ranked = ranking(plan)
    top = body.get("top_n")
    if isinstance(top, int):
        ranked = ranked[:top]
    documents = chat.inputs[1:]
    results: list[dict[str, Any]] = []
    for index, score in ranked:
        result: dict[str, Any] = {"index": index, "relevance_score": score}
        if v1 and body.get("return_documents"):
            result["document"] = {"text": documents[index]}
        results.append(result)
    meta = {"api_version": {"version": "1" if v1 else "2"}, "billed_units": {"search_units": 1}}
    answer = {"id": uuid_for(ctx.response_id), "results": results, "meta": meta}
    return json_response(answer, headers=(*trace_headers(ctx), *CACHE_HEADERS))


ROUTES: dict[str, tuple[Parse, Render]] = {
    "cohere.rerank": (parse_rerank, render_rerank),
}
