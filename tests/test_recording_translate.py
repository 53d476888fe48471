"""The translator on hand-made exchanges (pure, no server): long messages become a `contains` of
their first words, step names say what happens and stay unique, a refusal and thinking are kept, an
error keeps its status, message and `retry after`, and conversations split by their opening."""

from __future__ import annotations

import json
from typing import Any

from mockllm.dsl.format.formatter import format_file
from mockllm.dsl.parse.parser import parse_text
from mockllm.runtime.recording.exchange import Exchange
from mockllm.runtime.recording.translate import Turn, conversations, read_exchange, script

LONG = "Please summarise the following meeting notes for the whole team, keeping every action item: " + "x " * 40


def chat(messages: list[dict[str, Any]], status: int, answer: dict[str, Any], **headers: str) -> Exchange:
    body = json.dumps({"model": "gpt-4o", "messages": messages}).encode()
    return Exchange.of(
        "POST",
        "/v1/chat/completions",
        [("authorization", "Bearer sk-x")],
        body,
        status,
        headers.items(),
        json.dumps(answer).encode(),
    )


def message(content: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "content": content, **extra}, "finish_reason": "stop"}]}


def text_of(exchanges: list[Exchange]) -> str:
    turns = [t for t in (read_exchange(e) for e in exchanges) if t is not None]
    [conv] = conversations(turns)
    out = format_file(script(conv).tree)
    tree, problems = parse_text(out, "x.mockllm")
    assert tree is not None and not problems and format_file(tree) == out
    return out


def test_a_long_message_becomes_a_contains_of_its_first_words() -> None:
    out = text_of([chat([{"role": "user", "content": LONG}], 200, message("ok"))])
    assert 'last user message contains "Please summarise the following meeting notes for"' in out
    assert "step ask_summarise_following:" in out


def test_step_names_are_unique_and_say_what_happens() -> None:
    user = {"role": "user", "content": "weather?"}
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    calling = {"role": "assistant", "tool_calls": [call]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "sun"}
    call2 = {**call, "id": "c2"}
    out = text_of(
        [
            chat([user], 200, message(None, tool_calls=[call])),
            chat([user, calling, result], 200, message(None, tool_calls=[call2])),
            chat(
                [user, calling, result, {"role": "assistant", "tool_calls": [call2]}, {**result, "tool_call_id": "c2"}],
                200,
                message("sunny"),
            ),
            chat(
                [
                    user,
                    calling,
                    result,
                    {"role": "assistant", "content": "sunny"},
                    {"role": "user", "content": "weather?"},
                ],
                200,
                message("still sunny"),
            ),
        ]
    )
    names = [line.split()[1].rstrip(":") for line in out.splitlines() if line.strip().startswith("step ")]
    assert names == ["ask_weather", "call_get_weather", "answer", "ask_weather_2"]


def test_refusal_and_errors_with_retry_after() -> None:
    user = [{"role": "user", "content": "hi"}]
    refused = text_of([chat(user, 200, message(None, refusal="I can't help with that."))])
    assert 'refusal "I can\'t help with that."' in refused
    failed = text_of(
        [
            chat(
                user,
                429,
                {"error": {"message": "Rate limit reached", "type": "requests"}},
                **{"retry-after-ms": "1500"},
            )
        ]
    )
    assert 'error 429 "Rate limit reached"' in failed and "retry after 1500ms" in failed
    assert "sk-x" not in failed


def test_conversations_split_by_their_opening() -> None:
    turns: list[Turn] = []
    for q in ("one?", "two?", "one?"):
        turn = read_exchange(chat([{"role": "user", "content": q}], 200, message("a")))
        assert turn is not None
        turns.append(turn)
    assert [len(c.turns) for c in conversations(turns)] == [2, 1]


def embedding(path: str, request: dict[str, Any], answer: dict[str, Any], **headers: str) -> Exchange:
    """An embedding call; ``headers`` are the response's (the request sends a key and Mistral's SDK's name)."""
    sent = [("api-key", "sk-x"), ("user-agent", "mistral-client-python/1.9.0")]
    body = json.dumps(request).encode()
    return Exchange.of("POST", path, sent, body, 200, headers.items(), json.dumps(answer).encode())


def test_embedding_vectors_of_an_integer_type_are_left_to_the_default_embedder() -> None:
    """No `vector` line gives back int8 or binary values: the step keeps the count, or says `echo`."""
    cohere = {"model": "embed-v4.0", "texts": ["hi"], "input_type": "search_query", "embedding_types": ["int8"]}
    out = text_of([embedding("/v2/embed", cohere, {"embeddings": {"int8": [[12, -127]]}, "meta": {}})])
    assert "vector" not in out and "        reply echo\n" in out
    mistral = {"model": "mistral-embed", "input": ["hi"], "output_dtype": "int8"}
    answer = {"data": [{"embedding": [12, -127], "index": 0}], "usage": {"prompt_tokens": 3}}
    out = text_of([embedding("/v1/embeddings", mistral, answer)])
    assert "provider is mistral" in out and "vector" not in out
    assert "        reply:\n            usage 3 in, 0 out\n" in out


def test_a_token_count_header_is_kept_and_credentials_are_not() -> None:
    titan = {"inputText": "hi"}
    headers = {"x-amzn-bedrock-input-token-count": "4", "x-amz-security-token": "sk-x"}
    ex = embedding("/model/amazon.titan-embed-text-v2:0/invoke", titan, {"embedding": [0.5, 0.25]}, **headers)
    assert ex.response_headers == {"x-amzn-bedrock-input-token-count": "4"}
    out = text_of([ex])
    assert "            vector [0.5, 0.25]\n            usage 4 in, 0 out\n" in out


def test_a_vertex_predict_call_keeps_its_vectors_and_the_summed_token_counts() -> None:
    request = {"instances": [{"content": "sunny"}, {"content": "rainy"}]}
    stats = [{"embeddings": {"values": [0.5, 0.25], "statistics": {"token_count": n}}} for n in (3, 4)]
    path = "/v1/projects/p/locations/us-central1/publishers/google/models/text-embedding-005:predict"
    out = text_of([embedding(path, request, {"predictions": stats})])
    assert "provider is vertex" in out and 'input is "sunny"' in out
    assert "            vector [0.5, 0.25]\n            vector [0.5, 0.25]\n            usage 7 in, 0 out\n" in out
