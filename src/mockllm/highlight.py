"""A Pygments lexer for ``.mockllm`` scripts, registered through the ``pygments.lexers`` entry point.

With mockllm installed, any Pygments user -- the docs site's code blocks, ``pygmentize``, a wiki --
highlights ```mockllm blocks. The words come from :mod:`mockllm.dsl.tree.reference`, so a keyword added to
the language is coloured once it has reference text. Highlighting is lenient: a half-written or
broken script (the docs show some on purpose) still gets colours, never error tokens.
"""

from __future__ import annotations

from typing import Any

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

from mockllm.dsl.tree import reference

NAME = r"[A-Za-z_][A-Za-z0-9_-]*"
_END = r"(?![A-Za-z0-9_-])"

_STATEMENT_WORDS = reference.vocabulary(reference.STATEMENTS) | reference.CONNECTORS | {"any"}
_SUBJECT_WORDS = reference.vocabulary(reference.SUBJECTS) - _STATEMENT_WORDS | {"user", "assistant", "system", "tool"}
_PREDICATE_WORDS = reference.vocabulary((*reference.PREDICATES.values(), reference.IGNORING_CASE)) - _STATEMENT_WORDS
_CONSTANTS = reference.vocabulary(reference.VALUES) - _STATEMENT_WORDS - _SUBJECT_WORDS


def _groups(*tokens: Any) -> Any:
    """Pygments' ``bygroups`` (untyped in its stubs)."""
    return bygroups(*tokens)  # type: ignore[no-untyped-call]


class MockllmLexer(RegexLexer):
    name = "mockllm"
    aliases = ["mockllm", "mockllm-error"]
    filenames = ["*.mockllm"]
    mimetypes = ["text/x-mockllm"]

    tokens = {
        "root": [
            (r"[ \t]+", Whitespace),
            (r"\r?\n", Whitespace),
            (r"#.*?$", Comment.Single),
            (r'"""', String.Doc, "long-string"),
            (r'"', String.Double, "string"),
            (r"/(?:[^/\\\n]|\\.)*/[A-Za-z]*", String.Regex),
            # names defined or referred to right after a keyword
            (
                rf"(step|reply)([ \t]+)({NAME})([ \t]*)(:)",
                _groups(Keyword, Whitespace, Name.Function, Whitespace, Punctuation),
            ),
            (
                rf"(like)([ \t]+)({NAME})(\.)({NAME})",
                _groups(Keyword, Whitespace, Name.Namespace, Punctuation, Name.Function),
            ),
            (rf"(like|after)([ \t]+)({NAME})", _groups(Keyword, Whitespace, Name.Function)),
            (rf"(as)([ \t]+)({NAME})", _groups(Keyword, Whitespace, Name.Namespace)),
            (rf"(capture|let)([ \t]+)({NAME})", _groups(Keyword, Whitespace, Name.Variable)),
            (rf"(call)([ \t]+)({NAME})", _groups(Keyword, Whitespace, Name.Function)),
            (r"[0-9]+(?:\.[0-9]+)?(?:ms|s)" + _END, Number.Float),
            (r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?" + _END, Number),
            (r"[0-9]+", Number),
            (words(sorted(_CONSTANTS), suffix=_END), Keyword.Constant),
            (words(sorted(_STATEMENT_WORDS), suffix=_END), Keyword),
            (words(sorted(_SUBJECT_WORDS), suffix=_END), Name.Builtin),
            (words(sorted(_PREDICATE_WORDS), suffix=_END), Operator.Word),
            (NAME, Name),
            (r"[{}\[\]:,.]", Punctuation),
            (r"[=!<>*+\-]+", Operator),
            (r"[^\s\"#/A-Za-z0-9_{}\[\]:,.=!<>*+\-]+", Text),  # anything else a draft may hold (`?`, `;`, …)
        ],
        "string": [
            (r'\{\{[^}"\n]*\}\}', String.Interpol),
            (r"\\.", String.Escape),
            (r'"', String.Double, "#pop"),
            (r"\n", String.Double, "#pop"),  # an unclosed string ends with its line
            (r'[^"\\{\n]+', String.Double),
            (r"[{\\]", String.Double),
        ],
        "long-string": [
            (r'"""', String.Doc, "#pop"),
            (r'\{\{[^}"\n]*\}\}', String.Interpol),
            (r"\\.", String.Escape),
            (r'[^"\\{]+', String.Doc),
            (r'["{\\]', String.Doc),
        ],
    }
