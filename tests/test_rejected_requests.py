"""Requests refused before matching (missing credentials, broken JSON, a history the API forbids)
are journalled, so ``/_mockllm/verify`` does not say ok while the client got an error (issue 11)."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from conftest import ServeText
from sdk_clients import opened

from mockllm.api import Verification

SCRIPT = """
scenario "Hi":
    step hi:
        reply:
            text "Hello."
"""


def verify(url: str) -> dict[str, Any]:
    result: dict[str, Any] = httpx.get(url + "/_mockllm/verify").json()
    return result


def test_missing_credentials_are_reported(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        body = {"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
        got = httpx.post(url + "/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"})
        assert got.status_code == 401
        report = verify(url)
        assert report["ok"] is False and report["unmatched"] == []
        [refused] = report["rejected"]
        assert refused["status"] == 401 and refused["provider"] == "anthropic"
        assert refused["endpoint"] == "/v1/messages" and "x-api-key" in refused["rejected"]
        assert refused["body"] is None  # kept small: the message, not the request


def test_broken_json_is_reported(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        got = httpx.post(
            url + "/v1/chat/completions",
            content=b'{"model": "gpt-4o", "messages": [',
            headers={"authorization": "Bearer k", "content-type": "application/json"},
        )
        assert got.status_code == 400
        [refused] = verify(url)["rejected"]
        assert refused["status"] == 400 and "not valid JSON" in refused["rejected"]
        journal = httpx.get(url + "/_mockllm/requests").json()
        assert [e["rejected"] is not None for e in journal] == [True]


def test_a_forbidden_history_is_reported_with_its_model(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        client = opened(openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0))
        messages: Any = [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "call_nowhere", "content": "42"},
        ]
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="gpt-4o", messages=messages)
        data = verify(url)
        [refused] = data["rejected"]
        assert refused["model"] == "gpt-4o" and refused["conversation"] and refused["status"] == 400
        verification = Verification.from_json(data)
        assert not verification.ok
        assert "1 request refused before matching" in verification.report()
        assert "/v1/chat/completions: 400" in verification.report()


def test_a_served_request_is_not_reported_as_refused(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        client = opened(openai.OpenAI(base_url=url + "/v1", api_key="k"))
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        report = verify(url)
        assert report["ok"] is True and report["rejected"] == []
