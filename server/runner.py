"""`mockllm serve`: load a library, bind a socket, print where it listens, serve until a signal.

The socket is bound here (not by the ASGI server) so ``--port 0`` picks a free port that is known
before the first line is printed, and the same binding code serves the in-process server."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from mockllm.errors import MockllmError, UsageError
from mockllm.server.hosts.table import DEFAULT_HOST, HOSTS, Stopping
from mockllm.server.options import (
    DEFAULT_HANG_LIMIT_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_SHUTDOWN_GRACE_S,
    ServerOptions,
)
from mockllm.server.passthrough.arguments import passthrough_options
from mockllm.server.state.poll_window import DEFAULT_POLL_S

if TYPE_CHECKING:
    from mockllm.dsl.machines.compiled import CompiledLibrary
    from mockllm.server.state.store import StateStore
    from mockllm.server.tls.files import TlsFiles

ENV_SCENARIOS = "MOCKLLM_SCENARIOS"

log = logging.getLogger("mockllm.server")


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening, non-blocking TCP socket on ``host:port`` (port 0: a free one)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(1024)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def stop_on_signals() -> asyncio.Event:
    """An event the running loop sets on SIGINT or SIGTERM (where the platform lets it)."""
    running = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            running.add_signal_handler(sig, stop.set)
    return stop


def url_for(host: str, sock: socket.socket, tls: bool = False) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}"


def loop_factory(loop: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop factory for ``loop`` ("asyncio" or "uvloop"); None for asyncio's default."""
    if loop == "uvloop":
        uvloop = importlib.import_module("uvloop")
        factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
        return factory
    return None


def run(
    library: CompiledLibrary | None,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    options: ServerOptions | None = None,
    server: str = DEFAULT_HOST,
    loop: str | None = None,
    max_conversations: int = 10_000,
    idle_seconds: float = 3600.0,
    out: TextIO | None = None,
    watch: Callable[[StateStore], Awaitable[None]] | None = None,
    workers: int = 1,
    verbose: bool = False,
) -> int:
    """Serve ``library`` (None: the echo responder) until SIGINT/SIGTERM. Prints the listening line
    first on ``out`` (default stdout). Returns the exit code.

    ``server`` is "hypercorn" (the default), "uvicorn" (the `fast` extra: httptools on uvloop) or
    "granian" (the `granian` extra: Granian's Rust HTTP server, the app on uvloop where installed).
    ``loop`` picks the event loop: "asyncio" or "uvloop"; by default uvloop for Uvicorn and Granian
    and asyncio for Hypercorn (Hypercorn on uvloop is what Hypercorn's own ``uvloop`` worker class runs).
    ``workers`` above 1 serves from that many processes on the one socket (server/workers.py); they
    need ``options.state``, the store they share. ``verbose`` lists every scenario after the summary."""
    from mockllm.runtime.engine.engine import Engine
    from mockllm.server.http.app import create_app
    from mockllm.server.http.server_state import server_state

    missing = server_missing(server)
    if missing is not None:
        print(missing, file=sys.stderr)
        return 2
    chosen_loop = loop or default_loop(server)
    try:
        factory = loop_factory(chosen_loop)
    except ImportError:
        print(f"mockllm: the {chosen_loop} event loop is not installed: pip install 'mockllm[fast]'", file=sys.stderr)
        return 2
    stream = out if out is not None else sys.stdout
    opts = options or ServerOptions()
    refused = refuse_state(opts.state, workers)
    if refused is not None:
        print(refused, file=sys.stderr)
        return refused.exit_code
    try:
        sock = bind_socket(host, port)
    except OSError as exc:
        print(f"mockllm: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    from mockllm.server.inspector.routes import inspector_url

    url = url_for(host, sock, opts.tls is not None)
    # Both lines in one write: a reader that closes the pipe after the first line (many tools do) must not
    # make the second write fail and stop the server.
    try:
        stream.write(f"mockllm listening on {url}\nmockllm inspector on {inspector_url(url)}\n")
        stream.flush()
    except (BrokenPipeError, ValueError):  # ValueError: the stream itself was closed
        pass
    from mockllm.server.http.admin import library_description

    where = f"; state in Redis at {opts.state}" if opts.state else ""
    fleet = f"; {workers} worker processes" if workers > 1 else ""
    print(f"mockllm: serving {library_description(library)}{where}{fleet}", file=sys.stderr, flush=True)
    if opts.tls is not None:
        print(opts.tls.trust_hint(), file=sys.stderr, flush=True)
    if verbose and library is not None:
        from mockllm.server.http.admin import library_listing

        print(library_listing(library), file=sys.stderr, flush=True)

    def serve_here() -> int:
        engine = Engine(library, clock=opts.clock, max_conversations=max_conversations, idle_seconds=idle_seconds)
        serve = HOSTS[server].serve()
        app = create_app(engine, opts)

        async def main() -> None:
            stop = stop_on_signals()

            state = server_state(app)
            shutdown = state.shutdown
            shutdown.reset()
            watcher = asyncio.ensure_future(watch(state.store)) if watch is not None else None

            async def trigger() -> None:
                await stop.wait()
                shutdown.stopping.set()
                if watcher is not None:
                    watcher.cancel()

            grace = opts.shutdown_grace_s
            try:
                await serve(app, sock, Stopping(trigger, grace, shutdown.finishing.set), opts.tls)
            finally:
                if watcher is not None:
                    watcher.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await watcher
                await state.store.close()
                if state.passthrough is not None:
                    await state.passthrough.aclose()

        return run_until_interrupted(main, sock, factory)

    if workers > 1:
        from mockllm.server.workers import run_workers

        return run_workers(workers, serve_here, sock)
    return serve_here()


WORKERS_NEED_STATE = (
    "mockllm: --workers above 1 needs --state redis://HOST:PORT/DB: each worker process would "
    "otherwise keep its own conversations and journal"
)


def refuse_state(state: str | None, workers: int) -> MockllmError | None:
    """Why ``--state``/``--workers`` cannot serve (its message is one line), else None: more than one
    worker without a shared store, a URL that is not Redis's, the extra missing, or Redis not answering."""
    if state is None:
        return UsageError(WORKERS_NEED_STATE) if workers > 1 else None
    if workers > 1 and sys.platform == "win32":
        return UsageError("mockllm: --workers above 1 needs fork(), which Windows does not have")
    from mockllm.server.state.redis.store import reachable

    try:
        reachable(state)
    except MockllmError as exc:
        return exc
    return None


def run_until_interrupted(
    main: Callable[[], Coroutine[Any, Any, None]],
    sock: socket.socket,
    factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
) -> int:
    """Run ``main`` on a fresh event loop; Ctrl-C ends it quietly; the socket is closed either way. Exit code 0."""
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(main())
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0


def server_missing(server: str) -> str | None:
    """Why the host ``server`` cannot run here (its extra is not installed), else None."""
    return HOSTS[server].missing()


def default_loop(server: str) -> str:
    """The host's event loop: uvloop for the fast hosts where it is installed, else asyncio."""
    return HOSTS[server].default_loop()


def library_paths(paths: Sequence[str]) -> list[str]:
    """The paths given, else those in $MOCKLLM_SCENARIOS (split on the OS path separator)."""
    if paths:
        return list(paths)
    env = os.environ.get(ENV_SCENARIOS, "")
    return [p for p in env.split(os.pathsep) if p.strip()]


def scenario_base(paths: Sequence[str]) -> str:
    """What ``use`` in script text posted to the admin API resolves against: the first served path
    (its directory when it is a file), else the working directory."""
    if not paths:
        return os.getcwd()
    first = os.path.abspath(paths[0])
    return first if os.path.isdir(first) else os.path.dirname(first)


ENV_ADMIN_TOKEN = "MOCKLLM_ADMIN_TOKEN"


def admin_token(args: argparse.Namespace) -> str | None:
    """The admin token: ``--admin-token``, else the first line of ``--admin-token-file`` ("" when that
    line is empty), else ``$MOCKLLM_ADMIN_TOKEN``, else None. Raises OSError for an unreadable file."""
    given = getattr(args, "admin_token", None)
    if given:
        return str(given)
    path = getattr(args, "admin_token_file", None)
    if path:
        with open(path, encoding="utf-8") as fh:
            return fh.readline().strip()
    return os.environ.get(ENV_ADMIN_TOKEN, "").strip() or None


def serve_command(args: argparse.Namespace) -> int:
    """`mockllm serve [PATH …]`: the entry point the CLI calls."""
    server = getattr(args, "server", DEFAULT_HOST) or DEFAULT_HOST
    missing = server_missing(server)
    if missing is not None:
        print(missing, file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    logging.getLogger("hypercorn.error").setLevel(logging.WARNING)

    library = None
    paths = library_paths(getattr(args, "paths", None) or [])
    watching = bool(getattr(args, "watch", False))
    if watching and not paths:
        print("mockllm: --watch needs the files to watch: give PATH or set MOCKLLM_SCENARIOS", file=sys.stderr)
        return 2
    poll = getattr(args, "state_poll", None)
    if poll is not None and not getattr(args, "state", None):
        print(
            "mockllm: --state-poll needs --state redis://HOST:PORT/DB (it sets how requests wait for Redis)",
            file=sys.stderr,
        )
        return 2
    imported: list[str] = []
    if paths:
        from mockllm.dsl.diagnostics import render
        from mockllm.dsl.machines.compiler import load_and_compile

        library, loaded, diagnostics = load_and_compile(paths)
        errors = [d for d in diagnostics if d.is_error]
        warnings = [d for d in diagnostics if not d.is_error]
        if errors or library is None:
            print(render(diagnostics, loaded.sources), file=sys.stderr)
            count = len(errors)
            print(f"mockllm: not serving: {count} error{'s' if count != 1 else ''} in the library", file=sys.stderr)
            return 1
        if warnings:
            print(render(warnings, loaded.sources), file=sys.stderr)
        imported = [name for name in loaded.sources if os.path.isfile(name)]

    try:
        token = admin_token(args)
    except OSError as exc:
        print(f"mockllm: cannot read the admin token file: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if token == "":
        print("mockllm: the admin token file is empty", file=sys.stderr)
        return 2
    base = getattr(args, "scenario_base", None)
    if base is not None and not os.path.isdir(base):
        print(f"mockllm: --scenario-base {base}: not a directory", file=sys.stderr)
        return 2
    try:
        tls = tls_files(args)
    except MockllmError as exc:
        print(exc, file=sys.stderr)
        return exc.exit_code
    options = ServerOptions(
        tls=tls,
        state=getattr(args, "state", None) or None,
        state_poll_s=DEFAULT_POLL_S if poll is None else int(poll) / 1e6,
        no_auth=bool(getattr(args, "no_auth", False)),
        lenient=bool(getattr(args, "lenient", False)),
        admin_token=token,
        max_body_bytes=int(getattr(args, "max_body_bytes", DEFAULT_MAX_BODY_BYTES)),
        hang_limit_s=float(getattr(args, "hang_limit", DEFAULT_HANG_LIMIT_S)),
        shutdown_grace_s=float(getattr(args, "shutdown_grace", DEFAULT_SHUTDOWN_GRACE_S)),
        scenario_base=os.path.abspath(base) if base is not None else scenario_base(paths),
        passthrough=passthrough_options(args),
        cors=tuple(getattr(args, "cors", None) or ()),
        openai_prefixes=tuple(getattr(args, "openai_prefix", None) or ()),
    )
    return run(
        library,
        host=getattr(args, "host", "127.0.0.1"),
        port=int(getattr(args, "port", 8080)),
        options=options,
        server=server,
        loop=getattr(args, "loop", None) or None,  # no CLI flag yet: the benchmark passes it to try Hypercorn on uvloop
        max_conversations=int(getattr(args, "max_conversations", 10_000)),
        idle_seconds=float(getattr(args, "idle_seconds", 3600.0)),
        watch=_watcher(paths, imported, float(getattr(args, "watch_interval", 0.5))) if watching else None,
        workers=int(getattr(args, "workers", 1) or 1),
        verbose=bool(getattr(args, "verbose", False)),
    )


def tls_files(args: argparse.Namespace) -> TlsFiles | None:
    """``--tls`` (the loopback certificate, made once and kept), ``--tls-cert FILE --tls-key FILE`` (the
    user's), or None (plain HTTP). Raises :class:`MockllmError` saying what is wrong."""
    cert, key = getattr(args, "tls_cert", None), getattr(args, "tls_key", None)
    if cert or key:
        from mockllm.server.tls.files import given_files

        return given_files(cert, key)
    if not getattr(args, "tls", False):
        return None
    from mockllm.server.tls.loopback import loopback_certificate

    return loopback_certificate()


def _watcher(paths: Sequence[str], imported: Sequence[str], interval: float) -> Callable[[StateStore], Awaitable[None]]:
    from mockllm.server.watch import script_files, snapshot, watch_library

    loaded = snapshot(script_files(paths, imported))  # before the server listens: no edit after it is missed

    def start(store: StateStore) -> Awaitable[None]:
        return watch_library(store, paths, imported, sys.stderr, interval, seen=loaded)

    return start
