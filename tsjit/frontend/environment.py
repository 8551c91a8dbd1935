"""The emitter's variable environment: one frame per block being emitted.

Python variables become SSA values; where control flow joins (after an `if`,
around a loop) the frames are merged into block outputs.  A frame that has
exited stops emitting; what flows out of it depends on how it exited: after a
`break`/`continue` every variable flows on (to the loop's exit or next
iteration), after a `return` only the front end's own variables do (`$ret`,
`$retval`: the function's result), after a `raise` nothing does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.graph import Block, SourceRange, Value
from .errors import CompilationError

RAISED = "raise"        # Frame.exited after a raise: no value flows on
RETURNED = "return"     # after a return: only synthetic variables flow on
BROKE = "break"         # after break/continue: every variable flows on
EXIT_STRENGTH = {BROKE: 0, RETURNED: 1, RAISED: 2}   # the weakest exit wins at a join


def is_synthetic(name: str) -> bool:
    """Variables the front end invents for early exits ($ret, $retval, $brk1, ...)."""
    return name.startswith("$")


def debug_name(name: str) -> str | None:
    """The name a variable gives its values in the graph text: none for the front end's
    own variables ($brk1, $any2) and renamed comprehension targets (x'1), which the IR
    text does not spell."""
    return None if is_synthetic(name) or "'" in name else name


@dataclass
class Binding:
    value: object                      # Value or Sugared; None when undefined here
    source: SourceRange | None
    refinement: bool = False           # a narrowed type from a condition, not an assignment
    error: tuple | None = None         # (message, related (note, range) pairs) when undefined
    # when undefined: its value on the paths that define it (other paths give an
    # Uninitialized), for a condition whose true (or false) side always defines it
    partial: object = None


@dataclass
class Frame:
    block: Block
    parent: Frame | None = None
    vars: dict[str, Binding] = field(default_factory=dict)
    exited: str | None = None          # None, BROKE, RETURNED or RAISED
    carried: frozenset[str] = frozenset()   # in a loop body: the variables the loop carries

    def lookup(self, name: str) -> Binding | None:
        frame = self
        while frame is not None:
            found = frame.vars.get(name)
            if found is not None:
                return found
            frame = frame.parent
        return None

    def carries(self, name: str) -> bool:
        """Whether an enclosing loop carries `name` (its type may widen to a NumPy value)."""
        frame = self
        while frame is not None:
            if name in frame.carried:
                return True
            frame = frame.parent
        return False

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

    def flows(self, name: str) -> bool:
        """Whether this frame's binding of `name` reaches the code after a join."""
        if self.exited is None or self.exited == BROKE:
            return True
        return self.exited == RETURNED and is_synthetic(name)


def undefined(message: str, use_hint: SourceRange | None, *related) -> Binding:
    return Binding(None, use_hint, error=(message, related))


def is_value(x: object) -> bool:
    return isinstance(x, Value)
