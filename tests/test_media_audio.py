"""The audio mockllm makes, judged by ffprobe and ffmpeg (Debian's ffmpeg; .ci/run installs it): every
speech format is the codec and container it claims, decodes without error, lasts longer for longer
text and shorter at a higher speed, and carries its text back through :func:`listen`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mockllm.runtime.media import audio, inband
from mockllm.runtime.media.audio import FORMATS, listen, seconds_for, speak
from mockllm.runtime.media.heard import UnreadableAudio

SHORT = "Your order has shipped."
LONG = "Your order has shipped, and it will arrive on Tuesday between nine and noon. " * 3
#: what ffprobe names each format's codec and container
EXPECTED = {
    "mp3": ("mp3", "mp3"),
    "opus": ("opus", "ogg"),
    "aac": ("aac", "aac"),
    "flac": ("flac", "flac"),
    "wav": ("pcm_s16le", "wav"),
    "pcm": ("pcm_s16le", "s16le"),
}
RAW = ["-f", "s16le", "-ar", "24000", "-ac", "1"]


def _probe(path: Path, fmt: str) -> tuple[str, str, float]:
    assert shutil.which("ffprobe"), "ffprobe is missing: install Debian's ffmpeg (.ci/run does)"
    args = ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json"]
    out = subprocess.run([*args, *(RAW if fmt == "pcm" else []), str(path)], capture_output=True, text=True, check=True)
    assert out.stderr == "", out.stderr
    found = json.loads(out.stdout)
    return found["streams"][0]["codec_name"], found["format"]["format_name"], float(found["format"]["duration"])


def _decodes(path: Path, fmt: str) -> bytes:
    args = ["ffmpeg", "-v", "error", *(RAW if fmt == "pcm" else []), "-i", str(path), "-f", "s16le", "-ac", "1", "-"]
    out = subprocess.run(args, capture_output=True, check=True)
    assert out.stderr == b"", out.stderr
    return out.stdout


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_is_real_audio_whose_length_follows_the_text_and_speed(fmt: str, tmp_path: Path) -> None:
    """ffprobe names the right codec and container; a longer text lasts longer, speed 2 halves it."""
    lengths = {}
    for name, text, speed in (("short", SHORT, 1.0), ("long", LONG, 1.0), ("fast", LONG, 2.0)):
        path = tmp_path / f"{name}.{fmt}"
        path.write_bytes(speak(text, fmt, speed=speed))
        codec, container, lengths[name] = _probe(path, fmt)
        assert (codec, container) == EXPECTED[fmt]
        assert _decodes(path, fmt)
    assert lengths["long"] > lengths["short"] * 3
    assert lengths["fast"] == pytest.approx(lengths["long"] / 2, rel=0.02)
    assert lengths["long"] == pytest.approx(seconds_for(LONG), rel=0.02)


@pytest.mark.parametrize("fmt", FORMATS)
def test_audio_mockllm_made_carries_its_text_back(fmt: str) -> None:
    """listen() reads back the text, unicode included, and the length speak() gave."""
    text = "Grüße aus Köln — 你好"
    heard = listen(speak(text, fmt, seconds=2.5))
    assert heard.text == text
    assert heard.seconds == pytest.approx(2.5, abs=0.05)


@pytest.mark.parametrize("fmt", ["wav", "flac", "pcm"])
def test_lossless_audio_keeps_its_text_through_ffmpeg(fmt: str, tmp_path: Path) -> None:
    """The text is in the samples too: decoded to raw PCM by ffmpeg, the audio still says it."""
    path = tmp_path / f"a.{fmt}"
    path.write_bytes(speak(LONG, fmt))
    assert inband.read(_decodes(path, fmt)) == LONG


def test_audio_made_elsewhere_has_a_length_and_no_text(tmp_path: Path) -> None:
    """A WAV made by ffmpeg (a sine tone) is heard with its length and without text."""
    path = tmp_path / "tone.wav"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=1.5", "-ar", "16000", str(path)],
        check=True,
    )
    heard = listen(path.read_bytes())
    assert (heard.format, heard.text) == ("wav", None)
    assert heard.seconds == pytest.approx(1.5, abs=0.01)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"hello, this is not audio", "Invalid file format"),
        (b"RIFF\x10\x00\x00\x00WAVEjunk", "no fmt chunk"),
        (b"fLaC\x00\x00\x00\x22", "cut short"),
        (b"OggS" + bytes(22) + b"\x01\x32", "cut short"),
        (b"ID3\x04\x00\x00\x00\x00\x00\x00", "no MPEG audio frames"),
    ],
)
def test_broken_audio_is_refused_with_a_reason(data: bytes, says: str) -> None:
    """Bytes that are no audio, or audio cut short, raise UnreadableAudio saying what is wrong."""
    with pytest.raises(UnreadableAudio, match=says):
        listen(data)


def test_recent_speech_is_kept_within_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same request is answered with the same bytes, kept; what is kept stays within SPOKEN_BYTES,
    the oldest let go first, and audio longer than an eighth of it is never kept."""
    monkeypatch.setattr(audio, "SPOKEN_BYTES", 400_000)
    monkeypatch.setattr(audio, "_spoken", type(audio._spoken)())
    monkeypatch.setattr(audio, "_spoken_size", [0])
    first = audio.speak("one two three", "wav", seconds=1.0)  # 48 kB
    assert audio.speak("one two three", "wav", seconds=1.0) is first
    for i in range(12):
        audio.speak(f"sentence {i}", "wav", seconds=1.0)
    assert audio._spoken_size[0] == sum(len(v) for v in audio._spoken.values()) <= 400_000
    assert ("one two three", "wav", 1.0) not in audio._spoken  # the oldest went first
    audio.speak("a long one", "wav", seconds=2.0)  # 96 kB: more than an eighth
    assert not any(k[0] == "a long one" for k in audio._spoken)


def _tag(version: int, *frames: tuple[bytes, bytes]) -> bytes:
    """An ID3v2 tag of ``version`` (3: plain frame sizes, 4: syncsafe) holding ``frames``."""

    def size(n: int, syncsafe: bool) -> bytes:
        return bytes((n >> 21 & 0x7F, n >> 14 & 0x7F, n >> 7 & 0x7F, n & 0x7F)) if syncsafe else n.to_bytes(4, "big")

    body = b"".join(kind + size(len(data), version >= 4) + b"\x00\x00" + data for kind, data in frames)
    return b"ID3" + bytes((version, 0, 0)) + size(len(body), True) + body


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize("fmt", ["mp3", "aac"])
def test_the_text_is_found_among_other_tags_and_audio_changed_after_is_walked(version: int, fmt: str) -> None:
    """A tag written by another tool (another frame first, an empty one, another TXXX key) still gives
    mockllm's text; frames followed by junk, or one frame changed, are counted one by one to the same
    length as mockllm's own."""
    own = speak(SHORT, fmt, seconds=1.0)
    frames = own[own.index(b"\xff", 10) :]  # after mockllm's tag
    tag = _tag(
        version,
        (b"TIT2", b"\x03title"),
        (b"TXXX", b""),
        (b"TXXX", b"\x03OTHER\x00no"),
        (b"TXXX", b"\x03MOCKLLM_TEXT\x00" + SHORT.encode()),
    )
    changed = frames[:-3] + b"\x01" + frames[-2:]  # a byte of the last frame's data
    for audio_bytes in (tag + frames, tag + frames + b"junk", tag + changed):
        heard = listen(audio_bytes)
        assert (heard.format, heard.text) == (fmt, SHORT)
        assert heard.seconds == pytest.approx(listen(own).seconds)
    assert listen(_tag(version, (b"TIT2", b"\x03title")) + frames).text is None
