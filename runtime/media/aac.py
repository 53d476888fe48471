"""AAC: ADTS frames of silent AAC-LC (24 kHz mono, 1024 samples each: a 7-byte header and the raw
block ``00 00 00 07``, one single-channel element with no spectral data, then END) after an ID3 tag
holding the text; and the reader that counts any ADTS stream's frames for its length."""

from __future__ import annotations

from mockllm.runtime.media import id3
from mockllm.runtime.media.heard import Heard, UnreadableAudio

RATE = 24000
FRAME_SAMPLES = 1024
_RATES = (96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350)
_BLOCK = b"\x00\x00\x00\x07"


def _header(length: int) -> bytes:
    # sync, MPEG-4, layer 0, no CRC | LC (profile 1), rate index 6 (24 kHz), mono | length, fullness 0x7FF
    return bytes((0xFF, 0xF1, 0x58, 0x40 | (length >> 11), (length >> 3) & 0xFF, ((length & 7) << 5) | 0x1F, 0xFC))


_FRAME = _header(7 + len(_BLOCK)) + _BLOCK


def write(frames: int, text: str) -> bytes:
    """``frames`` silent ADTS frames (1024 samples at 24 kHz each) after an ID3 tag carrying ``text``."""
    return id3.tag(text) + _FRAME * frames


def read(data: bytes) -> Heard:
    """An ADTS stream's length (its frames counted) and the text of its ID3 tag."""
    text, at = id3.read(data)
    count, rest = divmod(len(data) - at, len(_FRAME))
    if count > 0 and not rest and data.startswith(_FRAME, at) and data.endswith(_FRAME * count):
        return Heard("aac", count * FRAME_SAMPLES / RATE, text)  # mockllm's own: no walk (and no copy)
    audio = data[at:]
    pos, seconds, frames = 0, 0.0, 0
    while pos + 7 <= len(audio) and audio[pos] == 0xFF and audio[pos + 1] & 0xF6 == 0xF0:
        rate_index = (audio[pos + 2] >> 2) & 0xF
        length = ((audio[pos + 3] & 3) << 11) | (audio[pos + 4] << 3) | (audio[pos + 5] >> 5)
        if rate_index >= len(_RATES) or length < 7:
            break
        seconds += FRAME_SAMPLES * ((audio[pos + 6] & 3) + 1) / _RATES[rate_index]
        frames += 1
        pos += length
    if not frames:
        raise UnreadableAudio("the AAC file holds no ADTS frames")
    return Heard("aac", seconds, text)
