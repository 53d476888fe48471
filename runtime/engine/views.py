"""What the admin API shows of the engine's state, as typed values: each live conversation's
position, use counts and captures per scenario (:class:`ConversationRecord`), and the verdict a
test's teardown asserts on (:class:`VerifyReport`: requests nothing answered, failed expectations,
requests refused before matching, steps never used). Each serialises to the admin API's JSON with
``to_json``; the engine and the shared store build them from their own tables."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mockllm.runtime.engine.conditions import is_secret, mask_secret
from mockllm.runtime.engine.conversations import ConversationRecord, MachineRecord, MachineState
from mockllm.runtime.engine.journal import JournalEntry
from mockllm.runtime.engine.loaded import Loaded, location
from mockllm.runtime.engine.nomatch import position_name


@attrs.frozen
class UnusedStep:
    """A step of the loaded library no conversation used since the last reset."""

    scenario: str
    step: str
    location: str  # file:line:column

    def to_json(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "step": self.step, "location": self.location}


@attrs.frozen
class VerifyReport:
    """``GET /_mockllm/verify``'s report (before the shared store adds its posts not loaded)."""

    unmatched: tuple[JournalEntry, ...] = ()
    expectation_failures: tuple[JournalEntry, ...] = ()
    rejected: tuple[JournalEntry, ...] = ()
    unused_steps: tuple[UnusedStep, ...] = ()

    @property
    def ok(self) -> bool:
        """No request unmatched, refused or failing its expectation (unused steps are reported apart)."""
        return not self.unmatched and not self.expectation_failures and not self.rejected

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "unmatched": [e.to_json() for e in self.unmatched],
            "expectation_failures": [e.to_json() for e in self.expectation_failures],
            "rejected": [e.to_json() for e in self.rejected],
            "unused_steps": [s.to_json() for s in self.unused_steps],
        }


def verification(
    loaded: Loaded | None, entries: Sequence[JournalEntry], used: Callable[[int, int], bool]
) -> VerifyReport:
    """The report over journal ``entries``; ``used(machine index, step index)`` says whether a step of
    the ``loaded`` library was used since the last reset."""
    unused: list[UnusedStep] = []
    if loaded is not None:
        for mi, machine in enumerate(loaded.library.machines):
            for s in machine.steps:
                if not used(mi, s.index):
                    unused.append(UnusedStep(machine.name, s.name, location(s.span)))
    return VerifyReport(
        unmatched=tuple(e for e in entries if e.unmatched),
        expectation_failures=tuple(e for e in entries if e.expectation_failed is not None),
        rejected=tuple(e for e in entries if e.rejected is not None),
        unused_steps=tuple(unused),
    )


def conversation_records(
    loaded: Loaded | None, live: Sequence[tuple[str, float, Mapping[str, MachineState]]]
) -> list[ConversationRecord]:
    """The records of conversations given as (key, idle seconds, machine states by scenario): each
    scenario's position, use counts and captures (a capture taken from a credential header masked)."""
    out: list[ConversationRecord] = []
    secret: dict[str, set[str]] = {}  # per scenario: the captures taken from a credential header
    if loaded is not None:
        for machine in loaded.library.machines:
            names = {c.name for st in machine.steps for c in st.captures if is_secret(c.subject)}
            if names:
                secret[machine.name] = names
    for key, idle, states in live:
        machines: list[MachineRecord] = []
        if loaded is not None:
            for mi, machine in enumerate(loaded.library.machines):
                state = states.get(machine.name)
                if state is None or state.generation != loaded.generations[mi]:
                    continue
                uses = {machine.steps[i].name: k for i, k in state.uses if i < len(machine.steps)}
                position = position_name(machine, state.position)
                captures = state.captured()
                for name in secret.get(machine.name, ()) & captures.keys():
                    captures[name] = mask_secret(captures[name])
                machines.append(MachineRecord(machine.name, position, uses, captures))
        out.append(ConversationRecord(key, idle, tuple(machines)))
    return out
