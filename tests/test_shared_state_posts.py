"""Scenarios posted to one of several servers sharing one Redis (``--state redis://…``), seen from the
others: every server serves exactly what the posting server serves, and a server that cannot load a
post (its scenario base lacks a file the post imports) says so in its admin API, rendered, and so does
every other server. Real ``mockllm serve`` processes with different scenario bases, a real
``redis-server`` (tests/redis_server.py), httpx and the OpenAI SDK."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from reliability import serve_process

import mockllm
from mockllm.errors import DiagnosticsError

SHARED = 'mockllm 1\nreply greeting:\n    text "Hello from the shared file."\n'
USES_SHARED = """mockllm 1
use "shared.mockllm" as shared

scenario "Hi":
    step hi:
        when:
            last user message contains "hi"
        reply like shared.greeting
"""
BUSY = """mockllm 1
reply busy:
    error 429 "Slow down."

scenario "Busy":
    step busy:
        when:
            last user message contains "busy"
        reply like busy
"""
ALSO_BUSY = """mockllm 1
scenario "Also busy":
    step also:
        when:
            last user message contains "also"
        reply like busy
"""
AS_JSON = json.dumps(  # the JSON form of a script: the Python API reads text starting with `{` as that
    {
        "mockllm": 1,
        "scenarios": [
            {
                "name": "From JSON",
                "steps": [
                    {
                        "name": "json",
                        "conditions": [
                            {
                                "subject": {"kind": "last_user_message"},
                                "predicate": {"op": "contains", "value": "json"},
                            }
                        ],
                        "reply": {"type": "block", "elements": [{"type": "text", "text": "Hello from JSON."}]},
                    }
                ],
            }
        ],
    }
)


def say(url: str, text: str) -> str:
    """The text of a chat completion of ``text`` (a conversation of its own per server), or ``HTTP status``."""
    headers = {"x-mockllm-conversation": f"{url} {text}"}
    with openai.OpenAI(base_url=url + "/v1", api_key="test", max_retries=0, default_headers=headers) as client:
        try:
            completion = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": text}])
        except openai.APIStatusError as exc:
            return f"HTTP {exc.status_code}"
    return str(completion.choices[0].message.content)


def names(url: str) -> list[str]:
    return [s["name"] for s in httpx.get(url + "/_mockllm/scenarios", timeout=30).json()]


def test_a_post_that_uses_another_posts_named_reply_is_refused_where_posted_and_served_alike_everywhere(
    redis_url: str, tmp_path: Path
) -> None:
    """Named replies belong to their file: a later post cannot use an earlier one's, on the posting
    server as on one alone, so no server compiles a post against what was posted before."""
    with (
        serve_process("--state", redis_url, "--scenario-base", str(tmp_path)) as (_, first, _),
        serve_process("--state", redis_url, "--scenario-base", str(tmp_path)) as (_, second, _),
    ):
        assert httpx.post(first + "/_mockllm/scenarios", content=BUSY, timeout=30).json()["loaded"] == ["Busy"]
        refused = httpx.post(first + "/_mockllm/scenarios", content=ALSO_BUSY, timeout=30)
        assert refused.status_code == 400
        assert refused.json()["errors"][0]["message"] == "`reply like busy`: this file defines no reply `busy`"
        assert names(first) == names(second) == ["Busy"]
        assert [say(url, text) for url in (first, second) for text in ("busy", "also")] == ["HTTP 429", "HTTP 404"] * 2

        with mockllm.serve(state=redis_url, base=tmp_path) as third:  # the Python API: refused as well
            with pytest.raises(DiagnosticsError, match="this file defines no reply `busy`"):
                third.load(ALSO_BUSY)
            assert names(third.url) == names(second) == ["Busy"]
            health = httpx.get(second + "/_mockllm/health", timeout=30).json()
            assert health["not_loaded"] == []


def test_json_text_and_builders_loaded_from_python_are_served_by_every_server(redis_url: str, tmp_path: Path) -> None:
    with (
        serve_process("--state", redis_url, "--scenario-base", str(tmp_path)) as (_, other, _),
        mockllm.serve(state=redis_url, base=tmp_path) as origin,
    ):
        assert origin.load(AS_JSON).scenarios == ("From JSON",)
        hello = mockllm.scenario("Hello").step("hello").when(mockllm.last_user_message().contains("hello"))
        assert origin.load(hello.reply(mockllm.text("Hello from a builder."))).scenarios == ("Hello",)
        assert names(origin.url) == names(other) == ["From JSON", "Hello"]
        for url in (origin.url, other):
            assert [say(url, "json"), say(url, "hello")] == ["Hello from JSON.", "Hello from a builder."]
        assert httpx.get(other + "/_mockllm/health", timeout=30).json()["not_loaded"] == []


def test_python_text_importing_from_outside_the_scenario_base_is_refused_where_loaded(
    redis_url: str, tmp_path: Path
) -> None:
    """Every server reads a post's imports below its own scenario base; the loading server too, so it
    refuses what the others would refuse instead of serving alone what they cannot."""
    base, elsewhere = tmp_path / "base", tmp_path / "elsewhere"
    base.mkdir()
    elsewhere.mkdir()
    (elsewhere / "shared.mockllm").write_text(SHARED)
    with mockllm.serve(state=redis_url, base=base) as origin:
        with pytest.raises(DiagnosticsError) as refused:
            origin.load(USES_SHARED, base=elsewhere)
        assert [d.code for d in refused.value.diagnostics] == ["import-outside-base"]
        assert "<text>:2:1" in str(refused.value)
        assert origin.scenarios() == []
        with mockllm.serve(base=base) as alone:  # state in memory: one server, any directory
            assert alone.load(USES_SHARED, base=elsewhere).scenarios == ("Hi",)


def not_loaded_on(url: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = httpx.get(url + "/_mockllm/health", timeout=30).json()["not_loaded"]
    return found


def test_a_server_that_cannot_load_a_post_says_so_on_every_server_until_it_can(redis_url: str, tmp_path: Path) -> None:
    with_file, without = tmp_path / "with", tmp_path / "without"
    with_file.mkdir()
    without.mkdir()
    (with_file / "shared.mockllm").write_text(SHARED)
    with (
        serve_process("--state", redis_url, "--scenario-base", str(with_file)) as (_, first, _),
        serve_process("--state", redis_url, "--scenario-base", str(without)) as (lacking, second, _),
    ):
        posted = httpx.post(first + "/_mockllm/scenarios", content=USES_SHARED, timeout=30)
        assert posted.json()["loaded"] == ["Hi"]  # the posting server cannot know about the others yet
        assert [say(first, "hi"), say(second, "hi")] == ["Hello from the shared file.", "hi"]  # the echo responder

        health = httpx.get(second + "/_mockllm/health", timeout=30).json()
        [report] = health["not_loaded"]
        assert report["pid"] == lacking.pid == health["pid"]
        assert (report["post"], report["file"]) == (1, "POST /_mockllm/scenarios")
        assert report["scenario_base"] == str(without)
        assert report["message"] == (
            f"server {report['server']} (scenario base {without}) cannot load posted text 1 of 1 "
            "(POST /_mockllm/scenarios): it serves the library without it"
        )
        assert [e["code"] for e in report["errors"]] == ["not-found"]
        assert report["text"].splitlines()[:5] == [
            f"error: {report['errors'][0]['message']}",
            "  --> POST /_mockllm/scenarios:2:1",
            "   |",
            ' 2 | use "shared.mockllm" as shared',
            "   | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        ]
        assert health["loaded"].endswith(
            ". Posted text 1 (POST /_mockllm/scenarios) does not load on this server: see not_loaded"
        )
        first_health = httpx.get(first + "/_mockllm/health", timeout=30).json()
        assert first_health["not_loaded"] == [report]  # every server lists what each could not load
        assert "does not load" not in first_health["loaded"]
        verified = httpx.get(first + "/_mockllm/verify", timeout=30).json()
        assert (verified["ok"], verified["not_loaded"]) == (False, [report])

        with mockllm.serve(state=redis_url, base=with_file) as third:  # the Python API's report says it too
            verification = third.verify()
            assert not verification.ok
            assert verification.report().startswith(f"mockllm: {report['message']}:\n{report['text']}")

        (without / "shared.mockllm").write_text(SHARED)  # the file arrives; the same text posted again to it loads
        assert httpx.post(second + "/_mockllm/scenarios", content=USES_SHARED, timeout=30).json()["loaded"] == ["Hi"]
        assert say(second, "hi again") == "Hello from the shared file."
        assert not_loaded_on(first) == not_loaded_on(second) == []
        assert httpx.get(second + "/_mockllm/verify", timeout=30).json()["ok"]

        (without / "shared.mockllm").unlink()  # a second post that cannot load there, then a stop
        httpx.post(first + "/_mockllm/scenarios", content=USES_SHARED.replace('"Hi"', '"Hi 2"'), timeout=30)
        assert [r["post"] for r in not_loaded_on(second)] == [3]  # the third text posted (the first twice)
        # no posts: nothing unloaded
        assert httpx.delete(first + "/_mockllm/scenarios", timeout=30).json() == {"cleared": True}
        assert not_loaded_on(first) == []
        # loaded there before: compiled afresh
        httpx.post(first + "/_mockllm/scenarios", content=USES_SHARED, timeout=30)
        assert [r["post"] for r in not_loaded_on(second)] == [1]
        lacking.terminate()
        lacking.wait(10)
        assert not_loaded_on(first) == []  # a server that stopped no longer counts
