"""Semantic checks: everything the parser cannot see, reported all at once.

:func:`check` walks a loaded :class:`~mockllm.dsl.parse.loader.Library` and returns every semantic problem,
sorted by position: unknown or duplicate names, predicates that cannot apply to their subject, typed
literal mismatches, bad regexes, template names that are not in scope, unreachable steps, reply
elements that contradict each other, and warnings for scenarios replaced by a later file or a second
fallback. Nothing here raises for a user's mistake and nothing does I/O.

The walk and the ``defaults:`` checks live here; each kind of check has its module:
:mod:`~mockllm.dsl.check.names`, :mod:`~mockllm.dsl.check.predicates`,
:mod:`~mockllm.dsl.check.templates`, :mod:`~mockllm.dsl.check.reachability` and
:mod:`~mockllm.dsl.check.replies`, over the shared :mod:`~mockllm.dsl.check.common`.
"""

from __future__ import annotations

import re

import attrs

from mockllm.dsl.check.common import Reporter
from mockllm.dsl.check.mcp import check_mcp_servers, check_mcp_step
from mockllm.dsl.check.media import check_media_step
from mockllm.dsl.check.names import check_file_names, check_ref, check_replacements, check_scenario_names
from mockllm.dsl.check.predicates import check_capture, check_condition
from mockllm.dsl.check.reachability import check_reachable, predecessors
from mockllm.dsl.check.replies import ELEMENT_WORDS, check_elements
from mockllm.dsl.check.templates import Scope, condition_templates, named_templates, step_scopes, template_refs
from mockllm.dsl.check.vectors import check_reaches_inputs
from mockllm.dsl.diagnostics import Diagnostic, Related, sort_key
from mockllm.dsl.parse.loader import Library
from mockllm.dsl.span import Span
from mockllm.dsl.tree.nodes import DEFAULTABLE_TYPES, ReplyBlock, ReplyElement, ReplyRef, Scenario, ScriptFile, Step

__all__ = ["check"]

DEFAULTS_LINE = re.compile(r"defaults\s*:")


def check(library: Library) -> list[Diagnostic]:
    """Every semantic problem of the library at once, sorted by position."""
    r = Reporter(library)
    for f in library.files:
        _check_file(r, f)
    check_replacements(r)
    _check_fallbacks(r)
    return sorted(r.out, key=sort_key)


def _check_file(r: Reporter, f: ScriptFile) -> None:
    check_file_names(r, f)
    for nr in f.replies:
        check_elements(r, nr.elements, f.path)
        for el in nr.elements:
            template_refs(r, el, f.path, None)
    _check_defaults(r, f)
    _check_duplicate_defaults(r, f)
    check_mcp_servers(r, f)
    for sc in f.scenarios:
        _check_scenario(r, sc, f.path)


def _check_scenario(r: Reporter, sc: Scenario, file: str) -> None:
    check_scenario_names(r, sc, file)
    for cond in sc.conditions:
        check_condition(r, cond, file)
        condition_templates(r, cond, file, Scope(lets=frozenset(let.name for let in sc.lets)), frozenset())
    preds = predecessors(r, sc, file)
    for step, scope in zip(sc.steps, step_scopes(sc, preds), strict=True):
        _check_step(r, step, file, scope)
        _check_step_inputs(r, sc, step, file)
        check_mcp_step(r, sc, step, file)
    if not sc.order_any:
        check_reachable(r, sc, preds, file)


def _check_step(r: Reporter, step: Step, file: str, scope: Scope) -> None:
    own = frozenset(cap.name for cap in step.captures)
    for cond in (*step.conditions, *step.expects):
        check_condition(r, cond, file)
    for cond in step.conditions:
        condition_templates(r, cond, file, scope, own)
    for cond in step.expects:  # an `expect:` is checked after the step matched: its own captures are taken
        condition_templates(r, cond, file, attrs.evolve(scope, earlier=scope.captures), own)
    for cap in step.captures:
        check_capture(r, cap, file)
    c = step.consumption
    if c.kind == "repeat" and (c.count is None or c.count < 1):
        r.err(
            "bad-repeat",
            f"`repeat {c.count}` would never let step `{step.name}` run",
            r.at(c.span, file),
            hint="repeat at least once (`repeat 1` is the default), or remove the step",
        )
    if step.reply is None:
        r.err(
            "missing-reply",
            f"step `{step.name}` has no reply",
            r.name_span(step.span, step.name, file, skip=len("step")),
            hint="add a `reply:` block, `reply like NAME` or `reply echo`",
        )
    elif isinstance(step.reply, ReplyBlock):
        check_elements(r, step.reply.elements, file)
        for el in step.reply.elements:
            template_refs(r, el, file, scope)
    else:
        named = check_ref(r, step.reply, file, "reply like")
        if named is not None:
            named_templates(r, named, file, step.reply, attrs.evolve(scope, use_span=r.at(step.reply.span, file)))


def _check_step_inputs(r: Reporter, sc: Scenario, step: Step, file: str) -> None:
    if isinstance(step.reply, ReplyBlock):
        elements: tuple[ReplyElement, ...] = step.reply.elements
    elif isinstance(step.reply, ReplyRef):
        named = r.library.named_reply(file, step.reply)
        if named is None:
            return
        elements = named.elements
    else:
        return
    check_reaches_inputs(r, elements, (*sc.conditions, *step.conditions), file)
    check_media_step(r, elements, (*sc.conditions, *step.conditions), file)


# ---------------------------------------------------------------------------------------------------------
# defaults: and the fallback


def _check_defaults(r: Reporter, f: ScriptFile) -> None:
    d = f.defaults
    if d is None:
        return
    for el in d.elements:
        if not isinstance(el, DEFAULTABLE_TYPES):
            r.err(
                "bad-default",
                f"`{ELEMENT_WORDS[type(el)]}` cannot be a default",
                r.at(el.span, f.path),
                hint="`defaults:` holds `latency`, `stream` and `header` lines, and the fallback",
            )
    check_elements(r, d.elements, f.path, "`defaults:` block")
    for el in d.elements:
        template_refs(r, el, f.path, Scope())
    fb = d.fallback
    if isinstance(fb, ReplyBlock):
        check_elements(r, fb.elements, f.path)
        for el in fb.elements:
            template_refs(r, el, f.path, Scope())
    elif isinstance(fb, ReplyRef):
        named = check_ref(r, fb, f.path, "fallback like")
        if named is not None:
            named_templates(r, named, f.path, fb, Scope(where="the fallback", use_span=r.at(fb.span, f.path)))


def _check_duplicate_defaults(r: Reporter, f: ScriptFile) -> None:
    """``defaults:`` twice in one file (the tree holds one, so look at the text)."""
    text = r.library.sources.get(f.path)
    if text is None or f.path.endswith(".json"):
        return
    reported = {(d.span.file, d.span.line) for d in r.library.diagnostics}
    in_string = False
    first: int | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not in_string and DEFAULTS_LINE.match(line):
            if first is None:
                first = number
            elif (f.path, number) not in reported:
                r.err(
                    "duplicate-defaults",
                    f"this file already has a `defaults:` block (line {first})",
                    Span(f.path, number, 1, number, len("defaults") + 1),
                    hint="merge the two blocks into one",
                    related=[
                        Related(Span(f.path, first, 1, first, len("defaults") + 1), "the first `defaults:` block")
                    ],
                )
        if line.split("#", 1)[0].count('"""') % 2 == 1 or (in_string and line.count('"""') % 2 == 1):
            in_string = not in_string


def _fallback_elements(r: Reporter, f: ScriptFile) -> tuple[ReplyElement, ...] | None:
    fb = f.defaults.fallback if f.defaults else None
    if fb is None:
        return None
    if isinstance(fb, ReplyBlock):
        return fb.elements
    named = r.library.named_reply(f.path, fb)
    return named.elements if named else None


def _check_fallbacks(r: Reporter) -> None:
    """A warning for each fallback that differs from the one in use (the first in load order)."""
    first: tuple[ScriptFile, tuple[ReplyElement, ...]] | None = None
    for f in r.library.files:
        elements = _fallback_elements(r, f)
        if elements is None or f.defaults is None or f.defaults.fallback is None:
            continue
        if first is None:
            first = (f, elements)
            continue
        if elements != first[1]:
            assert first[0].defaults is not None and first[0].defaults.fallback is not None
            kept = r.at(first[0].defaults.fallback.span, first[0].path)
            r.warn(
                "ignored-fallback",
                f"this fallback is not used: {kept.location() if kept.line else first[0].path} loads first "
                "and its different fallback answers unmatched requests",
                r.at(f.defaults.fallback.span, f.path),
                hint="a library has one fallback, the first in load order; remove one of them",
                related=[Related(kept, "the fallback in use")],
            )
