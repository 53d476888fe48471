"""The benchmark suite runs end to end in smoke mode and prints its table (no timing assertions:
speed is judged by `bench/run.py` itself, as ratios against a baseline, never by a timed test)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE_HEADER = "| # | measurement | setting | mockllm | baseline | ratio | target | result |"


def test_bench_smoke_prints_and_writes_the_table(tmp_path: Path) -> None:
    out = tmp_path / "performance.md"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert TABLE_HEADER in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")][2:]
    numbers = {row.split("|")[1].strip() for row in rows}
    assert {"1", "2", "3", "4", "5", "6"} <= numbers
    for row in rows:  # every row is judged against its target or says why it could not run
        result = row.rstrip(" |").rsplit("|", 1)[1]
        assert any(word in result for word in ("met", "not available yet", "not installed", "not run")), row
    assert "load generator" in done.stdout
    assert out.read_text(encoding="utf-8").count(TABLE_HEADER) == 1
