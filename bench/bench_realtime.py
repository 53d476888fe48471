"""Realtime sessions: response events per second against aimock's OpenAI Realtime mock, and 200
concurrent sessions with no cross-talk and flat memory after they close.

**Events/s.** mockllm's `/v1/realtime` and aimock's (its LLM server with `bench/scenarios/aimock-chat.json`,
`--chunk-size 6`), each pinned to one core, driven by the same load generator: this script run with
`--client` in its own process, pinned to another core, a `websockets` client keeping `--sessions`
sessions open at once, each asking for one `response.create` after another (`--responses` per session,
then a fresh session) and reading every event up to `response.done`. Both servers answer with the same
116-character text in 20 `response.output_text.delta` events, 27 `response.*` events a response; the
figure counts those (mockllm also sends `conversation.item.added`/`done` and `rate_limits.updated`,
not counted). Both servers run at once and are measured in turn, round after round; the ratio is the
median of the per-round ratios (≥ 1.0: mockllm sends at least as many events per second).

**200 sessions.** `--many 200` sessions at once against mockllm, each sending its own number and
checking that its answer (a scripted step capturing the number) names its own number and no other's;
all closed, then again, `--cycles` times; the server's resident memory after the last cycle against
after the first (flat: about 1.0).

    python bench/bench_realtime.py [--duration 3] [--rounds 3] [--sessions 8] [--server uvicorn]
    python bench/bench_realtime.py --smoke      # a few responses and sessions, no aimock, no timing

aimock is installed by `bench/aimock.py` into a cache outside the repo; without Node the aimock figure
is skipped with the reason. Prints one JSON object."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

REPLY = json.loads((HERE / "scenarios" / "aimock-chat.json").read_text(encoding="utf-8"))["fixtures"][0]["response"][
    "content"
]
USER = "Hello, benchmark"
SCRIPT = f"""\
scenario "Realtime bench":
    step answer:
        when:
            endpoint is "realtime"
        always
        reply:
            text {json.dumps(REPLY)}
            stream 20 chunks
"""
MANY_SCRIPT = """\
scenario "Many sessions":
    step answer:
        when:
            endpoint is "realtime"
        capture n from last user message /session (\\d+)/
        always
        reply:
            text "Answer for session {{n}}."
"""
HEADERS = {"Authorization": "Bearer sk-bench"}
SETUP = json.dumps({"type": "session.update", "session": {"type": "realtime", "output_modalities": ["text"]}})
CREATE = json.dumps({"type": "response.create"})


def item(text: str) -> str:
    content = [{"type": "input_text", "text": text}]
    return json.dumps(
        {"type": "conversation.item.create", "item": {"type": "message", "role": "user", "content": content}}
    )


def event_type(frame: str | bytes) -> str:
    """The ``type`` of a server event (both servers write it first; parsed in full otherwise)."""
    text = frame if isinstance(frame, str) else frame.decode()
    if text.startswith('{"type":"'):
        return text[9 : text.index('"', 9)]
    return str(json.loads(text).get("type", ""))


def pin(pid: int, cpu: int | None) -> None:
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(pid, {cpu})


# ---------------------------------------------------------------------------------------------------------
# The load generator (run with --client, in its own process)


async def _session_loop(url: str, responses: int, counts: dict[str, int], stop: asyncio.Event) -> None:
    import websockets

    while not stop.is_set():
        async with websockets.connect(url, additional_headers=HEADERS, max_size=None, compression=None) as ws:
            await ws.send(SETUP)
            await ws.send(item(USER))
            for _ in range(responses):
                if stop.is_set():
                    return
                await ws.send(CREATE)
                while True:
                    kind = event_type(await ws.recv())
                    if kind == "error":
                        counts["errors"] += 1
                    elif kind.startswith("response."):
                        counts["events"] += 1
                        if kind == "response.done":
                            counts["responses"] += 1
                            break


async def _drive(url: str, sessions: int, responses: int, duration: float, warmup: float) -> dict[str, Any]:
    counts = {"events": 0, "responses": 0, "errors": 0}
    stop = asyncio.Event()
    tasks = [asyncio.create_task(_session_loop(url, responses, counts, stop)) for _ in range(sessions)]
    await asyncio.sleep(warmup)
    start = (dict(counts), time.monotonic(), time.process_time())
    await asyncio.sleep(duration)
    end = (dict(counts), time.monotonic(), time.process_time())
    stop.set()
    for task in tasks:
        task.cancel()
    done = await asyncio.gather(*tasks, return_exceptions=True)
    failed = [repr(r) for r in done if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)]
    span = end[1] - start[1]
    got = {k: end[0][k] - start[0][k] for k in counts}
    return {
        "events_per_s": round(got["events"] / span, 1),
        "responses_per_s": round(got["responses"] / span, 1),
        "errors": got["errors"],
        "client_cpu": round((end[2] - start[2]) / span, 2),  # of one core: near 1.0, the client is the limit
        "failed_sessions": failed[:3],
    }


def client(args: argparse.Namespace) -> int:
    pin(0, args.client_cpu)
    out = asyncio.run(_drive(args.client, args.sessions, args.responses, args.duration, args.warmup))
    print(json.dumps(out))
    return 0


def load(url: str, args: argparse.Namespace) -> dict[str, Any]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--client", url, "--sessions", str(args.sessions)]
    argv += ["--responses", str(args.responses), "--duration", str(args.duration), "--warmup", str(args.warmup)]
    argv += ["--client-cpu", str(args.client_cpu)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=args.duration + 120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the load generator failed: {done.stderr[-1500:]}")
    out: dict[str, Any] = json.loads(done.stdout)
    return out


# ---------------------------------------------------------------------------------------------------------
# The servers


@contextlib.contextmanager
def serve_mockllm(tmp: Path, cpu: int | None, server: str, script: str) -> Iterator[tuple[int, int]]:
    """``mockllm serve`` with ``script``: its port and process id, once it answers."""
    from aimock import free_port
    from processes import stop, tail

    path = tmp / "realtime.mockllm"
    path.write_text(script, encoding="utf-8")
    port = free_port()
    err = tmp / "mockllm.err"
    with open(err, "wb") as stderr:
        argv = [sys.executable, "-m", "mockllm", "serve", str(path), "--port", str(port), "--server", server]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr, stdin=subprocess.DEVNULL)
    pin(proc.pid, cpu)
    try:
        wait_ready(f"ws://127.0.0.1:{port}/v1/realtime?model=gpt-realtime", proc, err)
        yield port, proc.pid
    finally:
        stop(proc)
        if proc.returncode not in (0, -15):
            print(f"mockllm: {tail(err)}", file=sys.stderr)


def wait_ready(url: str, proc: subprocess.Popen[bytes] | None = None, err: Path | None = None) -> None:
    """Wait until ``url`` answers one response with the benchmark reply (or the many-sessions one)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            asyncio.run(_probe(url))
            return
        except (TimeoutError, OSError) as exc:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"the server exited: {err.read_text()[-800:] if err else ''}") from exc
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


async def _probe(url: str) -> None:
    import websockets

    async with websockets.connect(url, additional_headers=HEADERS, open_timeout=2) as ws:
        await ws.send(SETUP)
        await ws.send(item(USER))
        await ws.send(CREATE)
        while True:
            frame = await asyncio.wait_for(ws.recv(), 5)
            if event_type(frame) in ("response.done", "error"):  # (the many-sessions script answers no probe)
                return


# ---------------------------------------------------------------------------------------------------------
# 200 sessions at once


async def _one_session(url: str, n: int) -> str | None:
    """Session ``n``: its answer's text, or what went wrong."""
    import websockets

    headers = HEADERS
    async with websockets.connect(url, additional_headers=headers, max_size=None, open_timeout=30) as ws:
        await ws.send(SETUP)
        await ws.send(item(f"This is session {n}."))
        await ws.send(CREATE)
        text = ""
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if event["type"] == "response.output_text.delta":
                text += event["delta"]
            elif event["type"] == "error":
                return f"error: {event}"
            elif event["type"] == "response.done":
                return text


async def _cycle(url: str, sessions: int) -> list[str]:
    """Open ``sessions`` at once; the problems seen (an answer naming another session: cross-talk)."""
    answers = await asyncio.gather(*(_one_session(url, n) for n in range(sessions)), return_exceptions=True)
    problems = []
    for n, answer in enumerate(answers):
        if answer != f"Answer for session {n}.":
            problems.append(f"session {n}: {answer!r}")
    return problems


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def reset(port: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", "/_mockllm/reset")
        conn.getresponse().read()
    finally:
        conn.close()


def many(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    with serve_mockllm(tmp, args.server_cpu, args.server, MANY_SCRIPT) as (port, pid):
        url = f"ws://127.0.0.1:{port}/v1/realtime?model=gpt-realtime"
        problems: list[str] = []
        rss: list[int] = []
        started = time.monotonic()
        kept: list[int] = []
        for _ in range(args.cycles):
            problems += asyncio.run(_cycle(url, args.many))
            time.sleep(0.2)  # the sessions' tasks end after their sockets close
            kept.append(rss_kb(pid))
            reset(port)  # the journal and the conversations (kept by design, bounded): what is left is the sessions'
            rss.append(rss_kb(pid))
        took = time.monotonic() - started
    return {
        "sessions": args.many,
        "cycles": args.cycles,
        "cross_talk_or_errors": len(problems),
        "problems": problems[:5],
        "rss_mb_after_each_cycle": [round(r / 1024, 1) for r in rss],
        "rss_mb_before_each_reset": [round(r / 1024, 1) for r in kept],
        "rss_ratio_last_vs_first": round(rss[-1] / max(rss[0], 1), 3),
        "seconds": round(took, 1),
    }


# ---------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=8, help="sessions open at once in the events/s figure")
    parser.add_argument("--responses", type=int, default=20, help="responses per session before a fresh one")
    parser.add_argument("--server", default="uvicorn", help="mockllm's host (default: uvicorn, its fastest)")
    parser.add_argument("--server-cpu", type=int, default=0)
    parser.add_argument("--client-cpu", type=int, default=1)
    parser.add_argument("--many", type=int, default=200, help="sessions at once in the cross-talk and memory row")
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, no aimock: checks the bench runs")
    parser.add_argument("--client", default=None, help=argparse.SUPPRESS)  # run as the load generator
    args = parser.parse_args(argv)
    if args.client:
        return client(args)
    if args.smoke:
        args.duration, args.warmup, args.rounds, args.many, args.cycles = 0.3, 0.1, 1, 20, 2
    out: dict[str, Any] = {
        "what": "realtime response.* events per second, one pinned core each; sessions at once; memory",
        "server": args.server,
        "sessions": args.sessions,
        "responses_per_session": args.responses,
    }
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        found: Any = "not run in --smoke mode, which installs nothing"
        if not args.smoke:
            from aimock import prepare

            found = prepare()
        with serve_mockllm(tmp, args.server_cpu, args.server, SCRIPT) as (port, _pid):
            ours_url = f"ws://127.0.0.1:{port}/v1/realtime?model=gpt-realtime"
            if isinstance(found, str):
                runs = [load(ours_url, args) for _ in range(args.rounds)]
                out["mockllm"] = runs
                out["aimock"] = f"skipped: {found}"
            else:
                from aimock import serve as serve_aimock

                with serve_aimock(found, frozenset({args.server_cpu}), tmp) as base:
                    peer_url = base.replace("http://", "ws://") + "/v1/realtime?model=gpt-realtime"
                    wait_ready(peer_url)
                    ours: list[dict[str, Any]] = []
                    theirs: list[dict[str, Any]] = []
                    for _ in range(args.rounds):
                        ours.append(load(ours_url, args))
                        theirs.append(load(peer_url, args))
                ratios = [a["events_per_s"] / max(b["events_per_s"], 1e-9) for a, b in zip(ours, theirs, strict=True)]
                out["mockllm_events_per_s"] = [r["events_per_s"] for r in ours]
                out["aimock_events_per_s"] = [r["events_per_s"] for r in theirs]
                out["mockllm_responses_per_s"] = [r["responses_per_s"] for r in ours]
                out["aimock_responses_per_s"] = [r["responses_per_s"] for r in theirs]
                out["client_cpu"] = {
                    "mockllm": [r["client_cpu"] for r in ours],
                    "aimock": [r["client_cpu"] for r in theirs],
                }
                out["errors"] = sum(r["errors"] for r in ours + theirs)
                out["aimock_version"] = found.version
                out["ratio"] = round(statistics.median(ratios), 2)
        out["many_sessions"] = many(args, tmp)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
