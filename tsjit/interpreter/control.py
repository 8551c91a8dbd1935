"""The parts of `prim::Loop` / `prim::If` nodes, and the Python loop statement a loop becomes.

A `prim::Loop` is the general "run while i < max_trip_count and cond" construct; most
loops are simpler, and the simplest faithful Python statement runs fastest:
  - WHILE: `while c:` — max_trip_count is INT64_MAX and the iteration counter unused;
  - RANGE: `for i in range(n):` — the entry and continue conditions are constant True;
  - GENERAL: `if c: for i in range(n): ...; if not next_c: break`;
  - SEQUENCE (a GENERAL loop over a list, `sequence_loop`): `for i, v in enumerate(xs):`.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from ..ir.graph import Node, Value
from ..ir.types import IntType, ListType

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


@dataclass(frozen=True)
class SequenceLoop:
    """A loop over a list's elements, as the front end writes `for v in xs:` (index i from
    0 while i < len(xs), re-measured after each iteration, v = xs[i] early in the body).
    Python's `for v in xs:` is the same loop: a list iterator also compares its index with
    the list's current length before each step, so a body that appends or pops sees the
    same iterations; the for statement does in one step what took six operations.  (The
    length may also be measured once before the loop, where CSE found that nothing in the
    loop changes it.)"""

    sequence: Value
    element: Node               # v = xs[i], the body's first node but int additions
    stepping: tuple[Node, ...]  # i + 1, (i + 1) < len(xs) (and len(xs) of the body): the test's


# What may come before the element in the body: nothing that could change the list.
_BEFORE_ELEMENT = ("prim::Constant", "prim::profile", "aten::add")


def sequence_loop(loop: LoopParts) -> SequenceLoop | None:
    """`loop` as a SequenceLoop, when it is one."""
    first, test = loop.initial_cond.node, loop.next_cond.node
    if loop.form is not LoopForm.GENERAL or not is_constant(loop.max_trip_count, INT64_MAX) \
            or first.kind != "aten::lt" or test.kind != "aten::lt" or \
            not is_constant(first.inputs[0], 0) or first.inputs[1].node.kind != "aten::len":
        return None
    sequence = first.inputs[1].node.inputs[0]
    step, length = (v.node for v in test.inputs)
    body = loop.node.blocks[0]
    element = next((n for n in body.nodes if n.kind not in _BEFORE_ELEMENT or (
        n.kind == "aten::add" and any(v.type != IntType for v in n.inputs))),
        None)
    if not isinstance(sequence.type, ListType) or element is None or \
            element.kind != "aten::__getitem__" or \
            list(element.inputs) != [sequence, loop.counter] or \
            step.kind != "aten::add" or list(step.inputs[:1]) != [loop.counter] or \
            not is_constant(step.inputs[1], 1) or length.kind != "aten::len" or \
            list(length.inputs) != [sequence]:
        return None
    stepping = (step, test) + ((length,) if length.block is body else ())
    if any(n.block is not body or len(n.outputs) != 1 or len(n.outputs[0].uses) != 1
           for n in stepping):
        return None
    return SequenceLoop(sequence, element, stepping)
