"""Memory that comes back (issue 12): journal bodies capped per entry and in total, released on reset,
the journal read a page at a time, conversation keys of a fixed size, and credentials masked
wherever a report shows a header's value."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from conftest import Serve, compile_text

from mockllm.runtime.engine.conversations import KEY_CHARS, stored_key
from mockllm.runtime.engine.engine import Engine
from mockllm.runtime.engine.journal import ENTRY_ALLOWANCE, Delivery, Journal, JournalEntry, _size
from mockllm.runtime.request import ChatRequest, Message
from mockllm.server.background import BackgroundServer

NEVER = (
    'scenario "s":\n    step a:\n        when:\n            model is "never"\n        reply:\n            text "x"\n'
)


def entry(i: int, body: Any = None, conversation: str = "c") -> JournalEntry:
    return JournalEntry(i, 0.0, conversation, "openai", "/v1/chat/completions", "m", False, 404, body=body)


def test_a_body_past_the_entry_cap_keeps_its_start_and_says_so() -> None:
    journal = Journal(100, entry_body_bytes=50)
    journal.add(entry(1, {"text": "x" * 200}))
    journal.add(entry(2, {"text": "short"}))
    long, short = journal.to_json()
    assert long["body_truncated"] is True
    assert long["body"] == '{"text":"' + "x" * 41
    assert long["body_bytes"] == len('{"text":""}') + 200
    assert short["body"] == {"text": "short"} and short["body_truncated"] is False and short["body_bytes"] == 16


def test_a_large_body_is_written_from_its_start_only() -> None:
    """An inline image of a million characters: the journal writes its first characters, never the whole
    text (the cost of keeping every body stays that of a small one); the size is estimated."""
    journal = Journal(100, entry_body_bytes=100)
    image = "A" * 1_000_000
    journal.add(entry(1, {"model": "m", "messages": [{"role": "user", "content": image}], "after": "x" * 10}))
    kept = journal.to_json()[0]
    assert kept["body_truncated"] is True and isinstance(kept["body"], str)
    assert kept["body"] == '{"model":"m","messages":[{"role":"user","content":"' + "A" * 49
    assert 1_000_000 < kept["body_bytes"] < 1_000_100  # an estimate of the JSON text's size
    matched = JournalEntry(2, 0.0, "c", "openai", "/v1/chat/completions", "m", False, 200, body={"n": [1, 2]})
    journal.add(matched)
    assert journal.to_json()[1]["body"] == {"n": [1, 2]}  # a matched request keeps its body too


_BOUNDED_BODIES: list[Any] = [
    {"name": "get_forecast", "arguments": {"city": "Paris"}},
    {"n": [0] * 60},  # small numbers: the most the estimate counts per character of JSON
    {"a": [True, None, False, 1.5e300], "b": {"": "", "k" * 30: ["x", []]}, "é": "\u00e9\ud83d\ude00"},
    {"text": "y" * 300},
]


@pytest.mark.parametrize("cap", [0, 10, 64, 130, 400, 65_536])
def test_a_body_bounded_by_its_json_length_is_kept_as_a_measured_one(cap: int) -> None:
    """keep_body skips measuring a body parsed from at most cap / 2 characters of JSON (an MCP call's
    arguments: ``body_bound``); what it keeps and counts is what measuring it gives, short or cut."""
    for body in _BOUNDED_BODIES:
        sent = json.dumps({"jsonrpc": "2.0", "params": body})  # the request the body is a part of
        measured, bounded = entry(1, body), entry(2, body)
        bounded.body_bound = len(sent)
        assert bounded.keep_body(cap) == measured.keep_body(cap)
        assert (bounded.body_text, bounded.body_bytes, bounded.body_truncated) == (
            measured.body_text,
            measured.body_bytes,
            measured.body_truncated,
        )
        assert _size(body, 10**9) <= 8 * len(json.dumps(body, separators=(",", ":")))  # what the skip rests on


def test_the_total_cap_drops_the_oldest_entries_first() -> None:
    journal = Journal(1000, entry_body_bytes=10_000, total_bytes=5 * (ENTRY_ALLOWANCE + 1_000))
    for i in range(1, 21):
        journal.add(entry(i, "y" * 998))  # 1,000 characters of JSON text each
    assert [e.id for e in journal.entries()] == [16, 17, 18, 19, 20]
    assert journal.bytes == 5 * (ENTRY_ALLOWANCE + 1_000)
    journal.drop_conversation("c")
    assert journal.bytes == 0 and journal.entries() == []


def test_pages_follow_ids_oldest_first() -> None:
    journal = Journal(100)
    for i in range(1, 8):
        journal.add(entry(i))
    first, after = journal.page(3)
    assert [e["id"] for e in first] == [1, 2, 3] and after == 3
    second, after = journal.page(3, 3)
    assert [e["id"] for e in second] == [4, 5, 6] and after == 6
    last, after = journal.page(3, 6)
    assert [e["id"] for e in last] == [7] and after is None
    assert journal.page(3, 7) == ([], None)


@pytest.fixture
def unmatched_server(serve: Serve) -> Iterator[BackgroundServer]:
    with serve(NEVER, no_auth=True) as server:
        yield server


def _unmatched(client: httpx.Client, text: str, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}
    return client.post("/v1/chat/completions", json=body, headers=headers)


def test_the_admin_api_pages_the_journal(unmatched_server: BackgroundServer) -> None:
    with httpx.Client(base_url=unmatched_server.url, timeout=30) as client:
        for i in range(105):
            assert _unmatched(client, f"request {i}").status_code == 404
        default = client.get("/_mockllm/requests")
        assert len(default.json()) == 100 and default.headers["x-mockllm-next-after"] == "100"
        rest = client.get("/_mockllm/requests", params={"after": "100"})
        assert [e["id"] for e in rest.json()] == [101, 102, 103, 104, 105]
        assert "x-mockllm-next-after" not in rest.headers
        two = client.get("/_mockllm/requests?limit=2&after=103")
        assert [e["body"]["messages"][0]["content"] for e in two.json()] == ["request 103", "request 104"]
        bad = client.get("/_mockllm/requests?limit=0")
        assert bad.status_code == 400
        assert bad.json() == {"error": 'mockllm: ?limit= must be an integer of at least 1, got "0"'}


def test_a_long_conversation_header_is_kept_as_a_fixed_size_key(unmatched_server: BackgroundServer) -> None:
    header = "run-42/" + "z" * 10_000
    with httpx.Client(base_url=unmatched_server.url, timeout=30) as client:
        _unmatched(client, "hi", {"x-mockllm-conversation": header})
        (entry_json,) = client.get("/_mockllm/requests").json()
        key = entry_json["conversation"]
        assert len(key) <= KEY_CHARS and key.startswith("run-42/zzz") and key == stored_key(header)
        assert [c["conversation"] for c in client.get("/_mockllm/conversations").json()] == [key]
        client.post("/_mockllm/reset", params={"conversation": header})  # the value as sent works
        assert client.get("/_mockllm/conversations").json() == []
        _unmatched(client, "hi", {"x-mockllm-conversation": header})
        client.post("/_mockllm/reset", params={"conversation": key})  # and so does the key shown
        assert client.get("/_mockllm/conversations").json() == []


def _memory_of_conversations(key_chars: int) -> int:
    """Bytes still allocated after 300 conversations, each named by a header of ``key_chars``."""
    engine = Engine(compile_text(NEVER))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(300):
        name = f"{i:04d}" + "k" * key_chars
        headers = {"x-mockllm-conversation": name}
        chat = ChatRequest("openai", "/v1/chat/completions", "m", False, (Message("user", "hi"),), headers=headers)
        engine.handle(chat)
        del chat, name, headers
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(engine.conversations()) == 300
    return used


def test_per_conversation_memory_does_not_depend_on_key_size() -> None:
    short, long = _memory_of_conversations(10), _memory_of_conversations(10_000)
    assert long < short * 1.5, f"300 conversations: {short} bytes with short keys, {long} with 10,000-character keys"


def test_credentials_are_masked_in_reports_the_journal_and_the_log(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    script = 'scenario "keyed":\n    step a:\n        when:\n            header "authorization" is "Bearer sk-right"\n'
    script += '        expect:\n            header "x-api-key" is "k-right"\n'
    script += '        reply:\n            text "x"\n'
    caplog.set_level(logging.INFO)
    secret = "sk-live-SECRET-0123456789"
    with serve(script, no_auth=True) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        missed = _unmatched(client, "hi", {"authorization": f"Bearer {secret}"})
        assert missed.status_code == 404
        assert '"Bearer sk-l…" (masked, 32 characters)' in missed.json()["error"]["message"]
        failed = _unmatched(client, "hi", {"authorization": "Bearer sk-right", "x-api-key": secret})
        assert failed.status_code == 400
        assert '"sk-l…" (masked, 25 characters)' in failed.json()["error"]["message"]
        seen = client.get("/_mockllm/requests").text + client.get("/_mockllm/verify").text
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for where in (missed.text, failed.text, seen, logged):
        assert "SECRET" not in where


# ------------------------------------------------------------------------------------------------
# RSS over a bounded run, in a server subprocess


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+)", status)
    assert found is not None
    return int(found.group(1)) / 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="RSS is read from /proc (Linux)")
def test_rss_returns_near_its_start_after_reset(tmp_path: Path) -> None:
    """400 unmatched requests with 200 KB bodies: the journal keeps at most its 32 MB cap (it kept every
    parsed body: +110 MB), and a reset hands the memory back (it released none). Generous margins."""
    script = tmp_path / "never.mockllm"
    script.write_text(NEVER, encoding="utf-8")
    argv = [sys.executable, "-m", "mockllm", "serve", str(script), "--port", "0", "--no-auth"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        found = re.search(r"(http://\S+)", proc.stdout.readline())
        assert found is not None, "the server printed no listening line"
        with httpx.Client(base_url=found.group(1), timeout=60) as client:
            client.get("/_mockllm/health")
            start = _rss_mb(proc.pid)
            big = "x" * 200_000
            for i in range(400):
                assert _unmatched(client, big + str(i)).status_code == 404
            after = 0
            while True:
                page = client.get("/_mockllm/requests", params={"limit": 1000, "after": after})
                if "x-mockllm-next-after" not in page.headers:
                    break
                after = int(page.headers["x-mockllm-next-after"])
            grown = _rss_mb(proc.pid) - start
            client.post("/_mockllm/reset")
            time.sleep(0.2)
            kept = _rss_mb(proc.pid) - start
        assert grown < 80, f"RSS grew {grown:.0f} MB over 400 requests of 200 KB"
        assert kept < 20, f"RSS still {kept:.0f} MB above its start after reset (it had grown {grown:.0f} MB)"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_capture_from_a_credential_header_is_masked_in_the_conversations_view(serve: Serve) -> None:
    script = 'scenario "keyed":\n    step a:\n        always\n'
    script += '        capture token from header "authorization" /Bearer (.+)/\n'
    script += '        reply:\n            text "token {{token}}"\n'
    with serve(script, no_auth=True) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        reply = _unmatched(client, "hi", {"authorization": "Bearer sk-live-SECRET-0123456789"})
        assert reply.json()["choices"][0]["message"]["content"] == "token sk-live-SECRET-0123456789"
        (conversation,) = client.get("/_mockllm/conversations").json()
        assert conversation["machines"][0]["captures"] == {"token": '"sk-l…" (masked, 25 characters)'}


def test_an_entry_is_settled_once_with_what_the_client_received() -> None:
    """Until the server settles it, an entry shows the status its reply asks for and the engine's
    remark; then the delivery's, and a second settle changes nothing."""
    journal = Journal(10)
    journal.add(attrs.evolve(entry(1), remark="a remark"))
    assert [(e["status"], e["client_gone"], e["note"]) for e in journal.to_json()] == [(404, False, "a remark")]
    journal.settle(1, Delivery(0, client_gone=True, note="hang: the client gave up"))
    journal.settle(1, Delivery(500, note="internal error"))
    journal.settle(99, Delivery(500))  # an entry no longer kept: nothing to settle
    [settled] = journal.entries()
    assert (settled.status, settled.client_gone, settled.note) == (0, True, "hang: the client gave up")
    again = JournalEntry.from_json(settled.to_json())
    assert (again.status, again.client_gone, again.note) == (0, True, "hang: the client gave up")


def _entries() -> list[JournalEntry]:
    from mockllm.dsl.span import Span
    from mockllm.runtime.engine.outcome import Candidate, FailedCondition, NoMatchReport

    odd = 'quote " backslash \\ newline \n tab \t nul \x00 line-sep \u2028 é 日本 🙂'
    report = NoMatchReport(
        "mockllm: no step matched",
        (Candidate("s", "ask", Span("a.mockllm", 3, 5, 3, 9), (FailedCondition('model is "x"', odd),), "why"),),
        "opening",
    )
    plain = JournalEntry(1, 1795780099.930191, "c1", "openai", "/v1/chat/completions", "gpt", False, 200)
    matched = attrs.evolve(plain, scenario=odd, step="ask", location="a.mockllm:3:5", response_id="r" + odd)
    unmatched = attrs.evolve(plain, id=2, planned=404, no_match=report, body={"messages": [odd, 1.5, None, True]})
    truncated = attrs.evolve(plain, id=3, body={"text": "x" * 50})
    truncated.keep_body(20)
    kept = attrs.evolve(plain, id=4, body=["é", {"n": -0.0, "big": 10**30}])
    kept.keep_body(1000)
    settled = attrs.evolve(matched, delivery=Delivery(0, client_gone=True, note=odd), stream=True)
    return [
        plain,
        matched,
        unmatched,
        truncated,
        kept,
        settled,
        attrs.evolve(plain, fallback=True, remark="why " + odd, expectation_failed=odd, time=0.0),
        attrs.evolve(plain, echo=True, rejected="bad json " + odd, body_bytes=12, time=1e-07),
        attrs.evolve(plain, time=float("nan")),
        attrs.evolve(plain, time=1795780099),  # a clock that counts whole seconds
    ]


@pytest.mark.parametrize("index", range(len(_entries())))
def test_an_entry_as_json_text_is_what_json_makes_of_it(index: int) -> None:
    """The shared state store writes entries with to_json_text: the same text, byte for byte."""
    import json

    entry = _entries()[index]
    made = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode(entry.to_json())
    assert entry.to_json_text() == made


def test_entries_sharing_or_differing_in_their_parts_are_each_written_right() -> None:
    """to_json_text keeps the text of the parts many entries share (where the request came, who
    answered): one after the other, entries that differ in any one of those parts each get their own."""
    import json

    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
    base = _entries()
    variants = [
        attrs.evolve(base[1], provider="anthropic"),
        attrs.evolve(base[1], endpoint="/v1/messages"),
        attrs.evolve(base[1], model="gpt-é"),
        attrs.evolve(base[1], stream=True),
        attrs.evolve(base[1], scenario="other"),
        attrs.evolve(base[1], step="other"),
        attrs.evolve(base[1], location=None),
        attrs.evolve(base[0], fallback=True),
        attrs.evolve(base[0], echo=True),
        attrs.evolve(base[0], echo=True, operation="embeddings"),  # its own answered_by
        attrs.evolve(base[0], no_match=base[2].no_match),
    ]
    for _ in range(2):  # the second time, every part is already kept
        for entry in [*base, *variants]:
            assert entry.to_json_text() == encode(entry.to_json())


def test_a_long_model_name_is_written_but_not_kept() -> None:
    """The model and path come from the client: the text of a long one is not kept between entries."""
    import json

    from mockllm.runtime.engine import journal

    entry = attrs.evolve(_entries()[1], model="m" * 10_000)
    kept = dict(journal._FRAGMENTS)
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
    assert entry.to_json_text() == encode(entry.to_json())
    assert not any("m" * 10_000 in text for text in journal._FRAGMENTS.values())
    assert set(journal._FRAGMENTS) - set(kept) <= {k for k in journal._FRAGMENTS if len(k) == 7}
