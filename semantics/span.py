"""Source spans: where a node or an error came from.

A :class:`Span` names a source (file name or ``"<string>"``) and a 1-based,
inclusive-start / exclusive-end region in it. It also keeps a reference to
the :class:`Source` text so an error can show the offending line with a caret
without any global registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, eq=False)
class Source:
    """A named piece of program text. Shared by every span cut from it."""

    name: str
    text: str

    def line_text(self, line: int) -> str:
        """Return the 1-based ``line`` of the text without its newline ('' if out of range)."""
        lines = self.text.splitlines()
        if 1 <= line <= len(lines):
            return lines[line - 1]
        return ""


@dataclass(frozen=True, slots=True)
class Span:
    """A region ``line:column`` .. ``end_line:end_column`` (1-based) of ``source``."""

    source: str
    line: int
    column: int
    end_line: int
    end_column: int
    text: Source | None = field(default=None, compare=False, hash=False)

    def merge(self, other: Span | None) -> Span:
        """The smallest span covering ``self`` and ``other`` (same source assumed)."""
        if other is None:
            return self
        start = min((self.line, self.column), (other.line, other.column))
        end = max((self.end_line, self.end_column), (other.end_line, other.end_column))
        return Span(self.source, start[0], start[1], end[0], end[1], self.text or other.text)

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"

    def __repr__(self) -> str:
        return f"Span({self.source}:{self.line}:{self.column}-{self.end_line}:{self.end_column})"
