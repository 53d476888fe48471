"""Embedding calls through `mockllm record` become `vector` steps with the input count the provider
reported (`usage N in, 0 out`), for every provider that serves embeddings: OpenAI `/v1/embeddings`
(floats, and base64 as the official SDK asks by default), Azure's deployment route, Mistral's
`/v1/embeddings` (told from OpenAI's by its SDK, as in serving), Gemini `embedContent` and
`batchEmbedContents`, Vertex, Ollama `/api/embed`, Cohere `/v2/embed`, and Bedrock `invoke` with
Titan and Cohere Embed bodies. The upstream answers with a scripted vector and count, which the
default embedder would not give: served, the script gives the same SDK calls the same vectors and
counts, whatever order they come in, and chat scenarios of the same session are left alone."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cohere
import httpx
import httpx2
import ollama
import openai
import pytest
from google import genai
from google.genai import types
from mistralai.client import Mistral
from recording_clients import KEY, bedrock_client, vertex_client
from sdk_clients import opened
from test_recording import check_clean, recorder, replay

DOCS = ["The weather in Lima is mild all year.", "Invoices are due within thirty days."]
QUERY = "How warm is Lima?"
#: the upstream: the first input of every call gets this vector (the others the default embedder's),
#: and every call reports 77 input tokens
UPSTREAM = """
scenario "Embeddings":
    step embed:
        when:
            endpoint is "embeddings"
        always
        reply:
            vector [0.5, -0.5, 0.25, 0.75, 0, 0, 0, 0]
            usage 77 in, 0 out
"""
#: what the client sees of one embedding call: the vectors, and the token count as its SDK shows it
Seen = tuple[list[list[float]], Any]


def openai_embed(url: str, texts: list[str], **extra: Any) -> Seen:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as c:
        r = c.embeddings.create(model="text-embedding-3-small", input=texts, dimensions=8, **extra)
        return [d.embedding for d in r.data], r.usage.prompt_tokens


def openai_floats(url: str, texts: list[str]) -> Seen:
    return openai_embed(url, texts, encoding_format="float")


def azure_embed(url: str, texts: list[str]) -> Seen:
    with openai.AzureOpenAI(azure_endpoint=url, api_version="2024-10-21", api_key=KEY, max_retries=0) as c:
        r = c.embeddings.create(model="embed-deployment", input=texts, dimensions=8)
        return [d.embedding for d in r.data], r.usage.prompt_tokens


def mistral_embed(url: str, texts: list[str]) -> Seen:
    r = Mistral(server_url=url, api_key=KEY, client=opened(httpx2.Client())).embeddings.create(
        model="mistral-embed", inputs=texts
    )
    return [list(d.embedding or []) for d in r.data], r.usage.prompt_tokens


def _genai_embed(client: genai.Client, texts: list[str]) -> Seen:
    with client as c:
        config = types.EmbedContentConfig(output_dimensionality=8)
        r = c.models.embed_content(model="gemini-embedding-001", contents=texts, config=config)  # type: ignore[arg-type]
        stats = [e.statistics.token_count if e.statistics else None for e in r.embeddings or []]
        return [list(e.values or []) for e in r.embeddings or []], (stats, r.metadata)


def gemini_embed(url: str, texts: list[str]) -> Seen:
    return _genai_embed(opened(genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=url))), texts)


def gemini_one(url: str, texts: list[str]) -> Seen:
    """One text at a time: ``embedContent`` rather than the batch route."""
    return _one_by_one(gemini_embed, url, texts)


def vertex_embed(url: str, texts: list[str]) -> Seen:
    return _genai_embed(vertex_client(url), texts)


def ollama_embed(url: str, texts: list[str]) -> Seen:
    with ollama.Client(host=url) as c:
        r = c.embed(model="nomic-embed-text", input=texts, dimensions=8)
        return [list(v) for v in r.embeddings], r.prompt_eval_count


def cohere_embed(url: str, texts: list[str]) -> Seen:
    co = cohere.ClientV2(base_url=url, api_key=KEY, httpx_client=opened(httpx.Client(timeout=60)))
    r = co.embed(model="embed-v4.0", texts=texts, input_type="search_document", embedding_types=["float"])
    assert r.embeddings.float_ is not None and r.meta is not None and r.meta.billed_units is not None
    return [list(v) for v in r.embeddings.float_], r.meta.billed_units.input_tokens


def bedrock_titan(url: str, texts: list[str]) -> Seen:
    """Titan Text Embeddings takes one text per call."""
    out: Seen = ([], [])
    client = bedrock_client(url)
    for text in texts:
        r = client.invoke_model(modelId="amazon.titan-embed-text-v2:0", body=json.dumps({"inputText": text}))
        body = json.loads(r["body"].read())
        out[0].append(body["embedding"])
        out[1].append(body["inputTextTokenCount"])
    return out


def bedrock_cohere(url: str, texts: list[str]) -> Seen:
    body = json.dumps({"texts": texts, "input_type": "search_document"})
    r = bedrock_client(url).invoke_model(modelId="cohere.embed-english-v3", body=body)
    count = r["ResponseMetadata"]["HTTPHeaders"]["x-amzn-bedrock-input-token-count"]
    return json.loads(r["body"].read())["embeddings"], count


def _one_by_one(embed: Callable[[str, list[str]], Seen], url: str, texts: list[str]) -> Seen:
    seen = [embed(url, [t]) for t in texts]
    return [v for vectors, _ in seen for v in vectors], [usage for _, usage in seen]


CLIENTS: dict[str, Callable[[str, list[str]], Seen]] = {
    "openai-base64": openai_embed,
    "openai-float": openai_floats,
    "azure": azure_embed,
    "mistral": mistral_embed,
    "gemini-batch": gemini_embed,
    "gemini-one": gemini_one,
    "vertex": vertex_embed,
    "ollama": ollama_embed,
    "cohere": cohere_embed,
    "bedrock-titan": bedrock_titan,
    "bedrock-cohere": bedrock_cohere,
}


@pytest.mark.parametrize("embed", CLIENTS.values(), ids=CLIENTS.keys())
def test_embeddings_record_as_vector_steps_and_replay_the_same_vectors(
    tmp_path: Path, serve_text: Any, embed: Callable[[str, list[str]], Seen]
) -> None:
    with serve_text(UPSTREAM) as upstream, recorder(upstream, tmp_path) as (url, _):
        documents, query = embed(url, DOCS), embed(url, [QUERY])
    assert len(documents[0]) == 2 and all(len(v) == 8 for v in documents[0] + query[0])
    assert query[0][0] == [0.5, -0.5, 0.25, 0.75, 0, 0, 0, 0]  # the upstream's vector, not the default embedder's
    [script] = check_clean(tmp_path)
    text = script.read_text(encoding="utf-8")
    assert text.count("vector [") == 3 and "order any" in text and KEY not in text
    assert 'endpoint is "embeddings"' in text and f'input is "{QUERY}"' in text
    assert "in, 0 out" in text  # the input count the provider reported
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
