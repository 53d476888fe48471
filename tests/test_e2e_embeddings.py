"""Embeddings and moderations through the official SDKs (openai, google-genai, ollama) against a real
server with no script: shapes, dimensions, base64 equal to floats, determinism across two server
processes, the similarity ordering on a fixed corpus, bad input in each provider's error shape, and a
small RAG pipeline per provider that ranks the related document first."""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Iterator, Sequence

import httpx
import ollama
import openai
import pytest
from conftest import Serve
from google.genai import errors as genai_errors
from google.genai import types
from sdk_clients import gm, oa, ol

from mockllm.runtime.embed.embedder import embed
from mockllm.server.background import BackgroundServer

CORPUS = [
    "Invoices are sent on the first day of each month; the invoice total includes VAT.",
    "The weather in Paris today: sunny, 18 degrees, light wind from the west.",
    "To reset your password, open Settings and choose Security.",
    "Our office in Berlin is closed on public holidays.",
]
QUESTION = "What is the weather like in Paris?"
RELATED = 1


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def ranking(query: Sequence[float], docs: Sequence[Sequence[float]]) -> list[int]:
    return sorted(range(len(docs)), key=lambda i: -cosine(query, docs[i]))


@pytest.fixture(scope="module")
def echo() -> Iterator[BackgroundServer]:
    with BackgroundServer(None) as server:
        yield server


# ---------------------------------------------------------------------------------------------------------
# OpenAI


def test_openai_shapes_dimensions_and_usage(echo: BackgroundServer) -> None:
    client = oa(echo.url)
    raw = client.embeddings.with_raw_response.create(model="text-embedding-3-small", input=["hello world", "b"])
    assert raw.headers["x-request-id"].startswith("req_")
    reply = raw.parse()
    assert reply.object == "list" and reply.model == "text-embedding-3-small"
    assert [(d.object, d.index) for d in reply.data] == [("embedding", 0), ("embedding", 1)]
    assert [len(d.embedding) for d in reply.data] == [1536, 1536]
    assert math.isclose(sum(x * x for x in reply.data[0].embedding), 1.0, rel_tol=1e-5)
    assert reply.usage.prompt_tokens == reply.usage.total_tokens == 3  # about 4 characters a token, each input
    large = client.embeddings.create(model="text-embedding-3-large", input="x")
    assert len(large.data[0].embedding) == 3072
    small = client.embeddings.create(model="text-embedding-3-small", input="x", dimensions=256)
    assert len(small.data[0].embedding) == 256


def test_openai_base64_decodes_to_the_float_answer(echo: BackgroundServer) -> None:
    client = oa(echo.url)
    floats = client.embeddings.create(model="text-embedding-3-small", input=CORPUS, encoding_format="float")
    b64 = client.embeddings.create(model="text-embedding-3-small", input=CORPUS, encoding_format="base64")
    for f, b in zip(floats.data, b64.data, strict=True):
        assert isinstance(b.embedding, str)
        raw = base64.b64decode(b.embedding)
        assert list(struct.unpack(f"<{len(raw) // 4}f", raw)) == f.embedding


def test_openai_token_array_input(echo: BackgroundServer) -> None:
    client = oa(echo.url)
    one = client.embeddings.create(model="text-embedding-3-small", input=[791, 1888, 374])
    two = client.embeddings.create(model="text-embedding-3-small", input=[[791, 1888, 374], [791, 1888, 374]])
    assert len(one.data) == 1 and len(two.data) == 2
    assert one.data[0].embedding == two.data[0].embedding == two.data[1].embedding


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"input": []}, "must not be an empty array"),
        ({"input": ""}, "must not be an empty string"),
        ({"input": ["ok", 5]}, "input[1]: expected a string or a token array, got an integer (5)"),
        ({"input": {"text": "x"}}, "input: expected a string, an array of strings or an array of token arrays"),
        ({"input": ["x"] * 10_000}, "at most 2048 inputs is allowed, got 10000"),
        ({"input": "x", "dimensions": 0}, "dimensions: must be at least 1"),
        ({"input": "x", "dimensions": 4096}, "text-embedding-3-small has 1536 dimensions"),
        ({"input": "x", "encoding_format": "int8"}, "encoding_format: 'int8' is not one of 'float', 'base64'"),
    ],
)
def test_openai_bad_input_is_a_400_in_openai_shape(
    echo: BackgroundServer, kwargs: dict[str, object], says: str
) -> None:
    client = oa(echo.url)
    with pytest.raises(openai.BadRequestError) as caught:
        client.embeddings.create(model="text-embedding-3-small", **kwargs)  # type: ignore[arg-type]
    assert caught.value.status_code == 400
    assert says in caught.value.message
    assert isinstance(caught.value.body, dict) and caught.value.body["type"] == "invalid_request_error"


def test_openai_ada_takes_no_dimensions(echo: BackgroundServer) -> None:
    with pytest.raises(openai.BadRequestError, match="does not support specifying dimensions"):
        oa(echo.url).embeddings.create(model="text-embedding-ada-002", input="x", dimensions=8)


def test_openai_moderation_is_not_flagged_without_a_script(echo: BackgroundServer) -> None:
    client = oa(echo.url)
    reply = client.moderations.create(input=["I will hurt you", "hello"])
    assert reply.id.startswith("modr-") and reply.model == "omni-moderation-latest"
    assert [r.flagged for r in reply.results] == [False, False]
    assert reply.results[0].categories.violence is False
    assert reply.results[0].category_scores.violence < 0.01
    parts = client.moderations.create(
        model="omni-moderation-latest",
        input=[{"type": "text", "text": "hello"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
    )
    assert len(parts.results) == 1
    with pytest.raises(openai.BadRequestError, match="must not be an empty array"):
        client.moderations.create(input=[])


# ---------------------------------------------------------------------------------------------------------
# Gemini


@pytest.mark.parametrize("api_version", ["v1beta", "v1"])
def test_gemini_batch_and_output_dimensionality(echo: BackgroundServer, api_version: str) -> None:
    client = gm(echo.url, api_version)
    reply = client.models.embed_content(model="text-embedding-004", contents=["weather in Paris", "invoice total"])
    assert reply.embeddings is not None and [len(e.values or []) for e in reply.embeddings] == [768, 768]
    small = client.models.embed_content(
        model="gemini-embedding-001", contents="x", config=types.EmbedContentConfig(output_dimensionality=64)
    )
    assert small.embeddings is not None and len(small.embeddings[0].values or []) == 64
    big = client.models.embed_content(model="gemini-embedding-001", contents="x")
    assert big.embeddings is not None and len(big.embeddings[0].values or []) == 3072


def test_gemini_embed_content_route_on_the_wire(echo: BackgroundServer) -> None:
    """`:embedContent` is what older clients and the REST docs use (google-genai batches everything)."""
    for version in ("v1beta", "v1"):
        url = f"{echo.url}/{version}/models/text-embedding-004:embedContent"
        body = {"content": {"parts": [{"text": "weather in Paris"}]}, "outputDimensionality": 16}
        reply = httpx.post(url, json=body, headers={"x-goog-api-key": "k"}, timeout=10)
        assert reply.status_code == 200
        assert reply.json()["embedding"]["values"] == embed("weather in Paris", 16)
        empty = httpx.post(url, json={"content": {"parts": []}}, headers={"x-goog-api-key": "k"}, timeout=10)
        assert empty.status_code == 400 and empty.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_gemini_bad_input_is_a_400_in_gemini_shape(echo: BackgroundServer) -> None:
    client = gm(echo.url)
    with pytest.raises(genai_errors.ClientError) as caught:
        client.models.embed_content(model="text-embedding-004", contents=["x"] * 10_000)
    assert caught.value.code == 400 and caught.value.status == "INVALID_ARGUMENT"
    assert "at most 100 requests can be in one batch" in (caught.value.message or "")
    with pytest.raises(genai_errors.ClientError) as too_wide:
        client.models.embed_content(
            model="text-embedding-004", contents="x", config=types.EmbedContentConfig(output_dimensionality=4096)
        )
    assert too_wide.value.code == 400 and "between 1 and 768" in (too_wide.value.message or "")
    with pytest.raises(genai_errors.ClientError) as empty:
        client.models.embed_content(model="text-embedding-004", contents="   ")
    assert empty.value.code == 400 and "no text to embed" in (empty.value.message or "")


# ---------------------------------------------------------------------------------------------------------
# Ollama


def test_ollama_embed_and_embeddings(echo: BackgroundServer) -> None:
    client = ol(echo.url)
    reply = client.embed(model="nomic-embed-text", input=["weather in Paris", "invoice total"])
    assert reply.model == "nomic-embed-text" and [len(v) for v in reply.embeddings] == [768, 768]
    assert reply.prompt_eval_count and reply.prompt_eval_count > 0
    assert client.embed(model="all-minilm:latest", input="x").embeddings[0] == embed("x", 384)
    old = client.embeddings(model="nomic-embed-text", prompt="weather in Paris")
    assert list(old.embedding) == reply.embeddings[0]
    assert client.embed(model="nomic-embed-text", input=[]).embeddings == []


def test_ollama_bad_input_is_an_ollama_error(echo: BackgroundServer) -> None:
    with pytest.raises(ollama.ResponseError) as caught:
        ol(echo.url).embed(model="nomic-embed-text", input="x", dimensions=-3)
    assert caught.value.status_code == 400 and "invalid dimensions" in caught.value.error
    # what the SDK refuses to send itself, on the wire
    wrong = httpx.post(echo.url + "/api/embed", json={"model": "m", "input": [1, 2]}, timeout=10)
    assert wrong.status_code == 400 and wrong.json()["error"].startswith("invalid input type")
    reply = httpx.post(echo.url + "/api/embed", json={"input": "x"}, timeout=10)
    assert reply.status_code == 400 and reply.json() == {"error": "model is required"}


# ---------------------------------------------------------------------------------------------------------
# Determinism and similarity


def test_the_same_vectors_from_two_server_processes(tmp_path: object) -> None:
    from test_serve_cli import serving

    vectors = []
    for _ in range(2):
        with serving() as (_proc, url):
            reply = oa(url).embeddings.create(model="text-embedding-3-small", input=CORPUS, dimensions=512)
            vectors.append([d.embedding for d in reply.data])
    assert vectors[0] == vectors[1]
    assert vectors[0][0] == embed(CORPUS[0], 512)  # and the same as in this process


def openai_vectors(url: str, texts: list[str]) -> list[list[float]]:
    reply = oa(url).embeddings.create(model="text-embedding-3-small", input=texts)
    return [d.embedding for d in reply.data]


def gemini_vectors(url: str, texts: list[str]) -> list[list[float]]:
    client = gm(url)  # held: a google-genai client closes its connection pool when collected
    reply = client.models.embed_content(model="text-embedding-004", contents=texts)  # type: ignore[arg-type]
    assert reply.embeddings is not None
    return [list(e.values or []) for e in reply.embeddings]


def ollama_vectors(url: str, texts: list[str]) -> list[list[float]]:
    return [list(v) for v in ol(url).embed(model="nomic-embed-text", input=texts).embeddings]


EMBEDDERS = {"openai": openai_vectors, "gemini": gemini_vectors, "ollama": ollama_vectors}


@pytest.mark.parametrize("provider", list(EMBEDDERS))
def test_similarity_ordering_on_a_fixed_corpus(echo: BackgroundServer, provider: str) -> None:
    vectors = EMBEDDERS[provider](echo.url, ["weather in Paris", "Paris weather today", "invoice total"])
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.3
    texts = [QUESTION, *CORPUS]
    q, *docs = EMBEDDERS[provider](echo.url, texts)
    assert ranking(q, docs)[0] == RELATED


# ---------------------------------------------------------------------------------------------------------
# The RAG pipeline, end to end, per provider (the chat is answered by the echo responder)


def prompt_for(document: str) -> str:
    return f"Answer from this document.\nDocument: {document}\nQuestion: {QUESTION}"


def openai_chat(url: str, prompt: str) -> str:
    reply = oa(url).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": prompt}])
    return reply.choices[0].message.content or ""


def gemini_chat(url: str, prompt: str) -> str:
    client = gm(url)
    return client.models.generate_content(model="gemini-2.5-flash", contents=prompt).text or ""


def ollama_chat(url: str, prompt: str) -> str:
    return ol(url).chat(model="llama3.2", messages=[{"role": "user", "content": prompt}]).message.content or ""


CHATS = {"openai": openai_chat, "gemini": gemini_chat, "ollama": ollama_chat}


@pytest.mark.parametrize("provider", list(EMBEDDERS))
def test_rag_pipeline_ranks_the_related_document_first(serve: Serve, provider: str) -> None:
    with serve("") as server:
        docs = EMBEDDERS[provider](server.url, CORPUS)
        (query,) = EMBEDDERS[provider](server.url, [QUESTION])
        best = CORPUS[ranking(query, docs)[0]]
        answer = CHATS[provider](server.url, prompt_for(best))
        assert best == CORPUS[RELATED]
        assert "sunny, 18 degrees" in answer
        journal = server.engine.journal()
        assert [e["provider"] for e in journal] == [provider] * 3
        assert [e["status"] for e in journal] == [200, 200, 200]
        assert all(e["echo"] for e in journal)
        assert server.engine.verify()["ok"] is True
