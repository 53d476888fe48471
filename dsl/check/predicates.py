"""Condition checks: which predicates apply to which subjects, typed literals that do not fit the
subject (``stream is "yes"``, ``turn is 1.5``), regexes that do not compile, and captures from
subjects that are not text."""

from __future__ import annotations

import json
import re
from typing import get_args

import attrs

from mockllm.dsl.check.common import Reporter, did_you_mean, word_list
from mockllm.dsl.check.regex_risk import MAX_EXPANDED, expanded_size, nested_quantifier, overlapping_alternatives
from mockllm.dsl.operations import OPERATIONS  # what `endpoint` names without a leading `/`
from mockllm.dsl.span import Span
from mockllm.dsl.tree import describe
from mockllm.dsl.tree.describe import OP_WORDS, PROVIDERS
from mockllm.dsl.tree.nodes import Capture, Condition, Regex, SubjectKind
from mockllm.dsl.tree.predicates import allowed_ops

SUBJECT_KINDS = frozenset(get_args(SubjectKind))
ROLES = ("user", "assistant", "system", "tool")
REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def regex_flags(flags: str) -> int:
    out = 0
    for ch in flags:
        out |= REGEX_FLAGS.get(ch, 0)
    return out


def check_condition(r: Reporter, cond: Condition, file: str) -> None:
    subj, pred = cond.subject, cond.predicate
    kind, op, value = subj.kind, pred.op, pred.value
    pspan = r.at(pred.span if pred.span.line else cond.span, file)
    sspan = r.at(subj.span if subj.span.line else cond.span, file)
    if kind not in SUBJECT_KINDS:
        r.err("bad-subject", f"unknown subject `{kind}`", sspan, hint=did_you_mean(kind, SUBJECT_KINDS))
        return
    words = describe.subject(subj)
    opw = OP_WORDS.get(op, op)
    if kind == "any_message" and subj.arg not in ROLES:
        r.err(
            "bad-subject",
            f"`any {subj.arg} message`: there is no role `{subj.arg}`",
            sspan,
            hint=did_you_mean(subj.arg or "", ROLES, "`any {} message`") or f"roles are {word_list(ROLES, 'and')}",
        )
    allowed = allowed_ops(kind)
    if op not in allowed:
        r.err(
            "bad-predicate",
            f"`{opw}` cannot be used with `{words}`",
            pspan,
            hint=f"`{words}` takes {word_list([OP_WORDS[o] for o in allowed])}",
        )
        return
    problem = _value_problem(kind, words, op, value)
    if problem is not None:
        r.err("bad-value", problem[0], pspan, hint=problem[1])
        return
    if op in ("matches", "not_matches") and isinstance(value, Regex):
        _check_regex(r, value, r.loc.narrow(pspan, "/"), file)
    if cond.ignore_case:
        stringy = op in ("contains", "not_contains", "matches", "not_matches", "glob", "include", "exclude") or (
            op in ("is", "is_not") and isinstance(value, str)
        )
        if not stringy:
            r.err(
                "bad-ignore-case",
                f"`ignoring case` does not apply to `{describe.condition(attrs.evolve(cond, ignore_case=False))}`",
                r.name_span(cond.span, "ignoring case", file, last=True),
                hint="`ignoring case` goes only with a comparison of text; remove it",
            )


ATTACHMENT_KINDS = ("image", "audio", "file")


def _value_problem(kind: str, words: str, op: str, value: object) -> tuple[str, str] | None:
    shown = describe.value(value) if not isinstance(value, Regex) else str(value)
    if kind == "attachments" and op in ("include", "exclude") and value not in ATTACHMENT_KINDS:
        return (
            f"`attachments` holds the kinds {word_list(ATTACHMENT_KINDS, 'and')}, never {shown}",
            did_you_mean(str(value), ATTACHMENT_KINDS, '`attachments include "{}"`')
            or 'write `attachments include "image"`, `"audio"` or `"file"`',
        )
    if op in ("is", "is_not"):
        if kind == "provider":
            if not isinstance(value, str):
                return (
                    f"`provider` is a provider name, not {shown}",
                    f"providers are {word_list(PROVIDERS, 'and')}",
                )
            if value not in PROVIDERS:
                return (
                    f"unknown provider `{value}`",
                    did_you_mean(value, PROVIDERS) or f"providers are {word_list(PROVIDERS, 'and')}",
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
        if kind in ("field", "argument"):
            return None
        if kind == "endpoint" and isinstance(value, str) and not value.startswith("/") and value not in OPERATIONS:
            return (
                f'`endpoint` is a path such as `"/v1/embeddings"` or an operation, and `{value}` is neither',
                did_you_mean(value, OPERATIONS, '`"{}"`')
                or f"operations are {word_list([describe.quote(o) for o in OPERATIONS], 'and')}; "
                "a path starts with `/`",
            )
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


def _check_regex(r: Reporter, regex: Regex, span: Span, file: str) -> None:
    where = span
    if span.line > 0 and span.end_line == span.line:
        where = attrs.evolve(span, end_column=span.column + len(str(regex)))
    bad = [ch for ch in regex.flags if ch not in REGEX_FLAGS]
    if bad:
        r.err("bad-regex", f"unknown regex flag `{bad[0]}`", where, hint="regex flags are `i`, `m`, `s` and `x`")
        return
    try:
        re.compile(regex.pattern, regex_flags(regex.flags))
    except re.error as exc:
        at = f" at position {exc.pos}" if exc.pos is not None else ""
        r.err("bad-regex", f"invalid regex {regex}: {exc.msg}{at}", r.at(where, file))
        return
    size = expanded_size(regex.pattern, regex_flags(regex.flags))
    if size is not None and size > MAX_EXPANDED:
        r.err(
            "bad-regex",
            f"regex {regex} is too large: its counted repeats unroll to more than {MAX_EXPANDED:,} pieces",
            r.at(where, file),
            hint="use smaller counts, or `+` / `*` instead of a large `{n}`",
        )
        return
    flags = regex_flags(regex.flags)
    if nested_quantifier(regex.pattern, flags):
        r.warn(
            "slow-regex",
            f"regex {regex} repeats a repetition (like `(a+)+`): {_SLOW}",
            r.at(where, file),
            hint="repeat the inner piece once (`(a+)+` → `a+`, `(\\w+\\s?)+` → `[\\w\\s]+`), or put a fixed "
            "character between repetitions",
        )
    elif overlapping_alternatives(regex.pattern, flags):
        r.warn(
            "slow-regex",
            f"regex {regex} repeats alternatives that split the same text more than one way (like `(a|aa)+`): {_SLOW}",
            r.at(where, file),
            hint="make the alternatives not overlap (`(a|aa)+` → `a+`), or make the group atomic (`(?>a|aa)+`)",
        )


_SLOW = (
    "on a text it does not match it can run for minutes, and the server stops it after 50 ms of its own CPU time "
    "and answers that request with an error"
)


def check_capture(r: Reporter, cap: Capture, file: str) -> None:
    subj = cap.subject
    span = r.at(cap.span, file)
    if subj.kind in ("tools", "turn", "stream"):
        r.err(
            "bad-capture",
            f"cannot capture from `{describe.subject(subj)}`: captures read text",
            r.at(subj.span, file) if subj.span.line else span,
            hint="capture from a text subject such as `last user message`",
        )
    skip = 0
    if subj.span.line == span.line and subj.span.end_line == span.line and span.line > 0:
        skip = max(0, subj.span.end_column - span.column)
    _check_regex(r, cap.regex, r.loc.narrow(span, "/", skip=skip), file)


def _plain(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return json.dumps(value)
