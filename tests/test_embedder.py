"""The default embedder (pure): stable values, unit length, similarity, the dimension table; and the
language forms for embeddings and moderation: parse, fmt, JSON form, builder, checks, matching."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mockllm as m
from mockllm.dsl.check.checks import check
from mockllm.dsl.format.formatter import format_file
from mockllm.dsl.parse.loader import load_text
from mockllm.dsl.parse.parser import parse_text
from mockllm.dsl.tree import nodes as n
from mockllm.dsl.tree.jsonform import from_json_text, to_json_text
from mockllm.runtime.embed.embedder import cosine, embed, embed_sparse, float32_bytes, vector_json
from mockllm.runtime.embed.models import DIMENSIONS, model_dimensions
from mockllm.runtime.engine.conditions import holds
from mockllm.runtime.providers.registry import usual_dimensions
from mockllm.runtime.request import ChatRequest, Message

DOC = Path(__file__).resolve().parent.parent / "docs" / "embeddings.md"


def test_vectors_are_the_same_on_every_machine_and_python() -> None:
    """A digest of the float32 bytes, fixed here: any change to the features or hashing fails this."""
    digest = hashlib.sha256(float32_bytes(embed("weather in Paris", 64))).hexdigest()
    assert digest == GOLDEN_DIGEST
    assert embed("weather in Paris", 64) == embed("weather in Paris", 64)


GOLDEN_DIGEST = "6af8b05cdcde9dbef051994c4b30be240fa01bb6e3a4a7fafe03889701a0c98f"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.integers(min_value=1, max_value=300))
def test_every_vector_has_unit_length(text: str, dims: int) -> None:
    vector = embed(text, dims)
    assert len(vector) == dims
    assert all(math.isfinite(x) for x in vector)
    assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-5)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40), st.integers(min_value=1, max_value=64))
def test_the_sparse_form_reads_and_renders_as_the_dense_one(text: str, dims: int) -> None:
    sparse, dense = embed_sparse(text, dims), embed(text, dims)
    assert len(sparse) == dims and list(sparse) == dense and [sparse[i] for i in range(-dims, dims)] == dense * 2
    assert sparse[1:3] == dense[1:3]
    assert vector_json(sparse) == vector_json(dense) == json.dumps(dense, separators=(",", ":"))
    assert float32_bytes(sparse) == float32_bytes(dense)
    with pytest.raises(IndexError):
        sparse[dims]


def test_texts_sharing_words_are_closer() -> None:
    a, b, c = (embed(t, 1536) for t in ("weather in Paris", "Paris weather today", "invoice total"))
    assert cosine(a, b) > 0.4 > 0.1 > cosine(a, c)
    word = embed("embedding", 768)
    assert cosine(word, embed("embeddings", 768)) > cosine(word, embed("invoice", 768)) + 0.2  # trigrams
    assert cosine(embed("Paris", 768), embed("PARIS", 768)) == pytest.approx(1.0)  # case-folded


def test_model_dimensions() -> None:
    assert model_dimensions("text-embedding-3-small") == 1536
    assert model_dimensions("models/text-embedding-004") == 768
    assert model_dimensions("nomic-embed-text:latest") == 768
    assert model_dimensions("text-embedding-3-large-2025") == 3072
    assert model_dimensions("amazon.titan-embed-text-v2:0") == 1024
    assert usual_dimensions("gemini", "my-own-model") == 768
    assert usual_dimensions("bedrock", "my-own-model") == 1024
    assert usual_dimensions("openai", "text-embedding-004") == 768  # the model's own wins
    assert model_dimensions("my-own-model") == 1536


def test_the_documented_table_is_the_table() -> None:
    rows = re.findall(r"^\| `([^`]+)` \| (\d+) \|$", DOC.read_text(encoding="utf-8"), re.MULTILINE)
    assert {name: int(dims) for name, dims in rows} == DIMENSIONS


# ---------------------------------------------------------------------------------------------------------
# The language


SCRIPT = """\
scenario "Embeddings":
    step pinned:
        when:
            endpoint is "embeddings"
            input contains "refund" ignoring case
        reply:
            vector [0.6, 0.8, 0]
            vector [1, 0, 0]

    step flagged:
        when:
            endpoint is "moderations"
        reply:
            flag "violence", "hate"

    step file:
        when:
            input is present
        reply:
            vectors from "v.json"
"""


def test_fmt_json_form_and_builder_give_the_same_tree() -> None:
    tree, diagnostics = parse_text(SCRIPT, "e.mockllm")
    assert diagnostics == [] and tree is not None
    assert format_file(tree) == SCRIPT
    back, problems = from_json_text(to_json_text(tree), "e.mockllm")
    assert problems == [] and back is not None and back.scenarios == tree.scenarios
    built = (
        m.scenario("Embeddings")
        .step("pinned")
        .when(m.endpoint().is_("embeddings"), m.request_input().contains("refund").ignoring_case())
        .reply(m.vector([0.6, 0.8, 0]), m.vector([1, 0, 0]))
        .step("flagged")
        .when(m.endpoint().is_("moderations"))
        .reply(m.flag("violence", "hate"))
        .step("file")
        .when(m.request_input().is_present())
        .reply(m.vectors_from("v.json"))
    )
    assert built.build() == tree.scenarios[0]


def test_builder_refuses_what_cannot_be_written() -> None:
    with pytest.raises(m.BuilderError, match="unknown moderation category 'violense'"):
        m.flag("violense")
    with pytest.raises(m.BuilderError, match="list of numbers"):
        m.vector(["a"])  # type: ignore[list-item]
    with pytest.raises(m.BuilderError, match="at least one number"):
        m.vector([])


def diagnostics_of(text: str) -> list[tuple[str, str, int]]:
    return [(d.severity, d.code, d.span.line) for d in check(load_text(text, "t.mockllm"))]


def test_checks_of_the_new_forms() -> None:
    text = """\
scenario "Bad":
    step a:
        when:
            endpoint is "embedings"
        reply:
            vector [1, 2, 3]
            vector [1, 2]
    step b:
        when:
            input is present
        reply:
            vector []
            text "hi"
    step c:
        when:
            endpoint is "moderations"
        reply:
            flag "violense"
    step d:
        reply:
            vector [1]
"""
    assert diagnostics_of(text) == [
        ("error", "bad-value", 4),
        ("error", "bad-vector", 7),
        ("error", "bad-vector", 12),
        ("error", "conflicting-reply", 13),
        ("error", "bad-flag", 18),
        ("warning", "unreachable-vectors", 21),
    ]


def test_a_step_naming_an_embedding_model_alone_is_warned_about() -> None:
    """Issue 34: ``model is "text-embedding-3-large"`` alone never applies to embedding calls (they match
    only steps naming `endpoint` or `input`): `check` says so and how to fix it; with `endpoint` it is
    quiet, and a chat model is never warned about."""
    text = """\
scenario "Embeddings down":
    step alone:
        when:
            model is "text-embedding-3-large"
        reply:
            error 503 "The embedding service is overloaded"
    step with_endpoint:
        when:
            endpoint is "embeddings"
            model is "text-embedding-3-large"
        reply:
            error 503 "The embedding service is overloaded"
    step chat_model:
        when:
            model is "gpt-4o"
        reply:
            text "hi"
"""
    assert diagnostics_of(text) == [("warning", "embedding-model-on-chat", 4)]
    library = load_text(text, file="s.mockllm")
    (warning,) = [d for d in check(library) if d.code == "embedding-model-on-chat"]
    assert 'add `endpoint is "embeddings"`' in (warning.hint or "")


def request(operation: str = "chat", inputs: tuple[str, ...] = (), path: str = "/v1/embeddings") -> ChatRequest:
    messages = (Message("user", "hello"),) if operation == "chat" else ()
    return ChatRequest("openai", path, "m", False, messages, operation=operation, inputs=inputs)  # type: ignore[arg-type]


def condition(line: str) -> n.Condition:
    tree, diagnostics = parse_text(
        f'scenario "s":\n    step a:\n        when:\n            {line}\n        reply echo\n'
    )
    assert tree is not None and not diagnostics
    return tree.scenarios[0].steps[0].conditions[0]


def test_input_and_endpoint_operation_conditions() -> None:
    embedding = request("embeddings", ("Where is my refund?", "hello"))
    chat = request(path="/v1/chat/completions")
    assert holds(condition('endpoint is "embeddings"'), embedding)
    assert not holds(condition('endpoint is "embeddings"'), chat)
    assert holds(condition('endpoint is "chat"'), chat)
    assert holds(condition('endpoint is "/v1/embeddings"'), embedding)
    assert holds(condition('input contains "REFUND" ignoring case'), embedding)
    assert holds(condition('input is "hello"'), embedding)
    assert not holds(condition('input contains "refund"'), chat)
    assert holds(condition("input is absent"), chat) and holds(condition("input is present"), embedding)
