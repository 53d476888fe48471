"""Shared fixtures: a real mockllm server on 127.0.0.1 (free port, background thread) built from
`.mockllm` text. ``serve_text(text, **options)`` yields its base URL; ``serve(text, **options)`` yields
the :class:`BackgroundServer` (``.url``, ``.engine``). ``options`` are :class:`ServerOptions` fields;
empty text serves the echo responder alone."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# test modules share hypothesis strategies from tests/strategies.py (`from strategies import …`)
sys.path.insert(0, str(Path(__file__).parent))

if TYPE_CHECKING:
    from mockllm.dsl.machines.compiled import CompiledLibrary
    from mockllm.server.background import BackgroundServer


#: The ``serve`` fixture: ``serve(text, **options)`` is a context manager yielding the server.
Serve = Callable[..., AbstractContextManager["BackgroundServer"]]
#: The ``serve_text`` fixture: the same, yielding the server's base URL.
ServeText = Callable[..., AbstractContextManager[str]]


def compile_text(text: str) -> CompiledLibrary | None:
    """Compile a script; a script with errors fails the test with the rendered diagnostics."""
    if not text.strip():
        return None
    from mockllm.dsl.diagnostics import render
    from mockllm.dsl.machines.compiler import compile_library
    from mockllm.dsl.parse.loader import load_text

    library = load_text(text, file="test.mockllm")
    compiled, diagnostics = compile_library(library)
    if compiled is None:
        pytest.fail("the test script does not compile:\n" + render(diagnostics, library.sources), pytrace=False)
    return compiled


class SleepLog:
    """A ``ServerOptions.sleep`` that records every delay the server asks for, then really waits: a
    test asserts the delays the script set exactly, and wall-clock time only from below (a loaded
    machine makes things slower, never faster). How fast mockllm is belongs in bench/."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        import asyncio

        self.delays.append(seconds)
        await asyncio.sleep(seconds)


@pytest.fixture(autouse=True)
def _close_sdk_clients() -> Iterator[None]:
    """Close the SDK clients the test opened through :mod:`sdk_clients`."""
    yield
    from sdk_clients import close_opened

    close_opened()


@pytest.fixture
def sleep_log() -> SleepLog:
    return SleepLog()


@contextmanager
def _serve(text: str = "", **options: Any) -> Iterator[BackgroundServer]:
    from mockllm.server.background import BackgroundServer
    from mockllm.server.options import ServerOptions

    with BackgroundServer(compile_text(text), options=ServerOptions(**options)) as server:
        yield server


@contextmanager
def _serve_url(text: str = "", **options: Any) -> Iterator[str]:
    with _serve(text, **options) as server:
        yield server.url


@pytest.fixture
def serve() -> Serve:
    return _serve


@pytest.fixture
def serve_text() -> ServeText:
    return _serve_url


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real Redis for the session (per xdist worker), started on a free port (tests/redis_server.py)."""
    from redis_server import RedisServer

    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: Any) -> str:
    """The session's Redis, emptied for this test: ``redis://127.0.0.1:PORT/0``."""
    redis_server.flush()
    url: str = redis_server.url
    return url
