"""docs/recording.md runs as written: the cassette converts to the script shown (with the summary
shown), and recording the session shown through `mockllm record` — with a mockllm server serving that
script as the upstream — prints the answer shown and writes the same script, without the key."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from test_docs_site import DOCS, Block, blocks, write_files

from mockllm.runtime.providers.registry import ENTRIES

PAGE = "recording.md"
SECRET = "sk-proj-docs-secret-0000"


def _after(page: list[Block], block: Block, lang: str) -> Block:
    later = page[page.index(block) + 1 :]
    return next(b for b in later if b.lang == lang and b.file is None)


def _command(page: list[Block], name: str) -> tuple[Block, list[str]]:
    for b in page:
        for line in b.text.splitlines() if b.lang == "sh" else ():
            if line.startswith(f"mockllm {name} "):
                return b, shlex.split(line)[1:]
    raise AssertionError(f"no `mockllm {name}` line in docs/{PAGE}")


def test_convert_a_cassette_folder(tmp_path: Path) -> None:
    page = blocks(PAGE)
    write_files(PAGE, tmp_path)
    block, args = _command(page, "import")
    r = subprocess.run([sys.executable, "-m", "mockllm", *args], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout == _after(page, block, "text").text
    written = tmp_path / r.stdout.splitlines()[1].strip()
    assert written.read_text(encoding="utf-8") == _after(page, block, "mockllm").text
    assert "REAL-KEY" not in written.read_text(encoding="utf-8")
    check = subprocess.run([sys.executable, "-m", "mockllm", "check", "scenarios"], cwd=tmp_path, capture_output=True)
    assert check.returncode == 0


def test_record_a_session(tmp_path: Path, serve_text: Any) -> None:
    page = blocks(PAGE)
    script = next(b for b in page if b.lang == "mockllm" and b.file is None).text
    record_block, args = _command(page, "record")
    session = next(b for b in page[page.index(record_block) :] if b.lang == "python")
    shown = _after(page, session, "text").text
    with serve_text(script) as upstream:
        args = ["0" if a == "8090" else a for a in args] + ["--upstream", upstream]
        env = {**os.environ, "OPENAI_API_KEY": SECRET}
        proc = subprocess.Popen(
            [sys.executable, "-m", "mockllm", *args],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split(" on ", 1)[1].strip()
            code = session.text.replace("http://127.0.0.1:8090", url)
            run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
            assert run.returncode == 0, run.stderr
            assert run.stdout == shown
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "Traceback" not in err
    [written] = (tmp_path / "scenarios" / "recorded").glob("*.mockllm")
    text = written.read_text(encoding="utf-8")
    assert text == script and SECRET not in text


def _table() -> dict[str, list[str]]:
    """The rows of "Every provider records": provider name → its cells."""
    text = (DOCS / PAGE).read_text(encoding="utf-8").split("## Every provider records", 1)[1]
    rows = [line.strip("|").split(" | ") for line in text.splitlines() if line.startswith("| `")]
    return {cells[0].strip(" `"): [c.strip() for c in cells[1:]] for cells in rows}


def test_the_provider_table_names_every_provider_that_records() -> None:
    """One row per registry entry (each has a recording reader), with the upstream the recorder uses
    by default; a provider whose embedding calls record names them, and only such a provider."""
    table = _table()
    assert all(e.reader is not None for e in ENTRIES)
    assert sorted(table) == sorted(e.name for e in ENTRIES)
    for e in ENTRIES:
        _, embeddings, upstream = table[e.name]
        assert upstream.startswith(f"`{e.upstream}`"), (e.name, upstream)
        routes = [r.pair for r in e.routes if r.pair is not None and r.serves == "embeddings"]
        embeds = bool(routes) or "embeddings" in e.model_operations.values() or e.name == "bedrock"  # Bedrock: invoke
        assert (embeddings != "—") == embeds, e.name


def test_grow_a_suite_through_a_passthrough(tmp_path: Path, serve: Any) -> None:
    """ "Grow a suite": the library answers the greeting, the upstream (a mockllm server serving the
    page's upstream.mockllm) the weather; the written script is the one shown, and serving the folder
    alone replays the same output."""
    from mockllm.api import load

    page = blocks(PAGE)
    write_files(PAGE, tmp_path)
    section = page[next(i for i, b in enumerate(page) if "--record-missing scenarios/recorded --port" in b.text) :]
    line = next(x for x in section[0].text.splitlines() if "--passthrough http" in x)
    session = next(b for b in section if b.lang == "python")
    shown = _after(page, session, "text").text
    written_shown = _after(page, session, "mockllm").text
    env = {**os.environ, "OPENAI_API_KEY": SECRET}

    def run_session(url: str) -> str:
        code = session.text.replace("http://127.0.0.1:8090", url)
        run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return run.stdout

    upstream_text = (tmp_path / "upstream.mockllm").read_text(encoding="utf-8")
    with serve(upstream_text) as upstream:
        args = shlex.split(line)[1:]
        args = ["0" if a == "8090" else upstream.url if a == "http://127.0.0.1:8091" else a for a in args]
        proc = subprocess.Popen(
            [sys.executable, "-m", "mockllm", *args],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split(" on ", 1)[1].strip()
            assert run_session(url) == shown
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=10)
    assert "Traceback" not in err
    [written] = (tmp_path / "scenarios" / "recorded").glob("*.mockllm")
    text = written.read_text(encoding="utf-8")
    assert text == written_shown and SECRET not in text
    with serve("") as replay:  # the folder alone, the upstream gone
        replay.engine.load(load(str(tmp_path / "scenarios")).compiled)
        assert run_session(replay.url) == shown
