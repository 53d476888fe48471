"""Every provider page's example runs: its scenario is served and its client code is executed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ServeText

from mockllm.runtime.providers.registry import ENTRIES

PAGES = sorted((Path(__file__).parent.parent / "docs" / "providers").glob("*.md"))
FENCE = re.compile(r"```(\w[\w-]*)\n(.*?)```", re.S)


def blocks(page: Path, lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(page.read_text()) if kind == lang]


def test_there_is_a_page_per_provider() -> None:
    assert {p.stem for p in PAGES} == {Path(e.docs).stem for e in ENTRIES}


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_example_runs(serve_text: ServeText, page: Path) -> None:
    (script,) = blocks(page, "mockllm")
    (code,) = blocks(page, "python")
    assert "http://127.0.0.1:8080" in code
    with serve_text(script) as url:
        exec(compile(code.replace("http://127.0.0.1:8080", url), str(page), "exec"), {})
