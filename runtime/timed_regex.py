"""Regex searches with a time bound, so no pattern can stall the server.

Python's ``re`` backtracks without limit: a script's ``/(a|aa)+$/`` on forty characters, or a tool
schema's ``pattern`` sent by a client, held the event loop (and every other client, health checks
included) for as long as it ran (issue 12). Every regex mockllm runs on request text therefore goes
through the `regex` package, whose searches take a ``timeout``: a search that uses more than
:data:`TIMEOUT_S` of its own CPU time raises :class:`~mockllm.errors.RegexTimeout`, which the engine
turns into a clear error for that one request. The `regex` package's default mode (``VERSION0``)
reads patterns as ``re`` does.

Whose time counts. The `regex` package measures its ``timeout`` with C's ``clock()``: the CPU time
of the whole *process*, every thread included. In a test process that runs the server beside fifty
SDK client threads, those threads' time counted against a search of ``/weather in (\\w+)/`` that
itself took microseconds (a CI run answered it with "regex timed out"): a search that releases the
GIL takes it back before its first step, and while it waits the other threads' CPU time adds up.
So the bound here is the searching thread's own CPU time (``time.thread_time``), which no other
thread and no other process can use up:

- the search holds the GIL (``concurrent=False``): it does not wait for it halfway, so the process
  clock only runs ahead of the thread's own clock by what other threads do without the GIL, at
  most the other cores' time;
- a search the `regex` package stops before the thread itself used :data:`TIMEOUT_S` of CPU was
  stopped for other threads' work: it runs again, until the thread's own time reaches the bound.
  Each round adds a share of the bound to the thread's time (about ``1/cores``), so a catastrophic
  pattern is still stopped after a few rounds, on a busy machine as on an idle one, and
  :data:`MAX_ROUNDS` ends the loop whatever the clocks say.

A trivial pattern therefore never times out because the machine is busy, and a catastrophic one
costs the server at most about twice the bound of its own time."""

from __future__ import annotations

import functools
import re
import time

import regex

from mockllm.dsl.check.regex_risk import MAX_EXPANDED, expanded_size
from mockllm.errors import RegexTimeout

TIMEOUT_S = 0.05  # of the searching thread's own CPU time: far beyond any sane pattern on chat text
MAX_ROUNDS = 16  # searches stopped by other threads' time before the search counts as timed out

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
    """``rx.search(text)``, or :class:`RegexTimeout` once the search used :data:`TIMEOUT_S` of this
    thread's own CPU time (see the module's docstring for why it may take several rounds)."""
    start = time.thread_time()
    for _ in range(MAX_ROUNDS):
        try:
            return rx.search(text, concurrent=False, timeout=TIMEOUT_S)
        except TimeoutError:
            if time.thread_time() - start >= TIMEOUT_S:
                break
    raise RegexTimeout(rx.pattern, limit_ms=TIMEOUT_S * 1000)


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
