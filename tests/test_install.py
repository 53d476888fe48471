"""`pip install mockllm` is lean: the package runs on its runtime dependencies alone, and the README's
two set-up commands install only what each needs (serving: the package; the tests: the `test` extra)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import distribution, packages_distributions
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
DEV_ONLY = {"mypy", "ruff", "mkdocs-material", "pytest-cov", "hypothesis", "pytest", "openai"}
#: Modules that are plugins of an optional tool, loaded only by it: pytest's plugin, the language server
#: (`mockllm lsp`, the `lsp` extra's pygls) and the Pygments lexer (loaded by Pygments).
OPTIONAL = ("mockllm.pytest_plugin", "mockllm.lsp.server", "mockllm.highlight")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(requirement: str) -> str:
    return _norm(Requirement(requirement).name)


def _closure(names: set[str]) -> set[str]:
    """The installed distributions ``names`` need, transitively (their extras not included)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for req in distribution(name).requires or ():
            parsed = Requirement(req)
            if parsed.marker is not None and not parsed.marker.evaluate({"extra": ""}):
                continue
            todo.append(_norm(parsed.name))
    return seen


def test_runtime_dependencies_hold_no_test_docs_or_lint_tool() -> None:
    runtime = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    assert runtime and not runtime & DEV_ONLY
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {"mypy", "ruff", "mkdocs-material"}.isdisjoint(_name(r) for r in extras["test"])
    assert {"mkdocs-material"} <= {_name(r) for r in extras["docs"]}
    assert {"mypy", "ruff", "pytest-cov"} <= {_name(r) for r in extras["dev"]}


def test_the_readme_commands_install_only_what_each_needs() -> None:
    for page in ("README.md", "docs/index.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        block = re.search(r"```sh\n(.*?)```", text, re.DOTALL)
        assert block is not None, page
        serve, test = block[1].strip().splitlines()
        assert re.search(r"pip install -e \.\s+&& mockllm serve ", serve), serve
        assert re.search(r"pip install -e '\.\[test\]' && python3 -m pytest\s", test), test


def test_every_module_imports_with_the_runtime_dependencies_alone(tmp_path: Path) -> None:
    """In a child process where importing any package of the test, docs or dev extras fails, every
    mockllm module but the pytest plugin imports and `mockllm check` runs."""
    runtime = _closure({_name(r) for r in PYPROJECT["project"]["dependencies"]} | {"mockllm"})
    extras = PYPROJECT["project"]["optional-dependencies"]
    others = {_name(r) for extra in ("test", "docs", "dev") for r in extras[extra]} - runtime - {"mockllm"}
    blocked = sorted(
        top
        for top, dists in packages_distributions().items()
        if {_norm(d) for d in dists} & others and not {_norm(d) for d in dists} & runtime
    )
    code = f"""
import importlib, importlib.abc, pkgutil, sys
BLOCKED = set({blocked!r})
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is not a runtime dependency")
        return None
sys.meta_path.insert(0, Block())
OPTIONAL = {OPTIONAL!r}
import mockllm
for info in pkgutil.walk_packages(mockllm.__path__, "mockllm."):
    if info.name not in OPTIONAL:
        importlib.import_module(info.name)
for sub in ("dsl", "runtime", "server", "grammar"):
    pkg = importlib.import_module("mockllm." + sub)
    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        importlib.import_module(info.name)
from mockllm.cli import main
sys.exit(main(["check", {str(ROOT / "scenarios" / "examples")!r}]))
"""
    assert "openai" in blocked and "pytest" in blocked  # the block is real on this machine
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_data_file_of_a_package_is_installed() -> None:
    """A package folder's files other than Python (the grammar, the Redis store's Lua scripts …) are
    listed in pyproject.toml's package-data, or a fresh install would lack them."""
    import fnmatch

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    data = setuptools.get("package-data", {})
    missing = []
    for package in setuptools["packages"]:
        folder = ROOT / setuptools["package-dir"][package]
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.suffix not in (".py", ".pyc") and path.name != ".gitignore":
                if not any(fnmatch.fnmatch(path.name, pattern) for pattern in data.get(package, [])):
                    missing.append(str(path.relative_to(ROOT)))
    assert "mockllm.server.state.redis" in setuptools["packages"] and "*.lua" in data["mockllm.server.state.redis"]
    assert missing == [], "files a fresh install would lack (pyproject.toml, [tool.setuptools.package-data])"


def test_the_hypercorn_floor_is_the_release_whose_internals_the_server_uses() -> None:
    """Issue 34: server/hosts/hypercorn_server.py passes TCPServer the lifespan ``state`` (Hypercorn 0.17
    added it; 0.16's TCPServer takes no ``state`` and serving failed there): the declared floor says 0.17."""
    import inspect

    from hypercorn.asyncio.tcp_server import TCPServer

    (spec,) = [d for d in PYPROJECT["project"]["dependencies"] if d.startswith("hypercorn")]
    floor = tuple(int(part) for part in spec.split(">=")[1].split(",")[0].split("."))
    assert floor >= (0, 17), spec
    assert "state" in inspect.signature(TCPServer.__init__).parameters
