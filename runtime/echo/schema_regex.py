"""Strings for a regex: a sampler over the ``re`` parse tree (repeats at their minimum plus a growth,
first alternatives, anchors dropped, positive lookaheads placed in front), with plain candidate
strings as a fallback. The caller checks each candidate against the pattern."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from typing import Any

from mockllm.errors import NoValue
from mockllm.runtime.echo.schema_limits import MAX_CHARS
from mockllm.runtime.timed_regex import client_pattern_matches

__all__ = ["pattern_candidates", "search"]

_sre: Any = importlib.import_module("re._parser")


def _op(op: Any) -> str:
    return str(getattr(op, "name", op))


_CATEGORY_CHARS = {
    "CATEGORY_DIGIT": "0",
    "CATEGORY_NOT_DIGIT": "a",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_SPACE": "a",
    "CATEGORY_WORD": "a",
    "CATEGORY_NOT_WORD": "-",
}
_POOL = "abcxyzABCXYZ0123456789-_. @!#"


def _in_category(ch: str, cat: str) -> bool:
    if cat.endswith("DIGIT"):
        hit = ch.isdigit()
    elif cat.endswith("SPACE"):
        hit = ch.isspace()
    elif cat.endswith("WORD"):
        hit = ch.isalnum() or ch == "_"
    else:
        hit = False
    return not hit if "_NOT_" in cat else hit


def _in_class(ch: str, items: list[Any]) -> bool:
    code = ord(ch)
    for op, av in items:
        name = _op(op)
        if name == "LITERAL" and code == av:
            return True
        if name.startswith("RANGE") and av[0] <= code <= av[1]:
            return True
        if name == "CATEGORY" and _in_category(ch, _op(av)):
            return True
    return False


def _class_char(items: list[Any]) -> str:
    if items and _op(items[0][0]) == "NEGATE":
        for ch in _POOL:
            if not _in_class(ch, items[1:]):
                return ch
        raise NoValue
    for op, av in items:
        name = _op(op)
        if name == "LITERAL":
            return chr(av)
        if name.startswith("RANGE"):
            return chr(av[0])
        if name == "CATEGORY":
            return _CATEGORY_CHARS.get(_op(av), "a")
    raise NoValue


class _Sampler:
    """One string for a parsed regex: repeats at their minimum plus ``grow``, first alternatives,
    anchors dropped; positive lookaheads are sampled into ``snippets`` for the caller to place."""

    def __init__(self, grow: int) -> None:
        self.grow = grow
        self.groups: dict[int, str] = {}
        self.snippets: list[str] = []
        self.size = 0

    def emit(self, items: Any) -> str:
        out: list[str] = []
        for op, av in items:
            out.append(self.one(_op(op), av))
        return "".join(out)

    def one(self, name: str, av: Any) -> str:
        if name == "LITERAL":
            return chr(av)
        if name == "NOT_LITERAL":
            return next(ch for ch in _POOL if ord(ch) != av)
        if name == "ANY":
            return "a"
        if name == "IN":
            return _class_char(list(av))
        if name == "CATEGORY":
            return _CATEGORY_CHARS.get(_op(av), "a")
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = av
            hi = min(hi, lo + 10_000)
            count = min(lo + self.grow, hi)
            pieces: list[str] = []
            for _ in range(count):
                piece = self.emit(sub)
                self.size += len(piece)
                if self.size > MAX_CHARS:
                    raise NoValue
                pieces.append(piece)
            return "".join(pieces)
        if name == "SUBPATTERN":
            gid, sub = av[0], av[-1]
            s = self.emit(sub)
            if gid is not None:
                self.groups[gid] = s
            return s
        if name == "ATOMIC_GROUP":
            return self.emit(av)
        if name == "BRANCH":
            return self.emit(av[1][0])
        if name == "AT" or name == "ASSERT_NOT":
            return ""
        if name == "ASSERT":
            direction, sub = av
            if direction == 1:
                self.snippets.append(_Sampler(0).emit(sub))
            return ""
        if name == "GROUPREF":
            return self.groups.get(av, "")
        if name == "GROUPREF_EXISTS":
            gid, yes, no = av
            if gid in self.groups:
                return self.emit(yes)
            return self.emit(no) if no is not None else ""
        raise NoValue


_FALLBACK_STRINGS = ("example", "Example1!", "abc123", "ABC", "abc", "123", "a", "A", "0", "Aa1!Aa1!Aa1!", " ")


def pattern_candidates(pattern: str, min_len: int = 0) -> Iterator[str]:
    """Strings meant to match ``pattern`` (checked by the caller), shortest first."""
    try:
        tree = _sre.parse(pattern)
    except (re.error, RecursionError, OverflowError, TypeError, ValueError):
        yield from _FALLBACK_STRINGS
        return
    grows = [0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
    if min_len > 0:
        # repeats grow together, so a length is reached near min_len / k for some small k
        near = {min_len // k + d for k in range(1, 9) for d in (-1, 0, 1)}
        grows = sorted({*range(min(min_len, 64) + 2), *near} - {-1})
    for grow in grows:
        sampler = _Sampler(grow)
        try:
            s = sampler.emit(tree)
        except (NoValue, RecursionError, KeyError, TypeError, ValueError, IndexError, StopIteration):
            if sampler.size > MAX_CHARS:
                break  # growing further only makes it longer
            continue
        yield s
        if sampler.snippets:
            joined = "".join(sampler.snippets)
            yield joined + s[len(joined) :]
            yield joined + s
    yield from _FALLBACK_STRINGS


def search(pattern: str, s: str) -> bool:
    """Whether ``pattern`` finds a match in ``s``; a pattern that does not compile finds nothing (one
    that runs past the time bound counts as a match, see :func:`client_pattern_matches`)."""
    return client_pattern_matches(pattern, s) is True
