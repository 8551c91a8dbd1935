"""Compile-time errors that point at the user's source."""
from __future__ import annotations

from ..ir.graph import SourceRange


class CompilationError(RuntimeError):
    """An invalid script program; the message marks the source `~~~~ <--- HERE`."""

    def __init__(self, message: str, source: SourceRange | None = None,
                 *related: tuple[str, SourceRange]):
        parts = [message]
        if source is not None:
            parts.append(source.highlight())
        for note, where in related:
            parts.append(note)
            parts.append(where.highlight())
        super().__init__("\n".join(parts))
        self.reason = message
        self.source = source
