"""The house rules a newcomer relies on, checked: imports flow one way through the pipeline
(dsl → runtime → providers → server → api/cli; see docs/architecture.md), and every exception
mockllm raises derives from :class:`mockllm.MockllmError`."""

from __future__ import annotations

import ast
import importlib
import inspect
import tomllib
from pathlib import Path

import pytest

from mockllm.errors import MockllmError

ROOT = Path(__file__).resolve().parent.parent
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]

# Layers, lowest first: a module may import its own layer and the layers below, never one above. Each
# stage of the pipeline is a layer of its own, so an import cycle between two stages (lazy or not) is
# an upward import here (docs/architecture.md, "Where each stage lives").
LAYERS = (
    ("mockllm.dsl", "mockllm.grammar", "mockllm.errors", "mockllm.version"),  # spans, diagnostics, the language's names
    ("mockllm.dsl.tree",),  # the syntax tree, its JSON form, its canonical descriptions
    ("mockllm.dsl.parse",),  # text → tree
    ("mockllm.dsl.format",),  # tree → text (it parses to format)
    ("mockllm.dsl.check",),  # checks
    ("mockllm.dsl.machines",),  # tree → machines (checked first)
    ("mockllm.runtime",),  # the provider-neutral request, the clock, bounded regex search
    ("mockllm.runtime.embed", "mockllm.runtime.media"),  # the default embedder; audio and images
    ("mockllm.runtime.echo",),  # the echo responder
    ("mockllm.runtime.reply",),  # reply plans (the echo responder's among them)
    ("mockllm.runtime.engine",),  # conversations, step selection, the journal
    ("mockllm.runtime.mcp",),  # MCP tool servers' calls, answered by the engine
    ("mockllm.runtime.realtime",),  # realtime sessions: items to engine requests, plans to neutral beats
    ("mockllm.runtime.providers",),  # the wire formats
    ("mockllm.runtime.providers.bedrock",),  # Bedrock's (it builds on what the providers share)
    ("mockllm.runtime.recording",),  # recorded wire → scripts
    ("mockllm.server",),  # HTTP
    ("mockllm",),  # the Python API, the CLI, the pytest plugin
)


def layer_of(module: str) -> int:
    """The layer of a module: the longest matching prefix wins (``mockllm.runtime.providers.x`` is the
    providers' layer, not the runtime's)."""
    best, best_len = len(LAYERS) - 1, 0
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def project_modules() -> list[tuple[str, Path]]:
    """Every module of every package pyproject.toml lists, with its file."""
    found = []
    for package in SETUPTOOLS["packages"]:
        for path in sorted((ROOT / SETUPTOOLS["package-dir"][package]).glob("*.py")):
            found.append((package if path.stem == "__init__" else f"{package}.{path.stem}", path))
    return found


def imports_of(module: str, path: Path) -> list[tuple[str, int]]:
    """The mockllm modules ``path`` imports (at any depth: lazy imports count too), with their lines.
    ``from mockllm import x`` counts as importing ``mockllm.x``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                parent = package.rsplit(".", node.level - 1)[0]
                base = f"{parent}.{base}" if base else parent
            if base == "mockllm":
                out += [(f"mockllm.{alias.name}", node.lineno) for alias in node.names]
            else:
                out.append((base, node.lineno))
    return [(name, line) for name, line in out if name == "mockllm" or name.startswith("mockllm.")]


def test_the_layer_table_knows_every_package() -> None:
    assert all(layer_of(p) < len(LAYERS) for p in SETUPTOOLS["packages"])
    order = [
        "mockllm.dsl.span",
        "mockllm.dsl.tree.nodes",
        "mockllm.dsl.parse.parser",
        "mockllm.dsl.format.formatter",
        "mockllm.dsl.check.checks",
        "mockllm.dsl.machines.compiler",
        "mockllm.runtime.request",
        "mockllm.runtime.embed.embedder",
        "mockllm.runtime.echo.answer",
        "mockllm.runtime.reply.planner",
        "mockllm.runtime.engine.engine",
        "mockllm.runtime.providers.gemini",
        "mockllm.runtime.providers.bedrock.adapter",
        "mockllm.runtime.recording.translate",
        "mockllm.server.background",
        "mockllm.cli",
    ]
    assert [layer_of(m) for m in order] == sorted({layer_of(m) for m in order}), "one layer per stage, in order"


#: the import cycles the stages once had, each through a lazy import (issue 33): each pair is now one
#: direction only, the shared piece moved down a layer (``START`` to dsl/check/reachability.py, the
#: predicates a subject takes to dsl/tree/predicates.py, the JSON form to dsl/tree/jsonform.py, the
#: bounded regex search to runtime/timed_regex.py)
FORMER_CYCLES = (
    ("mockllm.dsl.check", "mockllm.dsl.machines"),
    ("mockllm.dsl.parse", "mockllm.dsl.check"),
    ("mockllm.dsl.parse", "mockllm.dsl.format"),
    ("mockllm.runtime.echo", "mockllm.runtime.engine"),
)


@pytest.mark.parametrize(("lower", "upper"), FORMER_CYCLES)
def test_a_former_cycle_is_one_way(lower: str, upper: str) -> None:
    assert layer_of(lower + ".x") < layer_of(upper + ".x")
    back = [
        f"{path.relative_to(ROOT)}:{line}: imports {target}"
        for module, path in project_modules()
        if module.startswith(lower + ".")
        for target, line in imports_of(module, path)
        if target == upper or target.startswith(upper + ".")
    ]
    assert not back, f"{lower} imports {upper} again (a cycle):\n" + "\n".join(back)


def test_imports_flow_one_way() -> None:
    modules = project_modules()
    assert len(modules) > 50, "the module list comes from pyproject.toml's packages"
    upward = []
    for module, path in modules:
        for target, line in imports_of(module, path):
            if layer_of(target) > layer_of(module):
                upward.append(f"{path.relative_to(ROOT)}:{line}: {module} imports {target}")
    assert not upward, "upward imports (docs/architecture.md, 'Where each stage lives'):\n" + "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    source = tmp_path / "engine.py"
    source.write_text("def f():\n    from mockllm.server.http.app import create_app\n", encoding="utf-8")
    [(target, line)] = imports_of("mockllm.runtime.engine.engine", source)
    assert (target, line) == ("mockllm.server.http.app", 2)
    assert layer_of(target) > layer_of("mockllm.runtime.engine.engine")


def _exception_classes() -> list[type[BaseException]]:
    found = []
    for name, _ in project_modules():
        if name == "mockllm.__main__":
            continue
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == name:
                found.append(value)
    return found


def test_every_exception_derives_from_mockllm_error() -> None:
    classes = _exception_classes()
    assert len(classes) >= 12
    assert [c.__qualname__ for c in classes if not issubclass(c, MockllmError)] == []


@pytest.mark.parametrize(("name", "code"), [("UsageError", 2), ("FileError", 1), ("ExplainError", 1)])
def test_cli_exit_codes_live_on_the_classes(name: str, code: int) -> None:
    import mockllm.errors

    assert getattr(mockllm.errors, name).exit_code == code


# ---------------------------------------------------------------------------------------------------------
# The server, by subsystem (docs/architecture.md, "The server, by subsystem")

SERVER_LIFECYCLE = {"background", "memory", "options", "runner", "shutdown", "watch", "workers"}
SERVER_SUBSYSTEMS = {"hosts", "http", "record", "state"}  # and each new transport's own folder


def module_graph(prefixes: tuple[str, ...]) -> dict[str, set[str]]:
    """The modules under ``prefixes`` and the ones among them each imports (lazy imports too);
    ``from package import module`` counts as importing the module."""
    modules = dict(project_modules())
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        if not module.startswith(prefixes):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    inner = f"{node.module}.{alias.name}"
                    targets.add(inner if inner in modules else node.module)
        graph[module] = {t for t in targets if t in modules and t.startswith(prefixes) and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import each other, however indirectly (Tarjan's strongly connected
    components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_server_is_split_by_subsystem() -> None:
    packages = {
        p.removeprefix("mockllm.server.").split(".")[0]
        for p in SETUPTOOLS["packages"]
        if p.startswith("mockllm.server.")
    }
    assert SERVER_SUBSYSTEMS <= packages
    assert "mockllm.server.state.redis" in SETUPTOOLS["packages"]
    top = {path.stem for path in (ROOT / "server").glob("*.py")} - {"__init__"}
    assert top <= SERVER_LIFECYCLE, (
        f"modules at the top of server/ that belong in a subsystem's folder: {sorted(top - SERVER_LIFECYCLE)} "
        "(docs/architecture.md, 'Adding a transport')"
    )


def test_no_import_cycles_in_the_server_or_the_entry_points() -> None:
    graph = module_graph(("mockllm.server", "mockllm.cli", "mockllm.lsp", "mockllm.version"))
    assert "mockllm.server.state.redis.store" in graph and "mockllm.lsp.server" in graph
    assert cycles(graph) == [], "modules that import each other (lazy imports count)"


def test_the_cycle_check_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
