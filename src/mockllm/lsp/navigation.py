"""What a position refers to: go to definition and hover.

Definitions: ``after STEP`` → the step in the same scenario; ``reply like NAME`` / ``fallback like
ALIAS.NAME`` → the named reply, in this file or the imported one; a ``use`` line → the imported file.
Hover: the resolved value of a named reply under the cursor, else the reference text of the
keyword under it (:mod:`mockllm.dsl.tree.reference`).
"""

from __future__ import annotations

import os
import re
from typing import Any

import attrs

from mockllm.dsl.format.formatter import format_reply_element
from mockllm.dsl.tree.nodes import NamedReply, ReplyRef
from mockllm.dsl.tree.reference import lookup
from mockllm.lsp import context
from mockllm.lsp.document import Document, Location, Position, Range, span_path, span_range

_AFTER = re.compile(r"^[ \t]*(after)[ \t]+([A-Za-z_][A-Za-z0-9_-]*)")
_LIKE = re.compile(
    r"^[ \t]*(?:reply|fallback)[ \t]+like[ \t]+(?:([A-Za-z_][A-Za-z0-9_-]*)\.)?([A-Za-z_][A-Za-z0-9_-]*)"
)
_USE = re.compile(r'^[ \t]*use[ \t]+"((?:[^"\\]|\\.)*)"')


def _on(m: re.Match[str] | None, group: int, pos: Position) -> bool:
    return m is not None and m.start(group) <= pos.character <= m.end(group)


def _name_location(path: str, lines: list[str], row: int, name: str, last: bool = False) -> Location:
    """Where ``name`` stands on line ``row`` after its keyword (its last occurrence if ``last``; the
    line's start if it is not there)."""
    text = context.code(lines[row]) if row < len(lines) else ""
    col = text.rfind(name) if last else text.find(name, context.indent(text) + 1)
    return Location(path, Range.of(row, max(col, 0), max(col, 0) + (len(name) if col >= 0 else 0)))


def _reply_at(doc: Document, pos: Position) -> tuple[NamedReply, str, str] | None:
    """The named reply a `like` reference under the cursor resolves to: (reply, its file's name, how
    the reference spells it)."""
    line = doc.lines[pos.line]
    m = _LIKE.match(line)
    if m is None or not (m.start(1) if m[1] else m.start(2)) <= pos.character <= m.end(2):
        return None
    ref = ReplyRef(m[2], m[1])
    reply = doc.library.named_reply(doc.name, ref)
    if reply is None:
        return None
    file = doc.imports().get(ref.alias, "") if ref.alias else doc.name
    return reply, file, ref.qualified


def definition(doc: Document, pos: Position) -> Location | None:
    lines = doc.lines
    if pos.line >= len(lines):
        return None
    line = lines[pos.line]
    after = _AFTER.match(line)
    if _on(after, 2, pos) and after is not None:
        scenario = context.scenario_of(lines, pos.line)
        for name, row, col in context.steps_in(lines, scenario) if scenario else []:
            if name == after[2]:
                return Location(doc.path, Range.of(row, col, col + len(name)))
        return None
    found = _reply_at(doc, pos)
    if found is not None:
        reply, file, _ = found
        if file == doc.name:
            for name, row, col in context.named_replies(lines):
                if name == reply.name:
                    return Location(doc.path, Range.of(row, col, col + len(name)))
        start = span_range(reply.span).start
        source = doc.library.sources.get(file, "").split("\n")
        return _name_location(span_path(reply.span), source, start.line, reply.name)
    use = _USE.match(line)
    if use is not None and pos.character >= use.start(0):
        return Location(os.path.normpath(os.path.join(doc.folder, use[1])), Range.of(0, 0))
    return None


def hover(doc: Document, pos: Position) -> tuple[str, Range] | None:
    """Markdown for the thing under the cursor, and the range it covers."""
    lines = doc.lines
    if pos.line >= len(lines):
        return None
    found = _reply_at(doc, pos)
    if found is not None:
        reply, file, spelled = found
        body = "\n".join(format_reply_element(e, "    ") for e in reply.elements)
        m = _LIKE.match(lines[pos.line])
        assert m is not None
        rng = Range.of(pos.line, m.start(1) if m[1] else m.start(2), m.end(2))
        source = "" if file == doc.name else f" (from `{file}`)"
        return f"**reply `{spelled}`**{source}\n\n```mockllm\nreply {reply.name}:\n{body}\n```", rng
    words = context.words(lines[pos.line])
    names = [w.text for w in words]
    for i, w in enumerate(words):
        if w.start <= pos.character < w.end or (w.end == pos.character and i == len(words) - 1):
            entry = lookup(names, i, context.place(context.enclosing(lines, pos.line)))
            if entry is None:
                return None
            return f"**{entry.phrase}**\n\n{entry.doc}", Range.of(pos.line, w.start, w.end)
    return None


@attrs.frozen
class Symbol:
    name: str
    kind: str  # "scenario" | "step" | "reply" | "defaults" | "import"
    range: Range
    selection: Range
    children: tuple[Symbol, ...] = ()


def symbols(doc: Document) -> list[Symbol]:
    """The file's outline: imports, named replies, defaults, scenarios with their steps."""
    tree = doc.tree
    if tree is None:
        return []
    lines = doc.lines

    def sym(name: str, kind: str, node: Any) -> Symbol:
        rng = span_range(node.span)
        sel = _name_location(doc.path, lines, rng.start.line, name, last=kind == "import").range
        return Symbol(name, kind, rng, sel)

    out = [sym(u.alias, "import", u) for u in tree.uses]
    out += [sym(r.name, "reply", r) for r in tree.replies]
    if tree.defaults is not None:
        out.append(sym("defaults", "defaults", tree.defaults))
    for sc in tree.scenarios:
        outer = sym(sc.name, "scenario", sc)
        steps = tuple(sym(st.name, "step", st) for st in sc.steps)
        out.append(attrs.evolve(outer, children=steps))
    return out
