"""Embedding calls through `mockllm record` become `vector` steps: OpenAI `/v1/embeddings` (floats, and
base64 as the official SDK asks by default), Gemini `embedContent` and `batchEmbedContents`, Ollama
`/api/embed`. Served, the script gives the same SDK calls the same vectors, whatever order they come
in, and chat scenarios of the same session are left alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import ollama
import openai
import pytest
from google import genai
from google.genai import types
from recording_clients import KEY
from test_recording import check_clean, recorder, replay

DOCS = ["The weather in Lima is mild all year.", "Invoices are due within thirty days."]
QUERY = "How warm is Lima?"
Vectors = list[list[float]]


def openai_embed(url: str, texts: list[str], **extra: Any) -> Vectors:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as c:
        r = c.embeddings.create(model="text-embedding-3-small", input=texts, dimensions=8, **extra)
        return [d.embedding for d in r.data]


def openai_floats(url: str, texts: list[str]) -> Vectors:
    return openai_embed(url, texts, encoding_format="float")


def gemini_embed(url: str, texts: list[str]) -> Vectors:
    with genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=url)) as c:
        config = types.EmbedContentConfig(output_dimensionality=8)
        r = c.models.embed_content(model="gemini-embedding-001", contents=texts, config=config)  # type: ignore[arg-type]
        return [list(e.values or []) for e in r.embeddings or []]


def gemini_one(url: str, texts: list[str]) -> Vectors:
    """One text at a time: ``embedContent`` rather than the batch route."""
    return [v for t in texts for v in gemini_embed(url, [t])]


def ollama_embed(url: str, texts: list[str]) -> Vectors:
    with ollama.Client(host=url) as c:
        return [list(v) for v in c.embed(model="nomic-embed-text", input=texts, dimensions=8).embeddings]


CLIENTS: dict[str, Callable[[str, list[str]], Vectors]] = {
    "openai-base64": openai_embed,
    "openai-float": openai_floats,
    "gemini-batch": gemini_embed,
    "gemini-one": gemini_one,
    "ollama": ollama_embed,
}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_embeddings_record_as_vector_steps_and_replay_the_same_vectors(
    tmp_path: Path, serve_text: Any, client: str
) -> None:
    embed = CLIENTS[client]
    with serve_text("") as upstream, recorder(upstream, tmp_path) as (url, _):
        documents, query = embed(url, DOCS), embed(url, [QUERY])
    assert len(documents) == 2 and all(len(v) == 8 for v in documents + query)
    [script] = check_clean(tmp_path)
    text = script.read_text(encoding="utf-8")
    assert text.count("vector [") == 3 and "order any" in text and KEY not in text
    assert 'endpoint is "embeddings"' in text and f'input is "{QUERY}"' in text
    with replay(tmp_path) as server:  # the other order: the steps answer by their input
        assert embed(server.url, [QUERY]) == query
        assert embed(server.url, DOCS) == documents


def test_embeddings_and_chat_of_one_session_go_to_separate_scripts(tmp_path: Path, serve_text: Any) -> None:
    with serve_text("") as upstream, recorder(upstream, tmp_path) as (url, _):
        vectors = openai_embed(url, DOCS)
        with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as c:
            said = c.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUERY}])
    files = check_clean(tmp_path)
    assert len(files) == 2
    with replay(tmp_path) as server:
        with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as c:
            again = c.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUERY}])
        assert again.choices[0].message.content == said.choices[0].message.content == QUERY
        assert openai_embed(server.url, DOCS) == vectors
