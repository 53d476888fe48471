"""Step order checks: ``after`` lines naming no step, ``after`` under ``order any`` (no effect),
and steps that can never run because the step they follow is never used up."""

from __future__ import annotations

from mockllm.dsl.check.common import Reporter, did_you_mean, word_list
from mockllm.dsl.diagnostics import Related
from mockllm.dsl.tree.nodes import Scenario

#: the position of a conversation before any step of a scenario: what its first step follows
START = -1


def predecessors(r: Reporter, sc: Scenario, file: str) -> list[int | None]:
    """The step each step follows: START, a step index, or None for an unknown ``after`` (reported)."""
    index: dict[str, int] = {}
    for i, step in enumerate(sc.steps):
        index.setdefault(step.name, i)
    preds: list[int | None] = []
    for i, step in enumerate(sc.steps):
        if step.after is None:
            preds.append(START if i == 0 else i - 1)
            continue
        after_span = r.name_span(step.after.span, step.after.step, file, skip=len("after"), last=True)
        if step.after.step not in index:
            others = [s.name for s in sc.steps if s.name != step.name]
            r.err(
                "unknown-step",
                f'`after {step.after.step}`: scenario "{sc.name}" has no step `{step.after.step}`',
                after_span,
                hint=did_you_mean(step.after.step, others)
                or (f"its steps are {word_list(others, 'and')}" if others else "name a step of this scenario"),
            )
            preds.append(None)
        else:
            preds.append(index[step.after.step])
        if sc.order_any:
            r.warn(
                "after-ignored",
                f'`after {step.after.step}` has no effect: scenario "{sc.name}" has `order any`',
                r.at(step.after.span, file),
                hint="remove the `after` line, or remove `order any` to run the steps in order",
            )
    return preds


def check_reachable(r: Reporter, sc: Scenario, preds: list[int | None], file: str) -> None:
    """An error for each step no sequence of requests can reach (scenarios in order only)."""
    steps = sc.steps
    reach = reachable(sc, preds)
    for i, step in enumerate(steps):
        p = preds[i]
        if reach[i] or p is None or p == START:
            continue
        prev = steps[p]
        if (prev.consumption.max_uses or 0) <= 0 and prev.consumption.kind == "repeat":
            continue  # `repeat 0` is reported on its own
        head = r.name_span(step.span, step.name, file, skip=len("step"))
        where = r.at(step.after.span, file) if step.after is not None else head
        hint = "give it an `after` line naming a step that can be used up, or use `order any`"
        if p == i:
            r.err(
                "unreachable-step",
                f"step `{step.name}` comes `after` itself, so it can never run",
                where,
                hint="name the step it should follow",
            )
        elif prev.consumption.kind == "always":
            how = f"`after {prev.name}` names" if step.after is not None else "it follows"
            r.err(
                "unreachable-step",
                f"step `{step.name}` can never run: {how} step `{prev.name}`, "
                "which is `always` and so is never used up",
                where,
                hint=hint,
                related=[Related(r.at(prev.consumption.span, file), f"step `{prev.name}` is `always`")],
            )
        else:
            how = f"`after {prev.name}` names" if step.after is not None else "it follows"
            r.err(
                "unreachable-step",
                f"step `{step.name}` can never run: {how} step `{prev.name}`, which can never run",
                where,
                hint=hint,
            )


def reachable(sc: Scenario, preds: list[int | None]) -> list[bool]:
    """Whether each step can ever run: it follows START (or an unknown step, reported on its own), or
    a reachable step that can be used up. Each step is decided once, from its predecessor (linear in
    steps, whatever order the `after` lines come in); a cycle of `after` lines is never reachable."""
    steps = sc.steps
    known: list[bool | None] = [None] * len(steps)
    for first in range(len(steps)):
        path: list[int] = []
        on_path: set[int] = set()
        i = first
        while known[i] is None and i not in on_path:
            p = preds[i]
            if p is None or p == START:
                known[i] = True
                break
            if p == i or steps[p].consumption.max_uses is None:
                known[i] = False
                break
            path.append(i)
            on_path.add(i)
            i = p
        verdict = bool(known[i]) if i not in on_path else False  # back on the path: a cycle
        for j in reversed(path):
            known[j] = verdict
    return [bool(k) for k in known]
