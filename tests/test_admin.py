"""The admin API under /_mockllm/ (docs/admin-api.md) against a real loopback server."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from conftest import Serve
from starlette.requests import Request

from mockllm.server.http.admin import _refusal
from mockllm.server.options import ServerOptions

HTTP = httpx.Client(timeout=10)  # one pool: creating a client per request costs ~50 ms

AUTH = {"authorization": "Bearer sk-test"}

LIBRARY = """
scenario "greeting":
    priority 5
    tags smoke, chat
    step hello:
        when:
            last user message contains "hello"
        reply:
            text "Hi there"
    step bye:
        reply:
            text "Bye"
"""

MORE = """
scenario "weather":
    step ask:
        when:
            last user message contains "weather"
        reply:
            text "Sunny"
"""


def chat(url: str, text: str, conversation: str | None = None) -> httpx.Response:
    headers = dict(AUTH)
    if conversation:
        headers["x-mockllm-conversation"] = conversation
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}
    return HTTP.post(url + "/v1/chat/completions", json=body, headers=headers)


def reply_text(r: httpx.Response) -> str:
    assert r.status_code == 200, r.text
    return str(r.json()["choices"][0]["message"]["content"])


def test_health_summarises_the_library(serve: Serve) -> None:
    with serve(LIBRARY) as server:
        body = HTTP.get(server.url + "/_mockllm/health").json()
    assert body["status"] == "ok" and body["scenarios"] == 1 and body["steps"] == 2
    assert body["version"]


def test_scenarios_lists_name_location_priority_tags_and_steps(serve: Serve) -> None:
    with serve(LIBRARY) as server:
        listed = HTTP.get(server.url + "/_mockllm/scenarios").json()
    assert len(listed) == 1
    s = listed[0]
    assert s["name"] == "greeting" and s["priority"] == 5 and s["tags"] == ["smoke", "chat"]
    assert s["steps"] == ["hello", "bye"]
    assert s["file"] == "test.mockllm" and s["line"] == 2 and s["location"].startswith("test.mockllm:2")


def test_posting_text_adds_scenarios_and_replaces_same_named_ones(serve: Serve) -> None:
    replacement = LIBRARY.replace('"Hi there"', '"Hello again"')
    with serve(LIBRARY) as server:
        u = server.url
        added = HTTP.post(u + "/_mockllm/scenarios", content=MORE)
        replaced = HTTP.post(u + "/_mockllm/scenarios", content=replacement)
        names = [s["name"] for s in HTTP.get(u + "/_mockllm/scenarios").json()]
        weather = reply_text(chat(u, "weather?"))
        hello = reply_text(chat(u, "hello"))
    assert added.status_code == 200 and added.json()["loaded"] == ["weather"]
    assert replaced.json()["loaded"] == ["greeting"] and replaced.json()["replaced"] == ["greeting"]
    assert sorted(names) == ["greeting", "weather"]
    assert weather == "Sunny" and hello == "Hello again"


def test_posting_the_json_form(serve: Serve) -> None:
    from mockllm.dsl.parse.loader import load_text
    from mockllm.dsl.tree.jsonform import to_json_text

    script = load_text(MORE, file="more.mockllm").files[0]
    with serve() as server:
        r = HTTP.post(
            server.url + "/_mockllm/scenarios",
            content=to_json_text(script),
            headers={"content-type": "application/json"},
        )
        weather = reply_text(chat(server.url, "weather?"))
    assert r.status_code == 200, r.text
    assert r.json()["loaded"] == ["weather"] and weather == "Sunny"


def test_a_broken_post_changes_nothing_and_returns_every_diagnostic(serve: Serve) -> None:
    broken = (
        MORE
        + """
scenario "broken":
    step a:
        after nowhere
        reply:
            text "x"
"""
    )
    with serve(LIBRARY) as server:
        r = HTTP.post(server.url + "/_mockllm/scenarios", content=broken)
        names = [s["name"] for s in HTTP.get(server.url + "/_mockllm/scenarios").json()]
        bad_json = HTTP.post(
            server.url + "/_mockllm/scenarios", content="{nope", headers={"content-type": "application/json"}
        )
        bad_bytes = HTTP.post(server.url + "/_mockllm/scenarios", content=b"\xff\xfe")
    assert r.status_code == 400
    body = r.json()
    assert body["errors"] and all(e["severity"] == "error" for e in body["errors"])
    assert any("nowhere" in e["message"] for e in body["errors"])
    assert "^" in body["text"] and "POST /_mockllm/scenarios:" in body["text"]
    assert names == ["greeting"]  # "weather" was not half-loaded
    assert bad_json.status_code == 400 and bad_json.json()["errors"]
    assert bad_bytes.status_code == 400 and "UTF-8" in bad_bytes.json()["error"]


def test_delete_clears_every_scenario_leaving_the_echo_responder(serve: Serve) -> None:
    with serve(LIBRARY) as server:
        cleared = HTTP.delete(server.url + "/_mockllm/scenarios")
        listed = HTTP.get(server.url + "/_mockllm/scenarios").json()
        echoed = reply_text(chat(server.url, "parrot this"))
    assert cleared.status_code == 200 and listed == []
    assert echoed == "parrot this"


def test_requests_journal_and_reset(serve: Serve) -> None:
    with serve(LIBRARY) as server:
        u = server.url
        reply_text(chat(u, "hello", "a"))
        reply_text(chat(u, "hello", "b"))
        journal = HTTP.get(u + "/_mockllm/requests").json()
        one = HTTP.post(u + "/_mockllm/reset", params={"conversation": "a"})
        after_one = HTTP.get(u + "/_mockllm/requests").json()
        again_a = reply_text(chat(u, "hello", "a"))  # conversation a starts afresh
        again_b = reply_text(chat(u, "hello", "b"))  # conversation b moved on to `bye`
        everything = HTTP.post(u + "/_mockllm/reset")
        emptied = HTTP.get(u + "/_mockllm/requests").json()
    assert [(e["conversation"], e["matched"]["step"], e["status"]) for e in journal] == [
        ("a", "hello", 200),
        ("b", "hello", 200),
    ]
    assert one.json() == {"reset": "a"} and [e["conversation"] for e in after_one] == ["b"]
    assert again_a == "Hi there" and again_b == "Bye"
    assert everything.json() == {"reset": "all"} and emptied == []


def test_conversations_show_machine_positions(serve: Serve) -> None:
    with serve(LIBRARY) as server:
        reply_text(chat(server.url, "hello", "conv-9"))
        conversations = HTTP.get(server.url + "/_mockllm/conversations").json()
    (conv,) = [c for c in conversations if c["conversation"] == "conv-9"]
    assert conv["machines"][0]["scenario"] == "greeting"
    assert conv["machines"][0]["position"] == "hello"


def test_verify_reports_unmatched_requests_and_unused_steps(serve: Serve) -> None:
    with serve(MORE) as server:
        chat(server.url, "no weather word here".replace("weather", "climate"))
        verify = HTTP.get(server.url + "/_mockllm/verify").json()
    assert verify["ok"] is False
    assert len(verify["unmatched"]) == 1
    assert [s["step"] for s in verify["unused_steps"]] == ["ask"]


def test_unknown_admin_route_is_a_json_404(serve: Serve) -> None:
    with serve() as server:
        r = HTTP.get(server.url + "/_mockllm/nothing")
        wrong = HTTP.put(server.url + "/_mockllm/reset")
    assert r.status_code == 404 and "error" in r.json()
    assert wrong.status_code == 405 and "error" in wrong.json()


def test_admin_token_is_required_when_set(serve: Serve) -> None:
    with serve(admin_token="s3cret") as server:
        u = server.url + "/_mockllm/health"
        missing = HTTP.get(u)
        wrong = HTTP.get(u, headers={"authorization": "Bearer nope"})
        right = HTTP.get(u, headers={"authorization": "Bearer s3cret"})
        provider_untouched = reply_text(chat(server.url, "still works"))
    assert missing.status_code == 401 and "Bearer" in missing.json()["error"]
    assert wrong.status_code == 403
    assert right.status_code == 200 and right.json()["status"] == "ok"
    assert provider_untouched == "still works"


def _request_from(host: str, headers: dict[str, str] | None = None) -> Request:
    scope: dict[str, Any] = {
        "type": "http",
        "method": "GET",
        "path": "/_mockllm/health",
        "headers": [(k.encode(), v.encode()) for k, v in (headers or {}).items()],
        "client": (host, 50000),
    }
    return Request(scope)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"])
def test_loopback_clients_may_use_the_admin_api(host: str) -> None:
    assert _refusal(_request_from(host), ServerOptions()) is None


@pytest.mark.parametrize("host", ["10.1.2.3", "192.168.0.7", "::ffff:10.0.0.1", "2001:db8::1", "", "not-an-ip"])
def test_other_clients_are_refused_without_a_token(host: str) -> None:
    refused = _refusal(_request_from(host), ServerOptions())
    assert refused is not None and refused.status_code == 403
    assert "--admin-token" in json.loads(bytes(refused.body))["error"]


def test_with_a_token_any_client_with_the_token_may_use_the_admin_api() -> None:
    options = ServerOptions(admin_token="t0k")
    assert _refusal(_request_from("10.1.2.3", {"authorization": "Bearer t0k"}), options) is None
    refused = _refusal(_request_from("127.0.0.1"), options)
    assert refused is not None and refused.status_code == 401


@pytest.mark.parametrize(
    ("headers", "relayed"),
    [
        ({"x-forwarded-for": "203.0.113.5"}, "203.0.113.5"),
        ({"x-forwarded-for": "127.0.0.1, 198.51.100.7"}, "198.51.100.7"),
        ({"forwarded": 'for="[2001:db8::1]:4711";proto=https'}, "2001:db8::1"),
        ({"forwarded": "for=192.0.2.60:8080, for=127.0.0.1"}, "192.0.2.60"),
        ({"forwarded": "for=unknown"}, "unknown"),
    ],
)
def test_a_loopback_proxy_relaying_for_another_machine_is_refused(headers: dict[str, str], relayed: str) -> None:
    refused = _refusal(_request_from("127.0.0.1", headers), ServerOptions())
    assert refused is not None and refused.status_code == 403
    error = json.loads(bytes(refused.body))["error"]
    assert f"this one is {relayed}, relayed by a proxy on this machine" in error and "--admin-token" in error


@pytest.mark.parametrize(
    "headers", [{"x-forwarded-for": "127.0.0.1"}, {"x-forwarded-for": "::1, 127.0.0.2"}, {"forwarded": "for=127.0.0.1"}]
)
def test_a_loopback_proxy_relaying_for_this_machine_is_allowed(headers: dict[str, str]) -> None:
    assert _refusal(_request_from("127.0.0.1", headers), ServerOptions()) is None


def test_relay_headers_from_a_remote_peer_do_not_make_it_local() -> None:
    refused = _refusal(_request_from("10.1.2.3", {"x-forwarded-for": "127.0.0.1"}), ServerOptions())
    assert refused is not None and refused.status_code == 403
    assert "(this one is 10.1.2.3);" in json.loads(bytes(refused.body))["error"]
