"""The "no step matched" report: the nearest candidate steps and why each failed.

Nearest means: the steps eligible in this conversation's state with the fewest failing conditions
(at most three), plus steps whose conditions all hold but that are not eligible now, with the
reason (used up, or waiting for another step)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from mockllm.dsl.machines.compiled import START, CompiledStep, Machine
from mockllm.dsl.tree import describe
from mockllm.runtime.engine.conditions import capture, capture_seen, evaluate
from mockllm.runtime.engine.conversations import MachineState
from mockllm.runtime.engine.outcome import Candidate, FailedCondition, NoMatchReport
from mockllm.runtime.request import ChatRequest

PREFIX = "mockllm: no step matched"
MAX_NEAREST = 3
MAX_WAITING = 3


@attrs.frozen
class MachineView:
    """A machine with its state in the conversation, and its eligible steps in that state."""

    machine: Machine
    state: MachineState
    eligible: tuple[int, ...]


def failures(step: CompiledStep, chat: ChatRequest) -> tuple[FailedCondition, ...]:
    """Every condition of ``step`` that does not hold for ``chat``; when they all hold, the captures
    whose regex does not match."""
    out: list[FailedCondition] = []
    for cond in step.conditions:
        ok, seen = evaluate(cond, chat)
        if not ok:
            out.append(FailedCondition(describe.condition(cond), seen))
    if out:
        return tuple(out)
    for cap in step.captures:
        if capture(cap, chat) is None:
            text = f"capture {cap.name} from {describe.subject(cap.subject)} {cap.regex}"
            out.append(FailedCondition(text, capture_seen(cap, chat)))
    return tuple(out)


def position_name(machine: Machine, position: int) -> str:
    return "start" if position == START else machine.steps[position].name


def ineligible_reason(machine: Machine, state: MachineState, step: CompiledStep) -> str:
    used = state.used(step.index)
    if step.max_uses is not None and used >= step.max_uses:
        times = "once" if step.max_uses == 1 else f"{step.max_uses} times"
        return f"is used up in this conversation (it runs {times})"
    at = position_name(machine, state.position)
    if step.predecessor == START:
        return f"runs only at the start of the scenario; this conversation is at `{at}`"
    waits = machine.steps[step.predecessor].name
    return f"waits for step `{waits}` to be used up; this conversation is at `{at}`"


def _describe_request(chat: ChatRequest, conversation: str) -> str:
    return (
        f"provider {chat.provider}, endpoint {describe.quote(chat.endpoint)}, "
        f"model {describe.quote(chat.model)}, conversation {describe.quote(conversation)}"
    )


def _candidate_lines(c: Candidate) -> list[str]:
    head = f'  - scenario "{c.scenario}", step `{c.step}` ({c.span.location()})'
    if c.reason:
        return [f"{head}: {c.reason}"]
    lines = [f"{head}:"]
    lines.extend(f"      {f.condition} — seen {f.seen}" for f in c.failed)
    return lines


def build_report(chat: ChatRequest, conversation: str, views: Sequence[MachineView]) -> NoMatchReport:
    nearest: list[tuple[int, int, Candidate]] = []
    waiting: list[Candidate] = []
    order = 0
    for view in views:
        machine = view.machine
        eligible = set(view.eligible)
        for step in machine.steps:
            failed = failures(step, chat)
            if step.index in eligible:
                nearest.append((len(failed), order, Candidate(machine.name, step.name, step.span, failed)))
                order += 1
            elif not failed and len(waiting) < MAX_WAITING:
                reason = ineligible_reason(machine, view.state, step)
                waiting.append(Candidate(machine.name, step.name, step.span, (), reason))
    nearest.sort(key=lambda t: (t[0], t[1]))
    candidates = tuple(c for _, _, c in nearest[:MAX_NEAREST]) + tuple(waiting)

    lines = [f"{PREFIX} this request ({_describe_request(chat, conversation)})."]
    if not views:
        lines.append("The library has no scenarios; load one or add a fallback.")
    elif not candidates:
        lines.append(
            "No scenario has a step this conversation can use now (each is used up or waits for "
            "another step); reset the conversation or add a fallback."
        )
    else:
        lines.append("Nearest candidates:")
        for c in candidates:
            lines.extend(_candidate_lines(c))
    return NoMatchReport("\n".join(lines), candidates)
