"""Schema-driven argument generation: every value a validator accepts, deterministic, realistic."""

from __future__ import annotations

import copy
import datetime
import ipaddress
import itertools
import json
import math
import re
import uuid
from fractions import Fraction
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockllm.runtime.echo.schema_args import generate, is_valid, pattern_candidates

CORPUS = sorted((Path(__file__).parent / "schemas").glob("*.json"))


def _load(path: Path) -> Any:
    return json.loads(path.read_text())


def _standard(schema: Any) -> Any:
    """A Gemini/OpenAPI schema in standard JSON Schema: lower-case types, ``nullable`` folded
    into the type, numeric strings as integers."""
    if isinstance(schema, list):
        return [_standard(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = value.lower()
        elif key in ("minItems", "maxItems", "minLength", "maxLength") and isinstance(value, str):
            out[key] = int(value)
        elif key == "nullable":
            continue
        elif key in ("properties", "$defs", "definitions", "patternProperties"):
            out[key] = {k: _standard(v) for k, v in value.items()}
        else:
            out[key] = _standard(value)
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def _validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _errors(value: Any, schema: dict[str, Any]) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in _validator(schema).iter_errors(value)]


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_corpus_value_validates(path: Path) -> None:
    """The generated value passes jsonschema with its format checker, under the schema's own draft
    (Draft 2020-12 by default; Draft 7 / Draft 4 where ``$schema`` says so)."""
    schema = _load(path)
    value = generate(schema)
    standard = _standard(schema) if path.stem.startswith("gemini") else schema
    assert _errors(value, standard) == []
    assert is_valid(value, schema)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_corpus_deterministic_and_schema_untouched(path: Path) -> None:
    schema = _load(path)
    before = copy.deepcopy(schema)
    first = generate(schema)
    assert generate(schema) == first
    assert generate(copy.deepcopy(schema)) == first
    assert json.dumps(generate(schema), sort_keys=True) == json.dumps(first, sort_keys=True)
    assert schema == before


def test_draft7_schemas_also_pass_draft7_validator() -> None:
    seen = 0
    for path in CORPUS:
        schema = _load(path)
        if "draft-07" in schema.get("$schema", ""):
            seen += 1
            validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
            assert list(validator.iter_errors(generate(schema))) == []
    assert seen >= 3


def test_formats_are_really_well_formed() -> None:
    """Formats the installed checker does not verify (date-time, time, uri, hostname) are checked here."""
    value = generate(_load(Path(__file__).parent / "schemas" / "formats.json"))
    datetime.datetime.fromisoformat(value["f_date_time"].replace("Z", "+00:00"))
    datetime.date.fromisoformat(value["f_date"])
    datetime.time.fromisoformat(value["f_time"].replace("Z", "+00:00"))
    uuid.UUID(value["f_uuid"])
    ipaddress.IPv4Address(value["f_ipv4"])
    ipaddress.IPv6Address(value["f_ipv6"])
    assert re.fullmatch(r"https?://[a-z0-9.-]+(/\S*)?", value["f_uri"])
    assert re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+", value["f_hostname"])
    assert re.fullmatch(r"[^@\s]+@[^@\s]+\.[a-z]+", value["f_email"])
    assert re.fullmatch(r"P(\d+[YMWD])+", value["f_duration"])
    re.compile(value["f_regex"])


def test_weather_tool_arguments_are_realistic() -> None:
    value = generate(_load(Path(__file__).parent / "schemas" / "weather_get_weather.json"))
    assert value == {"location": "San Francisco, CA", "unit": "celsius", "days": 5, "include_hourly": True}


def test_email_tool_arguments() -> None:
    value = generate(_load(Path(__file__).parent / "schemas" / "email_send_email.json"))
    assert value["to"] == "user@example.com"
    assert value["subject"] == "Example subject"
    assert "cc" not in value  # optional arrays are left out
    assert len(value["attachments"]) == 1


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("city", "San Francisco"),
        ("location", "San Francisco, CA"),
        ("email", "user@example.com"),
        ("recipient_email", "user@example.com"),
        ("name", "Alex Smith"),
        ("fullName", "Alex Smith"),
        ("country", "United States"),
        ("url", "https://example.com"),
        ("query", "example query"),
        ("q", "example query"),
        ("city_name", "San Francisco"),
        ("start_date", "2024-01-15"),
        ("phone_number", "+14155550100"),
        ("anything_else", "example"),
        ("", "example"),
    ],
)
def test_realistic_strings_for_names(name: str, expected: str) -> None:
    assert generate({"type": "string"}, name) == expected


@pytest.mark.parametrize(
    ("schema", "name", "expected"),
    [
        ({"type": "integer"}, "", 42),
        ({"type": "number"}, "count", 42),
        ({"type": "number"}, "latitude", 37.7749),
        ({"type": "integer"}, "limit", 10),
        ({"type": "integer", "minimum": 1, "maximum": 5}, "priority", 5),
        ({"type": "integer", "minimum": 100}, "", 100),
        ({"type": "integer", "exclusiveMinimum": 100}, "", 101),
        ({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}, "", 0.5),
        ({"type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 1}, "", 1),
        ({"type": "integer", "multipleOf": 5}, "", 40),
        ({"type": "boolean"}, "enabled", True),
        ({"type": "null"}, "", None),
        ({"type": "string", "enum": ["celsius", "fahrenheit"]}, "unit", "celsius"),
        ({"type": "string", "enum": ["a", "b"], "default": "b"}, "", "b"),
        ({"type": "STRING"}, "city", "San Francisco"),
        ({"type": "string", "nullable": True}, "", "example"),
        ({"type": ["null", "integer"]}, "", 42),
        ({"type": "string", "maxLength": 3}, "", "exa"),
        ({"type": "string", "minLength": 9}, "", "exampleex"),
    ],
)
def test_specific_values(schema: dict[str, Any], name: str, expected: Any) -> None:
    value = generate(schema, name)
    assert value == expected
    assert type(value) is type(expected)


def test_root_resolves_refs_of_a_subschema() -> None:
    root: dict[str, Any] = {
        "$defs": {"n": {"type": "integer", "minimum": 3, "maximum": 3}},
        "properties": {"x": {"$ref": "#/$defs/n"}},
    }
    assert generate(root["properties"]["x"], "x", root=root) == 3


def test_recursive_schemas_terminate() -> None:
    tree = _load(Path(__file__).parent / "schemas" / "recursive_tree.json")
    value = generate(tree)
    assert value["children"][0]["children"] == []
    assert generate({"$ref": "#"}) is None  # a reference to itself and nothing else: no value
    loop = {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    assert generate(loop) is None


def test_unique_items_are_distinct() -> None:
    value = generate(
        {"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 3, "uniqueItems": True}
    )
    assert value == ["user@example.com", "user2@example.com", "user3@example.com"]


COMMON_PATTERNS = [
    r"^[A-Z]{3}$",
    r"^\d{5}(-\d{4})?$",
    r"^[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}$",
    r"^\+?[1-9]\d{1,14}$",
    r"^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$",
    r"^[a-z0-9]+(?:-[a-z0-9]+)*$",
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[\da-z.-]+)?$",
    r"^\d{4}-\d{2}-\d{2}$",
    r"^([01]\d|2[0-3]):[0-5]\d$",
    r"^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$",
    r"^(?=.*[a-z])(?=.*[A-Z])(?=.*\d).{8,}$",
    r"^(?!admin$)[a-z_][a-z0-9_]{2,15}$",
    r"^\S+$",
    r"^[^<>]*$",
    r"^(https?|ftp)://[^\s/$.?#].[^\s]*$",
    r"^[\w.-]+$",
    r"^\d{3}-\d{2}-\d{4}$",
    r"^(\d{1,3}\.){3}\d{1,3}$",
    r"^[a-f0-9]{8}-[a-f0-9]{4}-4[a-f0-9]{3}-[89ab][a-f0-9]{3}-[a-f0-9]{12}$",
    r"^(?:Mr|Mrs|Ms|Dr)\.? [A-Z][a-z]+$",
    r"^\p{L}+$",  # not a Python regex: generation must still return a string
    r"colou?r",
    r"^.{3,5}$",
    r"^[^\s@]+@[^\s@]+$",
    r"\bcat\b",
    r"^(a|b)\1$",
    r"^[A-Za-z]+(?: [A-Za-z]+)*$",
]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=st.sampled_from(COMMON_PATTERNS), name=st.sampled_from(["", "code", "email", "city", "phone", "zip"]))
def test_patterns_produce_matching_strings(pattern: str, name: str) -> None:
    schema = {"type": "string", "pattern": pattern}
    value = generate(schema, name)
    assert isinstance(value, str)
    try:
        re.compile(pattern)
    except re.error:
        return  # the validator itself cannot use it; a string is all we promise
    assert re.search(pattern, value), (pattern, value)
    assert _errors(value, schema) == []
    assert generate(schema, name) == value


@settings(max_examples=100, deadline=None)
@given(
    pattern=st.sampled_from([r"^[a-z]+$", r"^\d+$", r"^[A-Z][a-z]*$", r"^(ab)+$", r"^\w[\w-]*$", r"x"]),
    lo=st.integers(0, 40),
    extra=st.integers(0, 10),
)
def test_patterns_with_length_bounds(pattern: str, lo: int, extra: int) -> None:
    hi = max(lo, 2) + extra + 1  # every pattern here has a match of each length >= 2 (even ones for (ab)+)
    schema = {"type": "string", "pattern": pattern, "minLength": lo, "maxLength": hi}
    assert _errors(generate(schema), schema) == []


@settings(max_examples=200, deadline=None)
@given(
    lo=st.integers(-1000, 1000),
    width=st.integers(0, 200),
    lo_ex=st.booleans(),
    hi_ex=st.booleans(),
    step=st.one_of(st.none(), st.integers(1, 12)),
    name=st.sampled_from(["", "age", "limit", "latitude", "year"]),
)
def test_integer_bounds(lo: int, width: int, lo_ex: bool, hi_ex: bool, step: int | None, name: str) -> None:
    hi = lo + width
    schema: dict[str, Any] = {"type": "integer"}
    schema["exclusiveMinimum" if lo_ex else "minimum"] = lo
    schema["exclusiveMaximum" if hi_ex else "maximum"] = hi
    if step is not None:
        schema["multipleOf"] = step
    first, last = lo + lo_ex, hi - hi_ex
    feasible = any(step is None or n % step == 0 for n in range(first, last + 1))
    value = generate(schema, name)
    if feasible:
        assert _errors(value, schema) == []
    assert generate(schema, name) == value


@settings(max_examples=200, deadline=None)
@given(
    lo=st.integers(-50, 50),
    width=st.integers(1, 20),
    step=st.sampled_from([None, 0.1, 0.25, 0.5, 0.01, 0.2, 0.3, 1.5, 2.5]),
    draft4=st.booleans(),
)
def test_number_bounds(lo: int, width: int, step: float | None, draft4: bool) -> None:
    """In bounds and an exact multiple always; accepted by jsonschema whenever any multiple in the
    range is (its float arithmetic rejects e.g. every multiple of 0.01 between 1.1 and 1.2)."""
    schema: dict[str, Any] = {"type": "number"}
    if draft4:
        schema.update({"$schema": "http://json-schema.org/draft-04/schema#", "minimum": lo, "exclusiveMinimum": True})
        schema.update({"maximum": lo + width, "exclusiveMaximum": True})
        lo_b, hi_b = Fraction(lo), Fraction(lo + width)
    else:
        schema.update({"exclusiveMinimum": lo / 10, "exclusiveMaximum": (lo + width) / 10})
        lo_b, hi_b = Fraction(lo / 10), Fraction((lo + width) / 10)
    if step is not None:
        schema["multipleOf"] = step
    value = generate(schema)
    if step is None:
        assert lo_b < Fraction(value) < hi_b
        assert _errors(value, schema) == []
        return
    exact = Fraction(str(step))
    multiples = [_number(k * exact) for k in range(math.ceil(lo_b / exact), math.floor(hi_b / exact) + 1)]
    feasible = [m for m in multiples if lo_b < Fraction(m) < hi_b]
    if not feasible:
        return  # no multiple in range: nothing to promise
    assert lo_b < Fraction(value) < hi_b
    assert (Fraction(str(value)) / exact).denominator == 1
    if any(not _errors(m, schema) for m in feasible):
        assert _errors(value, schema) == []


def _number(f: Fraction) -> int | float:
    return int(f) if f.denominator == 1 else float(f)


@settings(max_examples=100, deadline=None)
@given(lo=st.integers(0, 60), extra=st.integers(0, 30), name=st.sampled_from(["", "city", "email", "name", "q"]))
def test_string_lengths(lo: int, extra: int, name: str) -> None:
    schema = {"type": "string", "minLength": lo, "maxLength": lo + extra}
    assert _errors(generate(schema, name), schema) == []


@settings(max_examples=60, deadline=None)
@given(lo=st.integers(0, 6), extra=st.integers(0, 4), kind=st.sampled_from(["integer", "string", "boolean", "number"]))
def test_array_counts(lo: int, extra: int, kind: str) -> None:
    unique = kind != "boolean" or lo <= 2
    schema = {"type": "array", "items": {"type": kind}, "minItems": lo, "maxItems": lo + extra, "uniqueItems": unique}
    value = generate(schema)
    assert lo <= len(value) <= lo + extra
    assert _errors(value, schema) == []


JUNK_KEYS = [
    "type", "properties", "required", "items", "prefixItems", "$ref", "$defs", "anyOf", "oneOf", "allOf", "not",
    "enum", "const", "minimum", "maximum", "exclusiveMinimum", "multipleOf", "minLength", "maxLength", "pattern",
    "format", "minItems", "maxItems", "uniqueItems", "additionalProperties", "nullable", "default", "if", "then",
    "dependentRequired", "dependencies", "minProperties", "patternProperties", "contains",
]  # fmt: skip
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=True)
    | st.sampled_from(["string", "OBJECT", "#", "#/$defs/a", "(", "^a+$", "email", "integer", "array", "null"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from([*JUNK_KEYS, "a", "b"]), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=st.dictionaries(st.sampled_from(JUNK_KEYS), _json, max_size=5))
def test_junk_schemas_never_raise(schema: dict[str, Any]) -> None:
    """Any mapping at all, however malformed, yields a value (or None) without raising, and the
    same one each time."""
    value = generate(schema, "x")
    assert generate(schema, "x") == value
    json.dumps(value)


def test_pattern_candidates_start_with_the_sampled_string() -> None:
    assert next(pattern_candidates(r"^[A-Z]{3}-\d{2}$")) == "AAA-00"
    firsts = list(itertools.islice(pattern_candidates(r"^(ab)+$", 5), 6))
    assert "ababab" in firsts
    assert all(re.fullmatch(r"(ab)+", c) for c in firsts)


def test_hostile_schemas_finish_with_a_best_effort() -> None:
    """Work limits: exponential alternatives, huge counts and huge regex repeats end quickly."""
    nested: dict[str, Any] = {"type": "string", "minLength": 5, "maxLength": 2}
    for _ in range(12):
        nested = {"anyOf": [{"properties": {"x": nested}, "required": ["x"]}, {"properties": {"y": nested}}]}
    assert isinstance(generate(nested), dict)
    assert generate({"type": "array", "minItems": 10**9, "items": {"type": "integer"}}) is None
    assert generate({"type": "string", "minLength": 10**12}) is None
    assert isinstance(generate({"type": "string", "pattern": "^((a{1000}){1000}){1000}$"}), str)


@pytest.mark.parametrize(
    ("value", "schema", "expected"),
    [
        (5, {"type": "string"}, False),
        ("5", {"type": "STRING"}, True),
        (None, {"type": "string", "nullable": True}, True),
        (True, {"type": "integer"}, False),
        (1.0, {"type": "integer"}, True),
        (0.3, {"multipleOf": 0.1}, False),  # jsonschema's float arithmetic, mirrored
        (3, {"minimum": 3, "exclusiveMinimum": True}, False),
        ("abc", {"pattern": "^a"}, True),
        ("2024-02-30", {"format": "date"}, False),
        ({"a": 1}, {"additionalProperties": False}, False),
        ([1, 1], {"uniqueItems": True}, False),
        ([1, True], {"uniqueItems": True}, True),
        (1, {"oneOf": [{"type": "integer"}, {"type": "number"}]}, False),
        (1, {"$ref": "#/$defs/s", "$defs": {"s": {"type": "string"}}}, False),
    ],
)
def test_is_valid(value: Any, schema: dict[str, Any], expected: bool) -> None:
    assert is_valid(value, schema) is expected


_HUGE_BOUNDS = st.one_of(
    st.integers(),
    st.integers(min_value=10**300, max_value=10**320),
    st.integers(min_value=-(10**320), max_value=-(10**300)),
    st.floats(allow_nan=False),
    st.sampled_from([10**4000, -(10**4000), 1e308, -1e308, 5e-324, 0, 0.5]),
)
_BOUND_KEYS = st.sampled_from(
    "minimum maximum exclusiveMinimum exclusiveMaximum multipleOf minLength maxLength minItems maxItems".split()
)
_BOUNDED = st.builds(
    lambda kind, bounds: {"type": kind, **bounds},
    st.sampled_from(["integer", "number", "string", "array", "object", ["integer", "null"]]),
    st.dictionaries(_BOUND_KEYS, _HUGE_BOUNDS, max_size=4),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_BOUNDED)
def test_bounds_too_large_for_a_float_never_raise(node: dict[str, Any]) -> None:
    """Issue 12: an integer bound too large to convert to a float (``exclusiveMinimum: 10**300`` beside a
    fractional bound, ``multipleOf: 1e308`` under a huge integer) made the echo responder answer 500.
    Any bounds give a value (or none) that serialises, never an exception."""
    value = generate({"type": "object", "properties": {"a": node}, "required": ["a"]})
    json.dumps(value)


@pytest.mark.parametrize(
    "node",
    [
        {"type": "number", "minimum": 0, "exclusiveMaximum": 1, "exclusiveMinimum": 10**300},
        {"type": "integer", "multipleOf": 1e308, "exclusiveMaximum": -(10**320)},
    ],
)
def test_found_overflowing_bounds(node: dict[str, Any]) -> None:
    value = generate({"type": "object", "properties": {"a": node}, "required": ["a"]})
    assert value is None or isinstance(value, dict)
