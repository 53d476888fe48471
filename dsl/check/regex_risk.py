"""Regexes that can backtrack without end: a repetition nested inside another, as in ``(a+)+`` or
``(\\w+\\s?)+``, or a repetition of alternatives that can split the same text two ways, as in
``(a|aa)+``. On a text such a pattern does not match, a backtracking engine tries every way of
splitting the text -- exponential in the text's length. The server stops
any search after a time bound (runtime/timed_regex.py); ``mockllm check`` warns before it comes to that."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

_sre: Any = importlib.import_module("re._parser")
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT"}


def nested_quantifier(pattern: str, flags: int = 0) -> bool:
    """Whether ``pattern`` repeats without bound a piece made only of repetitions, one of which varies
    in length: ``(a+)+``, ``(\\w+\\s?)*``. A piece with a fixed part between its repetitions, as in
    ``(\\d+,)*``, splits the text one way only and is not counted; nor are atomic groups and
    possessive repeats, which never backtrack."""
    tree = _parse(pattern, flags)
    return tree is not None and _walk(tree, _only_repeats)


def overlapping_alternatives(pattern: str, flags: int = 0) -> bool:
    """Whether ``pattern`` repeats without bound a choice of fixed strings that some text splits into
    two ways: ``(a|aa)+`` reads ``aaa`` as a·a·a, a·aa or aa·a, so on a text it does not match a
    backtracking search tries Fibonacci(n) splits. ``(cat|dog)+`` and ``(a|ab)+`` split one way only
    and are not counted."""
    tree = _parse(pattern, flags)
    return tree is not None and _walk(tree, _overlapping)


def _parse(pattern: str, flags: int) -> Any:
    """``re``'s parse tree of ``pattern``, or None when it does not parse."""
    try:
        return _sre.parse(pattern, flags)
    except (re.error, RecursionError, OverflowError, TypeError, ValueError):
        return None


def _walk(sub: Any, risky: Callable[[Any], bool | None]) -> bool:
    """Whether the body of some unbounded repetition in ``sub`` is ``risky`` (atomic groups and
    possessive repeats are not entered: they never backtrack)."""
    for op, av in sub:
        name = str(op)
        if name in _REPEATS:
            _low, high, body = av
            if high == _sre.MAXREPEAT and risky(body) is True:
                return True
            if _walk(body, risky):
                return True
        elif name == "SUBPATTERN":
            if _walk(av[-1], risky):
                return True
        elif name == "BRANCH":
            if any(_walk(branch, risky) for branch in av[1]):
                return True
        elif name in ("ASSERT", "ASSERT_NOT"):
            if _walk(av[1], risky):
                return True
    return False


def _only_repeats(sub: Any) -> bool | None:
    """True when ``sub`` is made only of (grouped) repetitions, one of them varying in length; False
    when it holds anything else; None when it is empty or all its repetitions are fixed."""
    found: bool | None = None
    for op, av in sub:
        name = str(op)
        if name in _REPEATS:
            low, high, _body = av
            if low != high:
                found = True
        elif name == "SUBPATTERN":
            inner = _only_repeats(av[-1])
            if inner is False:
                return False
            found = found or inner
        else:
            return False
    return found


_MAX_WORDS = 64  # strings a repeated alternation may match before the overlap check gives up


def _overlapping(body: Any) -> bool:
    """True when ``body`` matches a few fixed strings and some text splits into them two ways: the
    Sardinas-Patterson test for a uniquely decodable code. A body with character classes,
    repetitions or more than :data:`_MAX_WORDS` strings is not judged."""
    words = _words(body)
    if words is None:
        return False
    words = [w for w in words if w]
    code = set(words)
    if len(code) < len(words):
        return True  # two branches match the same string: `(a|a)+`
    dangling = {b[len(a) :] for a in code for b in code if a != b and b.startswith(a)}
    seen: set[str] = set()
    while dangling:
        if dangling & code:
            return True
        seen |= dangling
        step = {b[len(a) :] for a in code for b in dangling if b.startswith(a) and b != a}
        step |= {b[len(a) :] for a in dangling for b in code if b.startswith(a) and b != a}
        dangling = step - seen
    return False


def _words(sub: Any) -> list[str] | None:
    """Each string ``sub`` matches, once per way of matching it; None when it matches other than a
    few fixed strings."""
    out = [""]
    for op, av in sub:
        name = str(op)
        choices: list[str] | None
        if name == "LITERAL":
            choices = [chr(av)]
        elif name == "SUBPATTERN":
            choices = _words(av[-1])
        elif name == "BRANCH":
            each = [_words(branch) for branch in av[1]]
            choices = None if any(w is None for w in each) else [w for ws in each for w in ws or ()]
        else:
            return None
        if choices is None:
            return None
        out = [a + b for a in out for b in choices]
        if len(out) > _MAX_WORDS:
            return None
    return out


MAX_EXPANDED = 100_000  # pieces a compiled pattern may unroll to: `((a{1000}){1000}){1000}` is 10**9


def expanded_size(pattern: str, flags: int = 0) -> int | None:
    """How many pieces ``pattern`` unrolls to when its counted repeats are written out (the `regex`
    package unrolls ``(a{1000}){1000}`` into a million nodes: 280 MB), or None when it does not
    parse. The count stops growing once past :data:`MAX_EXPANDED`."""
    tree = _parse(pattern, flags)
    return None if tree is None else _size(tree)


def _size(sub: Any) -> int:
    total = 0
    for op, av in sub:
        name = str(op)
        if name in _REPEATS or name == "POSSESSIVE_REPEAT":
            low, _high, body = av
            total += max(1, low) * _size(body)
        elif name == "SUBPATTERN":
            total += _size(av[-1])
        elif name == "BRANCH":
            total += sum(_size(branch) for branch in av[1])
        elif name in ("ASSERT", "ASSERT_NOT"):
            total += _size(av[1])
        elif name == "ATOMIC_GROUP":
            total += _size(av)
        else:
            total += 1
        if total > MAX_EXPANDED:
            return MAX_EXPANDED + 1
    return total
