"""Conversation state and the journal in Redis (``mockllm serve --state redis://HOST:PORT/DB``), so any
number of processes and hosts serve one library as if they were one server.

Every request costs one round trip in the common case. Each process keeps the last state and
version it saw of each conversation; it decides the turn on that (the engine's pure
:meth:`~mockllm.runtime.engine.engine.Engine.turn`) and commits with one Lua script that checks the
version is still current, then saves the new state, appends the journal entry, keeps the response
for ``previous_response_id`` and marks the step used -- atomically. When another process moved the
conversation on meanwhile, the script answers the current state instead, and the turn is decided
again on it. Versions come from one counter that never repeats (seeded from the server's clock when
Redis starts empty), so a cached version can never match a later, different state.

Keys (prefix ``mockllm:``): ``c:KEY`` a conversation (hash: version, states), ``convs`` the live
conversations by last use, ``journal`` the journal (a stream capped at the journal limit, entry id
= stream id), ``fin`` how each answer went (its Delivery, written once, where it differs from the
plan), ``used`` steps used, ``r:ID`` a kept response and ``cr:KEY`` the responses of a
conversation. Conversations and responses expire after the idle time."""

from __future__ import annotations

import asyncio
import json
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import attrs

from mockllm.errors import StateUnavailable, UsageError
from mockllm.runtime.engine.conversations import Conversation, StoredResponse, stored_key
from mockllm.runtime.engine.engine import continued, response_id
from mockllm.runtime.engine.journal import DEFAULT_ENTRY_BODY_BYTES, Delivery, JournalEntry
from mockllm.runtime.engine.outcome import Outcome
from mockllm.server.store import StateStore

if TYPE_CHECKING:
    from mockllm.runtime.engine.conversations import MachineState
    from mockllm.runtime.engine.engine import Engine, Turn
    from mockllm.runtime.request import ChatRequest

REDIS_MISSING = "mockllm: --state redis://… needs the 'redis' extra: pip install 'mockllm[redis]'"
PREFIX = "mockllm:"
CONNECTIONS = 64  # per process; more concurrent requests wait for one
MAX_ATTEMPTS = 50  # conflicting commits of one request before it is answered 503
_T = TypeVar("_T")

# The version counter starts from the server's clock in microseconds when Redis has none (a fresh or
# restarted Redis), so versions never repeat across restarts.
_NEXT_VERSION = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  local t = redis.call('TIME')
  redis.call('SET', KEYS[1], tonumber(t[1]) * 1000000 + tonumber(t[2]))
end
return redis.call('INCR', KEYS[1])
"""


def _commit_script() -> str:
    """The commit. KEYS: conversation, convs, journal, next id, used, versions, response, the
    conversation's responses. ARGV: expected version, new states ("" unchanged), conversation, now,
    ttl, journal cap, entry, used step ("" none), response ("" none), response id. Answers
    {1, entry id, version} or, when the version is not the expected one, {0, version, states}."""
    next_version = _NEXT_VERSION.replace("KEYS[1]", "KEYS[6]").replace("return redis.call", "v = redis.call")
    return f"""
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then
  return {{0, v, redis.call('HGET', KEYS[1], 's') or ''}}
end
local ttl = tonumber(ARGV[5])
if ARGV[2] ~= '' then
{next_version}
  redis.call('HSET', KEYS[1], 'v', v, 's', ARGV[2])
elseif v == 0 then
  redis.call('HSET', KEYS[1], 'v', 0, 's', '{{}}')
end
redis.call('EXPIRE', KEYS[1], ttl)
local now = tonumber(ARGV[4])
redis.call('ZADD', KEYS[2], now, ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ttl)
local n = redis.call('INCR', KEYS[4])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[6], n .. '-1', 'e', ARGV[7])
if ARGV[8] ~= '' then
  redis.call('SADD', KEYS[5], ARGV[8])
end
if ARGV[9] ~= '' then
  redis.call('SET', KEYS[7], ARGV[9], 'EX', ttl)
  redis.call('SADD', KEYS[8], ARGV[10])
  redis.call('EXPIRE', KEYS[8], ttl)
end
return {{1, n, v}}
"""


# KEYS: journal, next id. ARGV: journal cap, entry. A request refused before matching.
APPEND = """
local n = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], n .. '-1', 'e', ARGV[2])
return n
"""

# KEYS: conversation, convs, conversation's responses, journal. ARGV: conversation, response key prefix.
DROP_CONVERSATION = """
for _, id in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  redis.call('DEL', ARGV[2] .. id)
end
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('ZREM', KEYS[2], ARGV[1])
local gone = {}
for _, item in ipairs(redis.call('XRANGE', KEYS[4], '-', '+')) do
  local entry = cjson.decode(item[2][2])
  if entry['conversation'] == ARGV[1] then
    table.insert(gone, item[1])
  end
end
for i = 1, #gone, 500 do
  redis.call('XDEL', KEYS[4], unpack(gone, i, math.min(i + 499, #gone)))
end
return #gone
"""


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
        idle_seconds: float = 3600.0,
        journal_limit: int = 10_000,
        entry_body_bytes: int = DEFAULT_ENTRY_BODY_BYTES,
        cache_size: int = 10_000,
    ) -> None:
        super().__init__(engine)
        redis = _redis_module()
        self.url = check_url(url)
        self._where = _where(url)
        retry = redis.asyncio.retry.Retry(redis.backoff.ExponentialBackoff(cap=0.05, base=0.005), 2)
        # a request waits for a free connection rather than failing when all are busy
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            url,
            max_connections=CONNECTIONS,
            timeout=10.0,
            decode_responses=True,
            socket_connect_timeout=5.0,
            socket_timeout=10.0,
        )
        self._pool = pool
        self._client = redis.asyncio.Redis(connection_pool=pool, retry=retry)
        self._errors: tuple[type[BaseException], ...] = (
            redis.exceptions.ConnectionError,
            redis.exceptions.TimeoutError,
        )
        self._commit = self._client.register_script(_commit_script())
        self._append = self._client.register_script(APPEND)
        self._drop = self._client.register_script(DROP_CONVERSATION)
        self._ttl = max(1, round(idle_seconds))
        self._journal_limit = max(1, journal_limit)
        self._entry_body_bytes = entry_body_bytes
        # per conversation: the version last seen, its states, and the states as stored (which keep the
        # scenarios this process does not serve: another process's library may have more)
        self._cache: OrderedDict[str, _Seen] = OrderedDict()
        self._cache_size = max(1, cache_size)
        self._planned: dict[int, int] = {}  # journal entry -> the status it was written with
        self._pending: set[asyncio.Task[None]] = set()
        self._issued = 0
        engine.id_seed = os.urandom(8).hex()  # response ids unique across the processes sharing Redis

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
        for task in list(self._pending):
            await asyncio.gather(task, return_exceptions=True)
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
                return _response_from_json(raw)
        return None

    async def handle(self, chat: ChatRequest) -> Outcome:
        engine = self.engine
        prev = chat.previous_response_id
        chat, key, missing = continued(chat, await self._kept(prev) if prev else None)
        version, states, stored = self._cache.get(key, _NEW)
        clock = engine.clock
        for _ in range(MAX_ATTEMPTS):
            conv = Conversation(key, 0.0)
            conv.states = dict(states) if states else None
            self._issued += 1
            turn = engine.turn(chat, key, missing, conv, response_id(engine.id_seed, self._issued), 0)
            saved = {**stored, **engine.export_states(conv.states)} if conv.states != states and conv.states else None
            keys = self._commit_keys(key, turn)
            args = self._commit_args(turn, version, saved, clock.now())
            result = await self._call(self._commit, keys=keys, args=args)
            if int(result[0]) == 1:
                entry_id = int(result[1])
                if saved is not None:
                    self._remember(key, (int(result[2]), conv.states, saved))
                elif version != int(result[2]) or key not in self._cache:
                    self._remember(key, (int(result[2]), states, stored))
                self._planned[entry_id] = turn.entry.planned
                if len(self._planned) > 100_000:
                    self._planned.clear()
                return attrs.evolve(turn.outcome, entry_id=entry_id)
            stored = json.loads(result[2] or "{}")
            version, states = int(result[1]), engine.import_states(stored)
        raise StateUnavailable(
            f"mockllm: conversation {key!r} changed under this request {MAX_ATTEMPTS} times in a row; "
            "nothing was answered"
        )

    def _commit_keys(self, key: str, turn: Turn) -> list[str]:
        rid = turn.remember[0] if turn.remember is not None else ""
        return [
            PREFIX + "c:" + key,
            PREFIX + "convs",
            PREFIX + "journal",
            PREFIX + "next",
            PREFIX + "used",
            PREFIX + "version",
            PREFIX + "r:" + rid,
            PREFIX + "cr:" + key,
        ]

    def _commit_args(self, turn: Turn, version: int, saved: dict[str, Any] | None, now: float) -> list[Any]:
        used = self.engine.used_member(turn.used) if turn.used is not None else None
        remember = turn.remember
        return [
            version,
            json.dumps(saved, separators=(",", ":")) if saved is not None else "",
            turn.outcome.conversation,
            now,
            self._ttl,
            self._journal_limit,
            self._entry_json(turn.entry),
            used or "",
            _response_to_json(remember[1]) if remember is not None else "",
            remember[0] if remember is not None else "",
        ]

    def _entry_json(self, entry: JournalEntry) -> str:
        entry.keep_body(self._entry_body_bytes)
        return json.dumps(entry.to_json(), ensure_ascii=False, separators=(",", ":"), default=str)

    def _remember(self, key: str, seen: _Seen) -> None:
        cache = self._cache
        cache[key] = seen
        cache.move_to_end(key)
        if len(cache) > self._cache_size:
            cache.popitem(last=False)

    def settle(self, entry_id: int, delivery: Delivery) -> None:
        planned = self._planned.pop(entry_id, None)
        if planned is not None and delivery == Delivery(planned):
            return  # what the journal already says: no round trip
        value = json.dumps(attrs.asdict(delivery))
        self._later(self._client.hsetnx, PREFIX + "fin", str(entry_id), value)  # once, as Journal.settle

    async def reject(
        self, provider: str, endpoint: str, status: int, message: str, chat: ChatRequest | None = None
    ) -> None:
        entry = self.engine.rejected_entry(provider, endpoint, status, message, chat, 0)
        keys = [PREFIX + "journal", PREFIX + "next"]
        args = [self._journal_limit, self._entry_json(entry)]
        await self._call(self._append, keys=keys, args=args)

    # ---- the admin API --------------------------------------------------------------------------------

    async def reset(self, conversation: str | None = None) -> None:
        if conversation is not None:
            key = stored_key(conversation)
            keys = [PREFIX + "c:" + key, PREFIX + "convs", PREFIX + "cr:" + key, PREFIX + "journal"]
            await self._call(self._drop, keys=keys, args=[key, PREFIX + "r:"])
            self._cache.pop(key, None)
            return

        async def drop_all() -> None:
            keep = {PREFIX + "next", PREFIX + "version"}  # ids and versions go on: never reused
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

    async def _entries(self, start: str, count: int | None) -> list[dict[str, Any]]:
        items = await self._call(self._client.xrange, PREFIX + "journal", min=start, max="+", count=count)
        if not items:
            return []
        ids = [item_id.split("-", 1)[0] for item_id, _ in items]
        finished = await self._call(self._client.hmget, PREFIX + "fin", ids)
        out: list[dict[str, Any]] = []
        for (_, fields), entry_id, fin in zip(items, ids, finished, strict=True):
            data = json.loads(fields["e"])
            data["id"] = int(entry_id)
            if fin:  # as JournalEntry reads its delivery: the engine's remark unless the delivery has a note
                delivery = Delivery(**json.loads(fin))
                data["status"] = delivery.status
                data["client_gone"] = delivery.client_gone
                if delivery.note is not None:
                    data["note"] = delivery.note
            out.append(data)
        return out

    async def journal_page(self, limit: int, after: int) -> tuple[list[dict[str, Any]], int | None]:
        entries = await self._entries(f"{after + 1}-0", limit + 1)
        more = len(entries) > limit
        entries = entries[:limit]
        return entries, (entries[-1]["id"] if more and entries else None)

    async def conversations(self) -> list[dict[str, Any]]:
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
                (key, max(0.0, now - float(used)), engine.import_states(json.loads(data or "{}")))
                for (key, used), data in zip(live, raw, strict=True)
                if data is not None
            ]
        )
        return [r.to_json() for r in records]

    async def verify(self) -> dict[str, Any]:
        entries = [JournalEntry.from_json(e) for e in await self._entries("-", None)]
        members = set(await self._call(self._client.smembers, PREFIX + "used"))
        digests = self.engine.digests()
        return self.engine.verification(entries, lambda mi, step: f"{digests[mi]}:{step}" in members)


_CONVERTER: Any = None


def _converter() -> Any:
    global _CONVERTER
    if _CONVERTER is None:
        import cattrs

        _CONVERTER = cattrs.Converter()
    return _CONVERTER


def _response_to_json(stored: StoredResponse) -> str:
    data = _converter().unstructure(stored)
    data.pop("stored_at", None)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def _response_from_json(raw: str) -> StoredResponse:
    data: Mapping[str, Any] = json.loads(raw)
    stored: StoredResponse = _converter().structure({**data, "stored_at": 0.0}, StoredResponse)
    return stored


__all__ = ["REDIS_MISSING", "RedisStore", "check_url"]
