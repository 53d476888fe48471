"""Wire fidelity against recorded real API traffic (issue 11; Azure, Vertex, Bedrock, Cohere and
Mistral since issue 34).

Every recording in ``../shared/reference/recordings/`` (relative to the repository root) is replayed
against a mockllm scenario scripted to give the recorded answer (its text, thinking, tool calls,
finish reason and usage, read from the recording itself), and the two raw answers are compared
structurally by :mod:`wire_diff`. Differences the recordings themselves say mean nothing
(``not_counted``) are dropped; every other difference must be on :data:`ALLOWED` below, with its
reason, and there may be at most :data:`BUDGET` of them in total.

``python tests/test_fidelity_recordings.py`` prints every difference, recording by recording."""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from mockllm.runtime.recording.answer import error_message
from mockllm.runtime.recording.readers import READERS, provider_for

sys.path.insert(0, str(Path(__file__).parent))

from wire_diff import compare, shape_of

RECORDINGS = Path(__file__).resolve().parents[1] / ".." / "shared" / "reference" / "recordings"
BUDGET = 25

# Deliberate differences: (recording glob, regular expression on the difference line, why). An entry
# must never cover something an official SDK hands to application code, and every entry must still
# match a difference (test_allow_list_entries_are_used). One today: every other structural difference
# the comparison finds has been fixed. Values are not compared, so the deliberate differences of
# value (token counts estimated at four characters a token, opaque signatures and encrypted
# reasoning that only look like the real ones, `openai-processing-ms` being the scripted latency)
# are listed in docs/providers/*.md, section "Fidelity", instead.
ALLOWED: list[tuple[str, str, str]] = [
    (
        "co_text",
        r"^zero usage\.cached_tokens ",
        "mockllm caches no prompt: Cohere's usage.cached_tokens is always 0 (docs/providers/cohere.md)",
    ),
]


def _recordings() -> list[Path]:
    if not RECORDINGS.is_dir():
        return []
    return sorted(RECORDINGS.glob("*.json"))


# ------------------------------------------------------------------------------------------------
# What the recording answered, as a mockllm reply


#: the five providers held against recordings since issue 34: their answers are read back by
#: mockllm's own recording readers (``mockllm convert``), which the older five predate
READ_BY_READER = frozenset({"azure", "vertex", "bedrock", "cohere", "mistral"})


def _provider(rec: dict[str, Any]) -> str:
    request = rec["request"]
    if _is_embedding(rec):
        return str(rec["provider"])
    provider = provider_for(request["method"], request["path"].split("?", 1)[0], _claim(rec))
    assert provider is not None, f"{rec['case']}: not a chat route: {request['path']}"
    return provider


def _is_embedding(rec: dict[str, Any]) -> bool:
    """An embedding recording (``api`` ends in ``-embed``): answered by the default embedder."""
    return str(rec.get("api", "")).endswith("-embed")


def _claim(rec: dict[str, Any]) -> dict[str, str]:
    """The headers that claim a shared path for the recording's provider (Mistral's SDK's user agent)."""
    return {"user-agent": "mistral-client-python/1.9.0"} if rec.get("provider") == "mistral" else {}


def _payloads(rec: dict[str, Any]) -> list[Any]:
    body = rec["response"]["body"]
    if not rec["stream"]:
        return [json.loads(body)]
    out = []
    for line in re.split(r"\r\n|\r|\n", body):
        line = line.strip()
        if line.startswith("data:"):
            line = line[5:].strip()
        elif line.startswith("event:") or not line:
            continue
        if line != "[DONE]":
            out.append(json.loads(line))
    return out


class _Answer:
    def __init__(self) -> None:
        self.text = ""
        self.thinking = ""
        self.calls: list[tuple[str, Any]] = []
        self.usage: tuple[int, int] | None = None
        self.finish: str | None = None
        self.error: tuple[int, str] | None = None
        self.stream_error: tuple[str, int] | None = None  # an in-band error and the events before it


def _openai(payloads: list[Any], answer: _Answer) -> None:
    calls: dict[int, list[str]] = {}
    for p in payloads:
        for choice in p.get("choices", []):
            part = choice.get("message") or choice.get("delta") or {}
            answer.text += part.get("content") or ""
            for i, call in enumerate(part.get("tool_calls") or []):
                entry = calls.setdefault(call.get("index", i), ["", ""])
                fn = call.get("function", {})
                entry[0] += fn.get("name") or ""
                entry[1] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                answer.finish = choice["finish_reason"]
        if p.get("usage"):
            answer.usage = (p["usage"]["prompt_tokens"], p["usage"]["completion_tokens"])
    answer.calls = [(name, json.loads(args)) for name, args in (calls[i] for i in sorted(calls))]


def _responses(payloads: list[Any], answer: _Answer) -> None:
    final = next(p["response"] for p in payloads if p.get("type") == "response.completed")
    for item in final["output"]:
        if item["type"] == "reasoning":
            answer.thinking = "Thinking about it."  # the real text is encrypted; any thinking will do
        elif item["type"] == "message":
            answer.text += "".join(part.get("text", "") for part in item["content"])
        elif item["type"] == "function_call":
            answer.calls.append((item["name"], json.loads(item["arguments"])))
    usage = final["usage"]
    answer.usage = (usage["input_tokens"], usage["output_tokens"])


def _anthropic(payloads: list[Any], answer: _Answer, status: int) -> None:
    blocks: list[dict[str, Any]] = []
    for p in payloads:
        kind = p.get("type")
        if kind == "error":
            answer.error = (status, p["error"]["message"])
        elif kind == "message":
            blocks = p["content"]
            answer.usage = (p["usage"]["input_tokens"], p["usage"]["output_tokens"])
        elif kind == "message_start":
            answer.usage = (p["message"]["usage"]["input_tokens"], 0)
        elif kind == "content_block_start":
            blocks.append({**p["content_block"], "_json": ""})
        elif kind == "content_block_delta":
            block, delta = blocks[p["index"]], p["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "input_json_delta":
                block["_json"] += delta["partial_json"]
        elif kind == "message_delta" and answer.usage is not None:
            answer.usage = (answer.usage[0], p["usage"]["output_tokens"])
    for block in blocks:
        if block["type"] == "text":
            answer.text += block["text"]
        elif block["type"] == "thinking":
            answer.thinking += block["thinking"]
        elif block["type"] == "tool_use":
            args = json.loads(block["_json"]) if block.get("_json") else block["input"]
            answer.calls.append((block["name"], args))


def _gemini(payloads: list[Any], answer: _Answer) -> None:
    for p in payloads:
        for cand in p.get("candidates", []):
            for part in cand.get("content", {}).get("parts", []):
                if "functionCall" in part:
                    answer.calls.append((part["functionCall"]["name"], part["functionCall"].get("args", {})))
                elif part.get("thought"):
                    answer.thinking += part.get("text", "")
                else:
                    answer.text += part.get("text", "")
        usage = p.get("usageMetadata")
        if usage:
            answer.usage = (usage.get("promptTokenCount", 0), usage.get("candidatesTokenCount", 0))


def _ollama(payloads: list[Any], answer: _Answer) -> None:
    for p in payloads:
        message = p.get("message", {})
        answer.text += message.get("content", "")
        for call in message.get("tool_calls") or []:
            answer.calls.append((call["function"]["name"], call["function"]["arguments"]))
        if p.get("done"):
            answer.usage = (p.get("prompt_eval_count", 1), p.get("eval_count", 1))


def _read_back(rec: dict[str, Any], answer: _Answer) -> None:
    """A newer provider's answer through mockllm's recording reader of that provider."""
    response = rec["response"]
    if response["status"] >= 400:
        body = response["body"].encode()
        answer.error = (response["status"], error_message(body) or "error")
        return
    reader = READERS[_provider(rec)]
    got = reader.read(_raw(rec), rec["stream"])
    answer.text, answer.thinking = got.text, got.thinking
    answer.calls = [
        (c.name, json.loads(c.arguments) if isinstance(c.arguments, str) else c.arguments) for c in got.calls
    ]
    answer.usage = got.usage
    if got.error is not None:
        answer.stream_error = (got.error, got.events)
        if not answer.calls and '"tool-plan-delta"' in response["body"]:
            # a tool plan cut by the error before its call: script a call, so the text is a plan too
            answer.calls = [("planned_tool", {})]


def _raw(rec: dict[str, Any]) -> bytes:
    response = rec["response"]
    if "body_b64" in response:
        return base64.b64decode(response["body_b64"])
    return str(response["body"]).encode()


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def scenario_for(rec: dict[str, Any]) -> str:
    """A script answering the recorded request with the recorded content."""
    if _is_embedding(rec):
        return ""  # the default embedder answers
    provider = _provider(rec)
    answer = _Answer()
    if provider in READ_BY_READER:
        _read_back(rec, answer)
        return _script(rec, answer)
    payloads = _payloads(rec)
    if provider == "openai":
        _openai(payloads, answer)
    elif provider == "responses":
        _responses(payloads, answer)
    elif provider == "anthropic":
        _anthropic(payloads, answer, rec["response"]["status"])
    elif provider == "gemini":
        _gemini(payloads, answer)
    else:
        _ollama(payloads, answer)
    return _script(rec, answer)


def _script(rec: dict[str, Any], answer: _Answer) -> str:
    lines: list[str] = []
    if answer.error is not None:
        lines.append(f"error {answer.error[0]} {_q(answer.error[1])}")
    else:
        if answer.thinking:
            lines.append(f"thinking {_q(answer.thinking)}")
        if answer.text:
            lines.append(f"text {_q(answer.text)}")
        for name, args in answer.calls:
            lines.append(f"tool call {name} {json.dumps(args)}")
        if answer.usage is not None:
            lines.append(f"usage {max(answer.usage[0], 1)} in, {max(answer.usage[1], 1)} out")
        if answer.stream_error is not None:
            # as many pieces as were recorded, so the error comes where it came
            lines.append(f"stream {answer.stream_error[1]} chunks")
            lines.append(f"stream error {_q(answer.stream_error[0])} after {answer.stream_error[1]} chunks")
    body = "\n".join(" " * 12 + line for line in lines)
    return f'scenario "{rec["case"]}":\n    step answer:\n        reply:\n{body}\n'


# ------------------------------------------------------------------------------------------------
# Replaying and comparing


def _auth(provider: str) -> dict[str, str]:
    if provider == "anthropic":
        return {"x-api-key": "test", "anthropic-version": "2023-06-01"}
    if provider == "gemini":
        return {"x-goog-api-key": "test"}
    if provider == "azure":
        return {"api-key": "test"}
    if provider == "bedrock":
        return {"authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/bedrock/aws4_request"}
    return {"authorization": "Bearer test"}


class Replay:
    """One recording replayed: the recording, its shape and the mock's."""

    def __init__(self, name: str, rec: dict[str, Any], url: str) -> None:
        self.name = name
        self.rec = rec
        self.provider = _provider(rec)
        request = rec["request"]
        path = request["path"] + (f"?{request['query']}" if request.get("query") else "")
        headers = {**_auth(self.provider), **_claim(rec)}
        with httpx.Client(base_url=url, timeout=30) as client:
            got = client.request(request["method"], path, json=request["body"], headers=headers)
        self.got = got
        recorded = rec["response"]
        body: str | bytes = _raw(rec) if "body_b64" in recorded else recorded["body"]
        self.recorded = shape_of(self.provider, recorded["status"], recorded["headers"], body, rec["stream"])
        self.mock = shape_of(self.provider, got.status_code, dict(got.headers), got.content)
        self.when = _timestamp(_payloads(rec)) if "body" in recorded else None

    def differences(self) -> list[str]:
        """Every structural difference, minus the recording's own ``not_counted`` rules."""
        diffs = compare(self.provider, self.recorded, self.mock, self.rec.get("recorder_stripped_headers", []))
        rules = [re.compile(r["match"]) for r in self.rec.get("not_counted", [])]
        return [d for d in diffs if not any(r.search(d) for r in rules)]


def _timestamp(payloads: list[Any]) -> int | None:
    """When an OpenAI answer was recorded (its ``created``/``created_at``), else None."""
    for p in payloads:
        for holder in (p, p.get("response") if isinstance(p, dict) else None):
            if isinstance(holder, dict):
                for key in ("created", "created_at"):
                    if isinstance(holder.get(key), int):
                        return int(holder[key])
    return None


_STRUCTURE = re.compile(r"^(key|id) (\S+) (\S+) (\S+) @(\S+)$")


def superseded(replay: Replay, diff: str, replays: list[Replay]) -> str | None:
    """Rule (a) of the recordings README, applied mechanically: the name of a newer recording of the
    same API whose answer has, at this place, exactly the structure the mock sent (so the difference
    records an API change since this older recording, not a mock bug). None otherwise."""
    m = _STRUCTURE.match(diff)
    if m is None or replay.when is None:
        return None
    kind, path, _, mock_types, event = m.groups()
    for newer in replays:
        if newer.provider != replay.provider or newer.when is None or newer.when <= replay.when:
            continue
        table = newer.recorded.keys if kind == "key" else newer.recorded.ids
        seen = table.get((event, path))
        if seen is None:
            continue
        sent = set(mock_types.strip("{}").split(","))
        # types must agree exactly; id shapes of one kind (`fc_`) among several (`fc_`, `msg_`) suffice
        if sent == seen or (kind == "id" and sent <= seen):
            return newer.name
    return None


def counted(replays: list[Replay]) -> dict[str, list[str]]:
    """Per recording, the differences that count (not ``not_counted``, not superseded)."""
    return {r.name: [d for d in r.differences() if superseded(r, d, replays) is None] for r in replays}


def _allowed(case: str, diff: str) -> str | None:
    for pattern, match, why in ALLOWED:
        if Path(case).match(pattern) and re.search(match, diff):
            return why
    return None


def _replays() -> list[Replay]:
    from conftest import compile_text

    from mockllm.server.background import BackgroundServer

    out = []
    for path in _recordings():
        rec = json.loads(path.read_text())
        with BackgroundServer(compile_text(scenario_for(rec))) as server:
            out.append(Replay(path.stem, rec, server.url))
    return out


@pytest.fixture(scope="module")
def replays() -> list[Replay]:
    if not _recordings():
        pytest.skip(f"no recordings at {RECORDINGS} (the shared reference folder sits beside the clone)")
    return _replays()


@pytest.fixture(scope="module")
def all_differences(replays: list[Replay]) -> dict[str, list[str]]:
    return counted(replays)


def test_every_recording_replays(all_differences: dict[str, list[str]]) -> None:
    """All 41 recordings were found, scripted and replayed (a broken extractor would fail here)."""
    assert len(all_differences) == len(_recordings()) >= 41


def test_differences_are_allow_listed_and_few(all_differences: dict[str, list[str]]) -> None:
    unexplained = [f"{case}: {d}" for case, diffs in all_differences.items() for d in diffs if not _allowed(case, d)]
    total = sum(len(diffs) for diffs in all_differences.values())
    report = "\n".join(unexplained)
    assert not unexplained, f"{len(unexplained)} of {total} differences are not on the allow-list:\n{report}"
    assert total <= BUDGET, f"{total} differences against the recordings (budget {BUDGET})"


def test_allow_list_entries_are_used(all_differences: dict[str, list[str]]) -> None:
    """A stale allow-list entry hides nothing and should go."""
    lines = [(case, d) for case, diffs in all_differences.items() for d in diffs]
    unused = [
        (pattern, match)
        for pattern, match, _ in ALLOWED
        if not any(Path(case).match(pattern) and re.search(match, d) for case, d in lines)
    ]
    assert not unused, f"allow-list entries matching nothing: {unused}"


def test_scenario_for_reproduces_the_recorded_answer() -> None:
    """The extractor itself: a recorded Anthropic tool stream becomes its tool call and usage."""
    if not _recordings():
        pytest.skip(f"no recordings at {RECORDINGS}")
    rec = json.loads((RECORDINGS / "an_stream_tool.json").read_text())
    script = scenario_for(rec)
    assert 'tool call get_weather {"location": "San Francisco, CA", "units": "f"}' in script
    assert "usage 656 in, 74 out" in script


def test_superseded_needs_a_newer_recording_agreeing_with_the_mock(replays: list[Replay]) -> None:
    """Rule (a) only drops a difference when a newer recording of the same API shows the mock's shape."""
    old = next(r for r in replays if r.name == "oa_resp_stream_fc_4o")
    assert superseded(old, "key response.background None {boolean} @response.created", replays) == "oa_resp_stream_fc"
    assert superseded(old, "key response.background None {string} @response.created", replays) is None
    newest = max((r for r in replays if r.provider == "responses"), key=lambda r: r.when or 0)
    assert superseded(newest, "key response.background None {boolean} @response.created", replays) is None


if __name__ == "__main__":
    everything = _replays()
    grand = dropped = 0
    for replay in everything:
        diffs = replay.differences()
        print(f"== {replay.name}")
        for d in diffs:
            newer = superseded(replay, d, everything)
            if newer is not None:
                dropped += 1
                print(f"   {d}   [not counted (a): {newer} agrees with the mock]")
                continue
            grand += 1
            why = _allowed(replay.name, d)
            print(f"   {d}" + (f"   [allowed: {why}]" if why else "   [NOT ALLOWED]"))
    print(f"total {grand} counted, {dropped} superseded by newer recordings")
