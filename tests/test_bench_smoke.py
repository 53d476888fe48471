"""The benchmark suite runs end to end in smoke mode and prints its table (no timing assertions:
speed is judged by `bench/run.py` itself, as ratios against a baseline, never by a timed test)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

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
    after = done.stdout.split(TABLE_HEADER, 1)[1]
    rows = [line for line in after.splitlines() if line.startswith("| ")][1:]  # the figures, not the targets
    numbers = {row.split("|")[1].strip() for row in rows}
    assert {"1", "2", "3", "4", "5", "6"} <= numbers
    for row in rows:  # every row is judged against its target or says why it could not run
        result = row.rstrip(" |").rsplit("|", 1)[1]
        assert any(word in result for word in ("met", "not available yet", "not installed", "not run")), row
    assert "load generator" in done.stdout
    assert out.read_text(encoding="utf-8").count(TABLE_HEADER) == 1


def _bench_run() -> ModuleType:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_run"] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_the_performance_page_is_what_the_generator_writes() -> None:
    """docs/performance.md is bench/run.py's page: its targets, its sections and its method as the
    generator writes them, the figures and run notes of the last run, and the sections of the other
    bench scripts below the generator's marker. A hand edit above the marker would be lost on the next run."""
    run = _bench_run()
    page = ROOT / "docs" / "performance.md"
    text = page.read_text(encoding="utf-8")
    notes = text.split("Written by `python bench/run.py`", 1)[1].split("\n\n", 1)[1].split("\n\n| # |", 1)[0]
    rows = run.kept_rows(page, set())
    assert {r.num for r in rows} >= {"1", "2", "3", "4", "5", "6", "7", "8", "9"}
    assert run.document(rows, notes.splitlines(), run.kept_sections(page)) == text
    assert "## The pytest fixture" in text.split(run.KEPT_MARKER, 1)[1]
