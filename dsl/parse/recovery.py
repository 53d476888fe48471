"""Finding every syntax error of a broken file, and keeping the parts that parse.

When a file fails to parse, :mod:`mockllm.dsl.parse.parser` cuts it before each statement at column 1 and
parses each top-level block on its own. A block that still fails is taken apart here, one nesting
level at a time: a ``scenario`` at its setting and ``step`` lines, a step at its ``when:``,
``expect:``, ``reply:``… lines, a reply block at its elements, a ``when:`` block at its conditions,
``defaults:`` at its lines. Each part is parsed on its own under synthetic headers (``scenario "_":``,
``step _:`` …) placed on the lines just above it, so its line numbers stay absolute and a failure is
that part's own mistake. Every broken part reports its first error, and nothing reports what another
mistake caused:

- a header that cannot be read (``step "ask":``) hides its lines: where they belong is a guess;
- after a line indented to match no enclosing block, the rest of the top-level block is not read;
- lines of another kind of block (a reply element in a ``when:`` block, because ``reply:`` went
  missing) report once, and not at all right after a mistake that explains them;
- a mistake found only when the parts are put together (``when:`` twice in a step) is reported only
  when nothing else in the block was.

The parts that parse are put back together as text -- a broken part's lines blanked, or replaced by
a stand-in that keeps what other lines rely on (``reply echo`` for a step's broken reply, ``echo`` for
a reply block left empty, ``after NAME``/``capture NAME …``/``let NAME = ""`` keeping the name the
broken line gives, a header with its missing ``:`` added) -- and the block is parsed once more, so its
node has its real name and span and the semantic checks see its good steps. When nothing can stand in
(a broken step, an ``after`` line whose step cannot be read), the scenario stays out of the tree; its
syntax errors are still all reported.

Lines inside a triple-quoted string or an open JSON bracket are never cut at (:func:`scan`)."""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mockllm.dsl import diagnostics as d
from mockllm.dsl.parse.syntax_errors import REPLY_ELEMENT_WORDS, SYNONYMS
from mockllm.dsl.parse.transformer import TopItem

__all__ = ["LineInfo", "Recovery", "scan"]

_Parsed = tuple[list[TopItem], d.Diagnostic | None]
#: Parses a block given as text and the number of its first line.
ParseFn = Callable[[str, int], _Parsed]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_SPECIAL = re.compile(r'["/#{}\[\]]')
_JSON_WORDS = frozenset({"true", "false", "null"})
_TOP_KEYWORDS = frozenset({"mockllm", "use", "reply", "defaults", "scenario", "mcp"})
#: Diagnostic codes of indentation mistakes (see :class:`mockllm.dsl.parse.parser.MockIndenter`).
_LAYOUT_CODES = frozenset({"indent", "tab"})
#: Where lines go, as the headers above them: a broken line that parses under one of these is a line
#: of another kind of block (a reply element in a `when:` block, a scenario line in `defaults:` …).
_ELSEWHERE: Sequence[tuple[str, ...]] = (
    (),
    ('scenario "_":',),
    ('scenario "_":', "step _:"),
    ('scenario "_":', "step _:", "when:"),
    ("reply _:",),
    ("defaults:",),
)


@attrs.frozen
class LineInfo:
    """One source line: its indentation, its first word, and whether a statement starts on it (not
    blank, not a comment, not inside a triple-quoted string or an open JSON bracket)."""

    indent: int
    word: str
    statement: bool


def scan(text: str, string: re.Pattern[str], long_string: re.Pattern[str], regex: re.Pattern[str]) -> list[LineInfo]:
    """Line facts for cutting ``text`` into blocks, reading literals with the grammar's own patterns.

    A bracket left open does not swallow the rest of the file: a line that starts with a word (not
    ``true``/``false``/``null``) no deeper than the line that opened the bracket starts afresh."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    out: list[LineInfo] = []
    depth = 0
    opener = 0  # indentation of the statement that opened the outermost bracket
    current = 0  # indentation of the statement being read
    i = 0
    while i < len(lines):
        line = lines[i]
        content = line.lstrip(" \t")
        indent = len(line) - len(content)
        m = _WORD.match(content)
        word = m.group(0) if m else ""
        if depth and word and word not in _JSON_WORDS and indent <= opener:
            depth = 0
        statement = depth == 0 and bool(content) and not content.startswith("#")
        if statement:
            current = indent
        out.append(LineInfo(indent, word, statement))
        pos = offsets[i] + indent
        end = offsets[i] + len(line)
        while True:
            found = _SPECIAL.search(text, pos, end)
            if found is None:
                break
            char, at = found.group(), found.start()
            if char == "#":
                break
            if char in '"/':
                pattern = regex if char == "/" else long_string if text.startswith('"""', at) else string
                literal = pattern.match(text, at)
                if literal is None:  # unterminated: the lexer stops here, and so do we
                    break
                pos = literal.end()
                while i + 1 < len(lines) and offsets[i + 1] <= pos - 1:  # a string over several lines
                    i += 1
                    rest = lines[i]
                    out.append(LineInfo(len(rest) - len(rest.lstrip(" \t")), "", False))
                    end = offsets[i] + len(rest)
                continue
            if char in "{[":
                if depth == 0:
                    opener = current
                depth += 1
            else:
                depth = max(0, depth - 1)
            pos = at + 1
        i += 1
    return out


# ---------------------------------------------------------------------------------------------------------
# What each kind of block holds


_NAME = r"[A-Za-z_][A-Za-z0-9_-]*"
_TAIL = r"[ \t]*:?[ \t]*(?:#.*)?$"


#: What stands in for a broken part, given its first line (with its first word replaced by the keyword
#: that word most likely stands for): the line to put in its place, "" to drop it, or None when
#: nothing can (the block then stays out of the tree).
StandIn = Callable[[str], "str | None"]


def _drop(line: str) -> str | None:
    return ""


def _damage(line: str) -> str | None:
    return None


def _fixed(text: str) -> StandIn:
    return lambda line: text


def _named(pattern: str, template: str) -> StandIn:
    """A stand-in that keeps the name the broken line gives (``after ask`` for ``after "ask"``)."""
    compiled = re.compile(pattern)

    def stand_in(line: str) -> str | None:
        m = compiled.match(line)
        return template.format(*m.groups()) if m else None

    return stand_in


#: A step's broken reply: no "step has no reply" for a reply that is there.
_REPLY_ECHO = "reply echo"


@attrs.frozen
class _Kind:
    """A kind of block: its synthetic header (to parse its parts under), how a broken header of its
    own is mended, and what stands in for each kind of broken part (by first word)."""

    name: str
    synthetic: Callable[[str], str]
    repair: re.Pattern[str]
    mend: Callable[[re.Match[str]], str]
    stand_ins: Mapping[str, StandIn] = attrs.field(factory=dict)
    otherwise: StandIn = _drop  # for a first word none of ``stand_ins`` is near
    empty_stub: str | None = None  # the line that stands in when every part is dropped

    def stand_in(self, line: str) -> str | None:
        content = line.strip()
        m = _WORD.match(content)
        word = m.group(0) if m else ""
        guess = _guess(word, frozenset(self.stand_ins))
        return self.stand_ins.get(guess, self.otherwise)(guess + content[len(word) :])


def _quoted(m: re.Match[str]) -> str:
    return m.group(1) or f'"{m.group(2)}"'


def _plain(word: str, **rest: Any) -> _Kind:
    """A block whose header is its keyword alone (``reply:``, ``defaults:``)."""
    return _Kind(word, lambda line: f"{word}:", re.compile(rf"{word}{_TAIL}"), lambda m: f"{word}:", **rest)


def _named_block(word: str, name: str | None = None, **rest: Any) -> _Kind:
    """A block whose header names it (``step ask:``, ``reply greeting:``); a broken one keeps the name."""
    return _Kind(
        name or word,
        lambda line: f"{word} _:",
        re.compile(rf'{word}[ \t]+"?({_NAME})"?{_TAIL}'),
        lambda m: f"{word} {m.group(1)}:",
        **rest,
    )


_SCENARIO = _Kind(
    "scenario",
    lambda line: 'scenario "_":',
    re.compile(rf'scenario[ \t]+(?:("(?:[^"\\\n]|\\.)*")|({_NAME})){_TAIL}'),
    lambda m: f"scenario {_quoted(m)}:",
    stand_ins={
        "when": _drop,
        "priority": _drop,
        "tags": _drop,
        "order": _fixed("order any"),
        "let": _named(rf"let[ \t]+({_NAME})(?![A-Za-z0-9_-])", 'let {} = ""'),
        "step": _damage,
    },
    otherwise=_damage,
)
_STEP = _named_block(
    "step",
    stand_ins={
        "when": _drop,
        "expect": _drop,
        "after": _named(rf'after[ \t]+"?({_NAME})(?![A-Za-z0-9_-])', "after {}"),
        "capture": _named(rf"capture[ \t]+({_NAME})(?![A-Za-z0-9_-])", "capture {} from last user message /(.*)/"),
        "repeat": _named(r"repeat[ \t]+([0-9]+)(?![A-Za-z0-9_-])", "repeat {}"),
        "always": _fixed("always"),
        "reply": _fixed(_REPLY_ECHO),
        **{word: _fixed(_REPLY_ECHO) for word in REPLY_ELEMENT_WORDS},
    },
    otherwise=_damage,
)
_CONDITIONS = _Kind(
    "conditions",
    lambda line: ("expect" if line.lstrip().startswith("expect") else "when") + ":",
    re.compile(rf"(when|expect){_TAIL}"),
    lambda m: f"{m.group(1)}:",
)
_REPLY = _plain("reply", empty_stub="echo")
_NAMED_REPLY = _named_block("reply", "named reply", empty_stub="echo")
_FALLBACK = _plain("fallback", empty_stub="echo")
_DEFAULTS = _plain("defaults")

#: (kind of the enclosing block, first word) -> the kind of block the line opens. Reply blocks and
#: fallbacks only when the header is one (`reply like x` is a line, not a block).
_BLOCKS: Mapping[tuple[str | None, str], _Kind] = {
    (None, "scenario"): _SCENARIO,
    (None, "reply"): _NAMED_REPLY,
    (None, "defaults"): _DEFAULTS,
    ("scenario", "step"): _STEP,
    ("scenario", "when"): _CONDITIONS,
    ("step", "when"): _CONDITIONS,
    ("step", "expect"): _CONDITIONS,
    ("step", "reply"): _REPLY,
    ("defaults", "fallback"): _FALLBACK,
}
_HEADER_ONLY = frozenset({"reply", "fallback"})


def _guess(word: str, vocabulary: frozenset[str]) -> str:
    """The keyword a mistyped ``word`` most likely stands for (``wen`` → ``when``)."""
    if not vocabulary or word in vocabulary:
        return word
    synonym = SYNONYMS.get(word.lower())
    if synonym is not None and synonym[0] in vocabulary:
        return synonym[0]
    close = difflib.get_close_matches(word.lower(), sorted(vocabulary), n=1, cutoff=0.75)
    return close[0] if close else word


# ---------------------------------------------------------------------------------------------------------
# The recovery


@attrs.frozen
class _Mended:
    lines: tuple[str, ...]  # the block's lines, broken parts blanked or replaced
    items: list[TopItem]  # what parsing them gave
    changed: bool  # whether any line differs from the source


class _State(enum.Enum):
    SOURCE = "source"  # parses as written
    MENDED = "mended"  # parses once its own broken parts are taken out
    BROKEN = "broken"


class Recovery:
    """Finds the syntax errors of one broken file, block by block (see the module docstring)."""

    def __init__(
        self,
        text: str,
        parse: ParseFn,
        parses: Callable[[str], bool],
        info: Sequence[LineInfo],
        keywords: frozenset[str],
    ):
        self.lines = text.split("\n")
        self.parse = parse
        self.parses = parses
        self.info = info
        self.keywords = keywords
        self.diagnostics: list[d.Diagnostic] = []
        self._seen: set[tuple[int, int]] = set()
        self._halted = False

    def blocks(self) -> list[tuple[int, int]]:
        """(first line, end line) of each top-level block, cut before each statement at column 1
        (a column-1 line that is no top-level statement is a broken one, and takes the lines
        indented under it along)."""
        starts = [i for i, info in enumerate(self.info) if info.statement and info.indent == 0]
        if not starts or starts[0] != 0:
            starts.insert(0, 0)
        return list(zip(starts, [*starts[1:], len(self.lines)], strict=True))

    def block_text(self, start: int, end: int) -> str:
        return "\n".join(self.lines[start:end])

    def top_word(self, start: int) -> str | None:
        """The top-level keyword the block at ``start`` most likely begins with (``scenaro`` →
        ``scenario``), or None when its first line is none."""
        info = self.info[start]
        word = _guess(info.word, _TOP_KEYWORDS) if info.statement and not info.indent else ""
        return word if word in _TOP_KEYWORDS else None

    def detached(self, start: int, end: int) -> bool:
        """Whether the broken block ``start:end`` (just recovered) may hold lines of the block above: it
        does not begin with a top-level statement that can be read (a step's `reply:` at column 1, a
        line cut in two, a mistyped keyword), a line in it is indented to match none of its blocks, or
        lines are indented under a one-line statement (`use`, `mockllm`)."""
        info = self.info[start]
        if not info.statement or info.indent or info.word not in _TOP_KEYWORDS or self._halted:
            return True
        kind = _BLOCKS.get((None, info.word))
        if kind is None:
            return any(self.info[k].statement for k in range(start + 1, end))
        return not kind.repair.match(self.lines[start].strip())

    def recover(self, start: int, end: int, problem: d.Diagnostic) -> list[TopItem]:
        """Reports every error of the top-level block ``start:end`` (whose first error is ``problem``);
        returns its node when the parts that parse can stand for it, else nothing."""
        before = len(self.diagnostics)
        self._halted = False
        mended = self._resolve(start, end, (), None, problem)
        if len(self.diagnostics) == before:
            self._report(problem)  # never silently: the block's own first error
        return mended.items if mended is not None else []

    # -- one block --------------------------------------------------------------------------------------

    def _report(self, diag: d.Diagnostic) -> None:
        key = (diag.span.line, diag.span.column)
        if key not in self._seen:
            self._seen.add(key)
            self.diagnostics.append(diag)
            # after a line indented to match no block (or a tab), which block each later line belongs
            # to is a guess: the rest of this top-level block is not read
            self._halted = self._halted or diag.code in _LAYOUT_CODES

    def _retract(self, count: int) -> None:
        for diag in self.diagnostics[count:]:
            self._seen.discard((diag.span.line, diag.span.column))
        del self.diagnostics[count:]

    def _displaced(self, start: int, end: int, reported: Sequence[d.Diagnostic]) -> bool:
        """Whether the broken part ``start:end`` is a line of another kind of block: it failed at its
        first word, a keyword of the language, or it parses where another block's lines go."""
        info = self.info[start]
        if info.word in self.keywords and any(
            x.span.line == start + 1 and x.span.column == info.indent + 1 for x in reported
        ):
            return True
        source = self.lines[start:end]
        for context in _ELSEWHERE:
            if (len(context) <= info.indent) if context else info.indent == 0:  # headers fit above it
                headers = [" " * depth + header for depth, header in enumerate(context)]
                if self.parses("\n".join([*headers, *source])):
                    return True
        return False

    def _parse(self, context: Sequence[str], start: int, lines: Sequence[str]) -> _Parsed:
        """Parse ``lines`` (which begin on line index ``start``) under the headers ``context``, placed
        on the lines just above them."""
        return self.parse("\n".join([*context, *lines]), start - len(context) + 1)

    def _children(self, start: int, end: int) -> list[tuple[int, int]]:
        info = self.info
        first = next((k for k in range(start + 1, end) if info[k].statement), None)
        if first is None or info[first].indent <= info[start].indent:
            return []
        level = info[first].indent
        starts = [k for k in range(first, end) if info[k].statement and info[k].indent == level]
        return list(zip(starts, [*starts[1:], end], strict=True))

    def _kind(self, parent: _Kind | None, start: int) -> _Kind | None:
        word = self.info[start].word
        kind = _BLOCKS.get((parent.name if parent else None, word))
        if kind is not None and word in _HEADER_ONLY and parent is not None:
            if not kind.repair.match(self.lines[start].strip()):
                return None
        return kind

    def _resolve(
        self,
        start: int,
        end: int,
        context: tuple[str, ...],
        parent: _Kind | None,
        problem: d.Diagnostic | None = None,
    ) -> _Mended | None:
        source = self.lines[start:end]
        if problem is None:
            if start < len(context):
                return None
            items, problem = self._parse(context, start, source)
            if problem is None:
                return _Mended(tuple(source), items, False)
        kind = self._kind(parent, start)
        parts = self._children(start, end) if kind is not None else []
        if kind is None or not parts:
            self._report(problem)
            return None
        first_report = len(self.diagnostics)
        header: str | None = source[0]
        if problem.span.line - 1 < parts[0][0]:  # the header line itself is wrong
            self._report(problem)
            mended = kind.repair.match(source[0].strip())
            header = " " * self.info[start].indent + kind.mend(mended) if mended else None
        if header is None:
            return None  # a header we cannot read: where its lines belong is anybody's guess
        inner = (*context, " " * self.info[start].indent + kind.synthetic(source[0]))
        results: list[_Mended | None] = []
        failed = len(self.diagnostics) > first_report  # the header
        displaced = False
        for a, b in parts:
            if self._halted:
                return None
            before = len(self.diagnostics)
            result = self._resolve(a, b, inner, kind)
            results.append(result)
            if result is None:
                # Lines of another kind of block landed here: its header went missing (swallowed by
                # the mistake of a line above, or never written). The first of them is reported
                # unless a mistake above explains it; the rest would only repeat it.
                if displaced:
                    self._retract(before)
                elif self._displaced(a, b, self.diagnostics[before:]):
                    displaced = True
                    if failed:
                        self._retract(before)
                failed = True
        if displaced or self._halted:
            return None
        states = [_State.BROKEN if r is None else _State.MENDED if r.changed else _State.SOURCE for r in results]
        own = 0  # errors this loop reported
        while True:
            lines = self._assemble(kind, start, end, header, parts, results, states)
            if lines is None:
                return None
            items, again = self._parse(context, start, lines)
            if again is None:
                return _Mended(tuple(lines), items, True)
            at = again.span.line - 1
            k = next((i for i, (a, b) in enumerate(parts) if a <= at < b), None)
            if (
                (again.span.line, again.span.column) in self._seen
                or k is None
                or states[k] is not _State.SOURCE
                or len(self.diagnostics) - first_report != own
            ):
                # a consequence of a mistake already reported (`when:` twice in a step that swallowed
                # the next step's lines), or of a stand-in: give up quietly
                return None
            self._report(again)
            own += 1
            states[k] = _State.BROKEN

    def _assemble(
        self,
        kind: _Kind,
        start: int,
        end: int,
        header: str,
        parts: Sequence[tuple[int, int]],
        results: Sequence[_Mended | None],
        states: Sequence[_State],
    ) -> list[str] | None:
        """The block's lines with its broken parts dropped or stood in for; None when it cannot stand."""
        lines = [header, *self.lines[start + 1 : end]]
        level = self.info[parts[0][0]].indent
        # one `reply echo` at most, and none beside a reply that parses
        replied = any(
            state is not _State.BROKEN and kind.stand_in(self.lines[a]) == _REPLY_ECHO
            for state, (a, _b) in zip(states, parts, strict=True)
        )
        kept = 0
        for result, state, (a, b) in zip(results, states, parts, strict=True):
            if state is not _State.BROKEN:
                assert result is not None
                lines[a - start : b - start] = result.lines
                kept += 1
                continue
            lines[a - start : b - start] = [""] * (b - a)
            stand_in = kind.stand_in(self.lines[a])
            if stand_in is None:
                return None
            if stand_in == _REPLY_ECHO:
                if replied:
                    continue
                replied = True
            if stand_in:
                lines[a - start] = " " * level + stand_in
                kept += 1
        if kind is _STEP and not replied:
            # a step with a broken part may have lost its reply in it: no "step has no reply" then
            spare = [a for state, (a, _b) in zip(states, parts, strict=True) if state is _State.BROKEN]
            spare = [a for a in spare if not lines[a - start].strip()]
            if not spare:
                return None
            lines[spare[0] - start] = " " * level + _REPLY_ECHO
            kept += 1
        if kept == 0:
            if kind.empty_stub is None:
                return None
            lines[parts[0][0] - start] = " " * level + kind.empty_stub
        return lines
