"""Formatting as text edits: ``mockllm fmt``'s canonical text, as the few line replacements that
turn the document into it (an editor keeps the cursor and folds where nothing changed).

Range formatting applies the replacements that touch the range; the rest of the file stays as is.
"""

from __future__ import annotations

import difflib

import attrs

from mockllm.dsl.format.formatter import reformat
from mockllm.lsp.document import Document, Position, Range


@attrs.frozen
class Edit:
    range: Range
    new_text: str


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def format_edits(doc: Document, within: Range | None = None) -> list[Edit] | None:
    """The edits that make the document what ``mockllm fmt`` would write; None when fmt would leave
    it alone (syntax errors, which the diagnostics show, or an unsafe layout)."""
    result = reformat(doc.text, doc.name)
    if result.text is None:
        return None
    old, new = _lines(doc.text), _lines(result.text)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if within is not None:
            before = i2 <= within.start.line if i2 > i1 else i1 < within.start.line
            if before or i1 > within.end.line:
                continue
        edits.append(Edit(_line_range(old, i1, i2), "".join(new[j1:j2])))
    return edits


def _line_range(old: list[str], i1: int, i2: int) -> Range:
    """Lines ``i1`` up to ``i2`` (exclusive) of the old text as a range; past a last line without a
    newline, the range ends at that line's end."""
    if i2 < len(old) or (old and old[-1].endswith("\n")) or not old:
        return Range(Position(i1, 0), Position(i2, 0))
    last = old[-1]
    end = Position(len(old) - 1, len(last))
    if i1 == len(old):
        return Range(end, end)
    return Range(Position(i1, 0), end)
