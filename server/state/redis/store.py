"""Conversation state and the journal in Redis (``mockllm serve --state redis://HOST:PORT/DB``), so any
number of processes and hosts serve one library as if they were one server.

Every request costs one round trip in the common case. Each process keeps the last state and
version it saw of each conversation; it decides the turn on that (the engine's pure
:meth:`~mockllm.runtime.engine.engine.Engine.turn`) and commits with one Lua script that checks the
version is still current, then saves the new state, appends the journal entry, keeps the response
for ``previous_response_id`` and marks the step used -- atomically. When another process moved the
conversation on meanwhile, the script answers the current state instead, and the turn is decided
again on it. Turns of one conversation that arrive while its commit is on its way wait for it, then
are decided one after the other and committed together in one round trip: a busy conversation
costs a round trip per batch, not per request, and its turns never race each other in one process.
Versions come from one counter that never repeats (seeded from the server's clock when Redis starts
empty), so a cached version can never match a later, different state.

Keys (prefix ``mockllm:``): ``c:KEY`` a conversation (hash: version, states), ``convs`` the live
conversations by last use, ``journal`` the journal (a stream, cut to about the journal limit every 64
entries; entry id = stream id), ``fin`` how each answer went (its Delivery, written once; those of
about twice the journal's entries kept) and ``rep`` the reply bodies (cut to the journal's total bytes;
both with their order of writing in ``fin:order`` and ``rep:order``; deliveries.lua, run by settle.lua at
the next loop turn or by a commit sent before then), ``used`` steps used,
``r:ID`` a kept response and ``cr:KEY`` the responses of a conversation. Conversations and responses
expire after the idle time.

Scenarios posted to any process's admin API are shared too (server/state/redis/library.py): the commit
script checks the generation of the library the turn was decided with is still current; when it is
not, the process loads the new library and decides the turn again.

The Lua scripts are files beside this module (scripts.py); the commit's connections are in lane.py,
read below redis-py's API by wire.py; values are written as codec.py says."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import attrs

from mockllm.errors import StateUnavailable, UsageError
from mockllm.runtime.engine.conversations import Conversation, StoredResponse, stored_key
from mockllm.runtime.engine.engine import continued, response_id
from mockllm.runtime.engine.journal import (
    DEFAULT_ENTRY_BODY_BYTES,
    DEFAULT_TOTAL_BYTES,
    Delivery,
    JournalEntry,
    milliseconds,
)
from mockllm.runtime.engine.outcome import Outcome
from mockllm.runtime.jsonout import compact_encoder
from mockllm.server.state.poll_window import DEFAULT_POLL_S, MAX_POLL_S
from mockllm.server.state.posted import Posted
from mockllm.server.state.redis.codec import encode, response_from_json, response_to_json
from mockllm.server.state.redis.lane import Lane
from mockllm.server.state.redis.library import SharedLibrary
from mockllm.server.state.redis.scripts import PREFIX, commit_script, lua, settle_script
from mockllm.server.state.redis.wire import packing
from mockllm.server.state.store import StateStore

if TYPE_CHECKING:
    from mockllm.dsl.machines.compiled import CompiledLibrary
    from mockllm.runtime.engine.conversations import MachineState
    from mockllm.runtime.engine.engine import Engine, Turn
    from mockllm.runtime.request import ChatRequest

log = logging.getLogger("mockllm.server")

REDIS_MISSING = "mockllm: --state redis://… needs the 'redis' extra: pip install 'mockllm[redis]'"
CONNECTIONS = 64  # per process; more concurrent requests wait for one
MAX_ATTEMPTS = 50  # conflicting commits of one request before it is answered 503
MAX_BATCH = 64  # turns of one conversation committed together at most
_T = TypeVar("_T")
_compact = compact_encoder()


def _redis_module() -> Any:
    try:
        import redis.asyncio
        import redis.asyncio.retry
        import redis.backoff
    except ImportError:
        raise UsageError(REDIS_MISSING) from None
    return redis


def check_url(url: str) -> str:
    """``url`` when it names a Redis server (``redis://``, ``rediss://`` or ``unix://``), else a
    :class:`UsageError` saying what is expected."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("redis", "rediss", "unix"):
        raise UsageError(f"mockllm: --state {url}: expected redis://HOST:PORT/DB (or rediss://, unix://)")
    return url


def reachable(url: str) -> None:
    """Check, before serving, that ``url`` names a Redis server that answers: a
    :class:`UsageError` for a URL that is not Redis's or the extra missing, a
    :class:`StateUnavailable` when Redis does not answer."""
    check_url(url)
    redis = _redis_module()
    client = redis.Redis.from_url(url, socket_connect_timeout=2.0, socket_timeout=2.0)
    try:
        client.ping()
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        raise StateUnavailable(f"mockllm: cannot reach Redis at {_where(url)} (--state): {exc}") from None
    except redis.exceptions.RedisError as exc:
        raise StateUnavailable(f"mockllm: Redis at {_where(url)} (--state) refused: {exc}") from None
    finally:
        client.close()


def _where(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    where = f"{host}:{parts.port or 6379}" if host else parts.path
    return f"{parts.scheme}://{where}{parts.path if host else ''}"


_Seen = tuple[int, "dict[str, MachineState] | None", dict[str, Any]]
_NEW: _Seen = (0, None, {})


class RedisStore(StateStore):
    """Conversation state, kept responses, steps used and the journal in Redis (see the module)."""

    shared = True

    def __init__(
        self,
        engine: Engine,
        url: str,
        *,
        root: str = ".",
        idle_seconds: float = 3600.0,
        journal_limit: int = 10_000,
        entry_body_bytes: int = DEFAULT_ENTRY_BODY_BYTES,
        reply_bytes: int = DEFAULT_TOTAL_BYTES,
        cache_size: int = 10_000,
        timeout: float = 10.0,
        poll: float = DEFAULT_POLL_S,
    ) -> None:
        """``reply_bytes``: the most the kept reply bodies may take in all; ``timeout``: how long to wait
        for a connection to Redis and for each of its answers; ``poll``:
        how long to poll for an answer before the loop may sleep (server/state/poll_window.py; 0: never)."""
        if not timeout > 0:
            raise UsageError(f"mockllm: the Redis timeout must be positive, not {timeout!r}")
        if not 0 <= poll <= MAX_POLL_S:
            raise UsageError(f"mockllm: the Redis poll window must be 0 to {MAX_POLL_S:g} seconds, not {poll!r}")
        super().__init__(engine)
        redis = _redis_module()
        self.url = check_url(url)
        self._where = _where(url)
        retry = redis.asyncio.retry.Retry(redis.backoff.ExponentialBackoff(cap=0.05, base=0.005), 2)
        # a request waits for a free connection rather than failing when all are busy
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            url,
            max_connections=CONNECTIONS,
            timeout=timeout,
            decode_responses=True,
            socket_connect_timeout=min(5.0, timeout),
            socket_timeout=timeout,
        )
        pool.connection_class = packing(pool.connection_class)
        self._pool = pool
        self._client = redis.asyncio.Redis(connection_pool=pool, retry=retry)
        self._errors: tuple[type[BaseException], ...] = (
            redis.exceptions.ConnectionError,
            redis.exceptions.TimeoutError,
        )
        self._stale: type[BaseException] = redis.exceptions.ConnectionError
        self._lane = Lane(pool, CONNECTIONS, redis, timeout, poll)
        self._no_script: type[BaseException] = redis.exceptions.NoScriptError
        self._append = self._client.register_script(lua("append"))
        self._drop = self._client.register_script(lua("drop_conversation"))
        self._ttl = max(1, round(idle_seconds))
        self._journal_limit = max(1, journal_limit)
        self._commit = self._client.register_script(commit_script(self._ttl, self._journal_limit))
        self._entry_body_bytes = entry_body_bytes
        self._settle = self._client.register_script(settle_script())
        self._reply_bytes = max(0, reply_bytes)
        self._settling: list[str] = []  # settled, not yet sent to Redis: id, delivery, reply …
        self._settle_soon: asyncio.Handle | None = None  # their going on their own (_settle_waited)
        # per conversation: the version last seen, its states, and the states as stored (which keep the
        # scenarios this process does not serve: another process's library may have more)
        self._cache: OrderedDict[str, _Seen] = OrderedDict()
        self._cache_size = max(1, cache_size)
        self._pending: set[asyncio.Task[None]] = set()
        # per conversation with a commit on its way: the turns that arrived meanwhile, committed next
        self._queued: dict[str, list[tuple[ChatRequest, str | None, asyncio.Future[Outcome]]]] = {}
        self._issued = 0
        engine.id_seed = os.urandom(8).hex()  # response ids unique across the processes sharing Redis
        # the shared library (server/state/redis/library.py): a new epoch forgets every state seen
        self.library = SharedLibrary(engine, self._client, self._call, root, self._cache.clear)

    @property
    def description(self) -> str:
        return f"in Redis at {self._where}"

    # ---- talking to Redis -------------------------------------------------------------------------

    async def _call(self, call: Callable[..., Awaitable[_T]], *args: Any, **kwargs: Any) -> _T:
        try:
            return await call(*args, **kwargs)
        except self._errors as exc:
            self._cache.clear()  # Redis may come back empty: trust nothing seen before
            raise StateUnavailable(
                f"mockllm: the shared state store is unreachable (Redis at {self._where}: {exc}); "
                "nothing was answered or recorded"
            ) from None

    async def ping(self) -> None:
        """Raise :class:`StateUnavailable` unless Redis answers."""
        await self._call(self._client.ping)

    async def close(self) -> None:
        await self._flush_settled()
        for task in list(self._pending):
            await asyncio.gather(task, return_exceptions=True)
        await self.library.withdraw()
        await self._lane.stop()
        await self._client.aclose()
        await self._pool.disconnect()  # a pool given to the client is not closed with it

    def _later(self, call: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``call(*args)`` without waiting for it (a delivery that differs from the plan)."""

        async def run() -> None:
            try:
                await self._call(call, *args)
            except StateUnavailable:
                pass

        task = asyncio.ensure_future(run())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    # ---- a request ----------------------------------------------------------------------------------

    async def _kept(self, rid: str) -> StoredResponse | None:
        names = [PREFIX + "r:" + rid]
        if "_" in rid:
            names.append(PREFIX + "r:" + rid.split("_", 1)[1])
        found = await self._call(self._client.mget, names)
        for raw in found:
            if raw:
                return response_from_json(raw)
        return None

    async def handle(self, chat: ChatRequest, meanwhile: Callable[[Outcome], object] | None = None) -> Outcome:
        prev = chat.previous_response_id
        chat, key, missing = continued(chat, await self._kept(prev) if prev else None)
        queued = self._queued.get(key)
        if queued is not None:  # a commit of this conversation is on its way: this turn joins the next one
            waiting: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
            queued.append((chat, missing, waiting))
            return await waiting
        self._queued[key] = []
        try:
            [outcome] = await self._commit_turns(key, [(chat, missing)], meanwhile)
        finally:
            self._commit_queued(key)
        return outcome

    def _commit_queued(self, key: str) -> None:
        """Commit the turns of ``key`` that arrived during its last commit, in one batch, in order."""
        queued = self._queued[key]
        if not queued:
            del self._queued[key]
            return
        batch, self._queued[key] = queued[:MAX_BATCH], queued[MAX_BATCH:]

        async def commit() -> None:
            try:
                outcomes = await self._commit_turns(key, [(chat, missing) for chat, missing, _ in batch])
            except BaseException as exc:
                for *_, waiting in batch:
                    if not waiting.done():
                        waiting.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
            else:
                for (*_, waiting), outcome in zip(batch, outcomes, strict=True):
                    if not waiting.done():  # a client that left is not answered; its turn was taken
                        waiting.set_result(outcome)
            finally:
                self._commit_queued(key)

        task = asyncio.ensure_future(commit())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _commit_turns(
        self,
        key: str,
        turns: list[tuple[ChatRequest, str | None]],
        meanwhile: Callable[[Outcome], object] | None = None,
    ) -> list[Outcome]:
        """Decide ``turns`` of conversation ``key`` one after the other on the state last seen, and commit
        them together; on the current state again when another process moved the conversation on.
        ``meanwhile`` (one turn only) is called with each decision while its commit is on its way."""
        engine = self.engine
        version, states, stored = self._cache.get(key, _NEW)
        clock = engine.clock
        for _ in range(MAX_ATTEMPTS):
            conv = Conversation(key, 0.0)
            conv.states = dict(states) if states else None
            decided: list[Turn] = []
            for chat, missing in turns:
                self._issued += 1
                decided.append(engine.turn(chat, key, missing, conv, response_id(engine.id_seed, self._issued), 0))
            saved = {**stored, **self._export(conv.states)} if conv.states != states and conv.states else None
            keys = self._commit_keys(key, decided)
            args = self._commit_args(key, decided, version, saved, clock.now())
            ahead = None if meanwhile is None else functools.partial(meanwhile, decided[0].outcome)
            result = await self._call(self._run_commit, keys, args, ahead)
            answer = int(result[0])
            if answer == 2:  # another process changed the scenarios: load them, decide again
                await self.sync_library()
                continue
            if answer == 1:
                first = int(result[1])
                if saved is not None:
                    self._remember(key, (int(result[2]), conv.states, saved))
                elif version != int(result[2]) or key not in self._cache:
                    self._remember(key, (int(result[2]), states, stored))
                return [turn.outcome.with_entry_id(entry_id) for entry_id, turn in enumerate(decided, first)]
            stored = json.loads(result[2] or "{}")
            version, states = int(result[1]), self._import(stored)
        raise StateUnavailable(
            f"mockllm: conversation {key!r} changed under this request {MAX_ATTEMPTS} times in a row; "
            "nothing was answered"
        )

    async def _run_commit(self, keys: list[str], args: list[Any], meanwhile: Callable[[], object] | None) -> Any:
        """The commit script's answer, run on the lane (see :meth:`_run_script`)."""
        return await self._run_script(self._commit, keys, args, meanwhile)

    async def _run_script(
        self, script: Any, keys: list[str], args: list[Any], meanwhile: Callable[[], object] | None, poll: bool = True
    ) -> Any:
        """``script``'s answer, run on the lane: loaded first when Redis does not have it (a new or
        restarted Redis), and sent once more on a new connection when the first has gone stale (never after
        a timeout: Redis may have run a script whose answer did not arrive in time). ``poll``: whether the
        wait for the answer may be polled (:class:`~mockllm.server.state.poll_window.PollWindow`)."""
        for attempt in range(3):
            try:
                return await self._lane.run(
                    "EVALSHA", script.sha, len(keys), *keys, *args, meanwhile=meanwhile, poll=poll
                )
            except self._no_script:
                await self._client.script_load(script.script)
            except self._stale:
                if attempt:
                    raise
        return await self._lane.run("EVALSHA", script.sha, len(keys), *keys, *args, meanwhile=meanwhile, poll=poll)

    def _commit_keys(self, key: str, turns: list[Turn]) -> list[str]:
        keys = [PREFIX + "c:" + key, PREFIX + "cr:" + key]
        keys += [PREFIX + "r:" + (t.remember[0] if t.remember is not None else "") for t in turns]
        return keys

    def _commit_args(
        self, key: str, turns: list[Turn], version: int, saved: dict[str, Any] | None, now: float
    ) -> list[Any]:
        args: list[Any] = [
            version,
            encode(saved) if saved is not None else "",
            key,
            now,
            self.library.generation,
            len(turns),
        ]
        settled = self._settling
        used_member = self.engine.used_member
        for turn in turns:
            used = used_member(turn.used) if turn.used is not None else None
            remember = turn.remember
            args += [
                self._entry_json(turn.entry),
                self.library.salt + used if used else "",
                response_to_json(remember[1]) if remember is not None else "",
                remember[0] if remember is not None else "",
            ]
        if settled:  # the deliveries settled meanwhile ride along (commit.lua): no round trip of their own
            self._settling = []
            self._settle_not_soon()
            args += [2 * self._journal_limit, self._reply_bytes, *settled]
        return args

    def _entry_json(self, entry: JournalEntry) -> str:
        entry.keep_body(self._entry_body_bytes)
        return entry.to_json_text()

    def _remember(self, key: str, seen: _Seen) -> None:
        cache = self._cache
        cache[key] = seen
        cache.move_to_end(key)
        if len(cache) > self._cache_size:
            cache.popitem(last=False)

    def settle(self, entry_id: int, delivery: Delivery) -> None:
        # written once each, as Journal.settle; what one turn of the event loop settles goes in one script
        reply = delivery.reply
        record = {  # (its fields as attrs.asdict gives them, at a tenth of the cost; the reply kept apart)
            "status": delivery.status,
            "client_gone": delivery.client_gone,
            "note": delivery.note,
            "passed_through": delivery.passed_through,
            "recorded": delivery.recorded,
            "arrived": delivery.arrived,
            "first_byte_s": delivery.first_byte_s,
            "ended_s": delivery.ended_s,
        }
        if delivery.ended_s is None:  # not timed by its sender (an MCP call …): it ended now
            record["at"] = self.engine.clock.now()
        # Written at the next turn of the event loop, by a script of their own, unless a commit is sent
        # before then: it carries them (commit.lua), in a script Redis runs anyway, at no round trip of
        # their own (busy servers: many requests a loop turn). Waiting longer for a commit to carry them
        # (2 ms) saved one client's round trip a request but put their Redis work on the next request's
        # path: bench row 9, uvicorn c=1, 0.58x against 0.68x this way. Journal reads here write what is
        # pending first (_delivered).
        settling = self._settling
        settling += (str(entry_id), _compact(record), reply or "")
        if self._settle_soon is None:
            self._settle_soon = asyncio.get_running_loop().call_soon(self._settle_waited)

    def _settle_waited(self) -> None:
        """The loop turn after a delivery was settled: what no commit carried meanwhile goes on its own."""
        self._settle_soon = None
        if self._settling:
            self._later(self._settle_batch)

    def _settle_not_soon(self) -> None:
        timer, self._settle_soon = self._settle_soon, None
        if timer is not None:
            timer.cancel()

    async def _flush_settled(self) -> None:
        """Write what was settled and not yet sent, before reading deliveries or dropping them; an
        unreachable Redis is told by the read that follows."""
        if self._settling:
            try:
                await self._call(self._settle_batch)
            except StateUnavailable:
                pass

    async def _settle_batch(self) -> None:
        batch, self._settling = self._settling, []
        self._settle_not_soon()
        if not batch:
            return
        keys = [PREFIX + "fin", PREFIX + "fin:order", PREFIX + "rep", PREFIX + "rep:order", PREFIX + "rep:bytes"]
        # on the lane, as the commit: redis-py's client costs a request about as much Python as the commit's
        # own exchange (its pool lock, retries, metrics); no poll for the answer, which nothing waits for
        args = [2 * self._journal_limit, self._reply_bytes, *batch]
        await self._run_script(self._settle, keys, args, None, poll=False)

    async def reject(
        self, provider: str, endpoint: str, status: int, message: str, chat: ChatRequest | None = None
    ) -> None:
        entry = self.engine.rejected_entry(provider, endpoint, status, message, chat, 0)
        keys = [PREFIX + "journal", PREFIX + "next"]
        args = [self._journal_limit, self._entry_json(entry)]
        await self._call(self._append, keys=keys, args=args)

    # ---- the admin API --------------------------------------------------------------------------------

    async def reset(self, conversation: str | None = None) -> None:
        await self._flush_settled()  # (so none is written after the reset, of an entry it dropped)
        if conversation is not None:
            key = stored_key(conversation)
            keys = [PREFIX + "c:" + key, PREFIX + "convs", PREFIX + "cr:" + key, PREFIX + "journal"]
            await self._call(self._drop, keys=keys, args=[key, PREFIX + "r:"])
            self._cache.pop(key, None)
            return

        async def drop_all() -> None:
            # ids and versions go on (never reused); the scenarios stay, as on a single server
            keep = {PREFIX + "next", PREFIX + "version", PREFIX + "lib", PREFIX + "posts", PREFIX + "unloaded"}
            batch: list[str] = []
            async for name in self._client.scan_iter(match=PREFIX + "*", count=1000):
                if name not in keep:
                    batch.append(name)
                if len(batch) >= 1000:
                    await self._client.unlink(*batch)
                    batch = []
            if batch:
                await self._client.unlink(*batch)

        await self._call(drop_all)
        self._cache.clear()

    async def _entries(self, start: str, count: int | None, replies: bool = True) -> list[dict[str, Any]]:
        items = await self._call(self._client.xrange, PREFIX + "journal", min=start, max="+", count=count)
        return await self._delivered(items, replies)

    async def journal_newest(self, limit: int, before: int | None) -> list[dict[str, Any]]:
        if before is not None and before <= 1:
            return []
        top = "+" if before is None else f"{before - 1}-1"  # each entry's stream id is ID-1
        items = await self._call(self._client.xrevrange, PREFIX + "journal", max=top, min="-", count=limit)
        return await self._delivered(items, replies=False)  # (the inspector's rows: no reply bodies)

    async def journal_find(self, ids: list[int]) -> list[dict[str, Any]]:
        async def read() -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            for entry_id in ids:
                pipe.xrange(PREFIX + "journal", min=f"{entry_id}-1", max=f"{entry_id}-1")
            return await pipe.execute() if ids else []

        found = await self._call(read)
        return await self._delivered([item for items in found for item in items], replies=False)

    async def journal_kept(self, ids: list[int]) -> list[int]:
        return [int(e["id"]) for e in await self.journal_find(ids)]

    async def journal_newest_id(self) -> int:
        items = await self._call(self._client.xrevrange, PREFIX + "journal", max="+", min="-", count=1)
        return int(items[0][0].split("-", 1)[0]) if items else 0

    async def _delivered(self, items: list[tuple[str, dict[str, str]]], replies: bool = True) -> list[dict[str, Any]]:
        """Journal stream items as entries, each with how its answer went (the ``fin`` hash) and, with
        ``replies``, the reply body sent (``rep``)."""
        if not items:
            return []
        await self._flush_settled()
        ids = [item_id.split("-", 1)[0] for item_id, _ in items]
        finished = await self._call(self._client.hmget, PREFIX + "fin", ids)
        sent = await self._call(self._client.hmget, PREFIX + "rep", ids) if replies else [None] * len(ids)
        out: list[dict[str, Any]] = []
        for (_, fields), entry_id, fin, reply in zip(items, ids, finished, sent, strict=True):
            data = json.loads(fields["e"])
            data["id"] = int(entry_id)
            if fin:  # as JournalEntry reads its delivery: the engine's remark unless the delivery has a note
                record = json.loads(fin)
                at = record.pop("at", None)
                delivery = Delivery(**record)
                if at is not None and isinstance(data.get("time"), int | float):  # ended then: from the entry's time
                    delivery = attrs.evolve(delivery, arrived=data["time"], ended_s=max(0.0, at - data["time"]))
                data["status"] = delivery.status
                data["client_gone"] = delivery.client_gone
                if delivery.note is not None:
                    data["note"] = delivery.note
                data["passed_through"], data["recorded"] = delivery.passed_through, delivery.recorded
                if delivery.arrived is not None:
                    data["arrived"] = delivery.arrived
                data["first_byte_ms"] = milliseconds(delivery.first_byte_s)
                data["duration_ms"] = milliseconds(delivery.ended_s)
            if reply is not None:
                data["reply"] = reply
            out.append(data)
        return out

    async def journal_page(self, limit: int, after: int) -> tuple[list[dict[str, Any]], int | None]:
        entries = await self._entries(f"{after + 1}-0", limit + 1)
        more = len(entries) > limit
        entries = entries[:limit]
        return entries, (entries[-1]["id"] if more and entries else None)

    async def conversations(self) -> list[dict[str, Any]]:
        await self.sync_library()
        now = self.engine.clock.now()

        async def read_states() -> tuple[list[tuple[str, float]], list[str | None]]:
            live = await self._client.zrangebyscore(PREFIX + "convs", now - self._ttl, "+inf", withscores=True)
            pipe = self._client.pipeline(transaction=False)
            for key, _ in live:
                pipe.hget(PREFIX + "c:" + key, "s")
            return live, await pipe.execute() if live else []

        live, raw = await self._call(read_states)
        engine = self.engine
        records = engine.records(
            [
                (key, max(0.0, now - float(used)), self._import(json.loads(data or "{}")))
                for (key, used), data in zip(live, raw, strict=True)
                if data is not None
            ]
        )
        return [r.to_json() for r in records]

    async def verify(self) -> dict[str, Any]:
        await self.sync_library()
        entries = [JournalEntry.from_json(e) for e in await self._entries("-", None, replies=False)]
        members = set(await self._call(self._client.smembers, PREFIX + "used"))
        digests, salt = self.engine.digests(), self.library.salt
        return self.engine.verification(entries, lambda mi, step: f"{salt}{digests[mi]}:{step}" in members)

    # ---- the shared library ---------------------------------------------------------------------------

    def _export(self, states: Mapping[str, MachineState] | None) -> dict[str, list[Any]]:
        """:meth:`Engine.export_states`, each digest prefixed with the epoch's."""
        out = self.engine.export_states(states)
        salt = self.library.salt
        if salt:
            for value in out.values():
                value[0] = salt + value[0]
        return out

    def _import(self, data: Mapping[str, Any]) -> dict[str, MachineState]:
        """:meth:`Engine.import_states` of the states saved in this epoch."""
        salt = self.library.salt
        if salt:
            data = {k: [v[0][len(salt) :], *v[1:]] for k, v in data.items() if str(v[0]).startswith(salt)}
        return self.engine.import_states(data)

    async def sync_library(self) -> None:
        await self.library.sync(self.start)

    async def post_library(self, posted: Posted, compiled: CompiledLibrary) -> None:
        await self.library.post(self.start, posted, compiled)

    async def clear_library(self) -> None:
        await self.library.change(self.start, "clear")

    async def restore_library(self) -> None:
        await self.library.change(self.start, "restore")

    async def reload_library(self, library: CompiledLibrary) -> None:
        """The files edited (``--watch``): they replace the ones the server started with, under the posts."""
        async with self.library.lock:
            self.start = library
            self.engine.load(self.library.assembled(library))

    def unloaded_here(self) -> list[dict[str, Any]]:
        return self.library.unloaded_here()

    async def not_loaded(self) -> list[dict[str, Any]]:
        return await self.library.not_loaded()


__all__ = ["PREFIX", "REDIS_MISSING", "RedisStore", "check_url", "reachable"]
