"""The ``multipart/form-data`` reader of the upload routes (runtime/providers/multipart.py): fields and
files as the SDKs send them, read the same from the kept part heads as the first time, and every
broken body refused with a 400 saying what is wrong, every time."""

from __future__ import annotations

import pytest

from mockllm.runtime.providers import multipart
from mockllm.runtime.providers.base import ProviderError
from mockllm.runtime.providers.multipart import UploadedFile, parse_form

TYPE = "multipart/form-data; boundary=xyz"


def _form(*parts: bytes) -> bytes:
    return b"".join(b"--xyz\r\n" + p + b"\r\n" for p in parts) + b"--xyz--\r\n"


BODY = _form(
    b'Content-Disposition: form-data; name="model"\r\n\r\nwhisper-1',
    b'Content-Disposition: form-data; name="timestamp_granularities[]"\r\n\r\nword',
    b'Content-Disposition: form-data; name="timestamp_granularities[]"\r\n\r\nsegment',
    b'content-disposition: form-data; name="file"; filename="say \\"hi\\".mp3"\r\n'
    b"Content-Type: audio/mpeg\r\n\r\nID3\x00\r\n--xy\x00",
    b'Content-Disposition: form-data; name="image"; filename="a.png"\r\n\r\n\x89PNG',
)


def test_fields_and_files_read_the_same_the_first_time_and_from_the_kept_heads() -> None:
    """Repeated fields keep their order; a file keeps its name (quotes unescaped), type and bytes (a
    boundary-like line inside it included); a file without a type is application/octet-stream."""
    for _ in range(2):  # the second parse reads the part heads kept from the first
        form = parse_form(TYPE, BODY)
        assert form.fields == {"model": ["whisper-1"], "timestamp_granularities[]": ["word", "segment"]}
        assert form.files == (
            UploadedFile("file", 'say "hi".mp3', "audio/mpeg", b"ID3\x00\r\n--xy\x00"),
            UploadedFile("image", "a.png", "application/octet-stream", b"\x89PNG"),
        )
        assert form.value("model") == "whisper-1" and form.file("image", "file") == form.files[0]


def test_a_long_part_head_is_read_each_time_and_not_kept() -> None:
    """A head longer than the kept ones may be is read as well, and not kept."""
    name = "n" * multipart._HEAD_BYTES
    body = _form(f'Content-Disposition: form-data; name="{name}"\r\n\r\nv'.encode())
    for _ in range(2):
        assert parse_form(TYPE, body).fields == {name: ["v"]}
    assert not any(name in head[0] for head in multipart._HEADS.values())


@pytest.mark.parametrize(
    ("content_type", "body", "says"),
    [
        ("application/json", BODY, "expected multipart/form-data"),
        ("multipart/form-data", BODY, "has no boundary"),
        (TYPE, b"nothing here", "holds no part"),
        (TYPE, b'--xyz\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1', "closing boundary"),
        (TYPE, _form(b"Content-Disposition: form-data\r\n\r\nv"), "no Content-Disposition name"),
        (TYPE, _form(b'Content-Disposition: attachment; name="a"\r\n\r\nv'), "no Content-Disposition name"),
        (TYPE, _form(b'Content-Disposition: form-data; name="a"\r\n\r\n\xff'), "'a' is not UTF-8 text"),
        (
            TYPE,
            _form(*(f'Content-Disposition: form-data; name="f{i}"\r\n\r\nv'.encode() for i in range(257))),
            "more than 256 parts",
        ),
    ],
)
def test_a_broken_form_is_refused_every_time(content_type: str, body: bytes, says: str) -> None:
    """400 with the reason, the second time too (a refused head is never kept as if it were read)."""
    for _ in range(2):
        with pytest.raises(ProviderError, match=says) as caught:
            parse_form(content_type, body)
        assert caught.value.status == 400
