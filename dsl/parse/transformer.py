"""From Lark's parse tree to the syntax tree of :mod:`mockllm.dsl.tree.nodes`.

The transformer also decodes literals (string escapes, triple-quoted text, durations, regex flags,
JSON) and checks the few rules the grammar leaves open (one ``when:`` per step, settings before
steps, at most one fallback). Each problem is a :class:`ScriptSyntaxError` carrying a span; the parser
turns it into a diagnostic for the block it was found in."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import attrs
from lark import Token, Tree

from mockllm.dsl.span import Span
from mockllm.dsl.tree import nodes as n
from mockllm.errors import EscapeError, ScriptSyntaxError

REGEX_FLAGS = "imsx"

#: Escapes of a script string, and what they stand for (``\uXXXX`` is handled apart).
STRING_ESCAPES: Mapping[str, str] = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
#: Escapes of a JSON string.
JSON_ESCAPES: Mapping[str, str] = {**STRING_ESCAPES, "/": "/", "b": "\b", "f": "\f", "r": "\r"}


# ---------------------------------------------------------------------------------------------------------
# Literal decoding (pure functions, shared with the formatter)


def decode_escapes(raw: str, escapes: Mapping[str, str] = STRING_ESCAPES) -> str:
    """Replace the escapes in ``raw`` (the text between the quotes); EscapeError at a bad one."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i = 0
    size = len(raw)
    while i < size:
        ch = raw[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = raw[i + 1] if i + 1 < size else ""
        if nxt in escapes:
            out.append(escapes[nxt])
            i += 2
            continue
        if nxt == "u":
            code, width = _unicode_escape(raw, i)
            out.append(code)
            i += width
            continue
        shown = "\\" + nxt if nxt and nxt.isprintable() else "\\"
        listed = ", ".join("\\" + k for k in escapes) + " and \\uXXXX"
        raise EscapeError(
            i,
            2 if nxt else 1,
            f"unknown escape `{shown}` in a string",
            f"the escapes are {listed}; write \\\\ for a backslash",
        )
    return "".join(out)


def _unicode_escape(raw: str, i: int) -> tuple[str, int]:
    hint = "write \\u followed by four hex digits, such as \\u00e9"
    digits = raw[i + 2 : i + 6]
    if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise EscapeError(i, 2, "a \\u escape needs four hex digits", hint)
    code = int(digits, 16)
    if 0xD800 <= code < 0xDC00 and raw[i + 6 : i + 8] == "\\u":
        low_digits = raw[i + 8 : i + 12]
        if len(low_digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in low_digits):
            low = int(low_digits, 16)
            if 0xDC00 <= low < 0xE000:
                return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), 12
    if 0xD800 <= code < 0xE000:
        raise EscapeError(
            i,
            6,
            "a \\u escape names half of a surrogate pair",
            "write the character itself, or both halves (\\ud83d\\ude00)",
        )
    return chr(code), 6


def long_string_layout(raw: str) -> str:
    """The text of a triple-quoted string before escapes are decoded: a newline right after the
    opening quotes is dropped, a last line holding only spaces is dropped, the common indentation
    removed."""
    if raw.startswith("\n"):
        raw = raw[1:]
    lines = raw.split("\n")
    if len(lines) > 1 and lines[-1].strip(" ") == "":
        lines.pop()
    return textwrap.dedent("\n".join(lines))


def long_string_value(raw: str) -> str:
    """The value of a triple-quoted string whose text between the quotes is ``raw``."""
    return decode_escapes(long_string_layout(raw))


def parse_duration(text: str) -> n.Duration:
    if text.endswith("ms"):
        return n.Duration(float(Decimal(text[:-2])))
    return n.Duration(float(Decimal(text[:-1]) * 1000))


def parse_number(text: str) -> int | float:
    if any(c in text for c in ".eE"):
        value = float(text)
        if value in (float("inf"), float("-inf")):
            raise ValueError("number too large")
        return value
    return int(text)


def decode_regex(body: str) -> str:
    """The pattern of ``/body/``: ``\\/`` stands for a slash; other escapes stay for ``re``."""
    out: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append("/" if body[i + 1] == "/" else body[i : i + 2])
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


# ---------------------------------------------------------------------------------------------------------
# Lines that are not nodes of their own


@attrs.frozen
class VersionLine:
    number: int
    span: Span
    number_span: Span


@attrs.frozen
class Line:
    """A line of a scenario or step body that sets one field (``priority``, ``when:``, ``reply …``)."""

    kind: str
    value: Any
    span: Span


@attrs.frozen
class FallbackLine:
    reply: n.Reply
    span: Span


TopItem = VersionLine | n.Use | n.NamedReply | n.Defaults | n.Scenario | n.McpServer

_SCENARIO_WORDS = {"priority": "priority", "tags": "tags", "order_any": "order any", "when": "when:"}
_STEP_WORDS = {
    "when": "when:",
    "after": "after",
    "expect": "expect:",
    "consumption": "repeat/always",
    "reply": "reply",
}


class Cursor:
    """The last real token (not a newline or indentation token) before the parser's lookahead token.

    An LALR parser reduces a rule when it sees the token after the rule's last token, so while a rule
    is being reduced this is where the rule ends. The parser's token stream keeps it up to date."""

    __slots__ = ("end",)

    def __init__(self) -> None:
        self.end: Token | None = None


def _start(value: Any) -> tuple[int, int]:
    """Line and column where an already-reduced child starts."""
    if isinstance(value, Token):
        return value.line or 0, value.column or 0
    span = getattr(value, "span", None)
    if isinstance(span, Span):
        return span.line, span.column
    if isinstance(value, Tree) and value.children:
        return _start(value.children[0])
    return 0, 0


class ScriptTransformer:
    """Builds nodes while the LALR parser reduces (a tree-less parse, no parse tree in between).

    The parser calls the method named after each rule (or alias) with the rule's kept children, through
    :meth:`wrap`, which first records where the rule starts (its first child, keywords included) and
    ends (:class:`Cursor`); :meth:`here` is that span."""

    def __init__(self, file: str, cursor: Cursor | None = None):
        self.file = file
        self.cursor = cursor if cursor is not None else Cursor()
        #: The first mistake found; the callbacks after it do nothing (the block is reported, not built).
        self.problem: ScriptSyntaxError | None = None
        self._line = 0
        self._column = 0
        self._end: Token | None = None

    def reset(self, file: str) -> None:
        """Ready for another parse (of ``file``)."""
        self.file = file
        self.cursor.end = None
        self.problem = None
        self._end = None

    def wrap(self, f: Callable[[list[Any]], Any]) -> Callable[[list[Any]], Any]:
        """Lark's callback ``f`` for one rule (it takes the rule's children as parsed, filters them and
        calls the method), made to record the rule's position first and to keep a :class:`ScriptSyntaxError`
        instead of raising it: parsing goes on, so a parse error later in the block still wins."""
        cursor = self.cursor

        def callback(children: list[Any]) -> Any:
            if self.problem is not None:
                return None
            first = children[0]
            if type(first) is Token:
                self._line = first.line or 0
                self._column = first.column or 0
            else:
                self._line, self._column = _start(first)
            self._end = cursor.end
            try:
                return f(children)
            except ScriptSyntaxError as problem:
                self.problem = problem
                return None

        return callback

    # -- positions --------------------------------------------------------------------------------------

    def here(self) -> Span:
        """The span of the rule being reduced: from its first token to its last real token."""
        end = self._end
        if end is None:
            return Span(self.file, 0, 0, 0, 0)
        return Span(self.file, self._line, self._column, end.end_line or 0, end.end_column or 0)

    def tspan(self, tok: Token) -> Span:
        return Span(self.file, tok.line or 0, tok.column or 0, tok.end_line or 0, tok.end_column or 0)

    def _offset_span(self, tok: Token, offset: int, width: int) -> Span:
        """The span of ``width`` characters at ``offset`` inside token ``tok`` (which may span lines)."""
        before = str(tok)[:offset]
        line = (tok.line or 0) + before.count("\n")
        if "\n" in before:
            column = len(before) - before.rindex("\n")
        else:
            column = (tok.column or 0) + offset
        return Span(self.file, line, column, line, column + width)

    # -- top level ---------------------------------------------------------------------------------------

    def start(self, items: list[TopItem]) -> list[TopItem]:
        return items

    def version(self, ch: list[Token]) -> VersionLine:
        return VersionLine(int(ch[0]), self.here(), self.tspan(ch[0]))

    def use(self, ch: list[Any]) -> n.Use:
        return n.Use(self._s(ch[0]), str(ch[1]), span=self.here())

    def named_reply(self, ch: list[Any]) -> n.NamedReply:
        return n.NamedReply(str(ch[0]), tuple(ch[1:]), span=self.here())

    def defaults(self, lines: list[Any]) -> n.Defaults:
        fallback: FallbackLine | None = None
        elements = []
        for line in lines:
            if isinstance(line, FallbackLine):
                if fallback is not None:
                    raise ScriptSyntaxError(
                        line.span,
                        "`defaults:` holds at most one fallback",
                        f"keep one of the fallbacks (the first is on line {fallback.span.line})",
                    )
                fallback = line
            else:
                elements.append(line)
        return n.Defaults(tuple(elements), fallback.reply if fallback else None, span=self.here())

    def fallback_echo(self, ch: list[Any]) -> FallbackLine:
        span = self.here()
        return FallbackLine(n.ReplyBlock((n.Echo(span=span),), span=span), span)

    def fallback_like(self, ch: list[Any]) -> FallbackLine:
        return FallbackLine(ch[0], self.here())

    def fallback_block(self, ch: list[Any]) -> FallbackLine:
        span = self.here()
        return FallbackLine(n.ReplyBlock(tuple(ch), span=span), span)

    def reply_ref(self, ch: list[Token]) -> n.ReplyRef:
        if len(ch) == 2:
            return n.ReplyRef(str(ch[1]), str(ch[0]), span=self.here())
        return n.ReplyRef(str(ch[0]), span=self.here())

    # -- MCP tool servers --------------------------------------------------------------------------------

    def mcp_server(self, ch: list[Any]) -> n.McpServer:
        items = ch[1:]
        return n.McpServer(
            self._s(ch[0]),
            tuple(i for i in items if isinstance(i, n.McpTool)),
            tuple(i for i in items if isinstance(i, n.McpResource)),
            tuple(i for i in items if isinstance(i, n.McpPrompt)),
            span=self.here(),
        )

    def mcp_resource(self, ch: list[Any]) -> n.McpResource:
        uri = self._s(ch[0])
        rest = list(ch[1:])
        description = self._s(rest.pop(0)) if rest and isinstance(rest[0], Token) else ""
        lines = _each_once(rest, f'resource "{uri}"')
        if "text" not in lines:
            raise ScriptSyntaxError(
                self.here(),
                f'resource "{uri}" has no `text`',
                'add `text "…"` (what `resources/read` returns), and `mime "…"` if it is not plain text',
            )
        mime = lines["mime"].value if "mime" in lines else "text/plain"
        return n.McpResource(uri, description, lines["text"].value, mime, span=self.here())

    def mcp_text(self, ch: list[Any]) -> Line:
        return Line("text", self._s(ch[0]), self.here())

    def mcp_mime(self, ch: list[Any]) -> Line:
        return Line("mime", self._s(ch[0]), self.here())

    def mcp_prompt(self, ch: list[Any]) -> n.McpPrompt:
        name = str(ch[0])
        rest = list(ch[1:])
        description = self._s(rest.pop(0)) if rest and isinstance(rest[0], Token) else ""
        arguments = tuple(x for x in rest if isinstance(x, n.McpArgument))
        messages = tuple(x for x in rest if isinstance(x, n.McpMessage))
        if not messages:
            raise ScriptSyntaxError(
                self.here(),
                f"prompt `{name}` has no message",
                'add `user "…"` (and `assistant "…"` lines): the messages `prompts/get` returns',
            )
        return n.McpPrompt(name, description, arguments, messages, span=self.here())

    def mcp_argument(self, ch: list[Any]) -> n.McpArgument:
        optional = bool(ch) and isinstance(ch[-1], Line)
        parts = ch[:-1] if optional else ch
        description = self._s(parts[1]) if len(parts) > 1 else ""
        return n.McpArgument(str(parts[0]), description, not optional, span=self.here())

    def mcp_optional(self, ch: list[Any]) -> Line:
        return Line("optional", True, self.here())

    def mcp_user(self, ch: list[Any]) -> n.McpMessage:
        return n.McpMessage("user", self._s(ch[0]), span=self.here())

    def mcp_assistant(self, ch: list[Any]) -> n.McpMessage:
        return n.McpMessage("assistant", self._s(ch[0]), span=self.here())

    def mcp_tool(self, ch: list[Any]) -> n.McpTool:
        name = str(ch[0])
        rest = list(ch[1:])
        description = self._s(rest.pop(0)) if rest and isinstance(rest[0], Token) else ""
        schemas = _each_once(rest, f"tool `{name}`")
        if "input" not in schemas:
            raise ScriptSyntaxError(
                self.here(),
                f"tool `{name}` declares no `input` schema",
                'add `input {"type": "object", "properties": {…}}` (the JSON Schema of its arguments)',
            )
        output = schemas["output"].value if "output" in schemas else None
        return n.McpTool(name, description, schemas["input"].value, output, span=self.here())

    def mcp_input(self, ch: list[Any]) -> Line:
        return Line("input", self._json(ch[0]), self.here())

    def mcp_output(self, ch: list[Any]) -> Line:
        return Line("output", self._json(ch[0]), self.here())

    # -- scenarios ---------------------------------------------------------------------------------------

    def scenario(self, ch: list[Any]) -> n.Scenario:
        name = self._s(ch[0])
        fields: dict[str, Line] = {}
        lets: list[n.Let] = []
        steps: list[n.Step] = []
        for item in ch[1:]:
            if isinstance(item, n.Step):
                steps.append(item)
                continue
            word = "let" if isinstance(item, n.Let) else _SCENARIO_WORDS[item.kind]
            if steps:
                raise ScriptSyntaxError(
                    item.span,
                    f"`{word}` must come before the scenario's first step",
                    f"move it above `step {steps[0].name}:` (line {steps[0].span.line})",
                )
            if isinstance(item, n.Let):
                lets.append(item)
                continue
            if item.kind in fields:
                raise ScriptSyntaxError(
                    item.span,
                    f"`{word}` is given twice in this scenario",
                    f"keep one (the first is on line {fields[item.kind].span.line})",
                )
            fields[item.kind] = item

        def value(kind: str, default: Any) -> Any:
            return fields[kind].value if kind in fields else default

        return n.Scenario(
            name,
            priority=value("priority", 0),
            tags=value("tags", ()),
            order_any="order_any" in fields,
            lets=tuple(lets),
            conditions=value("when", ()),
            steps=tuple(steps),
            span=self.here(),
        )

    def priority(self, ch: list[Token]) -> Line:
        return Line("priority", int(ch[0]), self.here())

    def tags(self, ch: list[Token]) -> Line:
        return Line("tags", tuple(self._s(t) if t.type == "STRING" else str(t) for t in ch), self.here())

    def order_any(self, ch: list[Any]) -> Line:
        return Line("order_any", True, self.here())

    def let(self, ch: list[Any]) -> n.Let:
        return n.Let(str(ch[0]), self._s(ch[1]), span=self.here())

    def when(self, ch: list[n.Condition]) -> Line:
        return Line("when", tuple(ch), self.here())

    def expect(self, ch: list[n.Condition]) -> Line:
        return Line("expect", tuple(ch), self.here())

    # -- steps -------------------------------------------------------------------------------------------

    def step(self, ch: list[Any]) -> n.Step:
        fields: dict[str, Line] = {}
        captures: list[n.Capture] = []
        for item in ch[1:]:
            if isinstance(item, n.Capture):
                captures.append(item)
                continue
            if item.kind in fields:
                first = fields[item.kind]
                if item.kind == "consumption":
                    message = "a step is either `repeat N` or `always`, once"
                else:
                    message = f"`{_STEP_WORDS[item.kind]}` is given twice in this step"
                raise ScriptSyntaxError(item.span, message, f"keep one (the first is on line {first.span.line})")
            fields[item.kind] = item

        def value(kind: str, default: Any) -> Any:
            return fields[kind].value if kind in fields else default

        return n.Step(
            str(ch[0]),
            conditions=value("when", ()),
            after=value("after", None),
            captures=tuple(captures),
            expects=value("expect", ()),
            consumption=value("consumption", n.Consumption()),
            reply=value("reply", None),
            span=self.here(),
        )

    def after(self, ch: list[Token]) -> Line:
        span = self.here()
        return Line("after", n.After(str(ch[0]), span=span), span)

    def capture(self, ch: list[Any]) -> n.Capture:
        return n.Capture(str(ch[0]), ch[1], self._regex(ch[2]), span=self.here())

    def repeat(self, ch: list[Token]) -> Line:
        span = self.here()
        return Line("consumption", n.Consumption("repeat", int(ch[0]), span=span), span)

    def always(self, ch: list[Any]) -> Line:
        span = self.here()
        return Line("consumption", n.Consumption("always", span=span), span)

    def reply_block(self, ch: list[Any]) -> Line:
        span = self.here()
        return Line("reply", n.ReplyBlock(tuple(ch), span=span), span)

    def reply_like(self, ch: list[Any]) -> Line:
        return Line("reply", ch[0], self.here())

    def reply_echo(self, ch: list[Any]) -> Line:
        span = self.here()
        return Line("reply", n.ReplyBlock((n.Echo(span=span),), span=span), span)

    # -- conditions --------------------------------------------------------------------------------------

    def condition(self, ch: list[Any]) -> n.Condition:
        return n.Condition(ch[0], ch[1], False, span=self.here())

    def condition_ignoring_case(self, ch: list[Any]) -> n.Condition:
        return n.Condition(ch[0], ch[1], True, span=self.here())

    def _subject(self, kind: n.SubjectKind, arg: str | None = None) -> n.Subject:
        return n.Subject(kind, arg, span=self.here())

    def s_provider(self, ch: list[Any]) -> n.Subject:
        return self._subject("provider")

    def s_endpoint(self, ch: list[Any]) -> n.Subject:
        return self._subject("endpoint")

    def s_model(self, ch: list[Any]) -> n.Subject:
        return self._subject("model")

    def s_stream(self, ch: list[Any]) -> n.Subject:
        return self._subject("stream")

    def s_last_user_message(self, ch: list[Any]) -> n.Subject:
        return self._subject("last_user_message")

    def s_last_message(self, ch: list[Any]) -> n.Subject:
        return self._subject("last_message")

    def s_any_message(self, ch: list[Any]) -> n.Subject:
        return self._subject("any_message", ch[0])

    def s_system_prompt(self, ch: list[Any]) -> n.Subject:
        return self._subject("system_prompt")

    def s_tools(self, ch: list[Any]) -> n.Subject:
        return self._subject("tools")

    def s_tool_result(self, ch: list[Any]) -> n.Subject:
        return self._subject("tool_result", self._s(ch[0]))

    def s_header(self, ch: list[Any]) -> n.Subject:
        return self._subject("header", self._s(ch[0]))

    def s_field(self, ch: list[Any]) -> n.Subject:
        return self._subject("field", self._s(ch[0]))

    def s_turn(self, ch: list[Any]) -> n.Subject:
        return self._subject("turn")

    def s_input(self, ch: list[Any]) -> n.Subject:
        return self._subject("input")

    def s_tool(self, ch: list[Any]) -> n.Subject:
        return self._subject("tool")

    def s_argument(self, ch: list[Any]) -> n.Subject:
        return self._subject("argument", self._s(ch[0]))

    def s_attachments(self, ch: list[Any]) -> n.Subject:
        return self._subject("attachments")

    def role(self, ch: list[Token]) -> str:
        return str(ch[0])

    def provider_word(self, ch: list[Token]) -> str:
        return str(ch[0])

    def _predicate(self, op: n.PredicateOp, value: Any = None) -> n.Predicate:
        return n.Predicate(op, value, span=self.here())

    def p_is(self, ch: list[Any]) -> n.Predicate:
        return self._predicate("is", self._value(ch[0]))

    def p_is_not(self, ch: list[Any]) -> n.Predicate:
        return self._predicate("is_not", self._value(ch[0]))

    def p_contains(self, ch: list[Any]) -> n.Predicate:
        return self._predicate("contains", self._s(ch[0]))

    def p_not_contains(self, ch: list[Any]) -> n.Predicate:
        return self._predicate("not_contains", self._s(ch[0]))

    def p_matches(self, ch: list[Token]) -> n.Predicate:
        return self._predicate("matches", self._regex(ch[0]))

    def p_not_matches(self, ch: list[Token]) -> n.Predicate:
        return self._predicate("not_matches", self._regex(ch[0]))

    def p_glob(self, ch: list[Any]) -> n.Predicate:
        return self._predicate("glob", self._s(ch[0]))

    def p_include(self, ch: list[Any]) -> n.Predicate:
        return self._predicate("include", self._s(ch[0]))

    def p_exclude(self, ch: list[Any]) -> n.Predicate:
        return self._predicate("exclude", self._s(ch[0]))

    def p_present(self, ch: list[Any]) -> n.Predicate:
        return self._predicate("present")

    def p_absent(self, ch: list[Any]) -> n.Predicate:
        return self._predicate("absent")

    def p_error(self, ch: list[Any]) -> n.Predicate:
        return self._predicate("error")

    def p_at_least(self, ch: list[Token]) -> n.Predicate:
        return self._predicate("at_least", self._number(ch[0]))

    def p_at_most(self, ch: list[Token]) -> n.Predicate:
        return self._predicate("at_most", self._number(ch[0]))

    # -- reply elements ----------------------------------------------------------------------------------

    def text(self, ch: list[Any]) -> n.Text:
        return n.Text(self._s(ch[0]), span=self.here())

    def tool_call(self, ch: list[Any]) -> n.ToolCall:
        call_id = self._s(ch[2]) if len(ch) > 2 else None
        return n.ToolCall(str(ch[0]), ch[1], call_id, span=self.here())

    def thinking(self, ch: list[Any]) -> n.Thinking:
        return n.Thinking(self._s(ch[0]), span=self.here())

    def refusal(self, ch: list[Any]) -> n.Refusal:
        return n.Refusal(self._s(ch[0]), span=self.here())

    def finish(self, ch: list[Any]) -> n.Finish:
        return n.Finish(ch[0], span=self.here())

    def finish_reason(self, ch: list[Token]) -> str:
        return str(ch[0])

    def usage(self, ch: list[Token]) -> n.Usage:
        return n.Usage(int(ch[0]), int(ch[1]), span=self.here())

    def stream_word(self, ch: list[Token]) -> n.Stream:
        return n.Stream("word", None, _apart(ch, 0), span=self.here())

    def stream_chunks(self, ch: list[Token]) -> n.Stream:
        return n.Stream("chunks", int(ch[0]), _apart(ch, 1), span=self.here())

    def stream_characters(self, ch: list[Token]) -> n.Stream:
        return n.Stream("characters", int(ch[0]), _apart(ch, 1), span=self.here())

    def chunks(self, ch: list[Token]) -> n.Chunks:
        return n.Chunks(tuple(self._s(t) for t in ch), span=self.here())

    def latency(self, ch: list[Token]) -> n.Latency:
        return n.Latency(parse_duration(str(ch[0])), span=self.here())

    def error(self, ch: list[Any]) -> n.Error:
        return n.Error(int(ch[0]), self._s(ch[1]), span=self.here())

    def retry_after(self, ch: list[Token]) -> n.RetryAfter:
        return n.RetryAfter(parse_duration(str(ch[0])), span=self.here())

    def header(self, ch: list[Any]) -> n.Header:
        return n.Header(self._s(ch[0]), self._s(ch[1]), span=self.here())

    def echo_header(self, ch: list[Any]) -> n.EchoHeader:
        return n.EchoHeader(self._s(ch[0]), span=self.here())

    def status(self, ch: list[Token]) -> n.Status:
        return n.Status(int(ch[0]), span=self.here())

    def body(self, ch: list[Any]) -> n.Body:
        return n.Body(self._json(ch[0]), span=self.here())

    def disconnect(self, ch: list[Token]) -> n.Disconnect:
        return n.Disconnect(int(ch[0]), span=self.here())

    def stream_error(self, ch: list[Any]) -> n.StreamError:
        return n.StreamError(self._s(ch[0]), int(ch[1]), span=self.here())

    def hang(self, ch: list[Any]) -> n.Hang:
        return n.Hang(span=self.here())

    def echo(self, ch: list[Any]) -> n.Echo:
        return n.Echo(span=self.here())

    def interleave_calls(self, ch: list[Any]) -> n.InterleaveCalls:
        return n.InterleaveCalls(span=self.here())

    def vector(self, ch: list[Any]) -> n.Vector:
        return n.Vector(tuple(self._json(ch[0])), span=self.here())

    def vectors_from(self, ch: list[Any]) -> n.VectorsFrom:
        return n.VectorsFrom(self._s(ch[0]), span=self.here())

    def flag(self, ch: list[Any]) -> n.Flag:
        return n.Flag(tuple(self._s(t) for t in ch), span=self.here())

    def result_text(self, ch: list[Any]) -> n.Result:
        return n.Result(self._s(ch[0]), span=self.here())

    def result_json(self, ch: list[Any]) -> n.Result:
        return n.Result(self._json(ch[0]), span=self.here())

    def result_error(self, ch: list[Any]) -> n.Result:
        return n.Result(self._s(ch[0]), True, span=self.here())

    def audio_file(self, ch: list[Any]) -> n.Audio:
        return n.Audio(path=self._s(ch[0]), span=self.here())

    def audio_length(self, ch: list[Token]) -> n.Audio:
        return n.Audio(length=parse_duration(str(ch[0])), span=self.here())

    def image(self, ch: list[Any]) -> n.Image:
        return n.Image(self._s(ch[0]), span=self.here())

    # -- literals ----------------------------------------------------------------------------------------

    def true(self, ch: list[Any]) -> bool:
        return True

    def false(self, ch: list[Any]) -> bool:
        return False

    def null(self, ch: list[Any]) -> None:
        return None

    def json_pair(self, ch: list[Any]) -> tuple[str, Any]:
        return self._json_string_token(ch[0]), self._json(ch[1])

    def json_object(self, ch: Sequence[tuple[str, Any]]) -> dict[str, Any]:
        return dict(ch)

    def json_array(self, ch: list[Any]) -> list[Any]:
        return [self._json(x) for x in ch]

    def _value(self, x: Any) -> Any:
        """A literal after `is`: script strings, numbers, or an already-built value."""
        if isinstance(x, Token):
            return self._number(x) if x.type == "NUMBER" else self._s(x)
        return x

    def _json(self, x: Any) -> Any:
        """A JSON value: strings and numbers arrive as tokens, the rest already built."""
        if isinstance(x, Token):
            return self._number(x) if x.type == "NUMBER" else self._json_string_token(x)
        return x

    def _s(self, tok: Token) -> str:
        text = str(tok)
        try:
            if tok.type == "LONG_STRING":
                raw = text[3:-3]
                decode_escapes(raw)  # report a bad escape where it is written
                return long_string_value(raw)
            return decode_escapes(text[1:-1])
        except EscapeError as e:
            prefix = 3 if tok.type == "LONG_STRING" else 1
            raise ScriptSyntaxError(self._offset_span(tok, e.offset + prefix, e.width), e.message, e.hint) from None

    def _json_string_token(self, tok: Token) -> str:
        try:
            return decode_escapes(str(tok)[1:-1], JSON_ESCAPES)
        except EscapeError as e:
            raise ScriptSyntaxError(
                self._offset_span(tok, e.offset + 1, e.width),
                "invalid JSON: " + e.message,
                'JSON escapes are \\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX',
            ) from None

    def _number(self, tok: Token) -> int | float:
        try:
            return parse_number(str(tok))
        except (ValueError, InvalidOperation):
            raise ScriptSyntaxError(
                self.tspan(tok), f"the number `{tok}` is too large", "write a number a 64-bit float can hold"
            ) from None

    def _regex(self, tok: Token) -> n.Regex:
        text = str(tok)
        end = text.rindex("/")
        flags = text[end + 1 :]
        bad = [c for c in flags if c not in REGEX_FLAGS]
        if bad:
            span = self._offset_span(tok, end + 1 + flags.index(bad[0]), 1)
            raise ScriptSyntaxError(
                span,
                f"unknown regex flag `{bad[0]}`",
                "the flags are i (ignore case), m (multi-line), s (dot matches newline), x (verbose)",
            )
        return n.Regex(decode_regex(text[1:end]), flags)


def _apart(ch: Sequence[Token], i: int) -> n.Duration | None:
    return parse_duration(str(ch[i])) if len(ch) > i else None


def json_text(value: Any) -> str:
    """JSON as the formatter writes it: compact, on one line, with ', ' and ': ' separators."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _each_once(lines: list[Line], owner: str) -> dict[str, Line]:
    """A declaration's lines by kind (a tool's ``input``/``output``, a resource's ``text``/``mime``),
    refusing a kind given twice for ``owner`` (``tool `get_forecast` ``, ``resource "URI"``)."""
    seen: dict[str, Line] = {}
    for line in lines:
        if line.kind in seen:
            raise ScriptSyntaxError(
                line.span,
                f"`{line.kind}` is given twice for {owner}",
                f"keep one (the first is on line {seen[line.kind].span.line})",
            )
        seen[line.kind] = line
    return seen
