"""Prometheus metrics at ``GET /_mockllm/metrics`` (issue 34), read back by ``prometheus_client``'s own
text parser: requests by provider, operation, status and whether a step matched; streams cut short;
the latency histogram; conversations alive; the admin API's access rules."""

from __future__ import annotations

import httpx
import openai
from conftest import Serve
from prometheus_client.parser import text_string_to_metric_families
from sdk_clients import conversation, opened

SCRIPT = """
scenario "Metrics":
    order any
    step hello:
        when:
            last user message contains "hello"
        reply:
            text "Hi there."
        always
    step cut:
        when:
            last user message contains "cut"
        reply:
            text "one two three four"
            disconnect after 2 chunks
        always
"""


def _families(url: str, headers: dict[str, str] | None = None) -> dict[str, list[tuple[dict[str, str], float]]]:
    r = httpx.get(url + "/_mockllm/metrics", headers=headers or {})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def _value(samples: list[tuple[dict[str, str], float]], **labels: str) -> float:
    return sum(v for got, v in samples if all(got.get(k) == want for k, want in labels.items()))


def test_requests_cuts_latency_and_conversations_are_counted(serve: Serve) -> None:
    with serve(SCRIPT) as server:
        client = opened(openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0))
        for name in ("a", "b"):
            client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "hello"}],
                extra_headers=conversation(name),
            )
        unmatched = httpx.post(
            server.url + "/v1/chat/completions",
            headers={"authorization": "Bearer k"},
            json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "nothing"}]},
        )
        refused = httpx.post(server.url + "/v1/chat/completions", json={"model": "m", "messages": []})
        try:
            list(
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "cut"}], stream=True
                )
            )
        except openai.APIError:
            pass  # the scripted disconnect
        httpx.post(
            server.url + "/v1/embeddings", headers={"authorization": "Bearer k"}, json={"model": "e", "input": "x"}
        )
        families = _families(server.url)
    assert unmatched.status_code == 404 and refused.status_code == 401
    requests = families["mockllm_requests_total"]
    assert _value(requests, provider="openai", operation="chat", status="200", matched="true") == 3
    assert _value(requests, provider="openai", operation="chat", status="404", matched="false") == 1
    assert _value(requests, provider="openai", operation="chat", status="401", matched="false") == 1
    assert _value(requests, provider="openai", operation="embeddings", status="200") == 1
    assert _value(families["mockllm_stream_cuts_total"], provider="openai", reason="disconnect") == 1
    assert families["mockllm_request_duration_seconds_count"][0][1] == 5  # every answer the engine decided
    buckets = families["mockllm_request_duration_seconds_bucket"]
    assert _value(buckets, le="+Inf") == 5
    counts = [v for _, v in buckets]
    assert counts == sorted(counts)  # cumulative
    assert families["mockllm_conversations"][0][1] >= 2


def test_same_access_rules_as_the_admin_api(serve: Serve) -> None:
    with serve(SCRIPT, admin_token="s3cret") as server:
        refused = httpx.get(server.url + "/_mockllm/metrics")
        families = _families(server.url, {"authorization": "Bearer s3cret"})
    assert refused.status_code == 401
    assert families["mockllm_conversations"][0][1] == 0
