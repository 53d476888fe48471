"""Semantic checks: everything the parser cannot see, reported all at once.

:func:`check` walks a loaded :class:`~mockllm.dsl.loader.Library` and returns every semantic problem,
sorted by position: unknown or duplicate names, predicates that cannot apply to their subject, typed
literal mismatches, bad regexes, template names that are not in scope, unreachable steps, reply
elements that contradict each other, and warnings for scenarios replaced by a later file or a second
fallback. Nothing here raises for a user's mistake and nothing does I/O.
"""

from __future__ import annotations

import bisect
import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import get_args

import attrs

from mockllm.dsl import describe
from mockllm.dsl.compiled import START
from mockllm.dsl.describe import PROVIDERS
from mockllm.dsl.diagnostics import Diagnostic, Related, error, sort_key, warning
from mockllm.dsl.loader import Library
from mockllm.dsl.nodes import (
    DEFAULTABLE_TYPES,
    Body,
    Capture,
    Chunks,
    Condition,
    Disconnect,
    Echo,
    EchoHeader,
    Error,
    Finish,
    Hang,
    Header,
    InterleaveCalls,
    Latency,
    Let,
    NamedReply,
    Refusal,
    Regex,
    ReplyBlock,
    ReplyElement,
    ReplyRef,
    RetryAfter,
    Scenario,
    ScriptFile,
    Status,
    Step,
    Stream,
    StreamError,
    SubjectKind,
    Text,
    Thinking,
    ToolCall,
    Usage,
    Use,
)
from mockllm.dsl.span import Span
from mockllm.dsl.templates import BUILTIN_NAMES, TemplateError, strings_in
from mockllm.dsl.templates import parse as parse_template

SUBJECT_KINDS = frozenset(get_args(SubjectKind))
DEFAULTS_LINE = re.compile(r"defaults\s*:")

# ---------------------------------------------------------------------------------------------------------
# Pointing inside a span


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


# ---------------------------------------------------------------------------------------------------------
# Vocabulary


OP_WORDS = {
    "is": "is",
    "is_not": "is not",
    "contains": "contains",
    "not_contains": "not contains",
    "matches": "matches",
    "not_matches": "not matches",
    "glob": "glob",
    "include": "include",
    "exclude": "exclude",
    "present": "is present",
    "absent": "is absent",
    "error": "is error",
    "at_least": "is at least",
    "at_most": "is at most",
}

TEXT_SUBJECTS = frozenset(
    {
        "endpoint",
        "model",
        "last_user_message",
        "last_message",
        "any_message",
        "system_prompt",
        "tool_result",
        "header",
        "field",
    }
)
PRESENCE_SUBJECTS = frozenset({"header", "field", "tool_result", "last_user_message", "tools"})
STRING_OPS = ("is", "is_not", "contains", "not_contains", "matches", "not_matches", "glob")
ROLES = ("user", "assistant", "system", "tool")
REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


def allowed_ops(kind: str) -> tuple[str, ...]:
    """The predicates a subject takes, in the order a hint lists them."""
    if kind == "provider":
        return ("is", "is_not", "matches", "not_matches", "glob")
    if kind == "tools":
        return ("include", "exclude", "present", "absent")
    if kind == "stream":
        return ("is", "is_not")
    if kind == "turn":
        return ("is", "is_not", "at_least", "at_most")
    ops: tuple[str, ...] = STRING_OPS
    if kind in PRESENCE_SUBJECTS:
        ops += ("present", "absent")
    if kind == "tool_result":
        ops += ("error",)
    if kind == "field":
        ops += ("at_least", "at_most")
    return ops


ELEMENT_WORDS: dict[type, str] = {
    Text: "text",
    ToolCall: "tool call",
    Thinking: "thinking",
    Refusal: "refusal",
    Finish: "finish",
    Usage: "usage",
    Stream: "stream",
    Chunks: "chunks:",
    Latency: "latency",
    Error: "error",
    RetryAfter: "retry after",
    Header: "header",
    EchoHeader: "echo header",
    Status: "status",
    Body: "body",
    Disconnect: "disconnect",
    StreamError: "stream error",
    Hang: "hang",
    Echo: "echo",
    InterleaveCalls: "interleave calls",
}

# What kind of answer an element makes; elements of different kinds cannot share a reply.
_KIND: dict[type, str] = {
    Text: "answer",
    ToolCall: "answer",
    Thinking: "answer",
    Refusal: "answer",
    Chunks: "answer",
    Finish: "answer",
    Usage: "answer",
    Disconnect: "answer",
    StreamError: "answer",
    InterleaveCalls: "answer",
    Error: "error",
    Status: "raw",
    Body: "raw",
    Hang: "hang",
    Echo: "echo",
}
_SINGLE = (
    Finish,
    Usage,
    Stream,
    Latency,
    Error,
    Status,
    Body,
    RetryAfter,
    Chunks,
    Hang,
    Echo,
    Disconnect,
    StreamError,
    InterleaveCalls,
)
_KIND_HINTS = {
    frozenset(
        {"answer", "error"}
    ): "a reply is either an error or an answer; to fail first and answer later, use two steps",
    frozenset(
        {"answer", "raw"}
    ): "`status` and `body` send a raw response exactly as written; put the content in the `body`",
    frozenset(
        {"error", "raw"}
    ): "use either `error` (the provider's own error shape) or `status` + `body` (sent as written)",
    frozenset({"answer", "echo"}): "`echo` writes the answer itself; remove one of the two lines",
    frozenset({"error", "echo"}): "`echo` writes the answer itself; remove one of the two lines",
    frozenset({"raw", "echo"}): "`echo` writes the answer itself; remove one of the two lines",
}
_HANG_HINT = "`hang` never answers, so only `latency` may go with it"


def did_you_mean(word: str, candidates: Iterable[str], wrap: str = "`{}`") -> str | None:
    close = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"did you mean {wrap.format(close[0])}?" if close else None


def _word_list(words: Sequence[str], conjunction: str = "or") -> str:
    quoted = [f"`{w}`" for w in words]
    if len(quoted) == 1:
        return quoted[0]
    return ", ".join(quoted[:-1]) + f" {conjunction} " + quoted[-1]


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def regex_flags(flags: str) -> int:
    out = 0
    for ch in flags:
        out |= REGEX_FLAGS.get(ch, 0)
    return out


def _strings(el: ReplyElement) -> list[tuple[str, bool]]:
    """The strings of a reply element in source order, each with whether it is a template."""
    if isinstance(el, Text | Thinking | Refusal):
        return [(el.text, True)]
    if isinstance(el, Chunks):
        return [(c, True) for c in el.chunks]
    if isinstance(el, Error | StreamError):
        return [(el.message, True)]
    if isinstance(el, Header):
        return [(el.name, False), (el.value, True)]
    if isinstance(el, ToolCall):
        out = [(s, True) for s in strings_in(el.arguments)]
        if el.id is not None:
            out.append((el.id, True))
        return out
    if isinstance(el, Body):
        return [(s, True) for s in strings_in(el.body)]
    return []


def _openings(text: str) -> list[int]:
    out: list[int] = []
    at = text.find("{{")
    while at >= 0:
        out.append(at)
        at = text.find("{{", at + 2)
    return out


# ---------------------------------------------------------------------------------------------------------
# The checker


@attrs.frozen
class _Scope:
    """Template names a reply may use."""

    lets: frozenset[str] = frozenset()
    captures: frozenset[str] = frozenset()
    later: Mapping[str, str] = attrs.field(factory=dict)  # capture name -> step that cannot run first
    where: str = ""  # "step `x`", for messages about a named reply used there
    use_span: Span | None = None

    def known(self, name: str) -> bool:
        return (
            name in BUILTIN_NAMES
            or (name.startswith("tool_result.") and len(name) > len("tool_result."))
            or name in self.lets
            or name in self.captures
        )

    def candidates(self) -> set[str]:
        return set(BUILTIN_NAMES) | set(self.lets) | set(self.captures)


class _Checker:
    def __init__(self, library: Library):
        self.library = library
        self.loc = Locator(library.sources)
        self.out: list[Diagnostic] = []
        self.loaded = {f.path for f in library.files}

    # -- helpers ---------------------------------------------------------------------------------------

    def at(self, span: Span, file: str) -> Span:
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

    @staticmethod
    def line_of(span: Span) -> str:
        return f" on line {span.line}" if span.line > 0 else ""

    # -- library -----------------------------------------------------------------------------------------

    def run(self) -> None:
        for f in self.library.files:
            self.check_file(f)
        self.check_replacements()
        self.check_fallbacks()

    def check_replacements(self) -> None:
        seen: dict[str, tuple[Scenario, str]] = {}
        for f in self.library.files:
            names_here: set[str] = set()
            for sc in f.scenarios:
                if sc.name in names_here:
                    continue
                names_here.add(sc.name)
                if sc.name in seen:
                    old, old_file = seen[sc.name]
                    old_span = self.at(old.span, old_file)
                    where = old_span.location() if old_span.line else old_file
                    self.warn(
                        "replaced-scenario",
                        f'scenario "{sc.name}" replaces the scenario of the same name in {where}',
                        self.name_span(sc.span, f'"{sc.name}"', f.path),
                        hint="rename one of them if both should run",
                        related=[Related(old_span, "the replaced scenario")],
                    )
                seen[sc.name] = (sc, f.path)

    def resolve_fallback(self, f: ScriptFile) -> tuple[ReplyElement, ...] | None:
        fb = f.defaults.fallback if f.defaults else None
        if fb is None:
            return None
        if isinstance(fb, ReplyBlock):
            return fb.elements
        named = self.library.named_reply(f.path, fb)
        return named.elements if named else None

    def check_fallbacks(self) -> None:
        first: tuple[ScriptFile, tuple[ReplyElement, ...]] | None = None
        for f in self.library.files:
            elements = self.resolve_fallback(f)
            if elements is None or f.defaults is None or f.defaults.fallback is None:
                continue
            if first is None:
                first = (f, elements)
                continue
            if elements != first[1]:
                assert first[0].defaults is not None and first[0].defaults.fallback is not None
                kept = self.at(first[0].defaults.fallback.span, first[0].path)
                self.warn(
                    "ignored-fallback",
                    f"this fallback is not used: {kept.location() if kept.line else first[0].path} loads first "
                    "and its different fallback answers unmatched requests",
                    self.at(f.defaults.fallback.span, f.path),
                    hint="a library has one fallback, the first in load order; remove one of them",
                    related=[Related(kept, "the fallback in use")],
                )

    # -- files -------------------------------------------------------------------------------------------

    def check_file(self, f: ScriptFile) -> None:
        file = f.path
        aliases: dict[str, Use] = {}
        for use in f.uses:
            if use.alias in aliases:
                first = aliases[use.alias]
                self.err(
                    "duplicate-name",
                    f'alias `{use.alias}` is already used for "{first.path}"{self.line_of(first.span)}',
                    self.name_span(use.span, use.alias, file, last=True),
                    hint="give each import its own alias",
                    related=[Related(self.at(first.span, file), "the first import with this alias")],
                )
            else:
                aliases[use.alias] = use
        replies: dict[str, NamedReply] = {}
        for nr in f.replies:
            if nr.name in replies:
                first_nr = replies[nr.name]
                self.err(
                    "duplicate-name",
                    f"reply `{nr.name}` is already defined{self.line_of(first_nr.span)}",
                    self.name_span(nr.span, nr.name, file, skip=len("reply")),
                    hint="rename one of the two replies",
                    related=[Related(self.at(first_nr.span, file), "the first definition")],
                )
            else:
                replies[nr.name] = nr
            self.check_elements(nr.elements, file)
            for el in nr.elements:
                self.template_refs(el, file, None)
        self.check_defaults(f)
        self.check_duplicate_defaults(f)
        scenarios: dict[str, Scenario] = {}
        for sc in f.scenarios:
            if sc.name in scenarios:
                first_sc = scenarios[sc.name]
                self.err(
                    "duplicate-name",
                    f'scenario "{sc.name}" is already defined in this file{self.line_of(first_sc.span)}',
                    self.name_span(sc.span, f'"{sc.name}"', file),
                    hint="scenario names are unique within a file; rename one of them",
                    related=[Related(self.at(first_sc.span, file), "the first scenario with this name")],
                )
            else:
                scenarios[sc.name] = sc
            self.check_scenario(sc, f)

    def check_defaults(self, f: ScriptFile) -> None:
        d = f.defaults
        if d is None:
            return
        for el in d.elements:
            if not isinstance(el, DEFAULTABLE_TYPES):
                self.err(
                    "bad-default",
                    f"`{ELEMENT_WORDS[type(el)]}` cannot be a default",
                    self.at(el.span, f.path),
                    hint="`defaults:` holds `latency`, `stream` and `header` lines, and the fallback",
                )
        self.check_elements(d.elements, f.path, "`defaults:` block")
        for el in d.elements:
            self.template_refs(el, f.path, _Scope())
        fb = d.fallback
        if isinstance(fb, ReplyBlock):
            self.check_elements(fb.elements, f.path)
            for el in fb.elements:
                self.template_refs(el, f.path, _Scope())
        elif isinstance(fb, ReplyRef):
            named = self.check_ref(fb, f.path, "fallback like")
            if named is not None:
                self.named_templates(named, f.path, fb, _Scope(where="the fallback", use_span=self.at(fb.span, f.path)))

    def check_duplicate_defaults(self, f: ScriptFile) -> None:
        """``defaults:`` twice in one file (the tree holds one, so look at the text)."""
        text = self.library.sources.get(f.path)
        if text is None or f.path.endswith(".json"):
            return
        reported = {(d.span.file, d.span.line) for d in self.library.diagnostics}
        in_string = False
        first: int | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            if not in_string and DEFAULTS_LINE.match(line):
                if first is None:
                    first = number
                elif (f.path, number) not in reported:
                    self.err(
                        "duplicate-defaults",
                        f"this file already has a `defaults:` block (line {first})",
                        Span(f.path, number, 1, number, len("defaults") + 1),
                        hint="merge the two blocks into one",
                        related=[
                            Related(Span(f.path, first, 1, first, len("defaults") + 1), "the first `defaults:` block")
                        ],
                    )
            if line.split("#", 1)[0].count('"""') % 2 == 1 or (in_string and line.count('"""') % 2 == 1):
                in_string = not in_string

    # -- scenarios ---------------------------------------------------------------------------------------

    def check_scenario(self, sc: Scenario, f: ScriptFile) -> None:
        file = f.path
        lets: dict[str, Let] = {}
        for let in sc.lets:
            if let.name in lets:
                self.err(
                    "duplicate-name",
                    f"`{let.name}` is already set by `let`{self.line_of(lets[let.name].span)}",
                    self.name_span(let.span, let.name, file, skip=len("let")),
                    hint="keep one `let` per name",
                    related=[Related(self.at(lets[let.name].span, file), "the first `let`")],
                )
            else:
                lets[let.name] = let
        for cond in sc.conditions:
            self.check_condition(cond, file)

        index: dict[str, int] = {}
        for i, step in enumerate(sc.steps):
            if step.name in index:
                first = sc.steps[index[step.name]]
                self.err(
                    "duplicate-name",
                    f'step `{step.name}` is already defined in scenario "{sc.name}"{self.line_of(first.span)}',
                    self.name_span(step.span, step.name, file, skip=len("step")),
                    hint="step names are unique within a scenario; rename one of them",
                    related=[Related(self.at(first.span, file), "the first step with this name")],
                )
            else:
                index[step.name] = i

        preds: list[int | None] = []  # START, a step index, or None for an unknown `after`
        for i, step in enumerate(sc.steps):
            if step.after is None:
                preds.append(START if i == 0 else i - 1)
                continue
            after_span = self.name_span(step.after.span, step.after.step, file, skip=len("after"), last=True)
            if step.after.step not in index:
                others = [s.name for s in sc.steps if s.name != step.name]
                self.err(
                    "unknown-step",
                    f'`after {step.after.step}`: scenario "{sc.name}" has no step `{step.after.step}`',
                    after_span,
                    hint=did_you_mean(step.after.step, others)
                    or (f"its steps are {_word_list(others, 'and')}" if others else "name a step of this scenario"),
                )
                preds.append(None)
            else:
                preds.append(index[step.after.step])
            if sc.order_any:
                self.warn(
                    "after-ignored",
                    f'`after {step.after.step}` has no effect: scenario "{sc.name}" has `order any`',
                    self.at(step.after.span, file),
                    hint="remove the `after` line, or remove `order any` to run the steps in order",
                )

        all_captures: dict[str, str] = {}
        for step in sc.steps:
            for cap in step.captures:
                all_captures.setdefault(cap.name, step.name)
        for i, step in enumerate(sc.steps):
            self.check_step(sc, step, f, self.scope(sc, i, preds, all_captures))
        if not sc.order_any:
            self.check_reachable(sc, preds, file)

    def scope(self, sc: Scenario, i: int, preds: list[int | None], all_captures: Mapping[str, str]) -> _Scope:
        if sc.order_any:
            before = set(range(len(sc.steps)))
        elif preds[i] is None:
            before = set(range(i + 1))
        else:
            chain: list[int] = []
            p = preds[i]
            while p is not None and p != START and p not in chain:
                chain.append(p)
                p = preds[p]
            positions = {START, *chain}
            # a step beside the chain runs before this one only if running it does not move the position
            before = {i, *chain} | {
                j for j, q in enumerate(preds) if q in positions and (sc.steps[j].consumption.max_uses or 2) > 1
            }
        captures = {c.name for j in before for c in sc.steps[j].captures}
        later = {name: step for name, step in all_captures.items() if name not in captures}
        return _Scope(
            lets=frozenset(let.name for let in sc.lets),
            captures=frozenset(captures),
            later=later,
            where=f"step `{sc.steps[i].name}`",
        )

    def check_reachable(self, sc: Scenario, preds: list[int | None], file: str) -> None:
        steps = sc.steps
        reach = [False] * len(steps)
        changed = True
        while changed:
            changed = False
            for i, p in enumerate(preds):
                if reach[i]:
                    continue
                if p is None or p == START or (p != i and reach[p] and steps[p].consumption.max_uses is not None):
                    reach[i] = True
                    changed = True
        for i, step in enumerate(steps):
            p = preds[i]
            if reach[i] or p is None or p == START:
                continue
            prev = steps[p]
            if (prev.consumption.max_uses or 0) <= 0 and prev.consumption.kind == "repeat":
                continue  # `repeat 0` is reported on its own
            head = self.name_span(step.span, step.name, file, skip=len("step"))
            where = self.at(step.after.span, file) if step.after is not None else head
            hint = "give it an `after` line naming a step that can be used up, or use `order any`"
            if p == i:
                self.err(
                    "unreachable-step",
                    f"step `{step.name}` comes `after` itself, so it can never run",
                    where,
                    hint="name the step it should follow",
                )
            elif prev.consumption.kind == "always":
                how = f"`after {prev.name}` names" if step.after is not None else "it follows"
                self.err(
                    "unreachable-step",
                    f"step `{step.name}` can never run: {how} step `{prev.name}`, "
                    "which is `always` and so is never used up",
                    where,
                    hint=hint,
                    related=[Related(self.at(prev.consumption.span, file), f"step `{prev.name}` is `always`")],
                )
            else:
                how = f"`after {prev.name}` names" if step.after is not None else "it follows"
                self.err(
                    "unreachable-step",
                    f"step `{step.name}` can never run: {how} step `{prev.name}`, which can never run",
                    where,
                    hint=hint,
                )

    def check_step(self, sc: Scenario, step: Step, f: ScriptFile, scope: _Scope) -> None:
        file = f.path
        for cond in step.conditions:
            self.check_condition(cond, file)
        for cond in step.expects:
            self.check_condition(cond, file)
        for cap in step.captures:
            self.check_capture(cap, file)
        c = step.consumption
        if c.kind == "repeat" and (c.count is None or c.count < 1):
            self.err(
                "bad-repeat",
                f"`repeat {c.count}` would never let step `{step.name}` run",
                self.at(c.span, file),
                hint="repeat at least once (`repeat 1` is the default), or remove the step",
            )
        if step.reply is None:
            self.err(
                "missing-reply",
                f"step `{step.name}` has no reply",
                self.name_span(step.span, step.name, file, skip=len("step")),
                hint="add a `reply:` block, `reply like NAME` or `reply echo`",
            )
        elif isinstance(step.reply, ReplyBlock):
            self.check_elements(step.reply.elements, file)
            for el in step.reply.elements:
                self.template_refs(el, file, scope)
        else:
            named = self.check_ref(step.reply, file, "reply like")
            if named is not None:
                use = attrs.evolve(scope, use_span=self.at(step.reply.span, file))
                self.named_templates(named, file, step.reply, use)

    # -- replies -----------------------------------------------------------------------------------------

    def check_ref(self, ref: ReplyRef, file: str, words: str) -> NamedReply | None:
        span = self.name_span(ref.span, ref.qualified, file, last=True)
        aliases = self.library.aliases.get(file, {})
        script = self.library.file(file)
        declared = {u.alias for u in script.uses} if script is not None else set(aliases)
        if ref.alias is not None:
            if ref.alias not in declared:
                self.err(
                    "unknown-alias",
                    f"`{words} {ref.qualified}`: no import is named `{ref.alias}`",
                    span,
                    hint=did_you_mean(ref.alias, declared) or f'import the file first: `use "PATH" as {ref.alias}`',
                )
                return None
            target = aliases.get(ref.alias, "")
            if target not in self.loaded:
                return None  # the import itself failed and is reported
        else:
            target = file
        named = self.library.named_reply(file, ref)
        if named is None:
            target_script = self.library.file(target)
            names = [r.name for r in target_script.replies] if target_script else []
            where = "this file" if ref.alias is None else f"{target} (imported as `{ref.alias}`)"
            suggestion = did_you_mean(ref.name, names, "`" + (f"{ref.alias}." if ref.alias else "") + "{}`")
            self.err(
                "unknown-reply",
                f"`{words} {ref.qualified}`: {where} defines no reply `{ref.name}`",
                span,
                hint=suggestion
                or (f"its replies are {_word_list(names, 'and')}" if names else "define it with `reply NAME:`"),
            )
        return named

    def check_elements(self, elements: Sequence[ReplyElement], file: str, block: str = "reply") -> None:
        """Elements of one block that cannot go together."""
        first_of_type: dict[type, ReplyElement] = {}
        first_of_kind: dict[str, ReplyElement] = {}
        non_latency: ReplyElement | None = None
        hang: ReplyElement | None = None
        conflicted: set[int] = set()  # ids of the elements reported as conflicting
        for el in elements:
            word = ELEMENT_WORDS[type(el)]
            conflict: tuple[ReplyElement, str] | None = None
            if isinstance(el, _SINGLE) and type(el) in first_of_type:
                conflict = (first_of_type[type(el)], f"a {block} has one `{word}` line; keep one")
            kind = _KIND.get(type(el))
            if conflict is None and kind is not None:
                for other_kind, other in first_of_kind.items():
                    if other_kind != kind:
                        hint = (
                            _HANG_HINT if "hang" in (kind, other_kind) else _KIND_HINTS[frozenset({kind, other_kind})]
                        )
                        conflict = (other, hint)
                        break
            if conflict is None and hang is not None and not isinstance(el, Latency):
                conflict = (hang, _HANG_HINT)
            if conflict is None and isinstance(el, Hang) and non_latency is not None:
                conflict = (non_latency, _HANG_HINT)
            if conflict is None and isinstance(el, Text | Chunks):
                other_type: type = Chunks if isinstance(el, Text) else Text
                if other_type in first_of_type:
                    conflict = (
                        first_of_type[other_type],
                        "`chunks:` gives the text in pieces; remove the `text` lines or the `chunks:` block",
                    )
            if conflict is None and isinstance(el, Disconnect | StreamError):
                other_type = StreamError if isinstance(el, Disconnect) else Disconnect
                if other_type in first_of_type:
                    conflict = (first_of_type[other_type], "a stream ends one way: keep `disconnect` or `stream error`")
            if conflict is not None:
                conflicted.add(id(el))
                other, hint = conflict
                other_word = ELEMENT_WORDS[type(other)]
                other_span = self.at(other.span, file)
                same = type(other) is type(el)
                message = (
                    f"second `{word}` line in one {block} (the first is{self.line_of(other_span)})"
                    if same and other_span.line
                    else f"`{word}` conflicts with `{other_word}`{self.line_of(other_span)}"
                )
                if same and not other_span.line:
                    message = f"second `{word}` line in one {block}"
                self.err(
                    "conflicting-reply",
                    message,
                    self.at(el.span, file),
                    hint=hint,
                    related=[Related(other_span, f"`{other_word}` is here")],
                )
            first_of_type.setdefault(type(el), el)
            if kind is not None:
                first_of_kind.setdefault(kind, el)
            if isinstance(el, Hang):
                hang = hang or el
            elif not isinstance(el, Latency) and non_latency is None:
                non_latency = el
        interleave = first_of_type.get(InterleaveCalls)
        calls = sum(isinstance(el, ToolCall) for el in elements)
        if interleave is not None and id(interleave) not in conflicted and calls < 2 and block == "reply":
            self.warn(
                "interleave-no-effect",
                "`interleave calls` has no effect with fewer than two tool calls",
                self.at(interleave.span, file),
                hint="add more `tool call` lines to interleave, or remove `interleave calls`",
            )

    # -- templates ---------------------------------------------------------------------------------------

    def template_refs(self, el: ReplyElement, file: str, scope: _Scope | None) -> None:
        """Report malformed templates (always) and unknown names (when a scope is given)."""
        for ref_name, ref_span, problem in self.refs(el, file):
            if problem is not None:
                if scope is None or scope.use_span is None:
                    self.err("bad-template", problem, ref_span, hint='write a literal `{{` as `{{"{{"}}`')
                continue
            if scope is not None:
                self.check_name(ref_name, ref_span, scope, None)

    def named_templates(self, named: NamedReply, file: str, ref: ReplyRef, scope: _Scope) -> None:
        target = file
        if ref.alias is not None:
            target = self.library.aliases.get(file, {}).get(ref.alias, file)
        for el in named.elements:
            for ref_name, ref_span, problem in self.refs(el, target):
                if problem is None:
                    self.check_name(ref_name, ref_span, scope, named.name)

    def refs(self, el: ReplyElement, file: str) -> list[tuple[str, Span, str | None]]:
        out: list[tuple[str, Span, str | None]] = []
        span = self.at(el.span, file)
        seen = 0  # `{{` openings in earlier strings of this element
        for text, is_template in _strings(el):
            openings = _openings(text)
            if is_template and openings:
                try:
                    tpl = parse_template(text)
                except TemplateError as exc:
                    k = openings.index(exc.offset) if exc.offset in openings else 0
                    where = self.loc.find(span, "{{", nth=seen + k)
                    out.append(("", where or span, str(exc)))
                else:
                    for ref in tpl.names:
                        k = openings.index(ref.offset) if ref.offset in openings else 0
                        end = text.find("}}", ref.offset)
                        where = self.loc.find(span, "{{", nth=seen + k)
                        if where is not None:
                            where = attrs.evolve(where, end_column=where.column + (end + 2 - ref.offset))
                        out.append((ref.name, where or span, None))
            seen += len(openings)
        return out

    def check_name(self, name: str, span: Span, scope: _Scope, reply_name: str | None) -> None:
        if scope.known(name):
            return
        related = []
        via = ""
        if reply_name is not None and scope.use_span is not None:
            via = f" in reply `{reply_name}`, used by {scope.where}"
            related.append(Related(scope.use_span, f"used by {scope.where}"))
        elif reply_name is None and scope.use_span is not None and scope.where == "the fallback":
            via = ""
        if name in scope.later:
            self.err(
                "capture-order",
                f"`{{{{{name}}}}}`{via} is captured by step `{scope.later[name]}`, which cannot run before this step",
                span,
                hint=f"capture `{name}` in this step or one that runs before it",
                related=related,
            )
            return
        hint = did_you_mean(name, scope.candidates(), "`{{{{{}}}}}`")
        if hint is None:
            hint = (
                "template names are `let` variables, captures, `request.model`, `request.last_user_message` "
                "and `tool_result.NAME`"
            )
        self.err("unknown-name", f"unknown template name `{{{{{name}}}}}`{via}", span, hint=hint, related=related)

    # -- conditions --------------------------------------------------------------------------------------

    def check_condition(self, cond: Condition, file: str) -> None:
        subj, pred = cond.subject, cond.predicate
        kind, op, value = subj.kind, pred.op, pred.value
        pspan = self.at(pred.span if pred.span.line else cond.span, file)
        sspan = self.at(subj.span if subj.span.line else cond.span, file)
        if kind not in SUBJECT_KINDS:
            self.err("bad-subject", f"unknown subject `{kind}`", sspan, hint=did_you_mean(kind, SUBJECT_KINDS))
            return
        words = describe.subject(subj)
        opw = OP_WORDS.get(op, op)
        if kind == "any_message" and subj.arg not in ROLES:
            self.err(
                "bad-subject",
                f"`any {subj.arg} message`: there is no role `{subj.arg}`",
                sspan,
                hint=did_you_mean(subj.arg or "", ROLES, "`any {} message`") or f"roles are {_word_list(ROLES, 'and')}",
            )
        allowed = allowed_ops(kind)
        if op not in allowed:
            self.err(
                "bad-predicate",
                f"`{opw}` cannot be used with `{words}`",
                pspan,
                hint=f"`{words}` takes {_word_list([OP_WORDS[o] for o in allowed])}",
            )
            return
        problem = self.value_problem(kind, words, op, value)
        if problem is not None:
            self.err("bad-value", problem[0], pspan, hint=problem[1])
            return
        if op in ("matches", "not_matches") and isinstance(value, Regex):
            self.check_regex(value, self.loc.narrow(pspan, "/"), file)
        if cond.ignore_case:
            stringy = op in ("contains", "not_contains", "matches", "not_matches", "glob", "include", "exclude") or (
                op in ("is", "is_not") and isinstance(value, str)
            )
            if not stringy:
                self.err(
                    "bad-ignore-case",
                    f"`ignoring case` does not apply to `{describe.condition(attrs.evolve(cond, ignore_case=False))}`",
                    self.name_span(cond.span, "ignoring case", file, last=True),
                    hint="`ignoring case` goes only with a comparison of text; remove it",
                )

    def value_problem(self, kind: str, words: str, op: str, value: object) -> tuple[str, str] | None:
        shown = describe.value(value) if not isinstance(value, Regex) else str(value)
        if op in ("is", "is_not"):
            if kind == "provider":
                if not isinstance(value, str):
                    return (
                        f"`provider` is a provider name, not {shown}",
                        f"providers are {_word_list(PROVIDERS, 'and')}",
                    )
                if value not in PROVIDERS:
                    return (
                        f"unknown provider `{value}`",
                        did_you_mean(value, PROVIDERS) or f"providers are {_word_list(PROVIDERS, 'and')}",
                    )
                return None
            if kind == "stream":
                if not isinstance(value, bool):
                    return (
                        f"`stream` is true or false, so it cannot be {shown}",
                        "write `stream is true` or `stream is false`",
                    )
                return None
            if kind == "turn":
                if not _is_int(value):
                    return (
                        f"`turn` is a number of user messages, so it cannot be {shown}",
                        "write an integer: `turn is 2`",
                    )
                return None
            if kind == "field":
                return None
            if not isinstance(value, str):
                return (
                    f"`{words}` is text, so compare it with a string, not {shown}",
                    f"write the value in quotes: `{words} {OP_WORDS[op]} {describe.quote(_plain(value))}`",
                )
            return None
        if op in ("contains", "not_contains", "glob", "include", "exclude"):
            if not isinstance(value, str):
                return (f"`{OP_WORDS[op]}` takes a string, not {shown}", f'write it in quotes: `{OP_WORDS[op]} "…"`')
            return None
        if op in ("matches", "not_matches"):
            if not isinstance(value, Regex):
                return (
                    f"`{OP_WORDS[op]}` takes a regex such as `/gpt-4o.*/`, not {shown}",
                    "write the pattern between slashes",
                )
            return None
        if op in ("at_least", "at_most"):
            if kind == "turn" and not _is_int(value):
                return (
                    f"`turn` counts user messages, so `{OP_WORDS[op]}` takes an integer, not {shown}",
                    "write an integer such as `2`",
                )
            if not _is_number(value):
                return (f"`{OP_WORDS[op]}` takes a number, not {shown}", "write a number such as `2` or `0.5`")
        return None

    def check_regex(self, regex: Regex, span: Span, file: str) -> None:
        where = span
        if span.line > 0 and span.end_line == span.line:
            where = attrs.evolve(span, end_column=span.column + len(str(regex)))
        bad = [ch for ch in regex.flags if ch not in REGEX_FLAGS]
        if bad:
            self.err("bad-regex", f"unknown regex flag `{bad[0]}`", where, hint="regex flags are `i`, `m`, `s` and `x`")
            return
        try:
            re.compile(regex.pattern, regex_flags(regex.flags))
        except re.error as exc:
            at = f" at position {exc.pos}" if exc.pos is not None else ""
            self.err("bad-regex", f"invalid regex {regex}: {exc.msg}{at}", self.at(where, file))

    def check_capture(self, cap: Capture, file: str) -> None:
        subj = cap.subject
        span = self.at(cap.span, file)
        if subj.kind in ("tools", "turn", "stream"):
            self.err(
                "bad-capture",
                f"cannot capture from `{describe.subject(subj)}`: captures read text",
                self.at(subj.span, file) if subj.span.line else span,
                hint="capture from a text subject such as `last user message`",
            )
        skip = 0
        if subj.span.line == span.line and subj.span.end_line == span.line and span.line > 0:
            skip = max(0, subj.span.end_column - span.column)
        self.check_regex(cap.regex, self.loc.narrow(span, "/", skip=skip), file)


def _plain(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def check(library: Library) -> list[Diagnostic]:
    """Every semantic problem of the library at once, sorted by position."""
    checker = _Checker(library)
    checker.run()
    return sorted(checker.out, key=sort_key)
