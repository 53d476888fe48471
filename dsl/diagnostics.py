"""Diagnostics as data, and the one renderer that turns them into text or JSON.

Every problem the language layer finds -- a syntax error, a semantic error, a warning about a
replaced scenario -- is a :class:`Diagnostic`. Nothing in ``mockllm.dsl`` prints or raises for a
user's mistake: functions return diagnostics, and :func:`render` / :func:`render_json` present them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

from mockllm.dsl.span import Span

Severity = Literal["error", "warning"]


@attrs.frozen
class Related:
    """Another location that explains a diagnostic (the earlier definition, a file in a chain)."""

    span: Span
    message: str


@attrs.frozen
class Diagnostic:
    severity: Severity
    code: str  # stable machine-readable kind, e.g. "syntax", "unknown-step", "duplicate-name"
    message: str
    span: Span
    hint: str | None = None
    related: tuple[Related, ...] = ()

    @property
    def is_error(self) -> bool:
        return self.severity == "error"


def error(code: str, message: str, span: Span, hint: str | None = None, related: Iterable[Related] = ()) -> Diagnostic:
    return Diagnostic("error", code, message, span, hint, tuple(related))


def warning(
    code: str, message: str, span: Span, hint: str | None = None, related: Iterable[Related] = ()
) -> Diagnostic:
    return Diagnostic("warning", code, message, span, hint, tuple(related))


def sort_key(d: Diagnostic) -> tuple[str, int, int, str]:
    return (d.span.file, d.span.line, d.span.column, d.message)


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diagnostics)


def _source_line(sources: Mapping[str, str], span: Span) -> str | None:
    text = sources.get(span.file)
    if text is None or span.line < 1:
        return None
    lines = text.splitlines()
    if span.line > len(lines):
        return None
    return lines[span.line - 1]


def render_one(d: Diagnostic, sources: Mapping[str, str]) -> str:
    """Hurl/rustc style::

    error: unknown subject 'modle'
      --> weather.mockllm:12:13
       |
    12 |             modle is "gpt-4o"
       |             ^^^^^
       = hint: did you mean 'model'?
    """
    out = [f"{d.severity}: {d.message}"]
    span = d.span
    if span.line > 0:
        out.append(f"  --> {span.location()}")
        line = _source_line(sources, span)
        if line is not None:
            num = str(span.line)
            pad = " " * len(num)
            shown = line.replace("\t", " ")
            width = 1
            if span.end_line == span.line and span.end_column > span.column:
                width = span.end_column - span.column
            width = max(1, min(width, max(1, len(shown) - span.column + 1)))
            out.append(f" {pad} |")
            out.append(f" {num} | {shown}")
            out.append(f" {pad} | {' ' * (span.column - 1)}{'^' * width}")
    else:
        out.append(f"  --> {span.file}")
    for rel in d.related:
        where = rel.span.location() if rel.span.line > 0 else rel.span.file
        out.append(f"   = note: {rel.message} ({where})")
    if d.hint:
        out.append(f"   = hint: {d.hint}")
    return "\n".join(out)


def render(diagnostics: Iterable[Diagnostic], sources: Mapping[str, str] | None = None) -> str:
    """All diagnostics, sorted by position, separated by blank lines."""
    srcs = sources or {}
    return "\n\n".join(render_one(d, srcs) for d in sorted(diagnostics, key=sort_key))


def summary(diagnostics: Sequence[Diagnostic], files: int) -> str:
    errors = sum(1 for d in diagnostics if d.is_error)
    warnings = len(diagnostics) - errors
    noun = "file" if files == 1 else "files"
    if errors == 0 and warnings == 0:
        return f"ok: {files} {noun} checked, no problems"
    parts = []
    if errors:
        parts.append(f"{errors} error" + ("s" if errors != 1 else ""))
    if warnings:
        parts.append(f"{warnings} warning" + ("s" if warnings != 1 else ""))
    return f"{'failed' if errors else 'ok'}: {files} {noun} checked, " + ", ".join(parts)


def to_json(d: Diagnostic) -> dict[str, Any]:
    def span(s: Span) -> dict[str, Any]:
        return attrs.asdict(s)

    return {
        "severity": d.severity,
        "code": d.code,
        "message": d.message,
        "span": span(d.span),
        "hint": d.hint,
        "related": [{"message": r.message, "span": span(r.span)} for r in d.related],
    }


def render_json(diagnostics: Iterable[Diagnostic]) -> str:
    return json.dumps([to_json(d) for d in sorted(diagnostics, key=sort_key)], indent=2, ensure_ascii=False)
