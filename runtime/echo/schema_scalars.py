"""Strings and numbers for a schema node: a realistic value for the property name or format when it
fits the node's bounds, pattern and ``multipleOf``, else the nearest value that does. ``variant``
picks the n-th distinct valid value (for ``uniqueItems``, ``not`` and ``oneOf``)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from mockllm.errors import NoValue
from mockllm.runtime.echo.schema_check import number_ok, string_ok
from mockllm.runtime.echo.schema_limits import MAX_CHARS
from mockllm.runtime.echo.schema_prep import frac, json_eq
from mockllm.runtime.echo.schema_regex import pattern_candidates
from mockllm.runtime.echo.schema_values import FORMATS, fit, name_number, name_string, string_variants

__all__ = ["number_value", "string_value"]


def _json_number(f: Fraction) -> int | float | None:
    """``f`` as a JSON number, or None when it is not an integer and too large for a float."""
    if f.denominator == 1:
        return int(f)
    try:
        return float(f)
    except OverflowError:
        return None


def string_value(node: dict[str, Any], name: str, variant: int) -> str:
    lo_raw, hi_raw = node.get("minLength", 0), node.get("maxLength")
    lo = math.ceil(lo_raw)
    if lo > MAX_CHARS:
        raise NoValue
    hi = int(hi_raw) if isinstance(hi_raw, int | float) else None
    valid: list[str] = []
    for cand in string_candidates(node, name, lo, hi):
        if cand in valid or not string_ok(cand, node):
            continue
        if not valid:
            valid.append(cand)
            if variant == 0:
                return cand
            for v in string_variants(cand):
                if v not in valid and string_ok(v, node):
                    valid.append(v)
                    if len(valid) > variant:
                        return valid[variant]
        else:
            valid.append(cand)
            if len(valid) > variant:
                return valid[variant]
    if valid:
        return valid[0]
    fmt = node.get("format")
    fallback = FORMATS.get(fmt, "example") if isinstance(fmt, str) else "example"
    return fit(fallback, lo, hi)


def string_candidates(node: dict[str, Any], name: str, lo: int, hi: int | None) -> Iterator[str]:
    named = name_string(name)
    fmt = node.get("format")
    fmt_value = FORMATS.get(fmt) if isinstance(fmt, str) else None
    if named is not None:
        yield named
    if fmt_value is not None:
        yield fmt_value
    if named is not None and fmt_value is None and hi is not None and len(named) > hi:
        yield fit(named, lo, hi)
    yield "example"
    yield fit("example", lo, hi)
    for pattern in node.get("x-patterns", ()):
        if isinstance(pattern, str):
            yield from pattern_candidates(pattern, lo)


def number_value(node: dict[str, Any], name: str, integer: bool, variant: int) -> int | float:
    pref = name_number(name)
    pref = Fraction(42) if pref is None else pref
    lo: Fraction | None = None
    lo_ex = False
    hi: Fraction | None = None
    hi_ex = False
    for key, ex in (("minimum", False), ("exclusiveMinimum", True)):
        v = node.get(key)
        if isinstance(v, int | float):
            f = Fraction(v)
            if lo is None or f > lo or (f == lo and ex):
                lo, lo_ex = f, ex
    for key, ex in (("maximum", False), ("exclusiveMaximum", True)):
        v = node.get(key)
        if isinstance(v, int | float):
            f = Fraction(v)
            if hi is None or f < hi or (f == hi and ex):
                hi, hi_ex = f, ex

    def inside(f: Fraction) -> bool:
        if lo is not None and (f < lo or (lo_ex and f == lo)):
            return False
        return not (hi is not None and (f > hi or (hi_ex and f == hi)))

    m = node.get("multipleOf")
    step_m = frac(m) if isinstance(m, int | float) else None
    steps: list[Fraction] = []
    if step_m is not None:
        steps.append(Fraction(step_m.numerator))  # integral multiples first
        if not integer and step_m.denominator != 1:
            steps.append(step_m)
    elif integer:
        steps.append(Fraction(1))

    def candidates() -> Iterator[Fraction]:
        if not steps:
            yield pref
            yield pref + Fraction(1, 2)
            for b in (lo, hi):
                if b is not None:
                    yield from (Fraction(math.ceil(b)), Fraction(math.floor(b)), b, b + 1, b - 1)
            if lo is not None and hi is not None:
                yield from ((lo + hi) / 2, lo + (hi - lo) / 4, lo + (hi - lo) * 3 / 4)
            yield from (pref + k for k in range(1, 12))
        for st in steps:
            kmin = math.ceil(lo / st) if lo is not None else None
            if kmin is not None and lo_ex and kmin * st == lo:
                kmin += 1
            kmax = math.floor(hi / st) if hi is not None else None
            if kmax is not None and hi_ex and kmax * st == hi:
                kmax -= 1
            if kmin is not None and kmax is not None and kmin > kmax:
                continue
            kp = round(pref / st)
            if kmin is not None:
                kp = max(kp, kmin)
            if kmax is not None:
                kp = min(kp, kmax)
            for dk in range(12):
                yield (kp + dk) * st
                yield (kp - dk) * st

    valid: list[int | float] = []
    in_range: list[int | float] = []  # the fallback: right bounds, an exact multiple
    for f in candidates():
        value = _json_number(f)
        if value is None or (integer and not isinstance(value, int)) or not inside(Fraction(value)):
            continue
        if not in_range:
            in_range.append(value)
        if any(json_eq(value, v) for v in valid) or not number_ok(value, node):
            continue
        valid.append(value)
        if len(valid) > variant:
            return valid[variant]
    if valid or in_range:
        return (valid or in_range)[0]
    last = _json_number(Fraction(round(pref)) if integer else pref)
    return 42 if last is None else last
