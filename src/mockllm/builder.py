"""Build scenarios in Python: a fluent builder that produces the same syntax tree as the text form.

::

    from mockllm import last_user_message, scenario, stream, text, tool_call, tool_result, tools

    weather = (
        scenario("Weather")
        .step("ask")
        .when(last_user_message().contains("weather"), tools().include("get_weather"))
        .capture("city", last_user_message(), r"weather in (\\w+)")
        .reply(tool_call("get_weather", {"city": "{{city}}"}))
        .step("answer")
        .when(tool_result("get_weather").is_present())
        .reply(text("Sunny in {{city}}"), stream(chunks=4, apart="40ms"))
    )
    weather.build()    # a mockllm.dsl.tree.nodes.Scenario, equal to the one parsed from the text
    weather.to_text()  # that text, in canonical layout

Every builder is an immutable value: each call returns a new builder, so a shared base can be
extended in several tests without one test seeing another's steps. Subjects are functions
(``last_user_message()``, ``tools()``, ``request_header("x-team")`` …) whose methods make
conditions; reply elements are functions named after their line in a script (``text``,
``tool_call``, ``stream``, ``error`` …). Two subjects are renamed because a reply element has the
name: the ``stream`` subject is :func:`streaming` and the ``header "NAME"`` subject is
:func:`request_header`.
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from mockllm.dsl.tree import nodes as n
from mockllm.errors import BuilderError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*\Z")
_ROLES = ("user", "assistant", "system", "tool")
_FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter")
_RE_FLAGS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"), (re.VERBOSE, "x"))


def _name(value: str, what: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise BuilderError(
            f"{what} {value!r} is not a name: use letters, digits, '_' and '-', starting with a letter or '_'"
        )
    return value


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BuilderError(f"{what} must be a whole number, not {value!r}")
    return value


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise BuilderError(f"{what} must be a string, not {value!r}")
    return value


def duration(value: str | datetime.timedelta | n.Duration) -> n.Duration:
    """A duration as scripts write it: ``"250ms"``, ``"2s"``, ``"1.5s"``, or a :class:`datetime.timedelta`."""
    if isinstance(value, n.Duration):
        return value
    if isinstance(value, datetime.timedelta):
        return n.Duration(value.total_seconds() * 1000.0)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m is not None:
            amount = float(m[1])
            return n.Duration(amount if m[2] == "ms" else amount * 1000.0)
    raise BuilderError(f"{value!r} is not a duration: write it as '250ms', '2s' or '1.5s', or give a timedelta")


def _regex(value: str | re.Pattern[str] | n.Regex, flags: str = "") -> n.Regex:
    if isinstance(value, n.Regex):
        return n.Regex(value.pattern, value.flags + flags) if flags else value
    if isinstance(value, re.Pattern):
        from_pattern = "".join(letter for flag, letter in _RE_FLAGS if value.flags & flag)
        return _regex(value.pattern, from_pattern + flags)
    pattern = _str(value, "a regex")
    wrong = sorted(set(flags) - set("imsx"))
    if wrong:
        raise BuilderError(f"regex flag {''.join(wrong)!r} is not one of i, m, s, x")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise BuilderError(f"/{pattern}/ is not a valid regex: {exc}") from None
    canonical = "".join(letter for letter in "imsx" if letter in flags)
    return n.Regex(pattern, canonical)


# ---------------------------------------------------------------------------------------------------------
# Conditions


@attrs.frozen
class ConditionBuilder:
    """One condition (``SUBJECT PREDICATE``); :meth:`ignoring_case` adds ``ignoring case``."""

    condition: n.Condition

    def ignoring_case(self) -> ConditionBuilder:
        return ConditionBuilder(attrs.evolve(self.condition, ignore_case=True))

    def build(self) -> n.Condition:
        return self.condition


@attrs.frozen
class SubjectBuilder:
    """What a condition looks at; each method returns the condition with that predicate."""

    subject: n.Subject
    ignore_case: bool = False

    def _cond(self, op: n.PredicateOp, value: Any = None) -> ConditionBuilder:
        return ConditionBuilder(n.Condition(self.subject, n.Predicate(op, value), self.ignore_case))

    def ignoring_case(self) -> SubjectBuilder:
        """Compare without regard to case (``… ignoring case``); may come before or after the predicate."""
        return attrs.evolve(self, ignore_case=True)

    def is_(self, value: Any) -> ConditionBuilder:
        """``is VALUE``: a string, number, bool, None (``null``), or a JSON object/array."""
        return self._cond("is", value)

    def is_not(self, value: Any) -> ConditionBuilder:
        return self._cond("is_not", value)

    def contains(self, value: str) -> ConditionBuilder:
        return self._cond("contains", _str(value, "contains"))

    def not_contains(self, value: str) -> ConditionBuilder:
        return self._cond("not_contains", _str(value, "not_contains"))

    def matches(self, regex: str | re.Pattern[str] | n.Regex, flags: str = "") -> ConditionBuilder:
        """``matches /regex/flags``: a pattern string (flags from ``imsx``) or a compiled ``re`` pattern."""
        return self._cond("matches", _regex(regex, flags))

    def not_matches(self, regex: str | re.Pattern[str] | n.Regex, flags: str = "") -> ConditionBuilder:
        return self._cond("not_matches", _regex(regex, flags))

    def glob(self, pattern: str) -> ConditionBuilder:
        return self._cond("glob", _str(pattern, "glob"))

    def include(self, value: str) -> ConditionBuilder:
        return self._cond("include", _str(value, "include"))

    def exclude(self, value: str) -> ConditionBuilder:
        return self._cond("exclude", _str(value, "exclude"))

    def is_present(self) -> ConditionBuilder:
        return self._cond("present")

    def is_absent(self) -> ConditionBuilder:
        return self._cond("absent")

    def is_error(self) -> ConditionBuilder:
        return self._cond("error")

    def at_least(self, number: int | float) -> ConditionBuilder:
        """``is at least N``."""
        return self._cond("at_least", _number(number, "at_least"))

    def at_most(self, number: int | float) -> ConditionBuilder:
        """``is at most N``."""
        return self._cond("at_most", _number(number, "at_most"))


def _number(value: object, what: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BuilderError(f"{what} needs a number, not {value!r}")
    return value


def _subject(kind: n.SubjectKind, arg: str | None = None) -> SubjectBuilder:
    return SubjectBuilder(n.Subject(kind, arg))


def provider() -> SubjectBuilder:
    """``provider``: one of ``mockllm.dsl.providers.PROVIDERS`` (openai, anthropic, gemini, ollama, responses, …)."""
    return _subject("provider")


def endpoint() -> SubjectBuilder:
    return _subject("endpoint")


def model() -> SubjectBuilder:
    return _subject("model")


def streaming() -> SubjectBuilder:
    """The ``stream`` subject (whether the client asked for a stream): ``streaming().is_(True)``."""
    return _subject("stream")


def last_user_message() -> SubjectBuilder:
    return _subject("last_user_message")


def last_message() -> SubjectBuilder:
    return _subject("last_message")


def any_message(role: Literal["user", "assistant", "system", "tool"]) -> SubjectBuilder:
    """``any ROLE message``."""
    if role not in _ROLES:
        raise BuilderError(f"role {role!r} is not one of {', '.join(_ROLES)}")
    return _subject("any_message", role)


def any_user_message() -> SubjectBuilder:
    return any_message("user")


def any_assistant_message() -> SubjectBuilder:
    return any_message("assistant")


def any_system_message() -> SubjectBuilder:
    return any_message("system")


def any_tool_message() -> SubjectBuilder:
    return any_message("tool")


def system_prompt() -> SubjectBuilder:
    return _subject("system_prompt")


def tools() -> SubjectBuilder:
    """The names of the tools the request offers: ``tools().include("get_weather")``."""
    return _subject("tools")


def tool_result(name: str) -> SubjectBuilder:
    """``tool result for "NAME"``."""
    return _subject("tool_result", _str(name, "a tool name"))


def request_header(name: str) -> SubjectBuilder:
    """The ``header "NAME"`` subject (a request header); :func:`header` is the reply element."""
    return _subject("header", _str(name, "a header name"))


def field(path: str) -> SubjectBuilder:
    """``field "a.b.0.c"``: a value in the raw request body."""
    return _subject("field", _str(path, "a field path"))


def turn() -> SubjectBuilder:
    return _subject("turn")


def request_input() -> SubjectBuilder:
    """The ``input`` subject: the texts of an embedding or moderation request (a predicate holds if it
    holds for any of them). Named like :func:`request_header`, so it never shadows the builtin ``input``."""
    return _subject("input")


def _conditions(items: Sequence[ConditionBuilder | n.Condition], where: str) -> tuple[n.Condition, ...]:
    out: list[n.Condition] = []
    for item in items:
        if isinstance(item, ConditionBuilder):
            out.append(item.condition)
        elif isinstance(item, n.Condition):
            out.append(item)
        elif isinstance(item, SubjectBuilder):
            raise BuilderError(f'{where} got a subject without a predicate: add one, e.g. .contains("…")')
        else:
            raise BuilderError(f'{where} takes conditions such as last_user_message().contains("…"), not {item!r}')
    return tuple(out)


# ---------------------------------------------------------------------------------------------------------
# Reply elements


def text(value: str) -> n.Text:
    """``text "…"``; several texts in one reply are joined with a newline."""
    return n.Text(_str(value, "text"))


def tool_call(name: str, arguments: Mapping[str, Any] | None = None, *, id: str | None = None) -> n.ToolCall:
    """``tool call NAME {json}`` (optionally ``id "call_x"``)."""
    args = dict(arguments) if arguments is not None else {}
    return n.ToolCall(_name(name, "tool name"), args, None if id is None else _str(id, "a tool call id"))


def thinking(value: str) -> n.Thinking:
    return n.Thinking(_str(value, "thinking"))


def refusal(value: str) -> n.Refusal:
    return n.Refusal(_str(value, "refusal"))


def finish(reason: n.FinishReason) -> n.Finish:
    """``finish stop|length|tool_calls|content_filter``."""
    if reason not in _FINISH_REASONS:
        raise BuilderError(f"finish reason {reason!r} is not one of {', '.join(_FINISH_REASONS)}")
    return n.Finish(reason)


def usage(input_tokens: int, output_tokens: int) -> n.Usage:
    """``usage N in, M out``."""
    return n.Usage(_int(input_tokens, "input tokens"), _int(output_tokens, "output tokens"))


def stream(
    *,
    chunks: int | None = None,
    characters: int | None = None,
    apart: str | datetime.timedelta | n.Duration | None = None,
) -> n.Stream:
    """``stream by word`` (no count), ``stream N chunks`` (``chunks=N``) or ``stream by N characters``
    (``characters=N``), with ``apart`` as ``, D apart``."""
    gap = duration(apart) if apart is not None else None
    if chunks is not None and characters is not None:
        raise BuilderError("stream takes chunks=N or characters=N, not both")
    if chunks is not None:
        return n.Stream("chunks", _int(chunks, "chunks"), gap)
    if characters is not None:
        return n.Stream("characters", _int(characters, "characters"), gap)
    return n.Stream("word", None, gap)


def chunks(*parts: str) -> n.Chunks:
    """``chunks:`` with one string per chunk, streamed exactly as given."""
    return n.Chunks(tuple(_str(p, "a chunk") for p in parts))


def latency(value: str | datetime.timedelta | n.Duration) -> n.Latency:
    return n.Latency(duration(value))


def error(status: int, message: str) -> n.Error:
    """``error STATUS "message"``: an error in the provider's own shape."""
    return n.Error(_int(status, "error status"), _str(message, "error message"))


def retry_after(value: str | datetime.timedelta | n.Duration) -> n.RetryAfter:
    return n.RetryAfter(duration(value))


def header(name: str, value: str) -> n.Header:
    """The reply element ``header "name" "value"`` (a response header); see :func:`request_header`."""
    return n.Header(_str(name, "header name"), _str(value, "header value"))


def echo_header(name: str) -> n.EchoHeader:
    return n.EchoHeader(_str(name, "header name"))


def status(code: int) -> n.Status:
    return n.Status(_int(code, "status"))


def body(value: Any) -> n.Body:
    """``body JSON``: a raw response body (object, array or any JSON literal)."""
    return n.Body(value)


def disconnect(*, after_chunks: int) -> n.Disconnect:
    return n.Disconnect(_int(after_chunks, "after_chunks"))


def stream_error(message: str, *, after_chunks: int) -> n.StreamError:
    return n.StreamError(_str(message, "stream error message"), _int(after_chunks, "after_chunks"))


def hang() -> n.Hang:
    return n.Hang()


def interleave_calls() -> n.InterleaveCalls:
    """``interleave calls``: stream the fragments of several tool calls' arguments alternately (call 0's
    first fragment, call 1's first, …), to test that a client collects them by index."""
    return n.InterleaveCalls()


def vector(values: Sequence[float]) -> n.Vector:
    """``vector [0.1, …]``: the embedding of one input; several answer the inputs in order."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise BuilderError(f"vector takes a list of numbers, not {values!r}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise BuilderError(f"vector takes a list of numbers, not one holding {v!r}")
    if not values:
        raise BuilderError("vector needs at least one number")
    return n.Vector(tuple(values))


def vectors_from(path: str) -> n.VectorsFrom:
    """``vectors from "PATH"``: the inputs' vectors from a JSON file (an array of vectors)."""
    return n.VectorsFrom(_str(path, "vectors file path"))


def flag(*categories: str) -> n.Flag:
    """``flag "violence", …``: a moderation answer flagging these categories."""
    if not categories:
        raise BuilderError('flag needs at least one category, e.g. flag("violence")')
    for c in categories:
        if c not in n.MODERATION_CATEGORIES:
            raise BuilderError(
                f"unknown moderation category {c!r}; categories are {', '.join(n.MODERATION_CATEGORIES)}"
            )
    return n.Flag(tuple(categories))


def echo() -> n.Echo:
    """The echo responder as a reply element (``reply echo`` is :meth:`ScenarioBuilder.reply_echo`)."""
    return n.Echo()


def _elements(items: Sequence[n.ReplyElement], where: str) -> tuple[n.ReplyElement, ...]:
    for item in items:
        if not isinstance(item, n.REPLY_ELEMENT_TYPES):
            raise BuilderError(f'{where} takes reply elements such as text("…") or tool_call(…), not {item!r}')
    return tuple(items)


# ---------------------------------------------------------------------------------------------------------
# Scenarios


@attrs.frozen
class ScenarioBuilder:
    """A scenario under construction. Methods before the first :meth:`step` set the scenario; step
    methods (``when`` after a step, ``after``, ``capture``, ``expect``, ``repeat``, ``always``,
    ``reply``…) set the step opened last."""

    _scenario: n.Scenario

    # ---- the scenario

    def priority(self, value: int) -> ScenarioBuilder:
        return self._set(priority=_int(value, "priority"))

    def tags(self, *values: str) -> ScenarioBuilder:
        return self._set(tags=self._scenario.tags + tuple(_str(v, "a tag") for v in values))

    def order_any(self) -> ScenarioBuilder:
        """``order any``: every step is eligible at any time (each still used up by its limit)."""
        return self._set(order_any=True)

    def let(self, name: str, value: str) -> ScenarioBuilder:
        """``let NAME = "value"``: a template variable for the scenario's replies."""
        return self._set(lets=(*self._scenario.lets, n.Let(_name(name, "let name"), _str(value, "let value"))))

    def step(self, name: str) -> ScenarioBuilder:
        """Open a new step; the step methods that follow apply to it."""
        return self._set(steps=(*self._scenario.steps, n.Step(_name(name, "step name"))))

    def when(self, *conditions: ConditionBuilder | n.Condition) -> ScenarioBuilder:
        """Conditions of the scenario (before any step) or of the current step (after :meth:`step`)."""
        conds = _conditions(conditions, "when()")
        if not self._scenario.steps:
            return self._set(conditions=self._scenario.conditions + conds)
        return self._step("when", conditions=self._current("when").conditions + conds)

    # ---- the current step

    def after(self, step: str) -> ScenarioBuilder:
        """``after NAME``: the step follows ``NAME`` instead of the step before it."""
        return self._step("after", after=n.After(_name(step, "step name")))

    def capture(self, name: str, subject: SubjectBuilder, regex: str | re.Pattern[str] | n.Regex) -> ScenarioBuilder:
        """``capture NAME from SUBJECT /regex/``: group 1 (or the whole match) becomes ``{{NAME}}``."""
        if not isinstance(subject, SubjectBuilder):
            raise BuilderError(f"capture() takes a subject such as last_user_message(), not {subject!r}")
        cap = n.Capture(_name(name, "capture name"), subject.subject, _regex(regex))
        return self._step("capture", captures=(*self._current("capture").captures, cap))

    def expect(self, *conditions: ConditionBuilder | n.Condition) -> ScenarioBuilder:
        """Conditions checked after the step matched; one failing answers HTTP 400 saying which."""
        conds = _conditions(conditions, "expect()")
        return self._step("expect", expects=self._current("expect").expects + conds)

    def repeat(self, times: int) -> ScenarioBuilder:
        """``repeat N``: the step answers N times before it is used up."""
        return self._step("repeat", consumption=n.Consumption("repeat", _int(times, "repeat")))

    def always(self) -> ScenarioBuilder:
        """``always``: the step is never used up."""
        return self._step("always", consumption=n.Consumption("always"))

    def reply(self, *elements: n.ReplyElement) -> ScenarioBuilder:
        """``reply:`` with these elements."""
        return self._step("reply", reply=n.ReplyBlock(_elements(elements, "reply()")))

    def reply_like(self, name: str) -> ScenarioBuilder:
        """``reply like NAME`` or ``reply like ALIAS.NAME`` (a named reply of the file or an import)."""
        alias, _, short = _str(name, "a reply name").rpartition(".")
        ref = n.ReplyRef(_name(short, "reply name"), _name(alias, "alias") if alias else None)
        return self._step("reply_like", reply=ref)

    def reply_echo(self) -> ScenarioBuilder:
        """``reply echo``: answer like the echo responder."""
        return self._step("reply_echo", reply=n.ReplyBlock((n.Echo(),)))

    # ---- results

    def build(self) -> n.Scenario:
        """The :class:`~mockllm.dsl.tree.nodes.Scenario` node (equal to the one parsed from :meth:`to_text`)."""
        return self._scenario

    def to_text(self) -> str:
        """The scenario as a ``.mockllm`` script in canonical layout."""
        return script(self).to_text()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_text` to ``path`` (UTF-8)."""
        script(self).save(path)

    # ---- helpers

    def _set(self, **changes: Any) -> ScenarioBuilder:
        return ScenarioBuilder(attrs.evolve(self._scenario, **changes))

    def _current(self, method: str) -> n.Step:
        if not self._scenario.steps:
            raise BuilderError(f"scenario {self._scenario.name!r}: call .step(NAME) before .{method}(…)")
        return self._scenario.steps[-1]

    def _step(self, method: str, **changes: Any) -> ScenarioBuilder:
        current = attrs.evolve(self._current(method), **changes)
        return self._set(steps=(*self._scenario.steps[:-1], current))


def scenario(name: str) -> ScenarioBuilder:
    """Start a scenario: ``scenario("Weather").step("ask").when(…).reply(…)``."""
    return ScenarioBuilder(n.Scenario(_str(name, "a scenario name")))


# ---------------------------------------------------------------------------------------------------------
# Whole files


def named_reply(name: str, *elements: n.ReplyElement) -> n.NamedReply:
    """``reply NAME:`` with these elements, for ``reply_like(NAME)``."""
    return n.NamedReply(_name(name, "reply name"), _elements(elements, "named_reply()"))


def defaults(*elements: n.ReplyElement, fallback: Sequence[n.ReplyElement] | str | None = None) -> n.Defaults:
    """``defaults:``: ``latency``, ``stream`` and ``header`` elements for every step, and the fallback —
    a list of reply elements, ``"echo"`` (``fallback echo``) or ``"like NAME"`` (``fallback like NAME``)."""
    fb: n.Reply | None = None
    if isinstance(fallback, str):
        if fallback == "echo":
            fb = n.ReplyBlock((n.Echo(),))
        elif fallback.startswith("like "):
            alias, _, short = fallback[5:].strip().rpartition(".")
            fb = n.ReplyRef(_name(short, "reply name"), _name(alias, "alias") if alias else None)
        else:
            raise BuilderError(f"fallback {fallback!r}: give reply elements, 'echo' or 'like NAME'")
    elif fallback is not None:
        fb = n.ReplyBlock(_elements(fallback, "fallback"))
    return n.Defaults(_elements(elements, "defaults()"), fb)


def use(path: str, alias: str) -> n.Use:
    """``use "PATH" as ALIAS``."""
    return n.Use(_str(path, "a path"), _name(alias, "alias"))


@attrs.frozen
class ScriptBuilder:
    """A whole ``.mockllm`` file: scenarios plus ``use`` lines, named replies and defaults."""

    file: n.ScriptFile

    def build(self) -> n.ScriptFile:
        return self.file

    def to_text(self) -> str:
        from mockllm.dsl.format.formatter import format_file

        return format_file(self.file)

    def save(self, path: str | os.PathLike[str]) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_text())


ScriptPart = ScenarioBuilder | n.Scenario | n.NamedReply | n.Defaults | n.Use


def script(*parts: ScriptPart, version: int | None = None, path: str = "<builder>") -> ScriptBuilder:
    """A file from scenarios (builders or nodes), :func:`named_reply`, :func:`defaults` and :func:`use`."""
    scenarios: list[n.Scenario] = []
    replies: list[n.NamedReply] = []
    uses: list[n.Use] = []
    found_defaults: n.Defaults | None = None
    for part in parts:
        if isinstance(part, ScenarioBuilder):
            scenarios.append(part.build())
        elif isinstance(part, n.Scenario):
            scenarios.append(part)
        elif isinstance(part, n.NamedReply):
            replies.append(part)
        elif isinstance(part, n.Use):
            uses.append(part)
        elif isinstance(part, n.Defaults):
            if found_defaults is not None:
                raise BuilderError("a script has at most one defaults(…)")
            found_defaults = part
        else:
            raise BuilderError(f"script() takes scenarios, named replies, defaults and uses, not {part!r}")
    return ScriptBuilder(
        n.ScriptFile(
            path=path,
            version=version,
            uses=tuple(uses),
            replies=tuple(replies),
            defaults=found_defaults,
            scenarios=tuple(scenarios),
        )
    )
