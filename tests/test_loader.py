"""Loading libraries: files, directories, imports, load order, cycles, missing files."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockllm.dsl.diagnostics import render
from mockllm.dsl.machines.compiler import compile_library, load_and_compile
from mockllm.dsl.parse.loader import Library, load_paths, load_text
from mockllm.dsl.tree.jsonform import to_json_text
from mockllm.dsl.tree.nodes import (
    Error,
    NamedReply,
    ReplyBlock,
    ReplyRef,
    Scenario,
    ScriptFile,
    Step,
    Text,
    Use,
)


def write_json(
    path: Path,
    *,
    uses: tuple[tuple[str, str], ...] = (),
    replies: tuple[NamedReply, ...] = (),
    scenarios: tuple[Scenario, ...] = (),
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tree = ScriptFile(str(path), uses=tuple(Use(p, a) for p, a in uses), replies=replies, scenarios=scenarios)
    path.write_text(to_json_text(tree), encoding="utf-8")


def scenario(name: str, reply: ReplyBlock | ReplyRef | None = None) -> Scenario:
    return Scenario(name, steps=(Step("x", reply=reply or ReplyBlock((Text(name),))),))


def names(library: Library) -> list[str]:
    return [f.path for f in library.files]


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_directory_loads_recursively_sorted(cwd: Path) -> None:
    write_json(cwd / "lib" / "b.json", scenarios=(scenario("b"),))
    write_json(cwd / "lib" / "a.json", scenarios=(scenario("a"),))
    write_json(cwd / "lib" / "sub" / "c.json", scenarios=(scenario("c"),))
    (cwd / "lib" / "notes.txt").write_text("not a script")
    library = load_paths(["lib"])
    assert library.diagnostics == ()
    assert names(library) == ["lib/a.json", "lib/b.json", "lib/sub/c.json"]
    assert set(library.sources) == set(names(library))


def test_paths_load_in_the_order_given(cwd: Path) -> None:
    write_json(cwd / "z.json", scenarios=(scenario("z"),))
    write_json(cwd / "a.json", scenarios=(scenario("a"),))
    assert names(load_paths(["z.json", Path("a.json")])) == ["z.json", "a.json"]


def test_imports_resolve_relative_to_importing_file_and_load_first(cwd: Path) -> None:
    write_json(
        cwd / "suite" / "lib" / "errors.json",
        replies=(NamedReply("limited", (Error(429, "slow"),)),),
        scenarios=(scenario("from lib"),),
    )
    write_json(
        cwd / "suite" / "main.json",
        uses=(("lib/errors.json", "errors"),),
        scenarios=(scenario("main", ReplyRef("limited", alias="errors")),),
    )
    library = load_paths(["suite/main.json"])
    assert library.diagnostics == ()
    assert names(library) == ["suite/lib/errors.json", "suite/main.json"]
    assert library.aliases["suite/main.json"] == {"errors": "suite/lib/errors.json"}
    compiled, diags = compile_library(library)
    assert compiled is not None and diags == []
    by_name = {m.name: m for m in compiled.machines}
    assert set(by_name) == {"from lib", "main"}
    assert by_name["main"].steps[0].reply.elements == (Error(429, "slow"),)


def test_file_imported_twice_loads_once(cwd: Path) -> None:
    write_json(cwd / "shared.json", scenarios=(scenario("shared"),))
    write_json(cwd / "a.json", uses=(("shared.json", "s"),))
    write_json(cwd / "b.json", uses=(("./shared.json", "s"),))
    library = load_paths(["a.json", "b.json", "shared.json"])
    assert names(library) == ["shared.json", "a.json", "b.json"]
    assert library.aliases["b.json"] == {"s": "shared.json"}


def test_import_cycle_shows_the_chain(cwd: Path) -> None:
    write_json(cwd / "a.json", uses=(("b.json", "b"),))
    write_json(cwd / "b.json", uses=(("a.json", "a"),))
    library = load_paths(["a.json"])
    (d,) = library.diagnostics
    assert d.code == "import-cycle"
    assert d.message == "import cycle: a.json → b.json → a.json"
    assert d.span.file == "b.json"
    assert names(library) == ["b.json", "a.json"]


def test_missing_import_is_an_error_at_the_use(cwd: Path) -> None:
    write_json(cwd / "dir" / "a.json", uses=(("nope.json", "n"),), scenarios=(scenario("a", ReplyRef("r", alias="n")),))
    library = load_paths(["dir"])
    (d,) = library.diagnostics
    assert d.code == "not-found"
    assert d.message == 'imported file "nope.json" was not found (looked for dir/nope.json)'
    assert d.span.file == "dir/a.json"
    # the reply through the broken alias is not reported a second time
    compiled, diags = compile_library(library)
    assert compiled is None and [x.code for x in diags] == ["not-found"]


def test_missing_command_line_path(cwd: Path) -> None:
    library = load_paths(["missing.mockllm"])
    (d,) = library.diagnostics
    assert (d.code, d.message, d.span.file) == (
        "not-found",
        "missing.mockllm: no such file or directory",
        "missing.mockllm",
    )
    assert "--> missing.mockllm" in render([d])


def test_unreadable_file(cwd: Path) -> None:
    (cwd / "bad.json").write_bytes(b"\xff\xfe\x00garbage")
    (d,) = load_paths(["bad.json"]).diagnostics
    assert d.code == "read-error" and "not UTF-8" in d.message


def test_bad_json_reports_and_skips_the_file(cwd: Path) -> None:
    (cwd / "bad.json").write_text('{"scenarios": 3}')
    library = load_paths(["bad.json"])
    assert library.files == () or library.diagnostics
    assert library.diagnostics and all(d.span.file == "bad.json" for d in library.diagnostics)


def test_span_names_outside_cwd_are_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_json(tmp_path / "lib" / "a.json", scenarios=(scenario("a"),))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    library = load_paths([tmp_path / "lib" / "a.json"])
    assert names(library) == [str(tmp_path / "lib" / "a.json")]


def test_load_text_json_resolves_imports_against_base_dir(cwd: Path) -> None:
    write_json(cwd / "lib" / "errors.json", replies=(NamedReply("limited", (Error(429, "slow"),)),))
    tree = ScriptFile(
        "<posted>", uses=(Use("errors.json", "e"),), scenarios=(scenario("posted", ReplyRef("limited", alias="e")),)
    )
    library = load_text(to_json_text(tree), "<posted>", base_dir=str(cwd / "lib"))
    assert library.diagnostics == ()
    assert names(library) == ["lib/errors.json", "<posted>"]
    compiled, _ = compile_library(library)
    assert compiled is not None
    assert compiled.machines[0].steps[0].reply.elements == (Error(429, "slow"),)


def test_replacement_warning_across_files(cwd: Path) -> None:
    write_json(cwd / "a.json", scenarios=(scenario("same"),))
    write_json(cwd / "b.json", scenarios=(scenario("same"),))
    compiled, _library, diags = load_and_compile(["a.json", "b.json"])
    assert compiled is not None
    (d,) = diags
    assert d.severity == "warning" and d.code == "replaced-scenario"
    assert d.span.file == "b.json" and d.related[0].span.file == "a.json"
    assert compiled.machines[0].file == "b.json"


def test_text_imports_relative_to_importing_file(cwd: Path) -> None:
    (cwd / "suite" / "lib" / "v2").mkdir(parents=True)
    (cwd / "suite" / "lib" / "v2" / "errors.mockllm").write_text(
        'reply rate_limited:\n    error 429 "Rate limit reached"\n    retry after 2s\n'
    )
    (cwd / "suite" / "lib" / "common.mockllm").write_text(
        'use "v2/errors.mockllm" as errors\n\nreply busy:\n    error 503 "busy"\n\n'
        'scenario "From common":\n    step only:\n        reply like errors.rate_limited\n'
    )
    (cwd / "suite" / "main.mockllm").write_text(
        'use "lib/common.mockllm" as common\n\nscenario "Main":\n    step one:\n        reply like common.busy\n'
    )
    compiled, library, diags = load_and_compile(["suite"])
    assert diags == []
    assert names(library) == ["suite/lib/v2/errors.mockllm", "suite/lib/common.mockllm", "suite/main.mockllm"]
    assert compiled is not None
    replies = {m.name: m.steps[0].reply.elements for m in compiled.machines}
    assert replies["Main"] == (Error(503, "busy"),)
    assert replies["From common"][0] == Error(429, "Rate limit reached")


def test_text_cycle_chain(cwd: Path) -> None:
    (cwd / "a.mockllm").write_text('use "b.mockllm" as b\n')
    (cwd / "b.mockllm").write_text('use "c.mockllm" as c\n')
    (cwd / "c.mockllm").write_text('mockllm 1\nuse "a.mockllm" as a\n')
    library = load_paths(["a.mockllm"])
    (d,) = library.diagnostics
    assert d.message == "import cycle: a.mockllm → b.mockllm → c.mockllm → a.mockllm"
    assert (d.span.file, d.span.line, d.span.column) == ("c.mockllm", 2, 1)


def test_load_text_mockllm_with_base_dir(cwd: Path) -> None:
    (cwd / "lib").mkdir()
    (cwd / "lib" / "r.mockllm").write_text('reply hi:\n    text "hi"\n')
    library = load_text(
        'use "r.mockllm" as r\n\nscenario "s":\n    step a:\n        reply like r.hi\n', "<posted>", base_dir="lib"
    )
    assert library.diagnostics == ()
    assert names(library) == ["lib/r.mockllm", "<posted>"]
    assert "<posted>" in library.sources
    compiled, diags = compile_library(library)
    assert compiled is not None and diags == []


def test_syntax_errors_are_kept_with_sources(cwd: Path) -> None:
    (cwd / "bad.mockllm").write_text('scenario "s":\n    step a:\n        reply:\n            txet "hi"\n')
    compiled, library, diags = load_and_compile(["bad.mockllm"])
    assert compiled is None
    assert diags and diags[0].span.file == "bad.mockllm" and diags[0].span.line == 4
    assert "txet" in render(diags, library.sources)
