"""Text carried in the samples themselves: how raw PCM (which has no place for metadata) made by
mockllm still says what it speaks.

The first samples of the audio spell ``MAGIC``, the text's length, the UTF-8 text and its CRC-32, one
bit per 16-bit sample: ``+AMPLITUDE`` for a 1, ``-AMPLITUDE`` for a 0 (about -54 dBFS, a faint hiss),
then silence. The marker survives any lossless path (raw PCM, WAV, FLAC, base64 in a JSON event,
chunks joined again), and :func:`read` finds nothing in other audio (CRC-checked)."""

from __future__ import annotations

import struct
import zlib

MAGIC = b"MOCKLLM\x01"
AMPLITUDE = 64
_ONE = struct.pack("<h", AMPLITUDE)
_ZERO = struct.pack("<h", -AMPLITUDE)
_HEAD_BITS = (len(MAGIC) + 4) * 8
MAX_TEXT_BYTES = 4096 * 4  # the longest speech input (4,096 characters) in UTF-8
#: how many bytes of samples can hold a text: a reader need look no further
MAX_SAMPLE_BYTES = (len(MAGIC) + 8 + MAX_TEXT_BYTES) * 8 * 2


def payload(text: str) -> bytes:
    """The bytes spelled into the samples for ``text``."""
    body = text.encode("utf-8")
    return MAGIC + struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def sample_count(text: str) -> int:
    """How many samples carry ``text`` (the audio must be at least this long)."""
    return len(payload(text)) * 8


def encode(text: str) -> bytes:
    """``text`` as s16le samples (``sample_count(text)`` of them)."""
    bits = "".join(f"{b:08b}" for b in payload(text))
    return b"".join(_ONE if bit == "1" else _ZERO for bit in bits)


def _bits(samples: bytes, start: int, count: int) -> bytes | None:
    """``count`` bits from the samples from bit ``start`` on, as bytes (count a multiple of 8)."""
    end = (start + count) * 2
    if end > len(samples):
        return None
    highs = samples[start * 2 + 1 : end : 2]  # the high byte says the sign: 0x00 for +, 0xFF for -
    chars = highs.translate(_SIGNS)
    if chars.translate(None, b"01"):
        return None
    return int(chars, 2).to_bytes(count // 8, "big") if count else b""


_SIGNS = bytes(0x31 if b == 0x00 else 0x30 if b == 0xFF else 0x78 for b in range(256))  # "1", "0", "x"


def read(samples: bytes) -> str | None:
    """The text spelled at the start of s16le ``samples``, None when they carry none."""
    head = _bits(samples, 0, _HEAD_BITS)
    if head is None or not head.startswith(MAGIC):
        return None
    (size,) = struct.unpack(">I", head[len(MAGIC) :])
    rest = _bits(samples, _HEAD_BITS, (size + 4) * 8)
    if rest is None:
        return None
    body, (crc,) = rest[:size], struct.unpack(">I", rest[size:])
    if zlib.crc32(body) != crc:
        return None
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None
