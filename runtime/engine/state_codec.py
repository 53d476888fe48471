"""Machine states as JSON values and back, for a state store outside this process (Redis): the
engine's generations are this process's numbers, so a shared store names a scenario's definition by
a digest of it instead, which every process loading the same scenario computes alike. A state of a
definition not loaded here is left out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mockllm.runtime.engine.conversations import MachineState
from mockllm.runtime.engine.loaded import Loaded


def export_states(loaded: Loaded | None, states: Mapping[str, MachineState] | None) -> dict[str, list[Any]]:
    """Machine states as JSON values: scenario -> [digest, position, uses, captures]; states of a
    definition no longer loaded are left out."""
    if loaded is None or not states:
        return {}
    digests = loaded.digests()
    positions = loaded.positions
    generations = loaded.generations
    out: dict[str, list[Any]] = {}
    for name, state in states.items():  # (per request with shared state: never a scan of the library)
        mi = positions.get(name)
        if mi is not None and state.generation == generations[mi]:
            out[name] = [digests[mi], state.position, state.uses, state.captures]
    return out


def import_states(loaded: Loaded | None, data: Mapping[str, Any]) -> dict[str, MachineState]:
    """:func:`export_states` back: the states whose definition is the one loaded here."""
    out: dict[str, MachineState] = {}
    if loaded is None or not data:
        return out
    digests = loaded.digests()
    positions = loaded.positions
    for name, value in data.items():
        mi = positions.get(name)
        if mi is not None and value[0] == digests[mi]:
            uses = tuple((int(i), int(k)) for i, k in value[2])
            captures = tuple((str(n), str(v)) for n, v in value[3])
            out[name] = MachineState(loaded.generations[mi], int(value[1]), uses, captures)
    return out


def used_member(loaded: Loaded | None, used: tuple[str, int, int]) -> str | None:
    """A step used (``Turn.used``: scenario, generation, step index) named by its scenario's digest:
    ``DIGEST:STEP-INDEX``; None when that definition is no longer loaded."""
    if loaded is None:
        return None
    mi = loaded.positions.get(used[0])
    if mi is None or loaded.generations[mi] != used[1]:
        return None
    return f"{loaded.digests()[mi]}:{used[2]}"
