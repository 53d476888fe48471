"""The benchmark's load generator: N keep-alive HTTP/1.1 connections over raw asyncio streams, each
sending one request after another, for a fixed duration or request count. Prints one JSON object.

It runs in its own process, pinned to one core (``--cpu``) where the machine allows, so it does not
compete with the server it measures. It imports nothing from mockllm: the same client drives mockllm
and the baseline.

    python bench/load.py --url http://127.0.0.1:8080 --body '{"model": "bench", ...}' \\
        --concurrency 16 --duration 3 [--stream] [--expect-latency-ms 50 --expect-interval-ms 20]

Output: ``requests`` and ``errors`` counted in the measuring window (after ``--warmup``), ``rps``,
``latency_ms`` percentiles (send → last byte), and with ``--stream`` the SSE ``events`` and
``events_per_s``. With ``--expect-latency-ms``/``--expect-interval-ms`` it also reports the timing
error seen by the client: ``latency_error_ms`` (response head arrival, minus send, minus the expected
latency) and ``spacing_error_ms`` (|arrival of content event k, minus arrival of content event 0,
minus k times the interval|)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    """p50, p90, p99 and max by the nearest-rank method; None for an empty sample."""
    if not values:
        return {"p50": None, "p90": None, "p99": None, "max": None, "n": 0}
    ordered = sorted(values)

    def rank(p: float) -> float:
        k = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
        return round(ordered[k], 3)

    return {"p50": rank(50), "p90": rank(90), "p99": rank(99), "max": round(ordered[-1], 3), "n": len(ordered)}


def pin(cpu: int | None) -> list[int] | None:
    """Pin this process to ``cpu`` when asked and allowed; the cores it may run on afterwards."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    if cpu is not None:
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError:
            pass
    return sorted(os.sched_getaffinity(0))


def is_content_event(event: bytes) -> bool:
    """Whether an SSE event is an OpenAI chunk carrying text or tool-call arguments."""
    if not event.startswith(b"data: {"):
        return False
    try:
        obj = json.loads(event[6:])
    except ValueError:
        return False
    choices = obj.get("choices") if isinstance(obj, dict) else None
    if not choices or not isinstance(choices[0], dict):
        return False
    delta = choices[0].get("delta") or {}
    return bool(isinstance(delta, dict) and (delta.get("content") or delta.get("tool_calls")))


class Result:
    def __init__(self) -> None:
        self.requests = 0
        self.errors = 0
        self.error_sample: str | None = None
        self.events = 0
        self.latencies_ms: list[float] = []
        self.latency_errors_ms: list[float] = []
        self.spacing_errors_ms: list[float] = []

    def error(self, text: str) -> None:
        self.errors += 1
        if self.error_sample is None:
            self.error_sample = text[:300]


class Client:
    def __init__(self, args: argparse.Namespace) -> None:
        url = urlsplit(args.url)
        self.host = url.hostname or "127.0.0.1"
        self.port = url.port or 80
        body = args.body.encode() if args.body_file is None else args.body_file.read_bytes()
        typed = any(h.lower().startswith("content-type:") for h in args.header)  # (a multipart upload's own)
        lines = [
            f"POST {args.path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            *([] if typed else ["Content-Type: application/json"]),
            "Authorization: Bearer sk-bench",
            f"Content-Length: {len(body)}",
            *args.header,
        ]
        self.request = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
        self.stream = bool(args.stream)
        self.expect_latency = args.expect_latency_ms
        self.expect_interval = args.expect_interval_ms
        self.timing = self.expect_latency is not None or self.expect_interval is not None

    async def one(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, result: Result, window: tuple[float, float]
    ) -> bool:
        """Send one request and read its response, counting it when it finished inside ``window``;
        False when the connection must be reopened."""
        sent = time.perf_counter()
        writer.write(self.request)
        head = await reader.readuntil(b"\r\n\r\n")
        head_at = time.perf_counter()
        status = int(head[9:12])
        length: int | None = None
        chunked = False
        close = False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value.strip())
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif name == b"connection" and b"close" in value.lower():
                close = True
        events = 0
        content_times: list[float] = []
        body = b""
        if chunked:
            pending = b""
            while True:
                size_line = await reader.readline()
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data = (await reader.readexactly(size + 2))[:-2]
                if status >= 400 and len(body) < 300:
                    body += data
                if self.stream:
                    now = time.perf_counter()
                    pending += data
                    while b"\n\n" in pending:
                        event, pending = pending.split(b"\n\n", 1)
                        events += 1
                        if self.timing and is_content_event(event):
                            content_times.append(now)
        elif length is not None:
            body = await reader.readexactly(length)
            if self.stream:
                events = body.count(b"\n\n")
        else:
            body = await reader.read()
            close = True
        done = time.perf_counter()
        if window[0] <= done <= window[1]:
            if status >= 400:
                result.error(f"HTTP {status}: {body[:200]!r}")
            else:
                result.requests += 1
                result.events += events
                result.latencies_ms.append((done - sent) * 1000)
                if self.expect_latency is not None:
                    result.latency_errors_ms.append((head_at - sent) * 1000 - self.expect_latency)
                if self.expect_interval is not None and content_times:
                    first = content_times[0]
                    for k, at in enumerate(content_times[1:], start=1):
                        result.spacing_errors_ms.append(abs((at - first) * 1000 - k * self.expect_interval))
        return not close


async def worker(
    client: Client, result: Result, start: float, stop: float, budget: list[int], delay: float = 0.0
) -> None:
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    if delay > 0:
        await asyncio.sleep(delay)
    try:
        while True:
            now = time.perf_counter()
            if now >= stop or budget[0] == 0:
                return
            if budget[0] > 0 and now >= start:
                budget[0] -= 1
            if writer is None or reader is None:
                try:
                    reader, writer = await asyncio.open_connection(client.host, client.port)
                except OSError as exc:
                    result.error(f"connect: {exc}")
                    await asyncio.sleep(0.01)
                    continue
            try:
                keep = await client.one(reader, writer, result, (start, stop))
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
                result.error(f"{type(exc).__name__}: {exc}")
                keep = False
            if not keep:
                writer.close()
                reader = writer = None
    finally:
        if writer is not None:
            writer.close()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    client = Client(args)
    result = Result()
    began = time.perf_counter()
    start = began + args.warmup
    duration = args.duration if args.requests is None else args.timeout
    stop = start + duration
    budget = [args.requests if args.requests is not None else -1]
    # --stagger S: connection i sends its first request i/N of S after the start, so N streams with the
    # same script are spread over its cycle instead of all waking at the same instant.
    spread = max(0.0, args.stagger_ms) / 1000
    tasks = [
        asyncio.create_task(worker(client, result, start, stop, budget, spread * i / args.concurrency))
        for i in range(args.concurrency)
    ]
    await asyncio.gather(*tasks)
    ended = time.perf_counter()
    elapsed = (min(ended, stop) if args.requests is None else ended) - start
    elapsed = max(elapsed, 1e-9)
    out: dict[str, Any] = {
        "concurrency": args.concurrency,
        "elapsed_s": round(elapsed, 4),
        "requests": result.requests,
        "errors": result.errors,
        "error_sample": result.error_sample,
        "rps": round(result.requests / elapsed, 2),
        "latency_ms": percentiles(result.latencies_ms),
    }
    if client.stream:
        out["events"] = result.events
        out["events_per_s"] = round(result.events / elapsed, 2)
    if args.expect_latency_ms is not None:
        out["latency_error_ms"] = percentiles([abs(e) for e in result.latency_errors_ms])
    if args.expect_interval_ms is not None:
        out["spacing_error_ms"] = percentiles(result.spacing_errors_ms)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="HTTP/1.1 keep-alive load generator for the mockllm benchmark.")
    parser.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument("--path", default="/v1/chat/completions")
    parser.add_argument("--body", default="", help="the JSON request body")
    parser.add_argument("--body-file", type=Path, default=None, help="the request body's bytes, from a file")
    parser.add_argument("--header", action="append", default=[], help="an extra request header 'Name: value'")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--duration", type=float, default=3.0, help="measuring window in seconds")
    parser.add_argument("--requests", type=int, default=None, help="stop after this many requests instead")
    parser.add_argument("--timeout", type=float, default=120.0, help="longest run with --requests")
    parser.add_argument("--warmup", type=float, default=0.3, help="seconds of load before measuring")
    parser.add_argument("--stream", action="store_true", help="count SSE events in the responses")
    parser.add_argument(
        "--stagger-ms", type=float, default=0.0, help="spread the connections' first requests over this long"
    )
    parser.add_argument("--expect-latency-ms", type=float, default=None)
    parser.add_argument("--expect-interval-ms", type=float, default=None)
    parser.add_argument("--cpu", type=int, default=None, help="pin this process to this core")
    args = parser.parse_args(argv)
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    cores = pin(args.cpu)
    try:
        out = asyncio.run(run(args))
    except KeyboardInterrupt:
        return 130
    out["cpu"] = cores
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
