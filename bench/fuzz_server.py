"""The long form of the fuzz suite (issue 12): N cases per server, Hypercorn and Uvicorn.

Starts ``mockllm serve`` on the fuzz script of ``tests/fuzzing.py`` as a subprocess per server, sends
it N requests drawn from ``tests/fuzzing.py`` (arbitrary JSON text, lone surrogates and huge integers
included, on every endpoint of every provider and the admin API; one case in eight posts a script
to the admin API), and after every case checks the canary conversation. Counts rather than stops:
5xx answers, canary failures, listing/admin views that fail at the end, and tracebacks in the
server's stderr.

Usage: ``python bench/fuzz_server.py [--cases 4000] [--server hypercorn|uvicorn|both]``
Exit status 1 when any count is not zero."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from fuzzing import SCRIPT, Case, check_canary, check_views, requests, scripts, send  # noqa: E402
from run import Server, running  # noqa: E402


def fuzz(url: str, cases: int) -> dict[str, Any]:
    counts = {"cases": 0, "5xx": 0, "canary": 0, "views": 0}
    first: list[str] = []
    with httpx.Client(base_url=url, timeout=30) as client:

        @settings(
            max_examples=cases,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        @given(st.one_of(*[requests()] * 7, scripts()))
        def one(case: Case) -> None:
            counts["cases"] += 1
            try:
                response = send(client, case)
            except httpx.HTTPError as exc:
                counts["5xx"] += 1
                first.append(f"{type(exc).__name__} for {case.describe()}")
                return
            if response.status_code >= 500:
                counts["5xx"] += 1
                first.append(f"{response.status_code} for {case.describe()}: {response.text[:300]}")
            try:
                check_canary(client)
            except AssertionError as exc:
                counts["canary"] += 1
                first.append(f"canary after {case.describe()}: {exc}")

        one()
        try:
            check_views(client)
        except AssertionError as exc:
            counts["views"] += 1
            first.append(f"views: {exc}")
    return {**counts, "first": first[:3]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=4000)
    parser.add_argument("--server", choices=("hypercorn", "uvicorn", "both"), default="both")
    args = parser.parse_args()
    servers = ["hypercorn", "uvicorn"] if args.server == "both" else [args.server]
    print("| server | cases | 5xx | canary changed | views failing | tracebacks | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "fuzz.mockllm"
        script.write_text(SCRIPT, encoding="utf-8")
        for name in servers:
            argv = [sys.executable, "-m", "mockllm", "serve", str(script), "--port", "0", "--server", name]
            server = Server(name, argv, None, Path(tmp))
            started = time.perf_counter()
            with running(server):
                result = fuzz(server.url, args.cases)
            seconds = time.perf_counter() - started
            tracebacks = server.err_path.read_text(encoding="utf-8", errors="replace").count("Traceback")
            counts = (result["5xx"], result["canary"], result["views"], tracebacks)
            bad += sum(counts)
            print(f"| {name} | {result['cases']:,} | " + " | ".join(map(str, counts)) + f" | {seconds:.0f} |")
            for line in result["first"]:
                print(f"  first failures: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
