"""Deterministic sample values for a JSON Schema: the echo responder's tool-call arguments.

``generate(schema)`` returns a value a validator (jsonschema Draft 2020-12, Draft 7 or Draft 4,
with the format checker) accepts, realistic for the property name where that is cheap, and the
same on every call (nothing random). What it understands:

- ``type`` as a string or list, upper-case Gemini types (``"STRING"``), OpenAPI ``nullable``,
  and a type inferred from the keywords when ``type`` is missing;
- ``const``, then ``default`` (when it is valid and not null), then ``enum`` (the first valid
  member), then ``examples`` (the first valid one), then a value built from the type;
- strings: ``format`` (email, uri/url, date, date-time, time, uuid, ipv4, ipv6, hostname,
  duration, …), ``minLength``/``maxLength``, ``pattern`` (a sampler over the ``re`` parse tree,
  with candidate strings as a fallback); otherwise a value for the name (``city`` → ``"San
  Francisco"``) or ``"example"`` fitted to the length bounds;
- numbers: ``minimum``/``maximum``, ``exclusiveMinimum``/``exclusiveMaximum`` in both the
  draft-4 boolean and the numeric style, ``multipleOf``; 42 unless the name suggests better;
- objects: every required property, plus the optional properties whose values are cheap
  (strings, numbers, booleans; not null, objects or arrays), ``patternProperties``,
  ``additionalProperties``, ``dependentRequired``, ``minProperties``/``maxProperties``;
- arrays: ``prefixItems`` (and draft-7 tuple ``items``), ``items``, ``minItems``/``maxItems``
  (one item by default), ``uniqueItems`` (distinct variants), ``contains``;
- ``$ref`` to local JSON pointers (``#/$defs/…``, ``#/definitions/…``, ``#``) and ``$anchor``,
  recursion-safe (a second entry into the same reference generates minimally, a third is cut);
- ``allOf`` (merged), ``anyOf``/``oneOf`` (the first branch whose value is valid; for ``oneOf``
  valid means matching exactly one branch).

A schema that admits no value yields the best effort (``None`` at worst); nothing raises.
"""

from __future__ import annotations

import datetime
import importlib
import ipaddress
import itertools
import math
import re
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any
from urllib.parse import unquote

import attrs

from mockllm.runtime.naming import split_words

__all__ = ["generate", "is_valid"]

_MAX_DEPTH = 48
# Work limits, so a hostile schema cannot hang the server: past _SOFT_STEPS generation stops
# trying alternatives (it takes the first value it can build); past _HARD_STEPS, or when a
# value grows past _MAX_CHARS characters, it gives up. Validation past _CHECK_STEPS assumes valid.
_SOFT_STEPS = 2_000
_HARD_STEPS = 20_000
_CHECK_STEPS = 200_000
_MAX_CHARS = 20_000
_sre: Any = importlib.import_module("re._parser")


class _NoValue(Exception):
    """No value can be generated here (a ``false`` schema, or recursion cut off)."""


# ---------------------------------------------------------------- realistic values by name

_STRINGS: dict[str, str] = {
    "city": "San Francisco",
    "town": "San Francisco",
    "location": "San Francisco, CA",
    "place": "San Francisco, CA",
    "destination": "San Francisco, CA",
    "origin": "New York, NY",
    "address": "123 Main St, San Francisco, CA 94105",
    "street": "123 Main St",
    "street_address": "123 Main St",
    "state": "CA",
    "region": "California",
    "zip": "94105",
    "zip_code": "94105",
    "zipcode": "94105",
    "postal_code": "94105",
    "postcode": "94105",
    "country": "United States",
    "country_code": "US",
    "email": "user@example.com",
    "email_address": "user@example.com",
    "recipient": "user@example.com",
    "to": "user@example.com",
    "cc": "user@example.com",
    "bcc": "user@example.com",
    "sender": "user@example.com",
    "attendee": "user@example.com",
    "name": "Alex Smith",
    "full_name": "Alex Smith",
    "first_name": "Alex",
    "given_name": "Alex",
    "last_name": "Smith",
    "family_name": "Smith",
    "surname": "Smith",
    "username": "alexsmith",
    "user_name": "alexsmith",
    "author": "Alex Smith",
    "url": "https://example.com",
    "uri": "https://example.com",
    "link": "https://example.com",
    "website": "https://example.com",
    "homepage": "https://example.com",
    "endpoint": "https://example.com/api",
    "domain": "example.com",
    "hostname": "example.com",
    "host": "example.com",
    "phone": "+14155550100",
    "phone_number": "+14155550100",
    "mobile": "+14155550100",
    "telephone": "+14155550100",
    "date": "2024-01-15",
    "day": "2024-01-15",
    "birthday": "1990-01-15",
    "birthdate": "1990-01-15",
    "time": "09:30",
    "datetime": "2024-01-15T09:30:00Z",
    "date_time": "2024-01-15T09:30:00Z",
    "timestamp": "2024-01-15T09:30:00Z",
    "query": "example query",
    "q": "example query",
    "search": "example query",
    "keyword": "example",
    "subject": "Example subject",
    "title": "Example title",
    "body": "Example message body.",
    "message": "Example message",
    "content": "Example content",
    "text": "Example text",
    "description": "Example description",
    "summary": "Example summary",
    "comment": "Example comment",
    "note": "Example note",
    "prompt": "Example prompt",
    "language": "en",
    "lang": "en",
    "locale": "en-US",
    "currency": "USD",
    "timezone": "America/Los_Angeles",
    "time_zone": "America/Los_Angeles",
    "tz": "America/Los_Angeles",
    "unit": "celsius",
    "units": "metric",
    "id": "abc123",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "color": "blue",
    "company": "Example Inc.",
    "organization": "Example Inc.",
    "password": "Example-Passw0rd!",
    "sql": "SELECT 1",
    "table": "users",
    "table_name": "users",
    "database": "main",
    "collection": "items",
    "path": "/tmp/example.txt",
    "file": "example.txt",
    "filename": "example.txt",
    "file_name": "example.txt",
    "file_path": "/tmp/example.txt",
    "directory": "/tmp",
    "folder": "/tmp",
    "ip": "192.0.2.1",
    "ip_address": "192.0.2.1",
    "status": "active",
    "category": "general",
    "symbol": "AAPL",
    "ticker": "AAPL",
    "expression": "10+5",
}

_NUMBERS: dict[str, Fraction] = {
    "latitude": Fraction("37.7749"),
    "lat": Fraction("37.7749"),
    "longitude": Fraction("-122.4194"),
    "lon": Fraction("-122.4194"),
    "lng": Fraction("-122.4194"),
    "limit": Fraction(10),
    "max_results": Fraction(10),
    "num_results": Fraction(10),
    "top_k": Fraction(10),
    "per_page": Fraction(10),
    "page_size": Fraction(10),
    "page": Fraction(1),
    "year": Fraction(2024),
    "month": Fraction(1),
    "day": Fraction(15),
    "hour": Fraction(9),
    "minute": Fraction(30),
    "second": Fraction(0),
    "age": Fraction(30),
    "quantity": Fraction(1),
    "port": Fraction(8080),
    "zoom": Fraction(10),
    "days": Fraction(7),
    "timeout": Fraction(30),
    "duration": Fraction(30),
    "amount": Fraction(100),
    "price": Fraction(10),
}

_GENERIC_LAST_WORDS = frozenset({"name", "id", "code", "number", "value", "type", "key"})

_FORMATS: dict[str, str] = {
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "uri": "https://example.com",
    "url": "https://example.com",
    "iri": "https://example.com",
    "uri-reference": "https://example.com",
    "iri-reference": "https://example.com",
    "uri-template": "https://example.com/{id}",
    "date": "2024-01-15",
    "date-time": "2024-01-15T09:30:00Z",
    "datetime": "2024-01-15T09:30:00Z",
    "time": "09:30:00Z",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "duration": "P1D",
    "json-pointer": "/example",
    "relative-json-pointer": "0",
    "regex": "^example$",
    "byte": "ZXhhbXBsZQ==",
    "password": "Example-Passw0rd!",
    "phone": "+14155550100",
}


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _name_keys(name: str) -> list[str]:
    """Table keys to try for a property name, most specific first."""
    words = split_words(name)
    if not words:
        return []
    keys = ["_".join(words), "".join(words)]
    last = words[-1]
    if last in _GENERIC_LAST_WORDS and len(words) > 1:
        keys += [words[-2], _singular(words[-2])]
    keys += [last, _singular(last), _singular("_".join(words))]
    return keys


def _name_string(name: str) -> str | None:
    for key in _name_keys(name):
        if key in _STRINGS:
            return _STRINGS[key]
    return None


def _name_number(name: str) -> Fraction | None:
    for key in _name_keys(name):
        if key in _NUMBERS:
            return _NUMBERS[key]
    return None


# ---------------------------------------------------------------- schema normalisation

_TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")
_COUNT_KEYWORDS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties")
_NUMBER_KEYWORDS = ("minimum", "maximum", "multipleOf")


def _num(value: Any) -> int | float | None:
    """A finite JSON number, or a numeric string (Gemini sends int64 bounds as strings)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            f = float(value)
        except ValueError:
            return None
        if not math.isfinite(f):
            return None
        return int(f) if f.is_integer() and "." not in value and "e" not in value.lower() else f
    return None


def _prep(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A normalised copy: types as a lower-case list (``nullable`` folded in), draft-4 exclusive
    bounds in the numeric style, tuple ``items`` as ``prefixItems``, numeric strings as numbers,
    patterns collected under ``x-patterns``. Idempotent."""
    node = dict(schema)
    t = node.get("type")
    if t is not None:
        raw = [t] if isinstance(t, str) else list(t) if isinstance(t, list | tuple) else []
        types: list[str] = []
        for item in raw:
            if isinstance(item, str) and item.lower() in _TYPES and item.lower() not in types:
                types.append(item.lower())
        if types:
            node["type"] = types
        else:
            del node["type"]
    if node.get("nullable") is True and "type" in node and "null" not in node["type"]:
        node["type"] = [*node["type"], "null"]
    for key in _COUNT_KEYWORDS + _NUMBER_KEYWORDS:
        if key in node:
            n = _num(node[key])
            if n is None or (key in _COUNT_KEYWORDS and n < 0) or (key == "multipleOf" and n <= 0):
                del node[key]
            else:
                node[key] = n
    for ex, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if ex not in node:
            continue
        v = node[ex]
        if v is True and bound in node:
            node[ex] = node.pop(bound)
        elif isinstance(v, bool) or _num(v) is None:
            del node[ex]
        else:
            node[ex] = _num(v)
    items = node.get("items")
    if isinstance(items, list | tuple):
        node["prefixItems"] = list(items)
        extra = node.get("additionalItems")
        if isinstance(extra, bool | Mapping):
            node["items"] = extra
        else:
            del node["items"]
    deps = node.get("dependencies")
    if isinstance(deps, Mapping) and "dependentRequired" not in node:
        node["dependentRequired"] = {k: v for k, v in deps.items() if isinstance(v, list)}
    req = node.get("dependentRequired")
    if req is not None:
        if isinstance(req, Mapping):
            node["dependentRequired"] = {
                k: [x for x in v if isinstance(x, str)] for k, v in req.items() if isinstance(v, list)
            }
        else:
            del node["dependentRequired"]
    if "x-patterns" not in node:
        pattern = node.get("pattern")
        node["x-patterns"] = [pattern] if isinstance(pattern, str) else []
    return node


def _json_eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_eq(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_eq(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _frac(x: int | float) -> Fraction:
    return Fraction(str(x)) if isinstance(x, float) else Fraction(x)


def _merge_subschemas(a: Any, b: Any) -> Any:
    if a is False or b is False:
        return False
    if a is True or a is None:
        return b
    if b is True or b is None:
        return a
    return {"allOf": [a, b]}


def _merge(a: dict[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Both ``a`` and ``b`` must hold (``allOf``); for annotations ``a`` wins."""
    out = dict(a)
    for key, bv in b.items():
        if key not in out:
            out[key] = bv
            continue
        av = out[key]
        if key == "type" and isinstance(av, list) and isinstance(bv, list):
            both: list[str] = []
            for t in av:
                if t in bv:
                    kept = t
                elif (t == "integer" and "number" in bv) or (t == "number" and "integer" in bv):
                    kept = "integer"
                else:
                    continue
                if kept not in both:
                    both.append(kept)
            out[key] = both or av
        elif key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
            if isinstance(av, Mapping) and isinstance(bv, Mapping):
                merged = dict(av)
                for k, v in bv.items():
                    merged[k] = _merge_subschemas(merged[k], v) if k in merged else v
                out[key] = merged
        elif key in ("required", "x-patterns") and isinstance(av, list) and isinstance(bv, list):
            out[key] = av + [x for x in bv if x not in av]
        elif key in ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"):
            if isinstance(av, int | float) and isinstance(bv, int | float):
                out[key] = max(av, bv)
        elif key in ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"):
            if isinstance(av, int | float) and isinstance(bv, int | float):
                out[key] = min(av, bv)
        elif key == "enum" and isinstance(av, list) and isinstance(bv, list):
            out[key] = [x for x in av if any(_json_eq(x, y) for y in bv)] or av
        elif key == "multipleOf" and isinstance(av, int | float) and isinstance(bv, int | float):
            fa, fb = _frac(av), _frac(bv)
            lcm = Fraction(math.lcm(fa.numerator, fb.numerator), math.gcd(fa.denominator, fb.denominator))
            out[key] = int(lcm) if lcm.denominator == 1 else float(lcm)
        elif key in ("items", "additionalProperties", "additionalItems", "contains", "propertyNames"):
            out[key] = _merge_subschemas(av, bv)
        elif key == "uniqueItems":
            out[key] = bool(av) or bool(bv)
        elif key in ("anyOf", "oneOf"):
            out.setdefault("allOf", [])
            out["allOf"] = [*out["allOf"], {key: bv}]
        elif key == "dependentRequired" and isinstance(av, Mapping) and isinstance(bv, Mapping):
            dep = {k: list(v) for k, v in av.items() if isinstance(v, list)}
            for k, v in bv.items():
                if isinstance(v, list):
                    dep[k] = dep.get(k, []) + [x for x in v if x not in dep.get(k, [])]
            out[key] = dep
    return out


class _Resolver:
    """Local ``$ref`` resolution against one root document."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self._anchors: dict[str, Any] | None = None

    def resolve(self, ref: str) -> Any:
        """The target schema, or None when the reference cannot be followed."""
        fragment = ref.split("#", 1)[1] if "#" in ref else None
        if fragment is None:
            return None
        if fragment == "":
            return self.root
        if not fragment.startswith("/"):
            return self.anchors().get(unquote(fragment))
        node = self.root
        for raw in fragment[1:].split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node

    def anchors(self) -> dict[str, Any]:
        if self._anchors is None:
            found: dict[str, Any] = {}
            stack: list[Any] = [self.root]
            seen = 0
            while stack and seen < 10_000:
                seen += 1
                node = stack.pop()
                if isinstance(node, Mapping):
                    anchor = node.get("$anchor")
                    if isinstance(anchor, str):
                        found.setdefault(anchor, node)
                    stack.extend(node.values())
                elif isinstance(node, list):
                    stack.extend(node)
            self._anchors = found
        return self._anchors


# ---------------------------------------------------------------- validation (a useful subset)

_RE_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_RE_TIME = re.compile(r"\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_RE_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_RE_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]+")
_RE_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_RE_HOST = re.compile(rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*")
_RE_DURATION = re.compile(r"P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?")


def _format_ok(fmt: str, s: str) -> bool:
    try:
        if fmt == "date":
            return bool(_RE_DATE.fullmatch(s)) and bool(datetime.date.fromisoformat(s))
        if fmt in ("date-time", "datetime"):
            d, sep, t = s.partition("T") if "T" in s else s.partition("t")
            return bool(sep) and _format_ok("date", d) and _format_ok("time", t)
        if fmt == "time":
            return bool(_RE_TIME.fullmatch(s)) and int(s[:2]) < 24 and int(s[3:5]) < 60 and int(s[6:8]) < 61
        if fmt in ("email", "idn-email"):
            return bool(_RE_EMAIL.fullmatch(s))
        if fmt in ("uri", "url", "iri"):
            return bool(_RE_URI.fullmatch(s))
        if fmt == "uuid":
            return bool(_RE_UUID.fullmatch(s))
        if fmt == "ipv4":
            ipaddress.IPv4Address(s)
            return True
        if fmt == "ipv6":
            ipaddress.IPv6Address(s)
            return True
        if fmt in ("hostname", "idn-hostname"):
            return bool(_RE_HOST.fullmatch(s))
        if fmt == "duration":
            return bool(_RE_DURATION.fullmatch(s))
        if fmt == "regex":
            re.compile(s)
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


def _number_ok(v: int | float, node: Mapping[str, Any]) -> bool:
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
            q = v / m
            try:
                return int(q) == q
            except OverflowError:
                return (Fraction(v) / Fraction(m)).denominator == 1
        return not v % m
    return True


def _string_ok(s: str, node: Mapping[str, Any]) -> bool:
    lo, hi = node.get("minLength"), node.get("maxLength")
    if isinstance(lo, int | float) and len(s) < lo:
        return False
    if isinstance(hi, int | float) and len(s) > hi:
        return False
    for p in node.get("x-patterns", ()):
        try:
            if re.search(p, s) is None:
                return False
        except (re.error, TypeError):
            continue
    fmt = node.get("format")
    return not isinstance(fmt, str) or _format_ok(fmt, s)


class _Checker:
    def __init__(self, resolver: _Resolver) -> None:
        self.resolver = resolver
        self.steps = 0

    def valid(self, v: Any, schema: Any, depth: int = 0) -> bool:
        self.steps += 1
        if depth > _MAX_DEPTH or schema is True or schema is None or self.steps > _CHECK_STEPS:
            return True
        if schema is False:
            return False
        if not isinstance(schema, Mapping):
            return True
        node = _prep(schema)
        d = depth + 1
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = self.resolver.resolve(ref)
            if target is not None and not self.valid(v, target, d):
                return False
        types = node.get("type")
        if types and not any(_is_type(v, t) for t in types):
            return False
        if "const" in node and not _json_eq(v, node["const"]):
            return False
        enum = node.get("enum")
        if isinstance(enum, list) and not any(_json_eq(v, e) for e in enum):
            return False
        if isinstance(v, int | float) and not isinstance(v, bool) and not _number_ok(v, node):
            return False
        if isinstance(v, str) and not _string_ok(v, node):
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
                if any(_json_eq(v[i], v[j]) for j in range(i)):
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
                try:
                    hit = re.search(p, key) is not None
                except re.error:
                    continue
                if hit:
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


# ---------------------------------------------------------------- regex sampling


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
        raise _NoValue
    for op, av in items:
        name = _op(op)
        if name == "LITERAL":
            return chr(av)
        if name.startswith("RANGE"):
            return chr(av[0])
        if name == "CATEGORY":
            return _CATEGORY_CHARS.get(_op(av), "a")
    raise _NoValue


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
                if self.size > _MAX_CHARS:
                    raise _NoValue
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
        raise _NoValue


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
        except (_NoValue, RecursionError, KeyError, TypeError, ValueError, IndexError, StopIteration):
            if sampler.size > _MAX_CHARS:
                break  # growing further only makes it longer
            continue
        yield s
        if sampler.snippets:
            joined = "".join(sampler.snippets)
            yield joined + s[len(joined) :]
            yield joined + s
    yield from _FALLBACK_STRINGS


# ---------------------------------------------------------------- generation


@attrs.frozen
class _Ctx:
    refs: tuple[str, ...] = ()
    depth: int = 0
    minimal: bool = False

    def deeper(self) -> _Ctx:
        if self.depth >= _MAX_DEPTH:
            raise _NoValue
        return attrs.evolve(self, depth=self.depth + 1)


def _fit(base: str, lo: int, hi: int | None) -> str:
    s = base
    if len(s) < lo:
        s = (base * (lo // max(len(base), 1) + 1))[:lo]
    if hi is not None and len(s) > hi:
        s = s[:hi]
    return s


def _json_number(f: Fraction) -> int | float:
    return int(f) if f.denominator == 1 else float(f)


def _infer_type(node: Mapping[str, Any]) -> str | None:
    keys = node.keys()
    if keys & {"properties", "required", "additionalProperties", "patternProperties", "minProperties"}:
        return "object"
    if keys & {"maxProperties", "propertyNames", "dependentRequired"}:
        return "object"
    if keys & {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"}:
        return "array"
    if keys & {"minLength", "maxLength", "pattern", "format"} or node.get("x-patterns"):
        return "string"
    if keys & {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}:
        return "number"
    return None


class _Generator:
    def __init__(self, root: Any) -> None:
        self.resolver = _Resolver(root)
        self.checker = _Checker(self.resolver)
        self.steps = 0

    @property
    def hurried(self) -> bool:
        """Past the soft work limit: take the first value that can be built."""
        return self.steps > _SOFT_STEPS

    def valid(self, value: Any, schema: Any) -> bool:
        return self.checker.valid(value, schema)

    # -- structure

    def expand(self, schema: Mapping[str, Any], ctx: _Ctx) -> tuple[dict[str, Any], _Ctx]:
        """Follow ``$ref`` and merge ``allOf`` until neither is left at the top."""
        node = _prep(schema)
        for _ in range(256):
            ref = node.get("$ref")
            if isinstance(ref, str):
                del node["$ref"]
                refs = (*ctx.refs, ref)
                seen = refs.count(ref)
                if seen >= 3:
                    raise _NoValue
                ctx = attrs.evolve(ctx.deeper(), refs=refs, minimal=ctx.minimal or seen >= 2)
                target = self.resolver.resolve(ref)
                if target is False:
                    raise _NoValue
                if isinstance(target, Mapping):
                    node = _merge(node, _prep(target))
                continue
            parts = node.get("allOf")
            if isinstance(parts, list):
                del node["allOf"]
                for part in parts:
                    if part is False:
                        raise _NoValue
                    if isinstance(part, Mapping):
                        sub, ctx = self.expand(part, ctx.deeper())
                        node = _merge(node, sub)
                continue
            break
        return node, ctx

    def gen(self, schema: Any, name: str, ctx: _Ctx, variant: int = 0) -> Any:
        self.steps += 1
        if schema is False or self.steps > _HARD_STEPS:
            raise _NoValue
        if not isinstance(schema, Mapping):
            return self.untyped(name, variant)
        node, ctx = self.expand(schema, ctx)
        value = self.dispatch(node, name, ctx, variant)
        if "not" in node and not self.hurried and not self.valid(value, node):
            for v in range(variant + 1, variant + 8):
                other = self.dispatch(node, name, ctx, v)
                if self.valid(other, node):
                    return other
        return value

    def dispatch(self, node: dict[str, Any], name: str, ctx: _Ctx, variant: int) -> Any:
        if "if" in node:
            return self.conditional(node, name, ctx, variant)
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list) and branches:
                return self.choose(node, key, branches, name, ctx, variant)
        return self.plain(node, name, ctx, variant)

    def conditional(self, node: dict[str, Any], name: str, ctx: _Ctx, variant: int) -> Any:
        """``if``/``then``/``else``: try the ``then`` side, then the ``else`` side, keeping the first
        value valid for the whole node."""
        base = {k: v for k, v in node.items() if k not in ("if", "then", "else")}
        for key in ("then", "else"):
            branch = node.get(key)
            if not isinstance(branch, Mapping):
                continue
            try:
                sub, sub_ctx = self.expand(branch, ctx.deeper())
                value = self.gen(_merge(base, sub), name, sub_ctx, variant)
            except _NoValue:
                continue
            if self.hurried or self.valid(value, node):
                return value
        return self.gen(base, name, ctx.deeper(), variant)

    def choose(self, node: dict[str, Any], key: str, branches: list[Any], name: str, ctx: _Ctx, variant: int) -> Any:
        """The first branch whose value is valid for the whole node. A branch is tried as is,
        then minimally (required properties only: ``oneOf`` branches often differ by which
        property is required), then with the next variant (a non-integer number, …)."""
        base = {k: v for k, v in node.items() if k != key}
        first: list[Any] = []
        for branch in branches:
            if branch is False:
                continue
            try:
                if isinstance(branch, Mapping):
                    sub, sub_ctx = self.expand(branch, ctx.deeper())
                    merged = _merge(base, sub)
                else:
                    merged, sub_ctx = base, ctx.deeper()
            except _NoValue:
                continue
            minimal = attrs.evolve(sub_ctx, minimal=True)
            for attempt_ctx, v in ((sub_ctx, variant), (minimal, variant), (sub_ctx, variant + 1)):
                try:
                    value = self.gen(merged, name, attempt_ctx, v)
                except _NoValue:
                    continue
                if self.hurried or self.valid(value, node):
                    return value
                if not first:
                    first.append(value)
        if first:
            return first[0]
        raise _NoValue

    def plain(self, node: dict[str, Any], name: str, ctx: _Ctx, variant: int) -> Any:
        if "const" in node:
            return node["const"]
        if variant == 0 and node.get("default") is not None and self.valid(node["default"], node):
            return node["default"]
        enum = node.get("enum")
        if isinstance(enum, list) and enum:
            ok = [e for e in enum if self.valid(e, node)] or enum
            return ok[variant % len(ok)]
        examples = node.get("examples")
        if variant == 0 and isinstance(examples, list):
            for ex in examples:
                if ex is not None and self.valid(ex, node):
                    return ex
        types: list[str] = node.get("type") or []
        if not types:
            inferred = _infer_type(node)
            if inferred is None:
                return self.untyped(name, variant)
            types = [inferred]
        if ctx.minimal and "null" in types:
            return None
        chosen = next((t for t in types if t != "null"), "null")
        if chosen == "null":
            return None
        if chosen == "boolean":
            return variant % 2 == 0
        if chosen in ("integer", "number"):
            return self.number(node, name, chosen == "integer", variant)
        if chosen == "string":
            return self.string(node, name, variant)
        if chosen == "array":
            return self.array(node, name, ctx, variant)
        return self.object(node, name, ctx, variant)

    def untyped(self, name: str, variant: int) -> Any:
        base = _name_string(name) or "example"
        return base if variant == 0 else f"{base} {variant + 1}"

    # -- scalars

    def string(self, node: dict[str, Any], name: str, variant: int) -> str:
        lo_raw, hi_raw = node.get("minLength", 0), node.get("maxLength")
        lo = math.ceil(lo_raw)
        if lo > _MAX_CHARS:
            raise _NoValue
        hi = int(hi_raw) if isinstance(hi_raw, int | float) else None
        valid: list[str] = []
        for cand in self.string_candidates(node, name, lo, hi):
            if cand in valid or not _string_ok(cand, node):
                continue
            if not valid:
                valid.append(cand)
                if variant == 0:
                    return cand
                for v in _string_variants(cand):
                    if v not in valid and _string_ok(v, node):
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
        fallback = _FORMATS.get(fmt, "example") if isinstance(fmt, str) else "example"
        return _fit(fallback, lo, hi)

    def string_candidates(self, node: dict[str, Any], name: str, lo: int, hi: int | None) -> Iterator[str]:
        named = _name_string(name)
        fmt = node.get("format")
        fmt_value = _FORMATS.get(fmt) if isinstance(fmt, str) else None
        if named is not None:
            yield named
        if fmt_value is not None:
            yield fmt_value
        if named is not None and fmt_value is None and hi is not None and len(named) > hi:
            yield _fit(named, lo, hi)
        yield "example"
        yield _fit("example", lo, hi)
        for pattern in node.get("x-patterns", ()):
            if isinstance(pattern, str):
                yield from pattern_candidates(pattern, lo)

    def number(self, node: dict[str, Any], name: str, integer: bool, variant: int) -> int | float:
        pref = _name_number(name)
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
        step_m = _frac(m) if isinstance(m, int | float) else None
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
            if (integer and not isinstance(value, int)) or not inside(Fraction(value)):
                continue
            if not in_range:
                in_range.append(value)
            if any(_json_eq(value, v) for v in valid) or not _number_ok(value, node):
                continue
            valid.append(value)
            if len(valid) > variant:
                return valid[variant]
        if valid or in_range:
            return (valid or in_range)[0]
        return _json_number(Fraction(round(pref)) if integer else pref)

    # -- containers

    def array(self, node: dict[str, Any], name: str, ctx: _Ctx, variant: int) -> list[Any]:
        prefix = node.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        items = node.get("items", True)
        if "contains" in node and not prefix:
            items = _merge_subschemas(items, node["contains"])
        lo = int(node.get("minItems", 0))
        hi_raw = node.get("maxItems")
        hi = int(hi_raw) if isinstance(hi_raw, int | float) else None
        target = max(lo, len(prefix) if prefix else (0 if ctx.minimal else 1))
        if items is False:
            target = min(target, len(prefix))
        if hi is not None:
            target = min(target, hi)
        unique = node.get("uniqueItems") is True
        item_name = _singular(split_words(name)[-1]) if split_words(name) else ""
        child = ctx.deeper()
        out: list[Any] = []
        attempt = 0
        while len(out) < target and attempt < target + 16:
            i = len(out)
            sub = prefix[i] if i < len(prefix) else items
            v = (attempt if unique else 0) + (variant if i == 0 else 0)
            attempt += 1
            try:
                value = self.gen(sub, item_name, child, v)
            except _NoValue:
                if i >= lo:
                    break
                raise
            if unique and any(_json_eq(value, x) for x in out):
                continue
            out.append(value)
        return out

    def object(self, node: dict[str, Any], name: str, ctx: _Ctx, variant: int) -> dict[str, Any]:
        props = node.get("properties")
        props = props if isinstance(props, Mapping) else {}
        req_raw = node.get("required")
        required = [r for r in req_raw if isinstance(r, str)] if isinstance(req_raw, list) else []
        deps = node.get("dependentRequired")
        deps = deps if isinstance(deps, Mapping) else {}
        order = [k for k in props if isinstance(k, str)] + [r for r in required if r not in props]
        child = ctx.deeper()
        out: dict[str, Any] = {}
        skipped: list[str] = []
        pending = list(order)
        while pending:
            key = pending.pop(0)
            if key in out:
                continue
            needed = key in required or any(key in deps.get(k, ()) for k in out)
            if not needed and ctx.minimal:
                skipped.append(key)
                continue
            try:
                value = self.gen(self.property_schema(node, key), key, child, variant if not out else 0)
            except _NoValue:
                if needed:
                    raise
                continue
            if not needed and (value is None or isinstance(value, dict | list)):
                skipped.append(key)
                continue
            out[key] = value
            extra = deps.get(key)
            if isinstance(extra, list):
                pending = [k for k in extra if isinstance(k, str) and k not in out] + pending
        hi = node.get("maxProperties")
        if isinstance(hi, int | float):
            for key in reversed(list(out)):
                if len(out) <= hi:
                    break
                if key not in required and not any(key in deps.get(k, ()) for k in out if k != key):
                    del out[key]
        lo = node.get("minProperties", 0)
        for key in skipped:
            if len(out) >= lo:
                break
            try:
                out[key] = self.gen(self.property_schema(node, key), key, child)
            except _NoValue:
                continue
        if len(out) < lo:
            for key in self.extra_keys(node):
                if len(out) >= lo:
                    break
                if key in out:
                    continue
                try:
                    out[key] = self.gen(self.property_schema(node, key), key, child)
                except _NoValue:
                    continue
        return out

    def extra_keys(self, node: Mapping[str, Any]) -> Iterator[str]:
        """Names for properties beyond the declared ones (to reach ``minProperties``): names the
        ``patternProperties`` accept, else ``key1``, ``key2`` … when additional ones are allowed."""
        names = node.get("propertyNames", True)
        patterns = node.get("patternProperties")
        tried = 0
        if isinstance(patterns, Mapping):
            for p in patterns:
                if not isinstance(p, str):
                    continue
                for base in pattern_candidates(p):
                    for key in (base, *itertools.islice(_string_variants(base), 40)):
                        tried += 1
                        if tried > 400:
                            return
                        if _search(p, key) and self.valid(key, names):
                            yield key
        if node.get("additionalProperties", True) is not False:
            for n in range(1, 200):
                key = f"key{n}"
                if self.valid(key, names):
                    yield key

    def property_schema(self, node: Mapping[str, Any], key: str) -> Any:
        props = node.get("properties")
        if isinstance(props, Mapping) and key in props:
            return props[key]
        patterns = node.get("patternProperties")
        if isinstance(patterns, Mapping):
            for p, sub in patterns.items():
                try:
                    if re.search(p, key):
                        return sub
                except (re.error, TypeError):
                    continue
        extra = node.get("additionalProperties", True)
        return extra if isinstance(extra, Mapping | bool) else True


def _search(pattern: str, s: str) -> bool:
    try:
        return re.search(pattern, s) is not None
    except (re.error, TypeError):
        return False


def _string_variants(base: str) -> Iterator[str]:
    local, at, domain = base.partition("@")
    if at:
        yield from (f"{local}{k}@{domain}" for k in range(2, 12))
    if "://" in base:
        yield from (f"{base.rstrip('/')}/{k}" for k in range(2, 12))
    for k in range(2, 12):
        yield f"{base} {k}"
        yield f"{base}{k}"
        yield f"{base}-{k}"
    for pos in range(len(base) - 1, max(len(base) - 9, -1), -1):
        for ch in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789":
            if ch != base[pos]:
                yield base[:pos] + ch + base[pos + 1 :]
    for ch in "abcdefghijklmnopqrstuvwxyz0123456789":
        yield base + ch


def generate(schema: Mapping[str, Any], name: str = "", *, root: Mapping[str, Any] | None = None) -> Any:
    """A deterministic value that ``schema`` accepts, realistic for the property ``name``.

    ``root`` is the document local ``$ref`` pointers resolve against (default: ``schema``).
    """
    gen = _Generator(root if root is not None else schema)
    try:
        return gen.gen(schema, name, _Ctx())
    except (_NoValue, RecursionError):
        return None


def is_valid(value: Any, schema: Mapping[str, Any], *, root: Mapping[str, Any] | None = None) -> bool:
    """Whether ``value`` satisfies the subset of JSON Schema this module understands."""
    try:
        return _Checker(_Resolver(root if root is not None else schema)).valid(value, schema)
    except RecursionError:
        return False
