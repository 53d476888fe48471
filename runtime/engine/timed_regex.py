"""Regex searches with a time bound, so no pattern can stall the server.

Python's ``re`` backtracks without limit: a script's ``/(a|aa)+$/`` on forty characters, or a tool
schema's ``pattern`` sent by a client, held the event loop (and every other client, health checks
included) for as long as it ran (issue 12). Every regex mockllm runs on request text therefore goes
through the `regex` package, whose searches take a ``timeout``: past :data:`TIMEOUT_S` of work a
search raises :class:`~mockllm.errors.RegexTimeout`, which the engine turns into a clear error for that one request.
The `regex` package's default mode (``VERSION0``) reads patterns as ``re`` does."""

from __future__ import annotations

import functools
import re

import regex

from mockllm.dsl.check.regex_risk import MAX_EXPANDED, expanded_size
from mockllm.errors import RegexTimeout

TIMEOUT_S = 0.05  # of the process's CPU time, per search: far beyond any sane pattern on chat text

Pattern = regex.Pattern[str]
Match = regex.Match[str]

_FLAG_BITS = {"i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL, "x": regex.VERBOSE}
_RE_BITS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


@functools.lru_cache(maxsize=4096)
def compile_pattern(pattern: str, flags: str = "", ignore_case: bool = False) -> Pattern | None:
    """The compiled regex (cached); None when the pattern does not compile."""
    bits = regex.VERSION0
    for f in flags:
        bits |= _FLAG_BITS.get(f, 0)
    if ignore_case:
        bits |= regex.IGNORECASE
    size = expanded_size(pattern, _re_bits(flags, ignore_case))
    if size is None or size > MAX_EXPANDED:
        return None  # not a regex; or one whose counted repeats would unroll to gigabytes
    try:
        return regex.compile(pattern, bits)
    except (regex.error, re.error, ValueError, TypeError, OverflowError, RecursionError):
        return None


def _re_bits(flags: str, ignore_case: bool) -> int:
    bits = 0
    for f in flags:
        bits |= _RE_BITS.get(f, 0)
    return bits | (re.IGNORECASE if ignore_case else 0)


def search(rx: Pattern, text: str) -> Match | None:
    """``rx.search(text)``, or :class:`RegexTimeout` past the time bound."""
    try:
        return rx.search(text, timeout=TIMEOUT_S)
    except TimeoutError:
        raise RegexTimeout(rx.pattern, limit_ms=TIMEOUT_S * 1000) from None


def client_pattern_matches(pattern: str, text: str) -> bool | None:
    """Whether a pattern a client sent (a tool schema's ``pattern``) finds a match in ``text``; None when
    it does not compile. One that runs past the time bound counts as a match: the value is taken as
    valid (as the schema checker does past its step limit), so generation stops instead of trying
    candidate after candidate against it."""
    if not isinstance(pattern, str):
        return None
    rx = compile_pattern(pattern)
    if rx is None:
        return None
    try:
        return search(rx, text) is not None
    except RegexTimeout:
        return True
