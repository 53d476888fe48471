"""mypy over the real folders, each file under the module name it is installed as.

The user's top-level folders (``dsl/``, ``runtime/`` …) become ``mockllm.dsl``, ``mockllm.runtime`` …
through setuptools' ``package-dir``. mypy finds modules only by their path (``mockllm/dsl/…``) and
cannot follow the editable install's import hook, so this script reads the package map from
``pyproject.toml`` and hands mypy every file with its module name. Options come from
``[tool.mypy]`` as usual; extra arguments are passed on to mypy.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from mypy import build
from mypy.main import process_options
from mypy.modulefinder import BuildSource


def sources(pyproject: Path) -> list[BuildSource]:
    """Every module of every package pyproject lists, with the folder package-dir maps it to."""
    setuptools = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["setuptools"]
    found = []
    for package in setuptools["packages"]:
        folder = pyproject.parent / setuptools["package-dir"][package]
        for path in sorted(folder.glob("*.py")):
            module = package if path.stem == "__init__" else f"{package}.{path.stem}"
            found.append(BuildSource(str(path.relative_to(pyproject.parent)), module))
    return found


def main(argv: list[str]) -> int:
    _, options = process_options(["--config-file", "pyproject.toml", "-c", "", *argv])
    checked = sources(Path("pyproject.toml").resolve())
    result = build.build(checked, options)
    for line in result.errors:
        print(line)
    if result.errors:
        return 1
    print(f"Success: no issues found in {len(checked)} source files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
