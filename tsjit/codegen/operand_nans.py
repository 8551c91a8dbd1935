"""Which float arithmetic ops of a kernel must choose their NaN result themselves.

x86 (and so NumPy) gives a float add, subtract, multiply or divide a NaN operand's NaN,
quieted, the first operand's when both are NaN, and its default NaN (sign bit set) for an
invalid operation. LLVM's IR leaves a NaN result's sign and payload unspecified, so it
may rewrite ops in ways that change them:
- it commutes ``fadd`` and ``fmul`` operands: with both NaN, the second one's NaN results
  (``-x + x`` gave x's NaN where NumPy gives -x's);
- it moves sign operations (``fneg``, ``fabs``, ``copysign``, and integer code it
  recognizes as them) across arithmetic: ``(-x) + y`` becomes ``y - x``, ``y - (-x)``
  becomes ``y + x``, ``(-x) * (-y)`` becomes ``x * y``, ``(-x) * y`` may become
  ``-(x * y)``, which flips a NaN operand's or an invalid result's sign.
Such an op picks its NaN by selects of integer bits, which LLVM keeps
(``element_ops.lower_op``'s ``operand_nans``): NumPy's NaN operand quieted, else the
default NaN where the result is NaN. NumPy's is the first, but for a commutative op whose
loop a compiler commuted (float16 add and multiply on x86: ``numpy_nans.second_nan_wins``).
Only ops at risk get selects: a commutative op whose operands may both be NaN, unless
both NaNs are one input's NaN, quieted (``x * x * x``'s product of ``x * x`` and ``x``): a
select of the winning operand's NaN (commuting changes no other case); and an op reading a
value a sign operation may reach, or read by a negation (a select of each operand that may
be NaN, and of the default NaN). The selects end the risk: LLVM moves no sign operation out of
them. Their cost on the elementwise benchmarks is within the noise (gelu: two selects of
an element operand; the A/B figures are in the commit that added this module).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tsjit.codegen.kernel_spec import KernelOp

__all__ = ["OperandNans", "operand_nans"]

_ARITHMETIC = frozenset({"add", "sub", "mul", "truediv"})
_COMMUTATIVE = frozenset({"add", "mul"})
_SIGN_OPS = frozenset({"neg", "abs", "copysign"})
# Ops that make no NaN of their own: their result is one of their float operands, maybe
# with its sign changed, or computed exactly from it. LLVM may move a sign operation out of
# them when every float operand has one (``fneg`` of a select of two ``fneg``s).
_PASSING = frozenset({"neg", "abs", "pos", "copysign", "cast", "where", "maximum", "minimum",
                      "fmax", "fmin", "clip", "floor", "ceil", "trunc", "rint", "sign",
                      "square"})


@dataclass(frozen=True)
class OperandNans:
    """What an op at risk must select: ``first``, ``second``: whether each operand may be
    NaN; ``signs``: a sign operation may reach an operand, so every NaN case is selected
    (each operand's NaN and the default NaN), else only the NaN of the operand NumPy's loop
    gives when both are NaN."""

    first: bool
    second: bool
    signs: bool


def operand_nans(inputs: tuple, ops: tuple[KernelOp, ...],
                 value_dtype) -> dict[int, OperandNans]:
    """Value number -> the selects its op needs, for the ops at risk (see the module
    docstring). ``inputs``, ``ops``: a kernel spec's; ``value_dtype(v)``: its dtypes."""
    n_in = len(inputs)
    may_be_nan = [np.dtype(i.dtype).kind == "f" and not i.never_nan for i in inputs]
    # the input whose NaN (quieted) is the value's only NaN, if one is
    source: list[int | None] = [k if may_be_nan[k] else None for k in range(n_in)]
    signed = [False] * n_in     # whether a sign operation may reach the value
    for v, op in enumerate(ops, start=n_in):
        is_float = value_dtype(v).kind == "f"
        floats = [a for a in _selected(op, value_dtype) if may_be_nan[a]]
        sources = {source[a] for a in floats}
        if op.op in _PASSING:
            may_be_nan.append(is_float and bool(floats))
            signed.append(is_float and (op.op in _SIGN_OPS or bool(floats) and all(
                signed[a] for a in floats)))
            keeps_nan = op.op not in _SIGN_OPS
        else:
            may_be_nan.append(is_float)
            signed.append(False)
            keeps_nan = op.op in _ARITHMETIC
        source.append(sources.pop() if keeps_nan and is_float and len(sources) == 1 else None)
    # whether a negation reads the value (through ops it may move into): LLVM moves it into
    # the op's operands, -(x / y) becomes (-x) / y (fabs and copysign it only drops)
    negated = [False] * (n_in + len(ops))
    for v in range(n_in + len(ops) - 1, n_in - 1, -1):
        op = ops[v - n_in]
        if op.op == "neg" or op.op in _PASSING and negated[v]:
            for a in _selected(op, value_dtype):
                negated[a] = True
    fixes: dict[int, OperandNans] = {}
    for v, op in enumerate(ops, start=n_in):
        if op.op not in _ARITHMETIC or value_dtype(v).kind != "f":
            continue
        a, b = op.args
        if signed[a] or signed[b] or negated[v]:
            fixes[v] = OperandNans(may_be_nan[a], may_be_nan[b], True)
        elif op.op in _COMMUTATIVE and may_be_nan[a] and may_be_nan[b] and (
                source[a] is None or source[a] != source[b]):
            fixes[v] = OperandNans(True, True, False)
    return fixes


def _selected(op: KernelOp, value_dtype) -> list[int]:
    """The float operands whose NaN may be the op's (not where's condition)."""
    return [a for a in op.args[op.op == "where":] if value_dtype(a).kind == "f"]
