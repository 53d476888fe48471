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
        """``file:line:column``; just the file for a node without a position (read from the JSON form,
        or built in code), never a misleading ``file:0:0``."""
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.column}"

    @classmethod
    def parse_location(cls, location: str) -> Span:
        """The point a ``file:line:column`` text names (what :meth:`location` wrote); a text without
        line and column is a file with no position."""
        file, _, rest = location.rpartition(":")
        head, _, line = file.rpartition(":")
        if head and line.isdigit() and rest.isdigit():
            return cls.point(head, int(line), int(rest))
        return cls(location, 0, 0, 0, 0)


#: The span of nodes that were built in code or loaded from JSON without positions.
NO_SPAN = Span("<built>", 0, 0, 0, 0)
