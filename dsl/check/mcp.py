"""Checks of MCP tool servers and the steps that answer their calls.

An ``mcp server`` block declares tools with JSON Schemas; a step names a tool with ``tool is "NAME"``
and reads its arguments with ``argument "PATH"``. What a client would refuse, or what can never
match, is caught here: a step for a tool no server declares, an argument its input schema does not
have, a resource or prompt named twice, a prompt's ``{{placeholder}}`` no argument declares, a
scripted result that does not fit the declared output schema (the official client raises on
such a result), a schema that is not an object schema (the client refuses the tool list), and
``result`` lines in a step no MCP call can reach."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from mockllm.dsl.check.common import Reporter, did_you_mean
from mockllm.dsl.diagnostics import Related
from mockllm.dsl.tree import templates
from mockllm.dsl.tree.nodes import (
    Condition,
    McpArgument,
    McpPrompt,
    McpResource,
    McpServer,
    McpTool,
    ReplyBlock,
    Result,
    Scenario,
    ScriptFile,
    Step,
)
from mockllm.errors import TemplateError

__all__ = ["check_mcp_servers", "check_mcp_step", "declared_tools", "result_problems"]

_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+\Z")
_DECLARE_HINT = 'declare it in an `mcp server "NAME":` block: `tool {} "what it does":` with its `input {{…}}` schema'


def declared_tools(r: Reporter) -> dict[str, McpTool]:
    """Every tool the library's servers declare, by name (the first declaration of a name wins)."""
    tools: dict[str, McpTool] = {}
    for f in r.library.files:
        for server in f.mcp_servers:
            for tool in server.tools:
                tools.setdefault(tool.name, tool)
    return tools


def check_mcp_servers(r: Reporter, f: ScriptFile) -> None:
    """Names given twice and schemas the official client would refuse."""
    seen: dict[str, McpServer] = {}
    for server in f.mcp_servers:
        first = seen.get(server.name)
        if first is not None:
            r.err(
                "duplicate-name",
                f'a second `mcp server "{server.name}"` in this file',
                r.at(server.span, f.path),
                hint="give it another name, or merge its tools into the first",
                related=[Related(r.at(first.span, f.path), "the first is here")],
            )
        seen.setdefault(server.name, server)
        tools: dict[str, McpTool] = {}
        for tool in server.tools:
            if tool.name in tools:
                r.err(
                    "duplicate-name",
                    f'tool `{tool.name}` is declared twice in `mcp server "{server.name}"`',
                    r.at(tool.span, f.path),
                    hint="keep one declaration",
                    related=[Related(r.at(tools[tool.name].span, f.path), "the first is here")],
                )
            tools.setdefault(tool.name, tool)
            _check_schema(r, tool, "input", tool.input_schema, f.path)
            if tool.output_schema is not None:
                _check_schema(r, tool, "output", tool.output_schema, f.path)
        _check_resources(r, server, f.path)
        for prompt in _unique(r, server.prompts, lambda p: p.name, "prompt", server, f.path):
            _check_prompt(r, prompt, f.path)


_Named = TypeVar("_Named", McpResource, McpPrompt, McpArgument)


def _unique(
    r: Reporter, items: Sequence[_Named], key: Callable[[_Named], str], what: str, server: McpServer, file: str
) -> list[_Named]:
    """``items`` with a diagnostic for each name given twice (the first declaration is kept)."""
    seen: dict[str, _Named] = {}
    for item in items:
        name = key(item)
        if name in seen:
            r.err(
                "duplicate-name",
                f'{what} `{name}` is declared twice in `mcp server "{server.name}"`',
                r.at(item.span, file),
                hint="keep one declaration",
                related=[Related(r.at(seen[name].span, file), "the first is here")],
            )
        seen.setdefault(name, item)
    return list(seen.values())


def _check_resources(r: Reporter, server: McpServer, file: str) -> None:
    for res in _unique(r, server.resources, lambda x: x.uri, "resource", server, file):
        if not _URI.match(res.uri):
            r.err(
                "bad-uri",
                f'resource "{res.uri}" is not a URI',
                r.at(res.span, file),
                hint='write a scheme and a path, such as `resource "weather://cities"` or `resource "file:///notes.txt"`',
            )


def _check_prompt(r: Reporter, prompt: McpPrompt, file: str) -> None:
    """An argument named twice, and a ``{{placeholder}}`` no argument declares."""
    declared: dict[str, McpArgument] = {}
    for arg in prompt.arguments:
        if arg.name in declared:
            r.err(
                "duplicate-name",
                f"argument `{arg.name}` is declared twice in prompt `{prompt.name}`",
                r.at(arg.span, file),
                hint="keep one declaration",
                related=[Related(r.at(declared[arg.name].span, file), "the first is here")],
            )
        declared.setdefault(arg.name, arg)
    for message in prompt.messages:
        try:
            refs = templates.parse(message.text).names
        except TemplateError as exc:
            r.err("bad-template", str(exc), r.at(message.span, file), hint="write `{{argument}}`, closed by `}}`")
            continue
        for ref in refs:
            if ref.name not in declared:
                r.err(
                    "unknown-argument",
                    f"prompt `{prompt.name}` has no argument `{ref.name}` for `{{{{{ref.name}}}}}`",
                    r.at(message.span, file),
                    hint=did_you_mean(ref.name, declared, "`{{{{{}}}}}`")
                    or f'declare it: `argument {ref.name} "what it is"`',
                )


def _check_schema(r: Reporter, tool: McpTool, which: str, schema: Any, file: str) -> None:
    if isinstance(schema, dict) and schema.get("type") == "object":
        return
    r.err(
        "bad-schema",
        f'the {which} schema of tool `{tool.name}` must be an object schema (`"type": "object"`)',
        r.loc.find(r.at(tool.span, file), which) or r.at(tool.span, file),
        hint=f'MCP clients refuse other schemas: write `{which} {{"type": "object", "properties": {{…}}}}`',
    )


def _named_tools(conditions: Sequence[Condition]) -> Iterator[Condition]:
    for c in conditions:
        if c.subject.kind == "tool" and c.predicate.op == "is" and isinstance(c.predicate.value, str):
            yield c


def check_mcp_step(r: Reporter, sc: Scenario, step: Step, file: str) -> None:
    """A step's tool names, argument paths and results against the declared tools."""
    conditions = (*sc.conditions, *step.conditions)
    declared = declared_tools(r)
    tool: McpTool | None = None
    for c in _named_tools(conditions):
        found = declared.get(c.predicate.value)
        if found is None:
            name = c.predicate.value
            r.err(
                "unknown-tool",
                f"no `mcp server` declares a tool `{name}`",
                r.at(c.predicate.span if c.predicate.span.line else c.span, file),
                hint=did_you_mean(name, declared, '`tool is "{}"`') or _DECLARE_HINT.format(name),
            )
        else:
            tool = found
    if tool is not None:
        subjects = [(c.subject, c.span) for c in (*conditions, *step.expects)]
        subjects += [(cap.subject, cap.span) for cap in step.captures]
        for subject, where in subjects:
            if subject.kind != "argument" or subject.arg is None:
                continue
            known = _properties(tool.input_schema)
            top = subject.arg.split(".")[0]
            if known is not None and top not in known:
                r.err(
                    "unknown-argument",
                    f"tool `{tool.name}` has no argument `{top}` in its input schema",
                    r.at(subject.span if subject.span.line else where, file),
                    hint=did_you_mean(top, known, '`argument "{}"`')
                    or "its arguments are " + ", ".join(f"`{k}`" for k in known),
                )
    block = step.reply if isinstance(step.reply, ReplyBlock) else None
    results = [el for el in block.elements if isinstance(el, Result)] if block is not None else []
    if not results:
        return
    if not any(c.subject.kind in ("endpoint", "tool", "argument") for c in conditions):
        r.warn(
            "unreachable-result",
            "this step answers with a tool result, but no MCP call can match it",
            r.at(results[0].span, file),
            hint='MCP calls match only steps whose conditions name `endpoint` or `tool`; add `tool is "NAME"`',
        )
    structured = [el for el in results if isinstance(el.value, dict)]
    if len(structured) > 1:
        r.err(
            "conflicting-reply",
            "a tool result has one structured `result {…}`",
            r.at(structured[1].span, file),
            hint="merge the two objects into one",
            related=[Related(r.at(structured[0].span, file), "the first is here")],
        )
    errors = [el for el in results if el.is_error]
    if errors and structured:
        r.err(
            "conflicting-reply",
            "`result error` conflicts with a structured `result {…}`",
            r.at(structured[0].span, file),
            hint="an error result carries text only; keep `result error` or the structured result",
            related=[Related(r.at(errors[0].span, file), "`result error` is here")],
        )
    if tool is None or tool.output_schema is None or errors:
        return
    if not structured:
        r.err(
            "bad-result",
            f"tool `{tool.name}` declares an output schema, so its result must be structured",
            r.at(results[0].span, file),
            hint="write `result {…}` with an object that fits its `output` schema (clients refuse a text-only result)",
        )
        return
    value = structured[0].value
    for problem in result_problems(value, tool.output_schema):
        r.err(
            "bad-result",
            f"this result does not fit the output schema of tool `{tool.name}`: {problem}",
            r.at(structured[0].span, file),
            hint="change the result or the tool's `output` schema (the client checks every result against it)",
        )


def _properties(schema: Any) -> list[str] | None:
    """The declared property names of an object schema, or None when any name is allowed."""
    if not isinstance(schema, dict):
        return None
    props = schema.get("properties")
    if not isinstance(props, dict) or schema.get("additionalProperties", False) not in (False, None):
        return None
    if "patternProperties" in schema:
        return None
    return list(props)


_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def _type_ok(value: Any, t: str) -> bool:
    if t in ("integer", "number") and isinstance(value, bool):
        return False
    if t == "integer" and isinstance(value, float):
        return value.is_integer()
    kinds = _TYPES.get(t)
    return kinds is None or isinstance(value, kinds)


def result_problems(value: Any, schema: Any, path: str = "") -> list[str]:
    """What in ``value`` plainly does not fit ``schema``: wrong types, required properties missing,
    properties a closed schema does not allow, values outside an ``enum`` (the common mistakes; the
    rest of JSON Schema is left to the server, which checks every result fully)."""
    if not isinstance(schema, dict):
        return []
    where = f"`{path}`" if path else "the result"
    t = schema.get("type")
    types = [t] if isinstance(t, str) else [x for x in t if isinstance(x, str)] if isinstance(t, list) else []
    if types and not any(_type_ok(value, x) for x in types):
        return [f"{where} is {json.dumps(value)[:60]}, not of type {' or '.join(types)}"]
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return [f"{where} is {json.dumps(value)[:60]}, not one of {json.dumps(schema['enum'])[:80]}"]
    out: list[str] = []
    if isinstance(value, dict):
        required = schema.get("required")
        for name in required if isinstance(required, list) else []:
            if isinstance(name, str) and name not in value:
                out.append(f"`{path + '.' if path else ''}{name}` is required and missing")
        declared = schema.get("properties")
        props: dict[str, Any] = declared if isinstance(declared, dict) else {}
        for key, item in value.items():
            sub = f"{path}.{key}" if path else key
            if key in props:
                out.extend(result_problems(item, props[key], sub))
            elif schema.get("additionalProperties") is False:
                out.append(f"`{sub}` is not allowed (the schema sets `additionalProperties` to false)")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            out.extend(result_problems(item, schema["items"], f"{path}.{i}" if path else str(i)))
    return out
