"""Arbitrary JSON text (lone surrogates and huge integers included) on every endpoint of every provider
and the admin API, against a real server (issue 12): zero 5xx, zero logged tracebacks, the canary
conversation answers the same after every case, and every listing and admin view still answers.

This is the short form CI runs; ``bench/fuzz_server.py`` runs 4,000 cases per server."""

from __future__ import annotations

import logging

import httpx
import pytest
from conftest import Serve
from fuzzing import SCRIPT, Case, check_canary, check_case, check_views, requests, scripts, send
from hypothesis import HealthCheck, given, settings

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    logged = [r for r in caplog.records if r.exc_info is not None or r.levelno >= logging.ERROR]
    assert not logged, [r.getMessage() for r in logged]


def test_any_request_to_any_endpoint(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    with serve(SCRIPT) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        check_canary(client)

        @FUZZ
        @given(requests())
        def one(case: Case) -> None:
            check_case(client, case)

        one()
        check_views(client)
    _no_tracebacks(caplog)


def test_any_script_posted_to_the_admin_api(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    with serve(SCRIPT) as server, httpx.Client(base_url=server.url, timeout=30) as client:

        @settings(FUZZ, max_examples=80)
        @given(scripts())
        def one(case: Case) -> None:
            check_case(client, case)

        one()
        check_views(client)
    _no_tracebacks(caplog)


@pytest.mark.parametrize(
    "path",
    ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/api/chat"],
)
def test_a_lone_surrogate_model_poisons_nothing(serve: Serve, path: str) -> None:
    """The issue's case: after one request whose model is `gpt\\udc00`, the listings and the journal
    answered 500 for good. OpenAI and Anthropic reject the text (their parsers do); Ollama replaces the
    half pair with U+FFFD (Go's decoder does); either way every view keeps answering."""
    body = (
        b'{"model": "gpt\\udc00", "max_tokens": 5, "input": "hi", '
        b'"messages": [{"role": "user", "content": "hi \\ud800"}]}'
    )
    headers = {"authorization": "Bearer sk", "x-api-key": "k", "anthropic-version": "2023-06-01"}
    with serve(SCRIPT) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        response = send(client, Case("POST", path, body, tuple(headers.items())))
        if path == "/api/chat":
            assert response.status_code == 404, response.text  # unmatched, in Ollama's shape
            assert "gpt\ufffd" in response.text
            tags = client.get("/api/tags").json()
            assert [m["name"] for m in tags["models"]] == ["gpt\ufffd:latest"]
        else:
            assert response.status_code == 400, response.text
            assert "lone low (trailing) surrogate \\\\udc00 at line 1 column 15" in response.text
        check_views(client)
        check_canary(client)


def test_a_script_value_with_a_lone_surrogate_is_a_diagnostic(serve: Serve) -> None:
    form = b'{"scenarios": [{"name": "s", "steps": [{"name": "a", "reply": {"text": "x\\ud800"}}]}]}'
    with serve("") as server, httpx.Client(base_url=server.url, timeout=30) as client:
        response = client.post("/_mockllm/scenarios", content=form, headers={"content-type": "application/json"})
        assert response.status_code == 400
        error = response.json()["errors"][0]
        assert error["message"] == "invalid JSON: `\\ud800` names half of a surrogate pair"
        assert (error["span"]["line"], error["span"]["column"]) == (1, 74)
        check_views(client)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/embed", {"model": "all-minilm", "input": "hi", "dimensions": 10**40}),
        ("/api/embed", {"model": "all-minilm", "input": "hi", "dimensions": 10**9}),
        ("/v1/embeddings", {"model": "my-embedder", "input": "hi", "dimensions": 10**9}),
        (
            "/v1beta/models/my-embedder:embedContent",
            {"content": {"parts": [{"text": "hi"}]}, "outputDimensionality": 10**9},
        ),
    ],
)
def test_an_embedding_too_long_to_build_is_refused(serve: Serve, path: str, body: dict[str, object]) -> None:
    """Found by the long fuzz run: `dimensions` past what fits an index made Ollama's endpoint answer
    500, and a merely huge one would have built a vector of a billion numbers. Past 8,192 it is a 400."""
    with serve("") as server, httpx.Client(base_url=server.url, timeout=30) as client:
        response = client.post(path, json=body, headers={"authorization": "Bearer sk", "x-goog-api-key": "k"})
        assert response.status_code == 400, response.text
        assert "8192" in response.text
        check_views(client)
