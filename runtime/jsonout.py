"""Compact JSON text (``separators=(",", ":")``, non-ASCII kept, what the real APIs send), written by
``json``'s C encoder called directly.

``json.JSONEncoder.encode`` builds a new C encoder, and a closure, on every call: on CPython 3.11
about a microsecond a call, as much as encoding a whole small reply, paid for every reply body,
every streamed chunk and every journal entry. The encoder :func:`compact_encoder` returns is built
once and reused. It writes byte for byte what ``JSONEncoder(ensure_ascii=False, separators=(",",
":"), default=default).encode`` writes; the one difference is that a value holding itself raises
``RecursionError`` instead of ``ValueError`` (nothing the server encodes refers to itself: its
values come from parsed JSON, scripts and its own records)."""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring  # json's own, in C
from typing import Any


def compact_encoder(default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """A function writing a value as compact JSON text; ``default`` turns what JSON has no type for
    into what it has (as ``JSONEncoder``'s ``default``: by default such a value raises ``TypeError``)."""
    encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=default)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # a Python without json's C speedups
        return encoder.encode
    # the arguments JSONEncoder.iterencode passes, without the markers of its circular check
    chunks = make(None, encoder.default, encode_basestring, None, ":", ",", False, False, True)

    def encode(value: Any) -> str:
        if type(value) is str:
            return encode_basestring(value)
        return "".join(chunks(value, 0))

    return encode


__all__ = ["compact_encoder"]
