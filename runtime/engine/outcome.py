"""What the engine answers for one request, and what it records in the journal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mockllm.dsl.span import NO_SPAN, Span
from mockllm.runtime.reply.plan import Plan
from mockllm.runtime.values import fast_frozen


@attrs.frozen
class FailedCondition:
    """One condition of a candidate step with the value the request had; ``holds`` is its verdict
    (a candidate's ``failed`` holds only the conditions that did not hold)."""

    condition: str  # as written in the script, e.g. 'last user message contains "weather"'
    seen: str  # the value seen, rendered for people (e.g. '"hello"', 'absent', '["get_time"]')
    holds: bool = False


@attrs.frozen
class Candidate:
    scenario: str
    step: str
    span: Span
    failed: tuple[FailedCondition, ...]
    reason: str = ""  # why not eligible, e.g. "waits for step `ask` (position is `start`)"; "" if eligible
    waiting: bool = False  # a next step of a scenario this conversation has started
    progress: str = ""  # how far the scenario got in this conversation, e.g. "at step `ask`, 1 of 3 steps used"
    checked: tuple[FailedCondition, ...] = ()  # every condition with its verdict (for the steps waited for)


@attrs.frozen
class NoMatchReport:
    message: str  # begins "mockllm: no step matched"; what the 404 body and the log carry
    candidates: tuple[Candidate, ...]
    shared_opening: str = ""  # set when a new chat's opening matched a conversation that had already started

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NoMatchReport:
        """The report back from its JSON form (what the admin API sends)."""
        candidates = tuple(
            Candidate(
                str(c.get("scenario", "")),
                str(c.get("step", "")),
                Span.parse_location(str(c.get("location", ""))),
                _verdicts(c.get("failed", ())),
                str(c.get("reason", "")),
                bool(c.get("waiting", False)),
                str(c.get("progress", "")),
                _verdicts(c.get("checked", ())),
            )
            for c in data.get("candidates", ())
        )
        return cls(str(data.get("message", "")), candidates, str(data.get("shared_opening", "")))

    def to_json(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "candidates": [
                {
                    "scenario": c.scenario,
                    "step": c.step,
                    "location": c.span.location(),
                    "reason": c.reason,
                    "failed": [{"condition": f.condition, "seen": f.seen} for f in c.failed],
                    "waiting": c.waiting,
                    "progress": c.progress,
                    "checked": [{"condition": f.condition, "seen": f.seen, "holds": f.holds} for f in c.checked],
                }
                for c in self.candidates
            ],
            "shared_opening": self.shared_opening,
        }


def _verdicts(items: Any) -> tuple[FailedCondition, ...]:
    return tuple(FailedCondition(str(f["condition"]), str(f["seen"]), bool(f.get("holds", False))) for f in items)


@fast_frozen
class Outcome:
    conversation: str
    entry_id: int  # its journal entry, which the server settles with how the answer went
    plan: Plan | None  # None: nothing matched and there is no fallback -> 404 with `no_match.message`
    scenario: str | None = None
    step: str | None = None
    step_span: Span = attrs.field(default=NO_SPAN, eq=False)
    fallback: bool = False
    no_match: NoMatchReport | None = None
    expectation_failed: str | None = None  # set (and plan is a 400 error plan) when an `expect:` failed
    response_id: str = ""  # unique per engine, deterministic; adapters add their prefix ("chatcmpl-", "resp_" …)

    def with_entry_id(self, entry_id: int) -> Outcome:
        """This outcome for journal entry ``entry_id`` (what ``attrs.evolve`` does, at half its cost: the
        shared state store learns the entry id only when Redis has committed the turn)."""
        return Outcome(
            self.conversation,
            entry_id,
            self.plan,
            self.scenario,
            self.step,
            self.step_span,
            self.fallback,
            self.no_match,
            self.expectation_failed,
            self.response_id,
        )
