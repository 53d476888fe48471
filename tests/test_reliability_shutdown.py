"""Graceful shutdown: SIGTERM to a `mockllm serve` process with streams open through the SDKs.
The server stops accepting, lets the streams run for ``--shutdown-grace``, then sends the rest of
each stream at once and ends it the provider's way; it exits 0 and prints no traceback."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from reliability import serve_process, servers
from sdk_clients import opened

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM to a subprocess is POSIX")

WORDS = " ".join(f"w{i}" for i in range(20))
SCRIPT = f"""
scenario "slow":
    step answer:
        always
        reply:
            text "{WORDS}"
            stream 20 chunks, 400ms apart
"""


def openai_stream(url: str, started: threading.Event, out: dict[str, Any]) -> None:
    client = opened(openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0))
    stream = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "go"}], stream=True)
    text, finish = [], None
    for chunk in stream:
        started.set()
        for choice in chunk.choices:
            text.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
    out["text"], out["finish"] = "".join(text), finish


def anthropic_stream(url: str, started: threading.Event, out: dict[str, Any]) -> None:
    client = opened(anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0))
    with client.messages.stream(
        model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "go"}]
    ) as stream:
        text = []
        for piece in stream.text_stream:
            started.set()
            text.append(piece)
        final = stream.get_final_message()
    out["text"], out["finish"] = "".join(text), final.stop_reason


def run_streams(
    url: str, clients: list[Callable[[str, threading.Event, dict[str, Any]], None]]
) -> tuple[list[threading.Thread], list[dict[str, Any]], list[threading.Event]]:
    results: list[dict[str, Any]] = [{} for _ in clients]
    started = [threading.Event() for _ in clients]
    threads = []
    for fn, out, event in zip(clients, results, started, strict=True):

        def target(fn: Any = fn, out: dict[str, Any] = out, event: threading.Event = event) -> None:
            try:
                fn(url, event, out)
            except Exception as exc:  # reported by the assertions below
                out["error"] = repr(exc)
                event.set()

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        threads.append(thread)
    return threads, results, started


@pytest.mark.parametrize("server", servers())
def test_sigterm_ends_open_streams_the_providers_way_after_the_grace_period(tmp_path: Path, server: str) -> None:
    script = tmp_path / "slow.mockllm"
    script.write_text(SCRIPT)
    clients = [openai_stream, anthropic_stream] * 3
    with serve_process(str(script), "--server", server, "--shutdown-grace", "0.5") as (proc, url, _):
        threads, results, started = run_streams(url, clients)
        assert all(event.wait(20) for event in started), results
        proc.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join(20)
        code = proc.wait(20)
        assert proc.stderr is not None
        err = proc.stderr.read()
    # a stream takes 8 s; the grace is 0.5 s: each got the rest of its text at once, and its ending
    for result, fn in zip(results, clients, strict=True):
        assert "error" not in result, result
        assert result["text"] == WORDS, result
        assert result["finish"] == ("stop" if fn is openai_stream else "end_turn")
    assert code == 0, err
    assert "Traceback" not in err


@pytest.mark.parametrize("server", servers())
def test_sigterm_stops_accepting_and_lets_short_streams_finish_in_time(tmp_path: Path, server: str) -> None:
    script = tmp_path / "slow.mockllm"
    script.write_text(SCRIPT.replace("400ms apart", "50ms apart"))
    with serve_process(str(script), "--server", server, "--shutdown-grace", "10") as (proc, url, _):
        threads, results, started = run_streams(url, [openai_stream, anthropic_stream])
        assert all(event.wait(20) for event in started), results
        proc.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join(20)
        # the streams (1 s) ended on their own well before the grace period: the process exits then
        code = proc.wait(8)
        assert proc.stderr is not None
        err = proc.stderr.read()
    assert [r.get("text") for r in results] == [WORDS, WORDS], results
    assert code == 0, err
    assert "Traceback" not in err


def test_the_python_api_takes_a_grace_period_and_stop_ends_streams_properly() -> None:
    import mockllm

    script = SCRIPT.replace("400ms apart", "1s apart")  # 20 s if nothing cut it short
    server = mockllm.serve(script, shutdown_grace_s=0.2).start()
    threads, results, started = run_streams(server.url, [openai_stream, anthropic_stream])
    assert all(event.wait(20) for event in started), results
    server.stop()
    for thread in threads:
        thread.join(20)
    assert [r.get("text") for r in results] == [WORDS, WORDS], results
    assert [r.get("finish") for r in results] == ["stop", "end_turn"]
