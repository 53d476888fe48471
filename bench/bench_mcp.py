"""MCP tool calls per second: mockllm's `/mcp/NAME` against aimock's MCP mock (`MCPMock`, mounted at
`/mcp` by `aimock --config`), each server pinned to one core, driven by the same load generator
(`bench/load.py`, pinned to another core) over keep-alive connections: one session each, then
`tools/call` after `tools/call` of a tool with a fixed structured result. Both servers run at once
and are measured in turn, round after round (so a busy machine slows both alike); the figure is the
median of the per-round ratios. Prints one JSON object with the rates and mockllm's ratio (≥ 1.0:
mockllm answers at least as many calls per second).

    python bench/bench_mcp.py [--duration 3] [--rounds 3] [--concurrency 8] [--server uvicorn]
    python bench/bench_mcp.py --smoke       # mockllm only, a fraction of a second: checks the bench runs

aimock is installed by `bench/aimock.py` into a cache outside the repo; without Node the aimock row
is skipped with the reason. Both servers answer the same call with the same result."""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from aimock import Aimock, free_port, prepare  # noqa: E402
from processes import stop, tail  # noqa: E402

RESULT = {"city": "Paris", "sky": "clear", "high_c": 21}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
SCRIPT = f"""\
mcp server "weather":
    tool get_forecast "Forecast for a city":
        input {json.dumps(SCHEMA)}

scenario "Forecast tool":
    step paris:
        when:
            tool is "get_forecast"
        always
        reply:
            result {json.dumps(RESULT)}
"""
CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "get_forecast", "arguments": {"city": "Paris"}},
}
ACCEPT = "application/json, text/event-stream"


def pin(pid: int, cpu: int | None) -> None:
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(pid, {cpu})


def post(port: int, path: str, body: Any, session: str | None = None) -> tuple[int, dict[str, str], bytes]:
    headers = {"content-type": "application/json", "accept": ACCEPT}
    if session:
        headers["mcp-session-id"] = session
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("POST", path, json.dumps(body), headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def open_session(port: int, path: str) -> str | None:
    """Initialize a session (its id, if the server gives one) and check a call answers the result."""
    deadline = time.monotonic() + 30
    while True:
        try:
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
            status, headers, _ = post(port, path, init | {"params": init["params"] | {"capabilities": {}}})
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    session = headers.get("mcp-session-id")
    post(port, path, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    status, _, body = post(port, path, CALL, session)
    if status != 200 or b"clear" not in body:
        raise RuntimeError(f"{path} answered the call with {status}: {body[:300]!r}")
    return session


def load(port: int, path: str, session: str | None, args: argparse.Namespace) -> dict[str, Any]:
    argv = [sys.executable, str(HERE / "load.py"), "--url", f"http://127.0.0.1:{port}", "--path", path]
    argv += ["--body", json.dumps(CALL), "--concurrency", str(args.concurrency), "--duration", str(args.duration)]
    argv += ["--header", f"Accept: {ACCEPT}", "--cpu", str(args.client_cpu)]
    if session:
        argv += ["--header", f"Mcp-Session-Id: {session}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=args.duration + 60, check=True)
    out: dict[str, Any] = json.loads(done.stdout)
    return out


@contextlib.contextmanager
def serve_mockllm(tmp: Path, cpu: int | None, server: str = "hypercorn") -> Iterator[int]:
    script = tmp / "weather.mockllm"
    script.write_text(SCRIPT, encoding="utf-8")
    port = free_port()
    err = tmp / "mockllm.err"
    with open(err, "wb") as stderr:
        argv = [sys.executable, "-m", "mockllm", "serve", str(script), "--port", str(port), "--server", server]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr, stdin=subprocess.DEVNULL)
    pin(proc.pid, cpu)
    try:
        yield port
    finally:
        stop(proc)
        if proc.returncode not in (0, -15):
            print(f"mockllm: {tail(err)}", file=sys.stderr)


@contextlib.contextmanager
def serve_aimock(aimock: Aimock, tmp: Path, cpu: int | None) -> Iterator[int]:
    config = {
        "mcp": {
            "path": "/mcp",
            "tools": [
                {
                    "name": "get_forecast",
                    "description": "Forecast for a city",
                    "inputSchema": SCHEMA,
                    "result": json.dumps(RESULT),
                }
            ],
        },
        "llm": {"logLevel": "warn"},
    }
    path = tmp / "aimock.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    port = free_port()
    cli = aimock.cli.with_name("aimock-cli.js")
    err = tmp / "aimock.err"
    with open(err, "wb") as stderr:
        argv = [aimock.node, str(cli), "--config", str(path), "--port", str(port), "--host", "127.0.0.1"]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr, stdin=subprocess.DEVNULL)
    pin(proc.pid, cpu)
    try:
        yield port
    finally:
        stop(proc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--server", default="uvicorn", help="mockllm's host (default: uvicorn, its fastest)")
    parser.add_argument("--server-cpu", type=int, default=0)
    parser.add_argument("--client-cpu", type=int, default=1)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, no aimock: checks the bench runs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.duration, args.rounds = 0.3, 1
    out: dict[str, Any] = {
        "what": "MCP tools/call per second, one pinned core each, keep-alive, one session",
        "server": args.server,
        "concurrency": args.concurrency,
    }
    found = "not run in --smoke mode, which installs nothing" if args.smoke else prepare()
    with tempfile.TemporaryDirectory() as tmp, serve_mockllm(Path(tmp), args.server_cpu, args.server) as port:
        session = open_session(port, "/mcp/weather")
        if isinstance(found, str):
            out["mockllm_rps"] = [load(port, "/mcp/weather", session, args)["rps"] for _ in range(args.rounds)]
            out["aimock"] = f"skipped: {found}"
        else:
            with serve_aimock(found, Path(tmp), args.server_cpu) as peer:
                peer_session = open_session(peer, "/mcp")
                ours: list[float] = []
                theirs: list[float] = []
                for _ in range(args.rounds):
                    ours.append(load(port, "/mcp/weather", session, args)["rps"])
                    theirs.append(load(peer, "/mcp", peer_session, args)["rps"])
            ratios = sorted(a / max(b, 1e-9) for a, b in zip(ours, theirs, strict=True))
            out |= {"mockllm_rps": ours, "aimock_rps": theirs, "aimock_version": found.version}
            out["ratio"] = round(ratios[len(ratios) // 2], 2)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
