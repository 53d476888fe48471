"""Evaluating one condition against a provider-neutral request.

:func:`evaluate` answers whether a condition holds and the value the request had, rendered for
people (``"hello"``, ``absent``, ``["get_time"]``, ``3``), so a no-match report or an expectation
failure can say what was actually seen.

A subject the request lacks (no such header, field, tool result, user message) is *absent*: the
positive predicates (``is``, ``contains``, ``matches``, ``glob``, ``include``, ``is at least`` …)
fail on it, their negations (``is not``, ``not contains``, ``not matches``, ``exclude``) hold, and
``is absent`` holds."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from mockllm.dsl.tree.describe import keyword
from mockllm.dsl.tree.nodes import Capture, Condition, Regex, Subject
from mockllm.runtime.request import ChatRequest, ToolResult
from mockllm.runtime.timed_regex import Pattern, compile_pattern, search


class _Absent:
    """The value of a subject the request does not have."""

    def __repr__(self) -> str:
        return "absent"


ABSENT: Final = _Absent()

_NEGATED = {"is_not": "is", "not_contains": "contains", "not_matches": "matches", "exclude": "include"}
_SEEN_LIMIT = 200
_EACH = frozenset({"any_message", "input"})  # list subjects a predicate holds for when it holds for one item


# ---------------------------------------------------------------------------------------------------------
# Regexes


def compile_regex(pattern: str, flags: str = "", ignore_case: bool = False) -> Pattern | None:
    """The compiled regex (cached, time-bounded searches: see :mod:`timed_regex`); None when the
    pattern does not compile."""
    return compile_pattern(pattern, flags, ignore_case)


def _regex(value: Any, ignore_case: bool) -> Pattern | None:
    if isinstance(value, Regex):
        return compile_regex(value.pattern, value.flags, ignore_case)
    if isinstance(value, str):
        return compile_regex(value, "", ignore_case)
    return None


# ---------------------------------------------------------------------------------------------------------
# Subjects


def _walk(body: Any, path: str) -> Any:
    value = body
    if path == "":
        return value
    for part in path.split("."):
        if isinstance(value, dict):
            if part not in value:
                return ABSENT
            value = value[part]
        elif isinstance(value, list):
            if not part.isdigit():
                return ABSENT
            i = int(part)
            if i >= len(value):
                return ABSENT
            value = value[i]
        else:
            return ABSENT
    return value


def role_values(chat: ChatRequest, role: str) -> list[str]:
    """The text of every message of ``role`` (a tool message reads its result content), in order."""
    out: list[str] = []
    for m in chat.messages:
        if m.role != role:
            continue
        if m.tool_result is not None:
            out.append(m.tool_result.content)
        else:
            out.append(m.text)
    return out


def _or_absent(v: Any) -> Any:
    return ABSENT if v is None else v


def _system_prompt(chat: ChatRequest) -> Any:
    if chat.system:
        return chat.system
    system = role_values(chat, "system")
    return "\n".join(system) if system else ABSENT


def _tools(chat: ChatRequest) -> Any:
    names = chat.tool_names()
    return list(names) if names else ABSENT


def _attachments(chat: ChatRequest) -> Any:
    kinds = chat.attachment_kinds()
    return kinds if kinds else ABSENT


#: what each kind of subject reads, given the request and the subject's argument (a table rather than a
#: chain of ``if kind == …``: the subjects read last in the chain, `tool` and `argument`, took a dozen
#: comparisons on every condition an MCP call tried)
_READERS: dict[str, Callable[[ChatRequest, str], Any]] = {
    "provider": lambda chat, arg: chat.provider,
    "endpoint": lambda chat, arg: chat.endpoint,
    "model": lambda chat, arg: chat.model,
    "stream": lambda chat, arg: chat.stream,
    "last_user_message": lambda chat, arg: _or_absent(chat.last_user_message()),
    "last_message": lambda chat, arg: _or_absent(chat.last_message()),
    "any_message": lambda chat, arg: role_values(chat, arg),
    "system_prompt": lambda chat, arg: _system_prompt(chat),
    "tools": lambda chat, arg: _tools(chat),
    "tool_result": lambda chat, arg: _or_absent(chat.latest_tool_result(arg)),
    "header": lambda chat, arg: _or_absent(chat.header(arg)),
    "field": lambda chat, arg: _walk(chat.body, arg),
    "turn": lambda chat, arg: chat.turn(),
    "input": lambda chat, arg: list(chat.inputs),
    "tool": lambda chat, arg: _or_absent(chat.tool),
    "argument": lambda chat, arg: ABSENT if chat.tool is None else _walk(chat.arguments, arg),
    "attachments": lambda chat, arg: _attachments(chat),
}


def subject_value(subject: Subject, chat: ChatRequest) -> Any:
    """What ``subject`` reads from the request, or :data:`ABSENT`. ``any ROLE message`` gives the list
    of that role's message texts; ``tool result for`` gives the :class:`ToolResult`."""
    read = _READERS.get(subject.kind)
    return ABSENT if read is None else read(chat, subject.arg or "")


def names_operation(value: Any) -> bool:
    """Whether an `endpoint` operand names an operation (``"embeddings"``) rather than a path."""
    return isinstance(value, str) and not value.startswith("/")


def _subject_of(cond: Condition, chat: ChatRequest) -> Any:
    """What ``cond`` reads: its subject's value, except that `endpoint` compared with an operation name
    reads the request's operation (``chat``, ``embeddings``, ``moderations``) instead of its path."""
    if cond.subject.kind == "endpoint" and names_operation(cond.predicate.value):
        return chat.operation
    return subject_value(cond.subject, chat)


def subject_text(subject: Subject, chat: ChatRequest) -> list[str]:
    """The strings a capture regex searches, most relevant first (an empty list when absent)."""
    v = subject_value(subject, chat)
    if subject.kind == "any_message":
        return list(reversed(v))
    if subject.kind == "input":
        return list(v)
    if v is ABSENT:
        return []
    if isinstance(v, ToolResult):
        return [v.content]
    if subject.kind == "tools":
        return [",".join(v)]
    return [_as_text(v)]


def _as_text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, ToolResult):
        return v.content
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------------------
# Rendering what was seen


def _short(s: str) -> str:
    if len(s) <= _SEEN_LIMIT:
        return json.dumps(s, ensure_ascii=False)
    return json.dumps(s[:_SEEN_LIMIT], ensure_ascii=False)[:-1] + f'…" ({len(s)} characters)'


def show(v: Any) -> str:
    """A value as people read it in a report."""
    if v is ABSENT:
        return "absent"
    if isinstance(v, ToolResult):
        text = _short(v.content)
        return f"{text} (marked as an error)" if v.is_error else text
    if isinstance(v, str):
        return _short(v)
    word = keyword(v)
    if word is not None:
        return word
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return "[" + ", ".join(_short(x) for x in v) + "]"
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= _SEEN_LIMIT else text[:_SEEN_LIMIT] + "…"


# ---------------------------------------------------------------------------------------------------------
# Predicates


def _fold(v: Any, ignore_case: bool) -> Any:
    if not ignore_case:
        return v
    if isinstance(v, str):
        return v.casefold()
    if isinstance(v, list):
        return [_fold(x, True) for x in v]
    if isinstance(v, dict):
        return {k: _fold(x, True) for k, x in v.items()}
    return v


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _same(v: Any, lit: Any, ignore_case: bool) -> bool:
    """Typed equality: never coerces a string to a number or a number to a boolean."""
    if isinstance(v, ToolResult):
        v = v.content
    if isinstance(lit, bool) or isinstance(v, bool):
        return isinstance(lit, bool) and isinstance(v, bool) and v is lit
    if _is_number(lit) or _is_number(v):
        return _is_number(lit) and _is_number(v) and v == lit
    if lit is None or v is None:
        return lit is None and v is None
    if type(v) is not type(lit) and not (isinstance(v, list) and isinstance(lit, list | tuple)):
        return False
    if isinstance(lit, tuple):
        lit = list(lit)
    return bool(_fold(v, ignore_case) == _fold(lit, ignore_case))


def _number(v: Any) -> float | None:
    if isinstance(v, ToolResult):
        v = v.content
    if _is_number(v):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return None
    return None


def _is_error(v: Any) -> bool:
    if not isinstance(v, ToolResult):
        return False
    if v.is_error:
        return True
    try:
        parsed = json.loads(v.content)
    except (ValueError, RecursionError):
        return False
    return isinstance(parsed, dict) and "error" in parsed


def _positive(op: str, v: Any, operand: Any, ignore_case: bool) -> bool:
    """A non-negated predicate on a present value."""
    if op == "is":
        return _same(v, operand, ignore_case)
    if op == "present":
        return True
    if op == "absent":
        return False
    if op == "error":
        return _is_error(v)
    if op in ("at_least", "at_most"):
        n = _number(v)
        limit = _number(operand)
        if n is None or limit is None:
            return False
        return n >= limit if op == "at_least" else n <= limit
    if op == "include":
        needle = _fold(operand, ignore_case)
        if isinstance(v, list):
            return any(_same(x, operand, ignore_case) for x in v)
        if isinstance(v, dict):
            return needle in _fold(list(v), ignore_case)
        return isinstance(needle, str) and needle in _fold(_as_text(v), ignore_case)
    # string predicates: a list holds when one of its elements does
    if isinstance(v, list):
        return any(_positive(op, x, operand, ignore_case) for x in v)
    text = _as_text(v)
    if op == "contains":
        return isinstance(operand, str) and _fold(operand, ignore_case) in _fold(text, ignore_case)
    if op == "matches":
        rx = _regex(operand, ignore_case)
        return rx is not None and search(rx, text) is not None
    if op == "glob":
        if not isinstance(operand, str):
            return False
        if ignore_case:
            return fnmatch.fnmatchcase(text.casefold(), operand.casefold())
        return fnmatch.fnmatchcase(text, operand)
    return False


def _holds(op: str, v: Any, operand: Any, ignore_case: bool) -> bool:
    if op in _NEGATED:
        return not _holds(_NEGATED[op], v, operand, ignore_case)
    if v is ABSENT:
        return op == "absent"
    return _positive(op, v, operand, ignore_case)


def _check(cond: Condition, v: Any) -> bool:
    op = cond.predicate.op
    if cond.subject.kind in _EACH:
        if op == "present":
            return bool(v)
        if op == "absent":
            return not v
        return any(_holds(op, x, cond.predicate.value, cond.ignore_case) for x in v)
    operand = cond.predicate.value
    if op == "is" and type(v) is str and type(operand) is str:  # most conditions: what _same does, in one step
        return v.casefold() == operand.casefold() if cond.ignore_case else v == operand
    return _holds(op, v, operand, cond.ignore_case)


def holds(cond: Condition, chat: ChatRequest) -> bool:
    """Whether ``cond`` holds for ``chat`` (the matching hot path: nothing rendered)."""
    return _check(cond, _subject_of(cond, chat))


def evaluate(cond: Condition, chat: ChatRequest) -> tuple[bool, str]:
    """Whether ``cond`` holds for ``chat``, and the value seen, rendered for people (a credential
    header's value masked: the text goes to the log, the journal and the no-match report)."""
    v = _subject_of(cond, chat)
    if cond.subject.kind in _EACH and not v:
        return _check(cond, v), "absent"
    if is_secret(cond.subject) and isinstance(v, str):
        return _check(cond, v), mask_secret(v)
    return _check(cond, v), show(v)


SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie"})


def is_secret(subject: Subject) -> bool:
    """Whether ``subject`` reads a header that carries a credential."""
    return subject.kind == "header" and (subject.arg or "").strip().lower() in SECRET_HEADERS


def mask_secret(value: str) -> str:
    """A credential as reports show it: its scheme and first four characters, then its length
    (``"Bearer sk-l…" (masked, 51 characters)``), enough to tell two keys apart, not to use one."""
    scheme, sep, rest = value.strip().partition(" ")
    prefix, secret = (
        (scheme + " ", rest.strip())
        if sep and scheme.lower() in ("bearer", "basic", "token")
        else (
            "",
            value.strip(),
        )
    )
    shown = secret[:4] if len(secret) > 8 else ""
    return f'"{prefix}{shown}…" (masked, {len(value)} characters)'


def capture(cap: Capture, chat: ChatRequest) -> str | None:
    """The value a capture takes (its first group, or the whole match), or None when the regex does not
    match its subject."""
    rx = compile_regex(cap.regex.pattern, cap.regex.flags)
    if rx is None:
        return None
    for text in subject_text(cap.subject, chat):
        m = search(rx, text)
        if m is None:
            continue
        if rx.groups >= 1:
            return m.group(1) or ""
        return m.group(0)
    return None


def capture_seen(cap: Capture, chat: ChatRequest) -> str:
    """The value a failed capture searched, rendered for people (credentials masked)."""
    v = subject_value(cap.subject, chat)
    if cap.subject.kind in _EACH and not v:
        return "absent"
    if is_secret(cap.subject) and isinstance(v, str):
        return mask_secret(v)
    return show(v)


# ---------------------------------------------------------------------------------------------------------
# Templates in condition values: `contains "{{city}}"` compares with the city this conversation captured


def template_names(cond: Condition) -> tuple[str, ...]:
    """The ``{{name}}`` references in a condition's operand (a string, or a regex's pattern); () when it
    has none or its template is malformed (``check`` reports that)."""
    from mockllm.dsl.tree.templates import parse
    from mockllm.errors import TemplateError

    value = cond.predicate.value
    text = value.pattern if isinstance(value, Regex) else value
    if not isinstance(text, str) or "{{" not in text:
        return ()
    try:
        return tuple(ref.name for ref in parse(text).names)
    except TemplateError:
        return ()


def bind(cond: Condition, env: Mapping[str, str]) -> tuple[Condition, tuple[str, ...]]:
    """``cond`` with the templates of its operand filled from ``env`` (captures and lets), and the names
    ``env`` lacks. A regex receives each value escaped, so a captured "C++" matches itself."""
    from mockllm.dsl.tree.templates import parse

    value = cond.predicate.value
    names = template_names(cond)
    if not names:
        return cond, ()
    missing = tuple(name for name in names if name not in env)
    if isinstance(value, Regex):
        tpl = parse(value.pattern)
        escaped = {k: re.escape(v) for k, v in env.items()}
        bound: Any = attrs.evolve(value, pattern=tpl.render(escaped))
    elif isinstance(value, str):
        bound = parse(value).render(env)
    else:
        return cond, ()
    return attrs.evolve(cond, predicate=attrs.evolve(cond.predicate, value=bound)), missing


def bind_all(conds: tuple[Condition, ...], env: Mapping[str, str]) -> tuple[Condition, ...] | None:
    """Every condition bound to ``env``; None when one refers to a capture this conversation has not
    taken yet (such a condition cannot hold)."""
    out: list[Condition] = []
    for cond in conds:
        bound, missing = bind(cond, env)
        if missing:
            return None
        out.append(bound)
    return tuple(out)
