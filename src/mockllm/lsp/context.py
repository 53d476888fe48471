"""Where a position stands in a script, read from the text's indentation alone.

While a user types, the script is usually broken, so the editor features do not wait for a parse:
the block a line belongs to is the nearest line above it that is less indented and ends with ``:``
(the language is indentation-structured), and the words of a line are read with the language's own
string and regex shapes. Pure functions over lists of lines.
"""

from __future__ import annotations

import re

import attrs

from mockllm.dsl.tree.reference import Place

#: A word of a line, a quoted string or a regex, as the lexer of the language sees them.
TOKEN = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*(?:"""|$)|"(?:[^"\\\n]|\\.)*"?|/(?:[^/\\\n]|\\.)*/[A-Za-z]*|[A-Za-z_][A-Za-z0-9_.-]*|\S'
)
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@attrs.frozen
class Word:
    text: str
    start: int
    end: int


def code(line: str) -> str:
    """The line without its comment (a ``#`` outside strings)."""
    for m in TOKEN.finditer(line):
        if m[0] == "#":
            return line[: m.start()]
    return line


def words(line: str) -> list[Word]:
    """The tokens of a line's code: names (dotted, `alias.name`), strings, regexes, punctuation."""
    return [Word(m[0], m.start(), m.end()) for m in TOKEN.finditer(code(line))]


def indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


@attrs.frozen
class Header:
    """A line that opens a block: its 0-based line number, indentation and words."""

    line: int
    indent: int
    words: tuple[str, ...]

    @property
    def keyword(self) -> str:
        return self.words[0] if self.words else ""


def enclosing(lines: list[str], row: int, column: int | None = None) -> list[Header]:
    """The blocks that hold a line at ``row`` indented to ``column`` (default: the line's own
    indentation), outermost first."""
    limit = indent(lines[row]) if column is None and row < len(lines) else (column or 0)
    out: list[Header] = []
    for i in range(min(row, len(lines)) - 1, -1, -1):
        if limit <= 0:
            break
        text = code(lines[i]).rstrip()
        if not text.strip():
            continue
        ind = indent(text)
        if ind >= limit:
            continue
        limit = ind
        if text.endswith(":"):
            out.append(Header(i, ind, tuple(w.text for w in words(text))))
    out.reverse()
    return out


def place(headers: list[Header]) -> Place | None:
    """What a line inside these blocks may hold (None: nothing the reference offers, e.g. `chunks:`)."""
    if not headers:
        return "top"
    kw = headers[-1].keyword
    if kw == "scenario":
        return "scenario"
    if kw == "step":
        return "step"
    if kw in ("when", "expect"):
        return "condition"
    if kw in ("reply", "fallback"):
        return "reply"
    if kw == "defaults":
        return "defaults"
    if kw == "mcp":
        return "mcp_server"
    if kw == "tool":
        return "mcp_tool"
    if kw == "resource":
        return "mcp_resource"
    if kw == "prompt":
        return "mcp_prompt"
    return None


def scenario_of(lines: list[str], row: int) -> Header | None:
    """The `scenario` block holding ``row`` (or whose header it is)."""
    for h in [*enclosing(lines, row), *enclosing(lines, row + 1, 1)]:
        if h.keyword == "scenario":
            return h
    return None


def block_end(lines: list[str], header: Header) -> int:
    """The 0-based line after the last line of ``header``'s block."""
    for i in range(header.line + 1, len(lines)):
        text = code(lines[i])
        if text.strip() and indent(text) <= header.indent:
            return i
    return len(lines)


STEP_LINE = re.compile(r"^[ \t]*step[ \t]+([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:")
NAMED_REPLY_LINE = re.compile(r"^reply[ \t]+([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:")


def steps_in(lines: list[str], scenario: Header) -> list[tuple[str, int, int]]:
    """The steps of a scenario block: (name, 0-based line, column of the name)."""
    out = []
    for i in range(scenario.line + 1, block_end(lines, scenario)):
        m = STEP_LINE.match(lines[i])
        if m:
            out.append((m[1], i, m.start(1)))
    return out


def named_replies(lines: list[str]) -> list[tuple[str, int, int]]:
    """The file's `reply NAME:` blocks: (name, 0-based line, column of the name)."""
    out = []
    for i, line in enumerate(lines):
        m = NAMED_REPLY_LINE.match(line)
        if m:
            out.append((m[1], i, m.start(1)))
    return out
