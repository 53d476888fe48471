"""Canonical text for values, subjects, predicates and conditions.

One place decides how a condition reads, so ``mockllm fmt``, the no-match report and ``explain`` all
quote a condition exactly as a script would write it."""

from __future__ import annotations

import json
from typing import Any

from mockllm.dsl.providers import PROVIDERS as PROVIDERS  # re-exported: the checker and the editor read it here
from mockllm.dsl.tree.nodes import Condition, Duration, Predicate, Regex, Subject

_SUBJECT_WORDS = {
    "provider": "provider",
    "endpoint": "endpoint",
    "model": "model",
    "stream": "stream",
    "last_user_message": "last user message",
    "last_message": "last message",
    "system_prompt": "system prompt",
    "tools": "tools",
    "turn": "turn",
    "input": "input",
    "tool": "tool",
    "attachments": "attachments",
}

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


def escape(s: str, *, quotes: bool = True) -> str:
    """``s`` with \\\\, \\n, \\t and control characters escaped, and \\" too unless ``quotes`` is false
    (in a triple-quoted string a quote stays as it is)."""
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"' and quotes:
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def quote(s: str) -> str:
    """A string literal: double quotes, with \\\\, \\", \\n, \\t and control characters escaped."""
    return f'"{escape(s)}"'


def keyword(v: Any) -> str | None:
    """``null``, ``true`` or ``false`` for None, True and False (by identity: 1 is not ``true``);
    None for any other value."""
    return "null" if v is None else "true" if v is True else "false" if v is False else None


def value(v: Any) -> str:
    """A typed literal as written in a script."""
    word = keyword(v)
    if word is not None:
        return word
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, Regex | Duration):
        return str(v)
    if isinstance(v, int | float):
        return json.dumps(v)
    return json.dumps(v, ensure_ascii=False)


def subject(s: Subject) -> str:
    if s.kind in _SUBJECT_WORDS:
        return _SUBJECT_WORDS[s.kind]
    arg = s.arg or ""
    if s.kind == "any_message":
        return f"any {arg} message"
    if s.kind == "tool_result":
        return f"tool result for {quote(arg)}"
    if s.kind == "header":
        return f"header {quote(arg)}"
    if s.kind == "field":
        return f"field {quote(arg)}"
    if s.kind == "argument":
        return f"argument {quote(arg)}"
    raise ValueError(f"unknown subject kind {s.kind!r}")


def predicate(p: Predicate, subj: Subject | None = None) -> str:
    words = OP_WORDS[p.op]
    if p.op in ("present", "absent", "error"):
        return words
    if (
        subj is not None
        and subj.kind == "provider"
        and p.op in ("is", "is_not")
        and isinstance(p.value, str)
        and p.value in PROVIDERS
    ):
        return f"{words} {p.value}"
    return f"{words} {value(p.value)}"


def condition(c: Condition) -> str:
    text = f"{subject(c.subject)} {predicate(c.predicate, c.subject)}"
    return text + " ignoring case" if c.ignore_case else text
