"""Requests built from arbitrary JSON text for every endpoint of every provider and the admin API, and
the invariants one answer must keep (issue 12): never a 5xx, and nothing one request sends changes
what another request or endpoint sees.

Shared by ``tests/test_fuzz_server.py`` (a short run in CI) and ``bench/fuzz_server.py`` (4,000 cases
per server, Hypercorn and Uvicorn). Strings include lone surrogates (``"\\ud800"``, legal JSON text)
and numbers include integers too large for a float. Each case is sent as JSON text written with
escapes, so lone surrogates reach the server as the escapes a client would send."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import attrs
import httpx
from hypothesis import strategies as st

SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]

# The script every fuzzed server runs: a canary conversation whose answer must never change, a model
# that answers with the echo responder (tool arguments from any schema), a regex, a capture and a
# header condition; everything else is unmatched (the no-match report and the journal's body).
SCRIPT = """\
scenario "canary":
    priority 1000
    when:
        header "x-mockllm-conversation" is "fuzz-canary"
    step answer:
        always
        reply:
            text "canary ok"

scenario "echo":
    when:
        model glob "echo*"
    step echo:
        always
        reply echo

scenario "words":
    when:
        last user message matches /^(\\w+\\s?)+$/
        header "authorization" is present
    step words:
        always
        capture first from last user message /(\\w+)/
        reply:
            text "first word: {{first}}"
"""

CANARY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "canary"}]}
CANARY_HEADERS = {"authorization": "Bearer sk-canary", "x-mockllm-conversation": "fuzz-canary"}

AUTH = {
    "authorization": "Bearer sk-fuzz",
    "x-api-key": "sk-fuzz",
    "anthropic-version": "2023-06-01",
    "x-goog-api-key": "fuzz-key",
}

chars = st.characters() | st.sampled_from(SURROGATES)
texts = st.text(chars, max_size=16)
words = st.sampled_from(["echo-1", "gpt-4o", "claude", "gemini-2.5-flash", "llama3", "weather", "get_weather", ""])
some_text = words | texts
numbers = st.one_of(
    st.integers(-3, 3),
    st.integers(min_value=10**300, max_value=10**320),
    st.integers(min_value=-(10**320), max_value=-(10**300)),
    st.floats(allow_nan=False, allow_infinity=False),
)
json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | numbers | some_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(some_text, inner, max_size=3),
    max_leaves=12,
)


def _maybe(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a plausible value, sometimes any JSON at all."""
    return st.one_of(value, value, value, json_values)


_bound_keys = st.sampled_from(
    ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength"]
)
schemas: st.SearchStrategy[Any] = st.recursive(
    st.builds(
        lambda kind, bounds: {"type": kind, **bounds},
        st.sampled_from(["string", "integer", "number", "boolean", "array"]),
        st.dictionaries(_bound_keys, numbers, max_size=3),
    ),
    lambda inner: st.builds(
        lambda props: {"type": "object", "properties": props, "required": list(props)[:1]},
        st.dictionaries(some_text, inner, max_size=3),
    ),
    max_leaves=6,
)
tool_names = st.sampled_from(["get_weather", "search", "lookup"]) | texts
user_text = st.one_of(
    texts,
    st.sampled_from(["what is the weather", "please search", "hello world"]),
    texts.map(lambda t: f"get_weather {t}"),
)
roles = st.sampled_from(["user", "user", "assistant", "system", "tool", "developer", "model"])


def _openai_body(stream: bool) -> st.SearchStrategy[Any]:
    message = st.fixed_dictionaries({"role": _maybe(roles), "content": _maybe(user_text)})
    tool = st.fixed_dictionaries(
        {"type": st.just("function"), "function": st.fixed_dictionaries({"name": tool_names, "parameters": schemas})}
    )
    return st.fixed_dictionaries(
        {"model": _maybe(words | texts), "messages": _maybe(st.lists(message, min_size=1, max_size=3))},
        optional={"stream": st.just(stream) | json_values, "tools": _maybe(st.lists(tool, max_size=2))},
    )


def _anthropic_body() -> st.SearchStrategy[Any]:
    message = st.fixed_dictionaries({"role": _maybe(roles), "content": _maybe(user_text)})
    tool = st.fixed_dictionaries({"name": tool_names, "input_schema": schemas})
    return st.fixed_dictionaries(
        {
            "model": _maybe(words | texts),
            "max_tokens": _maybe(st.integers(1, 100)),
            "messages": _maybe(st.lists(message, min_size=1, max_size=3)),
        },
        optional={"system": _maybe(texts), "stream": json_values, "tools": _maybe(st.lists(tool, max_size=2))},
    )


def _responses_body() -> st.SearchStrategy[Any]:
    tool = st.fixed_dictionaries({"type": st.just("function"), "name": tool_names, "parameters": schemas})
    return st.fixed_dictionaries(
        {"model": _maybe(words | texts), "input": _maybe(user_text)},
        optional={"instructions": texts, "stream": json_values, "tools": _maybe(st.lists(tool, max_size=2))},
    )


def _gemini_body() -> st.SearchStrategy[Any]:
    content = st.fixed_dictionaries(
        {
            "role": _maybe(st.sampled_from(["user", "model"])),
            "parts": st.lists(st.fixed_dictionaries({"text": user_text})),
        }
    )
    decl = st.fixed_dictionaries({"name": tool_names, "parameters": schemas})
    tools = st.lists(st.fixed_dictionaries({"functionDeclarations": st.lists(decl, max_size=2)}), max_size=1)
    return st.fixed_dictionaries(
        {"contents": _maybe(st.lists(content, min_size=1, max_size=3))}, optional={"tools": _maybe(tools)}
    )


def _ollama_body() -> st.SearchStrategy[Any]:
    message = st.fixed_dictionaries({"role": _maybe(roles), "content": _maybe(user_text)})
    tool = st.fixed_dictionaries(
        {"type": st.just("function"), "function": st.fixed_dictionaries({"name": tool_names, "parameters": schemas})}
    )
    return st.fixed_dictionaries(
        {"model": _maybe(words | texts), "messages": _maybe(st.lists(message, min_size=1, max_size=3))},
        optional={"stream": json_values, "tools": _maybe(st.lists(tool, max_size=2))},
    )


def _inputs_body(field: str) -> st.SearchStrategy[Any]:
    """Embeddings and moderations: a model and the text(s) to embed or classify."""
    return st.fixed_dictionaries(
        {"model": _maybe(words | texts), field: _maybe(user_text | st.lists(user_text, max_size=3))},
        optional={"encoding_format": st.sampled_from(["float", "base64"]) | json_values, "dimensions": numbers},
    )


def _gemini_embed_body() -> st.SearchStrategy[Any]:
    content = st.fixed_dictionaries({"parts": st.lists(st.fixed_dictionaries({"text": user_text}), max_size=2)})
    one = st.fixed_dictionaries({"content": _maybe(content)}, optional={"model": texts})
    return one | st.fixed_dictionaries({"requests": _maybe(st.lists(one, max_size=2))})


@attrs.frozen
class Case:
    method: str
    path: str
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        shown = (self.body or b"")[:300].decode("utf-8", "replace")
        return f"{self.method} {self.path} {dict(self.headers)} {shown}"


def _json_text(value: Any, ascii_only: bool) -> bytes:
    """JSON text as a client writes it: escapes for anything not ASCII (always for surrogates)."""
    try:
        return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True).encode("utf-8")
    except ValueError:  # an integer beyond Python's digit limit
        return b'{"model": "too-many-digits"}'


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment.encode("utf-8", "surrogatepass"), safe="")


def _post(path: str, body: st.SearchStrategy[Any], extra: dict[str, str] | None = None) -> st.SearchStrategy[Case]:
    return st.builds(
        lambda value, ascii_only, auth: Case(
            "POST", path, _json_text(value, ascii_only), tuple({**(AUTH if auth else {}), **(extra or {})}.items())
        ),
        body | json_values,
        st.booleans(),
        st.booleans() | st.just(True),
    )


def _gemini_case() -> st.SearchStrategy[Case]:
    return st.builds(
        lambda model, method, prefix, value, ascii_only: Case(
            "POST", f"/{prefix}/models/{_quote(model)}:{method}", _json_text(value, ascii_only), tuple(AUTH.items())
        ),
        words | texts,
        st.sampled_from(
            ["generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"]
        ),
        st.sampled_from(["v1beta", "v1"]),
        _gemini_body() | _gemini_embed_body() | json_values,
        st.booleans(),
    )


def _get_case() -> st.SearchStrategy[Case]:
    listings = st.sampled_from(["/v1/models", "/v1beta/models", "/api/tags", "/api/version", "/"])
    provider_headers = st.sampled_from(
        [{}, {"authorization": "Bearer sk"}, {"x-api-key": "k", "anthropic-version": "2023-06-01"}, AUTH]
    )
    plain = st.builds(lambda p, h: Case("GET", p, None, tuple(h.items())), listings, provider_headers)
    one_model = st.builds(
        lambda m, h: Case("GET", f"/v1/models/{_quote(m)}", None, tuple(h.items())), words | texts, provider_headers
    )
    return plain | one_model


def _admin_case() -> st.SearchStrategy[Case]:
    views = st.sampled_from(
        ["/_mockllm/health", "/_mockllm/scenarios", "/_mockllm/requests", "/_mockllm/conversations", "/_mockllm/verify"]
    )
    get = st.builds(lambda p: Case("GET", p), views)
    paged = st.builds(
        lambda limit, after: Case("GET", f"/_mockllm/requests?limit={_quote(limit)}&after={_quote(after)}"),
        st.sampled_from(["1", "0", "-1", "x", "", "100000"]) | texts,
        st.sampled_from(["0", "1", "-5", "z"]) | texts,
    )
    reset_one = st.builds(
        lambda key: Case("POST", f"/_mockllm/reset?conversation={_quote(key)}"),
        texts.filter(lambda k: k != "fuzz-canary"),
    )
    return get | paged | reset_one


def requests() -> st.SearchStrategy[Case]:
    """Any request to any endpoint mockllm serves."""
    return st.one_of(
        _post("/v1/chat/completions", _openai_body(False) | _openai_body(True)),
        _post("/v1/responses", _responses_body()),
        _post("/v1/messages", _anthropic_body()),
        _post("/v1/messages/count_tokens", _anthropic_body()),
        _post("/api/chat", _ollama_body()),
        _post("/v1/embeddings", _inputs_body("input")),
        _post("/v1/moderations", _inputs_body("input")),
        _post("/api/embed", _inputs_body("input")),
        _post("/api/embeddings", _inputs_body("prompt")),
        _gemini_case(),
        _get_case(),
        _admin_case(),
        st.builds(lambda raw: Case("POST", "/v1/chat/completions", raw, tuple(AUTH.items())), st.binary(max_size=40)),
    )


_SCRIPT_PIECES = st.sampled_from(
    ['scenario "', "fuzz", '":\n', "    step a:\n", "        when:\n", '            model is "', "\\ud800",
     '"\n', "        reply:\n", '            text "', "{{x}}", "/(a+)+$/", "            last user message matches ",
     "\n", '            body {"a": "\\udc00"}\n', "mockllm 1\n", "    priority 5\n"]
)  # fmt: skip


def scripts() -> st.SearchStrategy[Case]:
    """A script posted to the admin API, as text or as the JSON form; it never names the canary."""
    text = st.lists(_SCRIPT_PIECES | texts, max_size=14).map("".join)
    as_text = st.builds(
        lambda t: Case(
            "POST", "/_mockllm/scenarios", t.encode("utf-8", "surrogatepass"), (("content-type", "text/plain"),)
        ),
        text.filter(lambda t: "canary" not in t),
    )
    json_form = st.builds(
        lambda name, step, value: Case(
            "POST",
            "/_mockllm/scenarios",
            _json_text({"scenarios": [{"name": name, "steps": [{"name": step, "reply": {"text": value}}]}]}, True),
            (("content-type", "application/json"),),
        ),
        texts.filter(lambda t: "canary" not in t),
        texts,
        json_values,
    )
    return as_text | json_form


# ------------------------------------------------------------------------------------------------
# Invariants


VIEWS = (
    ("GET", "/v1/models", {"authorization": "Bearer sk"}),
    ("GET", "/v1beta/models", {"x-goog-api-key": "k"}),
    ("GET", "/api/tags", {}),
    ("GET", "/_mockllm/requests", {}),
    ("GET", "/_mockllm/conversations", {}),
    ("GET", "/_mockllm/verify", {}),
    ("GET", "/_mockllm/scenarios", {}),
)


def send(client: httpx.Client, case: Case) -> httpx.Response:
    headers = dict(case.headers)
    if case.body is not None:
        headers.setdefault("content-type", "application/json")
    return client.request(case.method, case.path, content=case.body, headers=headers)


def check_case(client: httpx.Client, case: Case) -> None:
    """Send one case: it must not answer 5xx, and the canary conversation must answer as always."""
    response = send(client, case)
    assert response.status_code < 500, f"{response.status_code} for {case.describe()}: {response.text[:400]}"
    check_canary(client)


def check_canary(client: httpx.Client) -> None:
    response = client.post("/v1/chat/completions", json=CANARY, headers=CANARY_HEADERS)
    assert response.status_code == 200, response.text[:400]
    assert response.json()["choices"][0]["message"]["content"] == "canary ok"


def check_views(client: httpx.Client) -> None:
    """Every listing and admin view still answers 200 with JSON, whatever was sent before."""
    for method, path, headers in VIEWS:
        response = client.request(method, path, headers=headers)
        assert response.status_code == 200, f"{path}: {response.status_code} {response.text[:400]}"
        response.json()
