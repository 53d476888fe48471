"""MP3: MPEG-1 Layer III frames of silence (48 kHz mono, 32 kbit/s: 96 bytes for 24 ms each, a header
and all-zero side info and main data, which every decoder reads as silence) after an ID3 tag holding
the text; and the reader that counts any MPEG audio stream's frames for its length."""

from __future__ import annotations

from mockllm.runtime.media import id3
from mockllm.runtime.media.heard import Heard, UnreadableAudio

RATE = 48000
FRAME_SAMPLES = 1152
_FRAME = b"\xff\xfb\x14\xc0" + bytes(92)  # MPEG-1 Layer III, no CRC, 32 kbit/s, 48 kHz, mono: 96 bytes


def write(frames: int, text: str) -> bytes:
    """``frames`` silent frames (24 ms each) after an ID3 tag carrying ``text``."""
    return id3.tag(text) + _FRAME * frames


# kbit/s by bitrate index, for MPEG-1 Layer III and for MPEG-2/2.5 Layer III
_BITRATES = {
    1: (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    2: (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}  # by version bits


def read(data: bytes) -> Heard:
    """An MP3 file's length (its frames counted) and the text of its ID3 tag."""
    text, at = id3.read(data)
    count, rest = divmod(len(data) - at, len(_FRAME))
    if count > 0 and not rest and data.startswith(_FRAME, at) and data.endswith(_FRAME * count):
        return Heard("mp3", count * FRAME_SAMPLES / RATE, text)  # mockllm's own: no walk (and no copy)
    audio = data[at:]
    pos, seconds, frames = 0, 0.0, 0
    while pos + 4 <= len(audio):
        b1, b2 = audio[pos + 1], audio[pos + 2]
        version, layer, index, rate_index = (b1 >> 3) & 3, (b1 >> 1) & 3, b2 >> 4, (b2 >> 2) & 3
        if audio[pos] != 0xFF or b1 & 0xE0 != 0xE0 or version == 1 or layer != 1 or index in (0, 15) or rate_index == 3:
            break  # a trailing tag or junk ends the stream
        rate = _RATES[version][rate_index]
        samples = FRAME_SAMPLES if version == 3 else FRAME_SAMPLES // 2
        size = samples // 8 * _BITRATES[1 if version == 3 else 2][index] * 1000 // rate + ((b2 >> 1) & 1)
        pos += size
        seconds += samples / rate
        frames += 1
    if not frames:
        raise UnreadableAudio("the MP3 file holds no MPEG audio frames")
    return Heard("mp3", seconds, text)
