"""Which captures each step's templates may use, found in time linear in the steps of a scenario.

A step may use the captures of the steps that can run before it: the steps on its chain of predecessors
(its ``after`` step, that step's, ... back to the start) and the repeatable steps that follow a position
on that chain (running one does not move the scenario on). Walking every step's chain made checking a
scenario cost the cube of its length (issue 12: a posted library of 1,600 steps froze the server for
46 s), and even one set of names per step grows with the square when many steps capture.

So nothing is copied per step. The predecessors form a tree rooted at the start; one depth-first walk
numbers it, each capture name keeps the number ranges (subtrees) in which it has been taken, and "may
step i use capture c" is a binary search of c's ranges for i's number."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Iterator, Mapping

from mockllm.dsl.check.reachability import START
from mockllm.dsl.tree.nodes import Scenario


class ScenarioCaptures:
    """The capture names of one scenario and where in its step tree each is taken."""

    def __init__(self, sc: Scenario, preds: list[int | None]) -> None:
        steps = sc.steps
        self.preds = preds
        self.order_any = sc.order_any
        self.own = [frozenset(c.name for c in step.captures) for step in steps]
        self.first: dict[str, str] = {}  # capture name -> the first step taking it
        self.first_index: dict[str, int] = {}
        for i, step in enumerate(steps):
            for name in self.own[i]:
                self.first.setdefault(name, step.name)
                self.first_index.setdefault(name, i)
        self.repeatable = steps_repeatable(sc)
        self.tin, self.tout = _number_tree(preds)
        self.everywhere: set[str] = set()  # taken by a repeatable step that follows the start
        ranges: dict[str, list[tuple[int, int]]] = {}
        self.cyclic: dict[int, frozenset[str]] = {}  # steps on or below a cycle of `after` lines
        for j, names in enumerate(self.own):
            if not names:
                continue
            repeatable = self.repeatable[j]
            q = preds[j]
            for name in names:
                if self.tin[j] >= 0 and self.tin[j] < self.tout[j]:  # the steps below j in the tree
                    ranges.setdefault(name, []).append((self.tin[j] + 1, self.tout[j]))
                if repeatable and q == START:
                    self.everywhere.add(name)
                elif repeatable and q is not None and self.tin[q] >= 0 and self.tin[q] < self.tout[q]:
                    ranges.setdefault(name, []).append((self.tin[q] + 1, self.tout[q]))
        self.ranges = {name: _outermost(found) for name, found in ranges.items()}
        if any(t < 0 for t in self.tin):
            self.cyclic = _cycle_captures(preds, self.repeatable, self.own, self.everywhere)

    def visible(self, i: int, name: str) -> bool:
        """Whether step ``i``'s templates may use capture ``name``: its own, or one taken before it."""
        return name in self.own[i] or self.before(i, name)

    def earlier(self, i: int, name: str) -> bool:
        """Whether ``name`` is captured before step ``i`` runs: by another step that runs first, or by an
        earlier run of step ``i`` itself when it repeats (what its conditions may read)."""
        return self.before(i, name) or (self.repeatable[i] and name in self.own[i])

    def before(self, i: int, name: str) -> bool:
        """Whether a step that runs before step ``i`` captures ``name`` (step ``i`` itself counts
        when it repeats beside its chain, as a repeatable step following the start does)."""
        if self.order_any:
            return name in self.first
        if self.preds[i] is None:  # an unknown `after` (reported): the steps above it, as if it followed them
            return self.first_index.get(name, i) < i
        if self.tin[i] < 0:
            return name in self.cyclic.get(i, frozenset())
        if name in self.everywhere:
            return True
        found = self.ranges.get(name)
        if found is None:
            return False
        starts, ends = found
        k = bisect_right(starts, self.tin[i]) - 1
        return k >= 0 and ends[k] >= self.tin[i]


def steps_repeatable(sc: Scenario) -> list[bool]:
    return [(step.consumption.max_uses or 2) > 1 for step in sc.steps]


class _View(Collection[str]):
    """A set of one step's capture names, decided by a test on the scenario (nothing copied per step)."""

    def __init__(self, scenario: ScenarioCaptures, index: int) -> None:
        self._scenario = scenario
        self._index = index

    def _has(self, name: str) -> bool:
        raise NotImplementedError

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._has(name)

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._scenario.first if self._has(name))

    def __len__(self) -> int:
        return sum(1 for _ in self)


class StepCaptures(_View):
    """The captures one step's templates may use."""

    def _has(self, name: str) -> bool:
        return self._scenario.visible(self._index, name)


class EarlierCaptures(_View):
    """The captures taken before one step runs (what its conditions may read)."""

    def _has(self, name: str) -> bool:
        return self._scenario.earlier(self._index, name)


class LaterCaptures(Mapping[str, str]):
    """Capture name -> the step taking it, for the captures a step cannot have seen."""

    def __init__(self, scenario: ScenarioCaptures, index: int) -> None:
        self._scenario = scenario
        self._index = index

    def __getitem__(self, name: str) -> str:
        if self._scenario.visible(self._index, name):
            raise KeyError(name)
        return self._scenario.first[name]

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._scenario.first if not self._scenario.visible(self._index, name))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _number_tree(preds: list[int | None]) -> tuple[list[int], list[int]]:
    """Depth-first numbers of the predecessor tree: ``tin[i]`` is step i's number and ``tout[i]`` the
    largest number in its subtree (-1 for steps that never reach the start: a cycle of `after` lines).
    Steps following the start or an unknown step are the roots."""
    n = len(preds)
    children: list[list[int]] = [[] for _ in range(n)]
    roots: list[int] = []
    for i, p in enumerate(preds):
        if p is None or p == START:
            roots.append(i)
        else:
            children[p].append(i)
    tin = [-1] * n
    tout = [-1] * n
    counter = 0
    stack: list[tuple[int, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        node, leaving = stack.pop()
        if leaving:
            tout[node] = counter - 1
            continue
        tin[node] = counter
        counter += 1
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(children[node]))
    return tin, tout


def _outermost(ranges: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Subtree ranges nest or are apart: keep the outermost ones, sorted, as (starts, ends)."""
    starts: list[int] = []
    ends: list[int] = []
    for start, end in sorted(ranges, key=lambda r: (r[0], -r[1])):
        if ends and start <= ends[-1]:
            continue  # inside the previous range
        starts.append(start)
        ends.append(end)
    return starts, ends


def _cycle_captures(
    preds: list[int | None], repeatable: list[bool], own: list[frozenset[str]], everywhere: set[str]
) -> dict[int, frozenset[str]]:
    """For the steps whose chain of predecessors runs into a cycle (each reported as unreachable): the
    captures of their chain and of the repeatable steps beside it, walked once per such step."""
    n = len(preds)
    beside: dict[int, set[str]] = {}
    for j, q in enumerate(preds):
        if q is not None and q != START and repeatable[j] and own[j]:
            beside.setdefault(q, set()).update(own[j])
    out: dict[int, frozenset[str]] = {}
    for i in range(n):
        p = preds[i]
        seen: set[int] = set()
        names = set(everywhere)
        while p is not None and p != START and p not in seen:
            seen.add(p)
            names |= (own[p] if p != i else frozenset()) | beside.get(p, set())  # i itself, back on a cycle
            p = preds[p]
        out[i] = frozenset(names)
    return out
