"""The canonical text of a syntax tree (what ``mockllm fmt`` writes).

Layout: 4-space indents; ``mockllm N``, the ``use`` lines, ``defaults:``, named replies, then
scenarios, one blank line between them and between steps. Inside a scenario: priority (left out
when 0), tags, ``order any``, lets, ``when:``, steps; inside a step: ``when:``, ``after``, captures,
``expect:``, ``repeat``/``always``, the reply. ``parse_text(format_file(t))`` gives back ``t``."""

from __future__ import annotations

import re

from mockllm.dsl import describe
from mockllm.dsl import nodes as n
from mockllm.dsl.transformer import json_text, long_string_value

__all__ = ["format_file", "format_reply", "format_reply_element", "format_step", "string_literal"]

INDENT = "    "
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_LONG_STRING = re.compile(r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""\Z')


def string_literal(s: str, indent: str = "") -> str:
    """``s`` as a literal on a line indented by ``indent``: triple-quoted when it holds a newline and
    that reads back as the same string, else one quoted line."""
    if "\n" in s:
        long = _long_literal(s, indent + INDENT)
        if long is not None:
            return long
    return describe.quote(s)


def _long_literal(s: str, inner: str) -> str | None:
    def escape(line: str) -> str:
        out = []
        for ch in line:
            if ch == "\\":
                out.append("\\\\")
            elif ch == "\t":
                out.append("\\t")
            elif ord(ch) < 0x20:
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        return "".join(out)

    body = "\n".join(inner + escape(line) if line else "" for line in s.split("\n"))
    literal = f'"""\n{body}\n{inner}"""'
    if not _LONG_STRING.match(literal):
        return None
    try:
        if long_string_value(literal[3:-3]) != s:
            return None
    except ValueError:
        return None
    return literal


def _tag(tag: str) -> str:
    return tag if _NAME.match(tag) else describe.quote(tag)


def _apart(s: n.Stream) -> str:
    return f", {s.apart} apart" if s.apart is not None else ""


def format_reply_element(e: n.ReplyElement, indent: str = "") -> str:
    """One reply element, as the lines (without a final newline) at ``indent``."""
    if isinstance(e, n.Text):
        return f"{indent}text {string_literal(e.text, indent)}"
    if isinstance(e, n.ToolCall):
        tail = f" id {describe.quote(e.id)}" if e.id is not None else ""
        return f"{indent}tool call {e.name} {json_text(e.arguments)}{tail}"
    if isinstance(e, n.Thinking):
        return f"{indent}thinking {string_literal(e.text, indent)}"
    if isinstance(e, n.Refusal):
        return f"{indent}refusal {string_literal(e.text, indent)}"
    if isinstance(e, n.Finish):
        return f"{indent}finish {e.reason}"
    if isinstance(e, n.Usage):
        return f"{indent}usage {e.input_tokens} in, {e.output_tokens} out"
    if isinstance(e, n.Stream):
        if e.mode == "chunks":
            return f"{indent}stream {e.count} chunks{_apart(e)}"
        if e.mode == "characters":
            return f"{indent}stream by {e.count} characters{_apart(e)}"
        return f"{indent}stream by word{_apart(e)}"
    if isinstance(e, n.Chunks):
        inner = indent + INDENT
        return "\n".join([f"{indent}chunks:", *(f"{inner}{string_literal(c, inner)}" for c in e.chunks)])
    if isinstance(e, n.Latency):
        return f"{indent}latency {e.duration}"
    if isinstance(e, n.Error):
        return f"{indent}error {e.status} {describe.quote(e.message)}"
    if isinstance(e, n.RetryAfter):
        return f"{indent}retry after {e.duration}"
    if isinstance(e, n.Header):
        return f"{indent}header {describe.quote(e.name)} {describe.quote(e.value)}"
    if isinstance(e, n.EchoHeader):
        return f"{indent}echo header {describe.quote(e.name)}"
    if isinstance(e, n.Status):
        return f"{indent}status {e.status}"
    if isinstance(e, n.Body):
        return f"{indent}body {json_text(e.body)}"
    if isinstance(e, n.Disconnect):
        return f"{indent}disconnect after {e.after_chunks} chunks"
    if isinstance(e, n.StreamError):
        return f"{indent}stream error {describe.quote(e.message)} after {e.after_chunks} chunks"
    if isinstance(e, n.Hang):
        return f"{indent}hang"
    if isinstance(e, n.Echo):
        return f"{indent}echo"
    raise TypeError(f"not a reply element: {e!r}")


def _elements(elements: tuple[n.ReplyElement, ...], indent: str) -> list[str]:
    return [format_reply_element(e, indent) for e in elements]


def _is_echo(reply: n.Reply | None) -> bool:
    return isinstance(reply, n.ReplyBlock) and len(reply.elements) == 1 and isinstance(reply.elements[0], n.Echo)


def format_reply(reply: n.Reply, indent: str = "", keyword: str = "reply") -> str:
    """A step's reply (``keyword`` = "reply") or a file's fallback (``keyword`` = "fallback")."""
    if isinstance(reply, n.ReplyRef):
        return f"{indent}{keyword} like {reply.qualified}"
    if _is_echo(reply):
        return f"{indent}{keyword} echo"
    return "\n".join([f"{indent}{keyword}:", *_elements(reply.elements, indent + INDENT)])


def _conditions(header: str, conditions: tuple[n.Condition, ...], indent: str) -> list[str]:
    if not conditions:
        return []
    inner = indent + INDENT
    return [f"{indent}{header}:", *(inner + describe.condition(c) for c in conditions)]


def format_step(step: n.Step, indent: str = "") -> str:
    """A step block at ``indent`` (without a final newline)."""
    inner = indent + INDENT
    lines = [f"{indent}step {step.name}:"]
    lines += _conditions("when", step.conditions, inner)
    if step.after is not None:
        lines.append(f"{inner}after {step.after.step}")
    for c in step.captures:
        lines.append(f"{inner}capture {c.name} from {describe.subject(c.subject)} {c.regex}")
    lines += _conditions("expect", step.expects, inner)
    if step.consumption.kind == "repeat":
        lines.append(f"{inner}repeat {step.consumption.count}")
    elif step.consumption.kind == "always":
        lines.append(f"{inner}always")
    if step.reply is not None:
        lines.append(format_reply(step.reply, inner))
    return "\n".join(lines)


def format_scenario(s: n.Scenario) -> str:
    lines = [f"scenario {describe.quote(s.name)}:"]
    if s.priority != 0:
        lines.append(f"{INDENT}priority {s.priority}")
    if s.tags:
        lines.append(f"{INDENT}tags " + ", ".join(_tag(t) for t in s.tags))
    if s.order_any:
        lines.append(f"{INDENT}order any")
    for let in s.lets:
        lines.append(f"{INDENT}let {let.name} = {string_literal(let.value, INDENT)}")
    lines += _conditions("when", s.conditions, INDENT)
    for i, step in enumerate(s.steps):
        if i > 0 or len(lines) > 1:
            lines.append("")
        lines.append(format_step(step, INDENT))
    return "\n".join(lines)


def format_defaults(defaults: n.Defaults) -> str:
    lines = ["defaults:", *_elements(defaults.elements, INDENT)]
    if defaults.fallback is not None:
        lines.append(format_reply(defaults.fallback, INDENT, keyword="fallback"))
    return "\n".join(lines)


def format_file(f: n.ScriptFile) -> str:
    """The whole file in canonical layout, ending with one newline ("" for an empty file)."""
    blocks: list[str] = []
    if f.version is not None:
        blocks.append(f"mockllm {f.version}")
    if f.uses:
        blocks.append("\n".join(f"use {describe.quote(u.path)} as {u.alias}" for u in f.uses))
    if f.defaults is not None and (f.defaults.elements or f.defaults.fallback is not None):
        blocks.append(format_defaults(f.defaults))
    for r in f.replies:
        blocks.append("\n".join([f"reply {r.name}:", *_elements(r.elements, INDENT)]))
    for s in f.scenarios:
        blocks.append(format_scenario(s))
    return "\n\n".join(blocks) + "\n" if blocks else ""
