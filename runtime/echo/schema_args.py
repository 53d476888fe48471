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

This module walks the schema (references, combinators, arrays, objects); the pieces it uses live
beside it: :mod:`~mockllm.runtime.echo.schema_prep` (normalising and merging nodes),
:mod:`~mockllm.runtime.echo.schema_refs` (``$ref``), :mod:`~mockllm.runtime.echo.schema_check` (``is_valid``),
:mod:`~mockllm.runtime.echo.schema_regex` (strings for a pattern), :mod:`~mockllm.runtime.echo.schema_values`
(realistic values by name and format), :mod:`~mockllm.runtime.echo.schema_scalars` (strings and numbers
within a node's bounds) and :mod:`~mockllm.runtime.echo.schema_limits` (work limits).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from mockllm.errors import NoValue
from mockllm.runtime.echo.naming import split_words
from mockllm.runtime.echo.schema_check import Checker, is_valid
from mockllm.runtime.echo.schema_limits import HARD_STEPS, MAX_DEPTH, SOFT_STEPS
from mockllm.runtime.echo.schema_prep import infer_type, json_eq, merge, merge_subschemas, prep
from mockllm.runtime.echo.schema_refs import Resolver
from mockllm.runtime.echo.schema_regex import pattern_candidates, search
from mockllm.runtime.echo.schema_scalars import number_value, string_value
from mockllm.runtime.echo.schema_values import name_string, singular, string_variants
from mockllm.runtime.values import fast_frozen

__all__ = ["generate", "is_valid", "pattern_candidates"]


@fast_frozen
class _Ctx:
    """Where generation stands: the references followed so far, the depth, and whether to build the
    smallest value (required properties only, null where allowed)."""

    refs: tuple[str, ...] = ()
    depth: int = 0
    minimal: bool = False

    def deeper(self) -> _Ctx:
        if self.depth >= MAX_DEPTH:
            raise NoValue
        return attrs.evolve(self, depth=self.depth + 1)


class _Generator:
    def __init__(self, root: Any) -> None:
        self.resolver = Resolver(root)
        self.checker = Checker(self.resolver)
        self.steps = 0

    @property
    def hurried(self) -> bool:
        """Past the soft work limit: take the first value that can be built."""
        return self.steps > SOFT_STEPS

    def valid(self, value: Any, schema: Any) -> bool:
        return self.checker.valid(value, schema)

    # -- structure

    def expand(self, schema: Mapping[str, Any], ctx: _Ctx) -> tuple[dict[str, Any], _Ctx]:
        """Follow ``$ref`` and merge ``allOf`` until neither is left at the top."""
        node = prep(schema)
        for _ in range(256):
            ref = node.get("$ref")
            if isinstance(ref, str):
                del node["$ref"]
                refs = (*ctx.refs, ref)
                seen = refs.count(ref)
                if seen >= 3:
                    raise NoValue
                ctx = attrs.evolve(ctx.deeper(), refs=refs, minimal=ctx.minimal or seen >= 2)
                target = self.resolver.resolve(ref)
                if target is False:
                    raise NoValue
                if isinstance(target, Mapping):
                    node = merge(node, prep(target))
                continue
            parts = node.get("allOf")
            if isinstance(parts, list):
                del node["allOf"]
                for part in parts:
                    if part is False:
                        raise NoValue
                    if isinstance(part, Mapping):
                        sub, ctx = self.expand(part, ctx.deeper())
                        node = merge(node, sub)
                continue
            break
        return node, ctx

    def gen(self, schema: Any, name: str, ctx: _Ctx, variant: int = 0) -> Any:
        self.steps += 1
        if schema is False or self.steps > HARD_STEPS:
            raise NoValue
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
                value = self.gen(merge(base, sub), name, sub_ctx, variant)
            except NoValue:
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
                    merged = merge(base, sub)
                else:
                    merged, sub_ctx = base, ctx.deeper()
            except NoValue:
                continue
            minimal = attrs.evolve(sub_ctx, minimal=True)
            for attempt_ctx, v in ((sub_ctx, variant), (minimal, variant), (sub_ctx, variant + 1)):
                try:
                    value = self.gen(merged, name, attempt_ctx, v)
                except NoValue:
                    continue
                if self.hurried or self.valid(value, node):
                    return value
                if not first:
                    first.append(value)
        if first:
            return first[0]
        raise NoValue

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
            inferred = infer_type(node)
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
            return number_value(node, name, chosen == "integer", variant)
        if chosen == "string":
            return string_value(node, name, variant)
        if chosen == "array":
            return self.array(node, name, ctx, variant)
        return self.object(node, name, ctx, variant)

    def untyped(self, name: str, variant: int) -> Any:
        base = name_string(name) or "example"
        return base if variant == 0 else f"{base} {variant + 1}"

    # -- containers

    def array(self, node: dict[str, Any], name: str, ctx: _Ctx, variant: int) -> list[Any]:
        prefix = node.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        items = node.get("items", True)
        if "contains" in node and not prefix:
            items = merge_subschemas(items, node["contains"])
        lo = int(node.get("minItems", 0))
        hi_raw = node.get("maxItems")
        hi = int(hi_raw) if isinstance(hi_raw, int | float) else None
        target = max(lo, len(prefix) if prefix else (0 if ctx.minimal else 1))
        if items is False:
            target = min(target, len(prefix))
        if hi is not None:
            target = min(target, hi)
        unique = node.get("uniqueItems") is True
        item_name = singular(split_words(name)[-1]) if split_words(name) else ""
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
            except NoValue:
                if i >= lo:
                    break
                raise
            if unique and any(json_eq(value, x) for x in out):
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
            except NoValue:
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
            except NoValue:
                continue
        if len(out) < lo:
            for key in self.extra_keys(node):
                if len(out) >= lo:
                    break
                if key in out:
                    continue
                try:
                    out[key] = self.gen(self.property_schema(node, key), key, child)
                except NoValue:
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
                    for key in (base, *itertools.islice(string_variants(base), 40)):
                        tried += 1
                        if tried > 400:
                            return
                        if search(p, key) and self.valid(key, names):
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


def generate(schema: Mapping[str, Any], name: str = "", *, root: Mapping[str, Any] | None = None) -> Any:
    """A deterministic value that ``schema`` accepts, realistic for the property ``name``.

    ``root`` is the document local ``$ref`` pointers resolve against (default: ``schema``).
    """
    gen = _Generator(root if root is not None else schema)
    try:
        return gen.gen(schema, name, _Ctx())
    except (NoValue, RecursionError):
        return None
