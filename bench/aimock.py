"""aimock (`@copilotkit/aimock`, Node), the peer `bench/run.py` compares mockllm against (row 7).

Everything aimock-specific lives here: installing it with npm into a cache directory outside the repo
(``~/.cache/mockllm-bench/aimock``, or ``$XDG_CACHE_HOME/mockllm-bench/aimock``), starting its server
on a free port with ``bench/scenarios/aimock-chat.json`` (the same reply text as
``bench/scenarios/chat.mockllm``, streamed in the same 20 content chunks), and stopping it again.

aimock ships two command-line entry points: ``aimock`` (needs a ``--config`` JSON for its whole
multi-service setup) and ``llmock``, the flag-driven LLM server used here::

    node .../@copilotkit/aimock/dist/cli.js --host 127.0.0.1 --port PORT \\
        --fixtures bench/scenarios/aimock-chat.json --chunk-size 6 --log-level warn

A fixture file is ``{"fixtures": [{"match": {"userMessage": "..."}, "response": {"content": "..."}}]}``;
``--chunk-size`` is in characters (116 characters / 6 = 20 content chunks, as `stream 20 chunks`).

Nothing here raises on a missing or broken Node set-up: :func:`prepare` returns the reason instead, and
`bench/run.py` turns it into a "skipped: <reason>" row. ``--smoke`` never calls :func:`prepare`, so the
smoke run installs nothing."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from processes import stop, tail

PACKAGE = "@copilotkit/aimock"
HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "scenarios" / "aimock-chat.json"
CHUNK_SIZE = 6  # characters per streamed chunk: the 116-character reply in 20 chunks
PROBE_BODY = {"model": "bench", "messages": [{"role": "user", "content": "Hello, benchmark"}]}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mockllm-bench" / "aimock"


@dataclass(frozen=True)
class Aimock:
    """An installed aimock: how to run its LLM server, and which version it is."""

    node: str
    cli: Path
    version: str


class AimockFailed(Exception):
    pass


def installed(root: Path, node: str) -> Aimock | None:
    package = root / "node_modules" / "@copilotkit" / "aimock"
    cli = package / "dist" / "cli.js"
    try:
        version = str(json.loads((package / "package.json").read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return Aimock(node, cli, version) if cli.is_file() else None


def prepare() -> Aimock | str:
    """aimock ready to run (installed into :func:`cache_dir` first if needed), or why it cannot be."""
    npm = shutil.which("npm")
    node = shutil.which("node")
    if npm is None or node is None:
        return "`npm`/`node` is not on PATH"
    root = cache_dir()
    found = installed(root, node)
    if found is not None:
        return found
    try:
        root.mkdir(parents=True, exist_ok=True)
        manifest = root / "package.json"
        if not manifest.exists():
            manifest.write_text('{"private": true, "description": "mockllm benchmark: the aimock peer"}\n')
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", PACKAGE],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"`npm install {PACKAGE}` failed: {exc}"
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).split())[-200:]
        return f"`npm install {PACKAGE}` exited {done.returncode}: {tail}"
    found = installed(root, node)
    return found if found is not None else f"`npm install {PACKAGE}` left no dist/cli.js in {root}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def answers(port: int) -> bool:
    """Whether aimock on ``port`` answers the benchmark request with HTTP 200 and the fixture's text."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(PROBE_BODY), {"content-type": "application/json"})
        response = conn.getresponse()
        body = response.read()
    except OSError:
        return False
    finally:
        conn.close()
    if response.status != 200:
        raise AimockFailed(f"aimock answered the benchmark request with HTTP {response.status}: {body[:200]!r}")
    if b"The benchmark reply" not in body:
        raise AimockFailed(f"aimock answered with another text: {body[:200]!r}")
    return True


@contextlib.contextmanager
def serve(aimock: Aimock, cpus: frozenset[int] | None, logdir: Path, timeout: float = 30.0) -> Iterator[str]:
    """Run aimock's LLM server with the benchmark fixture; yields its URL once it answers the benchmark
    request. Raises :class:`AimockFailed` when it cannot start; always stops the process afterwards."""
    port = free_port()
    argv = [aimock.node, str(aimock.cli), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--fixtures", str(FIXTURE), "--chunk-size", str(CHUNK_SIZE), "--log-level", "warn"]
    out_path, err_path = logdir / "aimock.out", logdir / "aimock.err"
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise AimockFailed(f"cannot start node: {exc}") from exc
    try:
        if cpus is not None and hasattr(os, "sched_setaffinity"):
            with contextlib.suppress(OSError):
                os.sched_setaffinity(proc.pid, cpus)
        deadline = time.monotonic() + timeout
        while not answers(port):
            code = proc.poll()
            if code is not None:
                raise AimockFailed(f"aimock exited with code {code} before listening; {tail(err_path)}")
            if time.monotonic() > deadline:
                raise AimockFailed(f"aimock did not answer on port {port} within {timeout:.0f} s; {tail(err_path)}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)
