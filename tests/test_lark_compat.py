"""The Lark internals the fast parser drives (dsl/parse/lark_compat.py) are there, and a Lark release
that changed them fails here with a message saying what changed and what to do."""

from __future__ import annotations

import types

import lark
import pytest

from mockllm.dsl.parse import lark_compat
from mockllm.dsl.parse.parser import build_parser
from mockllm.errors import LarkChanged, MockllmError


def test_this_lark_has_what_the_fast_parser_drives() -> None:
    try:
        lark_compat.check(build_parser())
    except LarkChanged as exc:
        pytest.fail(str(exc))


def _without_parse_table(parser: lark.Lark) -> object:
    frontend = types.SimpleNamespace(lexer=parser.parser.lexer, parser=object())
    return types.SimpleNamespace(parser=frontend, rules=parser.rules, options=parser.options)


def test_a_changed_lark_is_named_in_one_clear_error() -> None:
    with pytest.raises(LarkChanged) as info:
        lark_compat.check(_without_parse_table(build_parser()))  # type: ignore[arg-type]
    message = str(info.value)
    assert isinstance(info.value, MockllmError)
    assert f"Lark {lark.__version__} changed it" in message
    assert "`_parse_table`" in message
    assert "Install the Lark that pyproject.toml allows" in message and "\n" not in message


def test_a_changed_signature_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def init(self: object, table: object) -> None: ...

    monkeypatch.setattr(lark_compat.LalrParser, "__init__", init)
    with pytest.raises(LarkChanged, match=r"_Parser.__init__ takes \(table\), not \(parse_table, callbacks\)"):
        lark_compat.check(build_parser())
