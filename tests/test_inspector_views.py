"""The inspector's JSON views and access rules over HTTP (httpx against real servers): the admin API's
rules (loopback, Host and Origin, the admin token), paged and bounded answers, and a fleet sharing
Redis seen as one from any of its servers. The page itself: tests/test_inspector_page.py."""

from __future__ import annotations

import time
from typing import Any

import httpx
import openai

import mockllm

LIBRARY = """\
scenario "Weather":
    step ask:
        when:
            last user message contains "weather"
        reply:
            text "Which city?"
    step answer:
        when:
            last user message contains "Oslo"
        reply:
            text "Sunny in Oslo."
"""
API = "/_mockllm/ui/api/"


def ask(url: str, text: str, conversation: str) -> int:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}
    headers = {"x-mockllm-conversation": conversation}
    return httpx.post(url + "/v1/chat/completions", json=body, headers=headers).status_code


def test_the_admin_api_rules_hold_for_the_page_and_its_views() -> None:
    with mockllm.serve(LIBRARY) as server:
        url = server.url
        assert httpx.get(url + "/_mockllm/ui").status_code == 200
        for path in ("/_mockllm/ui", "/_mockllm/ui/inspector.js", API + "journal"):
            rebound = httpx.get(url + path, headers={"host": "evil.example:80"})
            assert rebound.status_code == 403 and "Host" in rebound.json()["error"]
            foreign = httpx.get(url + path, headers={"origin": "http://evil.example"})
            assert foreign.status_code == 403 and "another origin" in foreign.json()["error"]
    with mockllm.serve(LIBRARY, admin_token="s3cret") as server:
        url = server.url
        page = httpx.get(url + "/_mockllm/ui")  # the files hold no data: they load, then ask for the token
        assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
        assert "unsafe-inline" not in page.headers["content-security-policy"]
        assert httpx.get(url + API + "library").status_code == 401
        assert httpx.get(url + API + "library", headers={"authorization": "Bearer nope"}).status_code == 403
        library = httpx.get(url + API + "library", headers={"authorization": "Bearer s3cret"}).json()
        assert [s["name"] for s in library["scenarios"]] == ["Weather"]


def test_journal_pages_newest_first_filters_and_stays_bounded() -> None:
    with mockllm.serve(LIBRARY) as server:
        url = server.url
        for i in range(30):
            assert ask(url, "weather?" if i % 3 == 0 else "nothing", f"c{i}") in (200, 404)
        first = httpx.get(url + API + "journal?limit=10").json()
        assert [e["id"] for e in first["entries"]] == list(range(30, 20, -1)) and first["newest"] == 30
        assert "body" not in first["entries"][0] and "reply" not in first["entries"][0]  # rows: no bodies
        older = httpx.get(url + API + f"journal?limit=10&before={first['next_before']}").json()
        assert [e["id"] for e in older["entries"]] == list(range(20, 10, -1))
        matched = httpx.get(url + API + "journal?matched=yes&limit=200").json()
        assert [e["id"] for e in matched["entries"]] == list(range(28, 0, -3)) and matched["next_before"] is None
        mine = httpx.get(url + API + "journal?conversation=c12").json()["entries"]
        assert [e["conversation"] for e in mine] == ["c12"] and mine[0]["step"] == "Weather / ask"
        new = httpx.get(url + API + "journal?after=27").json()["entries"]
        assert [e["id"] for e in new] == [30, 29, 28]
        capped = httpx.get(url + API + "journal?limit=100000").json()  # at most 200 rows a request
        assert len(capped["entries"]) == 30
        assert httpx.get(url + API + "journal?limit=0").status_code == 400
        detail = httpx.get(url + API + "entry?id=2").json()
        assert detail["no_match"]["candidates"][0]["step"] == "ask" and detail["body"]["messages"]
        assert httpx.get(url + API + "entry?id=999").status_code == 404
        conversations = httpx.get(url + API + "conversations?limit=5").json()
        assert conversations["total"] == 30 and len(conversations["conversations"]) == 5
        graph = httpx.get(url + API + "graph?scenario=Weather").json()
        assert graph["positions"] == {"s0": {"count": 10, "conversations": graph["positions"]["s0"]["conversations"]}}
        assert len(graph["positions"]["s0"]["conversations"]) == 10
        verify = httpx.get(url + API + "verify").json()
        assert verify["unmatched_count"] == 20 and len(verify["unmatched"]) == 20
        assert all("body" not in e for e in verify["unmatched"])
        streamed = {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "weather?"}]}
        assert httpx.post(url + "/v1/chat/completions", json=streamed).status_code == 200
        reply = httpx.get(url + API + "entry?id=31").json()["reply"]  # a stream's frames, joined
        assert reply.startswith("data: {") and "Which" in reply and reply.rstrip().endswith("data: [DONE]")


def test_a_redis_fleet_is_seen_whole_from_any_server(redis_url: str) -> None:
    with mockllm.serve(LIBRARY, state=redis_url) as first, mockllm.serve(LIBRARY, state=redis_url) as second:
        client = openai.OpenAI(base_url=first.url + "/v1", api_key="test", max_retries=0)
        reply = client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "weather?"}],
            extra_headers={"x-mockllm-conversation": "fleet-1"},
        )
        assert reply.choices[0].message.content == "Which city?"
        rows: Any = httpx.get(second.url + API + "journal").json()["entries"]
        assert [(r["conversation"], r["step"]) for r in rows] == [("fleet-1", "Weather / ask")]
        graph = httpx.get(second.url + API + "graph?scenario=Weather").json()
        assert graph["positions"]["s0"] == {"count": 1, "conversations": ["fleet-1"]}
        for _ in range(100):  # the reply body is written a moment after the answer: the wait polls
            detail = httpx.get(second.url + API + f"entry?id={rows[0]['id']}").json()
            if detail["reply"] is not None:
                break
            time.sleep(0.05)
        assert detail["body"]["messages"][0]["content"] == "weather?"
        assert "Which city?" in detail["reply"]  # a shared journal keeps reply bodies too, bounded
        assert httpx.post(second.url + "/_mockllm/reset").status_code == 200
        assert httpx.get(first.url + API + "journal").json()["entries"] == []


def test_unknown_things_are_clear_errors() -> None:
    with mockllm.serve(LIBRARY) as server:
        for path in ("graph?scenario=Nope", "source?scenario=Weather&step=9", "entry?id=0", "journal?before=x"):
            answer = httpx.get(server.url + API + path)
            assert answer.status_code in (400, 404) and answer.json()["error"].startswith("mockllm:"), path
