"""Speech, transcription and images calls through `mockllm record` become steps: a transcription's
`text` line holds the transcript the upstream gave (whatever format the client asked for), so replayed
the same upload gets the same transcript; a speech answer's audio and an images answer's pictures are
saved beside the script and named by its `audio` and `image` lines, so replayed the SDK gets the same
bytes."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
from recording_clients import KEY
from test_import import capturing, har
from test_passthrough import passthrough
from test_recording import check_clean, recorder, replay

from mockllm.dsl.machines.compiler import compile_library
from mockllm.dsl.parse.loader import load_paths
from mockllm.server.background import BackgroundServer

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


def _openai(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)


def _sse_audio(body: bytes) -> bytes:
    """The audio of a `stream_format: "sse"` speech answer, its deltas joined."""
    events = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]
    return b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")


def _voice_and_pictures(url: str) -> dict[str, bytes]:
    """Speech (mp3, and wav as SSE events) and pictures (two as `b64_json`, one as a `url`)."""
    with _openai(url) as c:
        mp3 = c.audio.speech.create(model="tts-1", voice="alloy", input="Your table is ready.").content
        sse = c.audio.speech.create(
            model="gpt-4o-mini-tts", voice="coral", input="Two coffees.", response_format="wav", stream_format="sse"
        ).content
        drawn = c.images.generate(model="gpt-image-1", prompt="a lighthouse at dusk", size="256x256", n=2).data
        linked = c.images.generate(model="dall-e-2", prompt="a red kite", size="256x256").data[0].url
    assert drawn is not None and linked is not None
    pictures = [base64.b64decode(d.b64_json or "") for d in drawn]
    return {
        "mp3": mp3,
        "sse": _sse_audio(sse),
        "first": pictures[0],
        "second": pictures[1],
        "url": httpx.get(linked).content,
    }


#: a one-pixel green PNG: what the upstream draws for "a lighthouse at dusk" (no mockllm drawing)
_PICTURE = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
    "0000000c49444154789c63103860000001e40101883295770000000049454e44ae426082"
)
UPSTREAM_MEDIA = """
scenario "Media":
    order any

    step table:
        always
        when:
            input is "Your table is ready."
        reply:
            text "Right this way, please."
            audio 3s

    step lighthouse:
        always
        when:
            endpoint is "images"
            input contains "lighthouse"
        reply:
            image "green.png"
            image "green.png"

    step draw:
        always
        when:
            provider is gemini
            last user message contains "lighthouse"
        reply:
            text "Here it is."
            image "green.png"

    step hello:
        always
        when:
            provider is gemini
            last user message is "Say hello"
        reply:
            text "Hello from the upstream."
"""


@contextmanager
def _upstream(folder: Path) -> Iterator[str]:
    """An upstream whose answers a replay could not make up itself: audio that says something other
    than its input, a picture that is not drawn from its prompt."""
    folder.mkdir()
    (folder / "up.mockllm").write_text(UPSTREAM_MEDIA, encoding="utf-8")
    (folder / "green.png").write_bytes(_PICTURE)
    compiled, diagnostics = compile_library(load_paths([str(folder)]))
    assert compiled is not None and not diagnostics, diagnostics
    with BackgroundServer(compiled) as server:
        yield server.url


def test_recorded_audio_and_pictures_are_saved_beside_the_script_and_replayed(tmp_path: Path, serve_text) -> None:  # type: ignore[no-untyped-def]
    """The audio and pictures the upstream sent are files in `NAME.assets/`, named by the script's
    `audio` and `image` lines; replayed, the SDK gets the same bytes."""
    with _upstream(tmp_path / "upstream") as upstream, recorder(upstream, tmp_path / "out") as (url, _):
        recorded = _voice_and_pictures(url)
    assert recorded["mp3"].startswith(b"ID3") and recorded["first"] == recorded["second"] == _PICTURE
    tmp_path = tmp_path / "out"
    scripts = check_clean(tmp_path)
    text = "\n".join(s.read_text(encoding="utf-8") for s in scripts)
    assert 'endpoint is "speech"' in text and 'input is "Your table is ready."' in text
    assert 'endpoint is "images"' in text and 'input is "a lighthouse at dusk"' in text
    files = sorted(p for p in tmp_path.rglob("*") if p.parent.name.endswith(".assets"))
    assert sorted(p.suffix for p in files) == [".mp3", ".png", ".png", ".wav"]  # one file for both pictures
    for f in files:  # every file is named by a line of its script, relative to it
        assert f'"{f.relative_to(tmp_path).as_posix()}"' in text
    assert {f.read_bytes() for f in files} == set(recorded.values())
    check = subprocess.run([sys.executable, "-m", "mockllm", "check", str(tmp_path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    with replay(tmp_path) as server:
        assert _voice_and_pictures(server.url) == recorded


def test_recording_twice_keeps_one_file_per_answer(tmp_path: Path, serve_text) -> None:  # type: ignore[no-untyped-def]
    """Recorded again, the same answers get the same file names (nothing is added or replaced)."""
    with serve_text("") as upstream:
        with recorder(upstream, tmp_path) as (url, _), _openai(url) as c:
            c.audio.speech.create(model="tts-1", voice="alloy", input="Hello there.")
        before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
        with recorder(upstream, tmp_path) as (url, _), _openai(url) as c:
            c.audio.speech.create(model="tts-1", voice="alloy", input="Hello there.")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert len([p for p in before if p.suffix == ".mp3"]) == 1


def test_import_of_a_har_saves_the_audio_and_pictures(tmp_path: Path, serve_text) -> None:  # type: ignore[no-untyped-def]
    """A HAR holding a speech call and an images call answered with a URL (and the browser's GET of
    that URL) imports as steps whose audio and picture are the recorded ones."""
    with serve_text("") as upstream, capturing(upstream) as (url, app), _openai(url) as c:
        audio = c.audio.speech.create(model="tts-1", voice="nova", input="Gate four.", response_format="flac").content
        link = c.images.generate(model="dall-e-3", prompt="a paper boat", size="1024x1024").data[0].url
        assert link is not None
        picture = httpx.get(link)
    log = json.loads(har(app.exchanges))
    log["log"]["entries"].append(
        {
            "request": {"method": "GET", "url": link, "headers": []},
            "response": {
                "status": 200,
                "headers": [{"name": "Content-Type", "value": "image/png"}],
                "content": {
                    "mimeType": "image/png",
                    "text": base64.b64encode(picture.content).decode(),
                    "encoding": "base64",
                },
            },
        }
    )
    (tmp_path / "session.har").write_text(json.dumps(log), encoding="utf-8")
    out = tmp_path / "scripts"
    r = subprocess.run(
        [sys.executable, "-m", "mockllm", "import", str(tmp_path / "session.har"), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    text = "\n".join(s.read_text(encoding="utf-8") for s in check_clean(out))
    assert 'audio "openai_speech_' in text and 'image "openai_images_' in text
    with replay(out) as server, _openai(server.url) as c:
        assert (
            c.audio.speech.create(model="tts-1", voice="nova", input="Gate four.", response_format="flac").content
            == audio
        )
        again = c.images.generate(model="dall-e-3", prompt="a paper boat", size="1024x1024").data[0].url
        assert again is not None and httpx.get(again).content == picture.content


def test_passthrough_forwards_speech_and_pictures_and_records_them(tmp_path: Path) -> None:
    """`serve --passthrough --record-missing`: speech and images calls no step answers reach the
    upstream, the SDK gets its bytes, and the audio and pictures are saved beside the written script."""
    with _upstream(tmp_path / "upstream") as up, passthrough(up, tmp_path / "out") as server:
        direct = _voice_and_pictures(up)
        forwarded = _voice_and_pictures(server.url)
        entries = httpx.get(server.url + "/_mockllm/requests").json()
    assert forwarded == direct and forwarded["first"] == _PICTURE
    assert [e["passed_through"] for e in entries] == [True] * 4
    text = "\n".join(s.read_text(encoding="utf-8") for s in check_clean(tmp_path / "out"))
    assert text.count('audio "') == 2 and text.count('image "') == 3
    with replay(tmp_path / "out") as again:
        assert _voice_and_pictures(again.url) == direct


def _docs_blocks() -> tuple[str, str]:
    """The file listing and the script of "Recording voice and pictures" in docs/voice-and-images.md."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "voice-and-images.md").read_text(encoding="utf-8")
    section = page.split("## Recording voice and pictures", 1)[1].split("\n## ", 1)[0]
    listing = section.split("```text\n", 1)[1].split("```", 1)[0]
    script = section.split("```mockllm\n", 1)[1].split("```", 1)[0]
    return listing, script


def test_the_docs_show_what_the_recorder_writes(tmp_path: Path, serve_text) -> None:  # type: ignore[no-untyped-def]
    """The session the page describes (one sentence spoken, one picture drawn) recorded through
    `mockllm record`: the files and the speech script are the ones shown."""
    listing, shown = _docs_blocks()
    out = tmp_path / "scenarios" / "recorded"
    with serve_text("") as upstream, recorder(upstream, out) as (url, _), _openai(url) as c:
        c.audio.speech.create(model="tts-1", voice="alloy", input="Your table is ready.")
        c.images.generate(model="gpt-image-1", prompt="a lighthouse at dusk", size="256x256")
    check_clean(out)
    written = sorted(p.relative_to(tmp_path).as_posix() for p in out.rglob("*") if p.is_file())
    assert written == sorted(listing.split())
    (speech,) = out.glob("openai_speech_*.mockllm")
    assert speech.read_text(encoding="utf-8") == shown


def _gemini_media(url: str) -> tuple[str | None, bytes, bytes]:
    """A Gemini answer with a picture beside its text, and one that is sound alone."""
    from google import genai
    from google.genai import types

    client = genai.Client(api_key=KEY, http_options={"base_url": url})
    drawn = client.models.generate_content(
        model="gemini-2.5-flash-image",
        contents="Draw a lighthouse",
        config=types.GenerateContentConfig(response_modalities=["TEXT", "IMAGE"]),
    )
    spoken = client.models.generate_content(
        model="gemini-2.5-flash-preview-tts",
        contents="Say hello",
        config=types.GenerateContentConfig(response_modalities=["AUDIO"]),
    )
    picture = drawn.candidates[0].content.parts[-1].inline_data  # type: ignore[index,union-attr]
    sound = spoken.candidates[0].content.parts[0].inline_data  # type: ignore[index,union-attr]
    return drawn.text, picture.data, sound.data  # type: ignore[union-attr,return-value]


def test_gemini_pictures_and_sound_are_recorded_as_files(tmp_path: Path) -> None:
    """Gemini's `inlineData` answers (responseModalities IMAGE, AUDIO) are saved beside the script as
    `image` and `audio` lines; replayed, the SDK gets the same bytes."""
    with _upstream(tmp_path / "upstream") as upstream, recorder(upstream, tmp_path / "out") as (url, _):
        recorded = _gemini_media(url)
    assert recorded[1].startswith(b"\x89PNG") and len(recorded[2]) > 1000
    text = "\n".join(s.read_text(encoding="utf-8") for s in check_clean(tmp_path / "out"))
    assert '.png"' in text and '.pcm"' in text
    with replay(tmp_path / "out") as server:
        assert _gemini_media(server.url) == recorded
