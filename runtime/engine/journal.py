"""The request journal: one entry per answered request, newest last, bounded in count and in bytes.

A request body is kept (for unmatched requests and failed expectations) as compact JSON *text*, not
as the parsed objects: a 200 KB body parsed into dicts and lists costs several times its size in small
objects the allocator never hands back, so 2,000 such requests took the server from 36 to 439 MB and
a reset released none of it (issue 12). As text, each body is one allocation, its size is known, and:

- a body longer than ``entry_body_bytes`` keeps only its first ``entry_body_bytes`` characters, and
  the entry says ``body_truncated`` and the full ``body_bytes``;
- the journal as a whole keeps at most ``total_bytes`` (bodies plus a fixed allowance per entry):
  past it, and past ``limit`` entries, the oldest entries go first.

Every entry passes through :meth:`Journal.add`, whoever writes it, so the caps cover them all.

An entry holds two facts, each written once: what was asked and decided (the engine adds the entry
as it answers, so a request still being answered is listed), and how the answer went -- the
:class:`Delivery`, which the server settles once, when the client has what it gets (the status it
received; 0 when it gave up before any answer). ``status`` reads the delivery, and until there is one
(a request still being answered, or an engine used without a server) the status the plan asks for.

Every entry keeps its request body, and its delivery the reply body (cut to :data:`REPLY_CHARS`), so
the inspector (server/inspector) can show both; both count against ``total_bytes``. The delivery also
says when the request arrived, when the first byte of its reply went out and when the answer ended
(the server's clock, read once at each of those moments: nothing more on the way)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from json.encoder import encode_basestring  # json's own, in C
from typing import Any

import attrs

from mockllm.runtime.engine.outcome import NoMatchReport
from mockllm.runtime.jsonout import compact_encoder
from mockllm.runtime.values import fast_frozen

_TRUTH = ("false", "true")
_json_text = compact_encoder(default=str)


# JSON text of the parts of journal entries many share (see JournalEntry.to_json_text), by what they
# are made of; forgotten all at once past _FRAGMENTS_LIMIT (a library of that many steps, or models)
_FRAGMENTS: dict[tuple[Any, ...], str] = {}
_FRAGMENTS_LIMIT = 4096
_FRAGMENT_CHARS = 512  # the longest kept


def _keep(key: tuple[Any, ...], text: str) -> None:
    if len(_FRAGMENTS) >= _FRAGMENTS_LIMIT:
        _FRAGMENTS.clear()
    _FRAGMENTS[key] = text


def milliseconds(seconds: float | None) -> float | None:
    """Seconds as milliseconds, to the microsecond, as the journal's JSON gives its timings."""
    return None if seconds is None else round(seconds * 1000.0, 3)


def _number(value: float | None) -> str:
    """A number (or None) as ``json`` writes it."""
    if value is None:
        return "null"
    return repr(value) if type(value) is float and value - value == 0 else _json_text(value)


def _text(value: str | None) -> str:
    """A string (or None) as JSON, as ``json`` writes it with ``ensure_ascii=False``."""
    return "null" if value is None else encode_basestring(str(value))


@fast_frozen
class Delivery:
    """How one answer went: the HTTP status the client received (0: none, it gave up first), whether
    it went away, and what happened on the way (a hang's end, a cut stream …)."""

    status: int
    client_gone: bool = False
    note: str | None = None
    reply: str | None = None  # the body the client was sent (a stream's frames joined), cut to REPLY_CHARS
    passed_through: bool = False  # answered by the real API (`mockllm serve --passthrough`), not a step
    recorded: str | None = None  # the script file the passed-through exchange was written into
    # when (server's clock): the request arrived (seconds since the epoch), and the first byte of the
    # reply went out and the answer ended or the client went away (seconds after it arrived; None: not
    # known -- nothing was sent, or whoever settled it did not time it)
    arrived: float | None = None
    first_byte_s: float | None = None
    ended_s: float | None = None

    def timed(self, arrived: float, first_byte_s: float | None, ended_s: float) -> Delivery:
        """This delivery with its timing (built directly: a tenth of what ``attrs.evolve`` costs, on
        every request)."""
        return Delivery(
            self.status,
            self.client_gone,
            self.note,
            self.reply,
            self.passed_through,
            self.recorded,
            arrived,
            first_byte_s,
            ended_s,
        )


@attrs.define
class JournalEntry:
    id: int
    time: float
    conversation: str
    provider: str
    endpoint: str
    model: str
    stream: bool
    planned: int  # the status the engine's plan asks for: 404 for no match, an error's status …
    scenario: str | None = None
    step: str | None = None
    location: str | None = None
    fallback: bool = False
    echo: bool = False
    no_match: NoMatchReport | None = None
    expectation_failed: str | None = None
    response_id: str = ""
    remark: str | None = None  # the engine's note: why a reply could not be built, a regex timed out …
    body: Any = None  # the request body (as JSON text once added: see body_text)
    # set by Journal.add: the body as compact JSON text (cut to the per-entry cap) and its full size
    body_text: str | None = None
    body_bytes: int | None = None
    body_truncated: bool = False
    # the error answered to a request refused before matching (auth, bad JSON, bad history): the
    # client got an error no scenario asked for, so verify reports it
    rejected: str | None = None
    delivery: Delivery | None = None  # how the answer went: settled once, by whoever sent it
    # the request's images, audio and files: (kind, media type, size in bytes), never their payload
    attachments: tuple[tuple[str, str, int], ...] = ()
    operation: str | None = None  # what the request asked for (`endpoint is "…"`): chat, embeddings, mcp …
    # the length of the JSON text ``body`` was parsed from (or a part of), when known: see keep_body
    body_bound: int | None = None

    @property
    def status(self) -> int:
        """The status the client received; until the answer has gone, the one the plan asks for."""
        return self.planned if self.delivery is None else self.delivery.status

    @property
    def client_gone(self) -> bool:
        return self.delivery is not None and self.delivery.client_gone

    @property
    def note(self) -> str | None:
        """What happened on the way (from the delivery), else the engine's remark."""
        said = self.delivery.note if self.delivery is not None else None
        return self.remark if said is None else said

    @property
    def reply(self) -> str | None:
        """The reply body the client was sent (cut to :data:`REPLY_CHARS`), once delivered."""
        return self.delivery.reply if self.delivery is not None else None

    @property
    def arrived(self) -> float:
        """When the request arrived (seconds since the epoch): timed by the server, else when journalled."""
        delivery = self.delivery
        return self.time if delivery is None or delivery.arrived is None else delivery.arrived

    @property
    def first_byte_ms(self) -> float | None:
        """Milliseconds from arrival to the first byte of the reply (None: none sent, or not timed)."""
        return milliseconds(self.delivery.first_byte_s) if self.delivery is not None else None

    @property
    def duration_ms(self) -> float | None:
        """Milliseconds from arrival to the answer's end or the client going away (None: still going)."""
        return milliseconds(self.delivery.ended_s) if self.delivery is not None else None

    @property
    def answered_by(self) -> str:
        """Who answered, in words: the step (with its place), the fallback, the echo responder, or nobody."""
        if self.step is not None:
            where = f" ({self.location})" if self.location else ""
            return f'scenario "{self.scenario}", step `{self.step}`{where}'
        if self.fallback:
            return "the fallback: no step matched (each scenario's steps are used up per conversation, until a reset)"
        if self.echo:
            if self.operation in (None, "chat", "realtime"):
                return "the echo responder: no scenarios are loaded"
            return f'the default {self.operation} answer: no step names `endpoint is "{self.operation}"`'
        if self.no_match is not None:
            return "nobody: no step matched (see no_match)"
        return "nobody"

    @property
    def passed_through(self) -> bool:
        """Answered by the real API: no step matched, and ``--passthrough`` forwarded the request."""
        return self.delivery is not None and self.delivery.passed_through

    @property
    def recorded(self) -> str | None:
        """The script file the passed-through exchange was written into (``--record-missing``)."""
        return self.delivery.recorded if self.delivery is not None else None

    @property
    def unmatched(self) -> bool:
        """No step answered and nothing else did: not the fallback, not the real API."""
        return self.no_match is not None and not self.fallback and not self.passed_through

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
            planned=int(data.get("status", 0)),
            scenario=matched.get("scenario"),
            step=matched.get("step"),
            location=matched.get("location"),
            fallback=bool(data.get("fallback", False)),
            echo=bool(data.get("echo", False)),
            no_match=NoMatchReport.from_json(no_match) if no_match else None,
            expectation_failed=data.get("expectation_failed"),
            response_id=str(data.get("response_id", "")),
            remark=data.get("note"),
            body=data.get("body"),
            body_bytes=data.get("body_bytes"),
            body_truncated=bool(data.get("body_truncated", False)),
            rejected=data.get("rejected"),
            delivery=_delivery_from_json(data),
            attachments=tuple(
                (str(a.get("kind", "")), str(a.get("media_type", "")), int(a.get("size", 0)))
                for a in data.get("attachments") or ()
                if isinstance(a, Mapping)
            ),
            operation=data.get("operation"),
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
            "answered_by": self.answered_by,
            "fallback": self.fallback,
            "echo": self.echo,
            "no_match": self.no_match.to_json() if self.no_match is not None else None,
            "expectation_failed": self.expectation_failed,
            "status": self.status,
            "client_gone": self.client_gone,
            "note": self.note,
            "response_id": self.response_id,
            "body": self._body_json(),
            "body_bytes": self.body_bytes,
            "body_truncated": self.body_truncated,
            "rejected": self.rejected,
            "attachments": [{"kind": k, "media_type": m, "size": n} for k, m, n in self.attachments],
            "reply": self.reply,
            "passed_through": self.passed_through,
            "recorded": self.recorded,
            "operation": self.operation,
            "arrived": self.arrived,
            "first_byte_ms": self.first_byte_ms,
            "duration_ms": self.duration_ms,
        }

    def to_json_text(self) -> str:
        """:meth:`to_json` as compact JSON text (``separators=(",", ":")``, non-ASCII kept), the same
        text ``json`` makes of it, written directly: the shared state store writes one per request, and
        through ``json`` the dict costs about four times as much. The parts one step's answers share
        (where the request came, who answered) are written once and kept (:data:`_FRAGMENTS`)."""
        fragments = _FRAGMENTS
        asked = (self.provider, self.endpoint, self.model, self.stream)
        request = fragments.get(asked)
        if request is None:
            request = (
                f'"provider":{_text(self.provider)},"endpoint":{_text(self.endpoint)},"model":{_text(self.model)},'
                f'"stream":{_TRUTH[bool(self.stream)]}'
            )
            if len(request) <= _FRAGMENT_CHARS:  # (the model and path are the client's: a long one is not kept)
                _keep(asked, request)
        who = (
            self.scenario,
            self.step,
            self.location,
            bool(self.fallback),
            bool(self.echo),
            self.no_match is None,
            self.operation,  # (an echo's answered_by names it)
        )
        answer = fragments.get(who)
        if answer is None:
            step = self.step
            matched = (
                "null"
                if step is None
                else f'{{"scenario":{_text(self.scenario)},"step":{_text(step)},"location":{_text(self.location)}}}'
            )
            answer = (
                f'"matched":{matched},"answered_by":{_text(self.answered_by)},'
                f'"fallback":{_TRUTH[bool(self.fallback)]},"echo":{_TRUTH[bool(self.echo)]}'
            )
            _keep(who, answer)
        no_match = "null" if self.no_match is None else _json_text(self.no_match.to_json())
        body = "null" if self.body is None and self.body_text is None else _json_text(self._body_json())
        body_bytes = self.body_bytes
        time = self.time  # a finite float as json writes it; anything else through json
        when = repr(time) if type(time) is float and time - time == 0 else _json_text(time)
        return (
            f'{{"id":{int(self.id)},"time":{when},"conversation":{_text(self.conversation)},{request},{answer},'
            f'"no_match":{no_match},"expectation_failed":{_text(self.expectation_failed)},'
            f'"status":{int(self.status)},"client_gone":{_TRUTH[self.client_gone]},'
            f'"note":{_text(self.note)},"response_id":{_text(self.response_id)},"body":{body},'
            f'"body_bytes":{"null" if body_bytes is None else int(body_bytes)},'
            f'"body_truncated":{_TRUTH[bool(self.body_truncated)]},'
            f'"rejected":{_text(self.rejected)},"attachments":{self._attachments_text()},"reply":{_text(self.reply)},'
            f'"passed_through":{_TRUTH[self.passed_through]},"recorded":{_text(self.recorded)},'
            f'"operation":{_text(self.operation)},"arrived":{_number(self.arrived)},'
            f'"first_byte_ms":{_number(self.first_byte_ms)},"duration_ms":{_number(self.duration_ms)}}}'
        )

    def _attachments_text(self) -> str:
        if not self.attachments:
            return "[]"
        return _json_text([{"kind": k, "media_type": m, "size": n} for k, m, n in self.attachments])

    def _body_json(self) -> Any:
        if self.body_text is None:
            return self.body
        if self.body_truncated:
            return self.body_text  # the first characters of the JSON text, as a string
        return json.loads(self.body_text)

    def keep_body(self, cap: int) -> int:
        """Store the body as JSON text, cut to ``cap`` characters; the bytes it now costs."""
        if self.body is None or self.body_text is not None:
            return len(self.body_text or "")
        body, bound = self.body, self.body_bound
        # _size counts at most 8 per character of the JSON a body was parsed from (8 for a 1-character
        # number, a string's length and quotes for at least as many characters …): a body from at most
        # cap / 2 characters is under 4 * cap without walking it (a third of keep_body's time, on a
        # small body; what is kept and counted is the same)
        size = 0 if bound is not None and 0 < bound and 2 * bound <= cap else _size(body, 4 * cap)
        self.body = None
        if size > 4 * cap:  # a large body (an image inline): only its start is written, never the whole
            text = _json_text(_start(body, [cap]))
            self.body_bytes = size
            self.body_truncated = True
        else:
            text = _json_text(body)  # json.dumps(…, ensure_ascii=False, separators=(",", ":"), default=str)
            self.body_bytes = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if len(text) > cap:
            text = text[:cap]
            self.body_truncated = True
        self.body_text = text
        return len(text)


def _size(value: Any, limit: int) -> int:
    """About how many characters ``value``'s JSON text has (its strings' lengths and two for every other
    part), counted only until past ``limit``: a cost of its parts, never of its bytes."""
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2 + sum(len(str(k)) + 3 for k in item)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            total += 2 + len(item)
            stack.extend(item)
        else:
            total += 8
    return total


def _start(value: Any, left: list[int]) -> Any:
    """The first ``left[0]`` characters' worth of ``value``: long strings cut, later parts dropped."""
    if left[0] <= 0:
        return "…"
    if isinstance(value, str):
        cut = value[: left[0]]
        left[0] -= len(cut) + 2
        return cut if len(cut) == len(value) else cut + "…"
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if left[0] <= 0:
                break
            left[0] -= len(str(key)) + 3
            out[str(key)] = _start(item, left)
        return out
    if isinstance(value, list | tuple):
        items: list[Any] = []
        for item in value:
            if left[0] <= 0:
                break
            items.append(_start(item, left))
        return items
    left[0] -= 8
    return value


REPLY_CHARS = 16 * 1024  # the most of a reply body an entry keeps


def _delivery_from_json(data: Mapping[str, Any]) -> Delivery | None:
    """The delivery as far as the JSON form tells it: a client that left, the reply sent, an answer
    from the real API."""
    passed = bool(data.get("passed_through", False))
    reply = data.get("reply")
    ended = data.get("duration_ms")
    if not data.get("client_gone") and not passed and reply is None and ended is None:
        return None
    recorded = data.get("recorded")
    first = data.get("first_byte_ms")
    arrived = data.get("arrived")
    return Delivery(
        int(data.get("status", 0)),
        client_gone=bool(data.get("client_gone")),
        reply=reply,
        passed_through=passed,
        recorded=str(recorded) if recorded is not None else None,
        arrived=float(arrived) if isinstance(arrived, int | float) else None,
        first_byte_s=first / 1000.0 if isinstance(first, int | float) else None,
        ended_s=ended / 1000.0 if isinstance(ended, int | float) else None,
    )


ENTRY_ALLOWANCE = 1024  # bytes counted per entry besides its body: the fields and a no-match report
DEFAULT_ENTRY_BODY_BYTES = 64 * 1024
DEFAULT_TOTAL_BYTES = 32 * 1024 * 1024
DEFAULT_PAGE = 100
MAX_PAGE = 1000


class Journal:
    def __init__(
        self,
        limit: int,
        *,
        entry_body_bytes: int = DEFAULT_ENTRY_BODY_BYTES,
        total_bytes: int = DEFAULT_TOTAL_BYTES,
    ) -> None:
        self._limit = max(1, limit)
        self._entry_body_bytes = max(0, entry_body_bytes)
        self._total_bytes = max(ENTRY_ALLOWANCE, total_bytes)
        self._lock = threading.Lock()
        self._entries: OrderedDict[int, JournalEntry] = OrderedDict()
        self._cost: dict[int, int] = {}
        self._bytes = 0
        self._next = 1

    @property
    def bytes(self) -> int:
        """What the kept entries count against ``total_bytes``."""
        return self._bytes

    def next_id(self) -> int:
        with self._lock:
            n = self._next
            self._next += 1
            return n

    def add(self, entry: JournalEntry) -> None:
        cost = ENTRY_ALLOWANCE + entry.keep_body(self._entry_body_bytes)  # outside the lock: may be large
        with self._lock:
            self._entries[entry.id] = entry
            self._cost[entry.id] = cost
            self._bytes += cost
            while len(self._entries) > 1 and (len(self._entries) > self._limit or self._bytes > self._total_bytes):
                old, _ = self._entries.popitem(last=False)
                self._bytes -= self._cost.pop(old)

    def settle(self, entry_id: int, delivery: Delivery, now: float | None = None) -> None:
        """Write how entry ``entry_id`` was answered. Once: a later call, or one for an entry already
        dropped, changes nothing. A delivery its sender did not time (``ended_s`` None) ends at ``now``
        (Unix time), counted from when the entry was journalled."""
        with self._lock:
            entry = self._entries.get(entry_id)
            if entry is not None and entry.delivery is None:
                if delivery.ended_s is None and now is not None:
                    delivery = delivery.timed(entry.time, delivery.first_byte_s, max(0.0, now - entry.time))
                entry.delivery = delivery
                if delivery.reply:
                    self._cost[entry_id] += len(delivery.reply)
                    self._bytes += len(delivery.reply)

    def entries(self) -> list[JournalEntry]:
        with self._lock:
            return list(self._entries.values())

    def to_json(self) -> list[dict[str, Any]]:
        return [e.to_json() for e in self.entries()]

    def page(self, limit: int = DEFAULT_PAGE, after: int = 0) -> tuple[list[dict[str, Any]], int | None]:
        """Up to ``limit`` entries (at most :data:`MAX_PAGE`) with ids above ``after``, oldest first, and
        the id to ask ``after`` for the next page (None when this page reaches the newest entry)."""
        limit = max(1, min(limit, MAX_PAGE))
        with self._lock:
            picked: list[JournalEntry] = []
            more = False
            for entry_id, entry in self._entries.items():  # ids ascend: skip to `after`, then take
                if entry_id <= after:
                    continue
                if len(picked) == limit:
                    more = True
                    break
                picked.append(entry)
        return [e.to_json() for e in picked], (picked[-1].id if more and picked else None)

    def newest(self, limit: int = DEFAULT_PAGE, before: int | None = None) -> list[dict[str, Any]]:
        """Up to ``limit`` entries (at most :data:`MAX_PAGE`) with ids below ``before`` (all when None),
        newest first: what the inspector lists first."""
        limit = max(1, min(limit, MAX_PAGE))
        with self._lock:
            picked: list[JournalEntry] = []
            for entry_id in reversed(self._entries):
                if before is not None and entry_id >= before:
                    continue
                picked.append(self._entries[entry_id])
                if len(picked) == limit:
                    break
        return [e.to_json() for e in picked]

    def find(self, ids: list[int]) -> list[dict[str, Any]]:
        """The entries with these ids that are still kept, in the order asked."""
        with self._lock:
            found = [self._entries.get(i) for i in ids]
        return [e.to_json() for e in found if e is not None]

    def kept(self, ids: list[int]) -> list[int]:
        """Those of ``ids`` still kept (a reset or the bounds drop entries)."""
        with self._lock:
            return [i for i in ids if i in self._entries]

    def newest_id(self) -> int:
        """The newest kept entry's id (0: none)."""
        with self._lock:
            return next(reversed(self._entries), 0)

    def drop_conversation(self, conversation: str) -> None:
        with self._lock:
            for k in [k for k, e in self._entries.items() if e.conversation == conversation]:
                del self._entries[k]
                self._bytes -= self._cost.pop(k)

    def clear(self) -> None:
        with self._lock:
            self._entries = OrderedDict()
            self._cost = {}
            self._bytes = 0
