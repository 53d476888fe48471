"""ID3v2.4 tags: the leading tag of mockllm's MP3 and AAC files, whose ``TXXX`` frame keyed
``MOCKLLM_TEXT`` carries the spoken text (``ffprobe`` shows it as ``tag:MOCKLLM_TEXT``)."""

from __future__ import annotations

KEY = "MOCKLLM_TEXT"


def _syncsafe(n: int) -> bytes:
    return bytes(((n >> 21) & 0x7F, (n >> 14) & 0x7F, (n >> 7) & 0x7F, n & 0x7F))


def _unsyncsafe(b: bytes) -> int:
    return (b[0] << 21) | (b[1] << 14) | (b[2] << 7) | b[3]


def tag(text: str) -> bytes:
    """An ID3v2.4 tag with one UTF-8 ``TXXX`` frame: ``MOCKLLM_TEXT`` = ``text``."""
    body = b"\x03" + KEY.encode() + b"\x00" + text.encode("utf-8")
    frame = b"TXXX" + _syncsafe(len(body)) + b"\x00\x00" + body
    return b"ID3\x04\x00\x00" + _syncsafe(len(frame)) + frame


def read(data: bytes) -> tuple[str | None, int]:
    """The ``MOCKLLM_TEXT`` of a leading ID3v2 tag (None without one), and where the bytes after the tag
    start (0 without one). Nothing is copied but the text: the MP3 and AAC readers look at the audio
    in place (copying a 5-second upload's audio out of it took a tenth of reading it)."""
    if not data.startswith(b"ID3") or len(data) < 10:
        return None, 0
    version, flags = data[3], data[5]
    end = 10 + _unsyncsafe(data[6:10]) + (10 if flags & 0x10 else 0)
    limit, text, pos = min(end, len(data)), None, 10
    while pos + 10 <= limit and data[pos] != 0:
        size = _unsyncsafe(data[pos + 4 : pos + 8]) if version >= 4 else int.from_bytes(data[pos + 4 : pos + 8], "big")
        body_end = min(pos + 10 + size, limit)
        if data.startswith(b"TXXX", pos) and pos + 10 < body_end and data[pos + 10] == 3:  # UTF-8 TXXX
            key, _, value = data[pos + 11 : body_end].partition(b"\x00")
            if key.decode("latin-1") == KEY:
                text = value.decode("utf-8", "replace")
        pos += 10 + size
    return text, end
