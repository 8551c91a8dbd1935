"""The lowering rule of each op native scalar code supports, found by op name.

A rule answers three questions about a node:
  - `check(node)`: can any variant of it lower, judging by the IR alone?  The region pass
    asks this (optimistically: a `Tensor` may turn out to be an element or an array).
  - `infer(node, kinds)`: the run-time kinds of its results for these input kinds, or
    `Unsupported`; inference asks this for each variant.
  - `emit(em, node, args, out_kinds)`: the LLVM code, given the inputs' values.
  - `speculate(node, kinds)`: is that code a few instructions without branches, calls,
    memory writes or undefined behaviour for these input kinds?  Then both arms of a
    small `if` may run it and the results be selected (emitter.py), which keeps hot
    loops free of unpredictable branches.
  - `checked(node, kinds)`: is that code so but for the test of its rare case (a NumPy
    scalar operation's overflow, say: python_fallback with precomputed fast values)?
    Then a small `if` of such operations may also run both arms, collecting those tests;
    where one of the taken arm's holds, the `if` runs again as branches (emitter.py).
  - `by_value`: with NumPy scalar operands, does the result depend on each operand only
    through its value in the dtype NumPy computes in (arithmetic, comparisons; not
    `max(a, b)`, which gives one of the operands themselves)?  Then a Tagged operand
    (emitter.py) may be read as its NumPy scalar where that changes nothing.

Rules live in the modules that implement them (python_ops, numpy_ops); importing this
package registers them all.  Structural nodes (prim::If, prim::Loop) are the lowering
core's own business.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...ir.graph import Node
from .ntypes import NType

if TYPE_CHECKING:
    from .emitter import FunctionEmitter
    from .ntypes import NValue

Infer = Callable[[Node, Sequence[NType]], Sequence[NType]]
Emit = Callable[["FunctionEmitter", Node, Sequence["NValue"], Sequence[NType]],
                Sequence["NValue"]]
Check = Callable[[Node], "str | None"]
Speculate = Callable[[Node, Sequence[NType]], bool]


def _always(node: Node) -> None:
    return None


def _never(node: Node, kinds: Sequence[NType]) -> bool:
    return False


def always_speculate(node: Node, kinds: Sequence[NType]) -> bool:
    return True


@dataclass(frozen=True)
class Rule:
    infer: Infer
    emit: Emit
    check: Check = _always
    speculate: Speculate = _never
    by_value: bool = False
    checked: Speculate = _never


RULES: dict[str, Rule] = {}
# Nodes an `if` may have (both arms together) to run both arms and select the results.
SPECULATION_LIMIT = 8


def register_rule(kinds: str | Sequence[str], infer: Infer, emit: Emit,
                  check: Check = _always, speculate: Speculate = _never,
                  by_value: bool = False, checked: Speculate = _never) -> None:
    for kind in [kinds] if isinstance(kinds, str) else kinds:
        assert kind not in RULES, f"two native rules for {kind}"
        RULES[kind] = Rule(infer, emit, check, speculate, by_value, checked)


def rule_for(node: Node) -> Rule | None:
    return RULES.get(node.kind)
