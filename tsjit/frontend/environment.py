"""The emitter's variable environment: one frame per block being emitted.

Python variables become SSA values; where control flow joins (after an `if`,
around a loop) the frames are merged into block outputs.  A frame that has
exited (return, break, continue or raise) no longer contributes its user
variables to the join: the code after the join never sees them.  Early exits
set flag variables (`$ret`, `$brk1`, ...), which are merged like any other.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.graph import Block, SourceRange, Value
from .errors import CompilationError

RAISED = "raise"        # Frame.exited after a raise: no value flows on
FLAGGED = "flag"        # after return/break/continue: flags and $retval flow on


def is_synthetic(name: str) -> bool:
    """Variables the front end invents for early exits ($ret, $retval, $brk1, ...)."""
    return name.startswith("$")


@dataclass
class Binding:
    value: object                      # Value or Sugared; None when undefined here
    source: SourceRange | None
    refinement: bool = False           # a narrowed type from a condition, not an assignment
    error: tuple | None = None         # (message, related (note, range) pairs) when undefined


@dataclass
class Frame:
    block: Block
    parent: Frame | None = None
    vars: dict[str, Binding] = field(default_factory=dict)
    exited: str | None = None          # None, FLAGGED or RAISED

    def lookup(self, name: str) -> Binding | None:
        frame = self
        while frame is not None:
            found = frame.vars.get(name)
            if found is not None:
                return found
            frame = frame.parent
        return None

    def value_of(self, name: str, use: SourceRange) -> object:
        found = self.lookup(name)
        if found is None:
            return None
        if found.value is None:
            message, related = found.error
            raise CompilationError(message, use, *related)
        return found.value

    def assign(self, name: str, value: object, source: SourceRange | None,
               refinement: bool = False) -> None:
        self.vars[name] = Binding(value, source, refinement)

    def assigned_names(self) -> list[str]:
        """Names (re)bound in this frame by assignments (refinements excluded)."""
        return [n for n, b in self.vars.items() if not b.refinement]


def undefined(message: str, use_hint: SourceRange | None, *related) -> Binding:
    return Binding(None, use_hint, error=(message, related))


def is_value(x: object) -> bool:
    return isinstance(x, Value)
