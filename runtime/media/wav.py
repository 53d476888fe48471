"""WAV (RIFF/WAVE, PCM s16le): the writer, with the text in a ``LIST``/``INFO`` comment as well as in the
samples, and the reader of any PCM WAV's length."""

from __future__ import annotations

import struct

from mockllm.runtime.media import inband
from mockllm.runtime.media.heard import Heard, UnreadableAudio


def _chunk(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("<I", len(body)) + body + (b"\x00" if len(body) % 2 else b"")


def write(samples: bytes, rate: int, comment: str = "") -> bytes:
    """A mono 16-bit WAV file of ``samples`` (s16le) at ``rate``, ``comment`` in its INFO list."""
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    chunks = _chunk(b"fmt ", fmt)
    if comment:
        chunks += _chunk(b"LIST", b"INFO" + _chunk(b"ICMT", comment.encode("utf-8") + b"\x00"))
    chunks += _chunk(b"data", samples)
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks


def read(data: bytes) -> Heard:
    """A WAV file's length from its ``fmt`` and ``data`` chunks, and the text in its samples."""
    pos, fmt, samples, length = 12, None, None, 0
    while pos + 8 <= len(data):
        kind, size = data[pos : pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        if kind == b"data":  # its length, and only the samples that can carry text (no copy of the rest)
            length = min(size, len(data) - pos - 8)  # streamed WAVs say 0xFFFFFFFF: the rest of the file
            samples = data[pos + 8 : pos + 8 + min(length, inband.MAX_SAMPLE_BYTES)]
            break
        body = data[pos + 8 : pos + 8 + size]
        if kind == b"fmt ":
            if len(body) < 16:
                raise UnreadableAudio("the WAV file's fmt chunk is cut short")
            fmt = struct.unpack_from("<HHIIHH", body)
        pos += 8 + size + (size % 2)
    if fmt is None or samples is None:
        raise UnreadableAudio("the WAV file has no " + ("fmt" if fmt is None else "data") + " chunk")
    _, channels, rate, byte_rate, _, bits = fmt
    if not byte_rate or not rate or not channels:
        raise UnreadableAudio("the WAV file's fmt chunk gives no sample rate")
    text = inband.read(samples) if channels == 1 and bits == 16 else None
    return Heard("wav", length / byte_rate, text)
