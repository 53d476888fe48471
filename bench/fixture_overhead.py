"""What the pytest fixture costs a test: the same tests run twice, through pytest, in a fresh project.

- **bare**: each test sends one chat request (the official ``openai`` SDK, one client per session)
  to a mockllm server the session started itself, with no per-test reset and no check afterwards;
- **fixture**: the same tests take the ``mockllm`` fixture: the server set back to the session
  library before each test, the unmatched-request check after it (spec §8: at most 1 ms a test).

The overhead per test is ``(fixture - bare) / tests``, from the best of ``--repeat`` runs of each
(each a fresh ``pytest`` process, so both pay the same start-up). Usage:
``python bench/fixture_overhead.py [--tests N] [--repeat R]``."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 1.0

CONFTEST = '''
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


@pytest.fixture
def chat(request, client):
    if request.config.getoption("--with-fixture"):
        request.getfixturevalue("mockllm")

    def ask(text):
        reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": text}])
        return reply.choices[0].message.content

    return ask
'''

TEST = '''
import pytest


@pytest.mark.parametrize("i", range({tests}))
def test_one_turn(chat, i):
    assert "hello" in chat(f"hello {{i}}")
'''


def _project(root: Path, tests: int) -> None:
    (root / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (root / "test_turns.py").write_text(TEST.format(tests=tests), encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n", encoding="utf-8")


def _run(root: Path, fixture: bool, tests: int) -> float:
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:benchmark", "test_turns.py"]
    if fixture:
        args.append("--with-fixture")
    start = time.perf_counter()
    done = subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or f"{tests} passed" not in done.stdout:
        raise SystemExit(f"the {'fixture' if fixture else 'bare'} run failed:\n{done.stdout}\n{done.stderr}")
    return elapsed


def measure(tests: int = 200, repeat: int = 3) -> dict[str, float]:
    """``bare_s``, ``fixture_s`` (best runs) and ``overhead_ms`` (per test)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _project(root, tests)
        bare, fixture = [], []
        for _ in range(repeat):  # interleaved, so both see the same machine
            bare.append(_run(root, False, tests))
            fixture.append(_run(root, True, tests))
    best_bare, best_fixture = min(bare), min(fixture)
    return {
        "tests": tests,
        "bare_s": best_bare,
        "fixture_s": best_fixture,
        "overhead_ms": (best_fixture - best_bare) / tests * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    got = measure(args.tests, args.repeat)
    print(
        f"{got['tests']:.0f} tests: bare {got['bare_s']:.2f} s, with the fixture {got['fixture_s']:.2f} s: "
        f"{got['overhead_ms']:.2f} ms a test (target ≤ {TARGET_MS:g} ms)"
    )
    return 0 if got["overhead_ms"] <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
