"""FLAC: the writer (STREAMINFO, a VORBIS_COMMENT block holding the text, then frames of 4096 samples:
VERBATIM subframes where the samples carry the in-band text, CONSTANT zero subframes for the silence
after it), and the reader of any FLAC file's length (from STREAMINFO) and mockllm's comment."""

from __future__ import annotations

import struct

from mockllm.runtime.media.checksums import crc8, crc16
from mockllm.runtime.media.heard import Heard, UnreadableAudio
from mockllm.runtime.media.vorbis import comment, read_comment

BLOCK = 4096
_RATE_CODES = {24000: 0b0111, 48000: 0b1010, 44100: 0b1001, 16000: 0b0101}


def _utf8_number(n: int) -> bytes:
    """FLAC's frame number coding (UTF-8's scheme, extended to 36 bits)."""
    if n < 0x80:
        return bytes((n,))
    tail = []
    while True:
        tail.append(0x80 | (n & 0x3F))
        n >>= 6
        room = 6 - len(tail)  # payload bits left in the lead byte
        if n < (1 << room):
            lead = (0xFF << (7 - len(tail))) & 0xFF
            return bytes((lead | n, *reversed(tail)))


def _frame(number: int, samples: bytes, rate_code: int) -> bytes:
    count = len(samples) // 2
    size_code, extra = (0b1100, b"") if count == BLOCK else (0b0111, struct.pack(">H", count - 1))
    head = b"\xff\xf8" + bytes((size_code << 4 | rate_code, 0b1000)) + _utf8_number(number) + extra
    head += bytes((crc8(head),))
    if samples.count(0) == len(samples):
        sub = b"\x00\x00\x00"  # CONSTANT subframe, sample 0
    else:
        sub = b"\x02" + _swap(samples)  # VERBATIM subframe: big-endian samples
    frame = head + sub
    return frame + struct.pack(">H", crc16(frame))


def _swap(samples: bytes) -> bytes:
    out = bytearray(len(samples))
    out[0::2] = samples[1::2]
    out[1::2] = samples[0::2]
    return bytes(out)


def _block(kind: int, body: bytes, last: bool) -> bytes:
    return bytes(((0x80 if last else 0) | kind,)) + len(body).to_bytes(3, "big") + body


def write(samples: bytes, rate: int, text: str) -> bytes:
    """A mono 16-bit FLAC file of ``samples`` (s16le) at ``rate``, ``text`` in its Vorbis comment."""
    total = len(samples) // 2
    info = struct.pack(">HH", BLOCK, BLOCK) + bytes(6)  # min/max frame size 0: unknown
    info += ((rate << 44) | (0 << 41) | (15 << 36) | total).to_bytes(8, "big") + bytes(16)
    out = [b"fLaC", _block(0, info, False), _block(4, comment(text), True)]
    code = _RATE_CODES[rate]
    step = BLOCK * 2
    out += [_frame(i, samples[pos : pos + step], code) for i, pos in enumerate(range(0, len(samples), step))]
    return b"".join(out)


def read(data: bytes) -> Heard:
    """A FLAC file's length from STREAMINFO, and its ``MOCKLLM_TEXT`` comment."""
    pos, seconds, text = 4, None, None
    while pos + 4 <= len(data):
        head = data[pos]
        size = int.from_bytes(data[pos + 1 : pos + 4], "big")
        body = data[pos + 4 : pos + 4 + size]
        if len(body) < size:
            raise UnreadableAudio("the FLAC file is cut short in its metadata")
        if head & 0x7F == 0 and size >= 18:
            bits = int.from_bytes(body[10:18], "big")
            rate, total = bits >> 44, bits & ((1 << 36) - 1)
            if not rate:
                raise UnreadableAudio("the FLAC file's STREAMINFO gives no sample rate")
            seconds = total / rate
        elif head & 0x7F == 4:
            text = read_comment(body) if text is None else text
        pos += 4 + size
        if head & 0x80:
            break
    if seconds is None:
        raise UnreadableAudio("the FLAC file has no STREAMINFO block")
    return Heard("flac", seconds, text)
