"""Every exception mockllm raises, under one base: :class:`MockllmError`.

Most problems are not exceptions at all: a broken script becomes :class:`~mockllm.dsl.diagnostics.Diagnostic`
values (rendered by one renderer), a broken request becomes an error response in the provider's own
shape. The classes here are the few places where raising is the right tool -- at the edges (the CLI,
the Python API, a server that will not start) and inside a stage, where an exception carries a problem
up to the code that turns it into data (a syntax mistake into a diagnostic, a rejected request into
an error response).

``except mockllm.MockllmError`` catches anything mockllm raised on purpose; anything else is a bug.
The CLI exits with the class's :attr:`~MockllmError.exit_code` and prints the message on one line.

This module imports nothing of mockllm (the renderer only when a :class:`DiagnosticsError` is built),
so every stage may import it.
(:class:`~mockllm.dsl.parse.parser.ScriptIndentError` lives beside Lark, whose error class it must
also extend.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from mockllm.dsl.diagnostics import Diagnostic
    from mockllm.dsl.span import Span

__all__ = [
    "BuilderError",
    "DiagnosticsError",
    "EscapeError",
    "ExplainError",
    "FileError",
    "LarkChanged",
    "MockllmError",
    "NoValue",
    "ProviderError",
    "RegexTimeout",
    "ScriptSyntaxError",
    "ServerError",
    "StateUnavailable",
    "TemplateError",
    "UsageError",
]


class MockllmError(Exception):
    """The base of every exception mockllm raises on purpose."""

    #: what ``mockllm`` exits with when this error ends a command (2: the command was misused)
    exit_code: ClassVar[int] = 1


# ---------------------------------------------------------------------------------------------------------
# At the edges: the CLI, the Python API, the server


class UsageError(MockllmError):
    """A mistake in how a command was called: one line on stderr, exit 2."""

    exit_code = 2


class FileError(MockllmError):
    """A file that cannot be read: one line on stderr, exit 1."""


class ExplainError(MockllmError):
    """A problem with the input of ``mockllm explain`` (the request file), said in one line."""


class DiagnosticsError(MockllmError):
    """Raised by convenience APIs (``mockllm.load``) when a library has errors; carries them all."""

    def __init__(self, diagnostics: Sequence[Diagnostic], sources: Mapping[str, str] | None = None):
        from mockllm.dsl.diagnostics import render

        self.diagnostics = tuple(diagnostics)
        self.sources = dict(sources or {})
        super().__init__(render(self.diagnostics, self.sources))


class BuilderError(MockllmError, ValueError):
    """A builder call that cannot become a valid script (a bad name, a step method before any step…)."""


class ServerError(MockllmError, RuntimeError):
    """A server that does not run: it did not start, it is not started, or its admin API refused."""


class StateUnavailable(MockllmError):
    """The shared state store (``--state redis://…``) cannot be reached or keeps conflicting: the
    request gets a 503 in its provider's shape, the admin API a 503, with this one-line message."""


# ---------------------------------------------------------------------------------------------------------
# Inside a stage: carried up to the code that turns the problem into data


class ScriptSyntaxError(MockllmError):
    """A mistake found while building the syntax tree; becomes one diagnostic."""

    def __init__(self, span: Span, message: str, hint: str | None = None, code: str = "syntax"):
        super().__init__(message)
        self.span = span
        self.message = message
        self.hint = hint
        self.code = code


class EscapeError(MockllmError, ValueError):
    """A bad escape in a string literal, at ``offset`` (``width`` characters) inside the literal."""

    def __init__(self, offset: int, width: int, message: str, hint: str):
        super().__init__(message)
        self.offset = offset
        self.width = width
        self.message = message
        self.hint = hint


class TemplateError(MockllmError, ValueError):
    """A malformed ``{{…}}`` template."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset  # character offset in the string where the problem is


class RegexTimeout(MockllmError):
    """A regex search ran past its time bound (``runtime/timed_regex.py``). ``where`` names the
    step once the engine knows it; the engine turns it into an error answer for that one request."""

    def __init__(self, pattern: str, where: str = "", limit_ms: float = 0.0) -> None:
        super().__init__(pattern)
        self.pattern = pattern
        self.where = where
        self.limit_ms = limit_ms

    def at(self, where: str) -> RegexTimeout:
        return self if self.where else RegexTimeout(self.pattern, where, self.limit_ms)

    def message(self) -> str:
        where = f" of {self.where}" if self.where else ""
        return (
            f"mockllm: regex timed out: /{self.pattern}/{where} ran for more than {self.limit_ms:.0f} ms "
            "on this request and was stopped (a nested quantifier such as `(a+)+` backtracks without end); "
            "simplify the pattern (`mockllm check` warns about such patterns)"
        )


class ProviderError(MockllmError):
    """A request the real API would reject. The server renders it with ``adapter.render_error``."""

    def __init__(self, status: int, message: str, code: str | None = None, param: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param


class LarkChanged(MockllmError):
    """The installed Lark lacks an internal the fast parser drives (:mod:`mockllm.dsl.parse.lark_compat`)."""


class NoValue(MockllmError):
    """The echo responder's schema generator cannot build a value here (a ``false`` schema, or
    recursion cut off): a signal it catches to try something else, never seen outside it."""
