"""Ogg Opus: the writer (an ``OpusHead`` page, an ``OpusTags`` page whose comment holds the text, then
pages of 20 ms silent CELT packets ``F8 FF FE``), and the reader of any Ogg stream's length (its last
granule position) and mockllm's comment."""

from __future__ import annotations

import struct

from mockllm.runtime.media.checksums import ogg_crc
from mockllm.runtime.media.heard import Heard, UnreadableAudio
from mockllm.runtime.media.vorbis import comment, read_comment

PRE_SKIP = 312
PACKET_SAMPLES = 960  # 20 ms at 48 kHz
_PACKET = b"\xf8\xff\xfe"  # TOC: CELT full band, 20 ms, mono, one frame; then a silent frame
_SERIAL = 0x6D6F636B  # "mock"


def _page(packets: list[bytes], granule: int, sequence: int, flags: int) -> bytes:
    lacing = bytearray()
    for p in packets:
        lacing += b"\xff" * (len(p) // 255) + bytes((len(p) % 255,))
    head = b"OggS\x00" + bytes((flags,)) + struct.pack("<qII", granule, _SERIAL, sequence)
    page = bytearray(head + b"\x00\x00\x00\x00" + bytes((len(lacing),)) + lacing + b"".join(packets))
    struct.pack_into("<I", page, 22, ogg_crc(bytes(page)))
    return bytes(page)


def write(packets: int, text: str) -> bytes:
    """``packets`` silent 20 ms Opus packets in Ogg, ``text`` in the OpusTags comment."""
    head = b"OpusHead" + struct.pack("<BBHIhB", 1, 1, PRE_SKIP, 24000, 0, 0)
    tags = b"OpusTags" + comment(text)
    pages = [_page([head], 0, 0, 0x02), _page([tags], 0, 1, 0)]
    done = 0
    while done < packets:
        batch = min(255, packets - done)
        done += batch
        last = done == packets
        pages.append(_page([_PACKET] * batch, PRE_SKIP + done * PACKET_SAMPLES, len(pages), 0x04 if last else 0))
    return b"".join(pages)


def read(data: bytes) -> Heard:
    """An Ogg file's length (last granule / 48 kHz for Opus, less the pre-skip) and its comment."""
    pos, granule, pending = 0, 0, b""
    packets: list[bytes] = []
    while pos + 27 <= len(data) and data[pos : pos + 4] == b"OggS":
        count = data[pos + 26]
        lacing = data[pos + 27 : pos + 27 + count]
        body = pos + 27 + count
        end = body + sum(lacing)
        if end > len(data):
            raise UnreadableAudio("the Ogg file is cut short")
        granule = max(granule, struct.unpack_from("<q", data, pos + 6)[0])
        if len(packets) < 2:  # the header packets: read them whole
            offset = body
            for size in lacing:
                pending += data[offset : offset + size]
                offset += size
                if size < 255:
                    packets.append(pending)
                    pending = b""
        pos = end
    if not packets:
        raise UnreadableAudio("the file holds no Ogg pages")
    if not packets[0].startswith(b"OpusHead"):
        return Heard("ogg", None, None)
    pre_skip = struct.unpack_from("<H", packets[0], 10)[0] if len(packets[0]) >= 12 else 0
    text = read_comment(packets[1], 8) if len(packets) > 1 and packets[1].startswith(b"OpusTags") else None
    return Heard("ogg", max(0, granule - pre_skip) / 48000, text)
