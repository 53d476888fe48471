"""`mockllm serve --watch`: an edit to a served file is picked up, a broken edit keeps the old
library serving and prints the diagnostics, a new file in a served directory is loaded, and an
imported file is watched too. Real subprocess, real files, the openai SDK."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path

import httpx
import openai
from reliability import serve_process
from sdk_clients import opened

SCRIPT = """scenario "greeting":
    step hello:
        always
        reply:
            text "{text}"
"""


def lines_of(stream: object) -> queue.Queue[str]:
    """The lines a subprocess writes on ``stream``, as they come."""
    found: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:  # type: ignore[attr-defined]
            found.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return found


def wait_for(lines: queue.Queue[str], needle: str, timeout: float = 20.0) -> list[str]:
    """Every line up to and including the first that holds ``needle``."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"no line with {needle!r} within {timeout}s; saw {seen}")


def ask(url: str) -> str:
    client = opened(openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0))
    reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    return reply.choices[0].message.content or ""


def rewrite(path: Path, text: str) -> None:
    """Write ``text`` with a later modification time than the file had (coarse clocks)."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    while path.stat().st_mtime_ns <= before:
        time.sleep(0.01)
        path.write_text(text)


def test_watch_reloads_edits_and_keeps_the_old_library_when_an_edit_is_broken(tmp_path: Path) -> None:
    script = tmp_path / "greeting.mockllm"
    script.write_text(SCRIPT.format(text="one"))
    with serve_process(str(script), "--watch", "--watch-interval", "0.1", "--no-auth") as (proc, url, _):
        err = lines_of(proc.stderr)
        assert ask(url) == "one"

        rewrite(script, SCRIPT.format(text="two"))
        wait_for(err, "mockllm: reloaded 1 scenario")
        assert ask(url) == "two"

        rewrite(script, SCRIPT.format(text="three").replace("text ", "txt "))
        report = "".join(wait_for(err, "still serving the previous one"))
        assert "greeting.mockllm:5:" in report and "txt" in report  # file:line and the source line
        assert ask(url) == "two"

        rewrite(script, SCRIPT.format(text="four"))
        wait_for(err, "mockllm: reloaded 1 scenario")
        assert ask(url) == "four"


def test_watch_sees_new_files_in_a_directory_and_edits_to_imported_files(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (tmp_path / "shared.mockllm").write_text('reply greeting:\n    text "shared one"\n')
    a = 'use "../shared.mockllm" as shared\n\nscenario "a":\n    step a:\n        always\n'
    (lib / "a.mockllm").write_text(a + "        reply like shared.greeting\n")
    with serve_process(str(lib), "--watch", "--watch-interval", "0.1", "--no-auth") as (proc, url, _):
        err = lines_of(proc.stderr)
        assert ask(url) == "shared one"

        rewrite(tmp_path / "shared.mockllm", 'reply greeting:\n    text "shared two"\n')
        wait_for(err, "mockllm: reloaded 1 scenario")
        assert ask(url) == "shared two"

        b = 'scenario "b":\n    priority 10\n    step b:\n        always\n        reply:\n            text "b"\n'
        rewrite(lib / "b.mockllm", b)
        wait_for(err, "mockllm: reloaded 2 scenarios")
        assert ask(url) == "b"


def test_with_the_state_in_redis_an_edit_reloads_every_server_under_the_posted_scenarios(
    tmp_path: Path, redis_url: str
) -> None:
    script = tmp_path / "greeting.mockllm"
    script.write_text(SCRIPT.format(text="first"))
    posted = 'scenario "posted":\n    step hey:\n        reply:\n            text "posted"\n'
    args = (str(script), "--watch", "--watch-interval", "0.1", "--no-auth", "--state", redis_url)
    with serve_process(*args) as (one, first, _), serve_process(*args) as (other, second, _):
        errors = [lines_of(one.stderr), lines_of(other.stderr)]
        assert httpx.post(first + "/_mockllm/scenarios", content=posted).json()["loaded"] == ["posted"]
        rewrite(script, SCRIPT.format(text="edited"))
        for err in errors:
            wait_for(err, "mockllm: reloaded 1 scenario")
        for url in (first, second):
            assert ask(url) == "edited"
            assert [s["name"] for s in httpx.get(url + "/_mockllm/scenarios").json()] == ["greeting", "posted"]
