"""The `mockllm` command as a user meets it: real subprocesses of the installed console script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mockllm import cli
from mockllm.dsl.format.formatter import format_file
from mockllm.dsl.parse.parser import parse_text
from mockllm.dsl.tree.jsonform import from_json_text


def _command() -> list[str]:
    beside = Path(sys.executable).with_name("mockllm")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("mockllm")
    return [found] if found else [sys.executable, "-m", "mockllm"]


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*_command(), *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    return proc


WEATHER = """\
scenario "Weather":
    when:
        provider is openai

    step ask:
        when:
            last user message contains "weather"
        capture city from last user message /weather in (\\w+)/
        reply:
            tool call get_weather {"city": "{{city}}"}

    step sunny:
        when:
            tool result for "get_weather" contains "sun"
        after ask
        reply:
            text "Sunny in {{city}}."

    step rainy:
        when:
            tool result for "get_weather" contains "rain"
        after ask
        reply:
            text "Rain in {{city}}."

    step retry:
        after sunny
        repeat 3
        reply:
            error 429 "slow down"

scenario "Chatter":
    order any

    step hi:
        reply:
            text "hi"

    step bye:
        always
        reply:
            text "bye"
"""

BROKEN = """\
scenario "Broken":
    step ask:
        when:
            modle is "gpt-4o"
        reply:
            text "hi"
"""

MESSY = """\
mockllm 1
scenario "Messy":
  priority 0
  step a:
      reply:
          text   "hi"
  step b:
        when:
           model is "x"
        reply echo
"""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "weather.mockllm").write_text(WEATHER, encoding="utf-8")
    (tmp_path / "broken.mockllm").write_text(BROKEN, encoding="utf-8")
    return tmp_path


def test_version_and_no_command(work: Path) -> None:
    proc = run(work, "--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("mockllm ")
    proc = run(work)
    assert proc.returncode == 2
    assert "check" in proc.stderr and "convert" in proc.stderr


def test_check_clean_file(work: Path) -> None:
    proc = run(work, "check", "weather.mockllm")
    assert proc.returncode == 0
    assert proc.stdout == "ok: 1 file checked, no problems\n"


def test_check_broken_file_shows_caret_and_summary(work: Path) -> None:
    proc = run(work, "check", "broken.mockllm", "weather.mockllm")
    assert proc.returncode == 1
    out = proc.stdout
    assert "error: unknown subject `modle`; did you mean `model`?" in out
    assert "  --> broken.mockllm:4:13" in out
    assert ' 4 |             modle is "gpt-4o"\n   |             ^^^^^\n' in out
    assert out.rstrip().endswith("failed: 2 files checked, 1 error")


def test_check_json_format(work: Path) -> None:
    proc = run(work, "check", "--format", "json", "broken.mockllm")
    assert proc.returncode == 1
    [diag] = json.loads(proc.stdout)
    assert diag["severity"] == "error"
    assert diag["message"] == "unknown subject `modle`; did you mean `model`?"
    assert (diag["span"]["file"], diag["span"]["line"], diag["span"]["column"]) == ("broken.mockllm", 4, 13)
    proc = run(work, "check", "--format", "json", "weather.mockllm")
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == []


def test_warnings_alone_do_not_fail(work: Path) -> None:
    (work / "again.mockllm").write_text(WEATHER, encoding="utf-8")
    proc = run(work, "check", "weather.mockllm", "again.mockllm")
    assert proc.returncode == 0
    assert "warning: " in proc.stdout
    assert "ok: 2 files checked, " in proc.stdout and "warning" in proc.stdout.splitlines()[-1]


def test_missing_file_and_broken_directory_give_no_traceback(work: Path) -> None:
    proc = run(work, "check", "nowhere.mockllm")
    assert proc.returncode == 1
    assert "nowhere.mockllm: no such file or directory" in proc.stdout
    lib = work / "lib"
    lib.mkdir()
    (lib / "one.mockllm").write_text(BROKEN, encoding="utf-8")
    (lib / "two.mockllm").write_text('scenario "x":\n\tstep a:\n', encoding="utf-8")
    (lib / "three.json").write_text('{"scenarios": [', encoding="utf-8")
    proc = run(work, "check", "lib")
    assert proc.returncode == 1
    for name in ("lib/one.mockllm", "lib/two.mockllm", "lib/three.json"):
        assert f"--> {name}:" in proc.stdout
    assert "failed: 3 files checked, 3 errors" in proc.stdout
    (work / "empty").mkdir()
    proc = run(work, "check", "empty")
    assert proc.returncode == 1
    assert proc.stderr == "mockllm: no .mockllm or .json files found in empty\n"


def test_fmt_rewrites_is_idempotent_and_check_reports(work: Path) -> None:
    (work / "broken.mockllm").unlink()
    nested = work / "nested"
    nested.mkdir()
    messy = nested / "messy.mockllm"
    messy.write_text(MESSY, encoding="utf-8")
    (nested / "data.json").write_text("{}", encoding="utf-8")  # fmt only touches .mockllm files
    proc = run(work, "fmt", "--check", "nested/messy.mockllm", "weather.mockllm")
    assert proc.returncode == 1
    assert proc.stdout == "would reformat nested/messy.mockllm\n1 file would be reformatted, 1 unchanged\n"
    assert messy.read_text(encoding="utf-8") == MESSY  # --check writes nothing

    proc = run(work, "fmt", str(work))
    assert proc.returncode == 0
    assert proc.stdout.endswith("1 file reformatted, 1 unchanged\n")
    assert (nested / "data.json").read_text(encoding="utf-8") == "{}"
    formatted = messy.read_text(encoding="utf-8")
    tree, _ = parse_text(MESSY, "messy.mockllm")
    assert tree is not None
    assert formatted == format_file(tree)
    assert '\n    step a:\n        reply:\n            text "hi"\n' in formatted
    assert parse_text(formatted, "messy.mockllm")[0] == tree

    proc = run(work, "fmt", "--check", "nested")
    assert proc.returncode == 0
    assert proc.stdout == "0 files would be reformatted, 1 unchanged\n"


def test_fmt_leaves_broken_files_alone(work: Path) -> None:
    proc = run(work, "fmt", "broken.mockllm", "weather.mockllm")
    assert proc.returncode == 1
    assert "not formatting broken.mockllm: it has syntax errors" in proc.stderr
    assert "broken.mockllm:4:13" in proc.stderr
    assert proc.stdout.endswith("0 files reformatted, 1 unchanged, 1 left alone (see above)\n")
    assert (work / "broken.mockllm").read_text(encoding="utf-8") == BROKEN


COMMENTED = """\
mockllm 1
# What this file tests.
scenario "Messy":  # the only scenario
  priority 0
  # the first step
  step a:
      reply:
          text   "hi"  # greeting
          # more elements to come
  # the second step
  step b:
        when:
           model is "x"
        reply echo
# the end
"""

COMMENTED_FORMATTED = """\
mockllm 1
# What this file tests.

scenario "Messy":  # the only scenario
    # the first step
    step a:
        reply:
            text "hi"  # greeting
            # more elements to come

    # the second step
    step b:
        when:
            model is "x"
        reply echo
# the end
"""


def test_fmt_keeps_comments_and_is_stable(work: Path) -> None:
    commented = work / "commented.mockllm"
    commented.write_text(COMMENTED, encoding="utf-8")
    proc = run(work, "fmt", "commented.mockllm")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "reformatted commented.mockllm\n1 file reformatted, 0 unchanged\n"
    assert commented.read_text(encoding="utf-8") == COMMENTED_FORMATTED
    proc = run(work, "fmt", "--check", "commented.mockllm")
    assert proc.returncode == 0
    assert proc.stdout == "0 files would be reformatted, 1 unchanged\n"


def test_graph_mermaid_and_dot(work: Path) -> None:
    proc = run(work, "graph", "weather.mockllm")
    assert proc.returncode == 0
    out = proc.stdout
    assert out.count("flowchart TD") == 1  # two scenarios, one Mermaid document
    assert 'subgraph m0_scenario["scenario #quot;Weather#quot;"]' in out
    assert 'subgraph m1_scenario["scenario #quot;Chatter#quot;"]' in out
    assert 'm0_s0["ask<br/>once"]' in out
    assert 'm0_s3["retry<br/>repeat 3"]' in out
    assert 'm0_s0 -->|"tool result for #quot;get_weather#quot; contains #quot;sun#quot;"| m0_s1' in out
    assert 'm0_s0 -->|"tool result for #quot;get_weather#quot; contains #quot;rain#quot;"| m0_s2' in out
    assert 'm0_s1 -->|"any request"| m0_s3' in out
    assert 'm0_s3 -.->|"up to 3 times"| m0_s3' in out
    proc = run(work, "graph", "weather.mockllm", "--scenario", "Weather")
    assert proc.stdout.startswith("---\ntitle: 'scenario \"Weather\"'\n---\nflowchart TD\n")

    proc = run(work, "graph", "weather.mockllm", "--scenario", "Chatter", "--format", "dot")
    assert proc.returncode == 0
    dot = proc.stdout
    assert dot.startswith('digraph "Chatter" {') and dot.count("digraph") == 1
    assert 'start -> s0 [label="any request"];' in dot
    assert 'start -> s1 [label="any request", style=dashed];' in dot
    assert 's1 -> s1 [label="always", style=dashed];' in dot


def test_graph_errors_are_one_clear_line(work: Path) -> None:
    proc = run(work, "graph", "weather.mockllm", "--scenario", "Wether")
    assert proc.returncode == 2
    assert proc.stderr == 'mockllm: no scenario named "Wether" in weather.mockllm; did you mean "Weather"?\n'
    proc = run(work, "graph", "broken.mockllm")
    assert proc.returncode == 1
    assert "mockllm: cannot draw broken.mockllm: it has errors" in proc.stderr


def test_convert_both_ways_gives_the_same_tree(work: Path) -> None:
    proc = run(work, "convert", "weather.mockllm")
    assert proc.returncode == 0
    original, _ = parse_text(WEATHER, "weather.mockllm")
    from_json, diagnostics = from_json_text(proc.stdout, "weather.mockllm")
    assert diagnostics == [] and from_json == original
    (work / "weather.json").write_text(proc.stdout, encoding="utf-8")

    proc = run(work, "convert", "weather.json", "-o", "back.mockllm")
    assert proc.returncode == 0
    back_text = (work / "back.mockllm").read_text(encoding="utf-8")
    back, diagnostics = parse_text(back_text, "weather.mockllm")
    assert diagnostics == [] and back == original
    assert run(work, "check", "weather.json", "back.mockllm").returncode == 0  # both load (with a warning)


def test_convert_refuses_bad_input(work: Path) -> None:
    (work / "bad.json").write_text('{"scenarios": [{"name": 1}]}', encoding="utf-8")
    proc = run(work, "convert", "bad.json")
    assert proc.returncode == 1
    assert "$.scenarios[0].name: expected a string, got 1" in proc.stderr
    (work / "latin1.mockllm").write_bytes('scenario "caf\xe9":\n'.encode("latin-1"))
    proc = run(work, "convert", "latin1.mockllm")
    assert proc.returncode == 1
    assert proc.stderr == "mockllm: cannot read latin1.mockllm: not UTF-8 text (invalid continuation byte)\n"
    (work / "notes.txt").write_text("hi", encoding="utf-8")
    proc = run(work, "convert", "notes.txt")
    assert proc.returncode == 2
    assert proc.stderr == "mockllm: notes.txt: convert takes a .mockllm or a .json file\n"


# ---------------------------------------------------------------------------------------------------------
# In process: what cannot be provoked from outside


def test_unexpected_exceptions_print_one_line_unless_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An internal failure (here: the compiler blowing up) is one line and exit 2; --debug re-raises."""

    def explode(paths: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr("mockllm.dsl.machines.compiler.load_and_compile", explode)
    assert cli.main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == "mockllm: internal error: RuntimeError: boom; rerun with --debug for details\n"
    with pytest.raises(RuntimeError, match="boom"):
        cli.main(["check", "--debug", str(tmp_path)])
    with pytest.raises(RuntimeError, match="boom"):
        cli.main(["--debug", "check", str(tmp_path)])


def test_serve_and_explain_arguments() -> None:
    args = cli.build_parser().parse_args(
        [
            "serve",
            "a.mockllm",
            "lib",
            "--port",
            "0",
            "--no-auth",
            "--lenient",
            "--admin-token",
            "t",
            "--max-body-bytes",
            "100",
            "--hang-limit",
            "2.5",
            "--max-conversations",
            "7",
            "--idle-seconds",
            "9",
        ]
    )
    assert args.paths == ["a.mockllm", "lib"]
    assert (args.host, args.port, args.server) == ("127.0.0.1", 0, "hypercorn")
    assert (args.no_auth, args.lenient, args.admin_token) == (True, True, "t")
    assert (args.max_body_bytes, args.hang_limit, args.max_conversations, args.idle_seconds) == (100, 2.5, 7, 9.0)
    args = cli.build_parser().parse_args(["explain", "lib", "req.json", "--provider", "anthropic"])
    assert (args.library, args.request, args.provider, args.endpoint, args.format) == (
        "lib",
        ["req.json"],
        "anthropic",
        None,
        "text",
    )


def test_bad_option_values_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--port", "99999"]) == 2
    assert "expected a port between 0 and 65535, got 99999" in capsys.readouterr().err
