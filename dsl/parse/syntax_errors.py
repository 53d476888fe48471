"""Syntax errors in the language's own words.

Lark reports an unexpected token or character with raw terminal names. This module turns that into
one :class:`~mockllm.dsl.diagnostics.Diagnostic`: where it happened, what was expected (in phrases
such as "expected a condition such as `model is "gpt-4o"`"), and a hint -- a fix for a near-miss
keyword (difflib over the keywords the parser accepts at that point), a synonym from other tools
(`equals` → `is`), or how a construct is written.

The example table (:data:`EXAMPLES`) maps short broken snippets to the message for their parser
state. Unlike Lark's ``match_examples`` (which also compares stack depth, so an example would only
match at one nesting depth) we key on the LALR state and the symbols of the error's line."""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, get_args

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from mockllm.dsl import diagnostics as d
from mockllm.dsl.span import Span

#: Names of the terminals that are not literal keywords or punctuation.
TERMINAL_NAMES: Mapping[str, str] = {
    "_NL": "the end of the line",
    "_INDENT": "an indented block",
    "_DEDENT": "the end of the block",
    "$END": "the end of the file",
    "NAME": "a name",
    "INT": "a whole number",
    "SIGNED_INT": "a whole number",
    "NUMBER": "a number",
    "DURATION": "a duration such as `250ms` or `2s`",
    "STRING": 'a quoted string such as `"…"`',
    "LONG_STRING": 'a triple-quoted string `"""…"""`',
    "REGEX": "a regex such as `/…/`",
}

#: Words from other tools, the keyword they stand for here, and what to suggest.
SYNONYMS: Mapping[str, tuple[str, str]] = {
    "equals": ("is", "is"),
    "equal": ("is", "is"),
    "eq": ("is", "is"),
    "==": ("is", "is"),
    "=": ("is", "is"),
    "!=": ("is", "is not"),
    "regex": ("matches", "matches"),
    "match": ("matches", "matches"),
    "matching": ("matches", "matches"),
    "includes": ("include", "include"),
    "excludes": ("exclude", "exclude"),
    "txt": ("text", "text"),
    "startswith": ("matches", "matches /^…/"),
    "starts_with": ("matches", "matches /^…/"),
    "endswith": ("matches", "matches /…$/"),
    "ends_with": ("matches", "matches /…$/"),
    "contain": ("contains", "contains"),
    "containing": ("contains", "contains"),
    "delay": ("latency", "latency"),
    "wait": ("latency", "latency"),
    "sleep": ("latency", "latency"),
    "tool_call": ("tool", "tool call"),
    "toolcall": ("tool", "tool call"),
    "retry-after": ("retry", "retry after"),
}

#: The first words of reply elements (what a step's `reply:` block holds).
REPLY_ELEMENT_WORDS = frozenset(
    {
        "text",
        "tool",
        "thinking",
        "refusal",
        "finish",
        "usage",
        "stream",
        "chunks",
        "latency",
        "error",
        "retry",
        "header",
        "echo",
        "status",
        "body",
        "disconnect",
        "hang",
        "interleave",
        "vector",
        "vectors",
        "flag",
        "result",
    }
)
_NUMBERS = frozenset({"INT", "SIGNED_INT", "NUMBER"})
_BARE_DURATION = re.compile(r"[0-9]+(?:\.[0-9]+)?(?![0-9A-Za-z_.])")

_SUBJECT_KEYWORDS = (
    "provider",
    "endpoint",
    "model",
    "stream",
    "last",
    "any",
    "system",
    "tools",
    "tool",
    "header",
    "field",
    "turn",
    "input",
    "argument",
    "attachments",
)
_SUBJECT_LIST = (
    "`provider`, `endpoint`, `model`, `stream`, `last user message`, `last message`, "
    '`any user message`, `system prompt`, `tools`, `tool result for "NAME"`, `header "NAME"`, '
    '`field "a.b"`, `turn`, `input`'
)

#: (marker terminals, phrase) -- the first whose markers are all acceptable names the context.
_CONTEXTS: Sequence[tuple[frozenset[str], str, str]] = (
    (frozenset({"ENDPOINT"}), "condition", 'expected a condition such as `model is "gpt-4o"`'),
    (
        frozenset({"PRESENT", "ABSENT"}),
        "value",
        'expected a value such as `"gpt-4o"`, `42`, `true`, `null` or `openai`, '
        "or `present`, `absent`, `error`, `not …`, `at least N`",
    ),
    (
        frozenset({"CONTAINS", "GLOB"}),
        "predicate",
        'expected a predicate such as `is "…"`, `contains "…"` or `matches /…/`',
    ),
    (frozenset({"HANG"}), "reply element", 'expected a reply element such as `text "…"`'),
    (frozenset({"CAPTURE"}), "step line", "expected a step line such as `when:`, `reply:` or `after STEP`"),
    (
        frozenset({"PRIORITY"}),
        "scenario line",
        "expected `step NAME:` or a scenario setting such as `priority N`, `tags …`, `let …` or `when:`",
    ),
    (frozenset({"FALLBACK"}), "defaults line", "expected `latency`, `stream`, `header` or `fallback` in `defaults:`"),
    (
        frozenset({"SCENARIO"}),
        "top level",
        'expected a top-level statement such as `scenario "NAME":`, `reply NAME:`, `defaults:` or `use "PATH" as NAME`',
    ),
)

_S = 'scenario "s":\n    step a:\n'
_R = _S + "        reply:\n"
_W = _S + "        when:\n"

#: Message for a parser state -> broken snippets that fail in that state (a tested fixture).
EXAMPLES: Mapping[str, Sequence[str]] = {
    'expected a quoted scenario name, such as `scenario "Weather":`': [
        "scenario Weather:\n    step a:\n        reply echo\n",
    ],
    "expected a step name, such as `step ask_for_weather:`": [
        'scenario "s":\n    step "a":\n        reply echo\n',
        'scenario "s":\n    step 1:\n        reply echo\n',
    ],
    "expected `usage N in, M out`": [
        _R + "            usage 10, 20\n",
        _R + "            usage 10 in 20 out\n",
        _R + "            usage in 10\n",
        _R + "            usage 10 in, 20\n",
    ],
    'expected `stream by word`, `stream N chunks`, `stream by N characters` or `stream error "…" after N chunks`': [
        _R + "            stream fast\n",
        _R + "            stream by words\n",
        _R + "            stream 4\n",
        _R + "            stream by 3 chars\n",
    ],
    "expected a gap between chunks such as `, 40ms apart`": [
        _R + "            stream 4 chunks, 40ms\n",
        _R + "            stream 4 chunks, 40\n",
    ],
    "expected `capture NAME from SUBJECT /REGEX/`": [
        _S + "        capture city last user message /x/\n",
        _S + '        capture city from last user message "x"\n',
        _S + "        capture from last user message /x/\n",
    ],
    'expected `tool call NAME {…}` with the arguments as a JSON object, such as `{"city": "Paris"}`': [
        _R + '            tool call {"a": 1}\n',
        _R + '            tool call get_weather "x"\n',
        _R + "            tool call get_weather\n",
        _R + "            tool get_weather {}\n",
    ],
    'expected `let NAME = "value"`': [
        'scenario "s":\n    let x "v"\n',
        'scenario "s":\n    let x = v\n',
        'scenario "s":\n    let = "v"\n',
    ],
    'expected `use "PATH" as ALIAS`': [
        "use lib/x.mockllm as x\n",
        'use "x" x\n',
        'use "x"\n',
        'use "x" as "y"\n',
    ],
    'expected `error STATUS "message"`, such as `error 429 "Rate limit reached"`': [
        _R + '            error "boom"\n',
        _R + "            error 429\n",
        _R + "            error 429 boom\n",
    ],
    "expected tags as names or strings separated by commas, such as `tags smoke, tools`": [
        'scenario "s":\n    tags smoke tools\n',
        'scenario "s":\n    tags 1\n',
    ],
    "expected a whole number, such as `priority 10`": [
        'scenario "s":\n    priority high\n',
        'scenario "s":\n    priority 1.5\n',
    ],
    "expected a duration such as `250ms` or `2s`": [
        _R + "            latency 250\n",
        _R + "            retry after 2\n",
    ],
    "expected `retry after D`, such as `retry after 2s`": [
        _R + "            retry 2s\n",
    ],
    "expected a finish reason: `stop`, `length`, `tool_calls` or `content_filter`": [
        _R + "            finish done\n",
    ],
    "expected `order any`": [
        'scenario "s":\n    order random\n',
    ],
    "expected `reply like NAME` or `reply like ALIAS.NAME`": [
        _S + '        reply like "x"\n',
        _S + "        reply like a.\n",
    ],
    'expected `header "name" "value"`': [
        _R + '            header x-id "v"\n',
        _R + '            header "x-id"\n',
    ],
    'expected `echo` or `echo header "name"`': [
        _R + "            echo x\n",
    ],
    "expected `mockllm 1`": [
        "mockllm v1\n",
    ],
    "expected `any user message`, `any assistant message`, `any system message` or `any tool message`": [
        _W + '            any users message contains "x"\n',
        _W + '            any user contains "x"\n',
    ],
    'expected `tool result for "NAME"`': [
        _W + "            tool result get_weather is present\n",
        _W + '            tool results for "x" is present\n',
        _W + "            tool result for get_weather is present\n",
    ],
    'expected `header "NAME"` with the header name in quotes': [
        _W + "            header x-id is present\n",
    ],
    'expected `field "a.b.0.c"` with the path in quotes': [
        _W + "            field a.b is present\n",
    ],
    "expected `last user message` or `last message`": [
        _W + '            last messages contains "x"\n',
    ],
    "expected `system prompt`": [
        _W + '            system message contains "x"\n',
    ],
    "expected `is at least N` or `is at most N`": [
        _W + "            turn is at 3\n",
        _W + "            turn is at least three\n",
    ],
    "expected `ignoring case` or the end of the line": [
        _W + '            model is "x" ignore case\n',
        _W + '            model is "x" ignoring\n',
    ],
    "expected `disconnect after N chunks`": [
        _R + "            disconnect 3\n",
        _R + "            disconnect after 3\n",
    ],
    'expected `stream error "message" after N chunks`': [
        _R + '            stream error "x"\n',
        _R + '            stream error "x" after 3\n',
    ],
    "expected `repeat N`, such as `repeat 3`": [
        _S + "        repeat twice\n",
    ],
    'expected a JSON value after `body`, such as `{"error": "boom"}`': [
        _R + "            body\n",
        _R + "            body boom\n",
    ],
    "expected `status N`, such as `status 503`": [
        _R + "            status ok\n",
    ],
}


# ---------------------------------------------------------------------------------------------------------
# The example table, indexed by parser state


def _kind(item: Any) -> str:
    if isinstance(item, Token):
        return item.type
    if isinstance(item, Tree):
        return str(item.data)
    return type(item).__name__


def _signature(e: UnexpectedInput) -> tuple[int, tuple[str, ...]] | None:
    """The LALR state plus what the stack holds from the error's line: LALR merges states, so the
    state alone cannot tell `last user message` in a condition from the same words in a capture."""
    state = getattr(e, "state", None)
    position = getattr(state, "position", None)
    stack = getattr(state, "value_stack", None)
    if not isinstance(position, int) or stack is None:
        return None
    token = getattr(e, "token", None)
    line = token.line if isinstance(token, Token) and token.line else getattr(e, "line", None)
    kinds: list[str] = []
    for item in reversed(list(stack)):
        pos = _position(item)
        if pos is None or pos[0] != line:
            break
        kinds.append("tree" if isinstance(item, Tree) else _kind(item))
    return position, tuple(reversed(kinds))


_TABLE_LOCK = threading.Lock()
_TABLES: dict[int, dict[tuple[int, tuple[str, ...]], str | None]] = {}


def example_signatures(parser: Lark) -> dict[str, list[tuple[int, tuple[str, ...]] | None]]:
    """Each example message -> the signature of each of its snippets (None: the snippet did not fail
    with a parse error). Used to build the table, and by the tests to check the table."""
    out: dict[str, list[tuple[int, tuple[str, ...]] | None]] = {}
    for message, snippets in EXAMPLES.items():
        sigs: list[tuple[int, tuple[str, ...]] | None] = []
        for snippet in snippets:
            try:
                parser.parse(snippet)
            except UnexpectedInput as e:
                sigs.append(_signature(e))
            except Exception:
                sigs.append(None)
            else:
                sigs.append(None)
        out[message] = sigs
    return out


def _table(parser: Lark) -> dict[tuple[int, tuple[str, ...]], str | None]:
    with _TABLE_LOCK:
        table = _TABLES.get(id(parser))
        if table is None:
            table = {}
            for message, sigs in example_signatures(parser).items():
                for sig in sigs:
                    if sig is None:
                        continue
                    if sig in table and table[sig] != message:
                        table[sig] = None  # two constructs share this state: no specific message
                    else:
                        table[sig] = message
            _TABLES[id(parser)] = table
        return table


def example_message(e: UnexpectedInput, parser: Lark) -> str | None:
    sig = _signature(e)
    return _table(parser).get(sig) if sig is not None else None


# ---------------------------------------------------------------------------------------------------------
# Helpers


def keyword_values(parser: Lark) -> dict[str, str]:
    """Terminal name -> literal text, for every keyword and punctuation terminal."""
    return {t.name: str(t.pattern.value) for t in parser.terminals if t.pattern.type == "str"}


def friendly(name: str, literals: Mapping[str, str]) -> str:
    if name in literals:
        return f"`{literals[name]}`"
    return TERMINAL_NAMES.get(name, name.lower())


def join_or(items: Sequence[str], limit: int = 12) -> str:
    items = list(items)
    if len(items) > limit:
        items = [*items[:limit], "…"]
        return ", ".join(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def expected_list(accepts: Iterable[str], literals: Mapping[str, str]) -> str:
    names = [a for a in accepts if a not in ("_DEDENT", "$END")] or list(accepts)
    if "STRING" in names and "LONG_STRING" in names:
        names.remove("LONG_STRING")

    # words first (alphabetical), then punctuation, then descriptions
    def key(a: str) -> tuple[int, str]:
        if a in literals:
            return (0 if literals[a][:1].isalpha() else 1, literals[a])
        return (2, a)

    return join_or([friendly(a, literals) for a in sorted(set(names), key=key)])


def _short(value: str, limit: int = 30) -> str:
    value = value.replace("\n", "⏎")
    return value if len(value) <= limit else value[: limit - 1] + "…"


def found_text(tok: Token) -> str:
    if tok.type in TERMINAL_NAMES and tok.type not in ("NAME", "INT", "SIGNED_INT", "NUMBER", "DURATION"):
        if tok.type in ("STRING", "LONG_STRING", "REGEX"):
            return f"`{_short(str(tok))}`"
        return TERMINAL_NAMES[tok.type]
    return f"`{_short(str(tok))}`"


_WORD = re.compile(r"==|!=|=|[A-Za-z_][A-Za-z0-9_-]*")


def word_at(text: str, pos: int | None) -> str | None:
    if pos is None or pos < 0 or pos >= len(text):
        return None
    m = _WORD.match(text, pos)
    return m.group(0) if m else None


_PREDICATE_WORDS = frozenset({"is", "not", "contains", "matches", "glob", "include", "exclude"})


def _subject_before(text: str, pos: int) -> str | None:
    """The subject kind a condition line starts with, read from the text before ``pos`` on its line."""
    from mockllm.dsl.tree import describe
    from mockllm.dsl.tree.nodes import Subject, SubjectKind

    line = text[text.rfind("\n", 0, pos) + 1 : pos].strip()
    best: tuple[int, str] | None = None
    for kind in get_args(SubjectKind):
        lead = describe.subject(Subject(kind, "ARG")).split('"ARG"')[0].split("ARG")[0].strip()
        if lead and (line == lead or line.startswith(lead + " ")) and (best is None or len(lead) > best[0]):
            best = (len(lead), kind)
    return best[1] if best is not None else None


def _allowed_predicate_words(kind: str) -> set[str]:
    from mockllm.dsl.tree.describe import OP_WORDS
    from mockllm.dsl.tree.predicates import allowed_ops

    return {word for op in allowed_ops(kind) for word in OP_WORDS[op].split()[:1]} | {"not", "ignoring"}


def suggestion(
    word: str, accepts: Iterable[str], literals: Mapping[str, str], text: str | None = None, pos: int | None = None
) -> str | None:
    """What the user probably meant by ``word`` where the parser accepts ``accepts``. With the source
    ``text`` and the word's position, a predicate is suggested only if the line's subject takes it
    (``last user message includes`` is not told to write `include`, which it does not take)."""
    acceptable = {literals[a] for a in accepts if a in literals and literals[a][:1].isalpha()}
    if text is not None and pos is not None and acceptable & _PREDICATE_WORDS:
        kind = _subject_before(text, pos)
        if kind is not None:
            allowed = _allowed_predicate_words(kind)
            acceptable = {w for w in acceptable if w not in _PREDICATE_WORDS or w in allowed}
    synonym = SYNONYMS.get(word.lower()) or SYNONYMS.get(word)
    if synonym and synonym[0] in acceptable:
        return synonym[1]
    if synonym and synonym[0] in ("include", "exclude") and "contains" in acceptable:
        return "contains" if synonym[0] == "include" else "not contains"  # text subjects: `includes` means this
    close = difflib.get_close_matches(word.lower(), sorted(acceptable), n=1, cutoff=0.6)
    return close[0] if close else None


def _position(item: Any) -> tuple[int, int, int, int] | None:
    if isinstance(item, Token):
        if item.line is None:
            return None
        return item.line, item.column or 1, item.end_line or item.line, item.end_column or (item.column or 1)
    if isinstance(item, Tree):
        meta = item.meta
        if getattr(meta, "empty", True):
            return None
        return meta.line, meta.column, meta.end_line, meta.end_column
    return None


def _stack(e: UnexpectedInput) -> list[Any]:
    state = getattr(e, "state", None)
    stack = getattr(state, "value_stack", None)
    return list(stack) if stack is not None else []


def _accepts(e: UnexpectedInput) -> set[str]:
    try:
        if isinstance(e, UnexpectedToken):
            return set(e.accepts or e.expected)
        ip = getattr(e, "interactive_parser", None)
        if ip is not None:
            return set(ip.accepts())
    except Exception:
        pass
    return set(getattr(e, "allowed", None) or getattr(e, "expected", None) or ())


def _open_bracket(stack: Sequence[Any]) -> Token | None:
    for item in reversed(stack):
        if isinstance(item, Token) and item.type in ("LBRACE", "LSQB"):
            return item
    return None


def _context(accepts: set[str]) -> tuple[str, str] | None:
    for markers, name, phrase in _CONTEXTS:
        if markers <= accepts:
            return name, phrase
    return None


def _last_real(stack: Sequence[Any]) -> Any:
    for item in reversed(stack):
        if isinstance(item, Token) and item.type in ("_NL", "_INDENT", "_DEDENT"):
            continue
        return item
    return None


# ---------------------------------------------------------------------------------------------------------
# The diagnosis


def describe_unexpected(e: UnexpectedInput, text: str, file: str, parser: Lark) -> d.Diagnostic:
    """One diagnostic for Lark's ``e`` raised while parsing ``text``."""
    literals = keyword_values(parser)
    if isinstance(e, UnexpectedToken):
        return _unexpected_token(e, text, file, parser, literals)
    if isinstance(e, UnexpectedCharacters):
        return _unexpected_character(e, text, file, parser, literals)
    line = max(getattr(e, "line", 1) or 1, 1)
    column = max(getattr(e, "column", 1) or 1, 1)
    return d.error("syntax", "this line cannot be read", Span.point(file, line, column))


def _unexpected_character(
    e: UnexpectedCharacters, text: str, file: str, parser: Lark, literals: Mapping[str, str]
) -> d.Diagnostic:
    pos = e.pos_in_stream or 0
    line, column = max(e.line, 1), max(e.column, 1)
    char = text[pos] if 0 <= pos < len(text) else ""
    rest = text[pos:].split("\n", 1)[0]
    accepts = _accepts(e)
    stack = _stack(e)
    whole_rest = Span(file, line, column, line, column + max(len(rest), 1))
    if char == '"':
        if text.startswith('"""', pos):
            return d.error(
                "syntax",
                'unterminated string: add the closing \'"""\'',
                whole_rest,
                'a triple-quoted string ends with """',
            )
        return d.error(
            "syntax",
            "unterminated string: add the closing '\"'",
            whole_rest,
            'a string ends on the line it starts on; use """…""" for text over several lines',
        )
    if char == "/" and "REGEX" in accepts:
        return d.error(
            "syntax", "unterminated regex: add the closing '/'", whole_rest, "write a slash inside a regex as \\/"
        )
    point = Span.point(file, line, column)
    in_json = _open_bracket(stack) is not None
    if char == "'":
        prefix = "invalid JSON: " if in_json else ""
        return d.error(
            "syntax", f"{prefix}strings are written in double quotes, found `'`", point, "write \"…\" instead of '…'"
        )
    word = word_at(text, pos)
    if word is not None:
        hint = suggestion(word, accepts, literals, text, pos)
        if hint is not None:
            return d.error(
                "syntax",
                f"{_expectation(accepts, literals, None)}, found `{word}`",
                Span.point(file, line, column, len(word)),
                f"did you mean `{hint}`?",
            )
    shown = char if char.isprintable() and char else repr(char)
    prefix = "invalid JSON: " if in_json else ""
    return d.error("syntax", f"{prefix}unexpected character `{shown}`; {_expectation(accepts, literals, None)}", point)


def _expectation(accepts: set[str], literals: Mapping[str, str], after: str | None) -> str:
    ctx = _context(accepts)
    if ctx is not None:
        return ctx[1]
    tail = f" after `{after}`" if after else ""
    return f"expected {expected_list(accepts, literals)}{tail}"


INDENT_UNIT = 4  # what `mockllm fmt` writes; a block line off that grid is the likelier mistake


def _under_indented_first_line(text: str, deeper: int) -> tuple[int, int, int, int] | None:
    """When line ``deeper`` is indented past the line before it because that line, the first of its
    block, is the one under-indented (``reply:`` / two spaces in / four spaces in), that first line's
    number and column, and the line and column of the next line of its block; else None (the deeper line
    is off)."""
    lines = text.split("\n")

    def before(n: int) -> int | None:
        n -= 1
        while n >= 1 and (not lines[n - 1].strip() or lines[n - 1].lstrip().startswith("#")):
            n -= 1
        return n if n >= 1 else None

    def indent(n: int) -> int:
        return len(lines[n - 1]) - len(lines[n - 1].lstrip(" "))

    if deeper > len(lines):
        return None
    first = before(deeper)
    header = before(first) if first is not None else None
    if first is None or header is None or not lines[header - 1].rstrip().endswith(":"):
        return None
    top, mid, low = indent(header), indent(first), indent(deeper)
    if not top < mid < low or (mid - top) % INDENT_UNIT == 0 or (low - top) % INDENT_UNIT != 0:
        return None
    return first, mid + 1, deeper, low + 1


def _unexpected_token(
    e: UnexpectedToken, text: str, file: str, parser: Lark, literals: Mapping[str, str]
) -> d.Diagnostic:
    tok = e.token
    accepts = _accepts(e)
    stack = _stack(e)
    prev = _last_real(stack)
    prev_text = str(prev) if isinstance(prev, Token) and prev.type in literals else None
    found = found_text(tok)
    line = tok.line if tok.line and tok.line > 0 else 1
    column = tok.column if tok.column and tok.column > 0 else 1
    width = max(len(str(tok)), 1) if "\n" not in str(tok) else 1
    here = Span.point(file, line, column, width)

    # -- layout ---------------------------------------------------------------------------------------
    if tok.type == "_INDENT":
        off = _under_indented_first_line(text, tok.end_line or line)
        if off is not None:
            first, column, sibling, siblings = off
            return d.error(
                "indent",
                f"this line is indented to column {column}, less than the lines of its block "
                f"(line {sibling} is at column {siblings})",
                Span.point(file, first, column),
                f"indent it to column {siblings}, like the other lines of its block",
            )
        at = Span.point(file, tok.end_line or line, tok.end_column or 1)
        return d.error(
            "indent",
            "unexpected indentation: this line is indented more than the line before, which does not open a block",
            at,
            "indent a line only under a line that ends with ':'",
        )
    if accepts == {"_INDENT"}:
        return d.error(
            "syntax",
            "empty block: add at least one line, indented under it",
            _header_span(stack, file) or here,
            "indent the block's lines under its header",
        )
    if accepts == {"_NL"} and isinstance(prev, Token) and prev.type == "COLON":
        return d.error(
            "syntax",
            f"nothing may follow ':' on a block header, found {found}",
            here,
            "put the block's lines on the lines below, indented under the header",
        )
    if tok.type == "_NL" and "COLON" in accepts:
        at = _after(prev, file) or here
        return d.error(
            "syntax",
            "a block header must end with ':'",
            at,
            "put ':' at the end of the line and indent the block's lines under it",
        )

    # -- JSON -------------------------------------------------------------------------------------------
    bracket = _open_bracket(stack)
    if bracket is not None:
        return _json_error(e, tok, bracket, prev, accepts, literals, file, here, found)

    # -- keyword-led lines --------------------------------------------------------------------------------
    word = word_at(text, tok.start_pos) if tok.type in ("NAME", "EQUAL") else None
    if tok.type in literals and literals[tok.type][:1].isalpha():
        word = literals[tok.type]
    hint = suggestion(word, accepts, literals, text, tok.start_pos) if word else None
    did_you_mean = f"did you mean `{hint}`?" if hint else None
    if word and tok.type == "EQUAL" and word != "=":
        here = Span.point(file, line, column, len(word))
        found = f"`{word}`"

    labelled = example_message(e, parser)
    ctx = _context(accepts)
    known_keyword = word is not None and word in set(literals.values())

    if ctx is not None and ctx[0] == "condition" and tok.type == "NAME" and word and not known_keyword:
        if hint:
            message = f"unknown subject `{word}`; did you mean `{hint}`?"
        else:
            message = f"unknown subject `{word}`; {ctx[1]}"
        return d.error("syntax", message, here, f"a condition starts with a subject: {_SUBJECT_LIST}")

    if labelled is not None:
        message = f"{labelled}, found {found}"
    elif ctx is not None:
        message = f"{ctx[1]}, found {found}"
    else:
        message = f"{_expectation(accepts, literals, prev_text)}, found {found}"
    if tok.type == "$END":
        message = message.replace(f", found {found}", ", but the file ends here")

    hint_text = did_you_mean
    if known_keyword and word in REPLY_ELEMENT_WORDS and ctx is not None and ctx[0] in _STEP_CONTEXTS:
        hint_text = None  # `retry` in a step is a misplaced reply element, not a mistyped `reply`
    glued = _glued_number(prev, tok)
    if hint_text is None and glued is not None:
        here = Span.point(file, prev.line or line, prev.column or column, len(glued))
        message = message.replace(f", found {found}", f", found `{glued}`")
        hint_text = _number_hint(text, prev, glued)
    if hint_text is None and _glued_to_string(prev, tok):
        hint_text = _QUOTE_HINT
    if hint_text is None and tok.type in _NUMBERS and "DURATION" in accepts:
        hint_text = f"a duration has a unit: write `{tok}ms` or `{tok}s`"
    if hint_text is None and known_keyword and word is not None and tok.type == "NAME":
        hint_text = _misplaced(word, ctx[0] if ctx else None, text, tok)
    if hint_text is None and tok.type == "NAME" and "STRING" in accepts:
        hint_text = f'strings are written in double quotes: `"{word}"`'
    return d.error("syntax", message, here, hint_text)


_STEP_CONTEXTS = ("step line", "scenario line")
_QUOTE_HINT = 'a `"` inside a string is written `\\"`'


def _glued_number(prev: Any, tok: Token) -> str | None:
    """``42x``: a number with letters stuck to it lexes as a number and a name."""
    if tok.type != "NAME" or not isinstance(prev, Token) or prev.type not in _NUMBERS:
        return None
    if prev.end_pos is None or prev.end_pos != tok.start_pos:
        return None
    return f"{prev}{tok}"


def _number_hint(text: str, prev: Token, glued: str) -> str:
    line_start = text.rfind("\n", 0, prev.start_pos or 0) + 1
    words = text[line_start : prev.start_pos].split()
    if words[:1] == ["error"]:
        return "the status is a whole number such as `429`"
    if words[:1] == ["status"]:
        return "the status is a whole number such as `503`"
    return f"`{glued}` is not a number: write digits only, such as `{prev}`"


def _glued_to_string(prev: Any, tok: Token) -> bool:
    """``"say "hi""``: a string followed, with no space, by more of what was meant as the string."""
    return (
        isinstance(prev, Token)
        and prev.type == "STRING"
        and tok.type not in ("_NL", "_INDENT", "_DEDENT", "$END")
        and prev.end_pos is not None
        and prev.end_pos == tok.start_pos
    )


def _misplaced(word: str, context: str | None, text: str, tok: Token) -> str:
    """The hint for a keyword of the language found where it does not belong."""
    if word in REPLY_ELEMENT_WORDS and context in _STEP_CONTEXTS:
        where = "the step's" if context == "step line" else "a step's"
        hint = f"`{word}` is a reply element: it goes inside {where} `reply:` block"
        if word in ("latency", "retry"):
            rest = text[tok.end_pos or 0 :].split("\n", 1)[0].strip()
            if word == "retry":
                rest = rest.removeprefix("after").strip()
            bare = _BARE_DURATION.match(rest)
            if bare:
                unit = "s" if word == "retry" else "ms"
                hint += f" (and a duration has a unit: `{bare.group()}{unit}`)"
        return hint
    return f"`{word}` does not belong here; check the line's indentation and spelling"


def _json_error(
    e: UnexpectedToken,
    tok: Token,
    bracket: Token,
    prev: Any,
    accepts: set[str],
    literals: Mapping[str, str],
    file: str,
    here: Span,
    found: str,
) -> d.Diagnostic:
    closer = "}" if bracket.type == "LBRACE" else "]"
    if tok.type in ("$END", "_DEDENT", "_INDENT", "_NL"):
        where = Span.point(file, bracket.line or 1, bracket.column or 1)
        return d.error(
            "syntax", f"invalid JSON: this `{bracket}` is never closed", where, f"add the closing `{closer}`"
        )
    hint: str | None = None
    if _glued_to_string(prev, tok):
        hint = _QUOTE_HINT
    elif tok.type in ("RBRACE", "RSQB") and isinstance(prev, Token) and prev.type == "COMMA":
        hint = "JSON allows no comma after the last item; remove it"
    elif tok.type == "NAME":
        word = str(tok)
        if word in ("True", "False", "None", "TRUE", "FALSE", "NULL", "nil", "undefined"):
            hint = "JSON writes `true`, `false` and `null` in lower case"
        else:
            hint = f'JSON keys and strings are written in double quotes: `"{word}"`'
    what = "a JSON value"
    if accepts <= {"STRING", "RBRACE"}:
        what = 'a key in double quotes, such as `"city"`'
    elif accepts <= {"COMMA", "RBRACE"}:
        what = "`,` or `}`"
    elif accepts <= {"COMMA", "RSQB"}:
        what = "`,` or `]`"
    elif accepts == {"COLON"}:
        what = "`:` after the key"
    return d.error("syntax", f"invalid JSON: expected {what}, found {found}", here, hint)


def _after(prev: Any, file: str) -> Span | None:
    pos = _position(prev)
    if pos is None:
        return None
    return Span.point(file, pos[2], pos[3])


def _header_span(stack: Sequence[Any], file: str) -> Span | None:
    """The header line (`when:`) of a block whose body is missing."""
    colon = None
    for item in reversed(stack):
        if isinstance(item, Token) and item.type == "COLON":
            colon = item
            break
    if colon is None or colon.line is None:
        return None
    start = (colon.line, colon.column or 1)
    for item in stack:
        pos = _position(item)
        if pos is not None and pos[0] == colon.line and (pos[0], pos[1]) < start:
            start = (pos[0], pos[1])
            break
    return Span(file, start[0], start[1], colon.line, (colon.column or 1) + 1)
