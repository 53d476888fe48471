"""docs/shared-mock.md, run: the `mockllm serve --workers --state` command serves a fleet on a real
Redis, the refusal it shows is the one mockllm prints, and the container and Kubernetes recipes
start mockllm with options the CLI accepts (no container runtime here: their commands are parsed
by mockllm's own argument parser, and the manifest by a YAML parser)."""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import yaml
from reliability import serve_process
from test_docs_site import blocks
from test_shared_state import ANSWER, agent_loop, requests

from mockllm.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
PAGE = "shared-mock.md"
EXAMPLE = ROOT / "scenarios" / "examples" / "agent_loop.mockllm"


def _project(tmp_path: Path) -> Path:
    (tmp_path / "scenarios").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "scenarios" / EXAMPLE.name)
    return tmp_path


def _serve_command() -> list[str]:
    [shell] = [b for b in blocks(PAGE) if b.lang == "sh"]
    [line] = [line for line in shell.text.splitlines() if line.startswith("mockllm serve")]
    return shlex.split(line)


def test_the_fleet_command_serves_one_conversation_across_its_workers(tmp_path: Path, redis_url: str) -> None:
    args = _serve_command()[2:]
    assert args[args.index("--state") + 1] == "redis://localhost:6379/0"
    args[args.index("--state") + 1] = redis_url  # the test's Redis instead of the page's
    project = _project(tmp_path)
    with serve_process(*[str(project / a) if a == "scenarios/" else a for a in args]) as (_, url, _):
        conversation = uuid.uuid4().hex
        assert agent_loop([url, url, url], conversation)[-1] == ANSWER
        assert [e["matched"]["step"] for e in requests(url)] == ["search", "read", "answer"]
        health = subprocess.run(  # the page says health names the store
            [sys.executable, "-c", f"import httpx; print(httpx.get('{url}/_mockllm/health').json()['state'])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert health.stdout.strip() == f"in Redis at {redis_url}"


def test_the_refusal_shown_is_what_mockllm_prints(tmp_path: Path) -> None:
    shown = next(b.text for b in blocks(PAGE) if b.lang == "text" and "--workers above 1" in b.text)
    args = [a for a in _serve_command()[2:] if a not in ("--state", "redis://localhost:6379/0")]
    done = subprocess.run(
        [sys.executable, "-m", "mockllm", "serve", *args],
        cwd=_project(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == shown


def test_the_state_poll_refusal_shown_is_what_mockllm_prints(tmp_path: Path) -> None:
    shown = next(b.text for b in blocks(PAGE) if b.lang == "text" and "--state-poll needs" in b.text)
    done = subprocess.run(
        [sys.executable, "-m", "mockllm", "serve", "scenarios/", "--state-poll", "0"],
        cwd=_project(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == shown


def _serve_options(argv: list[str]) -> dict[str, object]:
    assert argv[:2] == ["mockllm", "serve"]
    return vars(build_parser().parse_args(argv[1:]))


def test_the_dockerfile_and_the_kubernetes_manifest_run_mockllm_serve_on_redis() -> None:
    [dockerfile] = [b for b in blocks(PAGE) if b.file == "Dockerfile"]
    joined = dockerfile.text.replace("\\\n", " ")
    cmd = next(line for line in joined.splitlines() if line.startswith("CMD "))
    options = _serve_options(yaml.safe_load(cmd[4:]))  # the exec form is a JSON array
    assert options["workers"] == 4 and options["state"] == "redis://redis:6379/0" and options["host"] == "0.0.0.0"
    assert "mockllm[redis]" in joined

    [manifest] = [b for b in blocks(PAGE) if b.file == "mockllm.yaml"]
    documents = list(yaml.safe_load_all(manifest.text))
    kinds = {(d["kind"], d["metadata"]["name"]) for d in documents}
    assert kinds == {("Deployment", "redis"), ("Service", "redis"), ("Deployment", "mockllm"), ("Service", "mockllm")}
    mock = next(d for d in documents if d["kind"] == "Deployment" and d["metadata"]["name"] == "mockllm")
    [container] = mock["spec"]["template"]["spec"]["containers"]
    options = _serve_options(container["args"])
    assert options["state"] == "redis://redis:6379/0" and options["workers"] == 2
    service = next(d for d in documents if d["kind"] == "Service" and d["metadata"]["name"] == "redis")
    assert service["spec"]["ports"][0]["port"] == 6379


def test_a_scenario_posted_to_one_server_is_answered_by_the_other(tmp_path: Path, redis_url: str) -> None:
    [example] = [b for b in blocks(PAGE) if b.file == "post_to_one.py"]
    printed = next(b.text for b in blocks(PAGE) if b.lang == "text" and "Hello from the fleet." in b.text)
    first_url, second_url = "http://127.0.0.1:8080", "http://127.0.0.1:8081"
    assert f'FIRST, SECOND = "{first_url}", "{second_url}"' in example.text
    with (
        serve_process("--state", redis_url) as (_, first, _),
        serve_process("--state", redis_url) as (_, second, _),
    ):
        code = example.text.replace(first_url, first).replace(second_url, second)  # the test's free ports
        (tmp_path / "post_to_one.py").write_text(code)
        done = subprocess.run(
            [sys.executable, str(tmp_path / "post_to_one.py")], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == printed
        assert [e["conversation"] for e in requests(first)] == [e["conversation"] for e in requests(second)]
        assert len(requests(first)) == 1


def test_a_server_that_cannot_load_a_post_is_listed_as_shown(tmp_path: Path, redis_url: str) -> None:
    [example] = [b for b in blocks(PAGE) if b.file == "not_loaded.py"]
    [greetings] = [b for b in blocks(PAGE) if b.file == "greetings.mockllm"]
    printed = next(b.text for b in blocks(PAGE) if b.lang == "text" and "cannot load posted text" in b.text)
    first_base, second_base = tmp_path / "first", tmp_path / "second"
    first_base.mkdir()
    second_base.mkdir()
    (first_base / "greetings.mockllm").write_text(greetings.text)  # the second server's base lacks it
    first_url, second_url = "http://127.0.0.1:8080", "http://127.0.0.1:8081"
    with (
        serve_process("--state", redis_url, "--scenario-base", str(first_base)) as (_, first, _),
        serve_process("--state", redis_url, "--scenario-base", str(second_base)) as (second_process, second, _),
    ):
        code = example.text.replace(first_url, first).replace(second_url, second)
        (tmp_path / "not_loaded.py").write_text(code)
        done = subprocess.run(
            [sys.executable, str(tmp_path / "not_loaded.py")], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        shown = done.stdout.replace(str(second_base), "/srv/second")  # the page's host, pid and directory
        shown = shown.replace(f"{socket.gethostname()} pid {second_process.pid}", "web-2 pid 4242")
        assert shown == printed
