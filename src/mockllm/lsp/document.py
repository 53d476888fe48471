"""One open document, analysed as ``mockllm check`` would analyse the file, in editor coordinates.

The editor holds text that may not be saved yet. :func:`analyse` loads that text as the file at its
path (imports resolve against the file's folder and are read from disk), runs the same checks as
``mockllm check`` and keeps the library, so completion, hover and go-to-definition can look at
imported files too. Positions here are the editor's: 0-based lines and characters, end exclusive.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from mockllm.dsl.check.checks import check
from mockllm.dsl.diagnostics import Diagnostic, sort_key
from mockllm.dsl.parse.loader import Library, display_name, load_text
from mockllm.dsl.span import Span
from mockllm.dsl.tree.nodes import ScriptFile


@attrs.frozen(order=True)
class Position:
    line: int
    character: int


@attrs.frozen
class Range:
    start: Position
    end: Position

    @classmethod
    def of(cls, line: int, start: int, end: int | None = None) -> Range:
        return cls(Position(line, start), Position(line, start if end is None else end))

    def contains(self, pos: Position) -> bool:
        return self.start <= pos <= self.end


@attrs.frozen
class Location:
    path: str  # absolute
    range: Range


def span_range(span: Span) -> Range:
    """A span (1-based, end exclusive) in editor coordinates; a whole-file span is the file's start."""
    if span.line < 1:
        return Range.of(0, 0)
    end = Position(max(span.end_line, span.line) - 1, max(span.end_column, 1) - 1)
    start = Position(span.line - 1, span.column - 1)
    return Range(start, max(start, end))


def span_path(span: Span) -> str:
    """The absolute path a span's file name stands for (names are relative to the working directory)."""
    return os.path.abspath(span.file)


@attrs.frozen
class Document:
    path: str  # absolute
    text: str
    name: str  # the file's name in spans: what `mockllm check` calls it
    library: Library
    diagnostics: tuple[Diagnostic, ...]

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")

    @property
    def tree(self) -> ScriptFile | None:
        return self.library.file(self.name)

    @property
    def folder(self) -> str:
        return os.path.dirname(self.path)

    def imports(self) -> Mapping[str, str]:
        """This file's import aliases → the imported file's name in spans."""
        return self.library.aliases.get(self.name, {})


def analyse(path: str, text: str) -> Document:
    """Load ``text`` as the file at ``path`` and check it (with its imports) as ``mockllm check`` does."""
    path = os.path.abspath(path)
    name = display_name(path)
    library = load_text(text, name, base_dir=os.path.dirname(path), path=path)
    diagnostics = sorted([*library.diagnostics, *check(library)], key=sort_key)
    return Document(path, text, name, library, tuple(diagnostics))


@attrs.frozen
class Related:
    location: Location
    message: str


@attrs.frozen
class Problem:
    """A diagnostic as the editor shows it on this document."""

    range: Range
    severity: str  # "error" | "warning"
    code: str
    message: str
    related: tuple[Related, ...] = ()


def _import_lines(doc: Document) -> dict[str, int]:
    """Each file this document brings in (directly or through other imports) → the 0-based line of
    the document's `use` that brings it."""
    tree = doc.tree
    if tree is None:
        return {}
    graph = doc.library.aliases
    out: dict[str, int] = {}
    for use in tree.uses:
        target = doc.imports().get(use.alias)
        if target is None or use.span.line < 1:
            continue
        todo = [target]
        while todo:
            name = todo.pop()
            if name in out:
                continue
            out[name] = use.span.line - 1
            todo.extend(graph.get(name, {}).values())
    return out


def _message(d: Diagnostic) -> str:
    return f"{d.message}\nhint: {d.hint}" if d.hint else d.message


def problems(doc: Document) -> list[Problem]:
    """The document's diagnostics, in its coordinates. A problem inside an imported file shows on the
    `use` line that brings the file in, with the problem's own place as related information."""
    lines = doc.lines
    imported = _import_lines(doc)
    out: list[Problem] = []
    for d in doc.diagnostics:
        related = tuple(
            Related(Location(span_path(r.span), span_range(r.span)), r.message) for r in d.related if r.span.line > 0
        )
        if d.span.file == doc.name:
            out.append(Problem(span_range(d.span), d.severity, d.code, _message(d), related))
            continue
        line = imported.get(d.span.file)
        if line is None:
            line = min(imported.values(), default=0)
        width = len(lines[line]) if line < len(lines) else 0
        here = Related(Location(span_path(d.span), span_range(d.span)), d.message)
        message = f"in {d.span.location() if d.span.line > 0 else d.span.file}: {_message(d)}"
        out.append(Problem(Range.of(line, 0, width), d.severity, d.code, message, (here, *related)))
    return out
