"""The docs site's navigation is complete, and the examples of the pages this suite owns run. (`mkdocs build
--strict` runs in .ci/run, which installs the `docs` extra; the test extra stays free of mkdocs.)

Conventions in those pages (index, pytest, python-api, admin-api, cli, embeddings, inspector):
- a fenced block whose first line is ``# file: NAME`` is written under NAME into a fresh project
  directory for the page (scenarios, ``pyproject.toml``, Python files);
- a ```python block saved as ``test_*.py`` is a complete pytest file: the page's test files run in one
  pytest subprocess in that directory, and every test must pass;
- any other ```python block is executed in page order, in one namespace, with that directory as the
  working directory; when it prints and the next block is a ```text or ```mockllm block without a file
  name, that block must appear in what it printed.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
import yaml
from sdk_clients import opened

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = (
    "index.md",
    "pytest.md",
    "python-api.md",
    "admin-api.md",
    "cli.md",
    "embeddings.md",
    "voice-and-images.md",
    "inspector.md",
    "tls.md",
    "realtime.md",
    "gemini-live.md",
)
FENCE = re.compile(r"^```([A-Za-z-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
FILE_LINE = re.compile(r"#\s*file:\s*(\S+)")
NAV = {
    "Getting started": "index.md",
    "Language": "language.md",
    "Providers": "providers.md",
    "pytest": "pytest.md",
    "Python API": "python-api.md",
    "Admin API": "admin-api.md",
    "CLI": "cli.md",
    "Start from real traffic": "recording.md",
    "Editor support": "editors.md",
    "Cookbook": "cookbook.md",
    "Embeddings and RAG": "embeddings.md",
    "Voice and images": "voice-and-images.md",
    "Performance": "performance.md",
}


@attrs.frozen
class Block:
    lang: str
    text: str
    line: int
    file: str | None


def blocks(page: str) -> list[Block]:
    source = (DOCS / page).read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(source):
        text = m[2]
        first = text.splitlines()[0].strip() if text.strip() else ""
        named = FILE_LINE.fullmatch(first)
        out.append(Block(m[1], text, source.count("\n", 0, m.start()) + 1, named[1] if named else None))
    return out


def write_files(page: str, root: Path) -> list[str]:
    """Write the page's named blocks under ``root``; the names of its pytest files."""
    tests = []
    for b in blocks(page):
        if b.file is None:
            continue
        target = root / b.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(b.text, encoding="utf-8")
        if b.lang == "python" and Path(b.file).name.startswith("test_"):
            tests.append(b.file)
    return tests


def _nav_pages(items: list[object]) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in items:
        if isinstance(item, dict):
            for title, value in item.items():
                if isinstance(value, str):
                    found[title] = value
                elif isinstance(value, list):
                    first = next((v for v in value if isinstance(v, str)), None)
                    if first is not None:
                        found[title] = first
    return found


class _ConfigLoader(yaml.SafeLoader):
    """The safe loader, reading mkdocs' ``!!python/name:`` tags as plain strings (nothing is imported)."""


_ConfigLoader.add_multi_constructor("tag:yaml.org,2002:python/name:", lambda loader, suffix, node: suffix)


def test_nav_has_every_section() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_ConfigLoader)
    assert config["theme"]["name"] == "material"
    nav = _nav_pages(config["nav"])
    assert list(nav.items())[: len(NAV)] == list(NAV.items())


@pytest.mark.parametrize("page", PAGES)
def test_python_examples_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(page, tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_{page[:-3].replace('-', '_')}"}
    page_blocks = blocks(page)
    for i, b in enumerate(page_blocks):
        if b.lang != "python" or b.file is not None:
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(b.text, f"docs/{page}:{b.line}", "exec"), namespace)
            except Exception as exc:
                pytest.fail(f"docs/{page} line {b.line}: the example raised {exc!r}\n\n{b.text}")
        printed = out.getvalue()
        following = page_blocks[i + 1] if i + 1 < len(page_blocks) else None
        if printed and following is not None and following.lang in ("text", "mockllm") and following.file is None:
            assert following.text in printed, f"docs/{page} line {following.line} is not what line {b.line} prints"


@pytest.mark.parametrize("page", [p for p in PAGES if any(b.file and "test_" in b.file for b in blocks(p))])
def test_pytest_examples_pass(page: str, tmp_path: Path) -> None:
    tests = write_files(page, tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *tests],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = proc.stdout + proc.stderr
    expected = sum(len(re.findall(r"^def test_", (tmp_path / t).read_text(), re.MULTILINE)) for t in tests)
    assert proc.returncode == 0, output
    assert f"{expected} passed" in output, output


def test_the_getting_started_no_match_report_is_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report shown under "When nothing matches" is what the server says for that question."""
    import openai

    import mockllm

    write_files("index.md", tmp_path)
    monkeypatch.chdir(tmp_path)
    with mockllm.serve("weather.mockllm") as server:
        client = opened(openai.OpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0))
        with pytest.raises(openai.NotFoundError):
            question = [{"role": "user", "content": "What is the forecast for Paris?"}]
            client.chat.completions.create(model="gpt-4o", messages=question)
        report = server.verify().report()
    shown = next(b.text for b in blocks("index.md") if b.lang == "text" and "no step matched" in b.text)

    def same(text: str) -> str:
        return re.sub(r'conversation "[0-9a-f]*…?"', 'conversation "…"', text).strip()

    assert same(shown) == same(report)
