"""Lone surrogates in JSON text: where they are, and the text with each one replaced.

JSON text may spell half of a UTF-16 surrogate pair on its own (``"\\ud800"``), and Python's decoder
turns it into a string that cannot be encoded as UTF-8: every later write of that string (a reply, a
model listing, the journal, a diagnostic) would fail. Readers of JSON text therefore decide up front:
reject the text, as OpenAI's and Anthropic's strict parsers do (``no low surrogate in string``), or
replace each lone half with U+FFFD, as Go's decoder (Ollama) and Google's APIs do. Raw surrogates
cannot appear in text decoded strictly from UTF-8, so the escapes are the only way in."""

from __future__ import annotations

import re

import attrs

_ESCAPE = re.compile(r"(\\+)u([dD][89a-fA-F][0-9a-fA-F]{2})")
_LOW_NEXT = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")
REPLACEMENT_ESCAPE = "\\ufffd"


@attrs.frozen
class LoneSurrogate:
    """A ``\\uXXXX`` escape naming half a surrogate pair, at ``offset`` (line and column from 1)."""

    escape: str
    offset: int
    line: int
    column: int

    def describe(self) -> str:
        half = "high (leading)" if int(self.escape[2:], 16) < 0xDC00 else "low (trailing)"
        return f"lone {half} surrogate {self.escape} at line {self.line} column {self.column}"


def _lone_offsets(text: str) -> list[tuple[int, int]]:
    """(start, end) of every lone surrogate escape, in order. Cheap when the text has no ``\\uD8…``."""
    if "\\u" not in text:
        return []
    out: list[tuple[int, int]] = []
    paired_low = -1  # the offset of a low half already taken by the high half before it
    for m in _ESCAPE.finditer(text):
        if len(m.group(1)) % 2 == 0:
            continue  # an escaped backslash followed by the letters `u d 8 0 0`
        start = m.end() - 6
        if start == paired_low:
            continue
        code = int(m.group(2), 16)
        if code < 0xDC00 and _LOW_NEXT.match(text, m.end()):
            paired_low = m.end()
            continue
        out.append((start, m.end()))
    return out


def lone_surrogate(text: str) -> LoneSurrogate | None:
    """The first lone surrogate escape in JSON ``text``, or None."""
    found = _lone_offsets(text)
    if not found:
        return None
    start, end = found[0]
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    return LoneSurrogate(text[start:end], start, line, column)


def replace_lone_surrogates(text: str) -> str:
    """``text`` with every lone surrogate escape replaced by ``\\ufffd`` (U+FFFD once decoded)."""
    found = _lone_offsets(text)
    if not found:
        return text
    parts: list[str] = []
    at = 0
    for start, end in found:
        parts += [text[at:start], REPLACEMENT_ESCAPE]
        at = end
    parts.append(text[at:])
    return "".join(parts)
