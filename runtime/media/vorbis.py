"""The Vorbis comment that carries mockllm's text in FLAC (a metadata block) and Ogg Opus (the
OpusTags packet): one writer and one reader, so both formats store and find the text alike."""

from __future__ import annotations

import struct

KEY = "MOCKLLM_TEXT"
_VENDOR = b"mockllm"


def comment(text: str) -> bytes:
    """A Vorbis comment with mockllm as vendor and one entry, ``MOCKLLM_TEXT=text``."""
    entry = f"{KEY}={text}".encode()
    return struct.pack("<I", len(_VENDOR)) + _VENDOR + struct.pack("<II", 1, len(entry)) + entry


def read_comment(data: bytes, start: int = 0) -> str | None:
    """The text of the ``MOCKLLM_TEXT`` entry of the comment at ``start`` in ``data``, or None."""
    try:
        (vendor,) = struct.unpack_from("<I", data, start)
        pos = start + 4 + vendor
        (count,) = struct.unpack_from("<I", data, pos)
        pos += 4
        for _ in range(count):
            (size,) = struct.unpack_from("<I", data, pos)
            key, _, value = data[pos + 4 : pos + 4 + size].partition(b"=")
            if key.decode("ascii", "replace").upper() == KEY:
                return value.decode("utf-8", "replace")
            pos += 4 + size
    except struct.error:
        return None
    return None
