"""What the Redis store's wire reaches below redis-py's API (server/state/redis/wire.py) is there on this
redis-py, and a redis-py that changed it fails here with one message saying what changed and what to do;
the store then reads through redis-py, still answering. The Lua scripts are package data the store loads."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import redis
import redis.asyncio

from mockllm.runtime.engine.engine import Engine
from mockllm.server.state.redis import wire
from mockllm.server.state.redis.scripts import commit_script, lua
from mockllm.server.state.redis.store import RedisStore


def _connected(url: str, body: Any) -> Any:
    """``body(connection)`` on a connected redis-py asyncio connection to ``url`` (as the store makes them)."""

    async def run() -> Any:
        pool = redis.asyncio.ConnectionPool.from_url(url, decode_responses=True)
        connection = wire.packing(pool.connection_class)(**pool.connection_kwargs)
        await connection.connect()
        try:
            return await body(connection)
        finally:
            await connection.disconnect()
            await pool.disconnect()

    return asyncio.run(run())


def test_this_redis_py_has_what_the_wire_reaches(redis_url: str) -> None:
    async def body(connection: Any) -> list[str]:
        return wire.problems(connection)

    missing = _connected(redis_url, body)
    if missing:
        pytest.fail(wire.changed(missing))


def test_a_wire_attached_to_this_redis_py_answers(redis_url: str) -> None:
    hiredis = pytest.importorskip("hiredis")

    async def body(connection: Any) -> object:
        attached = wire.Wire.attach(connection, hiredis, redis.exceptions.InvalidResponse)
        assert attached is not None, "the wire fell back to redis-py's reading on the redis-py it was written for"
        return await attached.exchange(hiredis.pack_command(("ECHO", "through the wire")))

    assert _connected(redis_url, body) == "through the wire"


class _Changed:
    """A connection of a redis-py release that renamed what the wire reaches."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.encoder = real.encoder
        self._writer = real._writer
        self._reader = real._reader  # no _parser: renamed

    def pack_command(self, command: str, *args: Any) -> list[bytes]:  # a changed signature
        return list(self._real.pack_command(command, *args))


def test_a_changed_redis_py_is_named_in_one_clear_message_and_redis_py_reads_instead(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    hiredis = pytest.importorskip("hiredis")

    async def body(connection: Any) -> tuple[list[str], object]:
        changed = _Changed(connection)
        with caplog.at_level(logging.WARNING, logger="mockllm.server"):
            attached = wire.Wire.attach(changed, hiredis, redis.exceptions.InvalidResponse)
        return wire.problems(changed), attached

    missing, attached = _connected(redis_url, body)
    assert attached is None  # redis-py goes on reading this connection
    assert "the connection has no `_parser`" in missing
    assert "_Changed.pack_command no longer takes (*args)" in missing
    message = wire.changed(missing)
    assert f"redis-py {redis.__version__} changed it" in message
    assert "update server/state/redis/wire.py" in message and "\n" not in message
    assert wire.packing(_Changed) is _Changed  # its own packing kept: hiredis's would not fit it


def test_the_store_reads_through_redis_py_when_the_wire_cannot_attach(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire, "problems", lambda connection: ["the connection has no `_parser`"])

    async def run() -> tuple[object, list[object]]:
        store = RedisStore(Engine(None), redis_url, timeout=10.0)
        try:
            echoed = await store._lane.run("ECHO", "read by redis-py")
            return echoed, [w for _, w in store._lane._idle]
        finally:
            await store.close()

    echoed, wires = asyncio.run(run())
    assert echoed == "read by redis-py"
    assert wires == [None]


def test_the_lua_scripts_are_package_data_with_the_settings_written_in() -> None:
    for name in ("commit", "append", "drop_conversation", "read_library", "change_library", "report_unloaded"):
        assert "redis.call(" in lua(name), name
    script = commit_script(ttl=120, cap=500)
    assert "local ttl = 120" in script and "'MAXLEN', '~', 500)" in script
    assert "'mockllm:journal'" in script and "$" not in script
