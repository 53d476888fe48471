"""The shared-state tests' real Redis (bench/redis_state.py): a missing or failing ``redis-server``
fails the test with what to install (``.ci/run`` installs it); these tests never skip."""

from __future__ import annotations

import socket
import socketserver
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

sys.path.append(str(Path(__file__).resolve().parent.parent / "bench"))  # after tests/: bench has a reliability.py too

from redis_state import RedisMissing
from redis_state import RedisServer as _RedisServer


class RedisServer(_RedisServer):
    def __init__(self, directory: Path) -> None:
        try:
            super().__init__(directory)
        except RedisMissing as exc:
            pytest.fail(str(exc), pytrace=False)

    def start(self) -> RedisServer:
        try:
            super().start()
        except RedisMissing as exc:
            pytest.fail(str(exc), pytrace=False)
        return self


__all__ = ["RedisServer"]


@contextmanager
def redis_proxy(
    upstream: str, *, hang: bytes = b"", twice: bytes = b"", slow: bytes = b"", delay: float = 0.0
) -> Iterator[tuple[str, list[bytes]]]:
    """The Redis at ``upstream`` behind a proxy on a thread of its own that passes every command on, but
    never answers (nor passes on) the command named ``hang``, sends Redis's answer to ``twice`` twice and
    holds the answer to ``slow`` for ``delay`` seconds: the proxy's URL, and the commands it received, in
    order (``b"CONNECTED"`` for each new connection)."""
    import hiredis

    received: list[bytes] = []
    host, port = urlsplit(upstream).hostname, urlsplit(upstream).port

    class Connection(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            received.append(b"CONNECTED")
            commands = hiredis.Reader()
            with socket.create_connection((host, port)) as redis:
                while data := self.request.recv(65536):
                    commands.feed(data)
                    while (command := commands.gets()) is not False:
                        name = command[0].upper()
                        received.append(name)
                        if name != hang:
                            redis.sendall(hiredis.pack_command(tuple(command)))
                            answer = one_reply(redis)
                            if name == slow:
                                time.sleep(delay)
                            self.request.sendall(answer * 2 if name == twice else answer)

    def one_reply(redis: socket.socket) -> bytes:
        reply, raw = hiredis.Reader(), b""
        while True:
            chunk = redis.recv(65536)
            raw += chunk
            reply.feed(chunk)
            if reply.gets() is not False:
                return raw

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Connection)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"redis://127.0.0.1:{server.server_address[1]}/0", received
    finally:
        server.shutdown()
        server.server_close()
