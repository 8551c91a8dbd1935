"""Which ops of a kernel its fast blocks compute by fast forms, and where their NaNs show.

A fast form (vmath.FAST_FORMS) gives the exact form's bits and flags where its argument is
ordinary and NaN elsewhere. A fast block (elementwise's ``fast_block``) finds those lanes
in its outputs after the fact: it scans them for NaN, and computes a block holding one
again exactly. So an op may take its fast form only if a NaN it gives always reaches an
output that the block scans: through ops that return NaN whenever that operand is NaN
(IEEE arithmetic, NumPy's maximum and minimum, the math functions, casts between floats),
to a float32 or float64 output. A NaN an op gives that another op could drop (np.where,
a comparison, fmax, pow(NaN, 0) = 1, a cast to an integer) would leave a wrong value
unseen: such an op keeps its exact form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tsjit.codegen import vmath
from tsjit.codegen.kernel_spec import MATH_FUNCTIONS, KernelSpec

__all__ = ["BlockStages", "block_stages", "fast_plan", "nan_blind", "nan_fixes"]

_UNARY = (0,)
_BINARY = (0, 1)
# op -> the operands whose NaN the op's (float) result always keeps
_KEEPS_NAN: dict[str, tuple[int, ...]] = {
    **dict.fromkeys(("add", "sub", "mul", "truediv", "maximum", "minimum"), _BINARY),
    **dict.fromkeys(("neg", "pos", "abs", "sign", "square", "reciprocal", "sqrt", "floor",
                     "ceil", "trunc", "rint", "copysign", "cast"), _UNARY),
    **dict.fromkeys((f for f in MATH_FUNCTIONS if f != "arctan2"), _UNARY),  # f(NaN) = NaN
    "clip": (0, 1, 2),
}
_SCANNED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def fast_plan(spec: KernelSpec, output_operand: Callable[[int], int]
              ) -> tuple[frozenset[int], tuple[int, ...]]:
    """(the value numbers of the ops that take fast forms, the operands (of the outputs,
    by ``output_operand(j)``) a fast block scans for NaN: some that each of those reach)."""
    n_in = len(spec.inputs)
    reaches: dict[int, set[int]] = {}   # fast op -> the scanned outputs its NaNs reach
    for index, op in enumerate(spec.ops, start=n_in):
        if op.op in vmath.FAST_FORMS and spec.value_dtype(op.args[0]) in _SCANNED_DTYPES:
            nan = _nan_whenever(spec, index)
            reaches[index] = {output_operand(j) for j, v in enumerate(spec.outputs)
                              if v in nan and spec.value_dtype(v) in _SCANNED_DTYPES}
    fast = frozenset(v for v, outputs in reaches.items() if outputs)
    # the fewest outputs that every fast op reaches (greedily: the LSTM cell's hy alone)
    scanned: list[int] = []
    unseen = set(fast)
    while unseen:
        best = max(sorted(set().union(*(reaches[v] for v in unseen))),
                   key=lambda k: sum(k in reaches[v] for v in unseen))
        scanned.append(best)
        unseen = {v for v in unseen if best not in reaches[v]}
    return fast, tuple(sorted(scanned))


def nan_blind(spec: KernelSpec, candidates, scanned_values) -> frozenset[int]:
    """The ``candidates`` (value numbers) whose NaN always reaches one of
    ``scanned_values``: in a fast block such a NaN sends the block to its exact pass, so
    the fast pass need not give NumPy's NaN bits there (operand_nans' selects): the exact
    pass does."""
    return frozenset(v for v in candidates if _nan_whenever(spec, v) & scanned_values)


def nan_fixes(spec: KernelSpec, scanned_values) -> frozenset[int]:
    """The ``np.where(np.isnan(u), a, b)`` ops (value numbers) that only fix a NaN's bits
    (the cube's sign of a NaN): ``b`` is NaN wherever ``u`` is, and the where's NaN
    always reaches one of ``scanned_values``. A fast block computes such an op as ``b``:
    where ``u`` is NaN, so is the scanned output, and the exact pass gives the fixed
    bits; elsewhere the where is ``b``."""
    n_in = len(spec.inputs)
    fixes = set()
    for index, op in enumerate(spec.ops, start=n_in):
        if op.op != "where" or op.args[0] < n_in:
            continue
        condition = spec.ops[op.args[0] - n_in]
        if condition.op == "isnan" and op.args[2] in _nan_whenever(spec, condition.args[0]) \
                and _nan_whenever(spec, index) & scanned_values:
            fixes.add(index)
    return frozenset(fixes)


@dataclass(frozen=True)
class BlockStages:
    """A fast block's ops in stages, each a loop over the whole block: ``ops[s]`` are the
    value numbers stage s computes (each op in exactly one stage); ``kept`` the values
    a later stage reads, which their stage stores in a block-long buffer."""

    ops: tuple[frozenset[int], ...]
    kept: frozenset[int]


def block_stages(spec: KernelSpec, fast_ops: frozenset[int]) -> BlockStages:
    """Stages of a float32 kernel's fast block: one ends at each fast op's result (the ops
    that a math function needs, then those of the next, ..., then the rest: the
    outputs' arithmetic). Why: AVX2 has 16 vector registers, and a value live across a
    math function's long chain (gelu's ``0.5 * x``, an LSTM gate's sigmoid waiting for
    the cell's tanh) is spilled and reloaded, with its interleaved copies, in every
    iteration; staged, each loop keeps only its own chain's values (an input is read
    again from memory, a kept value from its buffer, in L1). One thread against one
    stage (python bench/kernel_against.py, load ~4): gelu 0.92, LSTM cell 0.92-0.95 (16M,
    1024x1024 and in L2). Not float64: Black-Scholes ran 1.07x slower staged (its four
    float64 divisions per element keep the divider busy while its exps run; a stage
    without a division leaves it idle). Nor where nothing would cross the math function
    (``np.tanh(x) * 2``: a stage would only store and reload its result)."""
    n_in = len(spec.inputs)
    cuts = sorted(v for v in fast_ops
                  if spec.value_dtype(v) == np.dtype(np.float32) and _crossed(spec, v))
    stage_of: dict[int, int] = {}
    for stage, sinks in enumerate([[v] for v in cuts] + [list(spec.outputs)]):
        for v in _closure(spec, sinks):
            stage_of.setdefault(v, stage)
    kept = frozenset(a for v, stage in stage_of.items() for a in spec.ops[v - n_in].args
                     if a >= n_in and stage_of[a] < stage)
    return BlockStages(tuple(frozenset(v for v, t in stage_of.items() if t == stage)
                             for stage in range(len(cuts) + 1)), kept)


def _crossed(spec: KernelSpec, value: int) -> bool:
    """Whether an op that ``value`` does not need reads an array value other than one
    computed from ``value``: a value that would be live across its chain."""
    n_in = len(spec.inputs)
    before = _closure(spec, [value])
    return any((a >= n_in or not spec.inputs[a].is_scalar) and value not in _closure(spec, [a])
               for v in _closure(spec, spec.outputs) - before for a in spec.ops[v - n_in].args)


def _closure(spec: KernelSpec, values) -> set[int]:
    """The ops (value numbers) that ``values`` need, themselves included."""
    n_in = len(spec.inputs)
    needed, stack = set(), [v for v in values if v >= n_in]
    while stack:
        v = stack.pop()
        if v not in needed:
            needed.add(v)
            stack.extend(a for a in spec.ops[v - n_in].args if a >= n_in)
    return needed


def _nan_whenever(spec: KernelSpec, value: int) -> set[int]:
    """The values that are NaN wherever ``value`` is: it, the float results of ops that
    keep an operand's NaN (``_KEEPS_NAN``) of such an operand, and np.where's of two such
    arms (the cube's NaN fix, Black-Scholes' cnd)."""
    n_in = len(spec.inputs)
    nan = {value}
    for index in range(value + 1, n_in + len(spec.ops)):
        op = spec.ops[index - n_in]
        if np.dtype(op.dtype).kind != "f":
            continue
        keeps = any(op.args[k] in nan for k in _KEEPS_NAN.get(op.op, ()))
        if keeps or (op.op == "where" and op.args[1] in nan and op.args[2] in nan):
            nan.add(index)
    return nan
