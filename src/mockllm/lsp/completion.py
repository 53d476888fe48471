"""What completes where: the statements a block may hold, subjects in `when:`, the predicates a
subject takes, step names after `after`, reply names after `like`, file paths in `use`.

Items replace the text from the start of what is being completed (a whole statement or condition
may be several words, so ``last u`` completes to ``last user message``) up to the cursor.
"""

from __future__ import annotations

import os
import re
from typing import Literal

import attrs

from mockllm.dsl.tree.describe import PROVIDERS
from mockllm.dsl.tree.predicates import allowed_ops
from mockllm.dsl.tree.reference import PREDICATES, SUBJECTS, VALUES, Entry, statements
from mockllm.lsp import context
from mockllm.lsp.document import Document, Position, Range

ItemKind = Literal["keyword", "subject", "predicate", "value", "step", "reply", "file", "folder"]


@attrs.frozen
class Item:
    label: str
    kind: ItemKind
    range: Range  # the text the item replaces
    insert: str  # LSP snippet syntax when ``snippet``
    snippet: bool = False
    detail: str = ""
    doc: str = ""


def _entry_item(e: Entry, kind: ItemKind, rng: Range) -> Item:
    return Item(e.phrase, kind, rng, e.insert, snippet=bool(e.snippet), doc=e.doc)


_AFTER = re.compile(r"^[ \t]*after[ \t]+([A-Za-z0-9_-]*)$")
_LIKE = re.compile(r"^[ \t]*(?:reply|fallback)[ \t]+like[ \t]+([A-Za-z0-9_.-]*)$")
_USE = re.compile(r'^[ \t]*use[ \t]+"([^"]*)$')
_FINISH = re.compile(r"^[ \t]*finish[ \t]+([a-z_]*)$")

#: A complete subject at the start of a condition, and its kind (``dsl.nodes.SubjectKind``).
_SUBJECT = re.compile(
    r"""^(?:(?P<provider>provider)|(?P<endpoint>endpoint)|(?P<model>model)|(?P<stream>stream)
    |(?P<last_user_message>last\s+user\s+message)|(?P<last_message>last\s+message)
    |(?P<any_message>any\s+\w+\s+message)|(?P<system_prompt>system\s+prompt)|(?P<tools>tools)
    |(?P<tool_result>tool\s+result\s+for\s+"(?:[^"\\]|\\.)*")|(?P<header>header\s+"(?:[^"\\]|\\.)*")
    |(?P<field>field\s+"(?:[^"\\]|\\.)*")|(?P<turn>turn))\s+""",
    re.VERBOSE,
)


def complete(doc: Document, pos: Position) -> list[Item]:
    lines = doc.lines
    if pos.line >= len(lines):
        return []
    line = lines[pos.line]
    before = line[: pos.character]
    if context.code(before) != before:
        return []  # in a comment
    if m := _AFTER.match(before):
        return _steps(doc, pos, Range.of(pos.line, m.start(1), pos.character))
    if m := _LIKE.match(before):
        return _replies(doc, Range.of(pos.line, m.start(1), pos.character))
    if m := _USE.match(before):
        return _paths(doc, m[1], Range.of(pos.line, m.start(1), pos.character))
    if m := _FINISH.match(before):
        rng = Range.of(pos.line, m.start(1), pos.character)
        return [_entry_item(e, "value", rng) for e in VALUES if "reply" in e.places]
    start = context.indent(before)
    typed = before[start:]
    rng = Range.of(pos.line, start, pos.character)
    where = context.place(context.enclosing(lines, pos.line, start))
    if where is None:
        return []
    if where == "condition":
        return _condition(typed, rng, pos)
    if typed and not re.fullmatch(r"[A-Za-z_ ]*", typed):
        return []  # past the statement's words (in a string, a number, a name being defined)
    return [_entry_item(e, "keyword", rng) for e in statements(where)]


def _condition(typed: str, rng: Range, pos: Position) -> list[Item]:
    m = _SUBJECT.match(typed)
    if m is None:
        if typed and not re.fullmatch(r"[A-Za-z_ ]*", typed):
            return []
        return [_entry_item(e, "subject", rng) for e in SUBJECTS]
    kind = m.lastgroup or ""
    rest = typed[m.end() :]
    at = Range.of(pos.line, rng.start.character + m.end(), pos.character)
    value = re.fullmatch(r"is[ \t]+(?:not[ \t]+)?([a-z]*)", rest)
    if kind == "provider" and value and value[1] not in ("not", "n", "no"):
        at = Range.of(pos.line, pos.character - len(value[1]), pos.character)
        return [_entry_item(e, "value", at) for e in VALUES if e.phrase in PROVIDERS]
    if not re.fullmatch(r"[A-Za-z ]*", rest):
        return []
    return [_entry_item(PREDICATES[op], "predicate", at) for op in allowed_ops(kind)]


def _steps(doc: Document, pos: Position, rng: Range) -> list[Item]:
    scenario = context.scenario_of(doc.lines, pos.line)
    if scenario is None:
        return []
    return [
        Item(name, "step", rng, name, detail=f"step on line {line + 1}")
        for name, line, _ in context.steps_in(doc.lines, scenario)
        if line != pos.line and not _is_own_step(doc.lines, pos.line, line)
    ]


def _is_own_step(lines: list[str], row: int, step_line: int) -> bool:
    """Whether the step at ``step_line`` is the one whose body holds ``row`` (a step cannot follow itself)."""
    return any(h.line == step_line for h in context.enclosing(lines, row))


def _replies(doc: Document, rng: Range) -> list[Item]:
    items = [
        Item(name, "reply", rng, name, detail=f"reply on line {line + 1}")
        for name, line, _ in context.named_replies(doc.lines)
    ]
    for alias, target in sorted(doc.imports().items()):
        script = doc.library.file(target)
        for reply in script.replies if script is not None else ():
            items.append(Item(f"{alias}.{reply.name}", "reply", rng, f"{alias}.{reply.name}", detail=f"from {target}"))
    return items


def _paths(doc: Document, typed: str, rng: Range) -> list[Item]:
    """Folders and ``.mockllm``/``.json`` files under the folder ``typed`` names, relative to the document."""
    head = typed.rsplit("/", 1)[0] + "/" if "/" in typed else ""
    folder = os.path.normpath(os.path.join(doc.folder, head or "."))
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    items = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            items.append(Item(head + entry.name + "/", "folder", rng, head + entry.name + "/"))
        elif entry.name.endswith((".mockllm", ".json")) and os.path.abspath(entry.path) != doc.path:
            items.append(Item(head + entry.name, "file", rng, head + entry.name))
    return items
