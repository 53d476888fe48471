"""Schema normalisation and merging: the uniform node shape the generator and the validator read
(``prep``), ``allOf`` merging (``merge``), JSON equality and the type a node's keywords imply."""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

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


def prep(schema: Mapping[str, Any]) -> dict[str, Any]:
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


def json_eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_eq(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_eq(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def frac(x: int | float) -> Fraction:
    return Fraction(str(x)) if isinstance(x, float) else Fraction(x)


def merge_subschemas(a: Any, b: Any) -> Any:
    if a is False or b is False:
        return False
    if a is True or a is None:
        return b
    if b is True or b is None:
        return a
    return {"allOf": [a, b]}


def merge(a: dict[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
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
                    merged[k] = merge_subschemas(merged[k], v) if k in merged else v
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
            out[key] = [x for x in av if any(json_eq(x, y) for y in bv)] or av
        elif key == "multipleOf" and isinstance(av, int | float) and isinstance(bv, int | float):
            fa, fb = frac(av), frac(bv)
            lcm = Fraction(math.lcm(fa.numerator, fb.numerator), math.gcd(fa.denominator, fb.denominator))
            out[key] = int(lcm) if lcm.denominator == 1 else float(lcm)
        elif key in ("items", "additionalProperties", "additionalItems", "contains", "propertyNames"):
            out[key] = merge_subschemas(av, bv)
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


def infer_type(node: Mapping[str, Any]) -> str | None:
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
