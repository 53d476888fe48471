"""How long `mockllm check` takes on a large library.

Generates a library of about ``--lines`` lines (default 10,000) in a temporary directory -- many files
of realistic scenarios sharing an imported file of named replies -- and times, in this process:

- grammar build (cold): the LALR tables built from the grammar, with no cache file;
- grammar load (warm): the parser loaded from the cache file the cold build wrote;
- parse: reading and parsing every file (``load_paths``);
- semantic check + compile: ``compile_library``;
- total: what a `mockllm check` run pays with a warm cache (load + parse + check and compile).

Usage: ``python bench/bench_check.py [--lines N] [--repeat R]`` (the best of R runs is shown)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

TARGET_SECONDS = 1.0
LINES_PER_FILE = 500

SHARED = """\
mockllm 1

reply rate_limited:
    error 429 "Rate limit reached for requests"
    retry after 2s

reply overloaded:
    error 529 "Overloaded"
    retry after 500ms
"""

HEADER = """\
mockllm 1
use "shared.mockllm" as shared

defaults:
    latency 5ms
    stream by word
    header "x-bench" "yes"
"""


def scenario(i: int) -> str:
    return f'''
scenario "Scenario {i}":
    priority {i % 7 - 3}
    tags bench, "group {i % 5}"
    let product = "Product {i}"
    when:
        provider is openai
        model glob "gpt-4o*"

    step fail_{i}:
        repeat 2
        when:
            header "x-case" is "{i}"
        reply like shared.rate_limited

    step ask_{i}:
        when:
            last user message contains "weather {i}" ignoring case
            tools include "get_weather"
        capture city from last user message /weather in (\\w+)/i
        reply:
            tool call get_weather {{"city": "{{{{city}}}}", "unit": "celsius", "case": {i}}}

    step sunny_{i}:
        after ask_{i}
        when:
            tool result for "get_weather" contains "sun"
        expect:
            any system message matches /assistant/
        reply:
            text "It is sunny in {{{{city}}}} for {{{{product}}}}."
            stream 4 chunks, 40ms apart
            usage 12 in, 30 out

    step rainy_{i}:
        after ask_{i}
        when:
            tool result for "get_weather" contains "rain"
        reply:
            text """
                Take an umbrella in {{{{city}}}}.
                Case {i}.
                """

    step chat_{i}:
        after sunny_{i}
        always
        reply:
            text "Anything else?"
'''


def generate(root: Path, lines: int) -> list[Path]:
    """Write the library; returns the files to check (the shared file is imported, not listed)."""
    (root / "shared.mockllm").write_text(SHARED, encoding="utf-8")
    files: list[Path] = []
    total = SHARED.count("\n")
    i = 0
    while total < lines:
        parts = [HEADER]
        count = HEADER.count("\n")
        while count < LINES_PER_FILE and total + count < lines:
            text = scenario(i)
            parts.append(text)
            count += text.count("\n")
            i += 1
        path = root / f"suite_{len(files):03d}.mockllm"
        path.write_text("".join(parts), encoding="utf-8")
        files.append(path)
        total += count
    return files


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--lines", type=int, default=10_000, help="library size in lines (default 10000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is shown (default 3)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="mockllm-bench-") as tmp:
        root = Path(tmp)
        os.environ["XDG_CACHE_HOME"] = str(root / "cache")  # a private, empty grammar cache
        from mockllm.dsl.diagnostics import has_errors, render
        from mockllm.dsl.machines.compiler import compile_library
        from mockllm.dsl.parse import parser
        from mockllm.dsl.parse.loader import load_paths

        (root / "lib").mkdir()
        files = generate(root / "lib", args.lines)
        lines = sum(p.read_text(encoding="utf-8").count("\n") for p in (root / "lib").iterdir())

        def fresh_parser() -> object:
            parser._PARSERS.clear()  # forget the per-process parser so the next call really builds or loads
            return parser.build_parser()

        cold, _ = timed(fresh_parser)  # no cache file yet: builds the tables and writes the cache
        warm = min(timed(fresh_parser)[0] for _ in range(args.repeat))

        parse_times: list[float] = []
        check_times: list[float] = []
        for _ in range(args.repeat):
            t_parse, library = timed(lambda: load_paths(files))
            t_check, (compiled, diagnostics) = timed(lambda: compile_library(library))  # noqa: B023
            parse_times.append(t_parse)
            check_times.append(t_check)
        if compiled is None or has_errors(diagnostics):
            print(render(diagnostics, library.sources), file=sys.stderr)
            print("the generated library has errors: the benchmark is void", file=sys.stderr)
            return 1
        parse_s, check_s = min(parse_times), min(check_times)
        total = warm + parse_s + check_s

    rows = [
        ("grammar build (cold, no cache)", cold),
        ("grammar load (warm cache)", warm),
        (f"parse ({len(files) + 1} files, {lines:,} lines)", parse_s),
        (f"semantic check + compile ({len(compiled.machines)} scenarios, {compiled.step_count()} steps)", check_s),
        ("**total** (warm load + parse + check)", total),
    ]
    print(
        f"`mockllm check` on a generated {lines:,}-line library (best of {args.repeat}; Python "
        f"{sys.version.split()[0]})\n"
    )
    print("| stage | time |")
    print("| --- | ---: |")
    for label, seconds in rows:
        print(f"| {label} | {seconds * 1000:.1f} ms |")
    verdict = "meets" if total < TARGET_SECONDS else "MISSES"
    print(f"\nTotal {total:.3f} s {verdict} the target of < {TARGET_SECONDS:.0f} s.")
    return 0 if total < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
