"""Template checks: malformed ``{{…}}`` templates, names not in scope (with a did-you-mean), and
captures used by a step that can run before the step capturing them."""

from __future__ import annotations

from collections.abc import Collection, Mapping

import attrs

from mockllm.dsl.check.common import Reporter, did_you_mean
from mockllm.dsl.check.scopes import EarlierCaptures, LaterCaptures, ScenarioCaptures, StepCaptures
from mockllm.dsl.diagnostics import Related
from mockllm.dsl.span import Span
from mockllm.dsl.tree.nodes import (
    Body,
    Chunks,
    Condition,
    Error,
    Header,
    NamedReply,
    Refusal,
    Regex,
    ReplyElement,
    ReplyRef,
    Scenario,
    StreamError,
    Text,
    Thinking,
    ToolCall,
)
from mockllm.dsl.tree.templates import BUILTIN_NAMES, strings_in
from mockllm.dsl.tree.templates import parse as parse_template
from mockllm.errors import TemplateError


@attrs.frozen
class Scope:
    """Template names a reply may use."""

    lets: frozenset[str] = frozenset()
    captures: Collection[str] = frozenset()
    later: Mapping[str, str] = attrs.field(factory=dict)  # capture name -> step that cannot run first
    where: str = ""  # "step `x`", for messages about a named reply used there
    use_span: Span | None = None
    earlier: Collection[str] = frozenset()  # captures of the steps that can run before this one (not itself)

    def known(self, name: str) -> bool:
        return (
            name in BUILTIN_NAMES
            or (name.startswith("tool_result.") and len(name) > len("tool_result."))
            or name in self.lets
            or name in self.captures
        )

    def candidates(self) -> set[str]:
        return set(BUILTIN_NAMES) | set(self.lets) | set(self.captures)


def step_scopes(sc: Scenario, preds: list[int | None]) -> list[Scope]:
    """The template scope of each step: the scenario's lets, and the captures of the steps that can
    run before it (``preds`` gives the step each step follows; see :mod:`check_scopes`)."""
    lets = frozenset(let.name for let in sc.lets)
    captures = ScenarioCaptures(sc, preds)
    return [
        Scope(
            lets=lets,
            captures=StepCaptures(captures, i),
            later=LaterCaptures(captures, i),
            where=f"step `{step.name}`",
            earlier=EarlierCaptures(captures, i),
        )
        for i, step in enumerate(sc.steps)
    ]


def _strings(el: ReplyElement) -> list[tuple[str, bool]]:
    """The strings of a reply element in source order, each with whether it is a template."""
    if isinstance(el, Text | Thinking | Refusal):
        return [(el.text, True)]
    if isinstance(el, Chunks):
        return [(c, True) for c in el.chunks]
    if isinstance(el, Error | StreamError):
        return [(el.message, True)]
    if isinstance(el, Header):
        return [(el.name, False), (el.value, True)]
    if isinstance(el, ToolCall):
        out = [(s, True) for s in strings_in(el.arguments)]
        if el.id is not None:
            out.append((el.id, True))
        return out
    if isinstance(el, Body):
        return [(s, True) for s in strings_in(el.body)]
    return []


def _openings(text: str) -> list[int]:
    out: list[int] = []
    at = text.find("{{")
    while at >= 0:
        out.append(at)
        at = text.find("{{", at + 2)
    return out


def template_refs(r: Reporter, el: ReplyElement, file: str, scope: Scope | None) -> None:
    """Report malformed templates (always) and unknown names (when a scope is given)."""
    for ref_name, ref_span, problem in _refs(r, el, file):
        if problem is not None:
            if scope is None or scope.use_span is None:
                r.err("bad-template", problem, ref_span, hint='write a literal `{{` as `{{"{{"}}`')
            continue
        if scope is not None:
            _check_name(r, ref_name, ref_span, scope, None)


def named_templates(r: Reporter, named: NamedReply, file: str, ref: ReplyRef, scope: Scope) -> None:
    target = file
    if ref.alias is not None:
        target = r.library.aliases.get(file, {}).get(ref.alias, file)
    for el in named.elements:
        for ref_name, ref_span, problem in _refs(r, el, target):
            if problem is None:
                _check_name(r, ref_name, ref_span, scope, named.name)


def _refs(r: Reporter, el: ReplyElement, file: str) -> list[tuple[str, Span, str | None]]:
    out: list[tuple[str, Span, str | None]] = []
    span = r.at(el.span, file)
    seen = 0  # `{{` openings in earlier strings of this element
    for text, is_template in _strings(el):
        openings = _openings(text)
        if is_template and openings:
            try:
                tpl = parse_template(text)
            except TemplateError as exc:
                k = openings.index(exc.offset) if exc.offset in openings else 0
                where = r.loc.find(span, "{{", nth=seen + k)
                out.append(("", where or span, str(exc)))
            else:
                for ref in tpl.names:
                    k = openings.index(ref.offset) if ref.offset in openings else 0
                    end = text.find("}}", ref.offset)
                    where = r.loc.find(span, "{{", nth=seen + k)
                    if where is not None:
                        where = attrs.evolve(where, end_column=where.column + (end + 2 - ref.offset))
                    out.append((ref.name, where or span, None))
        seen += len(openings)
    return out


def _check_name(r: Reporter, name: str, span: Span, scope: Scope, reply_name: str | None) -> None:
    if scope.known(name):
        return
    related = []
    via = ""
    if reply_name is not None and scope.use_span is not None:
        via = f" in reply `{reply_name}`, used by {scope.where}"
        related.append(Related(scope.use_span, f"used by {scope.where}"))
    if name in scope.later:
        r.err(
            "capture-order",
            f"`{{{{{name}}}}}`{via} is captured by step `{scope.later[name]}`, which cannot run before this step",
            span,
            hint=f"capture `{name}` in this step or one that runs before it",
            related=related,
        )
        return
    hint = did_you_mean(name, scope.candidates(), "`{{{{{}}}}}`")
    if hint is None:
        hint = (
            "template names are `let` variables, captures, `request.model`, `request.last_user_message` "
            "and `tool_result.NAME`"
        )
    r.err("unknown-name", f"unknown template name `{{{{{name}}}}}`{via}", span, hint=hint, related=related)


def condition_templates(r: Reporter, cond: Condition, file: str, scope: Scope, own: frozenset[str]) -> None:
    """``{{name}}`` in a condition's value (``contains "{{city}}"``) reads a capture of this conversation
    or a let: report a malformed template, an unknown name, and a capture taken only by this step (its
    conditions are checked before its captures are taken)."""
    value = cond.predicate.value
    text = value.pattern if isinstance(value, Regex) else value
    if not isinstance(text, str) or "{{" not in text:
        return
    span = r.at(cond.predicate.span if cond.predicate.span.line else cond.span, file)
    openings = _openings(text)
    try:
        tpl = parse_template(text)
    except TemplateError as exc:
        k = openings.index(exc.offset) if exc.offset in openings else 0
        r.err(
            "bad-template", str(exc), r.loc.find(span, "{{", nth=k) or span, hint='write a literal `{{` as `{{"{{"}}`'
        )
        return
    for ref in tpl.names:
        k = openings.index(ref.offset) if ref.offset in openings else 0
        where = r.loc.find(span, "{{", nth=k)
        if where is not None:
            end = text.find("}}", ref.offset)
            where = attrs.evolve(where, end_column=where.column + (end + 2 - ref.offset))
        at = where or span
        name = ref.name
        if name in scope.lets or name in scope.earlier:
            continue
        if name in own:
            r.err(
                "capture-order",
                f"`{{{{{name}}}}}` in a condition is captured by this same step, but a step's conditions are "
                "checked before its captures are taken",
                at,
                hint=f"capture `{name}` in a step that runs before this one",
            )
        elif name.startswith("tool_result.") or name in BUILTIN_NAMES:
            r.err(
                "unknown-name",
                f"`{{{{{name}}}}}` cannot be used in a condition: conditions read captures and `let` variables",
                at,
                hint='compare the subject itself, e.g. `tool result for "NAME" contains "…"`',
            )
        else:
            _check_name(r, name, at, attrs.evolve(scope, captures=scope.earlier), None)
