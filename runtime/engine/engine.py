"""The engine: one instance of every scenario's state machine per conversation; selects the step for
a request, advances the state and plans the reply. Pure and synchronous: no I/O, time from a Clock.

Selection: machines in library order (priority, then load order); in each, the eligible steps in
file order; the first whose conditions all hold and whose captures all match wins. Matching and the
state change are atomic per conversation (one lock each); the engine-level locks guard only the
tables shared between conversations."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mockllm.dsl.machines.compiled import START, CompiledLibrary, CompiledStep, Machine
from mockllm.dsl.operations import CHAT_TURNS
from mockllm.dsl.span import NO_SPAN
from mockllm.dsl.tree import describe
from mockllm.dsl.tree.nodes import Echo, ReplyBlock
from mockllm.errors import RegexTimeout
from mockllm.runtime.clock import Clock, SystemClock
from mockllm.runtime.engine import state_codec, views
from mockllm.runtime.engine.conditions import (
    bind,
    bind_all,
    capture,
    evaluate,
    holds,
)
from mockllm.runtime.engine.conversations import (
    CONVERSATION_HEADER,
    Conversation,
    ConversationRecord,
    ConversationTable,
    MachineState,
    ResponseStore,
    StoredResponse,
    conversation_key,
    stored_key,
)
from mockllm.runtime.engine.journal import (
    DEFAULT_ENTRY_BODY_BYTES,
    DEFAULT_PAGE,
    DEFAULT_TOTAL_BYTES,
    Delivery,
    Journal,
    JournalEntry,
)
from mockllm.runtime.engine.loaded import Loaded, location
from mockllm.runtime.engine.nomatch import MachineView, build_report, template_env
from mockllm.runtime.engine.outcome import NoMatchReport, Outcome
from mockllm.runtime.reply.plan import ErrorPlan, MessagePlan, Plan, RawPlan
from mockllm.runtime.reply.planner import needs_call_offset, needs_env, plan_reply
from mockllm.runtime.reply.vectors import default_plan, plan_inputs
from mockllm.runtime.request import ChatRequest, Message, ToolCall, resolve_tool_names
from mockllm.runtime.values import fast_frozen

ECHO_BLOCK = ReplyBlock((Echo(),))
EXPECTATION_PREFIX = "mockllm: expectation failed"


@fast_frozen
class _Selection:
    machine: Machine | None = None
    machine_index: int = -1
    step: CompiledStep | None = None
    captures: Mapping[str, str] = attrs.field(factory=dict)
    report: NoMatchReport | None = None
    echo: bool = False


def _used_up(step: CompiledStep, used: int) -> bool:
    return step.max_uses is not None and used >= step.max_uses


_NO_ENV: Mapping[str, str] = {}


def _env(
    block: ReplyBlock, chat: ChatRequest, machine: Machine | None, captures: Mapping[str, str]
) -> Mapping[str, str]:
    """The template variables of a reply (nothing for a block without templates, which reads none)."""
    if not needs_env(block):
        return _NO_ENV
    env: dict[str, str] = {}
    if machine is not None:
        for let in machine.lets:
            env[let.name] = let.value
    env.update(captures)
    env["request.model"] = chat.model
    env["request.last_user_message"] = chat.last_user_message() or ""
    for m in chat.messages:
        r = m.tool_result
        if r is not None and r.name:
            env[f"tool_result.{r.name}"] = r.content
    return env


def _where(where: str | tuple[Machine, CompiledStep]) -> str:
    """A reply's place for messages (built only when a message needs it)."""
    if isinstance(where, str):
        return where
    machine, step = where
    return f'scenario "{machine.name}", step `{step.name}` ({location(step.span)})'


def _expectation_failure(
    chat: ChatRequest, machine: Machine, step: CompiledStep, captures: Mapping[str, str]
) -> tuple[Plan, str, None] | None:
    """The 400 plan and the failure text of the first of the step's expectations that fails, if any
    (templates in them bound to the scenario's lets and the captures)."""
    for cond in step.expects:
        cond, _missing = bind(cond, {**{let.name: let.value for let in machine.lets}, **captures})
        try:
            ok, seen = evaluate(cond, chat)
        except RegexTimeout as exc:
            raise exc.at(_where((machine, step))) from None
        if not ok:
            failure = f"{describe.condition(cond)} — seen {seen} — in {_where((machine, step))}"
            message = f"{EXPECTATION_PREFIX}: {failure}"
            return ErrorPlan(chat.model, 400, message), failure, None
    return None


def _call_offset(chat: ChatRequest) -> int:
    return sum(len(m.tool_calls) for m in chat.messages)


def _not_found(chat: ChatRequest, missing: str) -> ErrorPlan:
    """The error for a continuation whose history is gone, in the words its adapter gives (Anthropic's
    404 ``thread_not_found``, on which the SDK replays the whole conversation; the Responses API's 400)."""
    how = chat.continuation
    if how is None:
        return ErrorPlan(chat.model, 400, f"mockllm: no answer is kept under the id '{missing}'")
    return ErrorPlan(chat.model, how.lost_status, how.lost_message.replace("{id}", missing), code=how.lost_code)


def without_payloads(value: Any) -> Any:
    """A request body with each attachment's payload (a ``data:`` URL, or a long run of base64) replaced
    by a note of its length, for the journal."""
    if isinstance(value, dict):
        return {k: without_payloads(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_payloads(v) for v in value]
    if isinstance(value, str) and (
        value.startswith("data:") or (len(value) >= _PAYLOAD_CHARS and _BASE64.fullmatch(value))
    ):
        return f"<{len(value)} characters of attachment data, not kept>"
    return value


_PAYLOAD_CHARS = 64
_BASE64 = re.compile(r"[A-Za-z0-9+/=_\-]+")


def journal_attachments(chat: ChatRequest) -> tuple[tuple[str, str, int], ...]:
    """What the journal shows of a request's images, audio and files: kind, media type and size."""
    if not chat.attachments:
        for m in chat.messages:  # (a loop, not any(): no generator on every request)
            if m.attachments:
                break
        else:
            return ()
    found = [*chat.attachments, *(a for m in chat.messages for a in m.attachments)]
    return tuple((a.kind, a.media_type, a.size) for a in found)


def _status(plan: Plan | None) -> int:
    if type(plan) is MessagePlan:
        return 200
    if plan is None:
        return 404
    if isinstance(plan, (ErrorPlan, RawPlan)):
        return plan.status
    return 200


def continued(chat: ChatRequest, stored: StoredResponse | None) -> tuple[ChatRequest, str, str | None]:
    """The request with the history it continues prepended (a Responses ``previous_response_id``, an
    Anthropic thread's ``previous_message_id``; ``stored`` is what was kept under that id), its
    conversation key, and the id when it names nothing kept (never answered, evicted or reset)."""
    prev = chat.previous_response_id
    if not prev:
        return chat, conversation_key(chat), None
    if stored is None:
        return chat, conversation_key(chat), prev
    chat = attrs.evolve(chat, messages=resolve_tool_names(stored.history + chat.messages))
    if chat.thread == "continue":  # the thread keeps its system prompt and tools (create-only fields)
        chat = attrs.evolve(chat, system=chat.system or stored.system, tools=chat.tools or stored.tools)
    explicit = chat.header(CONVERSATION_HEADER)
    return chat, stored_key(explicit) if explicit else stored.conversation, None


_ID_BITS = 200  # 50 hex digits
_ID_MASK = (1 << _ID_BITS) - 1
#: odd, so ``issued -> issued * _ID_STEP`` is one-to-one modulo 2**200: no two turns share an id
_ID_STEP = int.from_bytes(hashlib.sha256(b"mockllm-response-step").digest()[:25], "big") | 1
_ID_BASE = int.from_bytes(hashlib.sha256(b"mockllm-response-").digest()[:25], "big")


def response_id(seed: str, issued: int) -> str:
    """The ``issued``-th response id of an engine (50 hex digits, different for every ``issued``).

    ``seed`` (random, secret) sets processes sharing one state store apart: their ids are a digest
    keyed by it, so no client can work out another's ``previous_response_id`` from its own. A lone
    engine (no seed) only needs distinct ids: its count, spread over the range by an odd constant."""
    if seed:
        key = seed.encode()[:64]
        return hashlib.blake2b(str(issued).encode(), key=key, digest_size=_ID_BITS // 8).hexdigest()
    return ((_ID_BASE + issued * _ID_STEP) & _ID_MASK).to_bytes(_ID_BITS // 8, "big").hex()


@fast_frozen
class Turn:
    """What one request does (:meth:`Engine.turn`): the outcome, the journal entry, the step used
    (machine, generation, step index) and the response to keep for a later turn (id, response)."""

    outcome: Outcome
    entry: JournalEntry
    used: tuple[str, int, int] | None
    remember: tuple[str, StoredResponse] | None


class Engine:
    def __init__(
        self,
        library: CompiledLibrary | None,
        *,
        clock: Clock | None = None,
        max_conversations: int = 10_000,
        idle_seconds: float = 3600.0,
        journal_limit: int = 10_000,
        journal_entry_body_bytes: int = DEFAULT_ENTRY_BODY_BYTES,
        journal_total_bytes: int = DEFAULT_TOTAL_BYTES,
    ) -> None:
        self._clock: Clock = clock if clock is not None else SystemClock()
        self.max_conversations = max_conversations  # the bounds, for a store that keeps state elsewhere
        self.idle_seconds = idle_seconds
        self.journal_limit = journal_limit
        self.journal_entry_body_bytes = journal_entry_body_bytes
        self.journal_total_bytes = journal_total_bytes
        self._lock = threading.Lock()  # generations, used steps, response counter
        self._table = ConversationTable(self._clock, max_conversations, idle_seconds)
        self._responses = ResponseStore(self._clock, max_conversations, idle_seconds)
        self._journal = Journal(
            journal_limit, entry_body_bytes=journal_entry_body_bytes, total_bytes=journal_total_bytes
        )
        self._generation = 0
        self._used: set[tuple[str, int, int]] = set()  # (machine, generation, step index)
        self._issued = 0
        self.id_seed = ""  # set apart response ids of processes that share a state store
        self._loaded: Loaded | None = None
        if library is not None:
            self.load(library)

    # ---- library ------------------------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def library(self) -> CompiledLibrary | None:
        loaded = self._loaded
        return loaded.library if loaded is not None else None

    def load(self, library: CompiledLibrary | None) -> None:
        """Replace the library. Conversations keep the state of machines whose definition is unchanged;
        a changed or new machine starts afresh in every conversation. ``None`` means echo only."""
        with self._lock:
            if library is None:
                self._loaded = None
                return
            old: dict[str, tuple[Machine, int]] = {}
            if self._loaded is not None:
                for m, g in zip(self._loaded.library.machines, self._loaded.generations, strict=True):
                    old[m.name] = (m, g)
            generations: list[int] = []
            for m in library.machines:
                prev = old.get(m.name)
                if prev is not None and prev[0] == m:
                    generations.append(prev[1])
                else:
                    self._generation += 1
                    generations.append(self._generation)
            self._loaded = Loaded(library, tuple(generations))

    # ---- matching -----------------------------------------------------------------------------------

    def _continue(self, chat: ChatRequest) -> tuple[ChatRequest, str, str | None]:
        prev = chat.previous_response_id
        return continued(chat, self._responses.get(prev) if prev else None)

    def _select(
        self, loaded: Loaded | None, conv: Conversation, chat: ChatRequest, *, commit: bool, report: bool
    ) -> _Selection:
        """Find the step for ``chat``; with ``commit``, advance the state; with ``report``, explain a
        no-match. Call with ``conv.lock`` held."""
        if loaded is None:
            return _Selection(echo=True)
        chat_only = chat.operation in CHAT_TURNS
        input_steps = loaded.input_steps
        machines = loaded.library.machines
        index = loaded.index
        if index is None:
            order: Sequence[int] = range(len(machines))
            found: dict[int, set[int]] = {}
        else:
            found = index.candidates(chat)
            order = sorted(found.keys() | index.unguarded.keys())
        for mi in order:
            machine = machines[mi]
            state = loaded.state(mi, conv)
            if index is None:
                steps: Sequence[int] = loaded.eligible(mi, state)
            else:
                allowed = found.get(mi, set()) | index.unguarded.get(mi, frozenset())
                if machine.order_any:
                    uses = state.uses_by_index()
                    steps = [i for i in sorted(allowed) if not _used_up(machine.steps[i], uses.get(i, 0))]
                else:
                    steps = [i for i in loaded.eligible(mi, state) if i in allowed]
            templated = loaded.templated[mi]
            for idx in steps:
                if not chat_only and (mi, idx) not in input_steps:
                    continue
                step = machine.steps[idx]
                try:
                    conditions = step.conditions
                    if templated and idx in templated:
                        bound = bind_all(step.conditions, template_env(machine, state))
                        if bound is None:
                            continue
                        conditions = bound
                    for c in conditions:  # a plain loop: no generator per step tried
                        if not holds(c, chat):
                            break
                    else:
                        taken: dict[str, str] = {}
                        for cap in step.captures:
                            value = capture(cap, chat)
                            if value is None:
                                break
                            taken[cap.name] = value
                        else:
                            captures = state.captured()
                            if taken:
                                captures.update(taken)
                            if commit:
                                kept = captures if taken else None  # nothing new: the state's own, as they are
                                conv.set_state(machine.name, state.advance(idx, step.max_uses, kept))
                            return _Selection(machine, mi, step, captures)
                except RegexTimeout as exc:  # the request gets the error, naming the step
                    raise exc.at(_where((machine, step))) from None
        if not chat_only:
            return _Selection(echo=True)  # an embedding no step answers: the default embedder's
        if not report:
            return _Selection()
        views = []
        for mi, machine in enumerate(machines):
            state = loaded.state(mi, conv)
            views.append(MachineView(machine, state, loaded.eligible(mi, state)))
        return _Selection(report=build_report(chat, conv.key, views))

    def _plan(
        self,
        block: ReplyBlock,
        chat: ChatRequest,
        env: Mapping[str, str],
        where: str | tuple[Machine, CompiledStep],
        conversation: str,
    ) -> tuple[Plan, str | None]:
        try:
            # (no history, no calls in it: an MCP call's or an embedding's offset is 0, whatever the block)
            offset = _call_offset(chat) if chat.messages and needs_call_offset(block) else 0
            return plan_reply(block, chat, env, call_offset=offset, conversation=conversation), None
        except Exception as exc:  # a reply that cannot be built must not crash the server
            message = f"mockllm: could not build the reply of {_where(where)}: {exc}"
            return ErrorPlan(chat.model, 500, message), message

    def _decide(
        self, loaded: Loaded | None, chat: ChatRequest, sel: _Selection, key: str
    ) -> tuple[Plan | None, str | None, str | None]:
        """The plan for a selection, the expectation failure if any, and a note for the journal."""
        if chat.operation not in CHAT_TURNS:
            return self._decide_inputs(chat, sel, key)
        if sel.echo:
            plan, note = self._plan(ECHO_BLOCK, chat, _env(ECHO_BLOCK, chat, None, {}), "the echo responder", key)
            return plan, None, note
        if sel.step is not None and sel.machine is not None:
            step, machine = sel.step, sel.machine
            failed = _expectation_failure(chat, machine, step, sel.captures)
            if failed is not None:
                return failed
            env = _env(step.reply, chat, machine, sel.captures)
            plan, note = self._plan(step.reply, chat, env, (machine, step), key)
            return plan, None, note
        fallback = loaded.library.fallback if loaded is not None else None
        if fallback is not None:
            plan, note = self._plan(fallback, chat, _env(fallback, chat, None, {}), "the fallback", key)
            return plan, None, note
        return None, None, None

    def _decide_inputs(
        self, chat: ChatRequest, sel: _Selection, key: str
    ) -> tuple[Plan | None, str | None, str | None]:
        """:meth:`_decide` for an embedding or moderation request: a matched step's reply with its
        vectors or flags; anything else, the default embedder (never the fallback, which answers chat)."""
        step, machine = sel.step, sel.machine
        if step is None or machine is None:
            return default_plan(chat), None, None
        failed = _expectation_failure(chat, machine, step, sel.captures)
        if failed is not None:
            return failed
        env = _env(step.reply, chat, machine, sel.captures)
        plan, note = self._plan(step.reply, chat, env, (machine, step), key)
        return plan_inputs(plan, step.reply, chat), None, note

    def handle(self, chat: ChatRequest) -> Outcome:
        """Select the step for ``chat``, advance its conversation, plan the reply, journal it."""
        chat, key, missing = self._continue(chat)
        conv = self._table.get(key)
        with self._lock:
            self._issued += 1
            issued = self._issued
        entry_id = self._journal.next_id()
        with conv.lock:
            turn = self.turn(chat, key, missing, conv, response_id(self.id_seed, issued), entry_id)
        if turn.used is not None and turn.used not in self._used:  # (a step used again: no lock to take)
            with self._lock:
                self._used.add(turn.used)
        self._journal.add(turn.entry)
        if turn.remember is not None:
            self._responses.keep(*turn.remember)
        return turn.outcome

    def turn(
        self,
        chat: ChatRequest,
        key: str,
        missing: str | None,
        conv: Conversation,
        response_id: str,
        entry_id: int,
    ) -> Turn:
        """What ``chat`` does in conversation ``conv`` (whose states the caller owns: the lock held, or a
        copy): ``conv``'s states advance, and the turn says what to journal, which step was used and
        which response to keep. No table, journal or clock beyond the journal entry's time is touched,
        so a shared state store can load the states, call this, and save them."""
        loaded = self._loaded
        if missing is not None:
            plan: Plan | None = _not_found(chat, missing)
            note: str | None = "mockllm keeps answered responses only within its eviction bounds and until a reset"
            sel = _Selection()
            failure = None
        else:
            want_report = loaded is not None and loaded.library.fallback is None
            try:
                sel = self._select(loaded, conv, chat, commit=True, report=want_report)
                plan, failure, note = self._decide(loaded, chat, sel, key)
            except RegexTimeout as exc:  # nothing advanced: the step's conditions never finished
                sel, failure, note = _Selection(), None, exc.message()
                plan = ErrorPlan(chat.model, 400, exc.message())
        fallback = loaded is not None and sel.step is None and not sel.echo and missing is None and plan is not None
        machine, step = sel.machine, sel.step
        used: tuple[str, int, int] | None = None
        location: str | None = None
        if step is not None and machine is not None and loaded is not None:
            used = (machine.name, loaded.generations[sel.machine_index], step.index)
            location = loaded.locations[sel.machine_index][step.index]
        scenario = machine.name if machine is not None else None
        step_name = step.name if step is not None else None
        no_match = sel.report if plan is None else None
        attachments = journal_attachments(chat)
        # positional, in the fields' order: as keywords, these two calls cost 0.9 µs more a request (a
        # call with twenty keywords matches each by name)
        entry = JournalEntry(
            entry_id,  # id
            self._clock.now(),  # time
            key,  # conversation
            chat.provider,
            chat.endpoint,
            chat.model,
            chat.stream,
            _status(plan),  # planned
            scenario,
            step_name,  # step
            location,
            fallback,
            sel.echo,
            no_match,
            failure,  # expectation_failed
            response_id,
            note,  # remark
            # kept as bounded JSON text by the journal (`mockllm explain`, the inspector); attachments as
            # kind, type and size, never their payload
            without_payloads(chat.body) if attachments else chat.body,  # body
            attachments=attachments,
            operation=chat.operation,
            body_bound=None if attachments else chat.body_size,
        )
        remember: tuple[str, StoredResponse] | None = None
        how = chat.continuation
        if how is not None and isinstance(plan, MessagePlan):  # later turns may continue from this answer
            remember = (how.kept_id(response_id), self._stored(key, chat, plan, how.call_prefix, how.call_length))
        outcome = Outcome(
            key,  # conversation
            entry_id,
            plan,
            scenario,
            step_name,  # step
            step.span if step is not None else NO_SPAN,  # step_span
            fallback,
            no_match,
            failure,  # expectation_failed
            response_id,
        )
        return Turn(outcome, entry, used, remember)

    def _stored(self, key: str, chat: ChatRequest, plan: MessagePlan, prefix: str, length: int) -> StoredResponse:
        """The history and the reply (its tool calls with the ids the adapter sends: ``prefix`` and
        ``length`` as in :meth:`PlannedToolCall.id_for`) for a request that continues from this one."""
        calls = tuple(ToolCall(c.id_for(prefix, length), c.name, c.arguments) for c in plan.tool_calls)
        reply = Message(role="assistant", text=plan.text, tool_calls=calls)
        return StoredResponse(key, (*chat.messages, reply), self._clock.monotonic(), chat.system, chat.tools)

    def explain(self, chat: ChatRequest) -> Outcome:
        """What :meth:`handle` would answer, without changing any state or the journal. When a fallback
        would answer, ``no_match`` still carries the report on the nearest steps."""
        loaded = self._loaded
        chat, key, _missing = self._continue(chat)
        conv = self._table.peek(key) or Conversation(key, self._clock.monotonic())
        try:
            with conv.lock:
                sel = self._select(loaded, conv, chat, commit=False, report=True)
            plan, failure, _note = self._decide(loaded, chat, sel, key)
        except RegexTimeout as exc:
            sel, failure = _Selection(), None
            plan = ErrorPlan(chat.model, 400, exc.message())
        return Outcome(
            conversation=key,
            entry_id=0,
            plan=plan,
            scenario=sel.machine.name if sel.machine is not None else None,
            step=sel.step.name if sel.step is not None else None,
            step_span=sel.step.span if sel.step is not None else NO_SPAN,
            fallback=loaded is not None and sel.step is None and not sel.echo and plan is not None,
            no_match=sel.report,
            expectation_failed=failure,
        )

    # ---- bookkeeping --------------------------------------------------------------------------------

    def settle(self, entry_id: int, delivery: Delivery) -> None:
        """Record how a journalled request was answered: the status the client received (0: none),
        whether it went away, what happened on the way. Once per entry: see :class:`Journal`. Untimed
        (an MCP call, a session's response), it ended now."""
        self._journal.settle(entry_id, delivery, None if delivery.ended_s is not None else self._clock.now())

    def reject(self, provider: str, endpoint: str, status: int, message: str, chat: ChatRequest | None = None) -> None:
        """Journal a request refused before matching (missing credentials, a body that is not valid
        JSON, a history the API forbids): nothing was matched or advanced, but ``verify`` reports it,
        since the client got an error the scenarios never asked for. ``chat`` is the parsed request
        when parsing got that far. Only the first 500 characters of the message are kept."""
        self._journal.add(self.rejected_entry(provider, endpoint, status, message, chat, self._journal.next_id()))

    def rejected_entry(
        self, provider: str, endpoint: str, status: int, message: str, chat: ChatRequest | None, entry_id: int
    ) -> JournalEntry:
        """The journal entry of a refused request (see :meth:`reject`)."""
        return JournalEntry(
            id=entry_id,
            time=self._clock.now(),
            conversation=conversation_key(chat) if chat is not None else "",
            provider=chat.provider if chat is not None else provider,
            endpoint=endpoint,
            model=chat.model if chat is not None else "",
            stream=chat.stream if chat is not None else False,
            planned=status,
            rejected=message[:500],
            operation=chat.operation if chat is not None else None,
        )

    def reset(self, conversation: str | None = None) -> None:
        """Forget every conversation, the journal and step usage; or just one conversation."""
        if conversation is None:
            self._table.clear()
            self._responses.clear()
            self._journal.clear()
            with self._lock:
                self._used.clear()
            return
        key = stored_key(conversation)  # the header value as sent, or the key the views show
        self._table.drop(key)
        self._responses.drop_conversation(key)
        self._journal.drop_conversation(key)

    def journal(self) -> list[dict[str, Any]]:
        return self._journal.to_json()

    def journal_page(self, limit: int = DEFAULT_PAGE, after: int = 0) -> tuple[list[dict[str, Any]], int | None]:
        """One page of the journal, oldest first, and the ``after`` of the next page (see
        :meth:`Journal.page`)."""
        return self._journal.page(limit, after)

    def journal_newest(self, limit: int = DEFAULT_PAGE, before: int | None = None) -> list[dict[str, Any]]:
        """The newest entries below ``before``, newest first (see :meth:`Journal.newest`)."""
        return self._journal.newest(limit, before)

    def journal_find(self, ids: list[int]) -> list[dict[str, Any]]:
        """The kept entries with these ids (see :meth:`Journal.find`)."""
        return self._journal.find(ids)

    def journal_kept(self, ids: list[int]) -> list[int]:
        return self._journal.kept(ids)

    def journal_newest_id(self) -> int:
        return self._journal.newest_id()

    def conversations(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.conversation_records()]

    def conversation_records(self) -> list[ConversationRecord]:
        """Each live conversation with every scenario's position, use counts and captures in it."""
        now = self._clock.monotonic()
        live: list[tuple[str, float, Mapping[str, MachineState]]] = []
        for conv in self._table.snapshot():
            with conv.lock:
                states = dict(conv.states) if conv.states is not None else {}
            live.append((conv.key, max(0.0, now - conv.last_used), states))
        return self.records(live)

    def records(self, live: Sequence[tuple[str, float, Mapping[str, MachineState]]]) -> list[ConversationRecord]:
        """The records of conversations given as (key, idle seconds, machine states by scenario)."""
        return views.conversation_records(self._loaded, live)

    def verify(self) -> dict[str, Any]:
        """What a test's teardown asserts on: requests nothing answered, failed expectations, requests
        refused before matching, and steps never used in any conversation since the last reset."""
        with self._lock:
            used = set(self._used)
        loaded = self._loaded
        if loaded is None:
            return self.verification(self._journal.entries(), lambda mi, step: True)
        gens = loaded.generations
        names = [m.name for m in loaded.library.machines]
        return self.verification(self._journal.entries(), lambda mi, step: (names[mi], gens[mi], step) in used)

    def verification(self, entries: Sequence[JournalEntry], used: Callable[[int, int], bool]) -> dict[str, Any]:
        """:meth:`verify` over journal ``entries``; ``used(machine index, step index)`` says whether a
        step of the loaded library was used since the last reset (the admin API's JSON of
        :func:`views.verification`)."""
        return views.verification(self._loaded, entries, used).to_json()

    # ---- state kept outside this process (server/state/redis/store.py): runtime/engine/state_codec.py

    def digests(self) -> tuple[str, ...]:
        """Per scenario of the loaded library, a digest of its definition."""
        loaded = self._loaded
        return loaded.digests() if loaded is not None else ()

    def export_states(self, states: Mapping[str, MachineState] | None) -> dict[str, list[Any]]:
        """Machine states as JSON values (see :func:`state_codec.export_states`)."""
        return state_codec.export_states(self._loaded, states)

    def import_states(self, data: Mapping[str, Any]) -> dict[str, MachineState]:
        """:meth:`export_states` back (see :func:`state_codec.import_states`)."""
        return state_codec.import_states(self._loaded, data)

    def used_member(self, used: tuple[str, int, int]) -> str | None:
        """A step used, named across processes (see :func:`state_codec.used_member`)."""
        return state_codec.used_member(self._loaded, used)


__all__ = ["EXPECTATION_PREFIX", "START", "Engine"]
