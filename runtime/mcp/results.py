"""What a tool call answers: a scripted step's plan turned into an MCP ``CallToolResult``, the default
result of a call no step answers, and the ``isError`` results a server built on the official SDK
gives for an unknown tool or arguments that do not fit the input schema.

Shapes follow the ``mcp`` 2.3 types: ``content`` is always there (text blocks); a structured result
also carries ``structuredContent`` and its JSON text as the text block, as the official server does."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mockllm.dsl.tree.nodes import McpTool
from mockllm.runtime.echo.schema_args import generate
from mockllm.runtime.echo.schema_check import is_valid
from mockllm.runtime.jsonout import compact_encoder
from mockllm.runtime.reply.plan import MessagePlan

__all__ = ["argument_error", "call_result", "call_result_text", "default_result", "text_result", "unknown_tool"]

_compact = compact_encoder()


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def text_result(text: str, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def unknown_tool(name: str) -> dict[str, Any]:
    """The official server's answer to a call of a tool it does not have."""
    return text_result(f"Unknown tool: {name}", True)


def call_result(plan: MessagePlan, tool: McpTool, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The result a step's plan answers: its `result` lines in order (a `text` line counts as text
    content); a plan with neither is the tool's default answer."""
    content: list[dict[str, Any]] = []
    structured: Any = None
    is_error = False
    for value, error in plan.results:
        if isinstance(value, dict):
            structured = value
            content.append({"type": "text", "text": _json_text(value)})
        else:
            content.append({"type": "text", "text": str(value)})
        is_error = is_error or error
    if not content and plan.text:
        content.append({"type": "text", "text": plan.text})
    if not content:
        return default_result(tool, arguments)
    out: dict[str, Any] = {"content": content}
    if structured is not None:
        out["structuredContent"] = structured
    out["isError"] = is_error
    return out


#: call_result_text's answers to scripted `result` lines, by the identity of the plan's ``results``: the
#: planner keeps a static reply's plan, and with it the same tuple, from one call to the next, so its
#: result is built and written once (the tuple is kept here, so its id is not reused while cached).
_BUILT: dict[int, tuple[tuple[tuple[Any, bool], ...], dict[str, Any], str]] = {}
_BUILT_LIMIT = 1024


def call_result_text(plan: MessagePlan, tool: McpTool, arguments: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """:func:`call_result` and its compact JSON text. For a plan with `result` lines both are shared
    from one call to the next: never change them."""
    results = plan.results
    if results:
        hit = _BUILT.get(id(results))
        if hit is not None and hit[0] is results:
            return hit[1], hit[2]
    result = call_result(plan, tool, arguments)
    text = _compact(result)
    if results:
        if len(_BUILT) >= _BUILT_LIMIT:
            _BUILT.clear()
        _BUILT[id(results)] = (results, result, text)
    return result, text


def default_result(tool: McpTool, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """What a declared tool answers when no step does (like the echo double): a value its output
    schema accepts, else a text naming the call."""
    if isinstance(tool.output_schema, dict):
        value = generate(tool.output_schema, tool.name)
        if isinstance(value, dict):
            return {
                "content": [{"type": "text", "text": _json_text(value)}],
                "structuredContent": value,
                "isError": False,
            }
    try:
        shown = _json_text(dict(arguments))
    except (RecursionError, ValueError):
        shown = "(arguments nested too deeply to show)"
    return text_result(f"{tool.name} called with {shown}")


# ---------------------------------------------------------------------------------------------------------
# Arguments that do not fit the input schema: pydantic's words, as the official server reports them

_TYPE_WORDS = {
    "string": ("a valid string", "string_type"),
    "integer": ("a valid integer", "int_type"),
    "number": ("a valid number", "float_type"),
    "boolean": ("a valid boolean", "bool_type"),
    "object": ("a valid dictionary", "dict_type"),
    "array": ("a valid list", "list_type"),
    "null": ("None", "none_required"),
}


def _type_ok(value: Any, t: str) -> bool:
    if t == "string":
        return isinstance(value, str)
    if t in ("integer", "number", "boolean") and isinstance(value, bool):
        return t == "boolean"
    if t == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if t == "number":
        return isinstance(value, int | float)
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "null":
        return value is None
    return True


def _py_type(value: Any) -> str:
    return {dict: "dict", list: "list", str: "str", bool: "bool", int: "int", float: "float"}.get(
        type(value), "NoneType"
    )


def _line(loc: str, message: str, kind: str, value: Any) -> str:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{loc}\n  {message} [type={kind}, input_value={shown}, input_type={_py_type(value)}]"


#: JSON Schema keywords that say nothing about validity (annotations)
_ANNOTATIONS = frozenset({"type", "description", "title", "examples", "default", "$comment"})
_PLAIN: dict[int, tuple[McpTool, tuple[tuple[str, str], ...], tuple[str, ...], bool] | None] = {}


def _plain(tool: McpTool) -> tuple[McpTool, tuple[tuple[str, str], ...], tuple[str, ...], bool] | None:
    """A schema of plainly typed properties (``{"type": "object", "properties": {"city": {"type":
    "string"}}, "required": […]}``, the common case) as (properties with their types, required,
    closed); None for any other schema. Kept per tool: checked on every call."""
    hit = _PLAIN.get(id(tool))
    if hit is not None and hit[0] is tool:
        return hit
    schema = tool.input_schema
    found: tuple[McpTool, tuple[tuple[str, str], ...], tuple[str, ...], bool] | None = None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if (
        set(schema) <= _ANNOTATIONS | {"properties", "required", "additionalProperties"}
        and isinstance(props, dict)
        and isinstance(required, list)
        and all(isinstance(r, str) for r in required)
        and isinstance(extra, bool)
        and all(
            isinstance(sub, dict) and set(sub) <= _ANNOTATIONS and sub.get("type") in _TYPE_WORDS
            for sub in props.values()
        )
    ):
        typed = tuple((name, str(sub["type"])) for name, sub in props.items())
        found = (tool, typed, tuple(required), not extra)
    if len(_PLAIN) > 4096:
        _PLAIN.clear()
    _PLAIN[id(tool)] = found
    return found


def _fits_plain(
    arguments: dict[str, Any], plain: tuple[Any, tuple[tuple[str, str], ...], tuple[str, ...], bool]
) -> bool:
    _tool, typed, required, closed = plain
    for name in required:
        if name not in arguments:
            return False
    for name, t in typed:
        if name in arguments and not _type_ok(arguments[name], t):
            return False
    return not closed or all(any(name == k for k, _ in typed) for name in arguments)


def argument_error(tool: McpTool, arguments: Any) -> dict[str, Any] | None:
    """The ``isError`` result for arguments the input schema refuses (None when they fit), worded as
    the official server words it (pydantic's validation errors)."""
    schema = tool.input_schema
    if isinstance(arguments, dict):
        plain = _plain(tool)
        if plain is not None and _fits_plain(arguments, plain):
            return None
        if plain is None and is_valid(arguments, schema):
            return None
    lines: list[str] = []
    if not isinstance(arguments, dict):
        lines.append(_line("arguments", "Input should be a valid dictionary", "dict_type", arguments))
    else:
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = schema.get("required") if isinstance(schema.get("required"), list) else []
        for name, sub in props.items():
            if name not in arguments:
                if name in required:
                    lines.append(_line(name, "Field required", "missing", arguments))
                continue
            value = arguments[name]
            t = sub.get("type") if isinstance(sub, dict) else None
            if isinstance(t, str) and t in _TYPE_WORDS and not _type_ok(value, t):
                words, kind = _TYPE_WORDS[t]
                lines.append(_line(name, f"Input should be {words}", kind, value))
            elif isinstance(sub, dict) and not is_valid(value, sub, root=schema):
                lines.append(_line(name, "Value error, does not match the declared schema", "value_error", value))
        for name in required:
            if isinstance(name, str) and name not in props and name not in arguments:
                lines.append(_line(name, "Field required", "missing", arguments))
        if not lines:
            lines.append(
                _line("arguments", "Value error, does not match the declared schema", "value_error", arguments)
            )
    count = f"{len(lines)} validation error{'s' if len(lines) != 1 else ''}"
    text = f"Error executing tool {tool.name}: {count} for {tool.name}Arguments\n" + "\n".join(lines)
    return text_result(text, True)
