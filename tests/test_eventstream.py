"""The AWS event-stream encoder and decoder (runtime/providers/eventstream.py): what it writes is what
botocore reads (both CRCs checked), and what it reads back is checked the same way."""

from __future__ import annotations

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer
from hypothesis import given
from hypothesis import strategies as st

from mockllm.runtime.providers.bedrock import eventstream

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20).filter(
    lambda s: len(s.encode()) < 256
)
values = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


@given(
    headers=st.lists(st.tuples(names, values), max_size=4, unique_by=lambda h: h[0]),
    payload=st.binary(max_size=300),
)
def test_botocore_reads_what_encode_writes(headers: list[tuple[str, str]], payload: bytes) -> None:
    data = eventstream.encode(headers, payload)
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    (message,) = list(buffer)
    assert message.headers == dict(headers)
    assert message.payload == payload
    assert eventstream.decode(data) == [eventstream.EventMessage(tuple(headers), payload)]


def test_event_and_exception_headers() -> None:
    data = eventstream.event("chunk", b"{}") + eventstream.exception("throttlingException", b'{"message":"x"}')
    event, error = eventstream.decode(data)
    assert event.header(":event-type") == "chunk" and event.header(":message-type") == "event"
    assert error.header(":exception-type") == "throttlingException" and error.header(":message-type") == "exception"
    assert error.header(":content-type") == "application/json"


@pytest.mark.parametrize(
    ("index", "problem"),
    [(5, "prelude CRC"), (20, "message CRC"), (-1, "message CRC")],
)
def test_a_flipped_byte_is_caught_by_both_readers(index: int, problem: str) -> None:
    data = bytearray(eventstream.event("messageStart", b'{"role":"assistant"}'))
    data[index] ^= 0x01
    with pytest.raises(eventstream.EventStreamError, match=problem):
        eventstream.decode(bytes(data))
    buffer = EventStreamBuffer()
    buffer.add_data(bytes(data))
    with pytest.raises(ChecksumMismatch):
        list(buffer)


def test_truncated_data_says_where() -> None:
    data = eventstream.event("a", b"x") * 2
    with pytest.raises(eventstream.EventStreamError, match="does not fit"):
        eventstream.decode(data[:-3])
    with pytest.raises(eventstream.EventStreamError, match="too few for a message prelude"):
        eventstream.decode(data + b"\x00\x00")
