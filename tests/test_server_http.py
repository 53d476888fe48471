"""The HTTP surface over a real loopback server: every route, errors in each provider's own shape,
body limits, auth presence, debugging headers, and a fuzz loop that never gets a 5xx."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import Serve

from mockllm.runtime.engine.engine import Engine
from mockllm.runtime.providers import registry
from mockllm.runtime.request import ChatRequest
from mockllm.server.background import BackgroundServer

HTTP = httpx.Client(timeout=10)  # one pool: creating a client per request costs ~50 ms


OPENAI_AUTH = {"authorization": "Bearer sk-test"}
ANTHROPIC_AUTH = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
ANTHROPIC_BEARER = {"authorization": "Bearer k", "anthropic-version": "2026-10-21"}
GEMINI_AUTH = {"x-goog-api-key": "g"}
BEDROCK_NS = "http://internal.amazon.com/coral/com.amazon.bedrock/"
BEDROCK_AUTH = {"authorization": "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/bedrock/aws4_request"}
USER = [{"role": "user", "content": "hello there"}]
GEMINI_CONTENTS = [{"role": "user", "parts": [{"text": "hello there"}]}]
MISTRAL = {"x-mockllm-provider": "mistral"}
UNLISTED = "tests/test_server_http.py does not know every provider of the registry"
AZURE_PATH = "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
VERTEX_PATH = "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash"


def request(provider: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """(path, body, headers) of a minimal valid chat request for ``provider``."""
    if provider == "openai":
        return "/v1/chat/completions", {"model": "gpt-4o", "messages": USER}, OPENAI_AUTH
    if provider == "responses":
        return "/v1/responses", {"model": "gpt-4o", "input": "hello there"}, OPENAI_AUTH
    if provider == "anthropic":
        return "/v1/messages", {"model": "claude-x", "max_tokens": 50, "messages": USER}, ANTHROPIC_AUTH
    if provider == "gemini":
        return "/v1beta/models/gemini-2.5-flash:generateContent", {"contents": GEMINI_CONTENTS}, GEMINI_AUTH
    if provider == "azure":
        return AZURE_PATH, {"model": "gpt-4o", "messages": USER}, {"api-key": "k"}
    if provider == "vertex":
        return VERTEX_PATH + ":generateContent", {"contents": GEMINI_CONTENTS}, OPENAI_AUTH
    if provider == "bedrock":
        messages = [{"role": "user", "content": [{"text": "hello there"}]}]
        return "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse", {"messages": messages}, BEDROCK_AUTH
    if provider == "cohere":
        return "/v2/chat", {"model": "command-a-03-2025", "messages": USER}, OPENAI_AUTH
    if provider == "mistral":
        return "/v1/chat/completions", {"model": "mistral-small-latest", "messages": USER}, {**OPENAI_AUTH, **MISTRAL}
    if provider == "ollama":
        return "/api/chat", {"model": "llama3.2", "stream": False, "messages": USER}, {}
    raise AssertionError(f"{UNLISTED}: request() has no minimal chat request for the provider {provider!r}")


#: every provider of the registry: a new one gets its minimal request in request() and its error shape
#: in error_message(), and every test below runs for it
PROVIDERS = list(registry.NAMES)
#: what makes a request on a shared path a provider's own (without it, a request to Mistral's path is OpenAI's)
CLAIM = {"mistral": MISTRAL}
#: the providers whose APIs ask for no credentials
OPEN = ["ollama"]


def error_message(provider: str, response: httpx.Response) -> str:
    """The message of an error body, asserting it has ``provider``'s shape."""
    body = response.json()
    if provider in ("openai", "responses") or (provider == "azure" and "type" in body["error"]):
        assert set(body) == {"error"} and {"message", "type", "param", "code"} <= set(body["error"])
        return str(body["error"]["message"])
    if provider == "azure":  # what Azure's gateway answers itself
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
        return str(body["error"]["message"])
    if provider == "anthropic":
        assert body["type"] == "error" and body["error"]["type"] and "request_id" in body
        return str(body["error"]["message"])
    if provider in ("gemini", "vertex"):
        assert body["error"]["code"] == response.status_code and body["error"]["status"].isupper()
        return str(body["error"]["message"])
    if provider == "bedrock":
        assert set(body) == {"message"} and response.headers["x-amzn-errortype"].endswith("Exception:" + BEDROCK_NS)
        return str(body["message"])
    if provider == "cohere":
        assert set(body) == {"id", "message"}
        return str(body["message"])
    if provider == "mistral":
        assert body["object"] == "error" and {"message", "type", "param", "code"} <= set(body)
        return str(body["message"])
    assert provider == "ollama", f"{UNLISTED}: error_message() does not know the error shape of {provider!r}"
    assert set(body) == {"error"} and isinstance(body["error"], str)
    return str(body["error"])


@pytest.fixture
def echo(serve: Serve) -> Iterator[BackgroundServer]:
    with serve() as server:
        yield server


# ---------------------------------------------------------------------------------------------------------
# Every route


@pytest.mark.parametrize("provider", PROVIDERS)
def test_chat_routes_answer_with_the_echo_responder(echo: BackgroundServer, provider: str) -> None:
    path, body, headers = request(provider)
    r = HTTP.post(echo.url + path, json=body, headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert "hello there" in r.text
    assert r.headers["x-mockllm-conversation"]


def test_streamed_routes_use_each_providers_framing(echo: BackgroundServer) -> None:
    u = echo.url
    openai = HTTP.post(
        u + "/v1/chat/completions", json={"model": "m", "stream": True, "messages": USER}, headers=OPENAI_AUTH
    )
    assert openai.headers["content-type"].startswith("text/event-stream")
    assert openai.text.rstrip().endswith("data: [DONE]")
    anthropic = HTTP.post(
        u + "/v1/messages",
        json={"model": "m", "max_tokens": 9, "stream": True, "messages": USER},
        headers=ANTHROPIC_BEARER,
    )
    assert "event: message_stop" in anthropic.text
    for version in ("v1beta", "v1"):
        gemini = HTTP.post(
            u + f"/{version}/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            json={"contents": GEMINI_CONTENTS},
            headers=GEMINI_AUTH,
        )
        assert gemini.status_code == 200, gemini.text
        assert "event:" not in gemini.text and '"finishReason"' in gemini.text
    ollama = HTTP.post(u + "/api/chat", json={"model": "m", "messages": USER})  # stream absent: streamed
    lines = [json.loads(line) for line in ollama.text.splitlines()]
    assert lines[-1]["done"] is True and all(not line["done"] for line in lines[:-1])


def test_gemini_is_served_under_v1_too(echo: BackgroundServer) -> None:
    r = HTTP.post(
        echo.url + "/v1/models/gemini-2.5-flash:generateContent",
        json={"contents": GEMINI_CONTENTS},
        headers=GEMINI_AUTH,
    )
    assert r.status_code == 200
    assert r.json()["candidates"][0]["content"]["parts"][0]["text"] == "hello there"


def test_token_counting_routes(echo: BackgroundServer) -> None:
    a = HTTP.post(echo.url + "/v1/messages/count_tokens", json={"model": "m", "messages": USER}, headers=ANTHROPIC_AUTH)
    assert a.status_code == 200 and a.json()["input_tokens"] >= 1
    g = HTTP.post(
        echo.url + "/v1beta/models/gemini-2.5-flash:countTokens",
        json={"contents": GEMINI_CONTENTS},
        headers=GEMINI_AUTH,
    )
    assert g.status_code == 200 and g.json()["totalTokens"] >= 1


MODELS = """
scenario "models":
    step a:
        when:
            model is "gpt-4o"
        reply:
            text "x"
    step b:
        when:
            model glob "claude-*"
        reply:
            text "y"
scenario "more":
    step c:
        when:
            model glob "gemini-2.5-flash"
        reply:
            text "z"
"""


def test_model_listings_name_library_models_and_requested_ones_in_each_shape(serve: Serve) -> None:
    with serve(MODELS) as server:
        u = server.url
        HTTP.post(u + "/api/chat", json={"model": "llama3.2", "stream": False, "messages": USER})
        openai = HTTP.get(u + "/v1/models", headers=OPENAI_AUTH).json()
        anthropic = HTTP.get(u + "/v1/models", headers=ANTHROPIC_AUTH).json()
        gemini = HTTP.get(u + "/v1beta/models", headers=GEMINI_AUTH).json()
        gemini_v1 = HTTP.get(u + "/v1/models", headers=GEMINI_AUTH).json()
        one = HTTP.get(u + "/v1/models/gpt-4o", headers=OPENAI_AUTH).json()
        tags = HTTP.get(u + "/api/tags").json()
    assert [m["id"] for m in openai["data"]] == ["gpt-4o", "gemini-2.5-flash", "llama3.2"]
    assert openai["object"] == "list"
    assert [m["id"] for m in anthropic["data"]] == ["gpt-4o", "gemini-2.5-flash", "llama3.2"]
    assert anthropic["has_more"] is False
    assert any(m["name"].endswith("gemini-2.5-flash") for m in gemini["models"])
    assert gemini_v1.keys() == gemini.keys()
    assert one["id"] == "gpt-4o" and one["object"] == "model"
    assert any(m["name"].startswith("llama3.2") for m in tags["models"])


def test_ollama_version_and_root_banner(echo: BackgroundServer) -> None:
    assert "version" in HTTP.get(echo.url + "/api/version").json()
    root = HTTP.get(echo.url + "/")
    assert root.status_code == 200 and root.text == "Ollama is running"


# ---------------------------------------------------------------------------------------------------------
# Errors in each provider's shape


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_json_is_a_400_in_the_providers_shape(echo: BackgroundServer, provider: str) -> None:
    path, _, headers = request(provider)
    r = HTTP.post(echo.url + path, content=b'{"model": "x", "messages": [', headers=headers)
    assert r.status_code == 400
    assert error_message(provider, r)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_wrong_types_are_a_4xx_in_the_providers_shape(echo: BackgroundServer, provider: str) -> None:
    path, _, headers = request(provider)
    body = {"model": 5, "messages": "hi", "input": 7, "contents": {"a": 1}, "max_tokens": "many"}
    r = HTTP.post(echo.url + path, json=body, headers=headers)
    assert 400 <= r.status_code < 500
    assert error_message(provider, r)


@pytest.mark.parametrize(
    ("method", "path", "provider"),
    [
        ("POST", "/v1/foo", "openai"),
        ("GET", "/nothing/here", "openai"),
        ("POST", "/v1/messages/batches", "anthropic"),
        ("POST", "/api/pull", "ollama"),
        ("POST", "/v1beta/cachedContents", "gemini"),
        ("POST", "/v1beta/models/gemini-2.5-flash:predictLongRunning", "gemini"),
        ("POST", "/v1/models/gemini-2.5-flash:predictLongRunning", "gemini"),
        ("POST", "/openai/deployments/gpt-4o/completions", "azure"),
        ("POST", VERTEX_PATH + ":predictLongRunning", "vertex"),
        ("POST", "/model-invocation-job", "openai"),
    ],
)
def test_unknown_routes_are_a_404_in_the_shape_the_path_suggests(
    echo: BackgroundServer, method: str, path: str, provider: str
) -> None:
    r = HTTP.request(method, echo.url + path, json={})
    assert r.status_code == 404
    assert error_message(provider, r) == f"mockllm: unknown route {method} {path}"


@pytest.mark.parametrize(
    ("method", "path", "provider"),
    [
        ("GET", "/v1/chat/completions", "openai"),
        ("DELETE", "/v1/responses", "openai"),
        ("GET", "/v1/messages", "anthropic"),
        ("PUT", "/api/chat", "ollama"),
        ("POST", "/api/tags", "ollama"),
        ("GET", "/v1beta/models/gemini-2.5-flash:generateContent", "gemini"),
        ("POST", "/v1/models", "openai"),
        ("GET", "/openai/v1/chat/completions", "azure"),
        ("GET", VERTEX_PATH + ":generateContent", "vertex"),
        ("GET", "/model/amazon.nova-pro-v1:0/converse", "bedrock"),
    ],
)
def test_a_wrong_method_is_a_405_in_the_providers_shape(
    echo: BackgroundServer, method: str, path: str, provider: str
) -> None:
    r = HTTP.request(method, echo.url + path)
    assert r.status_code == 405
    assert "not allowed" in error_message(provider, r)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_body_over_the_limit_is_a_413_in_the_providers_shape(serve: Serve, provider: str) -> None:
    path, body, headers = request(provider)
    body["padding"] = "x" * 5000
    with serve(max_body_bytes=4096) as server:
        declared = HTTP.post(server.url + path, json=body, headers=headers)

        def chunks() -> Iterator[bytes]:  # no content-length: the limit applies while reading
            data = json.dumps(body).encode()
            for i in range(0, len(data), 1000):
                yield data[i : i + 1000]

        chunked = HTTP.post(server.url + path, content=chunks(), headers=headers)
        fine = HTTP.post(server.url + path, json=request(provider)[1], headers=headers)
        journal = HTTP.get(server.url + "/_mockllm/requests").json()
    for r in (declared, chunked):
        assert r.status_code == 413
        assert "4096 bytes" in error_message(provider, r)
    assert fine.status_code == 200
    assert [e["status"] for e in journal] == [413, 413, 200]  # a chat request refused is journalled too


def test_a_huge_body_is_refused_without_breaking_the_connection(serve: Serve) -> None:
    with serve() as server, httpx.Client() as client:
        big = client.post(server.url + "/v1/chat/completions", content=b"x" * (11 * 1024 * 1024), headers=OPENAI_AUTH)
        after = client.post(server.url + "/v1/chat/completions", json=request("openai")[1], headers=OPENAI_AUTH)
    assert big.status_code == 413
    assert after.status_code == 200


# ---------------------------------------------------------------------------------------------------------
# Auth presence


@pytest.mark.parametrize("provider", [name for name in PROVIDERS if name not in OPEN])
def test_missing_credentials_are_refused_as_the_real_api_would(echo: BackgroundServer, provider: str) -> None:
    path, body, _ = request(provider)
    r = HTTP.post(echo.url + path, json=body, headers=CLAIM.get(provider, {}))
    assert r.status_code in (400, 401, 403)
    assert error_message(provider, r)


def test_every_auth_form_is_accepted(echo: BackgroundServer) -> None:
    u = echo.url
    anthropic_path, anthropic_body, _ = request("anthropic")
    assert HTTP.post(u + anthropic_path, json=anthropic_body, headers=ANTHROPIC_BEARER).status_code == 200
    gemini_path, gemini_body, _ = request("gemini")
    assert HTTP.post(u + gemini_path + "?key=abc", json=gemini_body).status_code == 200
    ollama_path, ollama_body, _ = request("ollama")
    assert HTTP.post(u + ollama_path, json=ollama_body).status_code == 200


def test_no_auth_turns_the_checks_off(serve: Serve) -> None:
    with serve(no_auth=True) as server:
        for provider in PROVIDERS:
            path, body, _ = request(provider)
            r = HTTP.post(server.url + path, json=body, headers=CLAIM.get(provider, {}))
            assert r.status_code == 200, (provider, r.text)
        assert HTTP.get(server.url + "/v1/models").status_code == 200


def test_model_listing_needs_credentials_too(echo: BackgroundServer) -> None:
    r = HTTP.get(echo.url + "/v1/models")
    assert r.status_code == 401
    assert error_message("openai", r)


# ---------------------------------------------------------------------------------------------------------
# Replies: debugging headers, no match, scripted errors and raw bodies

SCRIPTED = """
scenario "scripted":
    order any
    step limited:
        when:
            last user message is "limit"
        reply:
            error 429 "Rate limit reached"
            retry after 2s
        always
    step raw:
        when:
            last user message is "raw"
        reply:
            status 202
            body {"custom": [1, 2, 3]}
        always
    step raw_text:
        when:
            last user message is "raw text"
        reply:
            status 200
            body "plain words"
        always
    step greet:
        when:
            last user message contains "hello"
        reply:
            text "hi!"
            header "x-extra" "yes"
        always
"""


def chat(url: str, text: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return HTTP.post(
        url + "/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": text}]},
        headers={**OPENAI_AUTH, **(headers or {})},
    )


def test_debug_headers_name_the_conversation_and_step(serve: Serve) -> None:
    with serve(SCRIPTED) as server:
        r = chat(server.url, "hello", {"x-mockllm-conversation": "conv-1"})
    assert r.status_code == 200
    assert r.headers["x-mockllm-conversation"] == "conv-1"
    assert r.headers["x-mockllm-step"] == "scripted/greet"
    assert r.headers["x-extra"] == "yes"
    assert r.headers["x-request-id"].startswith("req_")


def test_no_match_is_a_404_that_explains_itself(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mockllm.server")
    with serve(SCRIPTED) as server:
        r = chat(server.url, "something else")
        a_path, a_body, a_headers = request("anthropic")
        a = HTTP.post(
            server.url + a_path, json=a_body | {"messages": [{"role": "user", "content": "nope"}]}, headers=a_headers
        )
        entry = server.engine.journal()[0]
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "mockllm_no_match"
    assert error_message("openai", r).startswith("mockllm: no step matched")
    assert "x-mockllm-step" not in r.headers
    assert a.status_code == 404 and error_message("anthropic", a).startswith("mockllm: no step matched")
    assert entry["status"] == 404 and entry["no_match"]["message"].startswith("mockllm: no step matched")
    assert any("no step matched" in rec.getMessage() for rec in caplog.records)


def test_a_scripted_error_carries_its_headers(serve: Serve) -> None:
    with serve(SCRIPTED) as server:
        r = chat(server.url, "limit")
    assert r.status_code == 429
    assert error_message("openai", r) == "Rate limit reached"
    assert float(r.headers["retry-after"]) == 2


def test_raw_replies_are_sent_as_written(serve: Serve) -> None:
    with serve(SCRIPTED) as server:
        raw = chat(server.url, "raw")
        text = chat(server.url, "raw text")
    assert raw.status_code == 202 and raw.json() == {"custom": [1, 2, 3]}
    assert text.status_code == 200 and text.text == "plain words"
    assert text.headers["content-type"].startswith("text/plain")


def test_an_internal_error_is_a_500_in_the_providers_shape_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class BrokenEngine(Engine):
        def handle(self, chat: ChatRequest) -> Any:
            raise RuntimeError("engine exploded")

    caplog.set_level(logging.ERROR, logger="mockllm.server")
    with BackgroundServer(BrokenEngine(None)) as server:
        r = chat(server.url, "hello")
        still = HTTP.get(server.url + "/_mockllm/health")
    assert r.status_code == 500
    assert "engine exploded" in error_message("openai", r)
    assert still.status_code == 200
    assert any(rec.exc_info and "engine exploded" in str(rec.exc_info[1]) for rec in caplog.records)


# ---------------------------------------------------------------------------------------------------------
# Fuzz: nothing malformed gets a 5xx, and the server keeps serving

ROUTES = [
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/responses"),
    ("POST", "/v1/messages"),
    ("POST", "/v1/messages/count_tokens"),
    ("POST", "/v1beta/models/gemini-2.5-flash:generateContent"),
    ("POST", "/v1/models/gemini-2.5-flash:streamGenerateContent"),
    ("POST", "/v1beta/models/g:countTokens"),
    ("POST", "/api/chat"),
    ("GET", "/v1/models"),
    ("GET", "/v1/models/x"),
    ("GET", "/api/tags"),
    ("POST", "/v1/unknown"),
    ("POST", "/_mockllm/scenarios"),
]
KEYS = [
    "model",
    "messages",
    "role",
    "content",
    "contents",
    "parts",
    "text",
    "tools",
    "tool_calls",
    "stream",
    "input",
    "max_tokens",
    "system",
    "type",
    "function",
    "name",
    "arguments",
    "tool_call_id",
    "tool_use_id",
    "id",
    "call_id",
    "functionCall",
    "functionResponse",
    "args",
    "response",
    "previous_response_id",
    "instructions",
    "input_schema",
    "parameters",
    "systemInstruction",
    "stream_options",
    "include_usage",
    "is_error",
    "source",
    "images",
]
ROLES = ["user", "assistant", "system", "tool", "developer", "model", "function", "", "USER"]


def random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 1.5, 2**70, 1e308])
    if kind == 2:
        return rng.choice(["", "x", "\u0000", "héllo", "🙂" * 3, "a" * 300])
    if kind == 3:
        return rng.choice(ROLES)
    if kind == 4:
        return rng.choice(KEYS)
    if kind in (5, 6):
        return {rng.choice(KEYS): random_json(rng, depth + 1) for _ in range(rng.randrange(5))}
    if kind == 7:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {"role": rng.choice(ROLES), rng.choice(["content", "parts", "tool_calls"]): random_json(rng, depth + 1)}


def random_body(rng: random.Random) -> bytes:
    kind = rng.randrange(4)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
    if kind == 1:
        return json.dumps(random_json(rng)).encode()
    if kind == 2:  # plausible top-level shape with wrong insides
        body = {"model": random_json(rng), rng.choice(["messages", "contents", "input"]): random_json(rng)}
        if rng.random() < 0.5:
            body["stream"] = random_json(rng)
        return json.dumps(body).encode()
    return json.dumps(random_json(rng))[: rng.randrange(1, 40)].encode()


def test_fuzzed_requests_never_get_a_5xx_and_the_server_keeps_serving(serve: Serve) -> None:
    rng = random.Random(20240601)
    auth = {**OPENAI_AUTH, **GEMINI_AUTH, "anthropic-version": "2023-06-01"}
    statuses: dict[int, int] = {}
    with serve(SCRIPTED) as server, httpx.Client(timeout=10) as client:
        for i in range(400):
            method, path = rng.choice(ROUTES)
            headers = auth if rng.random() < 0.8 else {}
            if rng.random() < 0.2:
                headers = {**headers, "content-type": rng.choice(["application/json", "text/plain", "x/y"])}
            if rng.random() < 0.1:
                path += "?alt=sse&key=" + rng.choice(["", "k"])
            r = client.request(method, server.url + path, content=random_body(rng), headers=headers)
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            assert r.status_code < 500, (i, method, path, r.status_code, r.text[:300])
        healthy = client.get(server.url + "/_mockllm/health")
        normal = chat(server.url, "hello")
    assert healthy.status_code == 200 and normal.status_code == 200
    assert statuses.get(400, 0) > 100  # the loop really exercised the parsers
