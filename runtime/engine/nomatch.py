"""The "no step matched" report: what this conversation was waiting for, and why each step failed.

It leads with the scenarios this conversation has started: for each, how far it got and its next
eligible steps, with every condition's verdict and the value seen (those are the steps a QA engineer
is debugging; unrelated scenarios' first steps must not push them out). Then the other near misses:
the eligible steps of scenarios not started yet with the fewest failing conditions (at most three).
Then steps whose conditions all hold but that cannot run now, with the reason (used up, or waiting
for another step). When a new chat (no assistant turn yet, no ``x-mockllm-conversation`` header)
landed in a conversation that had already started, the report says so and how to separate them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from mockllm.dsl.machines.compiled import START, CompiledStep, Machine
from mockllm.dsl.tree import describe
from mockllm.dsl.tree.nodes import Condition
from mockllm.errors import RegexTimeout
from mockllm.runtime.engine.conditions import bind, capture, capture_seen, evaluate, template_names
from mockllm.runtime.engine.conversations import CONVERSATION_HEADER, MachineState
from mockllm.runtime.engine.outcome import Candidate, FailedCondition, NoMatchReport
from mockllm.runtime.request import ChatRequest
from mockllm.runtime.timed_regex import TIMEOUT_S

PREFIX = "mockllm: no step matched"
MAX_NEAREST = 3
MAX_WAITING = 3
MAX_NEXT_STEPS = 5  # per started scenario
MAX_PROGRESS = 10  # scenarios listed by name in the progress summary


@attrs.frozen
class MachineView:
    """A machine with its state in the conversation, and its eligible steps in that state."""

    machine: Machine
    state: MachineState
    eligible: tuple[int, ...]

    @property
    def started(self) -> bool:
        return bool(self.state.uses)


def template_env(machine: Machine, state: MachineState) -> dict[str, str]:
    """What ``{{name}}`` reads in a condition of ``machine``: its lets, then this conversation's captures."""
    env = {let.name: let.value for let in machine.lets}
    if state.captures:
        env.update(state.captures)
    return env


def _verdict(cond: Condition, chat: ChatRequest, env: Mapping[str, str]) -> FailedCondition:
    names = template_names(cond)
    bound, missing = bind(cond, env) if names else (cond, ())
    text = describe.condition(cond)
    if names:
        filled = ", ".join(
            f"{name} = {describe.quote(env[name])}" if name in env else f"{name} not captured yet"
            for name in dict.fromkeys(names)
        )
        text = f"{text} ({filled})"
    if missing:
        return FailedCondition(text, "nothing: the capture is taken by an earlier step that has not run")
    try:
        ok, seen = evaluate(bound, chat)
    except RegexTimeout:
        ok, seen = False, f"a text on which the regex ran past {TIMEOUT_S * 1000:.0f} ms and was stopped"
    return FailedCondition(text, seen, ok)


def verdicts(step: CompiledStep, chat: ChatRequest, env: Mapping[str, str]) -> tuple[FailedCondition, ...]:
    """Every condition of ``step`` with its verdict; when they all hold, each capture too."""
    out = [_verdict(cond, chat, env) for cond in step.conditions]
    if all(v.holds for v in out):
        for cap in step.captures:
            text = f"capture {cap.name} from {describe.subject(cap.subject)} {cap.regex}"
            try:
                took = capture(cap, chat) is not None
            except RegexTimeout:
                took = False
            out.append(FailedCondition(text, capture_seen(cap, chat), took))
    return tuple(out)


def failures(
    step: CompiledStep, chat: ChatRequest, env: Mapping[str, str] | None = None
) -> tuple[FailedCondition, ...]:
    """Every condition of ``step`` that does not hold for ``chat``; when they all hold, the captures
    whose regex does not match."""
    return tuple(v for v in verdicts(step, chat, env or {}) if not v.holds)


def position_name(machine: Machine, position: int) -> str:
    return "start" if position == START else machine.steps[position].name


def progress(view: MachineView) -> str:
    """How far a scenario got in this conversation, e.g. "at step `ask`, 1 of 3 steps used"."""
    if not view.started:
        return "not started"
    used = len(view.state.uses)
    total = len(view.machine.steps)
    at = position_name(view.machine, view.state.position)
    where = "still at its start" if at == "start" else f"at step `{at}`"
    return f"{where}, {used} of {total} step{'s' if total != 1 else ''} used"


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


def _is_opening(chat: ChatRequest) -> bool:
    """A request that starts a chat: no assistant turn and no tool result yet."""
    return not any(m.role in ("assistant", "tool") for m in chat.messages)


def shared_opening_note(chat: ChatRequest, views: Sequence[MachineView]) -> str:
    """The explanation when a new chat landed in an already-started conversation by its opening."""
    if chat.header(CONVERSATION_HEADER) or not _is_opening(chat) or chat.previous_response_id:
        return ""
    started = [v for v in views if v.started]
    if not started:
        return ""
    first = started[0]
    at = position_name(first.machine, first.state.position)
    where = f'scenario "{first.machine.name}" is {"at step `" + at + "`" if at != "start" else "started"}'
    return (
        "This request opens a chat (no assistant turn yet) and has no `x-mockllm-conversation` header, so "
        "mockllm identified its conversation by its opening (system prompt and first user message). That "
        f"opening matched an existing conversation, in which {where}: chats with the same opening share "
        "one state. To keep them apart, send each chat its own `x-mockllm-conversation` header (in "
        'pytest: `default_headers=mockllm.conversation_header("name")`), or reset between them.'
    )


def _verdict_lines(checked: Sequence[FailedCondition], indent: str) -> list[str]:
    return [f"{indent}{'✓' if v.holds else '✗'} {v.condition} — seen {v.seen}" for v in checked]


def _candidate_lines(c: Candidate) -> list[str]:
    head = f'  - scenario "{c.scenario}", step `{c.step}` ({c.span.location()})'
    if c.reason:
        return [f"{head}: {c.reason}"]
    return [f"{head}:", *_verdict_lines(c.failed, "      ")]


def build_report(chat: ChatRequest, conversation: str, views: Sequence[MachineView]) -> NoMatchReport:
    waited: list[Candidate] = []
    nearest: list[tuple[int, int, Candidate]] = []
    blocked: list[Candidate] = []
    order = 0
    for view in views:
        machine = view.machine
        env = template_env(machine, view.state)
        eligible = set(view.eligible)
        shown_next = 0
        how_far = progress(view)
        for step in machine.steps:
            checked = verdicts(step, chat, env)
            failed = tuple(v for v in checked if not v.holds)
            if step.index in eligible:
                if view.started:
                    if shown_next < MAX_NEXT_STEPS:
                        shown_next += 1
                        waited.append(Candidate(machine.name, step.name, step.span, failed, "", True, how_far, checked))
                    continue
                candidate = Candidate(machine.name, step.name, step.span, failed, "", False, how_far)
                nearest.append((len(failed), order, candidate))
                order += 1
            elif not failed and len(blocked) < MAX_WAITING:
                reason = ineligible_reason(machine, view.state, step)
                blocked.append(Candidate(machine.name, step.name, step.span, (), reason, False, how_far))
    nearest.sort(key=lambda t: (t[0], t[1]))
    near = [c for _, _, c in nearest[:MAX_NEAREST]]
    candidates = (*waited, *near, *blocked)
    shared = shared_opening_note(chat, views)

    lines = [f"{PREFIX} this request ({_describe_request(chat, conversation)})."]
    if shared:
        lines.append(shared)
    if not views:
        lines.append("The library has no scenarios; load one or add a fallback.")
    elif not candidates:
        lines.append(
            "No scenario has a step this conversation can use now (each is used up or waits for "
            "another step); reset the conversation or add a fallback."
        )
    if waited:
        lines.append("This conversation was waiting for:")
        by_scenario: dict[str, list[Candidate]] = {}
        for c in waited:
            by_scenario.setdefault(c.scenario, []).append(c)
        for scenario, steps in by_scenario.items():
            lines.append(f'  scenario "{scenario}" ({steps[0].progress}), next:')
            for c in steps:
                lines.append(f"  - step `{c.step}` ({c.span.location()}):")
                lines.extend(_verdict_lines(c.checked, "      "))
    if near:
        lines.append("Other near misses:" if waited else "Nearest candidates:")
        for c in near:
            lines.extend(_candidate_lines(c))
    if blocked:
        lines.append("Conditions hold, but the step cannot run now:")
        for c in blocked:
            lines.extend(_candidate_lines(c))
    started = [v for v in views if v.started]
    if started and (len(views) > 1 or not waited):
        shown = ", ".join(f'"{v.machine.name}" {progress(v)}' for v in started[:MAX_PROGRESS])
        more = len(views) - min(len(started), MAX_PROGRESS)
        rest = f"; {more} other scenario{'s' if more != 1 else ''} not started" if more else ""
        lines.append(f"How far each scenario got in this conversation: {shown}{rest}.")
    return NoMatchReport("\n".join(lines), candidates, shared)
