"""Where generated code deletes variables, so that a dead array is freed at its last use.

A Python local keeps its object alive until the function returns; a chain of large
temporaries would then hold all of them at once.  Each value that may hold a large object
(anything but numbers, bools, None, strings, dtypes and enum members) gets a `del` right
after its last use, placed by structure:
  - used by a later node of its own block: after that node;
  - used last inside an If's branches: inside each branch, after the last use there (at
    the branch start for a branch that does not use it);
  - used inside a loop body it is defined outside of: after the loop (every iteration
    reads it); used only as a carried loop input: before the loop starts;
  - used as a block result: after the block's result assignment.
No `del` where the variable is overwritten at that very point (a coalesced loop variable).
"""
from __future__ import annotations

from collections import defaultdict

from ..ir.graph import Block, Graph, Node, Value
from ..ir.types import (
    BoolType,
    DTypeType,
    EnumType,
    FloatType,
    IntType,
    NoneType,
    OptionalType,
    StrType,
    Type,
)
from .control import LoopParts
from .liveness import Liveness
from .variables import Variables

_SMALL = (IntType, FloatType, BoolType, NoneType, StrType, DTypeType)


def may_hold_large_object(t: Type) -> bool:
    if isinstance(t, OptionalType):
        return may_hold_large_object(t.elem)
    return t not in _SMALL and not isinstance(t, EnumType)


def _top_user(user: Node, block: Block) -> Node:
    """The node of `block` that is or contains `user` (the return node for results)."""
    while user.block is not block:
        user = user.block.owner
    return user


class Releases:
    """Variables to delete: after a node, before a loop, at a block's start or end."""

    def __init__(self, graph: Graph, liveness: Liveness, variables: Variables):
        self._liveness = liveness
        self._vars = variables
        self.after: dict[Node, list[str]] = defaultdict(list)
        self.before_loop: dict[Node, list[str]] = defaultdict(list)
        self.at_start: dict[Block, list[str]] = defaultdict(list)
        self.at_end: dict[Block, list[str]] = defaultdict(list)
        for value in liveness.defined:
            if may_hold_large_object(value.type) and value in variables and not (
                    _is_loop_counter(value) and not value.uses):   # never assigned
                self._place(value, value.node.block, [user for user, _ in value.uses])

    def _place(self, value: Value, block: Block, users: list[Node]) -> None:
        """Delete `value` after its last use among `users` (all inside `block`)."""
        name = self._vars[value]
        if not users:    # unused: in a branch that does not read it, or at all
            if value.node.block is block and value.node is not block.param_node:
                self.after[value.node].append(name)
            else:
                self.at_start[block].append(name)
            return
        last = max((_top_user(u, block) for u in users), key=self._liveness.use_position)
        inside = [u for u in users if u is not last and _top_user(u, block) is last]
        if last is block.return_node:
            if block.owner is not None and name not in self._result_names(block.owner):
                self.at_end[block].append(name)
        elif last.kind == "prim::If" and inside:
            for branch in last.blocks:
                self._place(value, branch, [u for u in inside if _is_within(u, branch)])
        elif last.kind == "prim::Loop" and not inside and value not in last.inputs[:2]:
            if name not in self._param_names(last):
                self.before_loop[last].append(name)
        elif name not in self._output_names(last):
            self.after[last].append(name)

    def _output_names(self, node: Node) -> set[str]:
        return {self._vars[v] for v in node.outputs}

    def _param_names(self, loop: Node) -> set[str]:
        return {self._vars[v] for v in LoopParts(loop).params}

    def _result_names(self, owner: Node) -> set[str]:
        """Variables the end of `owner`'s blocks writes or reads after its result assignment
        (a loop's next condition is tested after it)."""
        if owner.kind == "prim::If":
            return self._output_names(owner)
        cond = LoopParts(owner).next_cond
        return self._param_names(owner) | ({self._vars[cond]} if cond in self._vars else set())


def _is_loop_counter(value: Value) -> bool:
    owner = value.node.block.owner
    return (value.node is value.node.block.param_node and owner is not None
            and owner.kind == "prim::Loop" and value.index == 0)


def _is_within(user: Node, block: Block) -> bool:
    """Whether `user` is in `block` or in a block nested in it."""
    b = user.block
    while b is not block:
        if b.owner is None:
            return False
        b = b.owner.block
    return True
