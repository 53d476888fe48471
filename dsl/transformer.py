"""From Lark's parse tree to the syntax tree of :mod:`mockllm.dsl.nodes`.

The transformer also decodes literals (string escapes, triple-quoted text, durations, regex flags,
JSON) and checks the few rules the grammar leaves open (one ``when:`` per step, settings before
steps, at most one fallback). Each problem is a :class:`SyntaxProblem` carrying a span; the parser
turns it into a diagnostic for the block it was found in."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import attrs
from lark import Token, Transformer_NonRecursive, v_args
from lark.tree import Meta

from mockllm.dsl import nodes as n
from mockllm.dsl.span import Span

REGEX_FLAGS = "imsx"

#: Escapes of a script string, and what they stand for (``\uXXXX`` is handled apart).
STRING_ESCAPES: Mapping[str, str] = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
#: Escapes of a JSON string.
JSON_ESCAPES: Mapping[str, str] = {**STRING_ESCAPES, "/": "/", "b": "\b", "f": "\f", "r": "\r"}


class SyntaxProblem(Exception):
    """A mistake found while building the tree; becomes one diagnostic."""

    def __init__(self, span: Span, message: str, hint: str | None = None, code: str = "syntax"):
        super().__init__(message)
        self.span = span
        self.message = message
        self.hint = hint
        self.code = code


class EscapeProblem(ValueError):
    def __init__(self, offset: int, width: int, message: str, hint: str):
        super().__init__(message)
        self.offset = offset
        self.width = width
        self.message = message
        self.hint = hint


# ---------------------------------------------------------------------------------------------------------
# Literal decoding (pure functions, shared with the formatter)


def decode_escapes(raw: str, escapes: Mapping[str, str] = STRING_ESCAPES) -> str:
    """Replace the escapes in ``raw`` (the text between the quotes); EscapeProblem at a bad one."""
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
        raise EscapeProblem(
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
        raise EscapeProblem(i, 2, "a \\u escape needs four hex digits", hint)
    code = int(digits, 16)
    if 0xD800 <= code < 0xDC00 and raw[i + 6 : i + 8] == "\\u":
        low_digits = raw[i + 8 : i + 12]
        if len(low_digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in low_digits):
            low = int(low_digits, 16)
            if 0xDC00 <= low < 0xE000:
                return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), 12
    if 0xD800 <= code < 0xE000:
        raise EscapeProblem(
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


TopItem = VersionLine | n.Use | n.NamedReply | n.Defaults | n.Scenario

_SCENARIO_WORDS = {"priority": "priority", "tags": "tags", "order_any": "order any", "when": "when:"}
_STEP_WORDS = {
    "when": "when:",
    "after": "after",
    "expect": "expect:",
    "consumption": "repeat/always",
    "reply": "reply",
}


@v_args(meta=True)
class ScriptTransformer(Transformer_NonRecursive[Token, list[TopItem]]):
    """Builds nodes from a parse tree of one file (or of one top-level block of it)."""

    def __init__(self, file: str):
        super().__init__(visit_tokens=False)
        self.file = file

    # -- positions --------------------------------------------------------------------------------------

    def span(self, meta: Meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.file, 0, 0, 0, 0)
        return Span(self.file, meta.line, meta.column, meta.end_line, meta.end_column)

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

    def start(self, meta: Meta, items: list[TopItem]) -> list[TopItem]:
        return items

    def version(self, meta: Meta, ch: list[Token]) -> VersionLine:
        return VersionLine(int(ch[0]), self.span(meta), self.tspan(ch[0]))

    def use(self, meta: Meta, ch: list[Any]) -> n.Use:
        return n.Use(self._s(ch[0]), str(ch[1]), span=self.span(meta))

    def named_reply(self, meta: Meta, ch: list[Any]) -> n.NamedReply:
        return n.NamedReply(str(ch[0]), tuple(ch[1:]), span=self.span(meta))

    def defaults(self, meta: Meta, lines: list[Any]) -> n.Defaults:
        fallback: FallbackLine | None = None
        elements = []
        for line in lines:
            if isinstance(line, FallbackLine):
                if fallback is not None:
                    raise SyntaxProblem(
                        line.span,
                        "`defaults:` holds at most one fallback",
                        f"keep one of the fallbacks (the first is on line {fallback.span.line})",
                    )
                fallback = line
            else:
                elements.append(line)
        return n.Defaults(tuple(elements), fallback.reply if fallback else None, span=self.span(meta))

    def fallback_echo(self, meta: Meta, ch: list[Any]) -> FallbackLine:
        span = self.span(meta)
        return FallbackLine(n.ReplyBlock((n.Echo(span=span),), span=span), span)

    def fallback_like(self, meta: Meta, ch: list[Any]) -> FallbackLine:
        return FallbackLine(ch[0], self.span(meta))

    def fallback_block(self, meta: Meta, ch: list[Any]) -> FallbackLine:
        span = self.span(meta)
        return FallbackLine(n.ReplyBlock(tuple(ch), span=span), span)

    def reply_ref(self, meta: Meta, ch: list[Token]) -> n.ReplyRef:
        if len(ch) == 2:
            return n.ReplyRef(str(ch[1]), str(ch[0]), span=self.span(meta))
        return n.ReplyRef(str(ch[0]), span=self.span(meta))

    # -- scenarios ---------------------------------------------------------------------------------------

    def scenario(self, meta: Meta, ch: list[Any]) -> n.Scenario:
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
                raise SyntaxProblem(
                    item.span,
                    f"`{word}` must come before the scenario's first step",
                    f"move it above `step {steps[0].name}:` (line {steps[0].span.line})",
                )
            if isinstance(item, n.Let):
                lets.append(item)
                continue
            if item.kind in fields:
                raise SyntaxProblem(
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
            span=self.span(meta),
        )

    def priority(self, meta: Meta, ch: list[Token]) -> Line:
        return Line("priority", int(ch[0]), self.span(meta))

    def tags(self, meta: Meta, ch: list[Token]) -> Line:
        return Line("tags", tuple(self._s(t) if t.type == "STRING" else str(t) for t in ch), self.span(meta))

    def order_any(self, meta: Meta, ch: list[Any]) -> Line:
        return Line("order_any", True, self.span(meta))

    def let(self, meta: Meta, ch: list[Any]) -> n.Let:
        return n.Let(str(ch[0]), self._s(ch[1]), span=self.span(meta))

    def when(self, meta: Meta, ch: list[n.Condition]) -> Line:
        return Line("when", tuple(ch), self.span(meta))

    def expect(self, meta: Meta, ch: list[n.Condition]) -> Line:
        return Line("expect", tuple(ch), self.span(meta))

    # -- steps -------------------------------------------------------------------------------------------

    def step(self, meta: Meta, ch: list[Any]) -> n.Step:
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
                raise SyntaxProblem(item.span, message, f"keep one (the first is on line {first.span.line})")
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
            span=self.span(meta),
        )

    def after(self, meta: Meta, ch: list[Token]) -> Line:
        span = self.span(meta)
        return Line("after", n.After(str(ch[0]), span=span), span)

    def capture(self, meta: Meta, ch: list[Any]) -> n.Capture:
        return n.Capture(str(ch[0]), ch[1], self._regex(ch[2]), span=self.span(meta))

    def repeat(self, meta: Meta, ch: list[Token]) -> Line:
        span = self.span(meta)
        return Line("consumption", n.Consumption("repeat", int(ch[0]), span=span), span)

    def always(self, meta: Meta, ch: list[Any]) -> Line:
        span = self.span(meta)
        return Line("consumption", n.Consumption("always", span=span), span)

    def reply_block(self, meta: Meta, ch: list[Any]) -> Line:
        span = self.span(meta)
        return Line("reply", n.ReplyBlock(tuple(ch), span=span), span)

    def reply_like(self, meta: Meta, ch: list[Any]) -> Line:
        return Line("reply", ch[0], self.span(meta))

    def reply_echo(self, meta: Meta, ch: list[Any]) -> Line:
        span = self.span(meta)
        return Line("reply", n.ReplyBlock((n.Echo(span=span),), span=span), span)

    # -- conditions --------------------------------------------------------------------------------------

    def condition(self, meta: Meta, ch: list[Any]) -> n.Condition:
        return n.Condition(ch[0], ch[1], False, span=self.span(meta))

    def condition_ignoring_case(self, meta: Meta, ch: list[Any]) -> n.Condition:
        return n.Condition(ch[0], ch[1], True, span=self.span(meta))

    def _subject(self, kind: n.SubjectKind, meta: Meta, arg: str | None = None) -> n.Subject:
        return n.Subject(kind, arg, span=self.span(meta))

    def s_provider(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("provider", meta)

    def s_endpoint(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("endpoint", meta)

    def s_model(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("model", meta)

    def s_stream(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("stream", meta)

    def s_last_user_message(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("last_user_message", meta)

    def s_last_message(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("last_message", meta)

    def s_any_message(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("any_message", meta, ch[0])

    def s_system_prompt(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("system_prompt", meta)

    def s_tools(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("tools", meta)

    def s_tool_result(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("tool_result", meta, self._s(ch[0]))

    def s_header(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("header", meta, self._s(ch[0]))

    def s_field(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("field", meta, self._s(ch[0]))

    def s_turn(self, meta: Meta, ch: list[Any]) -> n.Subject:
        return self._subject("turn", meta)

    def role(self, meta: Meta, ch: list[Token]) -> str:
        return str(ch[0])

    def provider_word(self, meta: Meta, ch: list[Token]) -> str:
        return str(ch[0])

    def _predicate(self, op: n.PredicateOp, meta: Meta, value: Any = None) -> n.Predicate:
        return n.Predicate(op, value, span=self.span(meta))

    def p_is(self, meta: Meta, ch: list[Any]) -> n.Predicate:
        return self._predicate("is", meta, self._value(ch[0]))

    def p_is_not(self, meta: Meta, ch: list[Any]) -> n.Predicate:
        return self._predicate("is_not", meta, self._value(ch[0]))

    def p_contains(self, meta: Meta, ch: list[Any]) -> n.Predicate:
        return self._predicate("contains", meta, self._s(ch[0]))

    def p_not_contains(self, meta: Meta, ch: list[Any]) -> n.Predicate:
        return self._predicate("not_contains", meta, self._s(ch[0]))

    def p_matches(self, meta: Meta, ch: list[Token]) -> n.Predicate:
        return self._predicate("matches", meta, self._regex(ch[0]))

    def p_not_matches(self, meta: Meta, ch: list[Token]) -> n.Predicate:
        return self._predicate("not_matches", meta, self._regex(ch[0]))

    def p_glob(self, meta: Meta, ch: list[Any]) -> n.Predicate:
        return self._predicate("glob", meta, self._s(ch[0]))

    def p_include(self, meta: Meta, ch: list[Any]) -> n.Predicate:
        return self._predicate("include", meta, self._s(ch[0]))

    def p_exclude(self, meta: Meta, ch: list[Any]) -> n.Predicate:
        return self._predicate("exclude", meta, self._s(ch[0]))

    def p_present(self, meta: Meta, ch: list[Any]) -> n.Predicate:
        return self._predicate("present", meta)

    def p_absent(self, meta: Meta, ch: list[Any]) -> n.Predicate:
        return self._predicate("absent", meta)

    def p_error(self, meta: Meta, ch: list[Any]) -> n.Predicate:
        return self._predicate("error", meta)

    def p_at_least(self, meta: Meta, ch: list[Token]) -> n.Predicate:
        return self._predicate("at_least", meta, self._number(ch[0]))

    def p_at_most(self, meta: Meta, ch: list[Token]) -> n.Predicate:
        return self._predicate("at_most", meta, self._number(ch[0]))

    # -- reply elements ----------------------------------------------------------------------------------

    def text(self, meta: Meta, ch: list[Any]) -> n.Text:
        return n.Text(self._s(ch[0]), span=self.span(meta))

    def tool_call(self, meta: Meta, ch: list[Any]) -> n.ToolCall:
        call_id = self._s(ch[2]) if len(ch) > 2 else None
        return n.ToolCall(str(ch[0]), ch[1], call_id, span=self.span(meta))

    def thinking(self, meta: Meta, ch: list[Any]) -> n.Thinking:
        return n.Thinking(self._s(ch[0]), span=self.span(meta))

    def refusal(self, meta: Meta, ch: list[Any]) -> n.Refusal:
        return n.Refusal(self._s(ch[0]), span=self.span(meta))

    def finish(self, meta: Meta, ch: list[Any]) -> n.Finish:
        return n.Finish(ch[0], span=self.span(meta))

    def finish_reason(self, meta: Meta, ch: list[Token]) -> str:
        return str(ch[0])

    def usage(self, meta: Meta, ch: list[Token]) -> n.Usage:
        return n.Usage(int(ch[0]), int(ch[1]), span=self.span(meta))

    def stream_word(self, meta: Meta, ch: list[Token]) -> n.Stream:
        return n.Stream("word", None, _apart(ch, 0), span=self.span(meta))

    def stream_chunks(self, meta: Meta, ch: list[Token]) -> n.Stream:
        return n.Stream("chunks", int(ch[0]), _apart(ch, 1), span=self.span(meta))

    def stream_characters(self, meta: Meta, ch: list[Token]) -> n.Stream:
        return n.Stream("characters", int(ch[0]), _apart(ch, 1), span=self.span(meta))

    def chunks(self, meta: Meta, ch: list[Token]) -> n.Chunks:
        return n.Chunks(tuple(self._s(t) for t in ch), span=self.span(meta))

    def latency(self, meta: Meta, ch: list[Token]) -> n.Latency:
        return n.Latency(parse_duration(str(ch[0])), span=self.span(meta))

    def error(self, meta: Meta, ch: list[Any]) -> n.Error:
        return n.Error(int(ch[0]), self._s(ch[1]), span=self.span(meta))

    def retry_after(self, meta: Meta, ch: list[Token]) -> n.RetryAfter:
        return n.RetryAfter(parse_duration(str(ch[0])), span=self.span(meta))

    def header(self, meta: Meta, ch: list[Any]) -> n.Header:
        return n.Header(self._s(ch[0]), self._s(ch[1]), span=self.span(meta))

    def echo_header(self, meta: Meta, ch: list[Any]) -> n.EchoHeader:
        return n.EchoHeader(self._s(ch[0]), span=self.span(meta))

    def status(self, meta: Meta, ch: list[Token]) -> n.Status:
        return n.Status(int(ch[0]), span=self.span(meta))

    def body(self, meta: Meta, ch: list[Any]) -> n.Body:
        return n.Body(self._json(ch[0]), span=self.span(meta))

    def disconnect(self, meta: Meta, ch: list[Token]) -> n.Disconnect:
        return n.Disconnect(int(ch[0]), span=self.span(meta))

    def stream_error(self, meta: Meta, ch: list[Any]) -> n.StreamError:
        return n.StreamError(self._s(ch[0]), int(ch[1]), span=self.span(meta))

    def hang(self, meta: Meta, ch: list[Any]) -> n.Hang:
        return n.Hang(span=self.span(meta))

    def echo(self, meta: Meta, ch: list[Any]) -> n.Echo:
        return n.Echo(span=self.span(meta))

    # -- literals ----------------------------------------------------------------------------------------

    def true(self, meta: Meta, ch: list[Any]) -> bool:
        return True

    def false(self, meta: Meta, ch: list[Any]) -> bool:
        return False

    def null(self, meta: Meta, ch: list[Any]) -> None:
        return None

    def json_pair(self, meta: Meta, ch: list[Any]) -> tuple[str, Any]:
        return self._json_string_token(ch[0]), self._json(ch[1])

    def json_object(self, meta: Meta, ch: Sequence[tuple[str, Any]]) -> dict[str, Any]:
        return dict(ch)

    def json_array(self, meta: Meta, ch: list[Any]) -> list[Any]:
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
        except EscapeProblem as e:
            prefix = 3 if tok.type == "LONG_STRING" else 1
            raise SyntaxProblem(self._offset_span(tok, e.offset + prefix, e.width), e.message, e.hint) from None

    def _json_string_token(self, tok: Token) -> str:
        try:
            return decode_escapes(str(tok)[1:-1], JSON_ESCAPES)
        except EscapeProblem as e:
            raise SyntaxProblem(
                self._offset_span(tok, e.offset + 1, e.width),
                "invalid JSON: " + e.message,
                'JSON escapes are \\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX',
            ) from None

    def _number(self, tok: Token) -> int | float:
        try:
            return parse_number(str(tok))
        except (ValueError, InvalidOperation):
            raise SyntaxProblem(
                self.tspan(tok), f"the number `{tok}` is too large", "write a number a 64-bit float can hold"
            ) from None

    def _regex(self, tok: Token) -> n.Regex:
        text = str(tok)
        end = text.rindex("/")
        flags = text[end + 1 :]
        bad = [c for c in flags if c not in REGEX_FLAGS]
        if bad:
            span = self._offset_span(tok, end + 1 + flags.index(bad[0]), 1)
            raise SyntaxProblem(
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
