"""Python local variables for SSA values.

Values joined by control flow — a loop's initial, per-iteration, next and final carried
values; an If's branch results and its outputs — share one variable when their live ranges
allow it, so the generated code needs no copies for them (`x = x + 1` in a loop body, not
`x_2 = x_1 + 1; x_1 = x_2`).  Names come from the source's variable names (`x`, `x_1`, ...)
so that `.code` reads like the program; constants get no variable (they are inlined).
"""
from __future__ import annotations

import builtins
import keyword
import unicodedata
from collections.abc import Callable

from ..ir.graph import Graph, Node, Value
from .control import LoopForm, LoopParts, is_constant
from .helpers import RESERVED_NAMES
from .liveness import Liveness
from .rendering import BOUND_NAME

# Globals the code generator itself refers to in a generated function.
CODEGEN_GLOBALS = frozenset({"_locate", "_SOURCES"})
# `_` is a builtin only in an interactive session; it stays free for unused loop counters.
_TAKEN_BY_PYTHON = (frozenset(dir(builtins)) - {"_"}) | frozenset(keyword.kwlist)


def _phi_pairs(node: Node) -> list[tuple[Value, Value]]:
    """The value pairs a control-flow node copies between (to coalesce, if possible)."""
    if node.kind == "prim::If":
        return [(out, b.outputs[k]) for k, out in enumerate(node.outputs) for b in node.blocks]
    loop = LoopParts(node)
    pairs = []
    if loop.form is LoopForm.WHILE and not is_constant(loop.initial_cond, True):
        pairs.append((loop.initial_cond, loop.next_cond))
    for out, param, nxt, init in zip(node.outputs, loop.params, loop.carried_next, loop.initial):
        pairs += [(out, param), (param, nxt), (param, init)]
    return pairs


def python_name(name: str) -> str:
    """`name` with each character Python would not keep as it is in an identifier made
    `_` (`x.1` -> `x_1`; NFKC-changed characters too, so two names never alias)."""
    return "".join(c if ("_" + c).isidentifier() and unicodedata.normalize("NFKC", c) == c
                   else "_" for c in name)


class Variables:
    """The variable of each non-inlined value; `fresh()` names helper variables."""

    def __init__(self, graph: Graph, liveness: Liveness, inlined: Callable[[Value], bool]):
        self._liveness = liveness
        self._inlined = inlined
        self._class: dict[Value, list[Value]] = {v: [v] for v in liveness.defined
                                                 if not inlined(v)}
        self._coalesce(graph.block.walk())
        self._taken: set[str] = set()
        self._unnamed = 0
        self._name: dict[int, str] = {}
        for members in sorted({id(c): c for c in self._class.values()}.values(),
                              key=lambda c: min(map(liveness.defined.__getitem__, c))):
            self._name[id(members)] = self._name_class(members)

    def _coalesce(self, nodes) -> None:
        """Merge phi-related classes, innermost control flow first (it runs most often)."""
        control = [n for n in nodes if n.kind in ("prim::If", "prim::Loop")]
        for node in reversed(control):
            for a, b in _phi_pairs(node):
                if a in self._class and b in self._class:
                    self._merge(self._class[a], self._class[b])

    def _merge(self, ca: list[Value], cb: list[Value]) -> None:
        if ca is cb or any(self._liveness.interferes(a, b) for a in ca for b in cb):
            return
        ca.extend(cb)
        for v in cb:
            self._class[v] = ca

    def _name_class(self, members: list[Value]) -> str:
        ordered = sorted(members, key=self._liveness.defined.__getitem__)
        base = next((v.name for v in ordered if v.name), None)
        if base is None:
            while f"_{self._unnamed}" in self._taken:
                self._unnamed += 1
            base = f"_{self._unnamed}"
        return self.fresh(python_name(base))

    def fresh(self, base: str) -> str:
        """A variable name no other variable, builtin or global of generated code uses."""
        if base[0].isdigit():
            base = "_" + base
        name, k = base, 0
        while (name in self._taken or name in _TAKEN_BY_PYTHON or name in RESERVED_NAMES
               or name in CODEGEN_GLOBALS or BOUND_NAME.fullmatch(name)):
            k += 1
            name = f"{base}_{k}"
        self._taken.add(name)
        return name

    def __getitem__(self, value: Value) -> str:
        return self._name[id(self._class[value])]

    def __contains__(self, value: Value) -> bool:
        """Whether `value` has a variable (constants are inlined instead)."""
        return value in self._class

    def members(self, value: Value) -> list[Value]:
        """The values sharing `value`'s variable."""
        return self._class[value]
