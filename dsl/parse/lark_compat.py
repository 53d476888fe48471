"""Every part of Lark below its public API that the parser uses, in one place.

Lark either builds a parse tree and transforms it afterwards, or transforms while parsing but then
refuses to track positions. :mod:`mockllm.dsl.parse.parser` wants both speed and spans, so it runs
Lark's LALR automaton itself with the transformer's methods as the reduce callbacks (about twice as
fast as parse-then-transform). That takes five things Lark does not promise to keep: the frontend's
lexer and post-lexer, the LALR parse table, the parse-tree builder's callbacks, the LALR parser class,
and the lexer thread started at a given line. They are all here, and :func:`check` -- run once,
before the fast path is built, and by ``tests/test_lark_compat.py`` -- turns a Lark release that
changed them into one clear error instead of an ``AttributeError`` deep in a parse.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import lark
from lark import Lark, Tree
from lark.lexer import Lexer, LexerState, LexerThread, LineCounter
from lark.parse_tree_builder import ParseTreeBuilder
from lark.parser_frontends import PostLexConnector
from lark.parsers.lalr_parser import _Parser as LalrParser
from lark.utils import TextSlice

from mockllm.errors import LarkChanged

__all__ = [
    "LalrParser",
    "LarkChanged",
    "check",
    "lexer_and_postlexer",
    "lexer_thread",
    "parse_table",
    "parse_with_tree",
    "reduce_callbacks",
    "tree_builder",
]


def lexer_and_postlexer(parser: Lark) -> tuple[Lexer, Any]:
    """The contextual lexer and the post-lexer (the indenter) of a parser built with ``postlex``."""
    connector = parser.parser.lexer
    if not isinstance(connector, PostLexConnector):
        raise LarkChanged(_changed(f"the frontend's lexer is a {type(connector).__name__}, not a PostLexConnector"))
    return connector.lexer, connector.postlexer


def parse_table(parser: Lark) -> Any:
    """The LALR parse table (states and start states) of a built parser."""
    return parser.parser.parser._parse_table


def tree_builder(parser: Lark) -> ParseTreeBuilder:
    """The builder whose callbacks shape each rule's children as the tree-building parser would."""
    return ParseTreeBuilder(parser.rules, Tree, False, False, parser.options.maybe_placeholders)  # type: ignore[no-untyped-call]


def reduce_callbacks(builder: ParseTreeBuilder, transformer: object) -> dict[Any, Callable[..., Any]]:
    """One callback per grammar rule, calling ``transformer``'s method of the rule's name."""
    callbacks: dict[Any, Callable[..., Any]] = builder.create_callback(transformer)  # type: ignore[no-untyped-call]
    return callbacks


def lexer_thread(lexer: Lexer, text: str, first_line: int) -> LexerThread:
    """Lexing ``text`` as if it began on line ``first_line`` (a block of a file, read on its own)."""
    if first_line == 1:
        return LexerThread.from_text(lexer, text)
    counter = LineCounter("\n")  # type: ignore[no-untyped-call]
    counter.line = first_line
    return LexerThread(lexer, LexerState(TextSlice.cast_from(text), counter))


def parse_with_tree(parser: Lark, text: str, first_line: int) -> Any:
    """Parse ``text`` with the tree-building parser, starting at line ``first_line``."""
    frontend = parser.parser
    return frontend.parser.parse(lexer_thread(frontend.lexer, text, first_line), parser.options.start[0])


def check(parser: Lark) -> None:
    """Raise :class:`LarkChanged`, naming every missing piece, when this Lark lacks what the fast
    parser uses."""
    problems: list[str] = []
    try:
        lexer_and_postlexer(parser)
    except LarkChanged as exc:
        problems.append(exc.args[0].split(": ", 1)[1])
    except AttributeError as exc:
        problems.append(f"the frontend has no lexer ({exc})")
    try:
        table = parse_table(parser)
        for name in ("states", "start_states", "end_states"):
            if not hasattr(table, name):
                problems.append(f"the LALR parse table has no `{name}`")
    except AttributeError as exc:
        problems.append(f"the frontend's LALR parser has no `_parse_table` ({exc})")
    for owner, name, params in (
        (LalrParser, "__init__", ("parse_table", "callbacks")),
        (LalrParser, "parse", ("lexer", "start")),
        (ParseTreeBuilder, "__init__", ("rules", "tree_class", "propagate_positions", "ambiguous")),
        (ParseTreeBuilder, "create_callback", ("transformer",)),
        (LexerThread, "__init__", ("lexer", "lexer_state")),
    ):
        have = _parameters(owner, name)
        if have is None:
            problems.append(f"{owner.__name__}.{name} is gone")
        elif have[: len(params)] != params:
            problems.append(f"{owner.__name__}.{name} takes ({', '.join(have)}), not ({', '.join(params)})")
    if not hasattr(LexerThread, "from_text"):
        problems.append("LexerThread.from_text is gone")
    if problems:
        raise LarkChanged(_changed("; ".join(problems)))


def _parameters(owner: type, name: str) -> tuple[str, ...] | None:
    function = getattr(owner, name, None)
    if function is None:
        return None
    names = [p for p in inspect.signature(function).parameters if p != "self"]
    return tuple(names)


def _changed(what: str) -> str:
    return (
        f"mockllm's parser drives Lark's LALR parser below its public API, and Lark {lark.__version__} "
        f"changed it: {what}. Install the Lark that pyproject.toml allows, or update "
        "dsl/parse/lark_compat.py."
    )
