"""``multipart/form-data`` bodies, as OpenAI's upload routes take them (transcriptions, translations,
image edits and variations): the text fields and the files, read from the whole body already received.

A body the real API would not read (no boundary, no closing delimiter, a part without a name, more
parts than any SDK sends) raises :class:`ProviderError` 400 saying what is wrong. Lists arrive as
repeated parts named with brackets (``timestamp_granularities[]``), so every field maps to a list."""

from __future__ import annotations

import re

from mockllm.runtime.providers.base import ProviderError
from mockllm.runtime.values import fast_frozen

MAX_PARTS = 256
_BOUNDARY = re.compile(r'boundary=(?:"([^"]+)"|([^;\s]+))', re.I)
_PARAM = re.compile(r';\s*(name|filename)="((?:[^"\\]|\\.)*)"', re.I)


@fast_frozen
class UploadedFile:
    """One file part: its field name, the file name and content type the client gave, its bytes."""

    field: str
    filename: str
    content_type: str
    data: bytes


@fast_frozen
class Form:
    """A parsed multipart body: every text field's values in order, and the files."""

    fields: dict[str, list[str]]
    files: tuple[UploadedFile, ...]

    def value(self, name: str) -> str | None:
        """The last value of a text field, None when absent."""
        values = self.fields.get(name)
        return values[-1] if values else None

    def file(self, *names: str) -> UploadedFile | None:
        """The first file sent under one of ``names``."""
        for f in self.files:  # (a loop, not a generator: asked on every upload)
            if f.field in names:
                return f
        return None


def _bad(message: str) -> ProviderError:
    return ProviderError(400, message)


def parse_form(content_type: str, body: bytes) -> Form:
    """The fields and files of a ``multipart/form-data`` ``body``."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise _bad(
            f"Invalid Content-Type header ({content_type or 'none'}), expected multipart/form-data: "
            "this route takes an upload"
        )
    found = _BOUNDARY.search(content_type)
    if found is None:
        raise _bad("Could not parse multipart form: the Content-Type header has no boundary")
    delimiter = b"--" + (found.group(1) or found.group(2)).encode("latin-1")
    start = body.find(delimiter)
    if start < 0:
        raise _bad("Could not parse multipart form: the body holds no part")
    separator = b"\r\n" + delimiter
    fields: dict[str, list[str]] = {}
    files: list[UploadedFile] = []
    pos = start + len(delimiter)
    while not body.startswith(b"--", pos):  # (until the closing delimiter)
        if len(fields) + len(files) >= MAX_PARTS:
            raise _bad(f"Could not parse multipart form: more than {MAX_PARTS} parts")
        head_end = body.find(b"\r\n\r\n", pos)
        following = body.find(separator, head_end + 4) if head_end >= 0 else -1
        if head_end < 0 or following < 0:
            raise _bad("Could not parse multipart form: the body ends before its closing boundary")
        raw = body[pos:head_end]
        head = _HEADS.get(raw)
        if head is None:
            head = _part_head(raw)
        name, filename, content = head
        data = body[head_end + 4 : following]
        if filename is not None:
            files.append(UploadedFile(name, filename, content, data))
        else:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise _bad(f"Could not parse multipart form: the field {name!r} is not UTF-8 text") from None
            values = fields.get(name)
            if values is None:
                fields[name] = [text]
            else:
                values.append(text)
        pos = following + len(separator)
    return Form(fields, tuple(files))


#: the heads of parts seen (their bytes, from after the delimiter's CRLF to the blank line) -> what they
#: say: a client sends the same few heads again and again (``name="model"``, ``name="file";
#: filename="speech.mp3"``), and reading one (decoding, splitting its lines, the disposition's
#: parameters) took about half of a small form's parse: 10 µs for the bench's two-part upload before,
#: 4 µs with it. Bounded: heads beyond the first ``_HEADS_LIMIT``, or longer than ``_HEAD_BYTES``, are
#: read each time.
_HEADS: dict[bytes, tuple[str, str | None, str]] = {}
_HEADS_LIMIT = 1024
_HEAD_BYTES = 512


def _part_head(raw: bytes) -> tuple[str, str | None, str]:
    """A part's field name, its file name (None: a text field) and its content type, from its head;
    kept in :data:`_HEADS`. Raises the 400 of a part without a ``Content-Disposition`` name."""
    headers = _headers(raw.decode("utf-8", "replace"))
    disposition = headers.get("content-disposition", "")
    params = {k.lower(): v.replace('\\"', '"') for k, v in _PARAM.findall(disposition)}
    name = params.get("name")
    if not disposition.lower().startswith("form-data") or not name:
        raise _bad("Could not parse multipart form: a part has no Content-Disposition name")
    head = (name, params.get("filename"), headers.get("content-type", "application/octet-stream"))
    if len(_HEADS) < _HEADS_LIMIT and len(raw) <= _HEAD_BYTES:
        _HEADS[raw] = head
    return head


def _headers(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.strip("\r\n").split("\r\n"):
        name, sep, value = line.partition(":")
        if sep:
            out[name.strip().lower()] = value.strip()
    return out
