"""``mockllm serve --workers N``: N worker processes serving one listening socket.

The parent binds the socket (so ``--port 0`` is known before the first line is printed), then forks
the workers; each builds its own engine, app and connection to the shared state store and accepts
on the inherited socket, the kernel handing each new connection to one of them. SIGTERM or SIGINT
to the parent stops every worker gracefully; a worker that dies is replaced, unless it died within a
second of starting (then the fleet stops: it would only die again)."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from types import FrameType

#: A worker that exits sooner than this after it started is failing to start, not crashing in use.
STARTUP_S = 1.0


def run_workers(count: int, serve: Callable[[], int], sock: socket.socket) -> int:
    """Fork ``count`` processes that each run ``serve()`` (on ``sock``); wait for them. Exit code: 0
    when every worker stopped cleanly on a signal, else 1."""
    children: dict[int, tuple[int, float]] = {}  # pid -> (worker number, when it started)
    stopping = False
    code = 0

    def start(number: int) -> None:
        pid = os.fork()
        if pid == 0:  # the worker
            status = 1
            try:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(sig, signal.SIG_DFL)
                status = serve()
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        children[pid] = (number, time.monotonic())

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for number in range(1, count + 1):
            start(number)
        while children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            if pid not in children:
                continue
            number, started = children.pop(pid)
            exit_code = os.waitstatus_to_exitcode(status)
            if stopping:
                if exit_code != 0:
                    code = 1
                continue
            if time.monotonic() - started < STARTUP_S:
                print(f"mockllm: worker {number} failed at start (exit {exit_code}): stopping", file=sys.stderr)
                code = 1
                stop(signal.SIGTERM, None)
                continue
            print(f"mockllm: worker {number} exited ({exit_code}): starting another", file=sys.stderr, flush=True)
            start(number)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()
    return code
