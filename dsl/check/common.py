"""What every semantic check shares: pointing inside a span (:class:`Locator`), collecting
diagnostics (:class:`Reporter`) and the wording helpers for hints."""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TypeVar

from mockllm.dsl.diagnostics import Diagnostic, Related, error, warning
from mockllm.dsl.parse.loader import Library
from mockllm.dsl.span import Span

T = TypeVar("T")


class Locator:
    def __init__(self, sources: Mapping[str, str]):
        self._sources = sources
        self._starts: dict[str, list[int]] = {}

    def _line_starts(self, file: str) -> list[int] | None:
        if file not in self._starts:
            text = self._sources.get(file)
            if text is None:
                return None
            starts = [0]
            for i, ch in enumerate(text):
                if ch == "\n":
                    starts.append(i + 1)
            self._starts[file] = starts
        return self._starts[file]

    def _offset(self, file: str, line: int, column: int) -> int | None:
        starts = self._line_starts(file)
        if starts is None or line < 1 or line > len(starts):
            return None
        return starts[line - 1] + column - 1

    def _position(self, file: str, offset: int) -> tuple[int, int]:
        starts = self._line_starts(file) or [0]
        line = bisect.bisect_right(starts, offset)
        return line, offset - starts[line - 1] + 1

    def region(self, span: Span, first_line: bool = False) -> tuple[str, int] | None:
        """The source text a span covers and its start offset."""
        text = self._sources.get(span.file)
        if text is None or span.line < 1:
            return None
        start = self._offset(span.file, span.line, span.column)
        if start is None:
            return None
        end: int | None
        if first_line or span.end_line < span.line:
            nl = text.find("\n", start)
            end = len(text) if nl < 0 else nl
        else:
            end = self._offset(span.file, span.end_line, span.end_column)
            if end is None or end < start:
                end = len(text)
        if first_line:
            real_end = self._offset(span.file, span.end_line, span.end_column)
            if real_end is not None and real_end >= start:
                end = min(end, real_end)
        return text[start:end], start

    def find(
        self,
        span: Span,
        needle: str,
        *,
        skip: int = 0,
        nth: int = 0,
        last: bool = False,
        first_line: bool = False,
    ) -> Span | None:
        """The span of the ``nth`` occurrence of ``needle`` inside ``span`` (after ``skip`` characters),
        or the last one; None when it is not found or the source is unknown."""
        found = self.region(span, first_line)
        if found is None or not needle:
            return None
        text, base = found
        if last:
            at = text.rfind(needle, skip)
        else:
            at = skip - 1
            for _ in range(nth + 1):
                at = text.find(needle, at + 1)
                if at < 0:
                    break
        if at < 0:
            return None
        return self.span_at(span.file, base + at, len(needle))

    def span_at(self, file: str, offset: int, width: int) -> Span:
        line, col = self._position(file, offset)
        end_line, end_col = self._position(file, offset + width)
        return Span(file, line, col, end_line, end_col)

    def narrow(self, span: Span, needle: str, *, skip: int = 0, last: bool = False) -> Span:
        """The first (or last) ``needle`` on the span's first line, falling back to ``span`` itself."""
        found = self.find(span, needle, skip=skip, last=last, first_line=True)
        return found if found is not None else span


class Reporter:
    """The library being checked, a :class:`Locator` over its sources, and the diagnostics so far."""

    def __init__(self, library: Library):
        self.library = library
        self.loc = Locator(library.sources)
        self.out: list[Diagnostic] = []
        self.loaded = {f.path for f in library.files}

    def at(self, span: Span, file: str) -> Span:
        """``span``, or the start of ``file`` for a node with no position (built in Python)."""
        return span if span.line > 0 else Span(file, 0, 0, 0, 0)

    def err(
        self, code: str, message: str, span: Span, hint: str | None = None, related: Iterable[Related] = ()
    ) -> None:
        self.out.append(error(code, message, span, hint, related))

    def warn(
        self, code: str, message: str, span: Span, hint: str | None = None, related: Iterable[Related] = ()
    ) -> None:
        self.out.append(warning(code, message, span, hint, related))

    def name_span(self, span: Span, name: str, file: str, skip: int = 0, last: bool = False) -> Span:
        return self.at(self.loc.narrow(span, name, skip=skip, last=last), file)

    def duplicate(self, message: str, span: Span, first: Span, file: str, hint: str, first_label: str) -> None:
        """A ``duplicate-name`` error at ``span``, pointing back at the ``first`` definition."""
        self.err(
            "duplicate-name",
            message + line_of(first),
            span,
            hint=hint,
            related=[Related(self.at(first, file), first_label)],
        )


def line_of(span: Span) -> str:
    return f" on line {span.line}" if span.line > 0 else ""


def repeats(items: Iterable[T], name: Callable[[T], str]) -> Iterator[tuple[T, T]]:
    """Each item whose name an earlier item already has, with that first item."""
    first: dict[str, T] = {}
    for item in items:
        key = name(item)
        if key in first:
            yield item, first[key]
        else:
            first[key] = item


def did_you_mean(word: str, candidates: Iterable[str], wrap: str = "`{}`") -> str | None:
    close = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"did you mean {wrap.format(close[0])}?" if close else None


def word_list(words: Sequence[str], conjunction: str = "or") -> str:
    quoted = [f"`{w}`" for w in words]
    if len(quoted) == 1:
        return quoted[0]
    return ", ".join(quoted[:-1]) + f" {conjunction} " + quoted[-1]
