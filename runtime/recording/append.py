"""Growing a script one exchange at a time: the newest turn of a conversation added to the file that
already holds the conversation (``mockllm serve --record-missing``).

A conversation's scenario is known by the key in its name, ``(1a2b3c4d)``, which is the same on every
run (the opening's fingerprint, or the conversation header's digest). The new turn becomes the last
step of that scenario, under a name no step of it has yet; a conversation the file does not hold yet
becomes a new scenario at the end of it. The scenario's ``provider is`` / ``model is`` conditions stay
where they are while the new turn meets them; one the new turn does not meet moves down into each
step, so every step keeps matching what it matched before. Everything else in the file is left as
it is. Plain code over syntax trees: the caller reads and writes the file."""

from __future__ import annotations

import re

import attrs

from mockllm.dsl.tree import nodes as n
from mockllm.runtime.recording.translate import Script

__all__ = ["appended", "conversation_tag"]

_KEY = re.compile(r"\(([0-9a-f]{8})\)$")
_PLACE = ("provider", "model")


def conversation_tag(name: str) -> str | None:
    """The ``(1a2b3c4d)`` a recorded scenario's name ends with, or None."""
    found = _KEY.search(name)
    return found.group(0) if found else None


def appended(existing: n.ScriptFile | None, new: Script, label: str = "") -> n.ScriptFile:
    """``existing`` (None: no file yet) with the last step of ``new``'s scenario added to the scenario
    of the same conversation. ``new`` is the conversation's script as recorded so far in this run;
    ``label`` (a test's name) leads the scenario's name, so per-test files never share one."""
    fresh = new.tree.scenarios[0]
    if label:
        fresh = attrs.evolve(fresh, name=f"{label}: {fresh.name}")
    step = fresh.steps[-1]
    turn = [c for c in (*fresh.conditions, *step.conditions) if c.subject.kind in _PLACE]
    own = tuple(c for c in step.conditions if c.subject.kind not in _PLACE)
    if existing is None:
        return attrs.evolve(new.tree, scenarios=(attrs.evolve(fresh, steps=(step,)),))
    tag = conversation_tag(fresh.name)
    for i, sc in enumerate(existing.scenarios):
        if tag is not None and conversation_tag(sc.name) == tag and sc.name.startswith(f"{label}: " if label else ""):
            grown = _grown(sc, step, turn, own)
            return attrs.evolve(existing, scenarios=(*existing.scenarios[:i], grown, *existing.scenarios[i + 1 :]))
    return attrs.evolve(existing, scenarios=(*existing.scenarios, attrs.evolve(fresh, steps=(step,))))


def _grown(sc: n.Scenario, step: n.Step, turn: list[n.Condition], own: tuple[n.Condition, ...]) -> n.Scenario:
    unmet = tuple(c for c in sc.conditions if c.subject.kind in _PLACE and c not in turn)
    kept = tuple(c for c in sc.conditions if c not in unmet)
    steps = tuple(attrs.evolve(s, conditions=(*unmet, *s.conditions)) for s in sc.steps) if unmet else sc.steps
    where = tuple(c for c in turn if c not in kept)
    names = {s.name for s in steps}
    name, k = step.name, 2
    while name in names:
        name, k = f"{step.name}_{k}", k + 1
    added = attrs.evolve(step, name=name, conditions=(*where, *own))
    return attrs.evolve(sc, conditions=kept, steps=(*steps, added))
