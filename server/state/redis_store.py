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
entries; entry id = stream id), ``fin`` how each answer went (its Delivery, written once, where it differs from the
plan), ``used`` steps used, ``r:ID`` a kept response and ``cr:KEY`` the responses of a
conversation. Conversations and responses expire after the idle time.

Scenarios posted to any process's admin API are shared too: ``lib`` (hash: generation, epoch, base)
and ``posts`` (the posted texts in order) say what every process serves: the library it started with
(or none, after ``DELETE /_mockllm/scenarios``) with each post loaded on top. The commit script checks
the generation the turn was decided with is still current; when it is not, the process loads the new
library (compiling the posts it has not seen, and again those that did not compile before) and
decides the turn again. A new epoch (a delete or a restore) starts every scenario afresh in every
conversation, as a single server does. A process on which a post does not compile (its scenario base
lacks a file the post imports) serves the library without it and says so in ``unloaded`` (hash: process
-> its reports, as of the generation it loaded last), which every process's admin API shows."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import socket
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import attrs

from mockllm.errors import StateUnavailable, UsageError
from mockllm.runtime.engine.conversations import Conversation, StoredResponse, stored_key
from mockllm.runtime.engine.engine import continued, response_id
from mockllm.runtime.engine.journal import DEFAULT_ENTRY_BODY_BYTES, Delivery, JournalEntry
from mockllm.runtime.engine.outcome import Outcome
from mockllm.runtime.jsonout import compact_encoder
from mockllm.server.state.poll_window import DEFAULT_POLL_S, MAX_POLL_S, PollWindow
from mockllm.server.state.posted import Posted, merged
from mockllm.server.state.store import StateStore

if TYPE_CHECKING:
    from mockllm.dsl.machines.compiled import CompiledLibrary
    from mockllm.runtime.engine.conversations import MachineState
    from mockllm.runtime.engine.engine import Engine, Turn
    from mockllm.runtime.request import ChatRequest

log = logging.getLogger("mockllm.server")

REDIS_MISSING = "mockllm: --state redis://… needs the 'redis' extra: pip install 'mockllm[redis]'"
PREFIX = "mockllm:"
CONNECTIONS = 64  # per process; more concurrent requests wait for one
MAX_ATTEMPTS = 50  # conflicting commits of one request before it is answered 503
MAX_BATCH = 64  # turns of one conversation committed together at most
_T = TypeVar("_T")
# one encoder for every value this store writes, built once (mockllm.runtime.jsonout)
_encode = compact_encoder(default=str)

# The version counter starts from the server's clock in microseconds when Redis has none (a fresh or
# restarted Redis), so versions never repeat across restarts.
_NEXT_VERSION = """
local counted = redis.call('INCR', KEYS[1])
if counted == 1 then
  local t = redis.call('TIME')
  counted = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('SET', KEYS[1], counted)
end
return counted
"""


def _commit_script(ttl: int, cap: int) -> str:
    """The commit of one or more turns of one conversation, decided one after the other, for a store
    that forgets conversations idle for ``ttl`` seconds and keeps ``cap`` journal entries. KEYS: the
    conversation, its responses, then one kept-response key per turn; the shared keys (conversations,
    journal, next id, steps used, versions, library) and the store's settings are written into the
    script, which each costs Redis a little less than an argument. ARGV: expected version, new states
    ("" unchanged), conversation, now, expected library generation, the number of turns, then per turn:
    journal entry, used step ("" none), response ("" none), response id. Answers {1, first entry id,
    version} (the turns' entry ids follow one another); when the library changed, {2}; when the
    version is not the expected one, {0, version, states}. The journal is cut to about ``cap`` entries
    now and then (every 64 entries), as the idle conversations are forgotten."""
    convs, journal, next_id, used, versions, library = (
        json.dumps(PREFIX + name) for name in ("convs", "journal", "next", "used", "version", "lib")
    )
    next_version = _NEXT_VERSION.replace("KEYS[1]", versions).replace("return counted", "v = counted")
    return f"""
if tonumber(redis.call('HGET', {library}, 'g') or '0') ~= tonumber(ARGV[5]) then
  return {{2}}
end
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then
  return {{0, v, redis.call('HGET', KEYS[1], 's') or ''}}
end
local ttl = {int(ttl)}
if ARGV[2] ~= '' then
{next_version}
  redis.call('HSET', KEYS[1], 'v', v, 's', ARGV[2])
elseif v == 0 then
  redis.call('HSET', KEYS[1], 'v', 0, 's', '{{}}')
end
redis.call('EXPIRE', KEYS[1], ttl)
local now = tonumber(ARGV[4])
redis.call('ZADD', {convs}, now, ARGV[3])
local count = tonumber(ARGV[6])
local first = redis.call('INCRBY', {next_id}, count) - count + 1
for i = 0, count - 1 do
  local at = 7 + 4 * i
  redis.call('XADD', {journal}, (first + i) .. '-1', 'e', ARGV[at])
  if ARGV[at + 1] ~= '' then
    redis.call('SADD', {used}, ARGV[at + 1])
  end
  if ARGV[at + 2] ~= '' then
    redis.call('SET', KEYS[3 + i], ARGV[at + 2], 'EX', ttl)
    redis.call('SADD', KEYS[2], ARGV[at + 3])
    redis.call('EXPIRE', KEYS[2], ttl)
  end
end
if (first + count - 1) % 64 < count then  -- an id a multiple of 64 written: forget the conversations
  -- idle past the ttl, cut the journal (the batches' ids follow one another: each multiple is seen once)
  redis.call('ZREMRANGEBYSCORE', {convs}, '-inf', now - ttl)
  redis.call('XTRIM', {journal}, 'MAXLEN', '~', {int(cap)})
end
return {{1, first, v}}
"""


# KEYS: library, posts. The shared library: {generation, epoch, base ("start" or "none"), posts}.
READ_LIBRARY = """
local h = redis.call('HMGET', KEYS[1], 'g', 'e', 'b')
return {h[1] or '0', h[2] or '0', h[3] or 'start', redis.call('LRANGE', KEYS[2], 0, -1)}
"""
# KEYS: library, posts, versions, unloaded. ARGV: "post" (ARGV[2] the post), "clear" or "restore" (no
# posts left: no process has one it cannot load). Answers the library as _READ_LIBRARY does.
CHANGE_LIBRARY = (
    _NEXT_VERSION.replace("KEYS[1]", "KEYS[3]").replace("return counted", "local v = counted")
    + """
if ARGV[1] == 'post' then
  redis.call('RPUSH', KEYS[2], ARGV[2])
else
  redis.call('DEL', KEYS[2], KEYS[4])
  redis.call('HSET', KEYS[1], 'e', v, 'b', ARGV[1] == 'clear' and 'none' or 'start')
end
redis.call('HSET', KEYS[1], 'g', v)
"""
    + READ_LIBRARY
)

# KEYS: library, unloaded. ARGV: the generation loaded, the process, its reports as JSON ("" none).
# Written only while that generation is current: a report never outlives the posts it is about.
REPORT_UNLOADED = """
if tonumber(redis.call('HGET', KEYS[1], 'g') or '0') ~= tonumber(ARGV[1]) then
  return 0
end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[2], ARGV[2])
else
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
end
return 1
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


def _packing(connection: type[Any]) -> type[Any]:
    """``connection`` (a redis-py asyncio connection class) writing its commands with hiredis's C
    packer when hiredis is installed: redis-py's own packs in Python, a quarter of this store's time
    per request."""
    try:
        from hiredis import pack_command
    except ImportError:
        return connection

    def pack(self: Any, *args: Any) -> list[bytes]:
        if isinstance(args[0], str) and " " in args[0]:  # "SCRIPT LOAD": the words go separately
            args = (*args[0].split(), *args[1:])
        return [pack_command(args)]

    return type(connection.__name__, (connection,), {"pack_command": pack})


_SHORT = object()  # what a wire's reader answers while a reply is incomplete


class _Wire(asyncio.Protocol):
    """One lane connection's replies read straight off its transport into its hiredis reader: redis-py
    connects the socket and runs its handshake (TLS, AUTH, SELECT, client name), then hands the
    transport's reading to this protocol. Same bytes both ways (hiredis packs the commands and parses
    the replies, as in redis-py), without the stream reader and writer under redis-py's connection
    (about 29,000 of the Redis path's 404,000 instructions per request). One command at a time on each
    connection."""

    def __init__(self, transport: asyncio.Transport, reader: Any, push: type, stream: asyncio.BaseProtocol) -> None:
        self._transport = transport
        self._reader = reader  # hiredis's reader, making error replies into redis-py's exceptions
        self._push = push  # hiredis's type for RESP3 push messages
        self._stream = stream  # redis-py's stream protocol: told when the connection goes
        self._waiting: asyncio.Future[Any] | None = None
        self.lost = False
        transport.set_protocol(self)

    @classmethod
    def attach(cls, connection: Any, hiredis: Any, invalid: type[Exception]) -> _Wire | None:
        """``connection`` (connected) read by a new wire, or None where redis-py must go on reading it:
        bytes already waiting, or a hiredis older than 3.2 (which cannot tell "not enough data" from a RESP3
        false, nor a push message from an answer)."""
        push = getattr(hiredis, "PushNotification", None)
        if push is None:
            return None
        parser: Any = getattr(connection, "_parser", None)
        writer: Any = getattr(connection, "_writer", None)
        stream: Any = getattr(connection, "_reader", None)
        if parser is None or writer is None or stream is None or getattr(stream, "_buffer", None):
            return None
        waiting = getattr(parser, "_reader", None)  # redis-py's own reader: nothing left unread in it
        if waiting is not None and waiting.has_data():
            return None
        encoder = connection.encoder
        settings: dict[str, Any] = {"replyError": parser.parse_error, "notEnoughData": _SHORT}
        if encoder.decode_responses:
            settings.update(encoding=encoder.encoding, errors=encoder.encoding_errors)
        made = hiredis.Reader(protocolError=invalid, **settings)
        transport = writer.transport
        return cls(transport, made, push, transport.get_protocol())

    def exchange(self, packed: bytes) -> asyncio.Future[Any]:
        """Send one packed command; its reply (an error reply as redis-py's exception object) arrives in
        the future."""
        if self.lost:
            raise ConnectionError("the connection to Redis is closed")
        waiting: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting = waiting
        self._transport.write(packed)
        return waiting

    def data_received(self, data: bytes) -> None:
        reader = self._reader
        reader.feed(data)
        while True:
            try:
                reply = reader.gets()
            except Exception as exc:  # not Redis's protocol: this connection is not used again
                self._fail(ConnectionError(f"Redis sent what cannot be read: {exc}"))
                return
            if reply is _SHORT:
                return  # the rest has not arrived yet
            if isinstance(reply, self._push):  # RESP3 out-of-band messages (before or after an answer)
                continue
            waiting, self._waiting = self._waiting, None
            if waiting is None:  # an answer nobody asked for: out of step with Redis
                self._fail(ConnectionError("Redis answered more than was asked"))
                return
            if not waiting.done():  # (done: the request was cancelled meanwhile)
                waiting.set_result(reply)

    def _fail(self, error: ConnectionError) -> None:
        """Out of step with Redis: the waiting exchange fails, and the connection is not used again."""
        self.lost = True
        waiting, self._waiting = self._waiting, None
        if waiting is not None and not waiting.done():
            waiting.set_exception(error)
        self._transport.close()

    def eof_received(self) -> bool:
        return False  # Redis closed its side: the transport closes, connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        waiting, self._waiting = self._waiting, None
        if waiting is not None and not waiting.done():
            waiting.set_exception(ConnectionError(f"Redis closed the connection: {exc or 'end of stream'}"))
        self._stream.connection_lost(exc)  # redis-py's writer learns the connection is closed


_yield_core: Callable[[], None] = getattr(os, "sched_yield", lambda: None)  # (none on Windows)


def _meanwhile(call: Callable[[], object]) -> None:
    """``call()`` while a command is on its way: whatever it raises is logged, never taken for a broken
    exchange (the command was sent; Redis may well run it)."""
    try:
        call()
    except Exception:
        log.exception("mockllm: error while waiting for Redis (the request goes on)")


class _Lane:
    """The commit's own connections to Redis: redis-py's connections (the client's settings), each
    running one command at a time, without the client's per-command pool locks, retries and metrics
    -- most of the client's cost per request -- and read through a :class:`_Wire` where hiredis is
    installed. One watchdog holds every exchange to its deadline instead of a timer per exchange
    (``asyncio.timeout`` costs a request as much as Redis's own work). While an exchange waits within
    its poll window (server/state/poll_window.py), the loop polls instead of sleeping: one callback kept ready,
    so each turn of the loop looks for I/O with a zero timeout."""

    def __init__(self, pool: Any, size: int, redis: Any, timeout: float, poll: float) -> None:
        self._pool = pool
        self._idle: list[tuple[Any, _Wire | None]] = []
        # at most ``size`` exchanges at once; the others wait their turn, first come first served (what
        # asyncio.Semaphore does, without its coroutines when a slot is free: two fewer per exchange)
        self._free = size
        self._queue: deque[asyncio.Future[None]] = deque()
        self._replies = redis.exceptions.ResponseError  # an error reply: the connection stays usable
        self._broken = redis.exceptions.ConnectionError
        self._invalid = redis.exceptions.InvalidResponse
        self._timeout_error = redis.exceptions.TimeoutError
        self._timeout = timeout
        self._busy: dict[asyncio.Task[Any], float] = {}  # the exchanges under way and their deadlines
        self._late: set[asyncio.Task[Any]] = set()  # those the watchdog interrupted
        self._watchdog: asyncio.Task[None] | None = None
        self._window = PollWindow(poll)
        self._polling: asyncio.AbstractEventLoop | None = None  # the loop a _poll callback is ready on
        self._poll_until = 0.0  # the loop polls until then while exchanges wait
        try:
            import hiredis
        except ImportError:
            self._pack: Callable[[tuple[Any, ...]], bytes] | None = None
        else:
            self._pack = hiredis.pack_command
            self._hiredis = hiredis

    def _connection(self) -> tuple[Any, _Wire | None]:
        pool = self._pool
        made: Any = pool.connection_class(**{**pool.connection_kwargs, "socket_timeout": None})
        return made, None

    async def _exchange(
        self, connection: Any, wire: _Wire | None, args: tuple[Any, ...], meanwhile: Callable[[], object] | None
    ) -> tuple[Any, _Wire | None]:
        """The answer to ``args`` on ``connection``, and the wire it is read through from now on;
        ``meanwhile()`` is called once the command is sent, before its answer is awaited."""
        pack = self._pack
        if pack is not None:
            if wire is not None and wire.lost:  # Redis closed it while idle (a restart): connect again
                await connection.disconnect()
                wire = None
            if wire is None:
                if not connection.is_connected:
                    await connection.connect()
                wire = _Wire.attach(connection, self._hiredis, self._invalid)
            if wire is not None:
                try:
                    waiting = wire.exchange(pack(args))
                    if meanwhile is not None:
                        _meanwhile(meanwhile)
                    polled = self._poll_from_now()
                    answer = await waiting
                except ConnectionError as exc:
                    raise self._broken(str(exc)) from None
                self._poll_ended(polled)
                if isinstance(answer, Exception):  # an error reply, as redis-py's reader makes it
                    raise answer
                return answer, wire
        await connection.send_packed_command(connection.pack_command(*args), check_health=False)
        if meanwhile is not None:
            _meanwhile(meanwhile)
        polled = self._poll_from_now()
        try:
            answer = await connection.read_response()
        except self._replies:  # an error reply: answered all the same, as on a wire
            self._poll_ended(polled)
            raise
        self._poll_ended(polled)
        return answer, None

    def _poll_from_now(self) -> float | None:
        """A command was sent: when its wait is polled (see :class:`PollWindow`), the loop polls until the
        window ends (or no exchange waits), and the time it started is returned; else None."""
        window = self._window
        if not window.polls():
            return None
        now = time.perf_counter()  # (uvloop's loop.time() counts whole milliseconds: too coarse here)
        self._poll_until = now + window.limit
        loop = asyncio.get_running_loop()
        if self._polling is not loop:  # (a loop closed with the chain pending left its own behind)
            self._polling = loop
            loop.call_soon(self._poll, loop)
        return now

    def _poll_ended(self, polled: float | None) -> None:
        """The answer to a command is in: how long its wait took, told to the window when it was polled
        (``polled``: what :meth:`_poll_from_now` returned)."""
        if polled is not None:
            self._window.answered(time.perf_counter() - polled)

    async def run(self, *args: Any, meanwhile: Callable[[], object] | None = None) -> Any:
        """The answer to the command ``args`` (an error reply raised as redis-py raises it); ``meanwhile()``
        is called while it is awaited (see :meth:`_exchange`)."""
        if self._free and not self._queue:
            self._free -= 1
        else:
            await self._wait_turn()
        try:
            connection, wire = self._idle.pop() if self._idle else self._connection()
            task = asyncio.current_task()
            assert task is not None
            busy = self._busy
            busy[task] = asyncio.get_running_loop().time() + self._timeout
            if self._watchdog is None or self._watchdog.done():
                self._watchdog = asyncio.ensure_future(self._watch())
            try:
                answer, wire = await self._exchange(connection, wire, args, meanwhile)
            except self._replies:
                del busy[task]
                self._idle.append((connection, wire))
                raise
            except BaseException as exc:  # a broken or interrupted exchange: this connection is not used again,
                del busy[task]  # nor, unless a request was merely cancelled, the idle ones (Redis may have gone)
                late = task in self._late
                if late:  # the watchdog's doing, unless the task was also cancelled from elsewhere
                    self._late.discard(task)
                    late = isinstance(exc, asyncio.CancelledError) and task.uncancel() == 0
                await connection.disconnect()
                if late or not isinstance(exc, asyncio.CancelledError):
                    await self.close()
                if late:
                    raise self._timeout_error(f"no answer from Redis within {self._timeout:g}s") from None
                raise
            del busy[task]
            self._idle.append((connection, wire))
            return answer
        finally:
            self._next_turn()

    def _poll(self, loop: asyncio.AbstractEventLoop) -> None:
        """Ready again while an exchange waits within the window: a loop with a callback ready polls
        for I/O without sleeping (the answer is read as it comes, the other connections served as usual),
        and the core is offered to any other process ready on it at each turn."""
        if self._polling is not loop:
            return  # a chain of a closed loop's, replaced
        if self._busy and time.perf_counter() < self._poll_until:
            _yield_core()  # a Redis (or anything) ready on this very core may run now, not after the window
            loop.call_soon(self._poll, loop)
        else:
            self._polling = None

    async def _wait_turn(self) -> None:
        """Wait until an exchange ends and hands its slot on (see :meth:`_next_turn`)."""
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # handed the slot as it was cancelled: hand it on
                self._next_turn()
            raise

    def _next_turn(self) -> None:
        """An exchange ended: its slot goes to the first that still waits, else back to the free ones."""
        queue = self._queue
        while queue:
            turn = queue.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self._free += 1

    async def _watch(self) -> None:
        """Interrupt the exchanges past their deadline, a few times per deadline."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self._timeout / 4)
            now = loop.time()
            for task, deadline in list(self._busy.items()):
                if deadline <= now and task not in self._late:
                    self._late.add(task)
                    task.cancel()

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection, _ in idle:
            await connection.disconnect()

    async def stop(self) -> None:
        """Close the connections and stop the watchdog."""
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.cancel()
            await asyncio.gather(watchdog, return_exceptions=True)
        await self.close()


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
        cache_size: int = 10_000,
        timeout: float = 10.0,
        poll: float = DEFAULT_POLL_S,
    ) -> None:
        """``timeout``: how long to wait for a connection to Redis and for each of its answers; ``poll``:
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
        pool.connection_class = _packing(pool.connection_class)
        self._pool = pool
        self._client = redis.asyncio.Redis(connection_pool=pool, retry=retry)
        self._errors: tuple[type[BaseException], ...] = (
            redis.exceptions.ConnectionError,
            redis.exceptions.TimeoutError,
        )
        self._stale: type[BaseException] = redis.exceptions.ConnectionError
        self._lane = _Lane(pool, CONNECTIONS, redis, timeout, poll)
        self._no_script: type[BaseException] = redis.exceptions.NoScriptError
        self._append = self._client.register_script(APPEND)
        self._drop = self._client.register_script(DROP_CONVERSATION)
        self._read_library = self._client.register_script(READ_LIBRARY)
        self._change_library = self._client.register_script(CHANGE_LIBRARY)
        self._report_unloaded = self._client.register_script(REPORT_UNLOADED)
        self._ttl = max(1, round(idle_seconds))
        self._journal_limit = max(1, journal_limit)
        self._commit = self._client.register_script(_commit_script(self._ttl, self._journal_limit))
        self._entry_body_bytes = entry_body_bytes
        # per conversation: the version last seen, its states, and the states as stored (which keep the
        # scenarios this process does not serve: another process's library may have more)
        self._cache: OrderedDict[str, _Seen] = OrderedDict()
        self._cache_size = max(1, cache_size)
        self._planned: dict[int, int] = {}  # journal entry -> the status it was written with
        self._pending: set[asyncio.Task[None]] = set()
        # per conversation with a commit on its way: the turns that arrived meanwhile, committed next
        self._queued: dict[str, list[tuple[ChatRequest, str | None, asyncio.Future[Outcome]]]] = {}
        self._issued = 0
        engine.id_seed = os.urandom(8).hex()  # response ids unique across the processes sharing Redis
        # the shared library (see the module): the generation and epoch this process serves, the digest
        # prefix of the epoch, the scenario base posts compile against, and the posts compiled so far
        self._library_lock = asyncio.Lock()
        self._generation = 0
        self._epoch = 0
        self._salt = ""
        self._root = root
        self._posts: list[str] = []  # in the order they were posted
        self._compiled: dict[str, CompiledLibrary | None] = {}
        self._unloadable: dict[str, dict[str, Any]] = {}  # post -> why it does not compile here
        self._reported = ""  # the field of ``unloaded`` this process last wrote its reports to ("" none)
        self._report_owed = False  # the last report did not reach Redis: sent again at the next sync
        self._base = "start"  # what the posts go on top of: "start" (the files) or "none" (after a delete)

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
        if self._reported:  # a process that stops no longer serves without the posts it could not load
            try:
                await self._call(self._client.hdel, PREFIX + "unloaded", self._reported)
            except StateUnavailable:
                pass
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
                return _response_from_json(raw)
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
                if len(self._planned) > 100_000:
                    self._planned.clear()
                outcomes: list[Outcome] = []
                for entry_id, turn in enumerate(decided, first):
                    self._planned[entry_id] = turn.entry.planned
                    outcomes.append(turn.outcome.with_entry_id(entry_id))
                return outcomes
            stored = json.loads(result[2] or "{}")
            version, states = int(result[1]), self._import(stored)
        raise StateUnavailable(
            f"mockllm: conversation {key!r} changed under this request {MAX_ATTEMPTS} times in a row; "
            "nothing was answered"
        )

    async def _run_commit(self, keys: list[str], args: list[Any], meanwhile: Callable[[], object] | None) -> Any:
        """The commit script's answer, run on the lane: loaded first when Redis does not have it (a new or
        restarted Redis), and sent once more on a new connection when the first has gone stale (never after
        a timeout: Redis may have run a commit whose answer did not arrive in time)."""
        script = self._commit
        for attempt in range(3):
            try:
                return await self._lane.run("EVALSHA", script.sha, len(keys), *keys, *args, meanwhile=meanwhile)
            except self._no_script:
                await self._client.script_load(script.script)
            except self._stale:
                if attempt:
                    raise
        return await self._lane.run("EVALSHA", script.sha, len(keys), *keys, *args, meanwhile=meanwhile)

    def _commit_keys(self, key: str, turns: list[Turn]) -> list[str]:
        keys = [PREFIX + "c:" + key, PREFIX + "cr:" + key]
        keys += [PREFIX + "r:" + (t.remember[0] if t.remember is not None else "") for t in turns]
        return keys

    def _commit_args(
        self, key: str, turns: list[Turn], version: int, saved: dict[str, Any] | None, now: float
    ) -> list[Any]:
        args: list[Any] = [
            version,
            _encode(saved) if saved is not None else "",
            key,
            now,
            self._generation,
            len(turns),
        ]
        used_member = self.engine.used_member
        for turn in turns:
            used = used_member(turn.used) if turn.used is not None else None
            remember = turn.remember
            args += [
                self._entry_json(turn.entry),
                self._salt + used if used else "",
                _response_to_json(remember[1]) if remember is not None else "",
                remember[0] if remember is not None else "",
            ]
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
        entries = [JournalEntry.from_json(e) for e in await self._entries("-", None)]
        members = set(await self._call(self._client.smembers, PREFIX + "used"))
        digests, salt = self.engine.digests(), self._salt
        return self.engine.verification(entries, lambda mi, step: f"{salt}{digests[mi]}:{step}" in members)

    # ---- the shared library ---------------------------------------------------------------------------

    def _export(self, states: Mapping[str, MachineState] | None) -> dict[str, list[Any]]:
        """:meth:`Engine.export_states`, each digest prefixed with the epoch's."""
        out = self.engine.export_states(states)
        if self._salt:
            for value in out.values():
                value[0] = self._salt + value[0]
        return out

    def _import(self, data: Mapping[str, Any]) -> dict[str, MachineState]:
        """:meth:`Engine.import_states` of the states saved in this epoch."""
        salt = self._salt
        if salt:
            data = {k: [v[0][len(salt) :], *v[1:]] for k, v in data.items() if str(v[0]).startswith(salt)}
        return self.engine.import_states(data)

    async def sync_library(self) -> None:
        async with self._library_lock:
            keys = [PREFIX + "lib", PREFIX + "posts"]
            await self._load_library(await self._call(self._read_library, keys=keys))

    async def _change(self, change: str, post: str = "") -> None:
        async with self._library_lock:
            keys = [PREFIX + "lib", PREFIX + "posts", PREFIX + "version", PREFIX + "unloaded"]
            await self._load_library(await self._call(self._change_library, keys=keys, args=[change, post]))

    async def post_library(self, posted: Posted, compiled: CompiledLibrary) -> None:
        post = posted.to_json()
        self._compiled[post] = compiled  # compiled once, here
        await self._change("post", post)

    async def clear_library(self) -> None:
        await self._change("clear")

    async def restore_library(self) -> None:
        await self._change("restore")

    async def reload_library(self, library: CompiledLibrary) -> None:
        """The files edited (``--watch``): they replace the ones the server started with, under the posts."""
        async with self._library_lock:
            self.start = library
            self.engine.load(self._assembled())

    async def _load_library(self, shared: list[Any]) -> None:
        """Serve the library ``shared`` (READ_LIBRARY's answer) describes, unless already serving it."""
        generation, epoch, base, posts = int(shared[0]), int(shared[1]), shared[2], list(shared[3])
        if generation == self._generation:
            if self._report_owed:
                await self._report(generation)
            return
        compiled: dict[str, CompiledLibrary | None] = {}
        # after a delete or a restore, every post is compiled afresh, as on a server that saw the change
        kept = self._compiled if epoch == self._epoch else {}
        for post in posts:
            if post not in compiled:  # one that did not compile here may now: its files may have come
                known = kept.get(post)
                compiled[post] = known if known is not None else await self._compile(post)
        self._posts, self._compiled, self._base = posts, compiled, base
        self._unloadable = {p: why for p, why in self._unloadable.items() if p in compiled and compiled[p] is None}
        if epoch != self._epoch:  # every scenario starts afresh in every conversation
            self.engine.load(None)
            self._cache.clear()
        self.engine.load(self._assembled())
        self._generation, self._epoch = generation, epoch
        self._salt = f"{epoch}/" if epoch else ""
        await self._report(generation)

    def unloaded_here(self) -> list[dict[str, Any]]:
        """The posts this process serves the library without, each as :meth:`not_loaded` lists it."""
        server = f"{socket.gethostname()} pid {os.getpid()}"
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for number, post in enumerate(self._posts, 1):
            why = self._unloadable.get(post)
            if why is not None and post not in seen:  # a text posted twice is reported once
                seen.add(post)
                message = (
                    f"server {server} (scenario base {why['scenario_base']}) cannot load posted text {number} "
                    f"of {len(self._posts)} ({why['file']}): it serves the library without it"
                )
                out.append({"server": server, "pid": os.getpid(), "post": number, "message": message, **why})
        return out

    async def _report(self, generation: int) -> None:
        """Write this process's reports (or their absence, when it wrote some before) for ``generation``."""
        found = self.unloaded_here()
        self._report_owed = False
        if not found and not self._reported:
            return
        field = self.engine.id_seed  # this process's own, random: never another's, even one with its host and pid
        value = _encode(found) if found else ""
        keys = [PREFIX + "lib", PREFIX + "unloaded"]
        try:
            written = int(await self._call(self._report_unloaded, keys=keys, args=[generation, field, value]))
        except StateUnavailable:  # the library is loaded all the same; the report goes at the next sync
            self._report_owed = True
            return
        if written:
            self._reported = field if found else ""

    async def not_loaded(self) -> list[dict[str, Any]]:
        raw = await self._call(self._client.hvals, PREFIX + "unloaded")
        found = [report for value in raw for report in json.loads(value)]
        return sorted(found, key=lambda r: (r["post"], r["server"]))

    def _assembled(self) -> CompiledLibrary | None:
        """The library the server started with (none after a delete), the posts loaded on top in order."""
        library = self.start if self._base == "start" else None
        for post in self._posts:  # a text posted again goes on top again
            found = self._compiled[post]
            if found is not None:
                library = merged(library, found)
        return library

    async def _compile(self, post: str) -> CompiledLibrary | None:
        """A post another process made, compiled here (None, the errors logged and kept for
        :meth:`unloaded_here`, when it does not compile against this process's scenario base)."""
        posted = Posted.from_json(post)
        compiled, diagnostics, sources = await asyncio.to_thread(posted.compile, self._root)
        errors = [d for d in diagnostics if d.is_error]
        if errors or compiled is None:
            from mockllm.dsl.diagnostics import render, to_json

            text, root = render(errors, sources), os.path.realpath(self._root)
            log.error(
                "mockllm: scenarios another server posted do not compile here (scenario base %s); "
                "this server serves the library without them:\n%s",
                root,
                text,
            )
            where = {"file": posted.path or posted.file, "base": posted.base, "scenario_base": root}
            self._unloadable[post] = {**where, "errors": [to_json(d) for d in errors], "text": text}
            return None
        self._unloadable.pop(post, None)
        return compiled


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
    return _encode(data)


def _response_from_json(raw: str) -> StoredResponse:
    data: Mapping[str, Any] = json.loads(raw)
    stored: StoredResponse = _converter().structure({**data, "stored_at": 0.0}, StoredResponse)
    return stored


__all__ = ["REDIS_MISSING", "RedisStore", "check_url"]
