"""AWS event-stream binary framing (``application/vnd.amazon.eventstream``), as Bedrock streams it.

One message is::

    total length (uint32) | headers length (uint32) | prelude CRC32 (uint32, of the 8 bytes before it)
    headers | payload | message CRC32 (uint32, of every byte before it)

all big-endian. A header is ``name length (uint8) | name | value type (uint8) | value``; Bedrock
sends only string headers (type 7: ``length (uint16) | UTF-8``). botocore checks both CRCs and the
lengths, so every message here is built whole by :func:`encode` and read back by :func:`decode`
(for recordings and tests), which checks the same things and says what is wrong."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence

from mockllm.errors import MockllmError
from mockllm.runtime.values import fast_frozen

MEDIA_TYPE = "application/vnd.amazon.eventstream"

_PRELUDE = struct.Struct(">III")
_UINT32 = struct.Struct(">I")
_STRING = 7  # the header value type of a UTF-8 string


class EventStreamError(MockllmError):
    """Bytes that are not a well-formed event-stream message."""


@fast_frozen
class EventMessage:
    headers: tuple[tuple[str, str], ...]
    payload: bytes

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key == name), None)


def _crc(data: bytes, start: int = 0) -> int:
    return zlib.crc32(data, start) & 0xFFFFFFFF


def encode(headers: Sequence[tuple[str, str]], payload: bytes) -> bytes:
    """One message: ``headers`` (string values) and ``payload``, with both CRCs."""
    head = bytearray()
    for name, value in headers:
        raw_name = name.encode("utf-8")
        raw_value = value.encode("utf-8")
        head += bytes((len(raw_name),)) + raw_name + bytes((_STRING,)) + struct.pack(">H", len(raw_value)) + raw_value
    total = _PRELUDE.size + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += _UINT32.pack(_crc(prelude))
    body = prelude + bytes(head) + payload
    return body + _UINT32.pack(_crc(body))


def event(event_type: str, payload: bytes, content_type: str = "application/json") -> bytes:
    """An ``event`` message (``:event-type`` names the member of the stream's union)."""
    return encode(((":event-type", event_type), (":content-type", content_type), (":message-type", "event")), payload)


def exception(exception_type: str, payload: bytes, content_type: str = "application/json") -> bytes:
    """An ``exception`` message (``:exception-type`` names the modelled exception, e.g.
    ``modelStreamErrorException``): botocore raises it as ``EventStreamError``."""
    return encode(
        ((":exception-type", exception_type), (":content-type", content_type), (":message-type", "exception")),
        payload,
    )


def _headers(data: bytes) -> Iterator[tuple[str, str]]:
    at = 0
    while at < len(data):
        size = data[at]
        name = data[at + 1 : at + 1 + size].decode("utf-8")
        at += 1 + size
        if at >= len(data) or data[at] != _STRING:
            raise EventStreamError(f"header {name!r}: only string values are supported")
        (length,) = struct.unpack_from(">H", data, at + 1)
        yield name, data[at + 3 : at + 3 + length].decode("utf-8")
        at += 3 + length


def decode(data: bytes) -> list[EventMessage]:
    """Every message in ``data`` (a whole response body), CRCs and lengths checked."""
    out: list[EventMessage] = []
    at = 0
    while at < len(data):
        if len(data) - at < _PRELUDE.size:
            raise EventStreamError(f"byte {at}: {len(data) - at} bytes left, too few for a message prelude")
        total, head_size, prelude_crc = _PRELUDE.unpack_from(data, at)
        if _crc(data[at : at + 8]) != prelude_crc:
            raise EventStreamError(f"byte {at}: the prelude CRC does not match")
        if total < _PRELUDE.size + head_size + 4 or at + total > len(data):
            raise EventStreamError(f"byte {at}: a message length of {total} does not fit the data")
        message = data[at : at + total]
        (message_crc,) = _UINT32.unpack_from(message, total - 4)
        if _crc(message[:-4]) != message_crc:
            raise EventStreamError(f"byte {at}: the message CRC does not match")
        try:
            headers = tuple(_headers(message[_PRELUDE.size : _PRELUDE.size + head_size]))
        except (IndexError, struct.error, UnicodeDecodeError) as e:
            raise EventStreamError(f"byte {at}: the headers are malformed ({e})") from None
        out.append(EventMessage(headers, message[_PRELUDE.size + head_size : -4]))
        at += total
    return out


__all__ = ["MEDIA_TYPE", "EventMessage", "EventStreamError", "decode", "encode", "event", "exception"]
