"""Compile-time errors that point at the user's source."""
from __future__ import annotations

from ..ir.graph import SourceRange


class CompilationError(RuntimeError):
    """An invalid script program; the message marks the source `~~~~ <--- HERE`."""

    def __init__(self, message: str, source: SourceRange | None = None,
                 *related: tuple[str, SourceRange | None]):
        self.reason = message
        self.source = source
        self.related = list(related)
        super().__init__(self._render())

    def add_context(self, note: str, where: SourceRange) -> None:
        """Show how the failing code was reached (the call that had it compiled)."""
        self.related.append((note, where))
        self.args = (self._render(),)

    def _render(self) -> str:
        parts = [self.reason]
        if self.source is not None:
            parts.append(self.source.highlight())
        for note, where in self.related:
            parts.append(note)
            if where is not None:
                parts.append(where.highlight())
        return "\n".join(parts)
