"""A loaded library with what the engine precomputes for it once: each step's location, the steps
that may follow each position, the steps that read captures, the steps an embedding or MCP call may
match, the digests that name each scenario's definition across processes, and for long libraries
an index that narrows a request's candidate steps. Replaced as a whole when a library is loaded."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from mockllm.dsl.machines.compiled import CompiledLibrary, Machine
from mockllm.dsl.span import Span
from mockllm.dsl.tree.nodes import Condition, Subject
from mockllm.runtime.engine.conditions import subject_value, template_names
from mockllm.runtime.engine.conversations import Conversation, MachineState
from mockllm.runtime.request import ChatRequest


def location(span: Span) -> str:
    return span.location()


_INDEX_MIN_STEPS = 64  # below this, scanning every eligible step is as fast as an index lookup
_GRAM = 3
_INDEXED_SUBJECTS = frozenset(
    {"provider", "endpoint", "model", "last_user_message", "last_message", "system_prompt", "header"}
)
_INPUT_SUBJECTS = frozenset({"endpoint", "input", "tool", "argument", "attachments"})  # see Loaded.input_steps
_SubjectKey = tuple[Subject, bool]  # the subject, ignoring case
_StepRef = tuple[int, int]  # machine index, step index


def _subject_key(cond: Condition) -> _SubjectKey | None:
    if cond.subject.kind not in _INDEXED_SUBJECTS:
        return None
    return (cond.subject, cond.ignore_case)


def _grams(text: str) -> set[str]:
    return {text[i : i + _GRAM] for i in range(len(text) - _GRAM + 1)}


class StepIndex:
    """A prefilter for long libraries: each step is filed under its most selective *guard*, one of its
    conditions that a request can be looked up by (``SUBJECT is "v"`` by value, ``SUBJECT contains "s"``
    by a 3-character piece of ``s``). A request's candidates are the steps whose guard it can satisfy
    plus the steps without a guard: a superset of the steps that can match, so selection among them
    gives the same answer as scanning everything."""

    def __init__(self, machines: Sequence[Machine]) -> None:
        eq_count: dict[tuple[_SubjectKey, str], int] = {}
        gram_count: dict[tuple[_SubjectKey, str], int] = {}
        options: dict[_StepRef, list[tuple[str, _SubjectKey, str]]] = {}
        for mi, m in enumerate(machines):
            for st in m.steps:
                opts: list[tuple[str, _SubjectKey, str]] = []
                for cond in st.conditions:
                    key = _subject_key(cond)
                    value = cond.predicate.value
                    if key is None or not isinstance(value, str):
                        continue
                    if cond.subject.kind == "endpoint" and not value.startswith("/"):
                        continue  # an operation name ("embeddings"), not a path: not indexed
                    folded = value.casefold() if cond.ignore_case else value
                    if cond.predicate.op == "is":
                        opts.append(("eq", key, folded))
                        eq_count[(key, folded)] = eq_count.get((key, folded), 0) + 1
                    elif cond.predicate.op == "contains" and len(folded) >= _GRAM:
                        for g in _grams(folded):
                            opts.append(("gram", key, g))
                            gram_count[(key, g)] = gram_count.get((key, g), 0) + 1
                options[(mi, st.index)] = opts
        self.eq: dict[_SubjectKey, dict[str, list[_StepRef]]] = {}
        self.gram: dict[_SubjectKey, dict[str, list[_StepRef]]] = {}
        unguarded: dict[int, set[int]] = {}
        for ref, opts in options.items():
            if not opts:
                unguarded.setdefault(ref[0], set()).add(ref[1])
                continue
            kind, key, piece = min(opts, key=lambda o: (eq_count if o[0] == "eq" else gram_count)[(o[1], o[2])])
            table = self.eq if kind == "eq" else self.gram
            table.setdefault(key, {}).setdefault(piece, []).append(ref)
        self.unguarded = {mi: frozenset(v) for mi, v in unguarded.items()}

    def candidates(self, chat: ChatRequest) -> dict[int, set[int]]:
        """Step indexes by machine index that may match ``chat`` (steps without a guard excluded)."""
        found: dict[int, set[int]] = {}

        def add(refs: list[_StepRef]) -> None:
            for mi, idx in refs:
                found.setdefault(mi, set()).add(idx)

        values: dict[_SubjectKey, str | None] = {}

        def value_of(key: _SubjectKey) -> str | None:
            if key not in values:
                v = subject_value(key[0], chat)
                values[key] = (v.casefold() if key[1] else v) if isinstance(v, str) else None
            return values[key]

        for key, eq_table in self.eq.items():
            v = value_of(key)
            if v is not None and v in eq_table:
                add(eq_table[v])
        for key, gram_table in self.gram.items():
            v = value_of(key)
            if v is None:
                continue
            if len(gram_table) <= 32:
                for g, refs in gram_table.items():
                    if g in v:
                        add(refs)
            else:
                for g in _grams(v):
                    hit = gram_table.get(g)
                    if hit is not None:
                        add(hit)
        return found


class Loaded:
    """A library with what the engine precomputes for it; replaced as a whole on load."""

    __slots__ = (
        "_digests",
        "by_predecessor",
        "generations",
        "index",
        "initial",
        "input_steps",
        "library",
        "locations",
        "positions",
        "templated",
    )

    def __init__(self, library: CompiledLibrary, generations: tuple[int, ...]) -> None:
        self.library = library
        self.generations = generations
        self.positions = {m.name: mi for mi, m in enumerate(library.machines)}  # scenario -> its index
        self.initial = tuple(MachineState(g) for g in generations)
        # each step's "file:line:col" for the journal, formatted once instead of per request
        self.locations = tuple(tuple(location(s.span) for s in m.steps) for m in library.machines)
        by_pred: list[dict[int, tuple[int, ...]] | None] = []
        for m in library.machines:
            if m.order_any:
                by_pred.append(None)
                continue
            table: dict[int, list[int]] = {}
            for s in m.steps:
                table.setdefault(s.predecessor, []).append(s.index)
            by_pred.append({k: tuple(v) for k, v in table.items()})
        self.by_predecessor = tuple(by_pred)
        # per machine, the steps whose conditions read captures (`contains "{{city}}"`): bound per request
        self.templated = tuple(
            frozenset(s.index for s in m.steps if any(template_names(c) for c in (*s.conditions, *s.expects)))
            for m in library.machines
        )
        self.index = StepIndex(library.machines) if library.step_count() >= _INDEX_MIN_STEPS else None
        # the steps an embedding, moderation or MCP request may match: those whose conditions name its
        # `endpoint`, `input` or `tool` (so a chat scenario's steps are never used up by such a call)
        self.input_steps = frozenset(
            (mi, s.index)
            for mi, m in enumerate(library.machines)
            for s in m.steps
            if any(c.subject.kind in _INPUT_SUBJECTS for c in s.conditions)
        )
        self._digests: tuple[str, ...] | None = None

    def digests(self) -> tuple[str, ...]:
        """Per machine, 16 hex digits of sha256 over its definition (its repr: the same in every process)."""
        if self._digests is None:
            self._digests = tuple(hashlib.sha256(repr(m).encode()).hexdigest()[:16] for m in self.library.machines)
        return self._digests

    def eligible(self, mi: int, state: MachineState) -> tuple[int, ...]:
        """Same answer as :meth:`Machine.eligible`, without scanning every step of a long machine."""
        machine = self.library.machines[mi]
        table = self.by_predecessor[mi]
        candidates = range(len(machine.steps)) if table is None else table.get(state.position, ())
        steps = machine.steps
        if not state.uses:
            return tuple(candidates)
        uses: dict[int, int] | None = None  # the use counts, read only for a step that has a limit
        out: list[int] = []
        for i in candidates:
            limit = steps[i].max_uses
            if limit is not None:
                if uses is None:
                    uses = state.uses_by_index()
                if uses.get(i, 0) >= limit:
                    continue
            out.append(i)
        return tuple(out)

    def state(self, mi: int, conv: Conversation) -> MachineState:
        if conv.states is not None:
            s = conv.states.get(self.library.machines[mi].name)
            if s is not None and s.generation == self.generations[mi]:
                return s
        return self.initial[mi]
