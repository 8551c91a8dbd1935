"""IR reductions and the elementwise ops around them read as one row kernel.

The reduction fuser asks `build_row_group(nodes, ...)` whether a set of nodes makes one
row kernel (`codegen.reduction_spec`), and the executor asks it again for the spec of a
FusionGroup's subgraph that holds reductions, so the two never disagree.  Elementwise
nodes are read exactly as the elementwise fuser reads them (`elementwise_kernel`, whose
builder this one extends: NumPy's loop dtypes, casts, weak Python scalars).

A reduction is written as NumPy computes it (numpy/_core/_methods.py):
- `sum`: the values cast to the sum's dtype (int32 -> int64, bool -> int64), summed in
  NumPy's pairwise order; `prod` likewise, multiplied in order (float16 along a row in
  float32, rounded once, as NumPy's half loop); `max`/`min`: NumPy's bits (which zero or
  NaN NumPy returns: `codegen.reduction_ties`); `argmax`/`argmin`: the first index of
  the extreme, or of the first NaN;
- `mean`: `sum / n` in float64 (NumPy divides by an intp count), cast back; integers
  and bools are summed in float64, float16 in float32, through NumPy's cast buffers
  (`BUFFERED`: pairwise sums of 8192-element chunks, added in order), as is a sum with
  a `dtype=` other than its operand's; a float16 sum is pairwise in float32;
- `var`/`std`: the mean kept per row, `sum((x - mean) ** 2) / max(n - ddof, 0)`, sqrt.
The reduced axes are one block of adjacent axes, shared by the group's reductions: the
trailing ones (a row, or every axis: one run) or a block before the last axis (a column
kernel, `codegen.column_reduction`), with or without keepdims.  A kept row value
broadcasts back over its row (`x - x.max(axis=-1, keepdims=True)`); a value reduced
without keepdims may only be a result, but where it lost leading axes only (NumPy then
broadcasts it back along them: `x - x.mean(axis=0)`).  Axes apart, out= and where=
stay NumPy calls (the fuser's log says which).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codegen.kernel_spec import KernelInput, KernelOp
from ..codegen.reduction_spec import (
    BUFFERED,
    ROW_INDEX,
    ROW_LENGTH,
    RowKernelSpec,
    row_supports,
)
from ..ir.graph import NOT_CONSTANT, Node, Value, constant_value
from ..ir.types import TensorType, Type
from ..ops import OPS
from .elementwise_kernel import (
    ElementwiseCall,
    Feed,
    FusedKernel,
    GroupError,
    GroupOutput,
    _Builder,
    build_group,
    never_nan,
    read_call,
)

__all__ = ["ReductionCall", "build_fused_group", "build_row_group", "read_reduction",
           "reduction_or_refusal"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_KINDS = ("sum", "mean", "max", "min", "var", "std", "any", "all", "count_nonzero",
          "linalg_norm", "prod", "argmax", "argmin")
_NORM_ORDERS = (None, 1, 2, np.inf, -np.inf)


# Python's operators on NumPy integer scalars (a full reduction's result) run NumPy's
# scalar math, which reports overflow ("overflow encountered in scalar multiply") where
# ufuncs and array loops wrap silently: np.multiply(t, 2) does not warn, t * 2 does.
_SCALAR_MATH_OVERFLOWS = frozenset({"aten::add", "aten::sub", "aten::mul", "aten::neg",
                                    "prim::abs"})


@dataclass(frozen=True)
class ReductionCall:
    """`kind` of `operand` over `axis` (None: all; else a tuple of ints)."""

    kind: str
    operand: Value
    axis: tuple[int, ...] | None
    keepdims: bool
    ddof: int = 0
    order: object = None    # np.linalg.norm's ord
    dtype: np.dtype | None = None   # sum, prod, mean: dtype=


def read_reduction(node: Node) -> ReductionCall | None:
    """The reduction `node` computes, or None if it is not one the row kernels know."""
    call = reduction_or_refusal(node)
    return call if isinstance(call, ReductionCall) else None


def reduction_or_refusal(node: Node) -> ReductionCall | str | None:
    """The reduction `node` computes; for a reduction the kernels do not compute, why
    (the fuser's log); None for any other node."""
    prefix, _, name = node.kind.partition("::")
    if prefix not in ("numpy", "ndarray") or name not in _KINDS or len(node.outputs) != 1:
        return None
    op = OPS.get(node.kind)
    if op is None:
        return None
    args = {p.name: constant_value(v) for p, v in zip(op.params, node.inputs)}
    dtype = _requested_dtype(name, args.get("dtype"))
    if dtype is NOT_CONSTANT:
        return "a dtype= the kernels do not take (not a constant int or float dtype, or " \
               "not a sum, prod or mean)"
    defaults = {"out": None, "initial": None, "where": True}
    for k, d in defaults.items():
        if args.get(k, d) is NOT_CONSTANT or args.get(k, d) is not d:
            return f"{k}= is given"
    keepdims, ddof, axis = args.get("keepdims", False), args.get("ddof", 0), args["axis"]
    order = args.get("ord")
    if type(keepdims) is not bool or type(ddof) is not int:
        return "keepdims= or ddof= is not a constant"
    if order is NOT_CONSTANT or type(order) not in (type(None), int, float) or \
            order not in _NORM_ORDERS:
        return f"ord={order!r}"
    if axis is None and name == "linalg_norm":
        return "axis=None (NumPy's norm is then a BLAS dot product)"
    if axis is None and name == "count_nonzero":
        return "axis=None (NumPy then counts in one C loop and returns a Python int)"
    if name == "linalg_norm" and type(axis) is tuple and len(axis) != 1:
        return "two axes (a matrix norm)"
    if name in ("argmax", "argmin") and type(axis) is tuple:
        return "a tuple of axes (NumPy's TypeError)"
    if type(axis) is int:
        axis = (axis,)
    elif axis is not None and not (type(axis) is tuple and all(type(a) is int for a in axis)):
        return "axis= is not a constant int or tuple of ints"
    return ReductionCall(name, node.inputs[0], axis, keepdims, ddof, order, dtype)


def _requested_dtype(name: str, value: object) -> np.dtype | None | object:
    """A reduction's dtype= as a NumPy dtype (None: not given), or NOT_CONSTANT where the
    kernels do not compute it (not a constant, no sum, prod or mean, not a number)."""
    if value is None:
        return None
    if value is NOT_CONSTANT or name not in ("sum", "prod", "mean"):
        return NOT_CONSTANT
    try:
        dtype = np.dtype(value)
    except TypeError:
        return NOT_CONSTANT
    return dtype if dtype.kind in "iuf" else NOT_CONSTANT


def _normalized(axis: tuple[int, ...] | None, rank: int) -> tuple[int, ...] | None:
    if axis is None:
        return tuple(range(rank))
    axes = tuple(sorted(a + rank if a < 0 else a for a in axis))
    if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
        return None
    return axes


class _RowBuilder(_Builder):
    """`_Builder` with row-level values: per value id, its rank, whether it varies along
    the row, whether a row value keeps its reduced axes, whether it comes from a
    reduction."""

    def __init__(self, per_row: bool) -> None:
        super().__init__()
        self.per_row = per_row   # an array of last size 1 is a value per row (else broadcast)
        self.ranks: list[int] = []
        self.elements: list[bool] = []
        self.kept: list[bool] = []
        self.reduced: list[bool] = []
        self.axes: tuple[int, ...] | None = None    # the reduced axes, shared by the group
        self.reduced_rank: int | None = None
        self.reduction_args: list[int] = []
        self.min_length = 0
        self.constants: dict[tuple, int] = {}
        self.row_inputs: list[int] = []     # kernel inputs of last size 1
        self.trailing_ones: dict[int, int] = {}   # per row input: its trailing sizes of 1
        self.quotients: list[int] = []      # each mean's float64 quotient

    def array_input(self, v: Value) -> int:
        """An array whose profiled last size is 1 (a kept reduction made elsewhere) is
        one value per row; its guard checks that size."""
        n = super().array_input(v)
        sizes = v.type.sizes
        if self.per_row and sizes and sizes[-1] == 1:
            self.row_inputs.append(n)
            ones = 1
            while ones < len(sizes) and sizes[-1 - ones] == 1:
                ones += 1
            self.trailing_ones[n] = ones
            self.elements[n], self.reduced[n] = False, True
        return n

    def input_type(self, v: Value) -> Type:
        t = super().input_type(v)
        n = self.numbers.get(v)
        if n is not None and n in self.row_inputs:
            return TensorType(t.dtype, (*t.sizes[:-1], 1), None, t.ndarray)
        return t

    def _track(self, n: int, rank: int, element: bool, kept: bool, reduced: bool) -> int:
        self.ranks.append(rank)
        self.elements.append(element)
        self.kept.append(kept)
        self.reduced.append(reduced)
        assert len(self.ranks) == n + 1
        return n

    def add_input(self, feed: Feed, kernel_input: KernelInput) -> int:
        n = super().add_input(feed, kernel_input)
        return self._track(n, kernel_input.rank, not kernel_input.is_scalar, True, False)

    def op(self, name: str, args: tuple[int, ...], dtype: np.dtype, attrs: tuple = ()) -> int:
        element = any(self.elements[a] for a in args)
        rows = [a for a in args if not self.elements[a]]
        if element and any(not self.kept[a] for a in rows):
            raise GroupError(f"{name}: a value reduced without keepdims broadcast over "
                             f"elements (NumPy aligns it with another axis)")
        if not element and len({self.ranks[a] for a in rows if self.ranks[a]}) > 1:
            raise GroupError(f"{name}: row values of different ranks")
        reduced = name == ROW_LENGTH or any(self.reduced[a] for a in args)
        if not element and not reduced and args:
            raise GroupError(f"{name} computes on NumPy scalars only")
        n = super().op(name, args, dtype, attrs)
        rank = max((self.ranks[a] for a in args), default=0)
        return self._track(n, rank, element, all(self.kept[a] for a in rows), reduced)

    def rank(self, n: int) -> int:
        return self.ranks[n]

    def constant(self, value: int, dtype: np.dtype) -> int:
        key = (value, dtype)
        if key not in self.constants:
            self.constants[key] = self.add_input(Feed(None, value),
                                                 KernelInput(dtype, 0, True, never_nan(value)))
        return self.constants[key]

    # ---- nodes
    def add(self, node: Node, call: ElementwiseCall | ReductionCall) -> None:
        if isinstance(call, ReductionCall):
            self.add_reduction(node, call)
            return
        if call.kernel == "out_check" or call.target is not None:
            raise GroupError(f"{node.kind} writes an array (left to the elementwise fuser)")
        if sum(self.kind(v) == "value" for v in call.operands) >= 2:
            self.raising.add(node)
        result = self.compute(call)
        if self.elements[result] and self.ranks[result] == 0:
            raise GroupError(f"{node.kind} has a 0-d result")
        if node.kind in _SCALAR_MATH_OVERFLOWS and not self.elements[result] and \
                self.ranks[result] == 0 and self.dtypes[result].kind in "iu":
            raise GroupError(f"{node.kind} of NumPy scalars: NumPy's scalar math reports "
                             f"integer overflow, which an array loop (the kernel's) does not")
        self.numbers[node.output] = result

    def add_reduction(self, node: Node, call: ReductionCall) -> None:
        if self.kind(call.operand) != "value":
            raise GroupError(f"{node.kind} of a scalar")
        x = self.use(call.operand, None)
        if not self.elements[x]:
            raise GroupError(f"{node.kind} of a value already reduced")
        rank, dtype = self.ranks[x], self.dtypes[x]
        axes = _normalized(call.axis, rank)
        if axes is None:
            raise GroupError(f"{node.kind}: axis {call.axis} out of range")
        if not axes or axes != tuple(range(axes[0], axes[-1] + 1)):
            raise GroupError(f"{node.kind} over axes {axes} (kernels reduce one block of "
                             f"adjacent axes)")
        if self.axes not in (None, axes) or self.reduced_rank not in (None, rank):
            raise GroupError(f"{node.kind} reduces other axes than the group's reductions")
        self.axes, self.reduced_rank = axes, rank
        self.reduction_args.append(x)
        result = self.reduce(node, call, x, dtype)
        self.ranks[result] = rank if call.keepdims else rank - len(axes)
        # without keepdims, only a result of leading axes broadcasts back along them
        self.kept[result] = call.keepdims or axes[0] == 0
        self.numbers[node.output] = result
        self.raising.add(node)

    def reduce(self, node: Node, call: ReductionCall, x: int, dtype: np.dtype) -> int:
        """The ops computing `call` of value `x`; returns the result's value id."""
        kind = call.kind
        if kind in ("sum", "prod"):
            if dtype.kind not in "biuf":   # object, datetime: np.sum gives no dtype or raises
                raise GroupError(f"{node.kind} of {dtype}")
            total = call.dtype or np.sum(np.zeros(1, dtype)).dtype
            if total == np.float16:
                return self.half_sum(node, kind, x, dtype)
            return self.reduction(f"reduce_{kind}", self.cast(x, total), total,
                                  buffered=dtype != total)
        if kind in ("argmax", "argmin"):
            if dtype.kind == "b":
                dtype = np.dtype(np.uint8)
                x = self.cast(x, dtype)
            if dtype.kind not in "iuf":
                raise GroupError(f"{node.kind} of {dtype}")
            self.min_length = max(self.min_length, 1)   # empty: NumPy's ValueError
            if self.axes[-1] != self.reduced_rank - 1:   # a column kernel's scan
                return self.reduction(f"reduce_{kind}", x, _I64)
            return self.first_index(kind, x, dtype)
        if kind in ("max", "min"):
            if dtype.kind not in "iuf":
                raise GroupError(f"{node.kind} of {dtype}")
            self.min_length = max(self.min_length, 1)
            return self.reduction(f"reduce_{kind}", x, dtype)
        if kind in ("any", "all", "count_nonzero"):
            truth = self.cast(x, np.dtype(bool))   # x != 0, NaN is true
            if kind == "count_nonzero":
                return self.reduction("reduce_sum", self.cast(truth, _I64), _I64)
            self.min_length = max(self.min_length, 1)   # empty: NumPy's identity
            small = np.dtype(np.uint8)
            found = self.reduction("reduce_max" if kind == "any" else "reduce_min",
                                   self.cast(truth, small), small)
            return self.cast(found, np.dtype(bool))
        if kind == "linalg_norm":
            return self.norm(node, call, x, dtype)
        if kind == "mean":
            return self.mean_as_numpy(node, call, x, dtype)
        return self.variance(node, call, x, dtype)

    def variance(self, node: Node, call: ReductionCall, x: int, dtype: np.dtype) -> int:
        """np.var and np.std (``_var`` in numpy/_core/_methods.py): integers and bools in
        float64, the mean's sum casting them in buffers; float16 with float16 sums (NumPy's
        half loop), its mean and variance rounded to float16; each division by the count in
        float64."""
        buffered = dtype.kind in "biu"
        if buffered:
            x, dtype = self.cast(x, _F64), _F64
        elif dtype.kind != "f":
            raise GroupError(f"{node.kind} of {dtype}")
        mean = self.mean(node, x, dtype, buffered)
        self.ranks[mean], self.kept[mean] = self.ranks[x], True   # kept per row, as NumPy
        deviation = self.op("sub", (x, mean), dtype)
        squares = self.sum_as_numpy(node, self.op("square", (deviation,), dtype), dtype)
        count = self.op("maximum", (self.op("sub", (self.op(ROW_LENGTH, (), _I64),
                                                    self.constant(call.ddof, _I64)), _I64),
                                    self.constant(0, _I64)), _I64)
        self.min_length = max(self.min_length, call.ddof + 1)
        variance = self.divided(squares, count, dtype)
        return variance if call.kind == "var" else self.op("sqrt", (variance,), dtype)

    def norm(self, node: Node, call: ReductionCall, x: int, dtype: np.dtype) -> int:
        """np.linalg.norm along one axis: integers as float64 first, then by `ord`:
        sqrt(sum(x * x)), sum(abs(x)), max or min of abs(x) (numpy/linalg/_linalg.py)."""
        if dtype.kind in "biu":
            dtype = _F64
            x = self.cast(x, dtype)
        if dtype not in _FLOATS:
            raise GroupError(f"{node.kind} of {dtype}")
        order = call.order
        if order in (None, 2):
            return self.op("sqrt", (self.reduction("reduce_sum", self.op("mul", (x, x), dtype),
                                                   dtype),), dtype)
        magnitude = self.op("abs", (x,), dtype)
        if order == 1:
            return self.reduction("reduce_sum", magnitude, dtype)
        self.min_length = max(self.min_length, 1)
        return self.reduction("reduce_max" if order > 0 else "reduce_min", magnitude, dtype)

    def reduction(self, name: str, x: int, dtype: np.dtype, buffered: bool = False) -> int:
        """``name`` of ``x``; ``buffered``: NumPy casts the values to ``dtype`` in buffers,
        so a float sum is its pairwise sums of buffer-long chunks, added in order."""
        attrs = (BUFFERED,) if buffered and name == "reduce_sum" and dtype.kind == "f" else ()
        n = self.op(name, (x,), dtype, attrs)
        self.elements[n], self.reduced[n] = False, True
        return n

    def first_index(self, kind: str, x: int, dtype: np.dtype) -> int:
        """argmax (argmin) along rows as two vectorized passes: the extreme (NaN wins),
        then the least index holding it or a NaN (a NaN is only there if the extreme is
        one; -0.0 == 0.0, so the first zero of either sign), as NumPy's first index."""
        extreme = self.reduction("reduce_max" if kind == "argmax" else "reduce_min", x, dtype)
        self.ranks[extreme], self.kept[extreme] = self.ranks[x], True   # per row
        hit = self.op("eq", (x, extreme), np.dtype(bool))
        if dtype.kind == "f":
            hit = self.op("logical_or", (hit, self.op("isnan", (x,), np.dtype(bool))),
                          np.dtype(bool))
        index = self.op(ROW_INDEX, (), _I64)
        self.elements[index], self.ranks[index] = True, self.ranks[x]
        return self.reduction("reduce_min", self.op("where", (hit, index,
                                                              self.op(ROW_LENGTH, (), _I64)),
                                                     _I64), _I64)

    def sum_as_numpy(self, node: Node, x: int, dtype: np.dtype, buffered: bool = False) -> int:
        """np.sum of ``x`` in its own ``dtype`` (``buffered``: cast to it in buffers)."""
        if dtype == np.float16:
            return self.half_sum(node, "sum", x, dtype)
        return self.reduction("reduce_sum", x, dtype, buffered)

    def half_sum(self, node: Node, kind: str, x: int, dtype: np.dtype) -> int:
        """A float16 sum or product as NumPy's half loops compute it: along a row in
        float32 (a sum pairwise, a product in order), rounded once; along a leading axis
        one half operation after another."""
        if dtype != np.float16:
            raise GroupError(f"{node.kind} into float16 (NumPy's buffered half loop)")
        name = f"reduce_{kind}"
        if self.axes[-1] != self.reduced_rank - 1:
            return self.reduction(name, x, dtype)
        single = np.dtype(np.float32)
        return self.cast(self.reduction(name, self.cast(x, single), single), dtype)

    def mean_as_numpy(self, node: Node, call: ReductionCall, x: int, dtype: np.dtype) -> int:
        """np.mean (numpy/_core/_methods.py): the sum in float64 for integers and bools, in
        float32 for float16 (whose result NumPy rounds to float16: through float32 for an
        array, directly for a scalar), or in dtype=; divided by the count in float64."""
        total = call.dtype
        if total is None:
            total = _F64 if dtype.kind in "biu" else \
                np.dtype(np.float32) if dtype == np.float16 else dtype
        if total not in _FLOATS or dtype.kind not in "biuf":
            raise GroupError(f"{node.kind} of {dtype} into {total}")
        mean = self.mean(node, self.cast(x, total), total, buffered=total != dtype)
        if dtype != np.float16 or call.dtype is not None:
            return mean
        scalar = not call.keepdims and len(self.axes) == self.reduced_rank
        return self.cast(self.quotients[-1] if scalar else mean, dtype)

    def mean(self, node: Node, x: int, dtype: np.dtype, buffered: bool = False) -> int:
        self.min_length = max(self.min_length, 1)
        return self.divided(self.sum_as_numpy(node, x, dtype, buffered),
                            self.op(ROW_LENGTH, (), _I64), dtype)

    def divided(self, total: int, count: int, dtype: np.dtype) -> int:
        """`total / count` as NumPy divides a sum by an intp count: in float64."""
        quotient = self.op("truediv", (self.cast(total, _F64), self.cast(count, _F64)), _F64)
        self.quotients.append(quotient)
        return self.cast(quotient, dtype)

    # ---- the kernel
    def finish(self, nodes: list[Node], used_outside) -> FusedKernel:
        members = [v for node in nodes for v in node.outputs]
        if self.axes is None:    # no reduction yet: only the elementwise checks apply
            return FusedKernel(None, list(self.group_inputs), tuple(self.feeds), [], (), (),
                               raising=frozenset(self.raising))
        rank = self.reduced_rank
        arrays = frozenset(i for i, inp in enumerate(self.inputs) if not inp.is_scalar)
        if max(self.inputs[i].rank for i in arrays) != rank:
            raise GroupError("an array of higher rank than the reductions' operands")
        checks = {self.ancestors[x] for x in self.reduction_args}
        outputs, numbers, ranks = [], [], []
        for v in members:
            if not used_outside(v):
                continue
            n = self.numbers[v]
            if self.elements[n]:
                if self.ranks[n] != rank:
                    raise GroupError(f"a result of rank {self.ranks[n]} in a rank-{rank} group")
                checks.add(self.ancestors[n])
            numbers.append(n)
            ranks.append(self.ranks[n])
            outputs.append(GroupOutput(v, [v], self.value_type(n)))
        if not outputs:
            raise GroupError("no result of the group is used")
        spec = RowKernelSpec(tuple(self.inputs), tuple(self.final_ops()),
                             tuple(map(self.final, numbers)), tuple(ranks), **self.layout())
        ok, reason = row_supports(spec)
        if not ok:
            raise GroupError(f"the row-kernel generator refuses it: {reason}")
        return FusedKernel(spec, list(self.group_inputs), tuple(self.feeds), outputs,
                           tuple(c for c in checks if c != arrays), (),
                           {v: self.input_type(v) for v in self.group_inputs},
                           self.range_checks,
                           {v: self.value_type(self.number(v)) for v in members},
                           frozenset(self.raising), tuple(self.size_one_checks))

    def layout(self) -> dict:
        """The spec's iteration fields for the group's reduced axes: rows over trailing
        axes (all of them: ``full``), or a column kernel for a block before the last."""
        axes, rank = self.axes, self.reduced_rank
        row_inputs = tuple(self.slots[n] for n in self.row_inputs)
        if axes[-1] != rank - 1:
            if any(self.trailing_ones[n] < rank - 1 - axes[-1] for n in self.row_inputs):
                raise GroupError("a value kept per row in a reduction of leading axes that "
                                 "varies along the kept axes after them")
            if row_inputs:   # broadcast along all of them: one value per reduced row
                raise _PerRowError("a value kept per row in a reduction of leading axes")
            return {"full": False, "min_length": self.min_length,
                    "column": (axes[0], axes[-1] + 1)}
        if row_inputs and len(axes) > 1:
            raise _PerRowError("a value kept per row in a reduction of several axes")
        full = len(axes) == rank and rank > 1
        return {"full": full, "min_length": self.min_length, "row_inputs": row_inputs,
                "row_axes": len(axes)}

    def final_ops(self) -> list[KernelOp]:
        return [KernelOp(op.op, tuple(map(self.final, op.args)), op.dtype, op.attrs)
                for op in self.ops]

    def value_type(self, n: int) -> TensorType:
        rank = self.ranks[n]
        return TensorType(self.dtypes[n].name, (None,) * rank, None,
                          self.elements[n] or rank > 0)


class _PerRowError(GroupError):
    """An array of last size 1 read as a value per row where the reduced axes are not one
    row: read again as an array broadcast along that axis."""


def build_row_group(nodes: list[Node], used_outside) -> FusedKernel:
    """The row kernel computing `nodes` (in program order); `used_outside(value)` tells
    which results the rest of the program reads.  Its `spec` is None while the nodes hold
    no reduction (a group still growing).  Raises GroupError.

    An array of last size 1 (a kept reduction made elsewhere: `x - m` with `m` of shape
    (rows, 1)) is first read as one value per row; where the group reduces more than the
    last axis (`np.sum(x * w)` with `w` of shape (rows, 1)) or leading ones (`(x *
    w).sum(axis=0)`) it is read again as any other array, broadcast along the last axis
    (the launcher's strided kernel walks it, or the column kernel that reads it once per
    reduced row)."""
    try:
        return _build_row_group(nodes, used_outside, True)
    except _PerRowError:
        return _build_row_group(nodes, used_outside, False)


def _build_row_group(nodes: list[Node], used_outside, per_row: bool) -> FusedKernel:
    builder = _RowBuilder(per_row)
    for node in nodes:
        call = read_reduction(node) or read_call(node)
        if call is None:
            raise GroupError(f"{node.kind} is neither an elementwise op nor a reduction")
        builder.add(node, call)
    return builder.finish(nodes, used_outside)


def build_fused_group(nodes: list[Node], used_outside) -> FusedKernel:
    """A FusionGroup's kernel: a row kernel when it holds a reduction, else elementwise."""
    if any(read_reduction(n) is not None for n in nodes):
        return build_row_group(nodes, used_outside)
    return build_group(nodes, used_outside)
