"""Where the comments of a `.mockllm` file are, and where its statements start.

The parser drops comments (they travel inside the newline tokens), so the formatter, which puts them
back, scans the source for them. The scan uses the grammar's own terminals: a ``#`` outside a string,
a triple-quoted string or a regex (JSON strings are strings) starts a comment that runs to the end of
the line. It also records each *logical line*: a statement's first token with the lines it runs over
(a JSON object may span lines while a bracket is open, a triple-quoted string may span lines).

Scanning never fails; on a file that does not parse the result is only as good as the file."""

from __future__ import annotations

import functools
import re

import attrs

__all__ = ["Comment", "LogicalLine", "SourceLayout", "comment_fragments", "scan"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@attrs.frozen
class Comment:
    line: int
    column: int
    #: From the ``#`` to the end of the line, trailing spaces removed.
    text: str
    #: Nothing but spaces before it on its line (else it ends a line of code).
    own_line: bool


@attrs.frozen
class LogicalLine:
    """A statement line: where its first token is, the line of its last token, its first word."""

    line: int
    column: int
    end_line: int
    word: str


@attrs.frozen
class SourceLayout:
    comments: tuple[Comment, ...]
    lines: tuple[LogicalLine, ...]
    #: Numbers of the lines holding nothing but spaces.
    blank: frozenset[int]


@functools.cache
def _token_re() -> re.Pattern[str]:
    from mockllm.dsl.parse.parser import build_parser

    terminals = {t.name: t.pattern.to_regexp() for t in build_parser().terminals}
    return re.compile(
        "|".join(
            [
                f"(?P<code>{terminals['LONG_STRING']}|{terminals['STRING']}|{terminals['REGEX']})",
                r"(?P<comment>#[^\n]*)",  # the grammar's COMMENT (it only lives inside _NL there)
                r"(?P<nl>\n)",
                r"(?P<ws>[ \t\r\f\v]+)",
                r"(?P<open>[{\[])",
                r"(?P<close>[}\]])",
                r'(?P<word>[^\s"#/{}\[\]]+)',
                r"(?P<other>.)",
            ]
        )
    )


def scan(text: str) -> SourceLayout:
    """The comments and logical lines of ``text`` (lines and columns as the parser counts them)."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    comments: list[Comment] = []
    lines: list[LogicalLine] = []
    line = 1
    line_start = 0
    depth = 0  # open { and [
    last_code_line = 0  # the line the last token of code ended on
    for m in _token_re().finditer(text):
        kind = m.lastgroup
        if kind == "nl":
            line += 1
            line_start = m.end()
            continue
        if kind == "ws":
            continue
        column = m.start() - line_start + 1
        value = m.group()
        if kind == "comment":
            comments.append(Comment(line, column, value.rstrip(), own_line=last_code_line < line))
            continue
        if depth == 0 and last_code_line < line:
            word = _WORD.match(value)
            lines.append(LogicalLine(line, column, line, word.group() if word else value[:1]))
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(0, depth - 1)
        if "\n" in value:
            line += value.count("\n")
            line_start = m.start() + value.rindex("\n") + 1
        last_code_line = line
        if lines and lines[-1].end_line != line:
            lines[-1] = attrs.evolve(lines[-1], end_line=line)
    blank = frozenset(i for i, row in enumerate(text.split("\n"), start=1) if not row.strip())
    return SourceLayout(tuple(comments), tuple(lines), blank)


def comment_fragments(text: str) -> list[str]:
    """Every comment of ``text``, sorted, a comment holding ``  #`` counted as its parts (the formatter
    joins the comments it moves to the end of one line that way). Equal for a file and its
    formatted text when the formatter kept every comment."""
    out: list[str] = []
    for c in scan(text).comments:
        out.extend(part.strip() for part in re.split(r"\s+(?=#)", c.text) if part.strip())
    return sorted(out)
