"""The canonical text of a syntax tree (what ``mockllm fmt`` writes).

Layout: 4-space indents; ``mockllm N``, the ``use`` lines, ``defaults:``, named replies, then
scenarios, one blank line between them and between steps. Inside a scenario: priority (left out
when 0), tags, ``order any``, lets, ``when:``, steps; inside a step: ``when:``, ``after``, captures,
``expect:``, ``repeat``/``always``, the reply. Reply elements keep their order, except that
``interleave calls`` goes after the ``stream`` line, else after the last ``tool call``
(:func:`canonical_elements`). ``parse_text(format_file(t))`` gives back ``t`` for a tree in that order.

Comments are kept when the source is given (:func:`format_file`): a comment on a line of its own goes
with the statement below it, at that statement's indentation (so it moves when the statement moves);
a comment at the end of a line stays at the end of that statement's (last) line; a comment after the
last statement of a block, indented into the block, stays at the end of the block; comments after the
last statement of the file stay at the end. Blank lines inside a run of comments, and one between the
run and its statement, are kept; the canonical layout decides the others."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence

import attrs

from mockllm.dsl.diagnostics import Diagnostic
from mockllm.dsl.format.comments import Comment, SourceLayout, scan
from mockllm.dsl.parse.transformer import json_text, long_string_value
from mockllm.dsl.tree import describe
from mockllm.dsl.tree import nodes as n

__all__ = [
    "Reformatted",
    "canonical_elements",
    "format_file",
    "format_reply",
    "format_reply_element",
    "format_step",
    "reformat",
    "string_literal",
]

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
    body = "\n".join(inner + describe.escape(line, quotes=False) if line else "" for line in s.split("\n"))
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


def _element_text(e: n.ReplyElement, indent: str) -> str:
    """A reply element other than ``chunks:``, as its lines (without a final newline) at ``indent``."""
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
    if isinstance(e, n.InterleaveCalls):
        return f"{indent}interleave calls"
    if isinstance(e, n.Vector):
        return f"{indent}vector {json_text(list(e.values))}"
    if isinstance(e, n.VectorsFrom):
        return f"{indent}vectors from {describe.quote(e.path)}"
    if isinstance(e, n.Flag):
        return f"{indent}flag {', '.join(describe.quote(c) for c in e.categories)}"
    if isinstance(e, n.Audio):
        return f"{indent}audio {describe.quote(e.path)}" if e.path is not None else f"{indent}audio {e.length}"
    if isinstance(e, n.Image):
        return f"{indent}image {describe.quote(e.path)}"
    if isinstance(e, n.Result):
        if isinstance(e.value, str):
            word = "result error" if e.is_error else "result"
            return f"{indent}{word} {string_literal(e.value, indent)}"
        return f"{indent}result {json_text(e.value)}"
    raise TypeError(f"not a reply element: {e!r}")


def canonical_elements(elements: Sequence[n.ReplyElement]) -> tuple[n.ReplyElement, ...]:
    """``elements`` in the order the formatter writes them: file order, except that ``interleave calls``
    goes right after the (last) ``stream`` line, else right after the last ``tool call``, else stays
    where it is. Its place changes nothing in the reply, so moving it keeps the meaning."""
    moved = [e for e in elements if isinstance(e, n.InterleaveCalls)]
    if not moved:
        return tuple(elements)
    rest = [e for e in elements if not isinstance(e, n.InterleaveCalls)]
    anchor = _last_index(rest, n.Stream)
    if anchor is None:
        anchor = _last_index(rest, n.ToolCall)
    if anchor is None:
        return tuple(elements)
    return (*rest[: anchor + 1], *moved, *rest[anchor + 1 :])


def _last_index(elements: Sequence[n.ReplyElement], kind: type) -> int | None:
    for i in range(len(elements) - 1, -1, -1):
        if isinstance(elements[i], kind):
            return i
    return None


def _is_echo(reply: n.Reply | None) -> bool:
    return isinstance(reply, n.ReplyBlock) and len(reply.elements) == 1 and isinstance(reply.elements[0], n.Echo)


def _key(node: object) -> tuple[int, ...]:
    span = getattr(node, "span", None)
    line = getattr(span, "line", 0)
    return (line,) if line > 0 else ()


@attrs.define
class _Stmt:
    """One statement of the output: its text (its first line indented by ``indent``; a triple-quoted
    string adds lines), the source lines of the statements it stands for, and whether the canonical
    layout puts a blank line before it."""

    text: str
    indent: str
    keys: tuple[int, ...] = ()
    blank: bool = False


class _Printer:
    """Lays a tree out as :class:`_Stmt` values. With the source's layout it also finds the source
    lines of the statements that are not nodes (``mockllm 1``, ``priority``, ``tags``, ``order any``,
    the ``when:`` and ``expect:`` headers, each string of ``chunks:``)."""

    def __init__(self, layout: SourceLayout | None = None):
        self.layout = layout
        self.starts = [x.line for x in layout.lines] if layout is not None else []
        self.out: list[_Stmt] = []

    def emit(self, text: str, indent: str, keys: tuple[int, ...] = (), blank: bool = False) -> None:
        self.out.append(_Stmt(text, indent, keys, blank))

    def text(self) -> str:
        return "\n".join(("\n" if s.blank else "") + s.text for s in self.out)

    # -- source lines of the statements that are not nodes ----------------------------------------------

    def _line_before(self, node: object) -> tuple[int, ...]:
        """The statement line just above ``node``'s (the header of the block ``node`` starts)."""
        keys = _key(node)
        if not keys or self.layout is None:
            return ()
        i = bisect.bisect_left(self.starts, keys[0])
        return (self.starts[i - 1],) if i > 0 else ()

    def _find(self, lo: int, hi: int, word: str, column: int | None = None) -> tuple[int, ...]:
        """The first statement line strictly between lines ``lo`` and ``hi`` starting with ``word``."""
        if self.layout is None:
            return ()
        for x in self.layout.lines[bisect.bisect_right(self.starts, lo) :]:
            if x.line >= hi:
                break
            if x.word == word and (column is None or x.column == column):
                return (x.line,)
        return ()

    def _lines_after(self, node: object, count: int) -> list[tuple[int, ...]]:
        """The source lines of the ``count`` statement lines after ``node``'s first line (the strings
        of a ``chunks:`` block), or no lines when the source does not have them."""
        keys = _key(node)
        if not keys or self.layout is None:
            return [()] * count
        i = bisect.bisect_right(self.starts, keys[0])
        found: list[tuple[int, ...]] = [(x.line,) for x in self.layout.lines[i : i + count]]
        return found if len(found) == count else [()] * count

    # -- the tree ----------------------------------------------------------------------------------------

    def element(self, e: n.ReplyElement, indent: str) -> None:
        if isinstance(e, n.Chunks):
            self.emit(f"{indent}chunks:", indent, _key(e))
            inner = indent + INDENT
            for chunk, keys in zip(e.chunks, self._lines_after(e, len(e.chunks)), strict=True):
                self.emit(f"{inner}{string_literal(chunk, inner)}", inner, keys)
            return
        self.emit(_element_text(e, indent), indent, _key(e))

    def elements(self, elements: Sequence[n.ReplyElement], indent: str) -> None:
        for e in canonical_elements(elements):
            self.element(e, indent)

    def reply(self, reply: n.Reply, indent: str, keyword: str = "reply") -> None:
        if isinstance(reply, n.ReplyRef):
            self.emit(f"{indent}{keyword} like {reply.qualified}", indent, _key(reply))
        elif _is_echo(reply):
            keys = tuple(dict.fromkeys(_key(reply) + _key(reply.elements[0])))
            self.emit(f"{indent}{keyword} echo", indent, keys)
        else:
            self.emit(f"{indent}{keyword}:", indent, _key(reply))
            self.elements(reply.elements, indent + INDENT)

    def conditions(self, header: str, conditions: Sequence[n.Condition], indent: str) -> None:
        if not conditions:
            return
        self.emit(f"{indent}{header}:", indent, self._line_before(conditions[0]))
        inner = indent + INDENT
        for c in conditions:
            self.emit(inner + describe.condition(c), inner, _key(c))

    def step(self, step: n.Step, indent: str, blank: bool = False) -> None:
        inner = indent + INDENT
        self.emit(f"{indent}step {step.name}:", indent, _key(step), blank)
        self.conditions("when", step.conditions, inner)
        if step.after is not None:
            self.emit(f"{inner}after {step.after.step}", inner, _key(step.after))
        for c in step.captures:
            self.emit(f"{inner}capture {c.name} from {describe.subject(c.subject)} {c.regex}", inner, _key(c))
        self.conditions("expect", step.expects, inner)
        if step.consumption.kind == "repeat":
            self.emit(f"{inner}repeat {step.consumption.count}", inner, _key(step.consumption))
        elif step.consumption.kind == "always":
            self.emit(f"{inner}always", inner, _key(step.consumption))
        if step.reply is not None:
            self.reply(step.reply, inner)

    def scenario(self, s: n.Scenario, blank: bool) -> None:
        first = len(self.out)
        self.emit(f"scenario {describe.quote(s.name)}:", "", _key(s), blank)
        start = s.span.line
        end = s.steps[0].span.line if s.steps and s.steps[0].span.line > 0 else s.span.end_line + 1
        if s.priority != 0:
            self.emit(f"{INDENT}priority {s.priority}", INDENT, self._find(start, end, "priority"))
        if s.tags:
            self.emit(f"{INDENT}tags " + ", ".join(_tag(t) for t in s.tags), INDENT, self._find(start, end, "tags"))
        if s.order_any:
            self.emit(f"{INDENT}order any", INDENT, self._find(start, end, "order"))
        for let in s.lets:
            self.emit(f"{INDENT}let {let.name} = {string_literal(let.value, INDENT)}", INDENT, _key(let))
        self.conditions("when", s.conditions, INDENT)
        for i, step in enumerate(s.steps):
            self.step(step, INDENT, blank=i > 0 or len(self.out) > first + 1)

    def defaults(self, defaults: n.Defaults, blank: bool) -> None:
        self.emit("defaults:", "", _key(defaults), blank)
        self.elements(defaults.elements, INDENT)
        if defaults.fallback is not None:
            self.reply(defaults.fallback, INDENT, keyword="fallback")

    def mcp_server(self, server: n.McpServer, blank: bool) -> None:
        self.emit(f"mcp server {describe.quote(server.name)}:", "", _key(server), blank)
        inner = INDENT + INDENT
        for tool in server.tools:
            described = f" {describe.quote(tool.description)}" if tool.description else ""
            self.emit(f"{INDENT}tool {tool.name}{described}:", INDENT, _key(tool))
            end = tool.span.end_line + 1
            self.emit(f"{inner}input {json_text(tool.input_schema)}", inner, self._find(tool.span.line, end, "input"))
            if tool.output_schema is not None:
                keys = self._find(tool.span.line, end, "output")
                self.emit(f"{inner}output {json_text(tool.output_schema)}", inner, keys)
        for res in server.resources:
            described = f" {describe.quote(res.description)}" if res.description else ""
            self.emit(f"{INDENT}resource {describe.quote(res.uri)}{described}:", INDENT, _key(res))
            end = res.span.end_line + 1
            if res.mime != "text/plain":
                keys = self._find(res.span.line, end, "mime")
                self.emit(f"{inner}mime {describe.quote(res.mime)}", inner, keys)
            keys = self._find(res.span.line, end, "text")
            self.emit(f"{inner}text {string_literal(res.text, inner)}", inner, keys)
        for prompt in server.prompts:
            described = f" {describe.quote(prompt.description)}" if prompt.description else ""
            self.emit(f"{INDENT}prompt {prompt.name}{described}:", INDENT, _key(prompt))
            for arg in prompt.arguments:
                about = f" {describe.quote(arg.description)}" if arg.description else ""
                optional = "" if arg.required else " optional"
                self.emit(f"{inner}argument {arg.name}{about}{optional}", inner, _key(arg))
            for message in prompt.messages:
                self.emit(f"{inner}{message.role} {string_literal(message.text, inner)}", inner, _key(message))

    def file(self, f: n.ScriptFile) -> None:
        if f.version is not None:
            self.emit(f"mockllm {f.version}", "", self._find(0, f.span.end_line + 1, "mockllm", column=1))
        for i, u in enumerate(f.uses):
            self.emit(f"use {describe.quote(u.path)} as {u.alias}", "", _key(u), blank=i == 0 and bool(self.out))
        if f.defaults is not None and (f.defaults.elements or f.defaults.fallback is not None):
            self.defaults(f.defaults, blank=bool(self.out))
        for r in f.replies:
            self.emit(f"reply {r.name}:", "", _key(r), blank=bool(self.out))
            self.elements(r.elements, INDENT)
        for server in f.mcp_servers:
            self.mcp_server(server, blank=bool(self.out))
        for s in f.scenarios:
            self.scenario(s, blank=bool(self.out))


def format_reply_element(e: n.ReplyElement, indent: str = "") -> str:
    """One reply element, as the lines (without a final newline) at ``indent``."""
    p = _Printer()
    p.element(e, indent)
    return p.text()


def format_reply(reply: n.Reply, indent: str = "", keyword: str = "reply") -> str:
    """A step's reply (``keyword`` = "reply") or a file's fallback (``keyword`` = "fallback")."""
    p = _Printer()
    p.reply(reply, indent, keyword)
    return p.text()


def format_step(step: n.Step, indent: str = "") -> str:
    """A step block at ``indent`` (without a final newline)."""
    p = _Printer()
    p.step(step, indent)
    return p.text()


def format_file(f: n.ScriptFile, source: str | None = None) -> str:
    """The whole file in canonical layout, ending with one newline ("" for an empty file).

    ``source``, the text ``f`` was parsed from, brings its comments along (see the module docstring);
    without it the output holds none."""
    layout = scan(source) if source is not None else None
    p = _Printer(layout)
    p.file(f)
    if layout is None or not layout.comments:
        text = p.text()
        return text + "\n" if text else ""
    return "".join(line + "\n" for line in _with_comments(p.out, layout))


@attrs.frozen
class Reformatted:
    """What ``fmt`` makes of one file's text: the canonical text, or why it leaves the text alone
    (``errors``: the syntax errors that stop it; ``unsafe``: the canonical layout would change the
    script's meaning or lose a comment -- a formatter bug)."""

    text: str | None
    errors: tuple[Diagnostic, ...] = ()
    unsafe: bool = False


def reformat(text: str, file: str) -> Reformatted:
    """``text`` in canonical layout, checked to parse back to the same tree with the same comments.
    The one path both ``mockllm fmt`` and the language server's formatting take."""
    from mockllm.dsl.diagnostics import has_errors
    from mockllm.dsl.format.comments import comment_fragments
    from mockllm.dsl.parse.parser import parse_text

    tree, diagnostics = parse_text(text, file)
    if tree is None or has_errors(diagnostics):
        return Reformatted(None, tuple(d for d in diagnostics if d.is_error))
    new = format_file(tree, text)
    if new != text:
        again, _ = parse_text(new, tree.path)
        if again != tree or comment_fragments(new) != comment_fragments(text):
            return Reformatted(None, unsafe=True)
    return Reformatted(new)


# ---------------------------------------------------------------------------------------------------------
# Comments


def _with_comments(stmts: list[_Stmt], layout: SourceLayout) -> Iterator[str]:
    """The lines of ``stmts`` with the source's comments put back."""
    placed = _Placement(stmts, layout)
    blank = layout.blank
    last = ""  # the last row written ("" at the start too: no blank line opens the file)

    def lines(rows: list[str]) -> Iterator[str]:
        nonlocal last
        for row in rows:  # a row is a blank line, a comment, or a statement (maybe of several lines)
            if row == "" and last == "":
                continue  # at most one blank line in a row, none at the start
            last = row
            yield row

    def run(comments: list[Comment], indent: str, keep_first_blank: bool) -> list[str]:
        rows: list[str] = []
        for k, c in enumerate(comments):
            if (k > 0 or keep_first_blank) and c.line - 1 in blank:
                rows.append("")
            rows.append(indent + c.text)
        return rows

    opening = run(placed.opening, "", False)
    yield from lines([*opening, ""] if opening and stmts else opening)
    for i, s in enumerate(stmts):
        rows: list[str] = []
        group = placed.leading.get(i, [])
        blank_before = bool(group) and group[0].line - 1 in blank
        blank_after = bool(group) and group[-1].line + 1 in blank
        if s.blank and group and not blank_before and blank_after:
            rows += run(group, s.indent, False)  # a comment run right under the block above: keep it there
            rows.append("")
        else:
            if s.blank:
                rows.append("")
            rows += run(group, s.indent, False)
            if blank_after:
                rows.append("")
        text = s.text
        if i in placed.trailing:
            text += "  " + "  ".join(c.text for c in placed.trailing[i])
        rows.append(text)
        rows += run(placed.below.get(i, []), s.indent, False)
        j = i
        while j >= 0 and placed.ends[j] == i:  # the blocks that end here, innermost first
            rows += run(placed.dangling.get(j, []), stmts[j].indent + INDENT, True)
            j = placed.parents[j]
        yield from lines(rows)
    yield from lines(run(placed.at_end, "", True))


class _Placement:
    """Which statement each comment goes with: before it (``leading``), at the end of its last line
    (``trailing``), at the end of its block (``dangling``), or at the end of the file (``at_end``)."""

    def __init__(self, stmts: list[_Stmt], layout: SourceLayout):
        self.stmts = stmts
        self.layout = layout
        self.starts = [x.line for x in layout.lines]
        self.index: dict[int, int] = {}
        for i, s in enumerate(stmts):
            for key in s.keys:
                self.index.setdefault(key, i)
        self.ends, self.parents = _tree(len(s.indent) for s in stmts)
        _, self.source_parents = _tree([x.column for x in layout.lines])
        self.leading: dict[int, list[Comment]] = {}
        self.below: dict[int, list[Comment]] = {}
        self.trailing: dict[int, list[Comment]] = {}
        self.dangling: dict[int, list[Comment]] = {}
        self.at_end: list[Comment] = []
        self.opening: list[Comment] = []
        first = layout.lines[0] if layout.lines else None
        last_blank = max((b for b in layout.blank if first is not None and b < first.line), default=0)
        header = first.line + 1 if first is not None and first.word == "mockllm" and first.line in self.index else 0
        for c in layout.comments:
            if c.own_line and c.line < last_blank:
                # above the first statement and a blank line: the file's opening comments stay on top
                self.opening.append(c)
            elif c.own_line and c.line == header:
                # right under `mockllm N`: the file's description stays there, not with the statement below
                self.below.setdefault(self.index[first.line if first else 0], []).append(c)
                header += 1
            else:
                self.place(c)

    def place(self, c: Comment) -> None:
        lines = self.layout.lines
        after = bisect.bisect_right(self.starts, c.line)  # the first statement line below the comment
        if not c.own_line:
            here = after - 1  # the statement the comment's line belongs to
            if here >= 0 and lines[here].line in self.index:
                self.trailing.setdefault(self.index[lines[here].line], []).append(c)
            else:  # a statement the layout leaves out (`priority 0`): the comment goes to the next one
                self._before(after, c)
            return
        above = after - 1  # the statement line above the comment
        if above >= 0 and lines[above].end_line >= c.line:  # inside a statement spanning lines
            self._before(above, c)
        elif after < len(lines) and c.column <= lines[after].column:
            self._before(after, c)
        else:
            self._dangling(above, c)

    def _before(self, k: int, c: Comment) -> None:
        """Before statement line ``k`` of the source, or the first one after it that is in the output."""
        lines = self.layout.lines
        while k < len(lines):
            i = self.index.get(lines[k].line)
            if i is not None:
                self.leading.setdefault(i, []).append(c)
                return
            k += 1
        self.at_end.append(c)

    def _dangling(self, k: int, c: Comment) -> None:
        """At the end of the innermost block around source statement line ``k`` that the comment is
        indented into."""
        lines = self.layout.lines
        while k >= 0:
            has_body = k + 1 < len(lines) and lines[k + 1].column > lines[k].column
            if has_body and lines[k].column < c.column and lines[k].line in self.index:
                break
            k = self.source_parents[k]
        i = self.index[lines[k].line] if k >= 0 else -1
        while i >= 0 and self.ends[i] == i:  # no body in the output (`reply:` + `echo` is `reply echo`)
            i = self.parents[i]
        if i < 0:
            self.at_end.append(c)
        else:
            self.dangling.setdefault(i, []).append(c)


def _tree(depths: Iterator[int] | Sequence[int]) -> tuple[list[int], list[int]]:
    """For items of an indented outline (by depth): the index of the last item of each one's block,
    and each one's parent (-1 at the top)."""
    ends: list[int] = []
    parents: list[int] = []
    stack: list[tuple[int, int]] = []  # (depth, index)
    for i, depth in enumerate(depths):
        while stack and stack[-1][0] >= depth:
            ends[stack.pop()[1]] = i - 1
        parents.append(stack[-1][1] if stack else -1)
        ends.append(i)
        stack.append((depth, i))
    last = len(ends) - 1
    for _, i in stack:
        ends[i] = last
    return ends, parents
