"""How compile time grows with the steps of one scenario (issue 12: it was cubic -- 800 steps 10 s,
1,600 steps 46 s -- and a library posted to the admin API froze the server while it compiled).

Generates one scenario of N steps (every fifth captures, every seventh repeats, as
``tests/test_compile_growth.py`` does), and times ``load_text`` (parse) and ``compile_library``
(checks and compile) for each N, best of R runs. Linear growth shows as a ratio near 2 per doubling.

Usage: ``python bench/bench_compile.py [--steps 1000,2000,4000] [--repeat 3]``"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_compile_growth import long_scenario  # noqa: E402

from mockllm.dsl.machines.compiler import compile_library  # noqa: E402
from mockllm.dsl.parse.loader import load_text  # noqa: E402


def measure(steps: int, repeat: int) -> tuple[float, float]:
    text = long_scenario(steps)
    best_load = best_compile = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        library = load_text(text, file="long.mockllm")
        loaded = time.perf_counter()
        compiled, _ = compile_library(library)
        done = time.perf_counter()
        assert compiled is not None
        best_load = min(best_load, loaded - started)
        best_compile = min(best_compile, done - loaded)
    return best_load, best_compile


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="1000,2000,4000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.steps.split(",")]
    print("| steps in one scenario | parse | check + compile | total | total vs previous |")
    print("| --- | --- | --- | --- | --- |")
    previous = None
    for steps in sizes:
        parse, compile_ = measure(steps, args.repeat)
        total = parse + compile_
        ratio = f"{total / previous:.2f}x" if previous else "—"
        print(f"| {steps:,} | {parse:.2f} s | {compile_:.2f} s | {total:.2f} s | {ratio} |")
        previous = total
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
