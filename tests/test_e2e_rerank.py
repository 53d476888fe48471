"""Rerank (issue 34): Cohere's ``POST /v2/rerank`` through ``cohere.ClientV2.rerank`` and the ``/v1/rerank``
shape other services copy, on a real server. The default ranking is the default embedder's similarity
(deterministic, the same order every run); a step naming ``endpoint is "rerank"`` scripts it like an
embedding call; a chat scenario's steps are never used up by rerank calls."""

from __future__ import annotations

import httpx
import pytest
from conftest import ServeText
from sdk_clients import cohere_v2

DOCS = [
    "The cafeteria opens at 8am on weekdays.",
    "Refunds are paid back to the original card within 5 days.",
    "Our refund policy allows returns within 30 days of purchase.",
    "Parking is free for visitors.",
]
QUERY = "how do refunds work"

SCRIPT = """
scenario "Support":
    step greet:
        when:
            last user message contains "refund"
        reply:
            text "Refunds take five days."

scenario "Reranker down":
    step down:
        when:
            endpoint is "rerank"
            input contains "outage"
        reply:
            error 400 "invalid request: the reranker is switched off"
        always
"""


def test_default_ranking_puts_the_relevant_documents_first_every_time(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        client = cohere_v2(url)
        first = client.rerank(model="rerank-v3.5", query=QUERY, documents=DOCS)
        again = client.rerank(model="rerank-v3.5", query=QUERY, documents=DOCS)
        top = client.rerank(model="rerank-v3.5", query=QUERY, documents=DOCS, top_n=2)
        # the chat scenario's step was not used up by the rerank calls
        chat = client.chat(model="command-a-03-2025", messages=[{"role": "user", "content": "refund?"}])
    order = [r.index for r in first.results]
    assert sorted(order) == [0, 1, 2, 3] and set(order[:2]) == {1, 2}, order
    scores = [r.relevance_score for r in first.results]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
    assert [(r.index, r.relevance_score) for r in again.results] == [
        (r.index, r.relevance_score) for r in first.results
    ]
    assert [r.index for r in top.results] == order[:2]
    assert first.meta is not None and first.meta.billed_units is not None and first.meta.billed_units.search_units == 1
    assert chat.message.content is not None and chat.message.content[0].text == "Refunds take five days."  # type: ignore[union-attr]


def test_a_step_naming_rerank_scripts_it(serve_text: ServeText) -> None:
    import cohere

    with serve_text(SCRIPT) as url:
        with pytest.raises(cohere.core.ApiError) as err:
            cohere_v2(url).rerank(model="rerank-v3.5", query="outage drill", documents=DOCS)
    assert err.value.status_code == 400
    assert "reranker is switched off" in str(err.value.body)


def test_v1_shape_with_documents_returned_and_bad_requests(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        auth = {"authorization": "Bearer k"}
        body = {"model": "rerank-english-v3.0", "query": QUERY, "return_documents": True, "top_n": 1}
        v1 = httpx.post(url + "/v1/rerank", headers=auth, json={**body, "documents": [{"text": d} for d in DOCS]})
        empty = httpx.post(url + "/v2/rerank", headers=auth, json={"model": "m", "query": "q", "documents": []})
        no_query = httpx.post(url + "/v2/rerank", headers=auth, json={"model": "m", "documents": ["a"]})
    assert v1.status_code == 200, v1.text
    answer = v1.json()
    assert answer["meta"]["api_version"]["version"] == "1"
    [result] = answer["results"]
    assert result["index"] in (1, 2) and result["document"] == {"text": DOCS[result["index"]]}
    assert empty.status_code == 400 and "documents" in empty.json()["message"]
    assert no_query.status_code == 400 and "query" in no_query.json()["message"]


def test_retrieve_rerank_answer(serve_text: ServeText) -> None:
    """A RAG path on the defaults: embed the documents and the question, keep the three nearest, rerank
    them, answer from the best; the script only scripts the answer (it checks the context it got)."""
    import math

    script = """
scenario "RAG":
    step answer:
        when:
            last user message contains "original card"
        reply:
            text "Refunds go back to your card within 5 days."
"""
    with serve_text(script) as url:
        client = cohere_v2(url)
        docs = client.embed(model="embed-v4.0", texts=DOCS, input_type="search_document", embedding_types=["float"])
        query = client.embed(model="embed-v4.0", texts=[QUERY], input_type="search_query", embedding_types=["float"])
        assert docs.embeddings.float_ is not None and query.embeddings.float_ is not None
        q = query.embeddings.float_[0]

        def cos(v: list[float]) -> float:
            return sum(a * b for a, b in zip(q, v, strict=True)) / (
                math.sqrt(sum(a * a for a in q)) * math.sqrt(sum(b * b for b in v))
            )

        nearest = sorted(range(len(DOCS)), key=lambda i: -cos(docs.embeddings.float_[i]))[:3]  # type: ignore[index]
        reranked = client.rerank(model="rerank-v3.5", query=QUERY, documents=[DOCS[i] for i in nearest])
        best = DOCS[nearest[reranked.results[0].index]]
        answer = client.chat(
            model="command-a-03-2025", messages=[{"role": "user", "content": f"Context: {best}\n\n{QUERY}"}]
        )
    assert best == DOCS[1]
    assert answer.message.content is not None and answer.message.content[0].text.startswith("Refunds go back")  # type: ignore[union-attr]
