"""`mockllm record`: real SDK traffic through the recording proxy (a second mockllm server plays the
upstream) becomes scripts that check clean, read back canonically, never hold a credential, and
replay the same answers to the same client calls."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
from recording_clients import CLIENTS, KEY, UPSTREAM

from mockllm.dsl.format.formatter import format_file
from mockllm.dsl.machines.compiler import compile_library
from mockllm.dsl.parse.loader import load_paths
from mockllm.dsl.parse.parser import parse_text
from mockllm.server.background import BackgroundServer


@contextmanager
def recorder(upstream: str, out: Path, *extra: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    cmd = [sys.executable, "-m", "mockllm", "record", "--port", "0", "--out", str(out), *extra]
    if upstream:
        cmd += ["--upstream", upstream]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("mockllm recording on http://"), line + (proc.stderr.read() if proc.stderr else "")
        yield line.split(" on ", 1)[1].strip(), proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def check_clean(out: Path) -> list[Path]:
    """The scripts in ``out``: they compile without diagnostics and are already canonical."""
    files = sorted(out.glob("*.mockllm"))
    assert files, "no script written"
    library = load_paths([str(out)])
    compiled, diagnostics = compile_library(library)
    assert compiled is not None and not diagnostics, [d.message for d in diagnostics]
    for f in files:
        text = f.read_text(encoding="utf-8")
        tree, problems = parse_text(text, str(f))
        assert tree is not None and not problems
        assert format_file(tree) == text
    return files


def replay(out: Path) -> BackgroundServer:
    compiled, _ = compile_library(load_paths([str(out)]))
    return BackgroundServer(compiled)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("provider", list(CLIENTS))
def test_record_then_replay_gives_the_client_the_same_answers(
    tmp_path: Path, serve_text, provider: str, stream: bool
) -> None:
    drive = CLIENTS[provider]
    with serve_text(UPSTREAM) as upstream, recorder(upstream, tmp_path) as (url, _):
        recorded = drive(url, stream)
    assert len(recorded) == 2 and recorded[0][1] and recorded[1][0]  # a tool call, then text
    files = check_clean(tmp_path)
    assert len(files) == 1  # one conversation, one file
    text = files[0].read_text(encoding="utf-8")
    assert KEY not in text and "get_weather" in text
    with replay(tmp_path) as server:
        assert drive(server.url, stream) == recorded


def test_sigkill_keeps_every_completed_exchange(tmp_path: Path, serve_text) -> None:
    with serve_text(UPSTREAM) as upstream, recorder(upstream, tmp_path) as (url, proc):
        first = CLIENTS["openai"](url, False)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    files = check_clean(tmp_path)
    text = files[0].read_text(encoding="utf-8")
    assert "step ask_weather_lima:" in text and "step answer:" in text
    with replay(tmp_path) as server:
        assert CLIENTS["openai"](server.url, False) == first


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: nobody listens there


@pytest.mark.parametrize("form", ["{url}", "anthropic={url}"])
def test_an_upstream_that_refuses_is_one_line_and_exit_1(tmp_path: Path, form: str) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    cmd = [sys.executable, "-m", "mockllm", "record", "--port", "0", "--out", str(tmp_path)]
    r = subprocess.run([*cmd, "--upstream", form.format(url=url)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr == f"mockllm: record: cannot reach the upstream {url}: connection refused; is it running?\n"
    assert r.stdout == ""  # it never said it was recording
    assert not tmp_path.exists() or not list(tmp_path.iterdir())


def test_an_unknown_upstream_host_is_one_line_and_exit_1(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "mockllm", "record", "--port", "0", "--out", str(tmp_path)]
    r = subprocess.run([*cmd, "--upstream", "http://no-such-host.invalid:1"], capture_output=True, text=True)
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1
    assert "cannot reach the upstream http://no-such-host.invalid:1: unknown host" in r.stderr


def test_an_upstream_that_goes_away_gives_a_502_in_the_provider_shape(tmp_path: Path, serve_text) -> None:
    with ExitStack() as stack:
        live = ExitStack()
        stack.callback(live.close)
        upstream = live.enter_context(serve_text(""))
        url, proc = stack.enter_context(recorder(upstream, tmp_path))
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
        assert httpx.post(url + "/v1/messages", headers=headers, json=body).status_code == 200
        live.close()  # the upstream stops; the recorder keeps running
        r = httpx.post(url + "/v1/messages", headers=headers, json=body)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert r.status_code == 502
    assert r.json()["type"] == "error" and "cannot reach the upstream" in r.json()["error"]["message"]
    assert f"cannot reach the anthropic upstream {upstream}" in err
    assert "Traceback" not in err
    assert len(check_clean(tmp_path)) == 1  # the exchange that completed, and not the 502


def test_record_without_out_is_a_usage_error() -> None:
    r = subprocess.run([sys.executable, "-m", "mockllm", "record"], capture_output=True, text=True, env=os.environ)
    assert r.returncode == 2 and "--out" in r.stderr


def test_record_help_names_every_provider(capsys: pytest.CaptureFixture[str]) -> None:
    from mockllm.cli import main
    from mockllm.runtime.providers.registry import NAMES

    assert main(["record", "--help"]) == 0
    helped = " ".join(capsys.readouterr().out.split())
    listed = helped.split("providers: ", 1)[1].split(")", 1)[0]
    assert sorted(listed.split(", ")) == sorted(NAMES)
