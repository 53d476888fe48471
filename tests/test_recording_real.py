"""Real API recordings (../shared/reference/recordings, JSON pair form) import into scripts that check
clean, and serving them answers each recorded request with what the real API answered: the same text,
tool calls (names, arguments), finish reason and usage, read by the same readers. Skipped when
../shared is absent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from test_recording import check_clean, replay

from mockllm.recording import import_files
from mockllm.runtime.recording.answer import Answer
from mockllm.runtime.recording.cassettes import load_cassette
from mockllm.runtime.recording.exchange import Exchange
from mockllm.runtime.recording.translate import read_exchange

RECORDINGS = Path(__file__).resolve().parents[1] / ".." / "shared" / "reference" / "recordings"
FILES = sorted(RECORDINGS.glob("*.json")) if RECORDINGS.is_dir() else []
AUTH = {"authorization": "Bearer k", "x-api-key": "k", "x-goog-api-key": "k", "anthropic-version": "2023-06-01"}

pytestmark = pytest.mark.skipif(not FILES, reason="../shared/reference/recordings is absent")


def seen(answer: Answer | None) -> tuple[Any, ...]:
    assert answer is not None
    return (answer.text, answer.refusal, [(c.name, c.arguments) for c in answer.calls], answer.finish, answer.usage)


def test_every_recording_imports_into_clean_scripts(tmp_path: Path) -> None:
    written, used, skipped = import_files([str(RECORDINGS)], tmp_path)
    assert used == len(FILES) and skipped == 0
    assert len(check_clean(tmp_path)) == len(written)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_serving_the_script_answers_the_recorded_request_the_same(tmp_path: Path, path: Path) -> None:
    [exchange] = load_cassette(str(path), path.read_bytes())
    original = read_exchange(exchange)
    assert original is not None
    import_files([str(path)], tmp_path)
    with replay(tmp_path) as server:
        body = json.loads(exchange.request_body)
        query = "?" + urlencode(exchange.query) if exchange.query else ""
        claim = {k: v for k, v in exchange.headers.items() if k == "x-mockllm-provider"}  # Mistral's shared path
        r = httpx.post(server.url + exchange.path + query, headers={**AUTH, **claim}, json=body, timeout=30)
    assert r.status_code == exchange.status, r.text
    replayed = Exchange.of(
        "POST",
        exchange.path + query,
        {**AUTH, **claim}.items(),
        exchange.request_body,
        r.status_code,
        r.headers.items(),
        r.content,
    )
    again = read_exchange(replayed)
    assert again is not None
    if original.answer is None:
        assert again.answer is None
        return
    expected = seen(original.answer)
    if original.answer.finish is None:  # the Ollama docs' stream example is cut before its `done` line
        expected = (*expected[:3], again.answer.finish, *expected[4:])
    assert seen(again.answer) == expected
    assert again.answer.thinking == original.answer.thinking
