"""Speech made and heard: :func:`speak` turns text into audio bytes in any of OpenAI's speech formats,
:func:`listen` reads any audio file's format, length and (for audio mockllm made) text.

The length of speech grows with its text (about 15 characters a second, half a second at least) and
shrinks with ``speed``; ``seconds`` sets it instead (a script's ``audio 2.5s``). Every format carries
the text: in a metadata field for the compressed ones, and in the samples themselves (see
:mod:`~mockllm.runtime.media.inband`) for PCM, WAV and FLAC, so audio converted losslessly keeps it.
Nothing here does I/O: the server's speech and transcription routes and the realtime sessions call it."""

from __future__ import annotations

import math
import struct
import threading
from collections import OrderedDict
from typing import Literal

from mockllm.runtime.media import aac, flac, inband, mp3, opus, wav
from mockllm.runtime.media.heard import Heard, UnreadableAudio

AudioFormat = Literal["mp3", "opus", "aac", "flac", "wav", "pcm"]
FORMATS: tuple[AudioFormat, ...] = ("mp3", "opus", "aac", "flac", "wav", "pcm")
#: the Content-Type each speech format is answered with
MEDIA_TYPES: dict[str, str] = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
#: the media type of each container listen() recognises (the journal shows it)
CONTAINER_TYPES: dict[str, str] = {
    "wav": "audio/wav",
    "flac": "audio/flac",
    "mp3": "audio/mpeg",
    "ogg": "audio/ogg",
    "aac": "audio/aac",
    "mp4": "audio/mp4",
    "webm": "audio/webm",
    "pcm": "audio/pcm",
}
PCM_RATE = 24000  # raw PCM and WAV: 24 kHz, 16-bit, mono, as OpenAI's speech API gives them
CHARS_PER_SECOND = 15.0
MIN_SECONDS = 0.5
SPEEDS = (0.25, 4.0)
#: what transcription accepts, as OpenAI's error lists it
ACCEPTED = "flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav, webm"


def seconds_for(text: str, speed: float = 1.0) -> float:
    """How long ``text`` takes to say at ``speed`` (0.25 to 4.0; 1.0 is normal)."""
    seconds = max(MIN_SECONDS, len(text) / CHARS_PER_SECOND)
    return seconds if speed == 1.0 else seconds / min(max(speed, SPEEDS[0]), SPEEDS[1])


def samples(text: str, seconds: float, rate: int = PCM_RATE) -> bytes:
    """``seconds`` of s16le mono samples at ``rate`` that spell ``text`` (longer when the text needs it)."""
    spelled = inband.encode(text)
    total = max(round(seconds * rate) * 2, len(spelled))
    return spelled + bytes(total - len(spelled))


def speak(text: str, fmt: AudioFormat, *, seconds: float | None = None, speed: float = 1.0) -> bytes:
    """Audio in ``fmt`` that says ``text``: ``seconds`` long, else as long as the text takes at ``speed``.
    The same request gets the same bytes, so recent answers are kept (:data:`SPOKEN_BYTES` in all)."""
    length = seconds_for(text, speed) if seconds is None else max(seconds, 0.02)
    key = (text, fmt, length)
    with _spoken_lock:
        found = _spoken.get(key)
        if found is not None:
            _spoken.move_to_end(key)
            return found
    audio = _speak(text, fmt, length)
    if len(audio) <= SPOKEN_BYTES // 8:  # (a long recording is made again rather than crowd the others out)
        with _spoken_lock:
            if key not in _spoken:
                _spoken[key] = audio
                _spoken_size[0] += len(audio)
            while _spoken_size[0] > SPOKEN_BYTES:
                _spoken_size[0] -= len(_spoken.popitem(last=False)[1])
    return audio


#: the bytes of recent speech kept for the next identical request (the bench's and a test suite's
#: requests repeat: making a WAV or FLAC of a sentence costs a millisecond or more, handing it out none)
SPOKEN_BYTES = 32 * 1024 * 1024
_spoken: OrderedDict[tuple[str, str, float], bytes] = OrderedDict()
_spoken_size = [0]
_spoken_lock = threading.Lock()


def _speak(text: str, fmt: AudioFormat, length: float) -> bytes:
    if fmt == "pcm":
        return samples(text, length)
    if fmt == "wav":
        return wav.write(samples(text, length), PCM_RATE, text)
    if fmt == "flac":
        return flac.write(samples(text, length), PCM_RATE, text)
    if fmt == "mp3":
        return mp3.write(math.ceil(length * mp3.RATE / mp3.FRAME_SAMPLES), text)
    if fmt == "opus":
        return opus.write(math.ceil(length * 48000 / opus.PACKET_SAMPLES), text)
    if fmt == "aac":
        return aac.write(math.ceil(length * aac.RATE / aac.FRAME_SAMPLES), text)
    raise ValueError(f"unknown audio format {fmt!r}")


def sniff(data: bytes) -> str | None:
    """The container ``data`` is in, by its first bytes: wav, flac, mp3, ogg, aac, mp4 or webm (None:
    none of them). (Its first four bytes read once and compared, nothing after an ID3 tag copied: every
    transcription asks, and this way it costs a third of what slicing for each comparison did.)"""
    head = data[:4]
    if head == b"RIFF" and data.startswith(b"WAVE", 8):
        return "wav"
    if head == b"fLaC":
        return "flac"
    if head == b"OggS":
        return "ogg"
    if data.startswith(b"ftyp", 4):
        return "mp4"
    if head == b"\x1a\x45\xdf\xa3":
        return "webm"
    if head.startswith(b"ID3") or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        at = _after_id3(data)
        return "aac" if data.startswith((b"\xff\xf1", b"\xff\xf9"), at) else "mp3"
    return None


def _after_id3(data: bytes) -> int:
    """Where the bytes after a leading ID3 tag start (0 without one)."""
    if not data.startswith(b"ID3") or len(data) < 10:
        return 0
    size = (data[6] << 21) | (data[7] << 14) | (data[8] << 7) | data[9]
    return 10 + size + (10 if data[5] & 0x10 else 0)


_READERS = {"wav": wav.read, "flac": flac.read, "mp3": mp3.read, "aac": aac.read, "ogg": opus.read}


def listen(data: bytes) -> Heard:
    """What ``data`` holds: its format, its length and, when mockllm made it, its text. Raw PCM is
    recognised only when it carries mockllm's text. Raises :class:`UnreadableAudio` for bytes that are
    no audio file, or a broken one."""
    kind = sniff(data)
    if kind is None:
        text = inband.read(data)
        if text is not None:
            return Heard("pcm", len(data) / (PCM_RATE * 2), text)
        raise UnreadableAudio(f"Invalid file format. Supported formats: {ACCEPTED}")
    if kind == "mp4":
        return Heard("mp4", _mp4_seconds(data))
    if kind == "webm":
        return Heard("webm", None)
    try:
        return _READERS[kind](data)
    except (struct.error, IndexError, ValueError, ZeroDivisionError) as e:
        raise UnreadableAudio(f"the {kind} file could not be decoded: it is cut short or broken") from e


def _mp4_seconds(data: bytes) -> float | None:
    at = data.find(b"mvhd")
    if at < 4 or at + 32 > len(data):
        return None
    if data[at + 4] == 1:
        scale, length = struct.unpack_from(">IQ", data, at + 24)
    else:
        scale, length = struct.unpack_from(">II", data, at + 16)
    return length / scale if scale else None
