"""The parts of `prim::Loop` / `prim::If` nodes, and the Python loop statement a loop becomes.

A `prim::Loop` is the general "run while i < max_trip_count and cond" construct; most
loops are simpler, and the simplest faithful Python statement runs fastest:
  - WHILE: `while c:` — max_trip_count is INT64_MAX and the iteration counter unused;
  - RANGE: `for i in range(n):` — the entry and continue conditions are constant True;
  - GENERAL: `if c: for i in range(n): ...; if not next_c: break`.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from ..ir.graph import Node, Value

INT64_MAX = 9223372036854775807


def constant_of(value: Value) -> tuple[bool, object]:
    """(True, v) when `value` is a prim::Constant of v, else (False, None)."""
    node = value.node
    if node.kind == "prim::Constant":
        return True, node.attrs["value"]
    return False, None


def is_constant(value: Value, expected: object) -> bool:
    """Whether `value` is a constant equal to `expected` and of the very same Python type."""
    known, v = constant_of(value)
    return known and type(v) is type(expected) and v == expected


class LoopForm(enum.Enum):
    WHILE = "while"
    RANGE = "range"
    GENERAL = "general"


@dataclass(frozen=True)
class LoopParts:
    """A prim::Loop's values by role."""

    node: Node

    @property
    def max_trip_count(self) -> Value:
        return self.node.inputs[0]

    @property
    def initial_cond(self) -> Value:
        return self.node.inputs[1]

    @property
    def initial(self) -> list[Value]:
        return self.node.inputs[2:]

    @property
    def counter(self) -> Value:
        return self.node.blocks[0].params[0]

    @property
    def params(self) -> list[Value]:
        return self.node.blocks[0].params[1:]

    @property
    def next_cond(self) -> Value:
        return self.node.blocks[0].outputs[0]

    @property
    def carried_next(self) -> list[Value]:
        return self.node.blocks[0].outputs[1:]

    @property
    def form(self) -> LoopForm:
        if is_constant(self.initial_cond, True) and is_constant(self.next_cond, True):
            return LoopForm.RANGE
        if is_constant(self.max_trip_count, INT64_MAX) and not self.counter.uses:
            return LoopForm.WHILE
        return LoopForm.GENERAL
