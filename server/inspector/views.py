"""The inspector's JSON views: what the page shows, read through the state store, each answer bounded.

A journal row is a summary (no bodies, long strings cut); one entry's detail carries the bodies.
Lists are paged: the journal newest first by id (``before``, or ``after`` for what is new), the
conversations by offset. The live feed (:meth:`Views.feed`) is what the page polls: the rows new
since the newest it lists, and the rows it shows whose answer had not ended (a stream still going, a
client that may still go away) as they are now -- looked up by id, so a change to any row on show
reaches the page, whatever its page, at the cost of the rows on show, never of the journal's size.
The library view lists scenarios and steps; a step's source and a scenario's machine picture (the
same :func:`~mockllm.dsl.machines.graph.diagram` ``mockllm graph`` draws) come one at a time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from mockllm.dsl.machines.compiled import Machine
from mockllm.dsl.machines.graph import diagram
from mockllm.dsl.tree.describe import condition
from mockllm.server.http.admin import library_description

if TYPE_CHECKING:
    from mockllm.runtime.engine.engine import Engine
    from mockllm.server.state.store import StateStore

SHORT = 160  # characters of a client's string (a model, a conversation key) a journal row keeps
SCAN = 10_000  # entries a filtered journal read looks through at most, newest first
BATCH = 500
SOURCE_LINES = 60  # lines of a step's source shown at most
SAMPLE = 20  # conversations named per position on a machine picture
REPORT = 50  # items of each verify list shown


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > SHORT:
        return value[:SHORT] + "…"
    return value


def summary(entry: dict[str, Any]) -> dict[str, Any]:
    """A journal row: what the list shows of an entry."""
    matched = entry.get("matched")
    no_match = entry.get("no_match")
    return {
        "id": entry.get("id"),
        "time": entry.get("time"),
        "conversation": _cut(entry.get("conversation")),
        "provider": entry.get("provider"),
        "endpoint": _cut(entry.get("endpoint")),
        "model": _cut(entry.get("model")),
        "stream": entry.get("stream"),
        "status": entry.get("status"),
        "operation": entry.get("operation"),
        "step": f"{matched.get('scenario')} / {matched.get('step')}" if isinstance(matched, dict) else None,
        "unmatched": bool(no_match) and not entry.get("fallback"),
        "fallback": entry.get("fallback"),
        "echo": entry.get("echo"),
        "client_gone": entry.get("client_gone"),
        "note": _cut(entry.get("note")),
        "expectation_failed": _cut(entry.get("expectation_failed")),
        "rejected": _cut(entry.get("rejected")),
        "arrived": entry.get("arrived"),
        "first_byte_ms": entry.get("first_byte_ms"),
        "duration_ms": entry.get("duration_ms"),
        # the answer has ended (or was refused): nothing about the row changes any more
        "done": entry.get("duration_ms") is not None or entry.get("rejected") is not None,
    }


@attrs.frozen
class Filters:
    """What the journal list is narrowed to (each empty: any)."""

    conversation: str = ""  # the conversation's key contains it
    provider: str = ""
    matched: str = ""  # "yes" or "no"
    operation: str = ""

    def __bool__(self) -> bool:
        return bool(self.conversation or self.provider or self.matched or self.operation)


def _wanted(entry: dict[str, Any], filters: Filters) -> bool:
    conversation, provider, matched = filters.conversation, filters.provider, filters.matched
    if conversation and conversation not in str(entry.get("conversation", "")):
        return False
    if provider and entry.get("provider") != provider:
        return False
    if filters.operation and (entry.get("operation") or "") != filters.operation:
        return False
    if matched == "yes":
        return entry.get("matched") is not None
    if matched == "no":
        return entry.get("matched") is None
    return True


def _consumption(max_uses: int | None) -> str:
    if max_uses is None:
        return "always"
    return "once" if max_uses == 1 else f"repeat {max_uses}"


class Views:
    def __init__(self, engine: Engine, store: StateStore) -> None:
        self.engine = engine
        self.store = store

    async def _machines(self) -> tuple[Machine, ...]:
        await self.store.sync_library()
        library = self.engine.library
        return library.machines if library is not None else ()

    async def _machine(self, name: str) -> Machine | None:
        return next((m for m in await self._machines() if m.name == name), None)

    async def journal(self, limit: int, before: int | None, after: int, filters: Filters) -> dict[str, Any]:
        """Up to ``limit`` rows newest first, below ``before`` and above ``after``, that pass the filters;
        ``next_before`` continues the list (None: nothing older), ``newest`` is the newest id seen."""
        rows: list[dict[str, Any]] = []
        scanned = 0
        cursor = before
        newest: int | None = None
        more = False
        size = BATCH if filters else limit + 1
        if after:  # what is new: often nothing, or a few entries (the live feed asks twice a second)
            top = await self.store.journal_newest_id()
            if top <= after:
                return {"entries": [], "next_before": None, "newest": top or None, "scanned": 0}
            size = min(size, top - after + 1)
        while scanned < SCAN:
            batch = await self.store.journal_newest(size, cursor)
            stop = len(batch) < size
            for entry in batch:
                entry_id = int(entry.get("id", 0))
                if newest is None:
                    newest = entry_id
                if entry_id <= after:
                    stop = True
                    break
                if _wanted(entry, filters):
                    if len(rows) == limit:
                        more = stop = True
                        break
                    rows.append(summary(entry))
                scanned += 1
                cursor = entry_id
            if stop:
                break
        else:
            more = True  # looked through SCAN entries: the rest on the next page
        return {"entries": rows, "next_before": cursor if more else None, "newest": newest, "scanned": scanned}

    async def feed(
        self, after: int | None, limit: int, filters: Filters, ids: list[int], open_ids: list[int]
    ) -> dict[str, Any]:
        """What the page polls: with ``after``, the rows above it that pass the filters (as
        :meth:`journal`); of the rows ``ids`` (those on show), which are gone (a reset), and those of
        ``open_ids`` (whose answer had not ended) as they are now; ``newest``, the newest entry's id."""
        out: dict[str, Any] = {"entries": [], "newest": None}
        if after is not None:
            out = await self.journal(limit, None, after, filters)
        if out["newest"] is None:
            out["newest"] = await self.store.journal_newest_id() or None
        kept = set(await self.store.journal_kept(ids)) if ids else set()
        shown = [i for i in open_ids if i in kept]
        out["rows"] = [summary(e) for e in await self.store.journal_find(shown)] if shown else []
        out["missing"] = [i for i in ids if i not in kept]
        return out

    async def entry(self, entry_id: int) -> dict[str, Any] | None:
        page, _ = await self.store.journal_page(1, entry_id - 1)
        if not page or page[0].get("id") != entry_id:
            return None
        return page[0]

    async def library(self, known: str = "") -> dict[str, Any]:
        """The library's files, scenarios and steps; only its ``version`` when that is ``known``."""
        await self.store.sync_library()
        library = self.engine.library
        # a loaded library is a new object: the page refetches the list then (the counts: should an id be reused)
        version = f"{id(library):x}-{library.step_count() if library is not None else 0}"
        if known == version:
            return {"version": version, "same": True}
        scenarios = []
        for m in library.machines if library is not None else ():
            scenarios.append(
                {
                    "name": m.name,
                    "file": m.file or m.span.file,
                    "location": m.span.location(),
                    "priority": m.priority,
                    "order": "any" if m.order_any else "file",
                    "tags": list(m.tags),
                    "steps": [
                        {
                            "index": s.index,
                            "name": s.name,
                            "location": s.span.location(),
                            "uses": _consumption(s.max_uses),
                        }
                        for s in m.steps
                    ],
                }
            )
        return {
            "description": library_description(library),
            "files": list(library.files) if library is not None else [],
            "scenarios": scenarios,
            "state": self.store.description,
            "version": version,
            "same": False,
        }

    async def source(self, scenario: str, index: int) -> dict[str, Any] | None:
        """A step's source lines from its file (when this server can read it), and its conditions."""
        machine = await self._machine(scenario)
        if machine is None or index >= len(machine.steps):
            return None
        step = machine.steps[index]
        span = step.span
        lines: list[str] = []
        if span.line > 0:
            try:
                with open(span.file, encoding="utf-8") as f:
                    text = f.read().splitlines()
                last = max(span.end_line, span.line)
                lines = text[span.line - 1 : min(last, span.line - 1 + SOURCE_LINES)]
            except (OSError, UnicodeDecodeError, ValueError):
                lines = []
        return {
            "scenario": machine.name,
            "step": step.name,
            "location": span.location(),
            "first_line": span.line,
            "lines": lines,
            "conditions": [condition(c) for c in step.conditions],
            "uses": _consumption(step.max_uses),
        }

    async def graph(self, scenario: str) -> dict[str, Any] | None:
        """The machine's picture and where each live conversation stands on it."""
        machine = await self._machine(scenario)
        if machine is None:
            return None
        d = diagram(machine)
        ids = {"start": "start", **{s.name: f"s{s.index}" for s in machine.steps}}
        positions: dict[str, dict[str, Any]] = {}
        for conv in await self.store.conversations():
            for record in conv.get("machines", ()):
                if record.get("scenario") != machine.name:
                    continue
                node = ids.get(str(record.get("position")), "start")
                place = positions.setdefault(node, {"count": 0, "conversations": []})
                place["count"] += 1
                if len(place["conversations"]) < SAMPLE:
                    place["conversations"].append(_cut(conv.get("conversation")))
        return {
            "scenario": machine.name,
            "title": d.title,
            "start": list(d.start_lines),
            "nodes": [{"id": node_id, "lines": list(label)} for node_id, label in d.nodes],
            "edges": [
                {"source": e.source, "target": e.target, "lines": list(e.lines), "dashed": e.dashed} for e in d.edges
            ],
            "positions": positions,
        }

    async def conversations(self, offset: int, limit: int, query: str) -> dict[str, Any]:
        every = await self.store.conversations()
        if query:
            every = [c for c in every if query in str(c.get("conversation", ""))]
        every.sort(key=lambda c: float(c.get("idle_seconds", 0.0)))  # the most recently used first
        page = every[offset : offset + limit]
        rows = [
            {
                "conversation": _cut(c.get("conversation")),
                "key": c.get("conversation"),
                "idle_seconds": c.get("idle_seconds"),
                "positions": [
                    {"scenario": _cut(m.get("scenario")), "position": _cut(m.get("position"))}
                    for m in c.get("machines", ())[:SAMPLE]
                ],
            }
            for c in page
        ]
        return {"conversations": rows, "total": len(every), "offset": offset}

    async def verify(self) -> dict[str, Any]:
        report = await self.store.verify()
        out: dict[str, Any] = {"ok": bool(report.get("ok"))}
        for name, value in report.items():
            if isinstance(value, list):
                out[name] = [_bounded(v) for v in value[:REPORT]]
                out[name + "_count"] = len(value)
        return out


def _bounded(value: Any) -> Any:
    """A verify item with its bodies left out and long strings cut."""
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items() if k not in ("body", "reply", "no_match")}
    return _cut(value)
