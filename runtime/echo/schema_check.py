"""A small JSON Schema validator: the subset the generator understands, used to pick valid values.

Formats are checked for the common cases (date, date-time, time, email, uri, uuid, ipv4, ipv6,
hostname, duration, regex); past ``CHECK_STEPS`` a value is assumed valid."""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from mockllm.runtime.echo.schema_limits import CHECK_STEPS, MAX_DEPTH
from mockllm.runtime.echo.schema_prep import json_eq, prep
from mockllm.runtime.echo.schema_refs import Resolver
from mockllm.runtime.timed_regex import client_pattern_matches

__all__ = ["Checker", "is_valid", "number_ok", "string_ok"]

_RE_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_RE_TIME = re.compile(r"\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]+")
_HOST = re.compile(rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*")
# formats checked by one whole-string regex
_FORMAT_PATTERNS: dict[str, re.Pattern[str]] = {
    "email": _EMAIL,
    "idn-email": _EMAIL,
    "uri": _URI,
    "url": _URI,
    "iri": _URI,
    "uuid": re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"),
    "hostname": _HOST,
    "idn-hostname": _HOST,
    "duration": re.compile(r"P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?"),
}
# formats checked by a parser that raises ValueError (or re.error) on a bad value
_FORMAT_PARSERS: dict[str, Callable[[str], object]] = {
    "ipv4": ipaddress.IPv4Address,
    "ipv6": ipaddress.IPv6Address,
    "regex": re.compile,
}


def _format_ok(fmt: str, s: str) -> bool:
    try:
        if fmt == "date":
            return bool(_RE_DATE.fullmatch(s)) and bool(datetime.date.fromisoformat(s))
        if fmt in ("date-time", "datetime"):
            d, sep, t = s.partition("T") if "T" in s else s.partition("t")
            return bool(sep) and _format_ok("date", d) and _format_ok("time", t)
        if fmt == "time":
            return bool(_RE_TIME.fullmatch(s)) and int(s[:2]) < 24 and int(s[3:5]) < 60 and int(s[6:8]) < 61
        if fmt in _FORMAT_PATTERNS:
            return bool(_FORMAT_PATTERNS[fmt].fullmatch(s))
        if fmt in _FORMAT_PARSERS:
            _FORMAT_PARSERS[fmt](s)
            return True
    except (ValueError, re.error):
        return False
    return True


def _is_type(value: Any, t: str) -> bool:
    if t == "null":
        return value is None
    if t == "boolean":
        return isinstance(value, bool)
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if t == "integer":
        return isinstance(value, int) or value.is_integer()
    return t == "number"


def number_ok(v: int | float, node: Mapping[str, Any]) -> bool:
    lo, hi = node.get("minimum"), node.get("maximum")
    elo, ehi = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    if isinstance(lo, int | float) and v < lo:
        return False
    if isinstance(hi, int | float) and v > hi:
        return False
    if isinstance(elo, int | float) and v <= elo:
        return False
    if isinstance(ehi, int | float) and v >= ehi:
        return False
    m = node.get("multipleOf")
    if isinstance(m, int | float) and m > 0:
        # mirror jsonschema's check, float quirks included
        if isinstance(m, float):
            try:
                q = v / m  # a huge integer over a float overflows too
                return int(q) == q
            except OverflowError:
                return (Fraction(v) / Fraction(m)).denominator == 1
        return not v % m
    return True


def string_ok(s: str, node: Mapping[str, Any]) -> bool:
    lo, hi = node.get("minLength"), node.get("maxLength")
    if isinstance(lo, int | float) and len(s) < lo:
        return False
    if isinstance(hi, int | float) and len(s) > hi:
        return False
    for p in node.get("x-patterns", ()):
        if client_pattern_matches(p, s) is False:
            return False
    fmt = node.get("format")
    return not isinstance(fmt, str) or _format_ok(fmt, s)


class Checker:
    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.steps = 0

    def valid(self, v: Any, schema: Any, depth: int = 0) -> bool:
        self.steps += 1
        if depth > MAX_DEPTH or schema is True or schema is None or self.steps > CHECK_STEPS:
            return True
        if schema is False:
            return False
        if not isinstance(schema, Mapping):
            return True
        node = prep(schema)
        d = depth + 1
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = self.resolver.resolve(ref)
            if target is not None and not self.valid(v, target, d):
                return False
        types = node.get("type")
        if types and not any(_is_type(v, t) for t in types):
            return False
        if "const" in node and not json_eq(v, node["const"]):
            return False
        enum = node.get("enum")
        if isinstance(enum, list) and not any(json_eq(v, e) for e in enum):
            return False
        if isinstance(v, int | float) and not isinstance(v, bool) and not number_ok(v, node):
            return False
        if isinstance(v, str) and not string_ok(v, node):
            return False
        if isinstance(v, list) and not self._array_ok(v, node, d):
            return False
        if isinstance(v, dict) and not self._object_ok(v, node, d):
            return False
        for key in ("allOf", "anyOf", "oneOf"):
            subs = node.get(key)
            if not isinstance(subs, list) or not subs:
                continue
            hits = sum(1 for s in subs if self.valid(v, s, d))
            wanted = {"allOf": hits == len(subs), "anyOf": hits > 0, "oneOf": hits == 1}
            if not wanted[key]:
                return False
        if "not" in node and self.valid(v, node["not"], d):
            return False
        if "if" in node:
            branch = node.get("then") if self.valid(v, node["if"], d) else node.get("else")
            if branch is not None and not self.valid(v, branch, d):
                return False
        return True

    def _array_ok(self, v: list[Any], node: Mapping[str, Any], d: int) -> bool:
        lo, hi = node.get("minItems"), node.get("maxItems")
        if (isinstance(lo, int | float) and len(v) < lo) or (isinstance(hi, int | float) and len(v) > hi):
            return False
        if node.get("uniqueItems") is True:
            for i in range(len(v)):
                if any(json_eq(v[i], v[j]) for j in range(i)):
                    return False
        prefix = node.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        for item, sub in zip(v, prefix, strict=False):
            if not self.valid(item, sub, d):
                return False
        if "items" in node and any(not self.valid(item, node["items"], d) for item in v[len(prefix) :]):
            return False
        contains = node.get("contains")
        return contains is None or any(self.valid(item, contains, d) for item in v)

    def _object_ok(self, v: dict[str, Any], node: Mapping[str, Any], d: int) -> bool:
        lo, hi = node.get("minProperties"), node.get("maxProperties")
        if (isinstance(lo, int | float) and len(v) < lo) or (isinstance(hi, int | float) and len(v) > hi):
            return False
        required = node.get("required")
        if isinstance(required, list) and any(isinstance(r, str) and r not in v for r in required):
            return False
        props = node.get("properties")
        props = props if isinstance(props, Mapping) else {}
        patterns = node.get("patternProperties")
        patterns = patterns if isinstance(patterns, Mapping) else {}
        for key, item in v.items():
            matched = key in props
            if matched and not self.valid(item, props[key], d):
                return False
            for p, sub in patterns.items():
                if client_pattern_matches(p, key):
                    matched = True
                    if not self.valid(item, sub, d):
                        return False
            if not matched and "additionalProperties" in node and not self.valid(item, node["additionalProperties"], d):
                return False
        deps = node.get("dependentRequired")
        if isinstance(deps, Mapping):
            for key, needed in deps.items():
                if key in v and isinstance(needed, list) and any(n not in v for n in needed):
                    return False
        return True


def is_valid(value: Any, schema: Mapping[str, Any], *, root: Mapping[str, Any] | None = None) -> bool:
    """Whether ``value`` satisfies the subset of JSON Schema this module understands."""
    try:
        return Checker(Resolver(root if root is not None else schema)).valid(value, schema)
    except RecursionError:
        return False
