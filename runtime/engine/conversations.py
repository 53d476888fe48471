"""Conversations: which chat a request belongs to, and each chat's machine states.

A conversation is named by the ``x-mockllm-conversation`` header, else by a fingerprint of its
opening (system prompt and first user message), which every later turn of a chat repeats whatever
the provider. Each conversation holds, per scenario machine it has touched, a small immutable
:class:`MachineState`. The table is bounded by count (least recently used first) and idle time, so
memory stays flat however many conversations a long run opens."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

import attrs

from mockllm.dsl.machines.compiled import START
from mockllm.runtime.clock import Clock
from mockllm.runtime.request import ChatRequest, Message, Tool
from mockllm.runtime.values import fast_frozen

CONVERSATION_HEADER = "x-mockllm-conversation"


def fingerprint(chat: ChatRequest) -> str:
    """16 hex digits of sha256 over the opening: system prompt and first user message."""
    system = chat.system
    first_user: str | None = None
    if system:
        for m in chat.messages:
            if m.role == "user":
                first_user = m.text
                break
    else:  # no system field: the system messages, all of them
        parts: list[str] = []
        for m in chat.messages:
            if m.role == "system":
                parts.append(m.text)
            elif first_user is None and m.role == "user":
                first_user = m.text
        system = "\n".join(parts)
    opening = f"{system}\x00{first_user or ''}"
    key = _FINGERPRINTS.get(opening)
    if key is None:  # (every turn of a conversation opens the same way: each opening is hashed once)
        key = hashlib.sha256(opening.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        if len(_FINGERPRINTS) >= _FINGERPRINTS_LIMIT:
            _FINGERPRINTS.clear()
        if len(opening) <= _FINGERPRINT_CHARS:  # long openings are hashed each time, not kept
            _FINGERPRINTS[opening] = key
    return key


_FINGERPRINTS: dict[str, str] = {}  # recent openings -> their fingerprints
_FINGERPRINTS_LIMIT = 2048
_FINGERPRINT_CHARS = 512  # at most about 4 MB kept, whatever the openings


KEY_CHARS = 64  # a conversation header longer than this is kept as its start and a digest
_KEY_HEAD = 40


def stored_key(value: str) -> str:
    """The key a conversation named ``value`` is kept under: ``value`` itself up to
    :data:`KEY_CHARS` characters; past that its first 40 characters, an ellipsis and 16 hex digits of
    its sha256 -- so a conversation costs the same whatever the size of its header (12,000
    conversations keyed by 10,000-character headers took 110 MB when the header itself was kept).
    Applying it to a stored key gives the same key back."""
    if len(value) <= KEY_CHARS:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{value[:_KEY_HEAD]}…{digest}"


def conversation_key(chat: ChatRequest) -> str:
    explicit = chat.header(CONVERSATION_HEADER)
    if explicit:
        return stored_key(explicit)
    return fingerprint(chat)


@fast_frozen
class MachineState:
    """One machine's state in one conversation. ``generation`` ties it to the machine definition it
    was built for: a reloaded, changed machine starts afresh."""

    generation: int
    position: int = START
    uses: tuple[tuple[int, int], ...] = ()  # (step index, times used), only for steps used, by index
    captures: tuple[tuple[str, str], ...] = ()

    def used(self, index: int) -> int:
        for i, count in self.uses:
            if i == index:
                return count
        return 0

    def uses_by_index(self) -> dict[int, int]:
        return dict(self.uses)

    def captured(self) -> dict[str, str]:
        return dict(self.captures)

    def advance(self, index: int, max_uses: int | None, captures: dict[str, str] | None) -> MachineState:
        """The state after step ``index`` matched (same rule as :meth:`Machine.advance`, kept sparse so
        a long machine costs nothing per request): its use count grows; once used up, the position
        moves to it (`always` steps never move the position). ``captures``: all of them after the step,
        or None when it captured nothing new."""
        counts = dict(self.uses)
        before = counts.get(index)
        used = counts[index] = 1 if before is None else before + 1
        position = self.position
        if max_uses is not None and used >= max_uses:
            position = index
        kept = self.captures if captures is None else tuple(captures.items())
        # a step used before keeps its place in the (sorted) counts: only a new one needs sorting in
        uses = tuple(counts.items()) if before is not None else tuple(sorted(counts.items()))
        return MachineState(self.generation, position, uses, kept)


@attrs.frozen
class MachineRecord:
    """One scenario's state in a conversation, as ``GET /_mockllm/conversations`` reports it."""

    scenario: str
    position: str  # "start", or the name of the step last used up
    uses: Mapping[str, int]  # step name -> times used
    captures: Mapping[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "position": self.position,
            "uses": dict(self.uses),
            "captures": dict(self.captures),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MachineRecord:
        return cls(
            str(data["scenario"]), str(data["position"]), dict(data.get("uses", {})), dict(data.get("captures", {}))
        )


@attrs.frozen
class ConversationRecord:
    """A live conversation: its key, how long it has been idle, and each scenario's state in it."""

    conversation: str
    idle_seconds: float
    machines: tuple[MachineRecord, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation,
            "idle_seconds": self.idle_seconds,
            "machines": [m.to_json() for m in self.machines],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConversationRecord:
        machines = tuple(MachineRecord.from_json(m) for m in data.get("machines", ()))
        return cls(str(data["conversation"]), float(data.get("idle_seconds", 0.0)), machines)


class Conversation:
    __slots__ = ("key", "last_used", "lock", "states")

    def __init__(self, key: str, now: float) -> None:
        self.key = key
        self.lock = threading.Lock()
        self.last_used = now
        self.states: dict[str, MachineState] | None = None  # created on first use

    def state(self, machine: str, generation: int) -> MachineState:
        if self.states is not None:
            s = self.states.get(machine)
            if s is not None and s.generation == generation:
                return s
        return MachineState(generation)

    def set_state(self, machine: str, state: MachineState) -> None:
        if self.states is None:
            self.states = {}
        self.states[machine] = state


V = TypeVar("V")


class _Bounded(Generic[V]):
    """Values by key, least recently used first: at most ``max_count`` of them, each forgotten once
    ``idle_seconds`` have passed since :meth:`_used` (callers hold ``_lock``); thread-safe."""

    def __init__(self, clock: Clock, max_count: int, idle_seconds: float) -> None:
        self._clock = clock
        self._max = max(1, max_count)
        self._idle = idle_seconds
        self._lock = threading.Lock()
        self._table: OrderedDict[str, V] = OrderedDict()

    def _used(self, value: V) -> float:
        """When ``value`` was last used (the clock's monotonic time)."""
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._table)

    def _evict_idle(self, now: float) -> None:
        while self._table:
            oldest = next(iter(self._table.values()))
            if now - self._used(oldest) <= self._idle:
                break
            self._table.popitem(last=False)

    def _put(self, key: str, value: V) -> None:
        """``value`` as the newest, the oldest dropped past the bound."""
        self._table[key] = value
        self._table.move_to_end(key)
        while len(self._table) > self._max:
            self._table.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._table.clear()


class ConversationTable(_Bounded[Conversation]):
    """Conversations by key, least recently used first; thread-safe."""

    def _used(self, value: Conversation) -> float:
        return value.last_used

    def get(self, key: str) -> Conversation:
        """The conversation named ``key``, created if new, marked as just used."""
        now = self._clock.monotonic()
        with self._lock:
            table = self._table
            if table and now - next(iter(table.values())).last_used > self._idle:  # (_evict_idle's test, inline)
                self._evict_idle(now)
            conv = table.get(key)
            if conv is None:
                conv = Conversation(key, now)
                self._put(key, conv)
            else:
                conv.last_used = now
                self._table.move_to_end(key)
            return conv

    def peek(self, key: str) -> Conversation | None:
        """The conversation if it exists (not created, not marked as used)."""
        with self._lock:
            self._evict_idle(self._clock.monotonic())
            return self._table.get(key)

    def drop(self, key: str) -> None:
        with self._lock:
            self._table.pop(key, None)

    def snapshot(self) -> list[Conversation]:
        with self._lock:
            self._evict_idle(self._clock.monotonic())
            return list(self._table.values())

    def __iter__(self) -> Iterator[Conversation]:
        return iter(self.snapshot())


@fast_frozen
class StoredResponse:
    conversation: str
    history: tuple[Message, ...]  # the request's messages and the assistant reply
    stored_at: float = attrs.field(eq=False)
    system: str = ""  # what an Anthropic thread keeps for the turns that continue it
    tools: tuple[Tool, ...] = ()


class ResponseStore(_Bounded[StoredResponse]):
    """What the server answered on the Responses API, by response id, for ``previous_response_id``; and
    on Anthropic message threads, by message id, for ``thread.previous_message_id``.
    Bounded like the conversation table."""

    def _used(self, value: StoredResponse) -> float:
        return value.stored_at

    def keep(self, response_id: str, stored: StoredResponse) -> None:
        with self._lock:
            self._put(response_id, stored)

    def get(self, response_id: str) -> StoredResponse | None:
        """The stored response, trying the id as given and without a provider prefix (``resp_…``)."""
        with self._lock:
            self._evict_idle(self._clock.monotonic())
            found = self._table.get(response_id)
            if found is None and "_" in response_id:
                found = self._table.get(response_id.split("_", 1)[1])
            return found

    def drop_conversation(self, conversation: str) -> None:
        with self._lock:
            for rid in [k for k, v in self._table.items() if v.conversation == conversation]:
                del self._table[rid]
