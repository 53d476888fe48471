"""Speech, transcription and images calls through `mockllm record` become steps: a transcription's
`text` line holds the transcript the upstream gave (whatever format the client asked for), so replayed
the same upload gets the same transcript; speech and images calls become `echo` steps (the recorded
audio and pictures are not kept: served, mockllm makes its own)."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import openai
from recording_clients import KEY
from test_recording import check_clean, recorder, replay

UPSTREAM = """
scenario "Voice":
    step hear:
        always
        when:
            endpoint is "transcription"
        reply:
            text "Please call me back after five. Thanks."
"""


def _tone() -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(bytes(range(256)) * 125)
    return out.getvalue()


def _transcribe(url: str, fmt: str) -> object:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as c:
        return c.audio.transcriptions.create(model="whisper-1", file=("note.wav", _tone()), response_format=fmt)  # type: ignore[call-overload]


def test_a_recorded_transcript_is_replayed(tmp_path: Path, serve_text) -> None:  # type: ignore[no-untyped-def]
    """Recorded as srt and replayed: the same cues, from a `text` line holding the transcript."""
    with serve_text(UPSTREAM) as upstream, recorder(upstream, tmp_path) as (url, _):
        recorded = _transcribe(url, "srt")
    assert "Please call me back after five." in str(recorded)
    (script,) = check_clean(tmp_path)
    text = script.read_text(encoding="utf-8")
    assert 'endpoint is "transcription"' in text and 'text "Please call me back after five. Thanks."' in text
    with replay(tmp_path) as server:
        assert _transcribe(server.url, "srt") == recorded
