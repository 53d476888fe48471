"""`python bench/reliability.py`: the long form of the reliability suite (tests/test_reliability_*.py
run the short form in CI), with absolute figures.

    python bench/reliability.py [--quick] [--out FILE]

Rows:

1. 320 short connections (connect, one request, client closes) to `mockllm serve` under
   ``ulimit -n 256``, per server: how many succeeded, and the descriptors the server holds after.
2. A pytest run of 1,000 tests, each building a new openai client against the ``mockllm`` fixture
   and never closing it, under ``ulimit -n 256``.
3. A health probe sent every 5 ms while one heavy request is handled: an 8 MB message, an 8 MB
   body of 80,000 short messages, a posted library of 800 and of 1,600 steps. Target: every probe
   answered within 100 ms.
4. SIGTERM to a server with 50 open streams (openai SDK, 20 chunks 400 ms apart; grace 1 s):
   how many streams ended with their finish chunk, how long the process took to exit, tracebacks.
5. 300 clients that reset their connection after the first chunk of a stream: how many the
   journal marks ``client_gone``.

``--quick`` runs smaller sizes (for a smoke check). Progress goes to stderr; the table to stdout
and, with ``--out``, to a file. Figures depend on the machine and its load: they are printed with
the machine's CPU count and load average."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import httpx  # noqa: E402
from reliability import (  # noqa: E402
    library_text,
    open_descriptors,
    probe_while,
    run_many_tests,
    serve_process,
    servers,
    short_connection,
    stop,
    wait_until,
)

Row = tuple[str, str, str, str]


def progress(text: str) -> None:
    print(f"reliability: {text}", file=sys.stderr, flush=True)


def short_connections(count: int) -> list[Row]:
    rows = []
    for server in servers():
        progress(f"{count} short connections on {server} under ulimit -n 256")
        with serve_process("--server", server, fd_limit=256) as (proc, _, port):
            ok = 0
            started = time.monotonic()
            for _ in range(count):
                try:
                    ok += short_connection(port, timeout=5).startswith(b"HTTP/1.1 200")
                except OSError:
                    pass
            took = time.monotonic() - started
            wait_until(lambda: (open_descriptors(proc.pid) or 0) < 40, 3.0)
            held = open_descriptors(proc.pid)
            code, _ = stop(proc)
        result = f"{ok}/{count} in {took:.2f} s; server holds {held} descriptors after; exit {code}"
        rows.append((f"short connections, ulimit -n 256 ({server})", result, f"{count}/{count}", _ok(ok == count)))
    return rows


def pytest_run(count: int) -> list[Row]:
    progress(f"a pytest run of {count} tests under ulimit -n 256")
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        done = run_many_tests(Path(tmp), count, fd_limit=256)
        took = time.monotonic() - started
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return [
        (f"pytest run of {count} tests, ulimit -n 256", f"{last} ({took:.0f} s)", "all pass", _ok(done.returncode == 0))
    ]


def _chat(body: bytes) -> Callable[[str, httpx.Client], httpx.Response]:
    def send(url: str, client: httpx.Client) -> httpx.Response:
        return client.post(url + "/v1/chat/completions", content=body, headers={"content-type": "application/json"})

    return send


def _post_library(text: bytes) -> Callable[[str, httpx.Client], httpx.Response]:
    def send(url: str, client: httpx.Client) -> httpx.Response:
        return client.post(url + "/_mockllm/scenarios", content=text)

    return send


def stalls(scale: int) -> list[Row]:
    size = 8_000_000 // scale
    cases = [
        (
            f"{size // 1_000_000} MB message",
            _chat(json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * size}]}).encode()),
        ),
        (
            f"{size // 100:,} short messages",
            _chat(
                json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 90}] * (size // 100)}).encode()
            ),
        ),
        (f"library of {800 // scale} steps", _post_library(library_text(800 // scale))),
        (f"library of {1600 // scale} steps", _post_library(library_text(1600 // scale))),
    ]
    rows = []
    with serve_process("--no-auth", "--lenient", "--max-body-bytes", str(64 * 1024 * 1024)) as (_, url, _port):
        _chat(json.dumps({"model": "m", "messages": [{"role": "user", "content": "warm-up"}]}).encode())(
            url, httpx.Client()
        )  # the first request imports the reply planner: not what is measured here
        for name, heavy in cases:
            progress(f"health probe during: {name}")
            took, latencies, status = probe_while(url, heavy)
            worst = max(latencies, default=0.0)
            median = sorted(latencies)[len(latencies) // 2] if latencies else 0.0
            result = (
                f"request {took * 1000:.0f} ms (status {status}); {len(latencies)} probes, "
                f"median {median * 1000:.0f} ms, worst {worst * 1000:.0f} ms"
            )
            rows.append((f"health probe during {name}", result, "worst < 100 ms", _ok(worst < 0.1)))
    return rows


STREAM_SCRIPT = """
scenario "slow":
    step answer:
        always
        reply:
            text "{words}"
            stream 20 chunks, 400ms apart
"""


def sigterm_streams(count: int) -> list[Row]:
    import openai

    progress(f"SIGTERM with {count} open streams")
    words = " ".join(f"w{i}" for i in range(20))
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp, "slow.mockllm")
        script.write_text(STREAM_SCRIPT.format(words=words))
        with serve_process(str(script), "--shutdown-grace", "1") as (proc, url, _):
            results: list[str] = []
            started = threading.Semaphore(0)

            def one() -> None:
                client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=60)
                try:
                    text, finish, first = [], None, True
                    stream = client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": "go"}], stream=True
                    )
                    for chunk in stream:
                        if first:
                            started.release()
                            first = False
                        for choice in chunk.choices:
                            text.append(choice.delta.content or "")
                            finish = choice.finish_reason or finish
                    results.append("ok" if "".join(text) == words and finish == "stop" else "cut")
                except Exception as exc:
                    results.append(type(exc).__name__)
                    started.release()

            threads = [threading.Thread(target=one, daemon=True) for _ in range(count)]
            for thread in threads:
                thread.start()
            for _ in threads:
                started.acquire(timeout=30)
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            for thread in threads:
                thread.join(30)
            code = proc.wait(30)
            took = time.monotonic() - signalled
            assert proc.stderr is not None
            err = proc.stderr.read()
    ended = results.count("ok")
    tracebacks = err.count("Traceback")
    result = (
        f"{ended}/{count} ended with finish chunk and [DONE]; exit {code} after {took:.2f} s; {tracebacks} tracebacks"
    )
    return [
        (
            f"SIGTERM with {count} open streams, grace 1 s",
            result,
            "all end, 0 tracebacks",
            _ok(ended == count and not tracebacks),
        )
    ]


def resets(count: int) -> list[Row]:
    rows = []
    body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}).encode()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    ) + body
    script_text = 'scenario "s":\n    step a:\n        always\n        reply:\n            text "a b c d e f g h"\n'
    script_text += "            stream by word, 50ms apart\n"
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp, "s.mockllm")
        script.write_text(script_text)
        for server in servers():
            progress(f"{count} resets mid-stream on {server}")
            with serve_process(str(script), "--server", server) as (_, url, port):

                def reset() -> None:
                    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                        sock.sendall(request)
                        data = b""
                        while b"data:" not in data:
                            data += sock.recv(65536)
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

                threads = [threading.Thread(target=reset) for _ in range(count)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(60)
                time.sleep(1.0)
                journal = httpx.get(url + "/_mockllm/requests", timeout=30).json()
            gone = sum(1 for e in journal if e.get("client_gone"))
            rows.append(
                (f"resets mid-stream ({server})", f"{gone}/{count} journalled client_gone", "all", _ok(gone == count))
            )
    return rows


def _ok(passed: bool) -> str:
    return "met" if passed else "MISSED"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke check")
    parser.add_argument("--out", metavar="FILE", help="also write the table here")
    args = parser.parse_args(argv)
    if sys.platform == "win32":
        print("reliability: needs POSIX descriptor limits and signals", file=sys.stderr)
        return 2
    quick = args.quick
    rows: list[Row] = []
    rows += short_connections(320)
    rows += pytest_run(100 if quick else 1000)
    rows += stalls(8 if quick else 1)
    rows += sigterm_streams(10 if quick else 50)
    rows += resets(30 if quick else 300)
    load = os.getloadavg()
    lines = [
        f"mockllm reliability, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
        + (" (--quick)" if quick else ""),
        "",
        "| measurement | result | target | |",
        "| --- | --- | --- | --- |",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
    ]
    table = "\n".join(lines)
    print(table)
    if args.out:
        heading = "# Reliability figures\n\nWritten by `python bench/reliability.py --out bench/reliability.md`.\n\n"
        Path(args.out).write_text(heading + table + "\n")
    return 0 if all(row[3] == "met" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
