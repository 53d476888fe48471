"""Speech, transcription and translation through the official openai SDK against a real server, with
no script and with one: every speech format is real audio (ffprobe judges it) whose length follows
the text and ``speed``; speech round-trips through transcription in every transcript format; streams
are the SDK's events; Azure's deployment routes answer the same; bad uploads get OpenAI's error shape."""

from __future__ import annotations

import base64
import io
import itertools
import json
import wave
from collections.abc import Iterator

import httpx
import openai
import pytest
from audio_judge import EXPECTED, probe
from conftest import _serve
from sdk_clients import azure, oa

from mockllm.runtime.media.audio import FORMATS, speak
from mockllm.server.background import BackgroundServer

SCRIPT = """
scenario "Greeting":
    step greet:
        always
        when:
            endpoint is "speech"
            input contains "greeting"
        reply:
            text "Welcome to the mock."
            audio 3s

scenario "Order by voice":
    step hear_order:
        always
        when:
            endpoint is "transcription"
            attachments include "audio"
            input is ""
        reply:
            text "I would like two coffees."

scenario "Chat":
    step chat:
        when:
            last user message contains "hello"
        reply:
            text "Hi!"
"""

SENTENCE = "Your parcel left the depot this morning. It arrives tomorrow."


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with _serve(SCRIPT) as s:
        yield s


@pytest.fixture
def client(server: BackgroundServer) -> openai.OpenAI:
    return oa(server.url)


@pytest.mark.parametrize("fmt", FORMATS)
def test_speech_in_every_format_is_real_audio_that_follows_text_and_speed(client: openai.OpenAI, fmt: str) -> None:
    """ffprobe reads the codec and container asked for; more text lasts longer, speed 2 halves it."""

    def length(text: str, speed: float) -> float:
        audio = client.audio.speech.create(
            model="gpt-4o-mini-tts",
            voice="alloy",
            input=text,
            response_format=fmt,
            speed=speed,  # type: ignore[arg-type]
        ).content
        codec, container, seconds = probe(audio, fmt)
        assert (codec, container) == EXPECTED[fmt]
        return seconds

    short, long, fast = length("Hi there.", 1.0), length(SENTENCE * 2, 1.0), length(SENTENCE * 2, 2.0)
    assert long > short * 3
    assert fast == pytest.approx(long / 2, rel=0.03)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "pcm"])
def test_speech_round_trips_through_transcription(client: openai.OpenAI, fmt: str) -> None:
    """What mockllm says, mockllm hears: the transcript of its audio is the text it was given."""
    audio = client.audio.speech.create(model="tts-1", voice="nova", input=SENTENCE, response_format=fmt).content  # type: ignore[arg-type]
    heard = client.audio.transcriptions.create(model="whisper-1", file=(f"speech.{fmt}", audio))
    assert heard.text == SENTENCE


def test_speech_streamed_as_sse_events_joins_to_the_audio(server: BackgroundServer) -> None:
    """stream_format sse: speech.audio.delta events whose base64 pieces join to a WAV, then done with usage."""
    body = {
        "model": "gpt-4o-mini-tts",
        "voice": "alloy",
        "input": SENTENCE,
        "response_format": "wav",
        "stream_format": "sse",
    }
    with httpx.Client() as http:
        reply = http.post(server.url + "/v1/audio/speech", json=body, headers={"authorization": "Bearer k"})
    events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: ")]
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert {e["type"] for e in events[:-1]} == {"speech.audio.delta"}
    assert events[-1]["type"] == "speech.audio.done" and events[-1]["usage"]["total_tokens"] > 0
    audio = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    with wave.open(io.BytesIO(audio)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (24000, 1, 2)
    assert oa(server.url).audio.transcriptions.create(model="whisper-1", file=("a.wav", audio)).text == SENTENCE


def test_a_scripted_speech_step_sets_the_text_and_length(client: openai.OpenAI) -> None:
    """`text` and `audio 3s` in a speech step: three seconds saying the step's text."""
    audio = client.audio.speech.create(
        model="tts-1", voice="alloy", input="Play the greeting", response_format="flac"
    ).content
    assert probe(audio, "flac")[2] == pytest.approx(3.0, abs=0.01)
    assert client.audio.transcriptions.create(model="whisper-1", file=("a.flac", audio)).text == "Welcome to the mock."


def test_audio_from_elsewhere_matches_its_step_and_never_a_chat_step(client: openai.OpenAI) -> None:
    """A recording mockllm did not make has an empty `input`: the transcription step answers it; the
    chat step (no endpoint condition) is never used up by an audio request."""
    tone = io.BytesIO()
    with wave.open(tone, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(bytes(range(256)) * 125)  # one second of noise
    heard = client.audio.transcriptions.create(model="whisper-1", file=("order.wav", tone.getvalue()))
    assert heard.text == "I would like two coffees."
    reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hello"}])
    assert reply.choices[0].message.content == "Hi!"


def test_unscripted_audio_transcribes_to_a_placeholder_naming_its_length(server: BackgroundServer) -> None:
    """With no step for it, audio mockllm did not make reads as its length."""
    with _serve("") as bare:
        pcm = bytes(48000 * 2)  # two seconds of silence
        wav = io.BytesIO()
        with wave.open(wav, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(24000)
            w.writeframes(pcm)
        heard = oa(bare.url).audio.transcriptions.create(model="whisper-1", file=("a.wav", wav.getvalue()))
    assert heard.text == "[2.0 seconds of audio]"


def test_every_transcript_format(client: openai.OpenAI) -> None:
    """text, srt, vtt and verbose_json (segments and words timed within the audio) as the SDK returns them."""
    audio = speak(SENTENCE, "mp3")
    file = ("a.mp3", audio)
    assert client.audio.transcriptions.create(model="whisper-1", file=file, response_format="text") == SENTENCE
    srt = client.audio.transcriptions.create(model="whisper-1", file=file, response_format="srt")
    assert srt.startswith("1\n00:00:00,000 --> ") and "2\n" in srt and "It arrives tomorrow." in srt
    vtt = client.audio.transcriptions.create(model="whisper-1", file=file, response_format="vtt")
    assert vtt.startswith("WEBVTT\n\n00:00:00.000 --> ")
    verbose = client.audio.transcriptions.create(
        model="whisper-1", file=file, response_format="verbose_json", timestamp_granularities=["word", "segment"]
    )
    assert verbose.text == SENTENCE and verbose.duration == pytest.approx(len(SENTENCE) / 15, abs=0.05)
    assert [s.text.strip() for s in verbose.segments or []] == [
        "Your parcel left the depot this morning.",
        "It arrives tomorrow.",
    ]
    words = verbose.words or []
    assert [w.word for w in words] == SENTENCE.split()
    assert words[-1].end == pytest.approx(verbose.duration, abs=0.01)
    assert all(a.end <= b.start + 1e-9 for a, b in itertools.pairwise(words))


def test_a_streamed_transcription_is_deltas_then_done(client: openai.OpenAI) -> None:
    """stream=True: transcript.text.delta events joining to the text, then transcript.text.done."""
    events = list(
        client.audio.transcriptions.create(
            model="gpt-4o-mini-transcribe", file=("a.opus", speak(SENTENCE, "opus")), stream=True
        )
    )
    assert "".join(e.delta for e in events[:-1] if e.type == "transcript.text.delta") == SENTENCE
    assert events[-1].type == "transcript.text.done" and events[-1].text == SENTENCE


def test_translation_reads_the_audio(client: openai.OpenAI) -> None:
    """translations.create gives the audio's text (verbose_json says task translate)."""
    out = client.audio.translations.create(
        model="whisper-1", file=("a.aac", speak(SENTENCE, "aac")), response_format="verbose_json"
    )
    assert out.text == SENTENCE


@pytest.mark.parametrize(
    ("upload", "says"),
    [
        (b"this is plainly not audio", "Invalid file format"),
        (b"RIFF\x24\x00\x00\x00WAVEfmt ", "could not be decoded"),
    ],
)
def test_bad_audio_gets_openais_400(client: openai.OpenAI, upload: bytes, says: str) -> None:
    """A file that is no audio, or a broken one: 400 invalid_request_error naming the problem."""
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.transcriptions.create(model="whisper-1", file=("a.wav", upload))
    assert says in caught.value.message
    assert caught.value.body["type"] == "invalid_request_error"  # type: ignore[index]


def test_bad_requests_get_openais_error_shape(server: BackgroundServer) -> None:
    """Not multipart, an unknown speech format, a wrong speed: 400s in OpenAI's shape; the server stays up."""
    headers = {"authorization": "Bearer k"}
    with httpx.Client(base_url=server.url) as http:
        not_form = http.post("/v1/audio/transcriptions", json={"model": "whisper-1"}, headers=headers)
        broken = http.post(
            "/v1/audio/transcriptions",
            content=b'--xyz\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1',
            headers={**headers, "content-type": "multipart/form-data; boundary=xyz"},
        )
        ogg = http.post(
            "/v1/audio/speech",
            json={"model": "tts-1", "voice": "a", "input": "x", "response_format": "ogg"},
            headers=headers,
        )
        fast = http.post(
            "/v1/audio/speech", json={"model": "tts-1", "voice": "a", "input": "x", "speed": 9}, headers=headers
        )
        for reply, says in (
            (not_form, "multipart/form-data"),
            (broken, "closing boundary"),
            (ogg, "'ogg' is not one of"),
            (fast, "between 0.25 and 4.0"),
        ):
            assert reply.status_code == 400, reply.text
            assert says in reply.json()["error"]["message"]
        assert http.get("/_mockllm/health").status_code == 200


def test_an_upload_over_the_limit_gets_413_and_the_server_stays_up(server: BackgroundServer) -> None:
    """A 100 MB upload: 413 in OpenAI's shape, read no further than the limit; then the next request works."""
    big = b"\0" * (100 * 1024 * 1024)
    files = {"file": ("big.wav", big, "audio/wav")}
    with httpx.Client(base_url=server.url) as http:
        try:
            reply = http.post(
                "/v1/audio/transcriptions",
                files=files,
                data={"model": "whisper-1"},
                headers={"authorization": "Bearer k"},
            )
        except httpx.TransportError:  # the server may close the connection before the client has sent it all
            reply = None
        if reply is not None:
            assert reply.status_code == 413 and reply.json()["error"]["code"] == "request_too_large"
        assert http.get("/_mockllm/health").status_code == 200


def test_azure_deployment_routes_speak_and_listen(server: BackgroundServer) -> None:
    """AzureOpenAI sends audio calls to /openai/deployments/{model}/audio/…: the same answers."""
    client = azure(server.url)
    audio = client.audio.speech.create(model="tts", voice="alloy", input=SENTENCE, response_format="wav").content
    assert probe(audio, "wav")[:2] == EXPECTED["wav"]
    assert client.audio.transcriptions.create(model="whisper", file=("a.wav", audio)).text == SENTENCE
