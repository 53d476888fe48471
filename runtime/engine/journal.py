"""The request journal: one entry per answered request, newest last, bounded."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import attrs

from mockllm.runtime.engine.outcome import NoMatchReport


@attrs.define
class JournalEntry:
    id: int
    time: float
    conversation: str
    provider: str
    endpoint: str
    model: str
    stream: bool
    status: int
    scenario: str | None = None
    step: str | None = None
    location: str | None = None
    fallback: bool = False
    echo: bool = False
    no_match: NoMatchReport | None = None
    expectation_failed: str | None = None
    response_id: str = ""
    client_gone: bool = False
    note: str | None = None
    body: Any = None  # the request body, kept for unmatched requests and failed expectations only

    @property
    def unmatched(self) -> bool:
        return self.no_match is not None and not self.fallback

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JournalEntry:
        """An entry back from the JSON form ``GET /_mockllm/requests`` sends."""
        matched = data.get("matched") or {}
        no_match = data.get("no_match")
        return cls(
            id=int(data["id"]),
            time=float(data.get("time", 0.0)),
            conversation=str(data.get("conversation", "")),
            provider=str(data.get("provider", "")),
            endpoint=str(data.get("endpoint", "")),
            model=str(data.get("model", "")),
            stream=bool(data.get("stream", False)),
            status=int(data.get("status", 0)),
            scenario=matched.get("scenario"),
            step=matched.get("step"),
            location=matched.get("location"),
            fallback=bool(data.get("fallback", False)),
            echo=bool(data.get("echo", False)),
            no_match=NoMatchReport.from_json(no_match) if no_match else None,
            expectation_failed=data.get("expectation_failed"),
            response_id=str(data.get("response_id", "")),
            client_gone=bool(data.get("client_gone", False)),
            note=data.get("note"),
            body=data.get("body"),
        )

    def to_json(self) -> dict[str, Any]:
        matched = (
            {"scenario": self.scenario, "step": self.step, "location": self.location} if self.step is not None else None
        )
        return {
            "id": self.id,
            "time": self.time,
            "conversation": self.conversation,
            "provider": self.provider,
            "endpoint": self.endpoint,
            "model": self.model,
            "stream": self.stream,
            "matched": matched,
            "fallback": self.fallback,
            "echo": self.echo,
            "no_match": self.no_match.to_json() if self.no_match is not None else None,
            "expectation_failed": self.expectation_failed,
            "status": self.status,
            "client_gone": self.client_gone,
            "note": self.note,
            "response_id": self.response_id,
            "body": self.body,
        }


class Journal:
    def __init__(self, limit: int) -> None:
        self._limit = max(1, limit)
        self._lock = threading.Lock()
        self._entries: OrderedDict[int, JournalEntry] = OrderedDict()
        self._next = 1

    def next_id(self) -> int:
        with self._lock:
            n = self._next
            self._next += 1
            return n

    def add(self, entry: JournalEntry) -> None:
        with self._lock:
            self._entries[entry.id] = entry
            while len(self._entries) > self._limit:
                self._entries.popitem(last=False)

    def finish(self, entry_id: int, status: int, client_gone: bool = False, note: str | None = None) -> None:
        with self._lock:
            entry = self._entries.get(entry_id)
            if entry is None:
                return
            entry.status = status
            entry.client_gone = entry.client_gone or client_gone
            if note is not None:
                entry.note = note

    def entries(self) -> list[JournalEntry]:
        with self._lock:
            return list(self._entries.values())

    def to_json(self) -> list[dict[str, Any]]:
        with self._lock:
            return [e.to_json() for e in self._entries.values()]

    def drop_conversation(self, conversation: str) -> None:
        with self._lock:
            for k in [k for k, e in self._entries.items() if e.conversation == conversation]:
                del self._entries[k]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
