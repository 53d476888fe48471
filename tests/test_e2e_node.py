"""Node clients against a real mockllm server (issue 11): the official `@anthropic-ai/sdk` tool
runner with its default settings (message threads) runs a two-tool loop to the end, and the Vercel AI
SDK (`ai` + `@ai-sdk/openai`) receives a scripted Responses stream error as an error.

The Node packages are pinned in ``tests/node/package-lock.json``; ``npm ci`` installs them into
``tests/node/node_modules`` the first time (``.ci/run`` does it up front)."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import ServeText
from test_e2e_anthropic_threads import SCRIPT as TOOL_LOOP

NODE_DIR = Path(__file__).parent / "node"

BROKEN_STREAM = """
scenario "Broken":
    step broken:
        reply:
            text "one two three four"
            stream error "upstream failed" after 2 chunks
        always
"""


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """``tests/node/node_modules``, installed with ``npm ci`` once (under a lock: xdist workers share it)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are needed for the Node client tests (node >= 20)")
    with (NODE_DIR / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        modules = NODE_DIR / "node_modules"
        if not (modules / ".package-lock.json").exists():
            subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=NODE_DIR,
                check=True,
                timeout=300,
            )
    return modules


def run_node(script: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        ["node", script, *args], cwd=NODE_DIR, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, f"node {script} failed ({done.returncode}):\n{done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("mode", ["create", "stream"])
def test_node_tool_runner_completes_a_tool_loop(serve_text: ServeText, node_modules: Path, mode: str) -> None:
    with serve_text(TOOL_LOOP) as url:
        result = run_node("anthropic_tool_runner.mjs", url, mode)
        assert result == {"stop_reason": "end_turn", "text": "Sunny in Rome at noon."}


def test_vercel_ai_sdk_receives_a_responses_stream_error(serve_text: ServeText, node_modules: Path) -> None:
    with serve_text(BROKEN_STREAM) as url:
        result = run_node("vercel_responses_error.mjs", url + "/v1")
        assert result["text"] == "one two"
        assert result["errors"] and all(message == "upstream failed" for message in result["errors"])
