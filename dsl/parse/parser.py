"""Parse `.mockllm` text into a :class:`~mockllm.dsl.tree.nodes.ScriptFile` plus syntax diagnostics.

:func:`parse_text` never raises. A file that parses is transformed in one go; a file with mistakes
is split before each statement at column 1 (``mockllm``, ``use``, ``reply``, ``defaults``,
``scenario``, or a broken one) and each top-level block is parsed on its own; a block that still fails
is taken apart further by :mod:`mockllm.dsl.parse.recovery` (a scenario at its steps, a step at its blocks,
…), so every mistake reports its own error in one run and the parts that parse still reach the tree.

Parsing is tree-less: the LALR parser calls the :class:`ScriptTransformer` methods as it reduces, so no
parse tree is built and Lark propagates no positions (each node's span comes from its first token and
the last real token before the parser's lookahead). Only a block with a parse error is parsed again by
the tree-building :func:`build_parser` parser, whose stack the error diagnosis reads."""

from __future__ import annotations

import getpass
import hashlib
import importlib.resources
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lark
from lark import Lark, Token
from lark.exceptions import LarkError, UnexpectedInput
from lark.indenter import Indenter
from lark.lexer import Lexer, LexerState

from mockllm.dsl import diagnostics as d
from mockllm.dsl.parse import lark_compat
from mockllm.dsl.parse.lark_compat import LalrParser
from mockllm.dsl.parse.recovery import LineInfo, Recovery, scan
from mockllm.dsl.parse.syntax_errors import INDENT_UNIT, describe_unexpected, keyword_values
from mockllm.dsl.parse.transformer import Cursor, ScriptTransformer, TopItem, VersionLine
from mockllm.dsl.providers import PROVIDERS
from mockllm.dsl.span import Span
from mockllm.dsl.tree.nodes import Defaults, McpServer, NamedReply, ReplyRef, Scenario, ScriptFile, Use
from mockllm.errors import MockllmError, ScriptSyntaxError

__all__ = ["MockIndenter", "ScriptIndentError", "build_parser", "parse_text"]

LANGUAGE_VERSIONS = (1,)

_LAYOUT_TOKENS = frozenset({"_NL", "_INDENT", "_DEDENT"})


class ScriptIndentError(MockllmError, LarkError):
    """Raised by :class:`MockIndenter` for a tab or a dedent to no enclosing block."""

    def __init__(self, code: str, line: int, column: int, message: str, hint: str):
        super().__init__(message)
        self.code = code
        self.line = line
        self.column = column
        self.message = message
        self.hint = hint


class MockIndenter(Indenter):
    """Python-style indentation: spaces only, any consistent depth, newlines inside {} and [] ignored.

    State lives in the generator, not on the instance, so one parser can serve several threads."""

    NL_type = "_NL"
    OPEN_PAREN_types = ["LBRACE", "LSQB"]
    CLOSE_PAREN_types = ["RBRACE", "RSQB"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8
    # NAME in every lexer state: a mistyped keyword (`whenn`) lexes as one NAME, never as `when` + `n`.
    always_accept = ("_NL", "NAME")

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return self._layout(stream)

    def _layout(self, stream: Iterator[Token]) -> Iterator[Token]:
        levels = [0]
        # the line that opened each level, and the columns each depth has been indented to so far: an
        # under-indented block is reported on its own line, not on the first later line it throws off
        # (locals, not attributes: one indenter serves every thread)
        openers = [1]
        depth_columns: dict[int, set[int]] = {}
        parens = 0
        last: Token | None = None
        for token in stream:
            if last is None and token.type != self.NL_type and (token.column or 1) > 1:
                raise ScriptIndentError(
                    "indent",
                    token.line or 1,
                    1,
                    "unexpected indentation: the first line of a file starts at column 1",
                    "remove the spaces before the first statement",
                )
            if token.type == self.NL_type:
                if parens == 0:
                    yield from self._newline(token, levels, openers, depth_columns)
            else:
                yield token
                if token.type in self.OPEN_PAREN_types:
                    parens += 1
                elif token.type in self.CLOSE_PAREN_types:
                    parens = max(0, parens - 1)
            last = token
        while len(levels) > 1:
            levels.pop()
            yield Token.new_borrow_pos(self.DEDENT_type, "", last) if last else Token(self.DEDENT_type, "")

    def _newline(
        self, token: Token, levels: list[int], openers: list[int], depth_columns: dict[int, set[int]]
    ) -> Iterator[Token]:
        yield token
        indent_str = token.rsplit("\n", 1)[1] if "\n" in token else ""
        line = token.end_line or 1
        if "\t" in indent_str:
            raise ScriptIndentError(
                "tab", line, indent_str.index("\t") + 1, "tab used for indentation", "indent with spaces only"
            )
        indent = len(indent_str)
        if indent > levels[-1]:
            levels.append(indent)
            openers.append(line)
            depth_columns.setdefault(len(levels), set()).add(indent)
            yield Token.new_borrow_pos(self.INDENT_type, indent_str, token)
            return
        valid = list(levels)
        while indent < levels[-1]:
            levels.pop()
            openers.pop()
            yield Token.new_borrow_pos(self.DEDENT_type, indent_str, token)
        if indent != levels[-1]:
            depth = len(levels)
            parent = levels[-2] if depth > 1 else 0
            lines_up = indent in depth_columns.get(depth, set()) or (
                (indent - parent) % INDENT_UNIT == 0 and (levels[-1] - parent) % INDENT_UNIT != 0
            )
            if depth > 1 and parent < levels[-1] < indent and lines_up:
                # this line lines up with its depth elsewhere; the block's first line was under-indented
                raise ScriptIndentError(
                    "indent",
                    openers[-1],
                    levels[-1] + 1,
                    f"this line is indented to column {levels[-1] + 1}, less than the lines of its block "
                    f"(line {line} is at column {indent + 1})",
                    f"indent it to column {indent + 1}, like the other lines at this depth",
                )
            columns = [str(level + 1) for level in valid]
            shown = columns[0] if len(columns) == 1 else ", ".join(columns[:-1]) + " or " + columns[-1]
            raise ScriptIndentError(
                "indent",
                line,
                indent + 1,
                f"this line is indented to column {indent + 1}, which matches no enclosing block",
                f"indent it to column {shown} to line it up with a block above",
            )


class _PositionFilter:
    """Keeps layout tokens out of node positions (a block ends at its last real token, not at the
    next line). Its stable ``repr`` keeps Lark's grammar-cache key the same from run to run."""

    def __call__(self, child: Any) -> bool:
        return not (isinstance(child, Token) and child.type in _LAYOUT_TOKENS)

    def __repr__(self) -> str:
        return "mockllm-position-filter-v1"


_PROVIDER_WORD = re.compile(r"^!provider_word:.*$", re.M)


def grammar_text() -> str:
    """The grammar, with its ``provider_word`` rule listing :data:`~mockllm.dsl.providers.PROVIDERS`
    (the one list of provider names: the file's copy is only what a reader sees)."""
    text = importlib.resources.files("mockllm.grammar").joinpath("mockllm.lark").read_text(encoding="utf-8")
    words = " | ".join(f'"{name}"' for name in PROVIDERS)
    return _PROVIDER_WORD.sub(lambda _: f"!provider_word: {words}", text, count=1)


def _cache_file(grammar: str) -> str:
    key = hashlib.sha256(f"{grammar}{lark.__version__}{sys.version_info[:2]}".encode()).hexdigest()[:16]
    name = f"grammar-{key}.lark-cache"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "mockllm"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK):
            return str(folder / name)
    except OSError:
        pass
    try:
        user = getpass.getuser()
    except Exception:
        user = "unknown"
    return os.path.join(tempfile.gettempdir(), f"mockllm-{user}-{name}")


_LOCK = threading.Lock()
_PARSERS: dict[bool, Lark] = {}


def build_parser(strict: bool = False) -> Lark:
    """The LALR parser for `.mockllm` files, built once per process (per ``strict``).

    The normal build loads the analysed grammar from a cache file in the user's cache directory
    (rebuilt when the grammar or Lark changes; an unwritable cache only costs time). ``strict``
    makes Lark fail on any grammar conflict or terminal collision; CI builds it that way."""
    with _LOCK:
        parser = _PARSERS.get(strict)
        if parser is None:
            grammar = grammar_text()
            parser = Lark(
                grammar,
                parser="lalr",
                lexer="contextual",
                postlex=MockIndenter(),
                propagate_positions=_PositionFilter(),
                maybe_placeholders=False,
                strict=strict,
                cache=False if strict else _cache_file(grammar),
            )
            _PARSERS[strict] = parser
        return parser


# ---------------------------------------------------------------------------------------------------------


def parse_text(text: str, file: str = "<text>") -> tuple[ScriptFile | None, list[d.Diagnostic]]:
    """Parse one file. Returns every top-level block that parsed, and one diagnostic per broken block."""
    try:
        return _parse_text(text, file)
    except Exception as exc:  # the last line of defence: the contract is diagnostics, never exceptions
        diag = d.error(
            "syntax",
            f"could not read this file ({type(exc).__name__})",
            Span(file, 1, 1, 1, 2),
            "this is a bug in mockllm; please report it with the file",
        )
        return None, [diag]


def _parse_text(text: str, file: str) -> tuple[ScriptFile | None, list[d.Diagnostic]]:
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")  # a byte-order mark is no statement
    items, problem = _parse_block(text, file)  # a clean file is parsed once, in one pass
    diagnostics: list[d.Diagnostic] = []
    if problem is not None:
        items, diagnostics = _resync(text, file, problem)
    script, assembly = _assemble(items, text, file)
    diagnostics.extend(assembly)
    diagnostics.sort(key=d.sort_key)
    return script, diagnostics


def _resync(text: str, file: str, problem: d.Diagnostic) -> tuple[list[TopItem], list[d.Diagnostic]]:
    """Every error of a file that failed with ``problem``, and the top-level items that still parse:
    each top-level block is parsed on its own, and a broken one is taken apart by :class:`Recovery`.

    What the semantic checks would wrongly call missing stays out: the block above a broken block that
    may hold its lines (a step's ``reply:`` slipped to column 1), and, when a ``use`` line or a named
    reply could not be read, the items that refer to an alias or a reply the file does not define."""
    recovery = Recovery(text, lambda block, line: _parse_block(block, file, line), _parses, _scan(text), _keywords())
    blocks: list[list[TopItem]] = []
    lost: set[str] = set()
    for start, end in recovery.blocks():
        block_items, block_problem = _parse_block(recovery.block_text(start, end), file, start + 1)
        if block_problem is not None:
            block_items = recovery.recover(start, end, block_problem)
            if blocks and recovery.detached(start, end):
                # its lines may belong to the block above, which is not whole without them
                if any(isinstance(item, NamedReply) for item in blocks[-1]):
                    lost.add("reply")
                blocks[-1] = [item for item in blocks[-1] if isinstance(item, VersionLine | Use)]
            if not block_items:
                word = recovery.top_word(start)
                lost.update(("use", "reply") if word is None else {word} & {"use", "reply"})
        blocks.append(block_items)
    items = [item for block in blocks for item in block]
    if lost:
        items = _without_dangling_refs(items, lost)
    diagnostics = recovery.diagnostics
    if not any(x.is_error for x in diagnostics):
        diagnostics.append(problem)
    return items, diagnostics


def _without_dangling_refs(items: list[TopItem], lost: set[str]) -> list[TopItem]:
    """``items`` without those whose ``reply like``/``fallback like`` could name what a lost ``use``
    line (an alias) or a lost named reply (a reply of this file) defined."""
    aliases = {item.alias for item in items if isinstance(item, Use)}
    replies = {item.name for item in items if isinstance(item, NamedReply)}

    def dangling(ref: object) -> bool:
        if not isinstance(ref, ReplyRef):
            return False
        if ref.alias is None:
            return "reply" in lost and ref.name not in replies
        return "use" in lost and ref.alias not in aliases

    def keep(item: TopItem) -> bool:
        if isinstance(item, Scenario):
            return not any(dangling(step.reply) for step in item.steps)
        if isinstance(item, Defaults):
            return not dangling(item.fallback)
        return True

    return [item for item in items if keep(item)]


def _parses(text: str) -> bool:
    """Whether ``text`` parses with no error (no diagnosis when it does not)."""
    try:
        _items, problem = _treeless(build_parser()).parse(text + "\n", "")
    except (LarkError, RecursionError):
        return False
    return problem is None


def _keywords() -> frozenset[str]:
    """The words of the language (`when`, `reply`, `latency`, …)."""
    return frozenset(v for v in keyword_values(build_parser()).values() if v[:1].isalpha())


def _scan(text: str) -> list[LineInfo]:
    """Line facts for :class:`Recovery`, read with the grammar's own string and regex patterns."""
    patterns = {t.name: re.compile(t.pattern.to_regexp()) for t in build_parser().terminals}
    return scan(text, patterns["STRING"], patterns["LONG_STRING"], patterns["REGEX"])


class _TreelessParser:
    """Parses with the LALR tables of a :func:`build_parser` parser but builds nodes while reducing
    (the :class:`ScriptTransformer` methods are the rule callbacks), with no parse tree and no Lark
    position propagation in between: the transformer takes a rule's start from its first child and
    its end from the :class:`Cursor` that :class:`_TrackedLexer` keeps. About twice as fast as
    parse-then-transform."""

    def __init__(self, parser: Lark):
        lark_compat.check(parser)  # a Lark that changed its internals fails here, in one clear line
        self.lexer: Lexer
        self.indenter: MockIndenter
        self.lexer, self.indenter = lark_compat.lexer_and_postlexer(parser)
        self.table = lark_compat.parse_table(parser)
        self.start: str = parser.options.start[0]
        self.builder = lark_compat.tree_builder(parser)
        self.wrapped = frozenset(
            rule
            for rule in parser.rules
            if (name := rule.alias or rule.options.template_source or rule.origin.name) != "start"
            and callable(getattr(ScriptTransformer, name, None))
        )
        self.local = threading.local()

    def parse(self, text: str, file: str, first_line: int = 1) -> tuple[list[TopItem], ScriptSyntaxError | None]:
        # The callbacks (bound to one transformer) cost more to build than a small file costs to parse,
        # so each thread keeps one set and resets the transformer (parsing never nests in a thread).
        state: tuple[ScriptTransformer, LalrParser, _TrackedLexer] | None = getattr(self.local, "state", None)
        if state is None:
            transformer = ScriptTransformer(file)
            callbacks = lark_compat.reduce_callbacks(self.builder, transformer)
            for rule in self.wrapped:
                callbacks[rule] = transformer.wrap(callbacks[rule])
            lexer = _TrackedLexer(self.lexer, self.indenter, transformer.cursor)
            state = self.local.state = (transformer, LalrParser(self.table, callbacks), lexer)
        transformer, lalr, lexer = state
        transformer.reset(file)
        items: list[TopItem] = lalr.parse(lark_compat.lexer_thread(lexer, text, first_line), self.start)
        return items, transformer.problem


class _TrackedLexer(Lexer):
    """The contextual lexer followed by the indenter, keeping ``cursor.end`` on the last real token
    before the token it hands out (the parser's lookahead)."""

    def __init__(self, lexer: Lexer, indenter: MockIndenter, cursor: Cursor):
        self.lexer = lexer
        self.indenter = indenter
        self.cursor = cursor

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        cursor = self.cursor
        layout = _LAYOUT_TOKENS
        last: Token | None = None
        for token in self.indenter.process(self.lexer.lex(lexer_state, parser_state)):
            cursor.end = last
            if token.type not in layout:
                last = token
            yield token
        cursor.end = last


_TREELESS: dict[int, _TreelessParser] = {}


def _treeless(parser: Lark) -> _TreelessParser:
    with _LOCK:
        fast = _TREELESS.get(id(parser))
        if fast is None or fast.table is not lark_compat.parse_table(parser):
            fast = _TREELESS[id(parser)] = _TreelessParser(parser)
        return fast


def _parse_block(text: str, file: str, first_line: int = 1) -> tuple[list[TopItem], d.Diagnostic | None]:
    """Parse ``text`` (a file, or a block of one that begins on line ``first_line``)."""
    parser = build_parser()
    text += "\n"
    try:
        items, problem = _treeless(parser).parse(text, file, first_line)
    except ScriptIndentError as e:
        return [], d.error(e.code, e.message, Span.point(file, e.line, e.column), e.hint)
    except UnexpectedInput as e:
        return [], _describe(e, text, file, parser, first_line)
    except RecursionError:
        return [], d.error("syntax", "this block is nested too deeply to read", Span.point(file, first_line, 1))
    if problem is not None:
        return [], d.error(problem.code, problem.message, problem.span, problem.hint)
    return items, None


def _describe(e: UnexpectedInput, text: str, file: str, parser: Lark, first_line: int) -> d.Diagnostic:
    """The diagnostic for a parse error. The diagnosis reads the parser's stack as parse trees, so the
    block is parsed again by the tree-building parser (only broken blocks pay for it)."""
    try:
        lark_compat.parse_with_tree(parser, text, first_line)
    except UnexpectedInput as again:
        e = again
    except (ScriptIndentError, RecursionError):
        pass
    return describe_unexpected(e, text, file, parser)


def _first_statement_line(text: str) -> int:
    for i, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return i
    return 0


def _assemble(items: list[TopItem], text: str, file: str) -> tuple[ScriptFile, list[d.Diagnostic]]:
    diagnostics: list[d.Diagnostic] = []
    version: VersionLine | None = None
    defaults: Defaults | None = None
    uses: list[Use] = []
    replies: list[NamedReply] = []
    scenarios: list[Scenario] = []
    servers: list[McpServer] = []
    first_line = _first_statement_line(text)

    def syntax(message: str, span: Span, hint: str) -> None:
        diagnostics.append(d.error("syntax", message, span, hint))

    for item in items:
        if isinstance(item, VersionLine):
            if version is not None:
                syntax("the version line is given twice", item.span, f"keep only the first (line {version.span.line})")
                continue
            version = item
            if item.span.line != first_line:
                hint = "move it to the top, above every other statement"
                syntax("`mockllm N` must be the first statement of the file", item.span, hint)
            if item.number not in LANGUAGE_VERSIONS:
                hint = "this mockllm reads version 1: write `mockllm 1`"
                syntax(f"unsupported language version {item.number}", item.number_span, hint)
        elif isinstance(item, Use):
            uses.append(item)
        elif isinstance(item, NamedReply):
            replies.append(item)
        elif isinstance(item, Defaults):
            if defaults is not None:
                hint = f"merge it into the first (line {defaults.span.line})"
                syntax("a file has one `defaults:` block; this is a second one", item.span, hint)
                continue
            defaults = item
        elif isinstance(item, McpServer):
            servers.append(item)
        else:
            scenarios.append(item)
    lines = text.split("\n")
    span = Span(file, 1, 1, len(lines), len(lines[-1]) + 1)
    script = ScriptFile(
        file,
        version.number if version else None,
        tuple(uses),
        tuple(replies),
        defaults,
        tuple(scenarios),
        tuple(servers),
        span=span,
    )
    return script, diagnostics
