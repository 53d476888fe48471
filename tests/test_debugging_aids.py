"""The smaller debugging aids of issue 13: `mockllm explain` in the request's real position, `did you
mean` only for valid words, under-indented lines reported where they are, one Mermaid document for
several scenarios, `convert` refusing what `check` refuses, and the banner, health and journal saying
what answers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import openai
from trip_scenario import TRIP

import mockllm
from mockllm import cli
from mockllm.dsl.machines.compiler import load_and_compile
from mockllm.dsl.machines.graph import to_mermaid_document
from mockllm.dsl.parse.parser import parse_text

OPENING = {"role": "user", "content": "Plan a trip to Lisbon"}
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "search_flights", "arguments": '{"city": "Lisbon"}'}}
    ],
}


def body(result: str) -> dict[str, object]:
    return {
        "model": "gpt-4o",
        "messages": [OPENING, CALL, {"role": "tool", "tool_call_id": "call_1", "content": result}],
    }


def explain(tmp_path: Path, *requests: object, extra: tuple[str, ...] = ()) -> tuple[int, str]:
    (tmp_path / "trip.mockllm").write_text(TRIP, encoding="utf-8")
    files = []
    for i, r in enumerate(requests):
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(r), encoding="utf-8")
        files.append(str(path))
    proc = subprocess.run(
        [sys.executable, "-m", "mockllm", "explain", str(tmp_path / "trip.mockllm"), *files, *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_explain_replays_the_requests_own_history(tmp_path: Path) -> None:
    """Before: the saved request was explained as the start of a conversation, so `ask_city` (whose
    condition the opening still meets) "matched" a request that really failed at `flights_found`."""
    code, out = explain(tmp_path, body("Lisbon: sold out"))
    assert code == 1, out
    assert "replayed 1 earlier turn from the request's own history first" in out
    assert "This conversation was waiting for:" in out and "step `flights_found`" in out
    assert '✗ tool result for "search_flights" not contains "sold out"' in out
    code, out = explain(tmp_path, body("3 flights to Lisbon"))
    assert code == 0 and "step `flights_found`" in out, out
    code, out = explain(tmp_path, body("Lisbon: sold out"), extra=("--no-replay",))
    assert code == 0 and "step `ask_city`" in out, out  # alone, it looks like an opening


def test_explain_takes_a_journal_export(tmp_path: Path) -> None:
    with mockllm.serve(TRIP) as server:
        url = server.openai_base_url + "/chat/completions"
        headers = {"x-mockllm-conversation": "trip-1"}
        assert httpx.post(url, json={"model": "gpt-4o", "messages": [OPENING]}, headers=headers).status_code == 200
        assert httpx.post(url, json=body("Lisbon: sold out"), headers=headers).status_code == 404
        journal = httpx.get(server.url + "/_mockllm/requests").json()
    code, out = explain(tmp_path, journal)
    assert code == 1, out
    assert "step `flights_found`" in out and "This conversation was waiting for:" in out
    code, out = explain(tmp_path, journal, extra=("--entry", "1"))  # a matched request keeps its body too
    assert code == 0 and "step `ask_city`" in out, out


def test_explain_takes_the_earlier_requests_as_files(tmp_path: Path) -> None:
    first = {"model": "gpt-4o", "messages": [OPENING]}
    code, out = explain(tmp_path, first, body("3 flights to Lisbon"))
    assert code == 0 and "replayed 1 earlier request given first" in out and "`flights_found`" in out, out


def check(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.mockllm"
    path.write_text(text, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "mockllm", "check", str(path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1
    return proc.stdout + proc.stderr


def test_did_you_mean_suggests_only_a_word_the_subject_takes(tmp_path: Path) -> None:
    """Before: `last user message includes` got `did you mean include`, which it does not take either."""
    text = (
        'scenario "x":\n    step a:\n        when:\n            {} includes "x"\n'
        '        reply:\n            text "hi"\n'
    )
    out = check(tmp_path, text.format("last user message"))
    assert "did you mean `contains`?" in out and "`include`" not in out
    out = check(tmp_path, text.format("tools"))
    assert "did you mean `include`?" in out


def test_an_under_indented_block_line_is_reported_on_its_own_line() -> None:
    """Before: the error named the next line (the first one that matched no block)."""
    text = (
        'scenario "x":\n    step a:\n        when:\n            last user message contains "x"\n'
        '        reply:\n            text "hi"\n\n'
        '    step b:\n      when:\n            last user message contains "y"\n        reply:\n            text "yo"\n'
    )
    _tree, diagnostics = parse_text(text, "s.mockllm")
    (d,) = [d for d in diagnostics if d.code == "indent"]
    assert (d.span.line, d.span.column) == (9, 7), d
    assert "indent it to column 9" in (d.hint or "")


def test_serve_says_how_many_scenarios_from_how_many_files_and_lists_them_when_verbose(tmp_path: Path) -> None:
    """Issue 34: every file of the library was named on one line; now they are counted, and ``--verbose``
    lists each file's scenarios. stdout's first line stays the listening line."""
    (tmp_path / "trip.mockllm").write_text(TRIP, encoding="utf-8")
    (tmp_path / "more.mockllm").write_text('scenario "More":\n    step a:\n        reply:\n            text "x"\n')
    for verbose in (False, True):
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mockllm",
                "serve",
                str(tmp_path),
                "--port",
                "0",
                *(["--verbose"] if verbose else []),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None and proc.stderr is not None
            assert re.fullmatch(r"mockllm listening on http://127\.0\.0\.1:\d+\n", proc.stdout.readline())
            line = proc.stderr.readline()
            assert line.startswith("mockllm: serving 2 scenarios (3 steps) from 2 files; "), line
            if verbose:
                listed = [proc.stderr.readline().rstrip("\n") for _ in range(4)]
                assert listed[0].endswith("more.mockllm: 1 scenario"), listed
                assert listed[1].startswith('    scenario "More" (1 step) at ') and listed[1].endswith(
                    "more.mockllm:1:1"
                )
                assert listed[2].endswith("trip.mockllm: 1 scenario")
                assert listed[3].startswith('    scenario "Trip planner" (2 steps) at ')
        finally:
            proc.terminate()
            proc.wait(10)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


def test_an_under_indented_first_reply_line_is_reported_on_its_own_line() -> None:
    """Issue 34: the first line of a reply two spaces in, its siblings four: the error named the next
    line ("unexpected indentation"); it names the line that is off and the column its siblings use."""
    text = (
        'scenario "x":\n    step a:\n        reply:\n          text "one"\n'
        "            usage 1 in, 1 out\n            latency 1s\n"
    )
    _tree, diagnostics = parse_text(text, "s.mockllm")
    (d,) = [d for d in diagnostics if d.code == "indent"]
    assert (d.span.line, d.span.column) == (4, 11), d
    assert d.message == "this line is indented to column 11, less than the lines of its block (line 5 is at column 13)"
    assert d.hint == "indent it to column 13, like the other lines of its block"


def test_an_over_indented_line_after_a_block_line_is_still_reported_itself() -> None:
    """The line after a well-indented first line is the one off when it is the one off the grid."""
    text = 'scenario "x":\n    step a:\n        reply:\n            text "one"\n                usage 1 in, 1 out\n'
    _tree, diagnostics = parse_text(text, "s.mockllm")
    (d,) = [d for d in diagnostics if d.code == "indent"]
    assert (d.span.line, d.span.column) == (5, 17), d
    assert d.message.startswith("unexpected indentation")


def test_graph_of_several_scenarios_is_one_mermaid_document(tmp_path: Path) -> None:
    long = "a very long condition value that goes on and on beyond one line"
    text = "".join(
        f'scenario "S{i}":\n    step a:\n        when:\n            last user message contains "{long} {i}"\n'
        f'        reply:\n            text "hi"\n\n    step b:\n        reply:\n            text "yo"\n\n'
        for i in range(2)
    )
    path = tmp_path / "two.mockllm"
    path.write_text(text, encoding="utf-8")
    compiled, _library, _diagnostics = load_and_compile([str(path)])
    assert compiled is not None
    doc = to_mermaid_document(compiled.machines)
    assert doc.count("flowchart") == 1 and "---" not in doc  # one diagram, no second front matter
    assert doc.count("subgraph ") == 2 and doc.count("\n    end") == 2
    declared = set(re.findall(r"^\s+(m\d_\w+)[\[(]", doc, re.MULTILINE))
    used = set(re.findall(r"(m\d_\w+) -", doc)) | set(re.findall(r"\| (m\d_\w+)$", doc, re.MULTILINE))
    assert used and used <= declared
    labels = re.findall(r'\|"(.*?)"\|', doc)
    words = set(f"last user message contains #quot;{long} 0#quot;".split()) | set(
        f"last user message contains #quot;{long} 1#quot;".split()
    )
    for label in labels:
        for line in label.split("<br/>"):
            if "contains" in line or "value" in line or "line" in line:
                assert set(line.split()) <= words, line  # every word whole, none cut
    proc = subprocess.run([sys.executable, "-m", "mockllm", "graph", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.count("flowchart") == 1


def test_convert_refuses_a_bad_regex(tmp_path: Path) -> None:
    """Before: convert parsed and wrote a script whose regex does not compile."""
    path = tmp_path / "bad.mockllm"
    path.write_text(
        'scenario "x":\n    step a:\n        when:\n            last user message matches /(unclosed/\n'
        '        reply:\n            text "hi"\n',
        encoding="utf-8",
    )
    out = tmp_path / "bad.json"
    code = cli.main(["convert", str(path), "-o", str(out)])
    assert code == 1 and not out.exists()


def test_health_and_journal_say_what_is_loaded_and_what_answered() -> None:
    script = 'defaults:\n    fallback:\n        text "I did not understand."\n\n' + TRIP
    with mockllm.serve(script) as server:
        health = httpx.get(server.url + "/_mockllm/health").json()
        assert health["scenarios"] == 1 and health["fallback"] is True and health["echo"] is False
        assert "1 scenario (2 steps)" in health["loaded"] and "the fallback" in health["loaded"]
        url = server.openai_base_url + "/chat/completions"
        httpx.post(url, json={"model": "m", "messages": [OPENING]}).raise_for_status()
        httpx.post(url, json={"model": "m", "messages": [OPENING]}).raise_for_status()  # same opening again
        first, second = httpx.get(server.url + "/_mockllm/requests").json()
        assert first["answered_by"].startswith('scenario "Trip planner", step `ask_city` (')
        assert second["answered_by"].startswith("the fallback: no step matched")
    with mockllm.serve() as server:
        health = httpx.get(server.url + "/_mockllm/health").json()
        assert health["echo"] is True and "echo responder" in health["loaded"]


def test_the_journal_names_the_default_answer_of_an_operation_no_step_is_for() -> None:
    """Before: an embedding answered by the default embedder while a library was loaded was said to be
    answered by "the echo responder: no scenarios are loaded"."""
    with mockllm.serve(TRIP) as server:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="k")
        client.embeddings.create(model="text-embedding-3-small", input="Lisbon")
        (entry,) = httpx.get(server.url + "/_mockllm/requests").json()
        assert entry["answered_by"] == 'the default embeddings answer: no step names `endpoint is "embeddings"`'
    with mockllm.serve() as server:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="k")
        client.chat.completions.create(model="m", messages=[OPENING])  # type: ignore[list-item]
        (entry,) = httpx.get(server.url + "/_mockllm/requests").json()
        assert entry["answered_by"] == "the echo responder: no scenarios are loaded"


def test_serve_prints_what_it_loaded(tmp_path: Path) -> None:
    (tmp_path / "trip.mockllm").write_text(TRIP, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mockllm", "serve", str(tmp_path / "trip.mockllm"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith("mockllm listening on http://127.0.0.1:")
        line = proc.stderr.readline()
        assert line.startswith("mockllm: serving 1 scenario (2 steps) from "), line
        assert "404 with the no-match report" in line
    finally:
        proc.terminate()
        proc.wait(10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
