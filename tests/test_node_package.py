"""The npm package in ``clients/node`` (issue 40), judged by real Vitest and Jest runs against the real
server through the official ``openai`` and ``@anthropic-ai/sdk`` Node SDKs and the Vercel AI SDK:

- its own Vitest tests (``clients/node/test``) pass, and a test that sent an unscripted request fails
  with the no-match report;
- the packed tarball installs in a fresh folder (with Vitest, then with Jest), where the examples of
  ``docs/javascript.md`` pass, twenty Vitest files run in parallel workers without cross-talk, the
  TypeScript example type-checks and runs, and both ``require`` and ``import`` work;
- its version is the Python package's, and its base URLs and SDK environment are the provider registry's.

The build tools are pinned by ``clients/node/package-lock.json``; ``npm ci`` installs them the first
time (``.ci/run`` does it up front). The fresh folders install from npm's cache where it can."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "clients" / "node"
DOC = ROOT / "docs" / "javascript.md"
FENCE = re.compile(r"^```([A-Za-z-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
FILE_LINE = re.compile(r"(?://|#)\s*file:\s*(\S+)")
BUILD_INPUTS = ("src", "package.json", "tsconfig.json", "tsconfig.cjs.json", "scripts")


def node_env(**extra: str) -> dict[str, str]:
    """The environment for Node: this Python's scripts first on PATH, so ``mockllm`` is this checkout's."""
    env = {k: v for k, v in os.environ.items() if k != "MOCKLLM_BIN"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def run(args: list[str], cwd: Path, timeout: float = 300, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=node_env(**extra), capture_output=True, text=True, timeout=timeout, check=False
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (
        f"{' '.join(done.args)} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done.stdout


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (xdist workers share the package folder)."""
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def newest(paths: list[Path]) -> float:
    times = [p.stat().st_mtime for base in paths for p in ([base, *base.rglob("*")] if base.is_dir() else [base])]
    return max(times)


def dev_version(name: str) -> str:
    version: str = json.loads((PACKAGE / "package.json").read_text())["devDependencies"][name]
    return version


@pytest.fixture(scope="session")
def tarball() -> Path:
    """``clients/node`` with its tools installed (``npm ci``), built, and packed: the tarball."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are needed for the Node package tests (node >= 18)")
    with locked(PACKAGE / ".install.lock"):
        if not (PACKAGE / "node_modules" / ".package-lock.json").exists():
            ok(run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], PACKAGE))
        stamp = PACKAGE / "dist" / ".built"
        if not stamp.exists() or stamp.stat().st_mtime < newest([PACKAGE / p for p in BUILD_INPUTS]):
            ok(run(["node", "scripts/build.mjs"], PACKAGE))
            stamp.write_text("")
        version = json.loads((PACKAGE / "package.json").read_text())["version"]
        packed = PACKAGE / "build" / f"mockllm-{version}.tgz"
        if not packed.exists() or packed.stat().st_mtime < stamp.stat().st_mtime:
            packed.parent.mkdir(exist_ok=True)
            # dist/ is built above: the prepack script (the same build) is for `npm pack` by hand and in .ci/run
            ok(run(["npm", "pack", "--ignore-scripts", "--pack-destination", "build", "--loglevel=error"], PACKAGE))
    return packed


def doc_files() -> dict[str, str]:
    """The named blocks of docs/javascript.md: ``// file: NAME`` or ``# file: NAME`` on the first line."""
    files = {}
    for m in FENCE.finditer(DOC.read_text(encoding="utf-8")):
        lines = m[2].splitlines()
        named = FILE_LINE.fullmatch(lines[0].strip()) if lines else None
        if named:
            files[named[1]] = m[2]
    return files


def doc_text_blocks() -> list[str]:
    return [m[2].strip() for m in FENCE.finditer(DOC.read_text(encoding="utf-8")) if m[1] == "text"]


def fresh_folder(name: str, tarball: Path, package: dict[str, Any], deps: list[str], runner: str) -> Path:
    """A new folder with ``package``, the docs' files for ``runner`` ("vitest" or "jest"), and ``npm
    install TARBALL deps…`` done in it: made once per tarball and docs page, outside the repository (where
    nothing of it is found by walking up), and shared by xdist workers and later runs."""
    specs = [f"{dep}@{dev_version(dep)}" for dep in deps]
    other = "mockllm/jest" if runner == "vitest" else "mockllm/vitest"
    files = {n: t for n, t in doc_files().items() if other not in t and not (runner == "jest" and n.endswith(".ts"))}
    key = hashlib.sha256(tarball.read_bytes() + json.dumps([package, specs, files]).encode()).hexdigest()
    prefix = f"mockllm-node-{name}-{hashlib.sha256(bytes(PACKAGE)).hexdigest()[:8]}"  # one checkout's
    root = Path(tempfile.gettempdir()) / f"{prefix}-{key[:16]}"
    with locked(PACKAGE / "build" / f".{name}.lock"):
        if (root / ".made").exists() and (root / ".made").read_text() == key:
            return root
        for stale in root.parent.glob(f"{prefix}-*"):  # made from an earlier tarball of this checkout
            shutil.rmtree(stale, ignore_errors=True)
        root.mkdir()
        (root / "package.json").write_text(json.dumps(package))
        for file, text in files.items():
            (root / file).parent.mkdir(parents=True, exist_ok=True)
            (root / file).write_text(text)
        install = ["npm", "install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"]
        ok(run([*install, str(tarball), *specs], root))
        (root / ".made").write_text(key)
    return root


@pytest.fixture(scope="module")
def vitest_folder(tarball: Path) -> Path:
    deps = ["vitest", "openai", "ai", "@ai-sdk/openai", "zod", "typescript", "@types/node"]
    return fresh_folder(
        "fresh-vitest", tarball, {"name": "fresh-vitest", "private": True, "type": "module"}, deps, "vitest"
    )


@pytest.fixture(scope="module")
def jest_folder(tarball: Path) -> Path:
    deps = ["jest", "@anthropic-ai/sdk"]
    return fresh_folder("fresh-jest", tarball, {"name": "fresh-jest", "private": True}, deps, "jest")


def vitest(folder: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``vitest run ARGS`` in ``folder``, with its JSON report."""
    with tempfile.TemporaryDirectory(prefix="mockllm-vitest-") as scratch:
        report = Path(scratch) / "report.json"
        done = run(["npx", "vitest", "run", "--reporter=json", f"--outputFile={report}", *args], folder, **env)
        assert report.exists(), f"vitest wrote no report:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done, json.loads(report.read_text())


def failures(report: dict[str, Any]) -> str:
    return "\n\n".join(
        f"{t['fullName']}: {' '.join(t['failureMessages'])}"
        for f in report["testResults"]
        for t in f["assertionResults"]
        if t["status"] != "passed"
    )


# ---- the package itself


def test_the_version_follows_the_python_package() -> None:
    python = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert json.loads((PACKAGE / "package.json").read_text())["version"] == python


def test_base_urls_and_sdk_environment_are_the_provider_registrys(tarball: Path) -> None:
    from mockllm.runtime.providers.registry import ENTRIES, base_url, sdk_environment

    url = "http://127.0.0.1:9"
    script = (
        "const m = require('./dist/cjs/index.js'); const mock = new m.Mockllm(); mock.serverUrl = process.argv[1];"
        "const urls = Object.fromEntries(Object.keys(m.PROVIDER_PATHS).map((p) => [p, mock.baseUrl(p)]));"
        "console.log(JSON.stringify({ urls, env: mock.sdkEnv() }));"
    )
    out = json.loads(ok(run(["node", "-e", script, url], PACKAGE)))
    assert out["urls"] == {e.name: base_url(e.name, url) for e in ENTRIES if e.client is not None}
    urls, defaults = sdk_environment(url)
    assert out["env"] == {**defaults, **urls}


def test_the_packages_own_vitest_tests_pass(tarball: Path) -> None:
    done, report = vitest(PACKAGE)
    assert done.returncode == 0, failures(report) or done.stderr[-3000:]
    assert report["numPassedTests"] == 10


def test_unmatched_requests_and_unused_steps_fail_the_test_with_the_report(tarball: Path) -> None:
    done, report = vitest(PACKAGE, MOCKLLM_FAILS="1")
    assert done.returncode == 1
    assert (report["numPassedTests"], report["numFailedTests"]) == (1, 2)  # "opts out of strict" passes
    message = failures(report)
    assert "sends an unscripted question: MockllmError: mockllm: 1 request matched no step" in message
    assert 'scenario "Weather", step `ask` (test/fixtures/weather.mockllm:2:5)' in message  # the file's own place
    assert 'seen "an unscripted question"' in message and "another unscripted" not in message
    assert "loads two steps and uses one: MockllmError: mockllm: steps never used:" in message
    assert 'scenario "Two", step `second`' in message and "step `first`" not in message


# ---- installed from the tarball in a fresh folder


def test_the_docs_vitest_examples_pass(vitest_folder: Path) -> None:
    done, report = vitest(vitest_folder, "tests/weather.test.ts", "tests/vercel.test.ts")
    assert done.returncode == 0, failures(report) or done.stderr[-3000:]
    assert report["numPassedTests"] == 4


PARALLEL_FILE = """
import OpenAI from "openai";
import {{ expect, test }} from "vitest";
import {{ useMockllm }} from "mockllm/vitest";

const mock = useMockllm({{ scenarios: `scenario "Who":
    step who:
        always
        reply:
            text "file {n}"
` }});

for (const round of [1, 2, 3]) {{
  test(`round ${{round}}`, async () => {{
    const client = new OpenAI({{ baseURL: mock.openaiBaseUrl, apiKey: "test" }});
    await mock.load(`scenario "Round":
    priority 10
    step round:
        when:
            last user message contains "round"
        reply:
            text "file {n} round ${{round}}"
`);
    const ask = async (content: string) =>
      (await client.chat.completions.create({{ model: "gpt-4o", messages: [{{ role: "user", content }}] }}))
        .choices[0]?.message.content;
    expect(await ask("who?")).toBe("file {n}");
    expect(await ask("which round?")).toBe(`file {n} round ${{round}}`);
    const seen = await mock.requests();
    expect(seen.map((r) => r.matched?.scenario)).toEqual(["Who", "Round"]);
  }});
}}
"""


def test_twenty_vitest_files_in_parallel_workers_do_not_cross_talk(vitest_folder: Path) -> None:
    for n in range(20):
        path = vitest_folder / "parallel" / f"file{n:02}.test.ts"
        path.parent.mkdir(exist_ok=True)
        path.write_text(PARALLEL_FILE.format(n=n))
    done, report = vitest(vitest_folder, "parallel/", "--pool=threads", "--maxWorkers=2", "--minWorkers=2")
    assert done.returncode == 0, failures(report) or done.stderr[-3000:]
    assert (report["numTotalTestSuites"] >= 20, report["numPassedTests"]) == (True, 60)


def test_the_typescript_example_type_checks_and_runs(vitest_folder: Path) -> None:
    config = {
        "compilerOptions": {
            "target": "ES2022",
            "module": "NodeNext",
            "moduleResolution": "NodeNext",
            "strict": True,
            "skipLibCheck": True,
            "types": ["node"],
        },
        "include": ["scripts/*.ts"],
    }
    (vitest_folder / "tsconfig.json").write_text(json.dumps(config))
    ok(run(["npx", "tsc", "--noEmit"], vitest_folder))
    # TypeScript compiled to CommonJS with the older resolution (no "exports"), as ts-jest setups often are
    (vitest_folder / "cjs").mkdir(exist_ok=True)
    (vitest_folder / "cjs" / "check.ts").write_text(
        'import { useMockllm, type UseOptions } from "mockllm/jest";\n'
        'import { startMockllm, type Mockllm } from "mockllm";\n'
        "const options: UseOptions = { strict: false, scenarios: [] };\n"
        "export const use: (o: UseOptions) => Mockllm = useMockllm;\n"
        "export const start = (): Promise<Mockllm> => startMockllm(options);\n"
    )
    node10 = {"module": "CommonJS", "moduleResolution": "Node10", "strict": True, "types": []}
    (vitest_folder / "cjs" / "tsconfig.json").write_text(json.dumps({"compilerOptions": node10, "files": ["check.ts"]}))
    ok(run(["npx", "tsc", "--noEmit", "-p", "cjs"], vitest_folder))
    # run as TypeScript by vite-node (Vitest's runner, installed with it)
    assert ok(run(["npx", "vite-node", "scripts/example.ts"], vitest_folder)).splitlines() == ["Sunny in Lima.", "true"]


def test_require_and_import_both_work(vitest_folder: Path) -> None:
    assert ok(run(["node", "scripts/example.cjs"], vitest_folder)).strip() == "Sunny in Quito."
    script = (
        "import { startMockllm, Mockllm } from 'mockllm'; import * as jest from 'mockllm/jest';"
        "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);"
        "const cjs = require('mockllm'); const cjsJest = require('mockllm/jest');"
        "console.log([typeof startMockllm, typeof jest.useMockllm, typeof cjs.startMockllm, typeof cjsJest.useMockllm,"
        " cjs.Mockllm === Mockllm].join(' '));"
    )
    out = ok(run(["node", "--input-type=module", "-e", script], vitest_folder))
    assert out.strip() == "function function function function false"  # two builds: ESM and CommonJS


def test_no_python_is_the_message_the_docs_show(vitest_folder: Path) -> None:
    script = "require('mockllm').startMockllm().catch((e) => console.log(e.message));"
    done = run([shutil.which("node") or "node", "-e", script], vitest_folder, PATH="/nonexistent")
    assert ok(done).strip() in doc_text_blocks()


def test_the_docs_jest_example_passes(jest_folder: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="mockllm-jest-") as scratch:
        report = Path(scratch) / "report.json"
        done = run(["npx", "jest", "--json", f"--outputFile={report}"], jest_folder)
        assert report.exists(), f"jest wrote no report:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        result = json.loads(report.read_text())
    assert done.returncode == 0, failures(result) or done.stderr[-3000:]
    assert (result["numTotalTestSuites"], result["numPassedTests"]) == (1, 2)
