"""Source positions carried by every syntax-tree node and every diagnostic."""

from __future__ import annotations

import attrs


@attrs.frozen
class Span:
    """A region of a source file: 1-based line and column, end exclusive."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    @classmethod
    def point(cls, file: str, line: int, column: int, width: int = 1) -> Span:
        return cls(file, line, column, line, column + max(width, 1))

    def location(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


#: The span of nodes that were built in code or loaded from JSON without positions.
NO_SPAN = Span("<built>", 0, 0, 0, 0)
