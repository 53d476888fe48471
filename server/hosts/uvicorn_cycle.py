"""A request's life on Uvicorn's httptools protocol, in fewer Python steps.

Counted with valgrind's cachegrind on this machine, a bare ASGI app (one receive, two sends) costs
about 140,000 instructions per request on Uvicorn, against about 28,000 for a plain
``asyncio.Protocol`` on the same ``httptools`` parser writing the same answer from a task per
request: the rest is Python in Uvicorn's request cycle and the ASGI calls -- an ``asyncio.Event``
per request, a cycle built from eleven keyword arguments, the URL parsed into an object to read its
path and query, the parser asked at every body callback whether the request upgrades, each response
header checked with two regular expressions.

:class:`LeanCycle` is the same cycle -- the same scope, the same messages in the same order, the
same checks and errors, the same flow control, keep-alive, pipelining and access log -- in fewer
steps, which takes the bare app to about 104,000 instructions and a mockllm chat request from about
471,000 to 433,000:

- a waiting ``receive`` gets an ``asyncio.Event`` only when it has to wait (a body that arrived with
  its headers, the common case, needs none), and whether there is something new is read from the
  cycle's own state;
- an origin-form target (``/path?query``) is split on ``?``; anything else goes to ``httptools``'
  URL parser, as in Uvicorn;
- whether the request upgrades is asked once, when its headers are complete;
- the head is written by :func:`write_head`, its checks done once per response.

The protocol methods that make and feed a cycle are in :class:`LeanRequests`, mixed into the
protocol class by :func:`mockllm.server.hosts.uvicorn_protocol.uvicorn_protocol` only on the Uvicorn
release they were checked against (the digests of the source of the methods they replace or rely
on); any other Uvicorn serves with its own cycle."""

from __future__ import annotations

import asyncio
import contextvars
import urllib.parse
from typing import TYPE_CHECKING, Any

import httptools
from uvicorn.logging import TRACE_LOG_LEVEL
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT, service_unavailable
from uvicorn.protocols.http.httptools_impl import HEADER_RE, HEADER_VALUE_RE, STATUS_LINE
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

if TYPE_CHECKING:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    _Base = HttpToolsProtocol
else:
    _Base = object

_DISCONNECT = {"type": "http.disconnect"}
_NAMES: dict[bytes, bytes] = {}  # header names found valid, as given -> lower-case
_NAMES_LIMIT = 1024
_SPECIAL = frozenset({b"content-length", b"transfer-encoding", b"connection"})
_HASH = ord("#")
#: The bytes Uvicorn refuses in a header value, taken from its own pattern: deleting them from the
#: values in one C pass (``bytes.translate``) finds the same values as the pattern, several times faster.
_BAD_VALUE_BYTES = bytes(b for b in range(256) if HEADER_VALUE_RE.search(bytes([b])))


def _check_values(values: list[bytes]) -> None:
    joined = b"".join(values)
    if joined.translate(None, _BAD_VALUE_BYTES) != joined:
        raise RuntimeError("Invalid HTTP header value.")


def write_head(cycle: Any, status_code: int, headers: list[tuple[Any, Any]]) -> None:
    """Write the status line and ``headers`` (Uvicorn's own first) of a response start as Uvicorn
    does -- the same bytes, the same errors in the same order, the same cycle state (``keep_alive``,
    ``chunked_encoding``, ``expected_content_length``) -- with its checks done once per response:
    header names already seen valid are remembered with their lower-case form, and the values are
    checked together instead of with two regular-expression searches per header: where Uvicorn reads
    a value (the three below), it and those before it not yet checked, in one pass; the rest in one pass
    at the end (each value once: a response whose content-length comes last, the usual, needs no second
    pass, 0.2 µs of the head's 2)."""
    content = [STATUS_LINE[status_code]]
    values: list[bytes] = []
    checked = 0  # values[:checked] are known valid (checked where a special header was read)
    has_connection_close = False
    for name, value in headers:
        low = _NAMES.get(name) if type(name) is bytes else None  # (a bytearray is checked each time)
        if low is None:
            if HEADER_RE.search(name):
                _check_values(values)  # Uvicorn meets a bad value before a later bad name
                raise RuntimeError("Invalid HTTP header name.")
            low = bytes(name).lower()
            if len(_NAMES) < _NAMES_LIMIT and type(name) is bytes:
                _NAMES[name] = low
        if low in _SPECIAL:  # as Uvicorn reads them, once their values are known to be valid
            _check_values([*values[checked:], value])
            checked = len(values) + 1  # (this one included: it is appended below)
            if low == b"content-length":
                if cycle.chunked_encoding is None:
                    cycle.expected_content_length = int(value.decode())
                    cycle.chunked_encoding = False
            elif low == b"transfer-encoding":
                if value.lower() == b"chunked":
                    cycle.expected_content_length = 0
                    cycle.chunked_encoding = True
            elif b"close" in [token.lower().strip() for token in value.split(b",")]:
                cycle.keep_alive = False
                has_connection_close = True
        values.append(value)
        content += (low, b": ", value, b"\r\n")
    if len(values) > checked:  # the values not checked yet (none after a last content-length, the usual)
        _check_values(values[checked:])
    if not cycle.keep_alive and not has_connection_close:
        content.append(b"connection: close\r\n")
    if cycle.chunked_encoding is None and cycle.scope["method"] != "HEAD" and status_code not in (204, 304):
        cycle.chunked_encoding = True  # neither content-length nor transfer-encoding given
        content.append(b"transfer-encoding: chunked\r\n")
    content.append(b"\r\n")
    cycle.transport.write(b"".join(content))


class _Finished:
    """What a cycle keeps of its protocol once its app has returned. A late send (from a task the app
    left behind) still writes, but completes nothing on the connection, as on Uvicorn (whose cycle
    drops its ``on_response`` then); and the cycle no longer holds the protocol, so a closed
    connection is freed at once instead of by the garbage collector."""

    __slots__ = ("access_log", "access_logger", "flow", "logger")

    def __init__(self, protocol: Any) -> None:
        self.flow = protocol.flow
        self.logger = protocol.logger
        self.access_logger = protocol.access_logger
        self.access_log = protocol.access_log

    def on_response_complete(self) -> None:
        pass


class LeanCycle:
    """One request and its response: what the app's ``receive`` and ``send`` act on."""

    __slots__ = (
        "_ended",
        "_event",
        "body",
        "chunked_encoding",
        "default_headers",
        "disconnected",
        "expected_content_length",
        "keep_alive",
        "more_body",
        "protocol",
        "response_complete",
        "response_started",
        "scope",
        "transport",
        "waiting_for_100_continue",
    )

    def __init__(self, protocol: LeanRequests, scope: dict[str, Any], keep_alive: bool, expect: bool) -> None:
        self.protocol: Any = protocol  # (a _Finished once the app has returned)
        self.scope = scope
        self.transport = protocol.transport
        self.default_headers = protocol.server_state.default_headers  # (the date as the request came)
        self.keep_alive = keep_alive
        self.waiting_for_100_continue = expect
        self.disconnected = False
        self.body: bytes | bytearray = b""
        self.more_body = True
        self._ended = False  # the last body message (more_body False) was handed to the app
        self._event: asyncio.Event | None = None
        self.response_started = False
        self.response_complete = False
        self.chunked_encoding: bool | None = None
        self.expected_content_length = 0

    def wake(self) -> None:
        """Something for a waiting ``receive``: body, its end, a disconnect or the response's end."""
        event = self._event
        if event is not None:
            event.set()

    async def run_asgi(self, app: Any) -> None:
        protocol = self.protocol
        try:
            result = await app(self.scope, self.receive, self.send)
        except BaseException as exc:
            protocol.logger.error("Exception in ASGI application\n", exc_info=exc)
            if not self.response_started:
                await self.send_500_response()
            else:
                self.transport.close()
        else:
            if result is not None:
                protocol.logger.error("ASGI callable should return None, but returned '%s'.", result)
                self.transport.close()
            elif not self.response_started and not self.disconnected:
                protocol.logger.error("ASGI callable returned without starting response.")
                await self.send_500_response()
            elif not self.response_complete and not self.disconnected:
                protocol.logger.error("ASGI callable returned without completing response.")
                self.transport.close()
        finally:
            self.protocol = protocol.finished()

    async def send_500_response(self) -> None:
        await self.send(
            {
                "type": "http.response.start",
                "status": 500,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", b"21"),
                    (b"connection", b"close"),
                ],
            }
        )
        await self.send({"type": "http.response.body", "body": b"Internal Server Error", "more_body": False})

    async def send(self, message: Any) -> None:
        protocol = self.protocol
        flow = protocol.flow
        if flow.write_paused and not self.disconnected:
            await flow.drain()
        if self.disconnected:
            return
        if not self.response_started:
            if message["type"] != "http.response.start":
                raise RuntimeError(f"Expected ASGI message 'http.response.start', but got '{message['type']}'.")
            self.response_started = True
            self.waiting_for_100_continue = False
            status_code = message["status"]
            headers = self.default_headers + list(message.get("headers", ()))
            if protocol.access_log:
                scope = self.scope
                protocol.access_logger.info(
                    '%s - "%s %s HTTP/%s" %d',
                    get_client_addr(scope),  # type: ignore[arg-type]
                    scope["method"],
                    get_path_with_query_string(scope),  # type: ignore[arg-type]
                    scope["http_version"],
                    status_code,
                )
            write_head(self, status_code, headers)
        elif not self.response_complete:
            if message["type"] != "http.response.body":
                raise RuntimeError(f"Expected ASGI message 'http.response.body', but got '{message['type']}'.")
            body = message.get("body", b"")
            more_body = message.get("more_body", False)
            if self.scope["method"] == "HEAD":
                self.expected_content_length = 0
            elif self.chunked_encoding:
                if body:
                    chunk = b"%x\r\n%b\r\n" % (len(body), body)
                    self.transport.write(chunk if more_body else chunk + b"0\r\n\r\n")
                elif not more_body:
                    self.transport.write(b"0\r\n\r\n")
            else:
                size = len(body)
                if size > self.expected_content_length:
                    raise RuntimeError("Response content longer than Content-Length")
                self.expected_content_length -= size
                self.transport.write(body)
            if not more_body:
                if self.expected_content_length != 0:
                    raise RuntimeError("Response content shorter than Content-Length")
                self.response_complete = True
                self.wake()
                if not self.keep_alive:
                    self.transport.close()
                protocol.on_response_complete()
        else:
            raise RuntimeError(f"Unexpected ASGI message '{message['type']}' sent, after response already completed.")

    async def receive(self) -> Any:
        if self.waiting_for_100_continue and not self.transport.is_closing():
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.waiting_for_100_continue = False
        if not self.disconnected and not self.response_complete:
            self.protocol.flow.resume_reading()
            if not self.body and (self.more_body or self._ended):  # nothing new yet: wait for it
                event = self._event
                if event is None:  # (made only when a receive has to wait)
                    event = self._event = asyncio.Event()
                event.clear()
                await event.wait()
        if self.disconnected or self.response_complete:
            return dict(_DISCONNECT)
        body = self.body
        message = {
            "type": "http.request",
            "body": body if type(body) is bytes else bytes(body),
            "more_body": self.more_body,
        }
        self.body = b""
        if not self.more_body:
            self._ended = True
        return message


class LeanRequests(_Base):
    """The protocol's per-request methods, making a :class:`LeanCycle` for each request."""

    _upgrading = False
    _finished: _Finished | None = None

    def finished(self) -> _Finished:
        """What this connection's cycles keep of it once their apps have returned (one per connection)."""
        finished = self._finished
        if finished is None:
            finished = self._finished = _Finished(self)
        return finished

    def on_message_begin(self) -> None:
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self._upgrading = False

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_100_continue = True
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        parser = self.parser
        http_version = parser.get_http_version()
        method = parser.get_method().decode("ascii")
        if parser.should_upgrade() and self._should_upgrade():
            self._upgrading = True
            self.scope = {"method": method, "headers": self.headers}  # type: ignore[typeddict-item]
            return
        url = self.url
        # (a byte looked for as its value: on CPython 3.11, `b"#" in url` costs 140 ns, `_HASH in url` 20)
        if url[:1] == b"/" and _HASH not in url and len(url) < 65536:  # origin form: /path?query
            # (httptools' URL parser refuses a target of 64 KiB or more: so does this, through it)
            raw_path, _, query = url.partition(b"?")
        else:
            parsed = httptools.parse_url(url)
            raw_path, query = parsed.path, parsed.query or b""
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        root_path = self.root_path
        scope = {
            "type": "http",
            "asgi": {"version": self.asgi_version, "spec_version": "2.3"},
            "http_version": http_version,
            "server": self.server,
            "client": self.client,
            "scheme": self.scheme,
            "root_path": root_path,
            "headers": self.headers,
            "state": self.app_state.copy(),
            "method": method,
            "path": root_path + path if root_path else path,
            "raw_path": root_path.encode("ascii") + raw_path if root_path else raw_path,
            "query_string": query,
        }
        self.scope = scope  # type: ignore[assignment]
        limit = self.limit_concurrency
        if limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit):
            app = service_unavailable
            self.logger.warning("Exceeded concurrency limit.")
        else:
            app = self.app
        existing = self.cycle
        keep_alive = http_version != "1.0" and parser.should_keep_alive()
        cycle = LeanCycle(self, scope, keep_alive, self.expect_100_continue)
        self.cycle = cycle  # type: ignore[assignment]
        if existing is None or existing.response_complete:
            self._start_asgi_task(cycle, app)
        else:  # a pipelined request waits for the one before it
            self.flow.pause_reading()
            self.pipeline.appendleft((cycle, app))  # type: ignore[arg-type]

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if self.config.reset_contextvars:
            task = self.loop.create_task(cycle.run_asgi(app), context=contextvars.Context())
        else:
            task = self.loop.create_task(cycle.run_asgi(app))
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def on_body(self, body: bytes) -> None:
        cycle: LeanCycle = self.cycle  # type: ignore[assignment]
        if self._upgrading or cycle.response_complete:
            return
        held = cycle.body
        if held:  # a body in pieces: kept in a bytearray (+= on bytes would copy it all each time)
            if type(held) is bytes:
                held = cycle.body = bytearray(held)
            held += body
        else:
            held = cycle.body = body
        if len(held) > HIGH_WATER_LIMIT:
            self.flow.pause_reading()
        cycle.wake()

    def on_message_complete(self) -> None:
        cycle: LeanCycle = self.cycle  # type: ignore[assignment]
        if self._upgrading or cycle.response_complete:
            return
        cycle.more_body = False
        cycle.wake()

    def connection_lost(self, exc: Exception | None) -> None:  # Uvicorn's, waking a LeanCycle
        self.connections.discard(self)
        if self.logger.level <= TRACE_LOG_LEVEL:
            prefix = f"{self.client[0]}:{self.client[1]} - " if self.client else ""
            self.logger.log(TRACE_LOG_LEVEL, "%sHTTP connection lost", prefix)
        cycle: LeanCycle | None = self.cycle  # type: ignore[assignment]
        if cycle is not None:
            if not cycle.response_complete:
                cycle.disconnected = True
            cycle.wake()
        if self.flow is not None:
            self.flow.resume_writing()
        if exc is None:
            self.transport.close()
            self._unset_keepalive_if_required()
        self.parser = None  # type: ignore[assignment]
