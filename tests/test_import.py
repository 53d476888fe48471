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
from urllib.parse import urlencode

import pytest
import yaml
from recording_clients import CLIENTS, KEY, UPSTREAM
from test_recording import check_clean, replay
from test_recording_embeddings import CLIENTS as EMBEDDERS
from test_recording_embeddings import DOCS, QUERY
from test_recording_embeddings import UPSTREAM as VECTORS

from mockllm.cli import main
from mockllm.runtime.recording.exchange import Exchange
from mockllm.server.hosts.hypercorn_server import serve_hypercorn
from mockllm.server.hosts.table import Stopping
from mockllm.server.record.recorder import Recorder
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
        await serve_hypercorn(app, sock, Stopping(trigger, grace_s=0.1))
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


def _with_key(ex: Exchange) -> str:
    """The path and query as recorded (Azure's `api-version` included), with a `key=` parameter to drop."""
    return f"{ex.path}?{urlencode({**ex.query, 'key': KEY})}"


def _text_or_bytes(body: bytes) -> str | bytes:
    """A body as VCR.py keeps it: text when it is UTF-8, else the bytes (YAML ``!!binary``, base64)."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body


def vcr(exchanges: list[Exchange]) -> str:
    """A VCR.py cassette: odd responses gzip-compressed, bodies that are not UTF-8 text (AWS event
    streams) and compressed ones as ``!!binary``, as VCR.py writes them; even ones as text."""
    interactions = []
    for i, ex in enumerate(exchanges):
        headers = {k: [v] for k, v in ex.response_headers.items()}
        body = _text_or_bytes(ex.body)
        if i % 2:
            body = gzip.compress(ex.body)
            headers["Content-Encoding"] = ["gzip"]
        interactions.append(
            {
                "request": {
                    "method": ex.method,
                    "uri": f"https://api.example.com{_with_key(ex)}",
                    "headers": {k: [v] for k, v in _credentials(ex).items()},
                    "body": _text_or_bytes(ex.request_body),
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


def _har_content(body: bytes, mime: str, base64_anyway: bool) -> dict[str, Any]:
    """A HAR body: its text, or base64 with ``encoding: "base64"`` when it is not UTF-8 text (as
    browsers and proxies export binary bodies)."""
    text = _text_or_bytes(body)
    if isinstance(text, str) and not base64_anyway:
        return {"mimeType": mime, "text": text}
    return {"mimeType": mime, "text": base64.b64encode(body).decode(), "encoding": "base64"}


def har(exchanges: list[Exchange]) -> str:
    """A HAR 1.2 log: odd response bodies and every binary one base64-encoded."""
    entries = []
    for i, ex in enumerate(exchanges):
        content = _har_content(ex.body, ex.response_headers.get("content-type", ""), base64_anyway=bool(i % 2))
        entries.append(
            {
                "request": {
                    "method": ex.method,
                    "url": f"http://localhost:1234{_with_key(ex)}",
                    "headers": [{"name": k, "value": v} for k, v in _credentials(ex).items()],
                    "postData": _har_content(ex.request_body, "application/json", base64_anyway=False),
                },
                "response": {
                    "status": ex.status,
                    "headers": [{"name": k, "value": v} for k, v in ex.response_headers.items()],
                    "content": content,
                },
            }
        )
    return json.dumps({"log": {"version": "1.2", "entries": entries}})


def _pair_response(ex: Exchange) -> dict[str, Any]:
    """The pair form's response: its body as text, or base64 with ``"encoding": "base64"`` when binary."""
    out: dict[str, Any] = {"status": ex.status, "headers": dict(ex.response_headers)}
    body = _text_or_bytes(ex.body)
    if isinstance(body, bytes):
        return {**out, "body": base64.b64encode(body).decode(), "encoding": "base64"}
    return {**out, "body": body}


def pairs(exchanges: list[Exchange]) -> str:
    return json.dumps(
        [
            {
                "request": {
                    "method": ex.method,
                    "path": _with_key(ex),
                    "headers": _credentials(ex),
                    "body": json.loads(ex.request_body),
                },
                "response": _pair_response(ex),
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
    cassette = write(exchanges)
    (cassettes / name).write_text(cassette, encoding="utf-8")
    if fmt != "pairs":  # compressed and binary bodies travel as VCR.py and HAR exporters write them
        assert ("!!binary" if fmt == "vcr" else '"encoding": "base64"') in cassette
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


_EMBEDDED: list[tuple[list[Exchange], dict[str, Any]]] = []


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_imported_embedding_calls_replay_the_same_vectors(
    tmp_path: Path, serve_text: Any, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """Every provider's embedding calls, in one cassette: imported, served, the same SDK calls get the
    same vectors and token counts."""
    if not _EMBEDDED:
        with serve_text(VECTORS) as upstream, capturing(upstream) as (url, app):
            seen = {name: (embed(url, DOCS), embed(url, [QUERY])) for name, embed in EMBEDDERS.items()}
        _EMBEDDED.append((app.exchanges, seen))
    [(exchanges, seen)] = _EMBEDDED
    name, write = FORMATS[fmt]
    (tmp_path / name).write_text(write(exchanges), encoding="utf-8")
    assert main(["import", str(tmp_path / name), "--out", str(tmp_path / "out")]) == 0
    assert f"({len(exchanges)} exchanges)" in capsys.readouterr().out
    files = check_clean(tmp_path / "out")
    assert all(KEY not in f.read_text(encoding="utf-8") for f in files)
    with replay(tmp_path / "out") as server:
        for client, embed in EMBEDDERS.items():
            assert (embed(server.url, [QUERY]), embed(server.url, DOCS)) == seen[client][::-1], client


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


_ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "gpt-4o",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Sunny."}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
}
_QUESTION = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Weather?"}]}


def _block(data: bytes) -> str:
    """Base64 as a YAML block literal, 76 characters a line, the way yaml.dump writes ``!!binary``."""
    text = base64.b64encode(data).decode()
    return "\n".join("        " + text[i : i + 76] for i in range(0, len(text), 76))


@pytest.mark.parametrize(
    "body",
    [
        "\n      string: !!binary |\n{gzip}",  # VCR.py: the compressed bytes as they came
        " {{base64_string: {b64}}}",  # a base64 body under its own key
    ],
    ids=["binary", "base64_string"],
)
def test_a_vcr_cassette_with_base64_bodies_imports(tmp_path: Path, body: str) -> None:
    raw = json.dumps(_ANSWER).encode()
    response_body = body.format(gzip=_block(gzip.compress(raw)), b64=base64.b64encode(raw).decode())
    cassette = f"""interactions:
- request:
    body: !!binary |
{_block(json.dumps(_QUESTION).encode())}
    headers:
      authorization: [Bearer {KEY}]
    method: POST
    uri: https://api.openai.com/v1/chat/completions?key={KEY}
  response:
    body:{response_body}
    headers:
      content-type: [application/json]
    status: {{code: 200, message: OK}}
version: 1
"""
    (tmp_path / "c.yaml").write_text(cassette, encoding="utf-8")
    assert main(["import", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "out")]) == 0
    [script] = check_clean(tmp_path / "out")
    text = script.read_text(encoding="utf-8")
    assert 'last user message is "Weather?"' in text and 'text "Sunny."' in text and "usage 9 in, 2 out" in text
    assert KEY not in text


def test_a_json_pair_with_a_base64_body_imports(tmp_path: Path) -> None:
    pair = {
        "request": {"method": "POST", "path": "/v1/chat/completions", "body": _QUESTION},
        "response": {"body": base64.b64encode(json.dumps(_ANSWER).encode()).decode(), "encoding": "base64"},
    }
    (tmp_path / "p.json").write_text(json.dumps(pair), encoding="utf-8")
    assert main(["import", str(tmp_path / "p.json"), "--out", str(tmp_path / "out")]) == 0
    [script] = check_clean(tmp_path / "out")
    assert 'text "Sunny."' in script.read_text(encoding="utf-8")
