"""Where NumPy would put each fresh result of a fused kernel in memory.

NumPy gives a ufunc's result its iterator's K order: the axes sorted by the operands'
strides in a stable insertion sort in which, where operands disagree, C order stays
(``npyiter_find_best_axis_ordering``). A fused kernel is a chain of ufuncs, so an output
must have the order its chain gives it: ``np.fmax(f, c) + 0.0`` of a Fortran ``f`` and a C
``c`` is C-ordered, although its first full-rank input is Fortran-ordered. Each op orders
the axes by its own operands: inputs by their strides, earlier results by the order found
for them. When every input of two or more axes is C-contiguous, every result is C-ordered
(each pair of axes has a C vote or none), which the launcher checks first.

A row kernel's reductions are modelled too: NumPy's reduction iterates its operand in
that operand's iteration order and allocates its result (the reduced axes of length 1) in
the same order, as it does an elementwise result: ``x.sum(axis=2, keepdims=True)`` of a
Fortran-ordered (2, 3, 4) array has strides (8, 16, 48); a result without the reduced axes
has the same strides on the axes it keeps. np.mean, np.var and np.std divide the sum by
the count (and take std's square root) in place (``out=ret``), so those ops keep the
sum's layout, where a fresh ufunc of a reduction's result (np.linalg.norm's sqrt) takes
the trivial loop. A float16 mean's float32 result is then copied (``np.float16(ret)``), laid
out as astype lays out a copy (C if C-contiguous, else Fortran if that); a float16 sum
(computed here in float32 and cast back) is NumPy's float16 array, whose sqrt is a
ufunc of a float16 operand (no cast: the trivial loop where it is contiguous).

A layout is None (C order), "F" (Fortran order) or the axes from outermost to innermost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tsjit.codegen.kernel_spec import EXPLICIT_CAST, OP_SIGNATURES, KernelOp, KernelSpec
from tsjit.codegen.reduction_spec import REDUCTIONS, ROW_LENGTH, RowKernelSpec

__all__ = ["Layout", "OutputLayouts", "iteration_order"]

Layout = None | str | tuple[int, ...]


def iteration_order(operands: list[tuple[int, ...]], ndim: int) -> list[int]:
    """NumPy's iteration order of ``ndim`` axes, innermost first, for operands given by
    their strides on each axis (0 where an operand is broadcast: it has no vote there)."""
    order = list(range(ndim - 1, -1, -1))
    for i0 in range(1, ndim):
        a0, position = order[i0], i0
        for i1 in range(i0 - 1, -1, -1):
            a1, voted, swap = order[i1], False, False
            for strides in operands:
                if strides[a0] and strides[a1]:
                    if abs(strides[a1]) <= abs(strides[a0]):
                        swap = False          # a vote for C order wins
                    elif not voted:
                        swap = True
                    voted = True
            if voted:
                if not swap:
                    break
                position = i1
        order.insert(position, order.pop(i0))
    return order


def _strides(shape: tuple[int, ...], order: list[int]) -> tuple[int, ...]:
    """The strides (in elements) of a fresh array laid out in ``order``, as the iterator
    sees them: 0 on an axis of length 1."""
    strides, step = [0] * len(shape), 1
    for axis in order:
        strides[axis] = step if shape[axis] != 1 else 0
        step *= shape[axis]
    return tuple(strides)


def _contiguity(shape: tuple[int, ...], order: list[int]) -> str:
    """NumPy's contiguity flags ("C", "F", both or neither) of an array laid out in
    ``order``: axes of length 1 do not count."""
    axes = [a for a in order if shape[a] != 1]
    return ("C" if axes == sorted(axes, reverse=True) else "") + \
        ("F" if axes == sorted(axes) else "")


@dataclass
class _Value:
    """What the model knows of one array of the chain."""

    shape: tuple[int, ...]     # broadcast to the kernel's rank
    rank: int                  # its own (NumPy's) rank
    votes: tuple[int, ...]     # strides, 0 on axes of length 1
    contiguity: str            # see _contiguity
    order: list[int] | None    # its axes innermost first (None: an input)


class OutputLayouts:
    """``layouts(*array_inputs)``: each fresh output's Layout (the caller has checked that
    not every input is C-contiguous). Kept per combination of input shapes and strides.

    A ufunc whose operands need no cast (beyond 0-d ones), have one shape and are all
    C-contiguous or all Fortran-contiguous takes NumPy's trivial loop, whose result is C
    (or Fortran) ordered; any other goes through the iterator, whose result is laid out in
    iteration order, axes of length 1 included: np.asfortranarray(b) + i8 of a bool b and
    an int8 i8 of shape (1, 2, 2) has strides (4, 1, 2), i8 + i8 has (1, 1, 2). np.where
    always iterates. An astype (EXPLICIT_CAST) is laid out as its source (empty_like). A
    value written in place (np.add(x, x.T, out=x), x[...] = e) is its array to the ops
    that use it: x * 2 after it is Fortran-ordered where x is.
    ``reduced``: the axes a row kernel's reductions reduce (see the module docstring)."""

    def __init__(self, spec: KernelSpec | RowKernelSpec, fresh_outputs: list[int],
                 reduced: range = range(0)) -> None:
        self.ndim = spec.out_rank
        self.spec = spec
        self.inputs = [i for i, inp in enumerate(spec.inputs) if not inp.is_scalar]
        self.n_in = len(spec.inputs)
        self.outputs = [spec.outputs[j] for j in fresh_outputs]
        ranks = spec.output_ranks if isinstance(spec, RowKernelSpec) else \
            (self.ndim,) * len(spec.outputs)
        self.ranks = [ranks[j] for j in fresh_outputs]
        self.reduced = reduced
        # values written in place: they lie in (and later ops read them from) their array
        self.written = {spec.outputs[j]: spec.inplace_target(j)
                        for j in range(len(spec.outputs))
                        if spec.inplace_target(j) is not None}
        self.seen: dict[tuple, tuple[Layout, ...]] = {}

    def __call__(self, *arrays: np.ndarray) -> tuple[Layout, ...]:
        key = tuple((a.shape, a.strides) for a in arrays)
        layouts = self.seen.get(key)
        if layouts is None:
            layouts = self.seen[key] = self._find(arrays)
        return layouts

    def _find(self, arrays: tuple[np.ndarray, ...]) -> tuple[Layout, ...]:
        ndim = self.ndim
        values: dict[int, _Value] = {}
        operand_casts: dict[int, int] = {}     # an operand's cast: the value it casts
        counts: set[int] = set()               # a row's count, and values of it alone
        # divisions by it (and std's sqrt of one): the dtype of the sum they overwrite
        in_place: dict[int, np.dtype] = {}
        # reductions (and a float16 sum's cast back from float32): their array's dtype
        sums: dict[int, np.dtype] = {}
        widened: dict[int, np.dtype] = {}      # reductions of a float16 value widened
        for value, array in zip(self.inputs, arrays):
            lead = ndim - array.ndim
            flags = array.flags
            values[value] = _Value(
                (1,) * lead + array.shape, array.ndim, (0,) * lead + tuple(
                    s if n != 1 else 0 for s, n in zip(array.strides, array.shape)),
                ("C" if flags.c_contiguous else "") + ("F" if flags.f_contiguous else ""),
                None)
        for value, op in enumerate(self.spec.ops, start=self.n_in):
            args = [a for a in op.args if a in values]     # scalars have no vote
            if not args:
                if op.op == ROW_LENGTH or any(a in counts for a in op.args):
                    counts.add(value)
                continue
            dtype = np.dtype(op.dtype)
            if any(a in counts for a in op.args) or (op.op == "sqrt" and args[0] in in_place):
                in_place[value] = in_place.get(args[0]) or \
                    sums.get(operand_casts.get(args[0], args[0]), dtype)
                values[value] = values[args[0]]
                continue
            if op.op == "cast" and EXPLICIT_CAST not in op.attrs and \
                    args[0] in widened and widened[args[0]] == dtype:   # (None == float64)
                sums[value] = dtype    # a float16 reduction's result, summed in float32
                values[value] = values[args[0]]
                continue
            if op.op == "cast" and EXPLICIT_CAST not in op.attrs and \
                    in_place.get(args[0], dtype) == dtype:
                operand_casts[value] = args[0]
                values[value] = values[args[0]]
                if args[0] in in_place:     # (out=ret: the sum's own dtype)
                    in_place[value] = dtype
                continue
            # (else a cast of mean's float32 result to float16: np.float16(ret), a copy)
            operands = [values[a] for a in args]
            shape = np.broadcast_shapes(*(v.shape for v in operands))
            rank = max(v.rank for v in operands)
            if op.op in REDUCTIONS:
                order = iteration_order([values[operand_casts.get(a, a)].votes
                                         for a in args], ndim)
                shape = tuple(1 if k in self.reduced else n for k, n in enumerate(shape))
                sums[value] = dtype
                source = operand_casts.get(args[0])
                if source is not None and self.spec.value_dtype(source) == np.float16:
                    widened[value] = np.dtype(np.float16)   # NumPy's float16 sum
            elif op.op == "cast":
                order = self._like(operands[0])
            elif rank > 1 and self._trivial(op, args, values, operand_casts, shape, rank):
                order = self._c_or_f(operands[0].contiguity)
            else:
                order = iteration_order([values[operand_casts.get(a, a)].votes
                                         for a in args], ndim)
            values[value] = _Value(shape, rank, _strides(shape, order),
                                   _contiguity(shape, order), order)
            if value in self.written:
                values[value] = values[self.written[value]]
        return tuple(self._layout(values.get(v), rank)
                     for v, rank in zip(self.outputs, self.ranks))

    def _trivial(self, op: KernelOp, args: list[int], values: dict[int, _Value],
                 operand_casts: dict[int, int], shape: tuple[int, ...], rank: int) -> bool:
        """Whether NumPy's ufunc takes its trivial loop (no iterator) for ``op``."""
        if op.op == "where" or any(a in operand_casts for a in args):
            return False
        dtypes = {self.spec.value_dtype(a) for a in op.args}
        if OP_SIGNATURES[op.op].operands in ("any", "shift") and len(dtypes) > 1:
            return False                  # NumPy casts an operand to the loop's dtype
        operands = [values[a] for a in args]
        return all(v.shape == shape and v.rank == rank and v.contiguity
                   and v.contiguity == operands[0].contiguity for v in operands)

    def _c_or_f(self, contiguity: str) -> list[int]:
        """The order of NumPy's trivial loop's result: C unless only Fortran-contiguous."""
        return list(range(self.ndim)) if contiguity == "F" else \
            list(range(self.ndim - 1, -1, -1))

    def _like(self, source: _Value) -> list[int]:
        """The order np.empty_like gives a copy of ``source``."""
        if source.contiguity:
            return self._c_or_f(source.contiguity)
        return source.order or iteration_order([source.votes], self.ndim)

    def _layout(self, value: _Value | None, rank: int) -> Layout:
        """``value``'s Layout as an array of ``rank`` axes (fewer than the kernel's: a
        reduction's result without its reduced axes)."""
        if value is None:                 # a scalar's value
            return None
        order = value.order if value.order is not None else self._like(value)
        if rank < self.ndim:
            order = [a - sum(r < a for r in self.reduced) for a in order
                     if a not in self.reduced]
        if order == list(range(rank - 1, -1, -1)):
            return None
        if order == list(range(rank)):
            return "F"
        return tuple(reversed(order))
