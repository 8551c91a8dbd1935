"""Peephole rewrites: local rules that replace one node by something cheaper where the
operand types prove the result unchanged (same Python type, same value, and no new
aliasing between a result and an operand).

A rule is a function that looks at one node and returns whether it rewrote it;
RULES lists them, and the pass sweeps the graph until none fires.  Identities
against None (`x is None` for an int x) are decided by constant propagation.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.graph import Graph, Node, Value, clone_node, constant_value
from ..ir.types import BoolType, StrType, TensorType, Type

Rule = Callable[[Node], bool]

MAX_SWEEPS = 8      # each sweep fires every rule that applies; more are rarely needed


def peephole(graph: Graph) -> None:
    """Apply RULES to every node of `graph` until none fires (at most MAX_SWEEPS times)."""
    for _ in range(MAX_SWEEPS):
        fired = False
        for node in graph.nodes():
            # node.block is None once an earlier rewrite in this sweep removed the node
            if node.block is not None and any(rule(node) for rule in RULES):
                fired = True
        if not fired:
            return


def power_to_multiplication(node: Node) -> bool:
    """`x ** 2` -> `x * x` and `x ** 3` -> `x * x * x`: NumPy's `x ** 3` is ~50x slower than
    the multiplications. Not float32 `x ** 3`, whose multiplications overflow where pow's
    result is finite (the fuser computes it in float64 instead, elementwise_kernel).

    Only where the result keeps its type and value: an ndarray of a known integer dtype
    (both wrap alike; NumPy integer *scalars* warn on overflow in `*` but not in `**`,
    which is also why an `int` is left alone: it may hold one, as arguments pass
    unchanged, and np.uint8(200) ** 2 warned); a NumPy value of a known float dtype,
    where `x ** 2` is
    NumPy's square (bit for bit on arrays) and the rest differ by at most 2 ulp, as pow
    may under the contract (4 ulp for transcendental functions).  Not bool (NumPy's
    bool ** 2 is int8) and not a Python float (CPython's float ** 2 is libm's pow:
    other rounding, and OverflowError where `x * x` gives inf).
    """
    if node.kind != "aten::pow":
        return False
    base, exponent = node.inputs
    power = _small_power(base.type, constant_value(exponent))
    if power is None:
        return False
    result_type = node.output.type
    product = _insert_mul(base, base, result_type, node)
    if power == 3:
        product = _insert_mul(product, base, result_type, node)
    product.name = node.output.name
    node.output.replace_all_uses_with(product)
    node.destroy()
    return True


def _small_power(base: Type, exponent: object) -> int | None:
    kind = np.dtype(base.dtype).kind if isinstance(base, TensorType) and base.dtype else None
    if kind == "f" and np.dtype(base.dtype) == np.float32 and exponent == 3:
        return None   # float32 x*x*x overflows where pow's x**3 is the finite largest float
    if type(exponent) is int and exponent in (2, 3) and (
            kind == "f" or (kind in ("i", "u") and base.ndarray)):
        return exponent
    if type(exponent) is float and exponent in (2.0, 3.0) and kind == "f":
        return int(exponent)      # a weak Python float keeps the float dtype
    return None


def _insert_mul(a: Value, b: Value, result_type: Type, before: Node) -> Value:
    mul = Node("aten::mul", source=before.source)
    mul.add_input(a)
    mul.add_input(b)
    mul.add_output(result_type)
    mul.insert_before(before)
    return mul.output


def arithmetic_identity(node: Node) -> bool:
    """`s + ""` and `"" + s` -> s for a str s. Not for numbers: a `float` value may hold a
    Python int and an `int` one a bool (arguments are not converted, as in Python), and
    `3 * 1.0` is 3.0, `True + 0` is 1; nor for arrays (`x * 1` is a new array)."""
    if node.kind != "aten::add" or len(node.inputs) != 2 or node.output.type != StrType:
        return False
    for x, other in (node.inputs, reversed(node.inputs)):
        if x.type == other.type == StrType and constant_value(other) == "":
            node.output.replace_all_uses_with(x)
            node.destroy()
            return True
    return False


def double_negation(node: Node) -> bool:
    """`not not b` -> `b` for a bool b (for any other type it is `bool(b)`)."""
    if node.kind != "aten::__not__":
        return False
    inner = node.inputs[0].node
    if inner.kind != "aten::__not__" or inner.inputs[0].type != BoolType:
        return False
    node.output.replace_all_uses_with(inner.inputs[0])
    node.destroy()
    if not inner.output.uses:
        # `not` of a bool cannot raise, but aten::__not__ may (on arrays), so DCE keeps it
        inner.destroy()
    return True


def unit_range_index(node: Node) -> bool:
    """`for i in range(n)`: the loop variable `0 + k * 1` is the iteration count k."""
    if node.kind != "aten::__derive_index":
        return False
    iteration, start, step = node.inputs
    if constant_value(start) != 0 or constant_value(step) != 1 or \
            type(constant_value(start)) is not int or type(constant_value(step)) is not int:
        return False
    iteration.name = iteration.name or node.output.name
    node.output.replace_all_uses_with(iteration)
    node.destroy()
    return True


def if_yields_condition(node: Node) -> bool:
    """`if c: t = True else: t = False` -> `t = c` for a bool c: what a `break` or
    `return` flag becomes once the loop's own flag is known False in its body (see
    frontend/control_flow.py), so that later tests of the flag test `c` itself."""
    if node.kind != "prim::If" or node.inputs[0].type != BoolType:
        return False
    then, otherwise = (block.outputs for block in node.blocks)
    fired = False
    for k, out in enumerate(node.outputs):
        if out.uses and out.type == BoolType and constant_value(then[k]) is True \
                and constant_value(otherwise[k]) is False:
            out.replace_all_uses_with(node.inputs[0])
            fired = True
    return fired


def merge_adjacent_ifs(node: Node) -> bool:
    """`a = If(c){A1}{B1}; b = If(c){A2}{B2}` -> `a, b = If(c){A1; A2}{B1; B2}`: the front
    end guards each statement after a `break` with its own test of the flag, and one
    branch per test lets native code leave the loop at the `break` itself instead of
    computing every guarded statement's result as a select on the flag."""
    if node.kind != "prim::If":
        return False
    nodes = node.block.nodes
    index = nodes.index(node)
    if index + 1 == len(nodes):
        return False
    second = nodes[index + 1]
    if second.kind != "prim::If" or second.inputs[0] is not node.inputs[0]:
        return False
    for arm, source in zip(node.blocks, second.blocks):
        env = dict(zip(node.outputs, arm.outputs))
        for inner in source.nodes:
            arm.append(clone_node(inner, env))
        for v in source.outputs:
            arm.add_output(env.get(v, v))
    for v in second.outputs:
        v.replace_all_uses_with(node.add_output(v.type, v.name))
    second.destroy()
    return True


RULES: list[Rule] = [power_to_multiplication, arithmetic_identity, double_negation,
                     unit_range_index, if_yields_condition, merge_adjacent_ifs]
