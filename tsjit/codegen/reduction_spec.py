"""The contract between the reduction fuser and the row-kernel generator.

A ``RowKernelSpec`` is a ``KernelSpec``-like SSA program whose iteration space is a set of
rows (the leading axes of the broadcast shape) of ``n`` elements each (the last axis), or
one run of every element of C-contiguous operands (``full``: ``axis=None``).  Besides the
elementwise ops it has:

- ``reduce_sum`` / ``reduce_max`` / ``reduce_min`` of one element-level value: a row-level
  value (one per row).  Sums follow NumPy's pairwise order (``pairwise``); max and min are
  NumPy's bits, the sign of a zero and a NaN's included (``reduction_ties``).
- ``reduce_prod``, ``reduce_argmax`` / ``reduce_argmin`` (int64: an index along the row):
  element after element in the row's order (``SEQUENTIAL``, ``reduction_scan``);
- a ``reduce_sum`` with the ``BUFFERED`` attribute sums each chunk of ``BUFFER`` elements
  of the row pairwise and adds the chunks in order, as NumPy's buffered cast does;
- ``row_index`` (no operands, int64, element-level; row kernels only): each element's
  index along its row;
- ``row_length`` (no operands, int64): ``n``, NumPy's item count for ``mean``/``var``.

Every value is element-level (it varies along the row: it reads an array operand or an
element-level value) or row-level (scalars, reductions, ops of row-level values only).  An
element-level value may use row-level values: they are computed first, in passes over the
row (a row is a few KB and stays in cache between passes).  Outputs are element-level
arrays of the iteration shape or row-level arrays of the reduced shape (``output_ranks``
tells keepdims: the full rank, or one less (zero for ``full``)).  An array input whose
last size is 1 (a kept reduction computed elsewhere; its guard checks the 1) is row-level.

A ``strided`` row kernel reads each array input at an element stride of its own (bytes,
in the job's block: negative for a reversed view, 0 for a broadcast value) instead of
contiguously: NumPy sums a view whose row axes collapse into one stride (a 1-D slice, a
reversed array) as one pairwise run in its logical order, and the temporaries of
elementwise ops on such views are C-ordered, so the kernel's order stays NumPy's.

A row may span several trailing axes (``row_axes``: ``x.sum(axis=(1, 2))`` of a 3-D
array, summed by NumPy as one run of C-contiguous elements).  A ``column`` spec instead
reduces a block of axes ``[start, stop)`` that does not reach the last axis (``axis=0`` of
a matrix): NumPy then adds the reduced values to each output element one after the other
in C order (``out[j] += x[i, j]``), which ``codegen.column_reduction`` vectorizes across
the output elements.  Its "rows" are the output elements; row-level values are per output
element, ``row_length`` is the count of reduced elements.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tsjit.codegen.kernel_spec import (
    MAX_OPERANDS,
    SUPPORTED_DTYPES,
    KernelInput,
    KernelOp,
    check_op,
)
from tsjit.codegen.numpy_minmax import column_newer_wins, row_order

__all__ = ["ARG_REDUCTIONS", "BUFFER", "BUFFERED", "REDUCTIONS", "ROW_INDEX", "ROW_LENGTH",
           "RowKernelSpec", "SEQUENTIAL", "element_level", "float_extremes", "nonpositive_values",
           "order_dtypes", "row_supports", "schedule"]

REDUCTIONS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_argmax",
              "reduce_argmin")
# taken element after element in NumPy's order (``reduction_scan``), never pairwise
ARG_REDUCTIONS = ("reduce_argmax", "reduce_argmin")
SEQUENTIAL = ("reduce_prod", *ARG_REDUCTIONS)
# A float sum's attribute: NumPy casts its operand in buffers of BUFFER elements (its
# default np.getbufsize()) and sums each buffer pairwise, adding them in order.
BUFFERED = "buffered"
BUFFER = 8192
ROW_LENGTH = "row_length"
ROW_INDEX = "row_index"
_INT64 = np.dtype(np.int64)
_WIDE_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@dataclass(frozen=True)
class RowKernelSpec:
    """Values are numbered inputs first, then ops.  ``min_length``: rows shorter than this
    are left to NumPy (max of an empty row raises, a mean of one warns)."""

    inputs: tuple[KernelInput, ...]
    ops: tuple[KernelOp, ...]
    outputs: tuple[int, ...]
    output_ranks: tuple[int, ...]
    full: bool
    min_length: int = 0
    row_inputs: tuple[int, ...] = ()   # array inputs of last size 1: one value per row
    row_axes: int = 1                  # trailing axes a row spans (row kernels)
    column: tuple[int, int] | None = None   # the reduced block of a column kernel
    strided: bool = False              # array inputs at element strides (row kernels)
    # array inputs broadcast along a column kernel's kept inner axes (one value per
    # reduced row: ``(x * w).sum(axis=0)`` with ``w`` of shape (m, 1))
    inner_broadcast: tuple[int, ...] = ()

    def value_dtype(self, value: int) -> np.dtype:
        n_in = len(self.inputs)
        if value < n_in:
            return np.dtype(self.inputs[value].dtype)
        return np.dtype(self.ops[value - n_in].dtype)

    @property
    def out_rank(self) -> int:
        return max((i.rank for i in self.inputs if not i.is_scalar), default=0)

    @property
    def inplace(self) -> tuple:
        """Row kernels write fresh outputs only (the launcher's interface)."""
        return (None,) * len(self.outputs)

    def inplace_target(self, output: int) -> None:
        return None


def element_level(spec: RowKernelSpec) -> list[bool]:
    """Per value number: whether it varies along the row."""
    levels = [not i.is_scalar and k not in spec.row_inputs for k, i in enumerate(spec.inputs)]
    for op in spec.ops:
        levels.append(op.op == ROW_INDEX or (op.op not in REDUCTIONS and op.op != ROW_LENGTH
                                             and any(levels[a] for a in op.args)))
    return levels


def schedule(spec: RowKernelSpec, levels: list[bool]) -> tuple[list[int], list[list[int]]]:
    """avail[v]: the pass before which a row-level value is known (0: from the start of the
    row), and the reductions of each pass, by value number.  A reduction's pass is the
    first in which its operand can be computed; in a row kernel, a pass whose reductions
    mix pairwise sums and sequential ones (``reduce_prod``, argmax: NumPy's orders differ)
    becomes two, the sums' tree, then the scan."""
    n_in, total = len(spec.inputs), len(spec.inputs) + len(spec.ops)
    stage, avail = [0] * total, [0] * total
    for v, op in enumerate(spec.ops, n_in):
        if op.op in REDUCTIONS:
            avail[v] = stage[op.args[0]] + 1
        elif levels[v]:
            stage[v] = max((stage[a] if levels[a] else avail[a] for a in op.args), default=0)
        else:
            avail[v] = max((avail[a] for a in op.args), default=0)
    reductions = [v for v, op in enumerate(spec.ops, n_in) if op.op in REDUCTIONS]
    count = max((stage[spec.ops[v - n_in].args[0]] for v in reductions), default=-1) + 1
    passes, starts = [], []    # starts[p]: where stage p's first pass is
    for p in range(count):
        starts.append(len(passes))
        in_stage = [v for v in reductions if stage[spec.ops[v - n_in].args[0]] == p]
        kinds = {spec.ops[v - n_in].op for v in in_stage}
        if spec.column is None and "reduce_sum" in kinds and kinds.intersection(SEQUENTIAL):
            passes.append([v for v in in_stage if spec.ops[v - n_in].op not in SEQUENTIAL])
            in_stage = [v for v in in_stage if spec.ops[v - n_in].op in SEQUENTIAL]
        passes.append(in_stage)
    starts.append(len(passes))
    return [starts[a] for a in avail], passes


def nonpositive_values(spec: RowKernelSpec) -> set[int]:
    """Values known to be <= 0 or NaN: ``a - max(a)`` of the same row (softmax's
    ``x - x.max(axis=-1, keepdims=True)``; a NaN in the row makes the max NaN), whose exp
    has a cheaper exact form (``vmath.emit_math``'s ``nonpositive``)."""
    n_in = len(spec.inputs)
    maxima = {n_in + k: op.args[0] for k, op in enumerate(spec.ops) if op.op == "reduce_max"}
    return {n_in + k for k, op in enumerate(spec.ops)
            if op.op == "sub" and len(op.args) == 2 and maxima.get(op.args[1]) == op.args[0]
            and spec.value_dtype(op.args[0]) == np.dtype(op.dtype) in _WIDE_FLOATS}


def _check_reduction(spec: RowKernelSpec, index: int, op: KernelOp, levels) -> str | None:
    if op.op in (ROW_LENGTH, ROW_INDEX):
        if op.args or np.dtype(op.dtype) != _INT64 or (op.op == ROW_INDEX and spec.column):
            return f"{op.op}: bad form"
        return None
    if len(op.args) != 1 or not 0 <= op.args[0] < index:
        return f"{op.op} takes one earlier operand"
    if not levels[op.args[0]]:
        return f"{op.op} of a row-level value"
    dtype = np.dtype(op.dtype)
    if op.op in ("reduce_argmax", "reduce_argmin"):
        if dtype != _INT64:
            return f"{op.op}: an index is int64"
        dtype = spec.value_dtype(op.args[0])
    # float16 sums and products round at each step only along leading axes (NumPy's
    # binary half loop); along a row NumPy computes them in float32 (a float32 reduction)
    half_steps = spec.column is not None or op.op not in ("reduce_sum", "reduce_prod")
    if dtype not in SUPPORTED_DTYPES or dtype.kind == "b" or \
            (dtype == np.float16 and not half_steps):
        return f"{op.op}: unsupported dtype {dtype}"
    if dtype.kind == "f" and op.op in ("reduce_max", "reduce_min") and \
            (column_newer_wins if spec.column else row_order)(dtype.name) is None:
        return f"{op.op}: NumPy's choice among equal {dtype} values here is not one " \
               f"the kernels know (numpy_minmax)"
    if op.attrs not in ((), (BUFFERED,)) or (op.attrs and op.op != "reduce_sum"):
        return f"{op.op}: unknown attributes {op.attrs}"
    if spec.value_dtype(op.args[0]) != dtype:
        return f"{op.op}: operand dtype differs from {dtype}"
    return None


def _check_axes(spec: RowKernelSpec) -> str | None:
    rank = spec.out_rank
    if any(not 0 <= i < len(spec.inputs) or spec.inputs[i].is_scalar
           for i in spec.inner_broadcast):
        return "a value broadcast along the inner axes that is not an array input"
    if spec.column is None:
        if spec.inner_broadcast:
            return "a value broadcast along the inner axes of a row kernel"
        n_in = len(spec.inputs)
        for reductions in schedule(spec, element_level(spec))[1]:
            ops = [spec.ops[v - n_in] for v in reductions]
            if len({BUFFERED in op.attrs for op in ops
                    if op.op == "reduce_sum" and np.dtype(op.dtype).kind == "f"}) > 1:
                return "float sums with and without NumPy's cast buffers in one pass"
        return None if 1 <= spec.row_axes <= max(rank, 1) else "row axes out of range"
    if spec.strided:
        return "a strided column kernel"
    start, stop = spec.column
    if spec.full or spec.row_inputs or not 0 <= start < stop < rank:
        return f"a column reduction of axes [{start}, {stop}) at rank {rank}"
    return None


def row_supports(spec: RowKernelSpec) -> tuple[bool, str]:
    """Whether the row-kernel generator compiles ``spec`` as NumPy computes it; if not, why."""
    if not any(op.op in REDUCTIONS for op in spec.ops):
        return False, "no reduction"
    arrays = [i for i in spec.inputs if not i.is_scalar]
    if not arrays:
        return False, "no array operand"
    if len(arrays) + len(spec.outputs) > MAX_OPERANDS:
        return False, f"more than {MAX_OPERANDS} operands"
    for inp in spec.inputs:
        if np.dtype(inp.dtype) not in SUPPORTED_DTYPES:
            return False, f"unsupported input dtype {inp.dtype}"
    reason = _check_axes(spec)
    if reason is not None:
        return False, reason
    levels = element_level(spec)
    n_in = len(spec.inputs)
    for i, op in enumerate(spec.ops):
        if op.op in REDUCTIONS or op.op in (ROW_LENGTH, ROW_INDEX):
            reason = _check_reduction(spec, n_in + i, op, levels)
        else:
            reason = check_op(spec, n_in + i, op)
        if reason is not None:
            return False, reason
    if len(spec.output_ranks) != len(spec.outputs) or not spec.outputs:
        return False, "an output rank per output"
    for out, rank in zip(spec.outputs, spec.output_ranks):
        if not 0 <= out < n_in + len(spec.ops):
            return False, "an output refers to an unknown value"
        if levels[out] and rank != spec.out_rank:
            return False, "an element-level output of another rank than the iteration"
    return True, ""


def float_extremes(ops) -> list:
    """The float max/min reductions among ``ops`` (KernelOps), whose bits follow NumPy's
    order (``reduction_ties``)."""
    return [op for op in ops if op.op in ("reduce_max", "reduce_min")
            and np.dtype(op.dtype).kind == "f"]


def order_dtypes(ops) -> list[str]:
    """The dtypes whose NumPy order kernels of ``ops`` follow (their cache key; the
    launcher needs them without the code generators)."""
    return sorted({np.dtype(op.dtype).name for op in float_extremes(ops)})
