"""The JSON form of a script: the same syntax tree, unstructured and structured with cattrs.

Shape (spans are left out; nodes read from JSON get a span naming the file, line 0)::

    {"mockllm": 1, "uses": [...], "replies": [...], "defaults": {...} | null, "scenarios": [...],
     "mcp_servers": [{"name": …, "tools": [{"name", "description", "input_schema", "output_schema"}],
                      "resources": [{"uri", "description", "text", "mime"}],
                      "prompts": [{"name", "description", "arguments": [{"name", "description", "required"}],
                                   "messages": [{"role", "text"}]}]}]}

(a server's ``resources`` and ``prompts`` only when it declares some)

Every node is an object with its attrs fields. Reply elements are tagged with ``"type"``, the
snake_case class name (``{"type": "text", "text": "hi"}``, ``{"type": "tool_call", "name": …,
"arguments": {…}, "id": null}``; ``"arguments": null`` is ``tool call NAME null``); a reply is
``{"type": "block", "elements": [...]}`` or ``{"type": "like", "name": …, "alias": …}``; a regex is
``{"regex": "…", "flags": "i"}`` and a duration ``{"ms": 250}``. Reading is strict: a wrong type, an
unknown key or an unknown element type is a diagnostic naming the JSON path
(``$.scenarios[0].steps[1].reply.elements[0]: …``) at the line and column of the offending value when
the JSON text is known."""

from __future__ import annotations

import bisect
import contextvars
import difflib
import json
import re
import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs
import cattrs
from cattrs.errors import (
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from mockllm.dsl.diagnostics import Diagnostic, error
from mockllm.dsl.jsontext import lone_surrogate
from mockllm.dsl.span import Span
from mockllm.dsl.tree import nodes as n
from mockllm.errors import MockllmError

__all__ = ["from_json", "from_json_text", "to_json", "to_json_text"]

SUPPORTED_VERSION = 1
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_ROLES = ("user", "assistant", "system", "tool")
_ARG_SUBJECTS = {
    "any_message": "a role",
    "tool_result": "the tool name",
    "header": "the header name",
    "field": "the dotted path",
    "argument": "the dotted path",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


#: ``"type"`` tag of each reply element class, and back.
ELEMENT_TAGS: dict[type, str] = {cls: _snake(cls.__name__) for cls in n.REPLY_ELEMENT_TYPES}
_TAG_ELEMENTS: dict[str, type] = {tag: cls for cls, tag in ELEMENT_TAGS.items()}
_REPLY_TAGS: dict[str, type] = {"block": n.ReplyBlock, "like": n.ReplyRef}

_NODE_CLASSES: frozenset[type] = frozenset(
    {
        *n.REPLY_ELEMENT_TYPES,
        n.Subject,
        n.Condition,
        n.ReplyBlock,
        n.ReplyRef,
        n.After,
        n.Capture,
        n.Consumption,
        n.Step,
        n.Let,
        n.Scenario,
        n.NamedReply,
        n.Defaults,
        n.Use,
        n.McpTool,
        n.McpResource,
        n.McpArgument,
        n.McpMessage,
        n.McpPrompt,
        n.McpServer,
        n.ScriptFile,
    }
)

_file: contextvars.ContextVar[str] = contextvars.ContextVar("mockllm_json_file", default="<json>")


class _Bad(MockllmError, ValueError):
    """A structure problem with its own message; ``key`` names the field it is about, if any."""

    def __init__(self, message: str, key: str | None = None, *, at_object: bool = False):
        super().__init__(message)
        self.message = message
        self.key = key
        self.at_object = at_object  # report at the object's path, but point at the key's value


def _show(v: Any) -> str:
    try:
        text = json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _suggest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f'; did you mean "{close[0]}"?' if close else ""


def _one_of(choices: Iterable[str]) -> str:
    return ", ".join(f'"{c}"' for c in choices)


# ---------------------------------------------------------------------------------------------------------
# Output


def _duration_out(d: n.Duration) -> dict[str, Any]:
    ms = d.ms
    return {"ms": int(ms) if isinstance(ms, float) and ms.is_integer() else ms}


def _regex_out(r: n.Regex) -> dict[str, Any]:
    return {"regex": r.pattern, "flags": r.flags}


def _unstructure_factory(conv: cattrs.Converter) -> Callable[[type], Callable[[Any], dict[str, Any]]]:
    def factory(cls: type) -> Callable[[Any], dict[str, Any]]:
        extra: dict[str, Any] = {"span": override(omit=True)}
        if cls in (n.Audio, n.Image):  # a file's bytes are the compiler's, never the script's
            extra["data"] = override(omit=True)
        if cls is n.ScriptFile:
            extra.update(path=override(omit=True), version=override(rename="mockllm"))
        base: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(cls, conv, **extra)
        tag = ELEMENT_TAGS.get(cls) or {n.ReplyBlock: "block", n.ReplyRef: "like"}.get(cls)
        if tag is None:
            return base

        def tagged(obj: Any) -> dict[str, Any]:
            return {"type": tag, **base(obj)}

        return tagged

    return factory


# ---------------------------------------------------------------------------------------------------------
# Input: strict primitives


def _str(v: Any, _: Any) -> str:
    if not isinstance(v, str):
        raise _Bad(f"expected a string, got {_show(v)}")
    return v


def _int(v: Any, _: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Bad(f"expected an integer, got {_show(v)}")
    return v


def _float(v: Any, _: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _Bad(f"expected a number, got {_show(v)}")
    return float(v)


def _bool(v: Any, _: Any) -> bool:
    if not isinstance(v, bool):
        raise _Bad(f"expected true or false, got {_show(v)}")
    return v


def _literal(v: Any, t: Any) -> Any:
    allowed = typing.get_args(t)
    if v not in allowed or isinstance(v, bool):
        hint = _suggest(v, allowed) if isinstance(v, str) else ""
        raise _Bad(f"{_show(v)} is not one of {_one_of(allowed)}{hint}")
    return v


def _is_literal(t: Any) -> bool:
    origin: Any = typing.get_origin(t)
    return origin is typing.Literal


def _is_homogeneous_tuple(t: Any) -> bool:
    args = typing.get_args(t)
    return typing.get_origin(t) is tuple and len(args) == 2 and args[1] is Ellipsis


def _tuple_factory(conv: cattrs.Converter) -> Callable[[Any], Callable[[Any, Any], tuple[Any, ...]]]:
    def factory(t: Any) -> Callable[[Any, Any], tuple[Any, ...]]:
        item_type = typing.get_args(t)[0]

        def structure(v: Any, _: Any) -> tuple[Any, ...]:
            if not isinstance(v, list | tuple):
                raise _Bad(f"expected a list, got {_show(v)}")
            out: list[Any] = []
            errors: list[Exception] = []
            hook = conv.get_structure_hook(item_type)
            for i, item in enumerate(v):
                try:
                    out.append(hook(item, item_type))
                except Exception as exc:  # collected: every bad item is reported
                    exc.__notes__ = [*getattr(exc, "__notes__", []), IterableValidationNote(f"index {i}", i, item_type)]
                    errors.append(exc)
            if errors:
                raise IterableValidationError("invalid list items", errors, t)
            return tuple(out)

        return structure

    return factory


def _object(v: Any, what: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _Bad(f"expected an object ({what}), got {_show(v)}")
    return v


def _only_keys(d: dict[str, Any], allowed: tuple[str, ...], required: str, where: str = "") -> None:
    """Reject a key of ``d`` that is not ``allowed`` (``where`` ends the message: " in a regex"), then
    a missing ``required`` key."""
    for key in d:
        if key not in allowed:
            raise _Bad(f'unknown key "{key}"{where}{_suggest(key, allowed)}', key)
    if required not in d:
        raise _Bad(f'missing required key "{required}"')


def _regex_in(v: Any, _: Any) -> n.Regex:
    if isinstance(v, str):
        raise _Bad(f'expected a regex object such as {{"regex": {_show(v)}, "flags": ""}}')
    d = _object(v, "a regex")
    _only_keys(d, ("regex", "flags"), "regex", " in a regex")
    pattern = _str(d["regex"], None)
    flags = _str(d.get("flags", ""), None)
    if any(f not in "imsx" for f in flags) or len(set(flags)) != len(flags):
        raise _Bad(f'regex flags must be drawn from "imsx", each at most once, got {_show(flags)}', "flags")
    return n.Regex(pattern, flags)


# ---------------------------------------------------------------------------------------------------------
# Input: node classes


def _check_name(value: str | None, key: str, what: str) -> None:
    if value is not None and not _NAME_RE.match(value):
        raise _Bad(
            f"{_show(value)} is not a valid {what}: use letters, digits, '_' and '-', starting with a letter or '_'",
            key,
        )


#: Whole-number fields the grammar writes without a sign (what they mean is the checker's business).
_UNSIGNED: dict[type, tuple[str, ...]] = {
    n.Usage: ("input_tokens", "output_tokens"),
    n.Stream: ("count",),
    n.Error: ("status",),
    n.Status: ("status",),
    n.Disconnect: ("after_chunks",),
    n.StreamError: ("after_chunks",),
    n.Consumption: ("count",),
    n.ScriptFile: ("version",),
}


def _check(obj: Any) -> None:
    """Rules the text syntax enforces by its grammar, so that every JSON tree can be written as text.
    Everything else (a `repeat 0`, an unknown step in `after`) is left to the checker, as for text."""
    for key in _UNSIGNED.get(type(obj), ()):
        value = getattr(obj, key)
        if value is not None and value < 0:
            raise _Bad(f"expected a whole number of 0 or more, got {value}", "mockllm" if key == "version" else key)
    if isinstance(obj, n.ReplyBlock | n.NamedReply) and not obj.elements:
        raise _Bad("a reply needs at least one element", "elements")
    if isinstance(obj, n.Subject):
        if obj.kind in _ARG_SUBJECTS:
            if obj.arg is None:
                raise _Bad(f'subject "{obj.kind}" needs "arg" ({_ARG_SUBJECTS[obj.kind]})', "arg")
            if obj.kind == "any_message" and obj.arg not in _ROLES:
                raise _Bad(
                    f"{_show(obj.arg)} is not a role: use one of {_one_of(_ROLES)}{_suggest(obj.arg, _ROLES)}", "arg"
                )
        elif obj.arg is not None:
            raise _Bad(f'subject "{obj.kind}" takes no "arg"; use null', "arg")
    elif isinstance(obj, n.Stream):
        if obj.mode == "word" and obj.count is not None:
            raise _Bad('"stream by word" takes no "count"; use null', "count")
        if obj.mode != "word" and obj.count is None:
            raise _Bad(f'stream mode "{obj.mode}" needs a "count"', "count")
    elif isinstance(obj, n.Consumption):
        if obj.kind == "repeat" and obj.count is None:
            raise _Bad('"repeat" needs a "count"', "count")
        if obj.kind != "repeat" and obj.count is not None:
            raise _Bad(f'consumption "{obj.kind}" takes no "count"; use null', "count")
    elif isinstance(obj, n.Chunks):
        if not obj.chunks:
            raise _Bad("a chunks element needs at least one chunk", "chunks")
    elif isinstance(obj, n.Flag):
        if not obj.categories:
            raise _Bad("a flag element needs at least one category", "categories")
    elif isinstance(obj, n.Defaults):
        if not obj.elements and obj.fallback is None:
            raise _Bad('defaults need "elements" or a "fallback"')
        for i, el in enumerate(obj.elements):
            if not isinstance(el, n.DEFAULTABLE_TYPES):
                allowed = _one_of(ELEMENT_TAGS[t] for t in n.DEFAULTABLE_TYPES)
                raise _Bad(f'"{ELEMENT_TAGS[type(el)]}" cannot be a default (defaults hold {allowed})', f"elements.{i}")
    elif isinstance(obj, n.Scenario):
        if not obj.steps:
            raise _Bad("a scenario needs at least one step", "steps")
    elif isinstance(obj, n.Step):
        _check_name(obj.name, "name", "name")
        if obj == n.Step(obj.name):
            raise _Bad('this step is empty: give it a "reply"')
    elif isinstance(obj, n.Duration):
        if obj.ms < 0:
            raise _Bad("a duration cannot be negative", "ms")
    elif isinstance(obj, n.ToolCall):
        _check_name(obj.name, "name", "tool name")
        if obj.arguments is not None and not isinstance(obj.arguments, dict):
            raise _Bad(f"tool call arguments must be a JSON object or null, got {_show(obj.arguments)}", "arguments")
    elif isinstance(obj, n.ReplyRef):
        _check_name(obj.name, "name", "reply name")
        _check_name(obj.alias, "alias", "alias")
    elif isinstance(obj, n.NamedReply | n.Let | n.Capture):
        _check_name(obj.name, "name", "name")
    elif isinstance(obj, n.After):
        _check_name(obj.step, "step", "step name")
    elif isinstance(obj, n.Use):
        _check_name(obj.alias, "alias", "alias")
    elif isinstance(obj, n.McpTool):
        _check_name(obj.name, "name", "tool name")
        for key in ("input_schema", "output_schema"):
            value = getattr(obj, key)
            if not isinstance(value, dict) and (value is not None or key == "input_schema"):
                raise _Bad(f"a tool's {key.replace('_', ' ')} must be a JSON object, got {_show(value)}", key)
    elif isinstance(obj, n.McpPrompt):
        _check_name(obj.name, "name", "prompt name")
    elif isinstance(obj, n.McpArgument):
        _check_name(obj.name, "name", "argument name")
    elif isinstance(obj, n.Audio):
        if (obj.path is None) == (obj.length is None):
            raise _Bad("audio has a path (a file) or a length (generated audio): give exactly one", "path")
    elif isinstance(obj, n.Result):
        if not isinstance(obj.value, str | dict):
            raise _Bad(f"a result is a string (text) or an object (structured), got {_show(obj.value)}", "value")
        if obj.is_error and not isinstance(obj.value, str):
            raise _Bad("an error result is text: give a string", "value")


def _keys(cls: type) -> list[str]:
    out = [
        f.name for f in attrs.fields(cls) if f.name != "span" and not (cls in (n.Audio, n.Image) and f.name == "data")
    ]
    if cls is n.ScriptFile:
        out = ["mockllm" if k == "version" else k for k in out if k != "path"]
    return out


def _class_factory(conv: cattrs.Converter) -> Callable[[type], Callable[[Any, Any], Any]]:
    def factory(cls: type) -> Callable[[Any, Any], Any]:
        extra: dict[str, Any] = {}
        has_span = any(f.name == "span" for f in attrs.fields(cls))
        if has_span:
            extra["span"] = override(omit=True)
        if cls is n.ScriptFile:
            extra["version"] = override(rename="mockllm")
        if cls in (n.Audio, n.Image):
            extra["data"] = override(omit=True)
        base: Callable[[Any, Any], Any] = make_dict_structure_fn(
            cls, conv, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True, **extra
        )
        what = _snake(cls.__name__).replace("_", " ")

        def structure(v: Any, _: Any) -> Any:
            d = _object(v, f"a {what}")
            if cls is n.ScriptFile:
                if "path" in d:
                    raise _Bad('unknown key "path" (a file\'s path comes from where it is stored)', "path")
                d = {**d, "path": _file.get()}
            obj = base(d, cls)
            if has_span:
                obj = attrs.evolve(obj, span=Span(_file.get(), 0, 0, 0, 0))
            _check(obj)
            return obj

        return structure

    return factory


def _tagged(v: Any, table: dict[str, type], what: str) -> tuple[type, dict[str, Any]]:
    d = _object(v, what)
    if "type" not in d:
        raise _Bad(f'{what} needs a "type" key: one of {_one_of(table)}')
    tag = d["type"]
    if not isinstance(tag, str) or tag not in table:
        hint = _suggest(tag, table) if isinstance(tag, str) else ""
        raise _Bad(f"unknown {what.removeprefix('reply ')} type {_show(tag)}{hint}", "type", at_object=True)
    return table[tag], {k: x for k, x in d.items() if k != "type"}


def _predicate(conv: cattrs.Converter) -> Callable[[Any, Any], n.Predicate]:
    def structure(v: Any, _: Any) -> n.Predicate:
        d = _object(v, "a predicate")
        _only_keys(d, ("op", "value"), "op")
        try:
            op = _literal(d["op"], n.PredicateOp)
        except _Bad as exc:
            raise _Bad(exc.message, "op") from None
        value = d.get("value")
        try:
            if op in ("matches", "not_matches"):
                value = _regex_in(value, None)
            elif op in ("present", "absent", "error"):
                if value is not None:
                    raise _Bad(f'predicate "{op}" takes no value; use null')
            elif op in ("at_least", "at_most"):
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise _Bad(f"expected a number, got {_show(value)}")
            elif op not in ("is", "is_not"):
                value = _str(value, None)
        except _Bad as exc:
            raise _Bad(exc.message, "value" if exc.key is None else f"value.{exc.key}") from None
        return n.Predicate(op, value, span=Span(_file.get(), 0, 0, 0, 0))

    return structure


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(detailed_validation=True, forbid_extra_keys=True)
    conv.register_unstructure_hook(n.Duration, _duration_out)
    conv.register_unstructure_hook(n.Regex, _regex_out)
    conv.register_unstructure_hook(n.Predicate, lambda p: {"op": p.op, "value": conv.unstructure(p.value)})
    conv.register_unstructure_hook_factory(lambda t: t in _NODE_CLASSES, _unstructure_factory(conv))

    conv.register_structure_hook(str, _str)
    conv.register_structure_hook(int, _int)
    conv.register_structure_hook(float, _float)
    conv.register_structure_hook(bool, _bool)
    conv.register_structure_hook_func(_is_literal, _literal)
    conv.register_structure_hook_factory(_is_homogeneous_tuple, _tuple_factory(conv))
    conv.register_structure_hook(n.Regex, _regex_in)
    conv.register_structure_hook(n.Predicate, _predicate(conv))
    conv.register_structure_hook_factory(lambda t: t in _NODE_CLASSES or t is n.Duration, _class_factory(conv))

    def element(v: Any, _: Any) -> Any:
        cls, rest = _tagged(v, _TAG_ELEMENTS, "reply element")
        return conv.structure(rest, cls)

    def reply(v: Any, _: Any) -> Any:
        if v is None:
            return None
        cls, rest = _tagged(v, _REPLY_TAGS, "reply")
        return conv.structure(rest, cls)

    conv.register_structure_hook_func(lambda t: t == n.ReplyElement, element)
    conv.register_structure_hook_func(lambda t: t == n.Reply or t == (n.Reply | None), reply)
    return conv


_converter = _make_converter()


# ---------------------------------------------------------------------------------------------------------
# Public API


def to_json(f: n.ScriptFile) -> dict[str, Any]:
    """The JSON form of a file, as plain dicts and lists (``mcp_servers`` only when there are some)."""
    out: dict[str, Any] = _converter.unstructure(f)
    if not out.get("mcp_servers"):
        out.pop("mcp_servers", None)
    for server in out.get("mcp_servers", ()):
        for key in ("resources", "prompts"):
            if not server.get(key):
                server.pop(key, None)
    return out


def to_json_text(f: n.ScriptFile) -> str:
    return json.dumps(to_json(f), indent=2, ensure_ascii=False) + "\n"


def from_json(data: Any, file: str, *, text: str | None = None) -> tuple[n.ScriptFile | None, list[Diagnostic]]:
    """Read the JSON form (already decoded). ``text`` (the JSON source), when given, lets diagnostics
    point at the line and column of the offending value."""
    token = _file.set(file)
    try:
        tree: n.ScriptFile = _converter.structure(data, n.ScriptFile)
    except Exception as exc:
        locations = _Locations(text) if text is not None else None
        return None, [_diagnostic(file, problem, locations) for problem in _problems(exc, "$")]
    finally:
        _file.reset(token)
    if tree.version is not None and tree.version != SUPPORTED_VERSION:
        span = Span(file, 0, 0, 0, 0)
        if text is not None:
            span = _Locations(text).span(file, "$.mockllm", None)
        return tree, [
            error(
                "unsupported-version",
                f"unsupported language version {tree.version}",
                span,
                hint=f'this mockllm reads version {SUPPORTED_VERSION}: write "mockllm": 1',
            )
        ]
    return tree, []


def from_json_text(text: str, file: str) -> tuple[n.ScriptFile | None, list[Diagnostic]]:
    """Decode and read a JSON file; invalid JSON is one diagnostic at the decoder's line and column."""

    def no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    try:
        data = json.loads(text, parse_constant=no_constants)
    except json.JSONDecodeError as exc:
        span = Span.point(file, exc.lineno, exc.colno)
        return None, [
            error(
                "json-syntax",
                f"invalid JSON: {exc.msg}",
                span,
                hint="the JSON form must be one JSON object; check quotes, commas and brackets",
            )
        ]
    except ValueError as exc:
        return None, [error("json-syntax", f"invalid JSON: {exc}", Span(file, 0, 0, 0, 0))]
    lone = lone_surrogate(text)
    if lone is not None:
        span = Span(file, lone.line, lone.column, lone.line, lone.column + len(lone.escape))
        message = f"invalid JSON: `{lone.escape}` names half of a surrogate pair"
        return None, [error("json-syntax", message, span, hint="write the character itself, or both halves")]
    return from_json(data, file, text=text)


# ---------------------------------------------------------------------------------------------------------
# Structure errors → diagnostics


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if _NAME_RE.match(key) else f"{path}[{json.dumps(key)}]"


def _problems(exc: BaseException, path: str) -> Iterator[tuple[str, str, str, str | None]]:
    """(path shown, message, path of the value to point at, key to point at or None) for every leaf
    problem in ``exc``."""
    if isinstance(exc, ClassValidationError | IterableValidationError):
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            if isinstance(note, IterableValidationNote):
                yield from _problems(sub, _join(path, note.index))
            else:
                name = "mockllm" if exc.cl is n.ScriptFile and note.name == "version" else note.name
                if isinstance(sub, KeyError):
                    yield path, f'missing required key "{name}"', path, None
                else:
                    yield from _problems(sub, _join(path, name))
        for sub in without:
            yield from _problems(sub, path)
    elif isinstance(exc, ForbiddenExtraKeysError):
        allowed = _keys(exc.cl)
        if exc.cl in ELEMENT_TAGS or exc.cl in (n.ReplyBlock, n.ReplyRef):
            allowed = ["type", *allowed]
        for key in sorted(exc.extra_fields):
            yield path, f'unknown key "{key}"{_suggest(key, allowed)} (allowed: {", ".join(allowed)})', path, key
    elif isinstance(exc, _Bad):
        if exc.key is None:
            yield path, exc.message, path, None
        elif exc.at_object:
            yield path, exc.message, _join(path, exc.key), None
        elif exc.message.startswith("unknown key"):
            yield path, exc.message, path, exc.key
        else:
            target = path
            for part in exc.key.split("."):
                target = _join(target, int(part) if part.isdigit() else part)
            yield target, exc.message, target, None
    else:
        yield path, f"cannot read this value ({exc})", path, None


def _diagnostic(file: str, problem: tuple[str, str, str, str | None], where: _Locations | None) -> Diagnostic:
    path, message, at, key = problem
    span = where.span(file, at, key) if where is not None else Span(file, 0, 0, 0, 0)
    return error(
        "json-structure",
        f"{path}: {message}",
        span,
        hint="the JSON form mirrors the text syntax; see docs/language.md, section 'The JSON form'",
    )


class _Locations:
    """Where each value (and each object key) starts in a JSON text, by JSON path."""

    _WS = re.compile(r"[ \t\n\r]*")
    _STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
    _SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")

    def __init__(self, text: str):
        self.text = text
        self.values: dict[str, tuple[int, int]] = {}
        self.keys: dict[str, tuple[int, int]] = {}
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]
        try:
            self._value(self._skip(0), "$")
        except (RecursionError, ValueError, IndexError):
            pass  # positions are a courtesy: keep what was found

    def _skip(self, i: int) -> int:
        m = self._WS.match(self.text, i)
        return m.end() if m else i

    def _value(self, i: int, path: str) -> int:
        text = self.text
        ch = text[i]
        if ch == "{":
            return self._container(i, path, "}", self._member)
        if ch == "[":
            return self._container(i, path, "]", self._element)
        if ch == '"':
            _, end = self._string(i)
        else:
            m = self._SCALAR.match(text, i)
            if m is None:
                raise ValueError("unexpected character")
            end = m.end()
        self.values[path] = (i, end)
        return end

    def _container(self, start: int, path: str, close: str, item: Callable[[int, str, int], int]) -> int:
        """Past the object or array at ``start``: ``item(i, path, index)`` reads each of its items and
        answers where that item ends."""
        text = self.text
        i = self._skip(start + 1)
        index = 0
        if text[i] != close:
            while True:
                i = self._skip(item(i, path, index))
                index += 1
                if text[i] != ",":
                    break
                i = self._skip(i + 1)
        self.values[path] = (start, i + 1)
        return i + 1

    def _member(self, i: int, path: str, _index: int) -> int:
        key, end = self._string(i)
        sub = _join(path, key)
        self.keys[sub] = (i, end)
        return self._value(self._skip(self._skip(end) + 1), sub)  # past ':'

    def _element(self, i: int, path: str, index: int) -> int:
        return self._value(i, _join(path, index))

    def _string(self, i: int) -> tuple[str, int]:
        m = self._STRING.match(self.text, i)
        if m is None:
            raise ValueError("unterminated string")
        key: str = json.loads(m.group())
        return key, m.end()

    def _point(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1

    def span(self, file: str, path: str, key: str | None) -> Span:
        found = self.keys.get(_join(path, key)) if key is not None else None
        if found is None:
            found = self.values.get(path)
        while found is None and path not in ("$", ""):
            path = re.sub(r"(\.[^.\[]*|\[[^\]]*\])\Z", "", path)  # nearest enclosing value
            found = self.values.get(path)
        if found is None:
            return Span(file, 0, 0, 0, 0)
        start, end = found
        line, col = self._point(start)
        end_line, end_col = self._point(end)
        if end_line != line:  # an object or list: underline its opening bracket
            end_line, end_col = line, col + 1
        return Span(file, line, col, end_line, end_col)
