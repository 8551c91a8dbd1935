"""Where NumPy would put each fresh result of a fused kernel in memory.

NumPy gives a ufunc's result its iterator's K order: the axes sorted by the operands'
strides in a stable insertion sort in which, where operands disagree, C order stays
(``npyiter_find_best_axis_ordering``). A fused kernel is a chain of ufuncs, so an output
must have the order its chain gives it: ``np.fmax(f, c) + 0.0`` of a Fortran ``f`` and a C
``c`` is C-ordered, although its first full-rank input is Fortran-ordered. Each op orders
the axes by its own operands: inputs by their strides, earlier results by the order found
for them. When every input of two or more axes is C-contiguous, every result is C-ordered
(each pair of axes has a C vote or none), which the launcher checks first.

A layout is None (C order), "F" (Fortran order) or the axes from outermost to innermost.
"""

from __future__ import annotations

import numpy as np

from tsjit.codegen.kernel_spec import KernelSpec

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


class OutputLayouts:
    """``layouts(*array_inputs)``: each fresh output's Layout (the caller has checked that
    not every input is C-contiguous). Kept per combination of input shapes and strides."""

    def __init__(self, spec: KernelSpec, fresh_outputs: list[int]) -> None:
        self.ndim = spec.out_rank
        self.inputs = [i for i, inp in enumerate(spec.inputs) if not inp.is_scalar]
        self.n_in = len(spec.inputs)
        self.ops = [op.args for op in spec.ops]
        self.outputs = [spec.outputs[j] for j in fresh_outputs]
        self.seen: dict[tuple, tuple[Layout, ...]] = {}

    def __call__(self, *arrays: np.ndarray) -> tuple[Layout, ...]:
        key = tuple((a.shape, a.strides) for a in arrays)
        layouts = self.seen.get(key)
        if layouts is None:
            layouts = self.seen[key] = self._find(arrays)
        return layouts

    def _find(self, arrays: tuple[np.ndarray, ...]) -> tuple[Layout, ...]:
        ndim = self.ndim
        shapes: dict[int, tuple[int, ...]] = {}
        strides: dict[int, tuple[int, ...]] = {}
        orders: dict[int, list[int]] = {}
        for value, array in zip(self.inputs, arrays):
            lead = ndim - array.ndim
            shapes[value] = (1,) * lead + array.shape
            strides[value] = (0,) * lead + tuple(
                s if n != 1 else 0 for s, n in zip(array.strides, array.shape))
        for value, args in enumerate(self.ops, start=self.n_in):
            operands = [a for a in args if a in shapes]    # scalars have no vote
            shape = np.broadcast_shapes(*(shapes[a] for a in operands)) if operands \
                else (1,) * ndim
            order = iteration_order([strides[a] for a in operands], ndim)
            shapes[value], orders[value] = shape, order
            strides[value] = _strides(shape, order)
        return tuple(self._layout(orders.get(v), strides.get(v)) for v in self.outputs)

    def _layout(self, order: list[int] | None, strides: tuple[int, ...] | None) -> Layout:
        if order is None:                 # an output that is an input's value, copied
            order = iteration_order([strides] if strides else [], self.ndim)
        if order == list(range(self.ndim - 1, -1, -1)):
            return None
        if order == list(range(self.ndim)):
            return "F"
        return tuple(reversed(order))
