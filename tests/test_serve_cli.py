"""`mockllm serve` as a real subprocess: the first stdout line, free ports, broken libraries,
MOCKLLM_SCENARIOS, and clean exits on SIGTERM/SIGINT."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from mockllm.server.runner import server_missing

LISTENING = re.compile(r"^mockllm listening on (http://127\.0\.0\.1:(\d+))$")
GOOD = """
scenario "greeting":
    step hello:
        reply:
            text "hello from the file"
"""
BROKEN = """
scenario "broken":
    step a:
        after nowhere
        reply:
            text "x"
"""


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "mockllm", "serve", *args]


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MOCKLLM_SCENARIOS"}
    env.update(extra)
    return env


@contextmanager
def serving(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Start `mockllm serve --port 0 ARGS`, yield (process, base URL) once it printed its first line."""
    proc = subprocess.Popen(
        command("--port", "0", *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or environment(),
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().rstrip("\n")
        found = LISTENING.match(first)
        assert found, (first, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        yield proc, found.group(1)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


def ask(url: str, text: str = "ping") -> httpx.Response:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}
    return httpx.post(url + "/v1/chat/completions", json=body, headers={"authorization": "Bearer t"}, timeout=10)


def stop(proc: subprocess.Popen[str], sig: signal.Signals = signal.SIGTERM) -> int:
    proc.send_signal(sig)
    return proc.wait(timeout=10)


def test_first_line_free_port_library_and_sigterm(tmp_path: Path) -> None:
    script = tmp_path / "greeting.mockllm"
    script.write_text(GOOD)
    with serving(str(script)) as (proc, url):
        assert int(url.rsplit(":", 1)[1]) > 0
        assert proc.stdout is not None
        second = proc.stdout.readline().rstrip("\n")  # the inspector's address, on the second line
        assert second == f"mockllm inspector on {url}/_mockllm/ui"
        page = httpx.get(url + "/_mockllm/ui")
        assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
        health = httpx.get(url + "/_mockllm/health").json()
        answer = ask(url).json()["choices"][0]["message"]["content"]
        code = stop(proc)
    assert health["scenarios"] == 1
    assert answer == "hello from the file"
    assert code == 0


def test_sigint_stops_cleanly_and_no_paths_serves_the_echo_responder() -> None:
    with serving() as (proc, url):
        answer = ask(url, "repeat me").json()["choices"][0]["message"]["content"]
        scenarios = httpx.get(url + "/_mockllm/health").json()["scenarios"]
        code = stop(proc, signal.SIGINT)
    assert answer == "repeat me" and scenarios == 0
    assert code == 0


def test_mockllm_scenarios_environment_variable(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.mockllm").write_text(GOOD)
    other = tmp_path / "two.mockllm"
    other.write_text(GOOD.replace("greeting", "second"))
    env = environment(MOCKLLM_SCENARIOS=os.pathsep.join([str(tmp_path / "a"), str(other)]))
    with serving(env=env) as (proc, url):
        names = sorted(s["name"] for s in httpx.get(url + "/_mockllm/scenarios").json())
        stop(proc)
    assert names == ["greeting", "second"]


def test_a_broken_library_prints_diagnostics_and_exits_1_without_serving(tmp_path: Path) -> None:
    script = tmp_path / "broken.mockllm"
    script.write_text(BROKEN)
    done = subprocess.run(
        command("--port", "0", str(script)), capture_output=True, text=True, timeout=30, env=environment()
    )
    assert done.returncode == 1
    assert "listening" not in done.stdout
    assert "nowhere" in done.stderr and "broken.mockllm:4" in done.stderr and "^" in done.stderr


def test_a_missing_file_is_an_error_too(tmp_path: Path) -> None:
    done = subprocess.run(
        command("--port", "0", str(tmp_path / "nope.mockllm")),
        capture_output=True,
        text=True,
        timeout=30,
        env=environment(),
    )
    assert done.returncode == 1 and "nope.mockllm" in done.stderr


def test_same_named_scenarios_warn_at_start(tmp_path: Path) -> None:
    first = tmp_path / "a.mockllm"
    second = tmp_path / "b.mockllm"
    first.write_text(GOOD)
    second.write_text(GOOD.replace("hello from the file", "the later one"))
    with serving(str(first), str(second)) as (proc, url):
        answer = ask(url).json()["choices"][0]["message"]["content"]
        stop(proc)
        assert proc.stderr is not None
        stderr = proc.stderr.read()
    assert answer == "the later one"
    assert "warning" in stderr and "greeting" in stderr


def test_server_uvicorn_without_the_fast_extra() -> None:
    if server_missing("uvicorn") is None:  # the extra is installed: the fast path must serve
        with serving("--server", "uvicorn") as (proc, url):
            assert ask(url, "fast").status_code == 200
            assert stop(proc) == 0
        return
    done = subprocess.run(
        command("--server", "uvicorn", "--port", "0"), capture_output=True, text=True, timeout=30, env=environment()
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "mockllm: --server uvicorn needs the 'fast' extra: pip install 'mockllm[fast]'"
    assert done.stdout == ""


@pytest.mark.parametrize("flag", ["--no-auth", "--lenient"])
def test_flags_reach_the_server(flag: str) -> None:
    with serving(flag) as (proc, url):
        if flag == "--no-auth":
            r = httpx.post(
                url + "/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "x"}]}
            )
        else:  # a tool result answering no call is accepted when lenient
            messages = [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "call_nope", "content": "r"}]
            r = httpx.post(
                url + "/v1/chat/completions",
                json={"model": "m", "messages": messages},
                headers={"authorization": "Bearer t"},
            )
        stop(proc)
    assert r.status_code == 200, r.text
