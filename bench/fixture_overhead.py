"""What the pytest fixture costs a test: the same tests run twice, through pytest, in a fresh project.

- **bare**: each test sends one chat request (the official ``openai`` SDK, one client per session)
  to a mockllm server the session started itself, with no per-test reset and no check afterwards;
- **fixture**: the same tests take the ``mockllm`` fixture: the server set back to the session
  library before each test, the unmatched-request check after it (spec §8: at most 1 ms a test).

The figure held against the target is the time a test spends inside the fixture (its setup and the
check after the test body, timed by hooks around them; the median test of the best of ``--repeat``
runs). Beside it: what the whole run costs more per test with the fixture than without, in CPU time
(user + system, of the pytest process and the server thread in it) and by the wall clock, from the
best of the runs of each (each a fresh ``pytest`` process, so both pay the same start-up); on a
machine shared with other work those two differ from run to run by more than the fixture costs.
Usage:
``python bench/fixture_overhead.py [--tests N] [--repeat R]``."""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 1.0

CONFTEST = """
import time

import openai
import pytest

import mockllm


@pytest.fixture(scope="session")
def bare_server():
    with mockllm.serve() as server:
        yield server


@pytest.fixture(scope="session")
def client(request):
    name = "mockllm" if request.config.getoption("--with-fixture") else "bare_server"
    server = request.getfixturevalue("mockllm_server" if name == "mockllm" else name)
    with openai.OpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0) as c:
        yield c


def pytest_addoption(parser):
    parser.addoption("--with-fixture", action="store_true")


SPENT = []  # per test: seconds inside the mockllm fixture's setup and its after-the-test check


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_fixture_setup(fixturedef, request):
    start = time.perf_counter()
    yield
    if fixturedef.argname == "mockllm":
        SPENT.append(time.perf_counter() - start)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    start = time.perf_counter()
    yield
    if call.when == "call" and SPENT:
        SPENT[-1] += time.perf_counter() - start


def pytest_sessionfinish(session):
    if SPENT:
        spent = sorted(SPENT)
        with open("spent.txt", "w") as f:
            f.write(str(spent[len(spent) // 2]))


@pytest.fixture
def chat(request, client):
    if request.config.getoption("--with-fixture"):
        request.getfixturevalue("mockllm")

    def ask(text):
        reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": text}])
        return reply.choices[0].message.content

    return ask
"""

TEST = """
import pytest


@pytest.mark.parametrize("i", range({tests}))
def test_one_turn(chat, i):
    assert "hello" in chat(f"hello {{i}}")
"""


def _project(root: Path, tests: int) -> None:
    (root / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (root / "test_turns.py").write_text(TEST.format(tests=tests), encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n", encoding="utf-8")


def _run(root: Path, fixture: bool, tests: int) -> tuple[float, float, float]:
    """(CPU seconds, wall seconds, the median test's seconds inside the fixture) of one pytest run."""
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:benchmark", "test_turns.py"]
    if fixture:
        args.append("--with-fixture")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0 or f"{tests} passed" not in done.stdout:
        raise SystemExit(f"the {'fixture' if fixture else 'bare'} run failed:\n{done.stdout}\n{done.stderr}")
    spent = root / "spent.txt"
    inside = float(spent.read_text(encoding="utf-8")) if fixture else 0.0
    spent.unlink(missing_ok=True)
    return cpu, elapsed, inside


def measure(tests: int = 200, repeat: int = 3) -> dict[str, float]:
    """``fixture_ms``: the median test's time inside the fixture (its setup and its check after the
    test body), the best of the runs; ``overhead_ms``: the CPU a test costs more with the fixture than
    without (best runs); ``wall_overhead_ms``: the same from the wall clock."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _project(root, tests)
        bare, fixture = [], []
        for _ in range(repeat):  # interleaved, so both see the same machine
            bare.append(_run(root, False, tests))
            fixture.append(_run(root, True, tests))
    return {
        "tests": tests,
        "fixture_ms": min(inside for _, _, inside in fixture) * 1000,
        "overhead_ms": (min(c for c, _, _ in fixture) - min(c for c, _, _ in bare)) / tests * 1000,
        "wall_overhead_ms": (min(w for _, w, _ in fixture) - min(w for _, w, _ in bare)) / tests * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    got = measure(args.tests, args.repeat)
    print(
        f"{got['tests']:.0f} tests: {got['fixture_ms']:.2f} ms a test inside the fixture (target ≤ {TARGET_MS:g} ms); "
        f"the same tests with it use {got['overhead_ms']:.2f} ms more CPU a test than without "
        f"({got['wall_overhead_ms']:.2f} ms by the wall clock)"
    )
    return 0 if got["fixture_ms"] <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
