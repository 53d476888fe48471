"""Scripted embedding and moderation answers through the official SDKs: vectors (inline and from a
file), errors in each provider's shape, faults, flags, `input` and `endpoint` conditions, chat steps
left alone by embedding calls, and the journal and `verify` seeing it all."""

from __future__ import annotations

import json
from pathlib import Path

import ollama
import openai
import pytest
from conftest import Serve
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from sdk_clients import oa, opened

from mockllm.dsl.machines.compiler import compile_library
from mockllm.dsl.parse.loader import load_text
from mockllm.runtime.embed.embedder import embed, to_float32

SCRIPT = """
scenario "Embeddings":
    step outage:
        when:
            endpoint is "embeddings"
            input contains "fail"
        reply:
            error 429 "Rate limit reached for embeddings"

    step pinned:
        when:
            endpoint is "embeddings"
        reply:
            vector [0.6, 0.8, 0.0]
            vector [0.0, 0.6, 0.8]
        always

scenario "Moderation":
    step threat:
        when:
            input matches /\\bhurt\\b/i
            endpoint is "moderations"
        reply:
            flag "violence", "harassment/threatening"
        always

scenario "Chat":
    step hello:
        reply:
            text "hello back"
"""
PINNED = [to_float32([0.6, 0.8, 0.0]), to_float32([0.0, 0.6, 0.8])]


def test_openai_scripted_error_vectors_flags_and_chat(serve: Serve) -> None:
    with serve(SCRIPT) as server:
        client = oa(server.url)
        with pytest.raises(openai.RateLimitError) as caught:
            client.embeddings.create(model="text-embedding-3-small", input=["please fail"])
        assert (
            isinstance(caught.value.body, dict) and caught.value.body["message"] == "Rate limit reached for embeddings"
        )
        reply = client.embeddings.create(model="text-embedding-3-small", input=["a", "b", "c"])
        assert [d.embedding for d in reply.data[:2]] == PINNED
        assert reply.data[2].embedding == embed("c", 3)  # beyond the script: the default, at its dimension
        flagged = client.moderations.create(input=["I will HURT you", "hi"])
        assert [r.flagged for r in flagged.results] == [True, True]  # a step's flags apply to the request
        assert flagged.results[0].categories.harassment_threatening is True
        assert flagged.results[0].categories.hate is False
        assert not client.moderations.create(input="hi").results[0].flagged
        # the chat scenario's first step was never used by the calls above
        chat = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert chat.choices[0].message.content == "hello back"
        journal = server.engine.journal()
        assert [(e["endpoint"], e["status"]) for e in journal] == [
            ("/v1/embeddings", 429),
            ("/v1/embeddings", 200),
            ("/v1/moderations", 200),
            ("/v1/moderations", 200),
            ("/v1/chat/completions", 200),
        ]
        assert [e["matched"]["step"] if e["matched"] else None for e in journal] == [
            "outage",
            "pinned",
            "threat",
            None,
            "hello",
        ]
        assert journal[3]["echo"] is True  # nothing matched: the default answer, not "unmatched"
        verdict = server.engine.verify()
        assert verdict["ok"] is True and verdict["unused_steps"] == []


def test_gemini_scripted_vectors_and_error(serve: Serve) -> None:
    with serve(SCRIPT) as server:
        client = opened(genai.Client(api_key="k", http_options=types.HttpOptions(base_url=server.url)))
        with pytest.raises(genai_errors.ClientError) as caught:
            client.models.embed_content(model="text-embedding-004", contents="fail now")
        assert caught.value.code == 429 and caught.value.status == "RESOURCE_EXHAUSTED"
        reply = client.models.embed_content(model="text-embedding-004", contents=["a", "b"])
        assert reply.embeddings is not None
        assert [list(e.values or []) for e in reply.embeddings] == PINNED


def test_ollama_scripted_vectors_and_error(serve: Serve) -> None:
    with serve(SCRIPT) as server:
        client = opened(ollama.Client(host=server.url))
        with pytest.raises(ollama.ResponseError) as caught:
            client.embed(model="nomic-embed-text", input="fail")
        assert caught.value.status_code == 429 and caught.value.error == "Rate limit reached for embeddings"
        assert [list(v) for v in client.embed(model="nomic-embed-text", input=["a", "b"]).embeddings] == PINNED
        assert list(client.embeddings(model="nomic-embed-text", prompt="a").embedding) == PINNED[0]


def test_expectations_and_faults_on_embedding_steps(serve: Serve) -> None:
    script = """
scenario "Checked embeddings":
    step must_be_small:
        when:
            endpoint is "embeddings"
            input contains "check"
        expect:
            model is "text-embedding-3-small"
        reply:
            vector [1, 0]

    step cut:
        when:
            endpoint is "/v1/embeddings"
        reply:
            disconnect after 0 chunks
"""
    with serve(script) as server:
        client = oa(server.url)
        with pytest.raises(openai.BadRequestError, match="mockllm: expectation failed"):
            client.embeddings.create(model="text-embedding-3-large", input="check this")
        with pytest.raises(openai.APIConnectionError):
            client.embeddings.create(model="text-embedding-3-large", input="anything")
        failures = server.engine.verify()["expectation_failures"]
        assert len(failures) == 1 and failures[0]["endpoint"] == "/v1/embeddings"


def test_vectors_from_a_file(serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "vectors.json").write_text(json.dumps([[1, 2], [3, 4]]), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    script = """
scenario "From a file":
    step docs:
        when:
            endpoint is "embeddings"
        reply:
            vectors from "vectors.json"
"""
    with serve(script) as server:
        reply = oa(server.url).embeddings.create(model="text-embedding-3-small", input=["x", "y"])
        assert [d.embedding for d in reply.data] == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("[[1, 2], [3]]", "vector 1 has 1 numbers, vector 0 has 2"),
        ("{}", "expected a non-empty JSON array of vectors"),
        ("[[1, true]]", "vector 0 holds something that is not a number"),
        ("[[1, 2]", "not valid JSON"),
    ],
)
def test_a_bad_vectors_file_is_a_load_error(tmp_path: Path, content: str, says: str) -> None:
    (tmp_path / "v.json").write_text(content, encoding="utf-8")
    text = 'scenario "s":\n    step a:\n        when:\n            input is present\n        reply:\n'
    library = load_text(text + '            vectors from "v.json"\n', "s.mockllm", base_dir=tmp_path)
    compiled, diagnostics = compile_library(library)
    assert compiled is None
    (problem,) = [d for d in diagnostics if d.code == "vectors-file"]
    assert says in problem.message and (problem.span.line, problem.span.column) == (6, 13)
    missing = load_text(text + '            vectors from "nope.json"\n', "s.mockllm", base_dir=tmp_path)
    assert any(d.code == "vectors-file" and "cannot read" in d.message for d in missing.diagnostics)


def test_explain_says_which_step_an_embedding_request_matches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import types as pytypes

    from mockllm.explain import explain_command

    library = SCRIPT.replace('scenario "Embeddings":\n', 'scenario "Embeddings":\n    order any\n')
    (tmp_path / "lib.mockllm").write_text(library, encoding="utf-8")
    requests = {
        "bare.json": {"model": "text-embedding-3-small", "input": ["please fail"]},
        "ollama.json": {"endpoint": "/api/embed", "body": {"model": "nomic-embed-text", "input": "x"}},
        "gemini.json": {
            "endpoint": "/v1beta/models/text-embedding-004:batchEmbedContents",
            "body": {"requests": [{"model": "models/text-embedding-004", "content": {"parts": [{"text": "x"}]}}]},
        },
        "moderation.json": {"model": "omni-moderation-latest", "input": "I will hurt you"},
    }
    seen = {}
    for name, data in requests.items():
        (tmp_path / name).write_text(json.dumps(data), encoding="utf-8")
        args = pytypes.SimpleNamespace(
            library=str(tmp_path / "lib.mockllm"),
            request=str(tmp_path / name),
            provider=None,
            endpoint=None,
            format="text",
        )
        assert explain_command(args) == 0
        seen[name] = capsys.readouterr().out
    assert "step `outage`" in seen["bare.json"]
    assert "step `pinned`" in seen["ollama.json"] and "step `pinned`" in seen["gemini.json"]
    assert "step `threat`" in seen["moderation.json"]
