"""`mockllm import`: cassettes of real SDK traffic (VCR YAML with gzip and base64 bodies, HAR 1.2,
JSON pairs) become scripts that check clean and replay the same answers; credentials never reach a
file; bad input is one clear line and exit 1."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from recording_clients import CLIENTS, KEY, UPSTREAM
from test_recording import check_clean, replay

from mockllm.cli import main
from mockllm.runtime.recording.exchange import Exchange
from mockllm.server.hypercorn_server import serve_hypercorn
from mockllm.server.recorder import Recorder
from mockllm.server.runner import bind_socket, url_for


class Capture(Recorder):
    """The recording proxy, keeping the raw exchanges instead of writing scripts."""

    def __init__(self, upstream: str) -> None:
        super().__init__(Path("."), {p: upstream for p in CLIENTS}, keep_timing=False, timeout_s=30)
        self.exchanges: list[Exchange] = []

    async def _keep(self, exchange: Exchange) -> None:
        self.exchanges.append(exchange)


@contextmanager
def capturing(upstream: str) -> Iterator[tuple[str, Capture]]:
    app = Capture(upstream)
    sock = bind_socket("127.0.0.1", 0)
    url = url_for("127.0.0.1", sock)
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    ready = threading.Event()

    async def trigger() -> None:
        ready.set()
        await stop.wait()

    async def main() -> None:
        await serve_hypercorn(app, sock, trigger, grace_s=0.1)
        await app.client.aclose()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield url, app
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
        sock.close()


_CAPTURED: dict[tuple[str, bool], tuple[list[Exchange], Any]] = {}


def captured(serve_text: Any, provider: str, stream: bool) -> tuple[list[Exchange], Any]:
    """The exchanges of one SDK tool loop through the capturing proxy, and what the SDK saw (once per
    provider and mode: the three formats share them)."""
    if (provider, stream) not in _CAPTURED:
        with serve_text(UPSTREAM) as upstream, capturing(upstream) as (url, app):
            seen = CLIENTS[provider](url, stream)
        _CAPTURED[provider, stream] = (app.exchanges, seen)
    return _CAPTURED[provider, stream]


def _credentials(ex: Exchange) -> dict[str, str]:
    """What a real cassette holds and an import must drop."""
    return {**ex.headers, "Authorization": f"Bearer {KEY}", "x-api-key": KEY, "Cookie": f"session={KEY}"}


def vcr(exchanges: list[Exchange]) -> str:
    """A VCR.py cassette: odd responses gzip-compressed as !!binary, even ones as text."""
    interactions = []
    for i, ex in enumerate(exchanges):
        headers = {k: [v] for k, v in ex.response_headers.items()}
        body: Any = ex.body.decode()
        if i % 2:
            body = gzip.compress(ex.body)
            headers["Content-Encoding"] = ["gzip"]
        interactions.append(
            {
                "request": {
                    "method": ex.method,
                    "uri": f"https://api.example.com{ex.path}?key={KEY}",
                    "headers": {k: [v] for k, v in _credentials(ex).items()},
                    "body": ex.request_body.decode(),
                },
                "response": {
                    "status": {"code": ex.status, "message": "OK"},
                    "headers": headers,
                    "body": {"string": body},
                },
            }
        )
    interactions.append(  # not an LLM call: skipped and counted
        {
            "request": {"method": "GET", "uri": "https://example.com/health", "headers": {}, "body": None},
            "response": {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": "ok"}},
        }
    )
    return yaml.safe_dump({"interactions": interactions, "version": 1})


def har(exchanges: list[Exchange]) -> str:
    """A HAR 1.2 log: odd response bodies base64-encoded."""
    entries = []
    for i, ex in enumerate(exchanges):
        content: dict[str, Any] = {"mimeType": ex.response_headers.get("content-type", ""), "text": ex.body.decode()}
        if i % 2:
            content.update(text=base64.b64encode(ex.body).decode(), encoding="base64")
        entries.append(
            {
                "request": {
                    "method": ex.method,
                    "url": f"http://localhost:1234{ex.path}?key={KEY}",
                    "headers": [{"name": k, "value": v} for k, v in _credentials(ex).items()],
                    "postData": {"mimeType": "application/json", "text": ex.request_body.decode()},
                },
                "response": {
                    "status": ex.status,
                    "headers": [{"name": k, "value": v} for k, v in ex.response_headers.items()],
                    "content": content,
                },
            }
        )
    return json.dumps({"log": {"version": "1.2", "entries": entries}})


def pairs(exchanges: list[Exchange]) -> str:
    return json.dumps(
        [
            {
                "request": {
                    "method": ex.method,
                    "path": ex.path,
                    "headers": _credentials(ex),
                    "body": json.loads(ex.request_body),
                },
                "response": {"status": ex.status, "headers": dict(ex.response_headers), "body": ex.body.decode()},
            }
            for ex in exchanges
        ]
    )


def run_import(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mockllm", "import", *args], capture_output=True, text=True)


FORMATS = {"vcr": ("cassette.yaml", vcr), "har": ("session.har", har), "pairs": ("pairs.json", pairs)}


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("provider", list(CLIENTS))
def test_import_then_replay_gives_the_client_the_same_answers(
    tmp_path: Path, serve_text: Any, capsys: pytest.CaptureFixture[str], provider: str, stream: bool, fmt: str
) -> None:
    exchanges, seen = captured(serve_text, provider, stream)
    name, write = FORMATS[fmt]
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    (cassettes / name).write_text(write(exchanges), encoding="utf-8")
    out = tmp_path / "scripts"
    assert main(["import", str(cassettes), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote 1 script ({len(exchanges)} exchanges)" in printed
    if fmt == "vcr":
        assert "skipped 1 interaction that is not an LLM chat call" in printed
    files = check_clean(out)
    text = files[0].read_text(encoding="utf-8")
    assert KEY not in text and "session=" not in text
    with replay(out) as server:
        assert CLIENTS[provider](server.url, stream) == seen


def test_not_yaml_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("interactions: [\n  - {request: ", encoding="utf-8")
    r = run_import(str(bad), "--out", str(tmp_path / "out"))
    assert r.returncode == 1
    assert r.stderr.startswith(f"mockllm: {bad}: not a YAML cassette:")
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_a_har_with_no_entries_is_one_clear_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.har"
    empty.write_text(json.dumps({"log": {"version": "1.2", "entries": []}}), encoding="utf-8")
    r = run_import(str(empty), "--out", str(tmp_path / "out"))
    assert (r.returncode, r.stderr.strip()) == (1, f"mockllm: {empty}: a HAR file with no entries (nothing to import)")


def test_a_cassette_without_llm_calls_writes_nothing(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"request": {"method": "GET", "path": "/users"}, "response": {"body": "[]"}}))
    r = run_import(str(other), "--out", str(tmp_path / "out"))
    assert r.returncode == 0
    assert "wrote 0 scripts (0 exchanges)" in r.stdout and "skipped 1 interaction" in r.stdout
