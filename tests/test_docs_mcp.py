"""docs/mcp.md runs as written: its first script is the language spec's example (language.md §10),
its scripts check clean, and the page's tests pass in a fresh project (pytest in a subprocess, the
mockllm plugin serving the page's scripts): the agent's (the OpenAI Agents SDK, over HTTP and over
stdio) and the one reading resources and filling in a prompt."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_docs_site import blocks, write_files
from test_mcp_language import SPEC_EXAMPLE

PAGE = "mcp.md"


def test_the_pages_script_is_the_spec_example_and_checks_clean(tmp_path: Path) -> None:
    scripts = [b for b in blocks(PAGE) if b.lang == "mockllm" and b.file is not None]
    assert [b.file for b in scripts] == ["scenarios/weather.mockllm", "scenarios/city_guide.mockllm"]
    assert scripts[0].text.split("\n", 1)[1] == SPEC_EXAMPLE
    write_files(PAGE, tmp_path)
    for script in scripts:
        check = subprocess.run(
            [sys.executable, "-m", "mockllm", "check", str(tmp_path / str(script.file))], capture_output=True, text=True
        )
        assert check.returncode == 0 and "no problems" in check.stdout, check.stdout


def test_the_agent_run_passes(tmp_path: Path) -> None:
    tests = write_files(PAGE, tmp_path)
    assert tests == ["test_agent.py", "test_city_guide.py"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q", *tests],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "3 passed" in output, output
