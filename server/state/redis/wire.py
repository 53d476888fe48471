"""Redis's replies read below redis-py's API: every part of redis-py (and hiredis) the commit's
connections reach into, in one place, guarded as ``dsl/parse/lark_compat.py`` guards Lark's.

redis-py connects each commit connection (TLS, AUTH, SELECT, client name); then :class:`Wire` takes
the transport's reading from it and feeds hiredis directly, and :func:`packing` has redis-py write
commands with hiredis's C packer. Both reach into redis-py: the connection's ``_parser``, ``_reader``
and ``_writer``, its parser's ``_reader`` and ``parse_error``, its ``encoder`` and its
``pack_command``. :func:`problems` names what a redis-py release no longer has; where anything is
missing (or hiredis is older than 3.2, or absent) the connection is read by redis-py as before,
slower but the same. ``tests/test_redis_wire.py`` fails, saying what changed, on a redis-py that
changed them."""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

log = logging.getLogger("mockllm.server")

_SHORT = object()  # what a wire's reader answers while a reply is incomplete
_warned = False  # the fallback is said once per process


def packing(connection: type[Any]) -> type[Any]:
    """``connection`` (a redis-py asyncio connection class) writing its commands with hiredis's C
    packer when hiredis is installed and redis-py packs through ``pack_command(*args)``: redis-py's own
    packs in Python, a quarter of the store's time per request."""
    try:
        from hiredis import pack_command
    except ImportError:
        return connection
    if _pack_problem(connection) is not None:
        return connection

    def pack(self: Any, *args: Any) -> list[bytes]:
        if isinstance(args[0], str) and " " in args[0]:  # "SCRIPT LOAD": the words go separately
            args = (*args[0].split(), *args[1:])
        return [pack_command(args)]

    return type(connection.__name__, (connection,), {"pack_command": pack})


def _pack_problem(connection: type[Any]) -> str | None:
    method = getattr(connection, "pack_command", None)
    if method is None:
        return f"{connection.__name__}.pack_command is gone"
    kinds = [p.kind for name, p in inspect.signature(method).parameters.items() if name != "self"]
    if kinds != [inspect.Parameter.VAR_POSITIONAL]:
        return f"{connection.__name__}.pack_command no longer takes (*args)"
    return None


def problems(connection: Any) -> list[str]:
    """What the wire reaches in ``connection`` (a redis-py asyncio connection, connected or not) and this
    redis-py no longer has; [] when everything is there."""
    found: list[str] = []
    for name in ("_parser", "_reader", "_writer", "encoder"):
        if not hasattr(connection, name):
            found.append(f"the connection has no `{name}`")
    parser = getattr(connection, "_parser", None)
    if parser is not None:
        for name in ("_reader", "parse_error"):
            if not hasattr(parser, name):
                found.append(f"the connection's parser ({type(parser).__name__}) has no `{name}`")
    encoder = getattr(connection, "encoder", None)
    if encoder is not None:
        found += [
            f"the encoder has no `{n}`"
            for n in ("decode_responses", "encoding", "encoding_errors")
            if not hasattr(encoder, n)
        ]
    writer = getattr(connection, "_writer", None)
    if writer is not None and not hasattr(writer, "transport"):
        found.append("the connection's writer has no `transport`")
    stream = getattr(connection, "_reader", None)  # (None until connected)
    if stream is not None and not hasattr(stream, "_buffer"):
        found.append("the connection's stream reader has no `_buffer`")
    pack = _pack_problem(type(connection))
    if pack is not None:
        found.append(pack)
    return found


def changed(what: list[str]) -> str:
    """The one message for a redis-py that changed what the wire reaches."""
    import redis

    return (
        f"mockllm reads Redis's replies below redis-py's API, and redis-py {redis.__version__} changed it: "
        f"{'; '.join(what)}. The commits are read by redis-py instead (slower); install the redis-py that "
        "pyproject.toml allows, or update server/state/redis/wire.py."
    )


class Wire(asyncio.Protocol):
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
    def attach(cls, connection: Any, hiredis: Any, invalid: type[Exception]) -> Wire | None:
        """``connection`` (connected) read by a new wire, or None where redis-py must go on reading it:
        bytes already waiting, a redis-py without what the wire reaches (:func:`problems`), or a hiredis
        older than 3.2 (which cannot tell "not enough data" from a RESP3 false, nor a push message from
        an answer)."""
        push = getattr(hiredis, "PushNotification", None)
        if push is None:
            return None
        missing = problems(connection)
        if missing:
            global _warned
            if not _warned:
                _warned = True
                log.warning("%s", changed(missing))
            return None
        parser: Any = connection._parser
        stream: Any = connection._reader
        if parser is None or stream is None or connection._writer is None or stream._buffer:
            return None
        waiting = parser._reader  # redis-py's own reader: nothing left unread in it
        if waiting is not None and waiting.has_data():
            return None
        encoder = connection.encoder
        settings: dict[str, Any] = {"replyError": parser.parse_error, "notEnoughData": _SHORT}
        if encoder.decode_responses:
            settings.update(encoding=encoder.encoding, errors=encoder.encoding_errors)
        made = hiredis.Reader(protocolError=invalid, **settings)
        transport = connection._writer.transport
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
