"""`mockllm serve --passthrough --record-missing`: what the library answers is answered by its steps;
the rest goes to a real local upstream (a second mockllm server, its own script, on its own port),
comes back byte for byte through the official SDKs, and is written as steps that check clean, hold no
credential, and replay the same answers with the upstream gone."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from recording_clients import CLIENTS, KEY, QUESTION, UPSTREAM
from test_recording import check_clean, replay

from mockllm.api import load
from mockllm.dsl.format.formatter import reformat
from mockllm.runtime.clock import FakeClock
from mockllm.server.background import BackgroundServer
from mockllm.server.http.server_state import server_state
from mockllm.server.options import ServerOptions
from mockllm.server.passthrough.passthrough import PassthroughOptions, options_from

#: The library the passthrough server serves: one greeting; the weather is the upstream's.
LIBRARY = """
scenario "Greeting":
    step hello:
        when:
            last user message is "Say hi"
        reply:
            text "Hi from the script."
"""


def library(text: str) -> Any:
    return load(text).compiled if text.strip() else None


@contextmanager
def upstream(text: str = UPSTREAM, **options: Any) -> Iterator[BackgroundServer]:
    with BackgroundServer(library(text), options=ServerOptions(**options)) as server:
        yield server


@contextmanager
def passthrough(up: str, out: Path | None, text: str = LIBRARY, **options: Any) -> Iterator[BackgroundServer]:
    chosen = options_from([up], str(out) if out is not None else None)
    assert chosen is not None
    with BackgroundServer(library(text), options=ServerOptions(passthrough=chosen, **options)) as server:
        yield server


def journal(url: str) -> list[dict[str, Any]]:
    return list(httpx.get(url + "/_mockllm/requests").json())


def test_matched_requests_get_the_step_and_the_rest_the_upstream(tmp_path: Path) -> None:
    with upstream() as up, passthrough(up.url, tmp_path) as server:
        with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client:
            hi = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Say hi"}])
        forwarded = CLIENTS["openai"](server.url, False)
        entries = journal(server.url)
        verified = httpx.get(server.url + "/_mockllm/verify").json()
    assert hi.choices[0].message.content == "Hi from the script."
    assert forwarded[0][1] == [("get_weather", {"city": "Lima"})]
    assert forwarded[1][0] == "It is sunny in Lima today, with a light breeze from the sea."
    assert [e["passed_through"] for e in entries] == [False, True, True]
    assert entries[0]["matched"]["step"] == "hello" and entries[0]["recorded"] is None
    (written,) = check_clean(tmp_path)
    assert [e["recorded"] for e in entries[1:]] == [str(written)] * 2
    assert f"recorded in {written} (step 2)" in entries[2]["note"]
    assert "It is sunny in Lima today" in entries[2]["reply"]  # what the upstream answered
    assert verified["ok"] and verified["unmatched"] == []


def test_without_record_missing_nothing_is_written(tmp_path: Path) -> None:
    with upstream() as up, passthrough(up.url, None) as server:
        forwarded = CLIENTS["anthropic"](server.url, True)
        entries = journal(server.url)
    assert forwarded[1][0].startswith("It is sunny in Lima")
    assert all(e["passed_through"] and e["recorded"] is None for e in entries)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("provider", list(CLIENTS))
def test_every_provider_is_recorded_and_replays_without_the_upstream(
    tmp_path: Path, provider: str, stream: bool
) -> None:
    drive = CLIENTS[provider]
    with upstream() as up:
        direct = drive(up.url, stream)
    with upstream() as up, passthrough(up.url, tmp_path, "") as server:
        server_state(server.app).passthrough.default_target = f"tests/test_x.py::test_{provider}"  # type: ignore[union-attr]
        forwarded = drive(server.url, stream)
    assert forwarded == direct  # what the upstream says, unchanged
    folder = tmp_path / "tests" / "test_x.py" / f"test_{provider}"
    files = check_clean(folder)
    assert len(files) == 1 and list(tmp_path.rglob("*.mockllm")) == files
    text = files[0].read_text(encoding="utf-8")
    assert KEY not in text and "get_weather" in text
    assert f'scenario "tests/test_x.py/test_{provider}: ' in text
    with replay(folder) as server:
        assert drive(server.url, stream) == forwarded


#: Raw requests whose answers are compared byte for byte: path, body, headers.
RAW: dict[str, tuple[str, dict[str, Any], dict[str, str]]] = {
    "openai": (
        "/v1/chat/completions",
        {"model": "gpt-4o", "messages": [{"role": "user", "content": QUESTION}]},
        {"authorization": f"Bearer {KEY}"},
    ),
    "anthropic": (
        "/v1/messages",
        {"model": "claude-x", "max_tokens": 50, "messages": [{"role": "user", "content": QUESTION}]},
        {"x-api-key": KEY, "anthropic-version": "2023-06-01"},
    ),
    "ollama": ("/api/chat", {"model": "llama3.2", "messages": [{"role": "user", "content": QUESTION}]}, {}),
    "bedrock": (
        "/model/amazon.nova-pro-v1:0/converse-stream",
        {"messages": [{"role": "user", "content": [{"text": QUESTION}]}]},
        {"authorization": "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20240101/us-east-1/bedrock/aws4_request, x"},
    ),
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("provider", list(RAW))
def test_the_answer_comes_back_byte_for_byte(tmp_path: Path, provider: str, stream: bool) -> None:
    path, body, headers = RAW[provider]
    if provider == "bedrock" and not stream:
        path = path.removesuffix("-stream")
    elif provider != "bedrock":
        body = {**body, "stream": stream}
    answers = []
    for through in (False, True):
        with upstream(clock=FakeClock()) as up:  # a fresh upstream answers the same bytes
            if through:
                with passthrough(up.url, tmp_path) as server:
                    answers.append(httpx.post(server.url + path, json=body, headers=headers))
            else:
                answers.append(httpx.post(up.url + path, json=body, headers=headers))
    direct, forwarded = answers
    assert forwarded.status_code == direct.status_code == 200
    assert forwarded.content == direct.content and forwarded.content
    assert forwarded.headers["content-type"] == direct.headers["content-type"]


def test_the_record_to_header_picks_a_folder_or_a_file_inside_dir(tmp_path: Path) -> None:
    out = tmp_path / "recorded"
    with upstream() as up, passthrough(up.url, out) as server:
        for name in ("tests/test_a.py::test_one[x]", "shared.mockllm", "../../escape"):
            headers = {"x-mockllm-record-to": name, "x-mockllm-conversation": name}
            with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, default_headers=headers) as client:
                client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    found = sorted(str(p.relative_to(out)) for p in out.rglob("*.mockllm"))
    assert len(found) == 3 and not list(tmp_path.glob("*.mockllm"))
    assert found[0] == "escape/" + found[0].split("/", 1)[1]
    assert found[1] == "shared.mockllm"
    assert found[2].startswith("tests/test_a.py/test_one[x]/openai_what_is_the_weather")
    assert "x-mockllm-record-to" not in "".join(p.read_text() for p in out.rglob("*.mockllm"))
    check_clean(out / "tests" / "test_a.py" / "test_one[x]")


def test_a_later_run_appends_to_the_file_and_keeps_what_was_there(tmp_path: Path) -> None:
    with upstream() as up:
        with passthrough(up.url, tmp_path, "") as server:  # run 1: the first turn only
            with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY) as client:
                client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
        (first,) = check_clean(tmp_path)
        first.write_text("# kept: a comment of the user's\n" + first.read_text(encoding="utf-8"), encoding="utf-8")
        compiled = load(str(tmp_path)).compiled
        # run 2: the library answers the first turn, the upstream (where the chat went on) the second
        chosen = options_from([up.url], str(tmp_path))
        with BackgroundServer(compiled, options=ServerOptions(passthrough=chosen)) as server:
            answers = CLIENTS["openai"](server.url, False)
            entries = journal(server.url)
    assert [e["passed_through"] for e in entries] == [False, True]
    (grown,) = tmp_path.glob("*.mockllm")
    text = grown.read_text(encoding="utf-8")
    assert grown == first and text.startswith("# kept: a comment of the user's\n")
    assert reformat(text, str(grown)).text == text and load(str(tmp_path)).ok  # canonical, and it checks clean
    assert text.count("    step ") == 2 and "step answer:" in text
    with replay(tmp_path) as server:
        assert CLIENTS["openai"](server.url, False) == answers


def test_upstream_errors_pass_through_and_transient_ones_are_not_recorded(tmp_path: Path) -> None:
    errors = """
scenario "Refused":
    step refused:
        when:
            last user message is "bad"
        reply:
            error 400 "That request is malformed."

scenario "Limited":
    step limited:
        when:
            last user message is "busy"
        reply:
            error 429 "Slow down."
"""
    with upstream(errors) as up, passthrough(up.url, tmp_path) as server:
        with anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0) as client:
            for text, kind, status in (
                ("bad", anthropic.BadRequestError, 400),
                ("busy", anthropic.RateLimitError, 429),
            ):
                with pytest.raises(kind) as caught:
                    client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": text}])
                assert caught.value.status_code == status
    text = "".join(p.read_text() for p in check_clean(tmp_path))
    assert 'error 400 "That request is malformed."' in text and "429" not in text


def _closed_port() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_an_upstream_that_is_down_or_slow_gets_the_provider_error_and_the_server_stays_up(tmp_path: Path) -> None:
    down = PassthroughOptions(dict.fromkeys(("openai", "anthropic"), _closed_port()), str(tmp_path))
    with BackgroundServer(library(LIBRARY), options=ServerOptions(passthrough=down)) as server:
        with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client:
            with pytest.raises(openai.APIStatusError) as caught:
                client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
            assert caught.value.status_code == 502 and "cannot reach the upstream" in caught.value.message
            hi = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Say hi"}])
            assert hi.choices[0].message.content == "Hi from the script."
        with anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0) as client:
            with pytest.raises(anthropic.APIStatusError) as caught_a:
                client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": QUESTION}])
            assert caught_a.value.status_code == 502 and caught_a.value.body["error"]["type"] == "api_error"  # type: ignore[index]
        entries = journal(server.url)
    assert [e["status"] for e in entries] == [502, 200, 502] and entries[0]["passed_through"]
    slow = 'scenario "Slow":\n    step s:\n        reply:\n            latency 30s\n            text "late"\n'
    with upstream(slow, shutdown_grace_s=0.0) as up:
        chosen = PassthroughOptions(dict.fromkeys(("openai",), up.url), str(tmp_path), timeout_s=0.3)
        with BackgroundServer(None, options=ServerOptions(passthrough=chosen)) as server:
            with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client:
                with pytest.raises(openai.APIStatusError) as caught:
                    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
            assert caught.value.status_code == 504 and "no answer within 0.3 s" in caught.value.message
            assert httpx.get(server.url + "/_mockllm/health").status_code == 200
    assert not list(tmp_path.rglob("*.mockllm"))


def _conversation(url: str, i: int, topic: str = "how far is the moon?") -> list[str]:
    """Two turns of conversation ``i`` against the upstream's echo responder (each answer is its own)."""
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as client:
        messages: list[Any] = [{"role": "user", "content": f"Question number {i}: {topic}"}]
        said = []
        for follow_up in (f"And the sun, for conversation {i}?", None):
            answer = client.chat.completions.create(model="gpt-4o", messages=messages).choices[0].message.content
            said.append(answer or "")
            if follow_up is None:
                break
            messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": follow_up}]
        return said


def test_fifty_parallel_conversations_write_fifty_whole_files(tmp_path: Path) -> None:
    with upstream("") as up, passthrough(up.url, tmp_path, "") as server:
        with ThreadPoolExecutor(50) as pool:
            said = list(pool.map(lambda i: _conversation(server.url, i), range(50)))
    files = check_clean(tmp_path)
    assert len(files) == 50
    for i in range(50):
        (mine,) = [f for f in files if f"Question number {i}:" in f.read_text(encoding="utf-8")]
        text = mine.read_text(encoding="utf-8")
        assert text.count("    step ") == 2 and said[i][0] in text and f"conversation {i}?" in text
        assert all(f"Question number {j}:" not in text for j in range(50) if j != i)
    with replay(tmp_path) as server:
        with ThreadPoolExecutor(10) as pool:
            assert list(pool.map(lambda i: _conversation(server.url, i), range(50))) == said


@contextmanager
def serve_command(*args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    cmd = [sys.executable, "-m", "mockllm", "serve", "--port", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("mockllm listening on http://"), line + (proc.stderr.read() if proc.stderr else "")
        yield line.split(" on ", 1)[1].strip(), proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def test_sigkill_mid_run_loses_at_most_the_exchange_in_flight(tmp_path: Path) -> None:
    slow = """
defaults:
    fallback echo

scenario "Slow":
    step slow:
        when:
            last user message contains "slowly"
        reply:
            latency 30s
            text "too late"
"""
    out = tmp_path / "out"
    empty = tmp_path / "library"
    empty.mkdir()
    with (
        upstream(slow) as up,
        serve_command(str(empty), "--passthrough", up.url, "--record-missing", str(out)) as (
            url,
            proc,
        ),
    ):
        said = [_conversation(url, i) for i in range(3)]
        pending = threading.Thread(target=_quiet, args=(_conversation, url, 99, "answer slowly"), daemon=True)
        pending.start()
        while len(journal(up.url)) < 7:  # the upstream has the request in flight
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    files = check_clean(out)
    assert len(files) == 3
    with replay(out) as server:
        assert [_conversation(server.url, i) for i in range(3)] == said


def _quiet(func: Any, *args: Any) -> None:
    try:
        func(*args)
    except Exception:
        pass


def test_serve_says_in_one_line_what_is_wrong_with_the_options(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "mockllm", "serve", "--port", "0"]
    r = subprocess.run([*base, "--passthrough", "nosuch=http://x"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("mockllm: --passthrough nosuch=http://x: unknown provider")
    url = _closed_port()
    r = subprocess.run([*base, "--passthrough", f"openai={url}"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and len(r.stderr.splitlines()) == 1
    assert f"cannot reach the upstream {url}: connection refused" in r.stderr
    assert json.dumps(r.stdout) == '""'


def test_the_shared_state_store_marks_them_too(tmp_path: Path, redis_url: str) -> None:
    with upstream() as up, passthrough(up.url, tmp_path, state=redis_url) as server:
        CLIENTS["openai"](server.url, True)
        entries = journal(server.url)
        verified = httpx.get(server.url + "/_mockllm/verify").json()
    (written,) = check_clean(tmp_path)
    assert [(e["passed_through"], e["recorded"]) for e in entries] == [(True, str(written))] * 2
    assert verified["ok"] and verified["unmatched"] == []


def test_embeddings_no_step_answers_are_the_upstreams_and_replay(tmp_path: Path) -> None:
    texts = ["the cat sat on the mat", "stock prices fell sharply"]
    with upstream("") as up, passthrough(up.url, tmp_path) as server:  # the upstream's default embedder
        with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client:
            forwarded = [
                d.embedding for d in client.embeddings.create(model="text-embedding-3-small", input=texts).data
            ]
        entries = journal(server.url)
    assert entries[0]["passed_through"] and entries[0]["endpoint"] == "/v1/embeddings"
    files = check_clean(tmp_path)
    assert 'endpoint is "embeddings"' in files[0].read_text(encoding="utf-8")
    with replay(tmp_path) as server:
        with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client:
            replayed = [d.embedding for d in client.embeddings.create(model="text-embedding-3-small", input=texts).data]
    assert replayed == forwarded and len(forwarded[0]) == 1536


def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from mockllm.cli import main

    assert main(["serve", "--passthrough-timeout", "0"]) == 2
    assert "--passthrough-timeout: expected a number of seconds above 0, got 0" in capsys.readouterr().err


def test_sigkill_among_parallel_writes_leaves_every_file_whole(tmp_path: Path) -> None:
    """Killed while thirty conversations write at once: every file on disk parses and checks, and each
    holds a prefix of its conversation (its first step, or both); no half of a step anywhere."""
    out = tmp_path / "out"
    empty = tmp_path / "library"
    empty.mkdir()
    with (
        upstream("") as up,
        serve_command(str(empty), "--passthrough", up.url, "--record-missing", str(out)) as (
            url,
            proc,
        ),
    ):
        pool = ThreadPoolExecutor(30)
        for i in range(30):
            pool.submit(_quiet, _conversation, url, i)
        while len(list(out.glob("*.mockllm"))) < 10:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        pool.shutdown(wait=True)
    files = check_clean(out)
    assert len(files) >= 10
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert text.count("    step ") in (1, 2) and "step ask_question_number:" in text
