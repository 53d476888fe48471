"""PNG written with ``zlib`` alone (8-bit RGB, no filtering), and the reader of a PNG's size."""

from __future__ import annotations

import struct
import zlib


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


SIGNATURE = b"\x89PNG\r\n\x1a\n"


def write(rows: list[bytes], width: int) -> bytes:
    """A PNG of ``rows`` (each ``width`` RGB pixels, 3 bytes each)."""
    head = struct.pack(">IIBBBBB", width, len(rows), 8, 2, 0, 0, 0)
    raw = b"\x00" + b"\x00".join(rows)  # filter type 0 before each row
    return SIGNATURE + _chunk(b"IHDR", head) + _chunk(b"IDAT", zlib.compress(raw, 1)) + _chunk(b"IEND", b"")


def size(data: bytes) -> tuple[int, int] | None:
    """A PNG's width and height, None when ``data`` is no PNG."""
    if not data.startswith(SIGNATURE) or data[12:16] != b"IHDR" or len(data) < 24:
        return None
    width, height = struct.unpack_from(">II", data, 16)
    return width, height
