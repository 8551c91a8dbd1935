"""Compiling a RowKernelSpec once and calling it: ``kernel.call(*inputs, shape=None)``.

The call lays the broadcast iteration shape out as the kernel walks it
(``reduction_layout``: rows, or a column kernel's outer, reduced and inner blocks).  A full
reduction (``spec.full``) needs every array input C-contiguous with the iteration shape:
NumPy then sums one run of all elements, which is what the kernel follows.  Fortran-ordered
operands run the kernel of the reversed axes (on the transposed operands: its strided
one where they are strided); other rows NumPy sums in their logical order (a 1-D slice,
a reversed view, a 2-D slice or broadcast operand reduced whole) the kernel that walks
its inputs at their strides (``strided``, ``reduction_strided``).  A
kernel remembers which of these runs each layout it has seen (``_Plan``).  Anything else
(operands NumPy walks in another order, an empty or too short row; an empty iteration
shape with a non-empty operand, on which NumPy computes ops that may warn)
raises ValueError, which the group's launcher answers by running the group's ops in the
interpreter: NumPy's own results and errors, never a wrong one.

A kernel that raised floating-point flags which NumPy's error state does not ignore
raises ``FloatingPointFlags`` (``launch._finish``): the launcher then runs the group's ops
in NumPy, which warns or raises as eager code does.  A kernel stopped for Ctrl-C lets
Python's handler run (KeyboardInterrupt by default); if that returns, the kernel runs
again from the start (its outputs are fresh: nothing else was written).

Outputs are fresh C-ordered arrays; a row-level output of rank 0 is returned as a NumPy
scalar, as NumPy's full reductions do.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import NamedTuple

import numpy as np

from tsjit.codegen.engine import CompiledModule, generator_fingerprint, get_engine
from tsjit.codegen.kernel_abi import FLAG_BITS, PARALLEL_FOR, entry_parameter_types
from tsjit.codegen.kernel_cache import KernelCache
from tsjit.codegen.kernel_spec import invalid_values_vary
from tsjit.codegen.launch import _finish, _native_function, broadcast_shape
from tsjit.codegen.numpy_minmax import fingerprint, unrolled_holds
from tsjit.codegen.output_layout import OutputLayouts
from tsjit.codegen.output_pool import OutputPool
from tsjit.codegen.reduction_layout import (
    LayoutError,
    column_layout,
    fortran_ordered,
    kept_shape,
    reversed_axes,
    row_layout,
    strided_row_layout,
)
from tsjit.codegen.reduction_spec import (
    ARG_REDUCTIONS,
    BUFFER,
    BUFFERED,
    REDUCTIONS,
    ROW_INDEX,
    RowKernelSpec,
    element_level,
    float_extremes,
    order_dtypes,
    row_supports,
)

__all__ = ["RowKernel", "compile_row_kernel"]

# Shared while some executor holds one (weak: see launch._kernels).
_kernels: KernelCache[RowKernelSpec, RowKernel] = KernelCache(row_supports, "row kernel")


# Layouts a kernel remembers (laying one out costs microseconds of Python per call).
_PLANS = 32


class _Plan(NamedTuple):
    """How one layout of the operands runs: by which kernel (this one, its ``transposed``
    one on the operands transposed, its ``strided`` one, or a column kernel reading other
    inputs once per reduced row), its block (``[rows, n, row stride per operand...]``, or
    a column kernel's) and each output's shape."""

    block: np.ndarray
    shapes: tuple[tuple[int, ...], ...]
    kernel: RowKernel | None = None   # None: the kernel that planned it
    transposed: int = 0               # the iteration rank the operands are transposed at


# Ops whose values depend on the order the kernel walks the elements in.
POSITIONAL = (*ARG_REDUCTIONS, ROW_INDEX)


class RowKernel:
    """A compiled row kernel (see the module docstring)."""

    def __init__(self, spec: RowKernelSpec, entry: str, compiled: CompiledModule) -> None:
        self.spec, self.compiled = spec, compiled
        self.native = _native_function(entry_parameter_types(spec), compiled.addresses[entry])
        self.arrays = [i for i, inp in enumerate(spec.inputs) if not inp.is_scalar]
        self.buffered = any(BUFFERED in op.attrs for op in spec.ops)
        self._transposed: RowKernel | bool | None = None
        self._strided: RowKernel | None = None
        # column kernels of this spec with other inputs broadcast along the inner axes
        self._variants: dict[tuple[int, ...], RowKernel] = {}
        self._plans: dict[tuple, _Plan] = {}   # by (shape, each array's shape and strides)
        self.scalars = [i for i, inp in enumerate(spec.inputs) if inp.is_scalar]
        # an invalid flag sends the call to NumPy under any error state where NumPy's
        # values depend on its loop (kernel_spec.invalid_values_vary)
        self.rerun = FLAG_BITS["invalid"] if invalid_values_vary(spec) else 0
        # per array input: whether a reduction reads it as it is (not a computed value)
        read = {op.args[0] for op in spec.ops if op.op in REDUCTIONS}
        self.direct = [i in read for i in self.arrays]
        # array inputs (by position) a float32/float64 max/min reads as they are: at
        # another stride than the element size NumPy runs its unrolled scalar loop
        self.unrolled = {self.arrays.index(op.args[0]): np.dtype(op.dtype)
                         for op in float_extremes(spec.ops)
                         if op.args[0] in self.arrays and np.dtype(op.dtype).itemsize > 2}
        levels = element_level(spec)
        self.outputs = [(spec.value_dtype(v), levels[v], rank)
                        for v, rank in zip(spec.outputs, spec.output_ranks)]
        # element-level outputs come from the kernels' output memory (pages kept between
        # calls: a fresh 16 MB array faults in every page)
        pool = OutputPool.shared()
        self.allocators = [pool.allocator(dtype, rank) for dtype, _, rank in self.outputs]
        # where NumPy lays out the results of Fortran-ordered operands (``allocate``)
        self.layouts = OutputLayouts(spec, list(range(len(spec.outputs))),
                                     self.reduced_axes(spec.out_rank))

    def call(self, *args, shape=None) -> tuple:
        arrays = [args[i] for i in self.arrays]
        if self.buffered and np.getbufsize() != BUFFER:
            raise LayoutError("NumPy's buffer size is not the one the kernel follows")
        key = (shape, *[(a.shape, a.strides) for a in arrays])
        plan = self._plans.get(key)
        if plan is None:
            if shape is None:
                shape = arrays[0].shape
                if any(a.shape != shape for a in arrays[1:]):
                    shape = broadcast_shape(*(a.shape for a in arrays))
            plan = self.choose(args, arrays, shape)
            if len(self._plans) >= _PLANS:
                self._plans.clear()
            self._plans[key] = plan
        results = self.allocate(plan.shapes, arrays, bool(plan.transposed))
        if plan.kernel is None:
            return self.run(args, arrays, results, plan.block)
        if plan.transposed:
            args = self.transpose(args, plan.transposed)
            arrays = [args[i] for i in self.arrays]
        return plan.kernel.run(args, arrays, results, plan.block)

    def choose(self, args: tuple, arrays: list, shape: tuple[int, ...]) -> _Plan:
        """The plan of a layout not seen yet: this kernel's, else (Fortran-ordered
        operands) the transposed kernel's, else the strided kernel's (LayoutError where
        none walks the operands as NumPy does)."""
        if 0 in shape and any(a.size for a in arrays):
            raise LayoutError("no element, but NumPy computes ops on a non-empty operand "
                              "before broadcasting (they may warn)")
        self.check_length(shape)
        self.check_element_shapes(arrays, shape)
        try:
            return self.plan(arrays, shape)
        except LayoutError:
            pass
        if fortran_ordered(arrays, shape) and self.transposed() is not None:
            # NumPy walks Fortran-ordered operands (and their temporaries) in memory order:
            # the transposed operands in C order, by the kernel of the transposed axes
            flipped = self.transpose(args, len(shape))
            for kernel in (self._transposed, self._transposed.strided()):
                try:
                    plan = kernel.plan([flipped[i] for i in self.arrays], shape[::-1])
                    return plan._replace(kernel=plan.kernel or kernel, transposed=len(shape))
                except LayoutError:
                    pass
        # rows of another stride, in their logical order (reduction_layout)
        return self.strided().plan(arrays, shape)._replace(kernel=self.strided())

    def transposed(self) -> RowKernel | None:
        """The kernel of this one's reduced axes in reversed order (compiled on first use),
        or None where results would not follow: an index (argmax's results are C-ordered
        whatever the layout, and argmax lowered to two passes reads ``row_index``) or a
        value kept per row."""
        if self._transposed is None:
            spec = self.spec
            if spec.row_inputs or any(op.op in POSITIONAL for op in spec.ops):
                self._transposed = False
            else:
                self._transposed = compile_row_kernel(reversed_axes(spec))
        return self._transposed or None

    def transpose(self, args: tuple, rank: int) -> tuple:
        """``args`` with each array input transposed, as of ``rank`` axes."""
        flipped = list(args)
        for i in self.arrays:
            flipped[i] = args[i].reshape((1,) * (rank - args[i].ndim) + args[i].shape).T
        return tuple(flipped)

    def check_length(self, shape: tuple[int, ...]) -> None:
        """Raise LayoutError where too few elements are reduced, whatever the layout
        (NumPy raises or warns)."""
        axes = self.reduced_axes(len(shape))
        if math.prod(shape[axes.start:axes.stop]) < self.spec.min_length:
            raise LayoutError("too few elements to reduce (NumPy raises or warns)")

    def reduced_axes(self, rank: int) -> range:
        spec = self.spec
        start, stop = spec.column or (0 if spec.full else rank - spec.row_axes, rank)
        return range(start, stop)

    def check_element_shapes(self, arrays: list, shape: tuple[int, ...]) -> None:
        """Raise LayoutError where an element-level result's NumPy shape is not ``shape``
        (the kernel's, of every operand): an operand only reduced is larger than the ones
        its result meets (``x1 - x0.max()`` of x1 (1, 4), x0 (3, 4) is (1, 4))."""
        reduced = self.reduced_axes(len(shape))
        shapes = {i: (1,) * (len(shape) - a.ndim) + a.shape
                  for i, a in zip(self.arrays, arrays)}
        for value, op in enumerate(self.spec.ops, start=len(self.spec.inputs)):
            operands = [shapes[a] for a in op.args if a in shapes]
            if operands:
                found = broadcast_shape(*operands)
                shapes[value] = tuple(1 if k in reduced else n for k, n in enumerate(found)) \
                    if op.op in REDUCTIONS else found
        for value, (_, element, _) in zip(self.spec.outputs, self.outputs):
            if element and shapes.get(value, shape) != shape:
                raise LayoutError("an element-level result is smaller than the operands "
                                  "(NumPy broadcasts it against a reduction's result)")

    def strided(self) -> RowKernel:
        """The kernel of this spec that reads its array inputs at element strides
        (compiled on first use)."""
        if self._strided is None:
            self._strided = self if self.spec.strided or self.spec.column is not None else \
                compile_row_kernel(dataclasses.replace(self.spec, strided=True))
        return self._strided

    def plan(self, arrays: list, shape: tuple[int, ...]) -> _Plan:
        """The block and output shapes for operands in the order the kernel walks them
        (LayoutError where it cannot walk them as NumPy does)."""
        spec = self.spec
        if spec.column is not None:
            return self.plan_columns(arrays, shape)
        per_row = [i in spec.row_inputs for i in self.arrays]
        row_axes = len(shape) if spec.full else spec.row_axes
        layout = []
        if spec.strided:
            rows, n, layout = strided_row_layout(arrays, per_row, self.direct, shape, row_axes)
            for k, dtype in self.unrolled.items():
                if layout[len(arrays) + k] != dtype.itemsize and not unrolled_holds(dtype.name):
                    raise LayoutError("a strided max/min NumPy's loop here does not follow")
            strides, layout = layout[:len(arrays)], layout[len(arrays):]
        elif spec.full:
            if any(a.shape != shape or not a.flags.c_contiguous for a in arrays):
                raise LayoutError("a full reduction of operands that are not one C run")
            rows, n = 1, math.prod(shape)
            strides = [0] * len(arrays)
        else:
            rows, n, strides = row_layout(arrays, per_row, shape, row_axes)
        for dtype, element, _ in self.outputs:
            strides.append(n * dtype.itemsize if element else
                           dtype.itemsize if not spec.full else 0)
        reduced = range(0 if spec.full else len(shape) - spec.row_axes, len(shape))
        return _Plan(np.array([rows, n, *strides, *layout], np.int64),
                     self.shapes(shape, reduced))

    def plan_columns(self, arrays: list, shape: tuple[int, ...]) -> _Plan:
        """A column kernel's plan (``reduction_layout.column_layout``): by the kernel of
        this spec whose inputs broadcast along the inner axes are those of the layout."""
        start, stop = self.spec.column
        (outer, count, inner), outer_strides, row_strides, broadcast = column_layout(
            arrays, shape, (start, stop))
        for dtype, element, _ in self.outputs:
            outer_strides.append(count * inner * dtype.itemsize if element
                                 else inner * dtype.itemsize)
            row_strides.append(inner * dtype.itemsize if element else 0)
        block = np.array([outer, count, inner, *outer_strides, *row_strides], np.int64)
        plan = _Plan(block, self.shapes(shape, range(start, stop)))
        broadcast = tuple(self.arrays[k] for k in broadcast)
        if broadcast == self.spec.inner_broadcast:
            return plan
        kernel = self._variants.get(broadcast)
        if kernel is None:
            kernel = self._variants[broadcast] = compile_row_kernel(
                dataclasses.replace(self.spec, inner_broadcast=broadcast))
        return plan._replace(kernel=kernel)

    def shapes(self, shape: tuple[int, ...], axes: range) -> tuple[tuple[int, ...], ...]:
        """Each output's shape: element-level ones ``shape``, reduced ones without
        ``axes`` (or with them as 1: keepdims)."""
        return tuple(shape if element else kept_shape(shape, axes, rank == len(shape))
                     for _, element, rank in self.outputs)

    def allocate(self, shapes: tuple[tuple[int, ...], ...], arrays: list,
                 transposed: bool) -> list[tuple[np.ndarray, np.ndarray]]:
        """Fresh outputs of ``shapes`` for the array operands ``arrays``, each as (result,
        the C-ordered view the kernel writes). Each result lies as NumPy lays out its own
        (``OutputLayouts``: C order where every operand of two axes or more is
        C-contiguous; else its iterator's order, axes of length 1 where it puts them:
        x + x.sum(keepdims=True) of a Fortran (1, 2, 2) bool x has strides (32, 8, 16),
        not np.empty(order="F")'s (8, 8, 16); (x * 0.5).mean(axis=0, keepdims=True) of a
        Fortran (8, 2) view, (8, 8), not (16, 8)). ``transposed``: the plan runs the
        transposed kernel (``shapes`` are its), which writes each result's transpose.
        LayoutError where the kernel could not write NumPy's result (it is not C-, or for
        a transposed plan Fortran-contiguous)."""
        if not transposed and all(a.flags.c_contiguous for a in arrays if a.ndim > 1):
            return [(out, out) for out in (
                allocate(shape, None) if element else np.empty(shape, dtype)
                for (dtype, element, _), allocate, shape
                in zip(self.outputs, self.allocators, shapes))]
        results = []
        for allocate, shape, layout in zip(self.allocators, shapes, self.layouts(*arrays)):
            out = allocate(shape[::-1] if transposed else shape, layout)
            if not (out.flags.f_contiguous if transposed else out.flags.c_contiguous):
                raise LayoutError("NumPy's result is not laid out as the kernel writes")
            results.append((out, out.T if transposed else out))
        return results

    def run(self, args: tuple, arrays: list, results: list, block: np.ndarray) -> tuple:
        operands = (*arrays, *(view for _, view in results), block)
        scalars = tuple(args[i] for i in self.scalars)
        status = self.native(id(operands), *scalars)
        if status:   # floating-point flags (FloatingPointFlags), or stopped for Ctrl-C
            _finish(status, self.run_again, operands, scalars, None, self.rerun)
        return tuple(r[()] if r.ndim == 0 else r for r, _ in results)

    def run_again(self, operands: int, _start: int, *scalars) -> int:
        """``launch._finish``'s resume: the whole job again (see the module docstring)."""
        return self.native(operands, *scalars)

    @property
    def llvm_ir(self) -> str:
        return self.compiled.optimized_ir

    @property
    def asm(self) -> str:
        return self.compiled.asm


def compile_row_kernel(spec: RowKernelSpec) -> RowKernel:
    """The compiled kernel for ``spec`` (compiled on first request, then cached while it
    is in use)."""
    return _kernels.get(spec, _build_row_kernel)


def _build_row_kernel(spec: RowKernelSpec) -> RowKernel:
    engine = get_engine()
    parallel = PARALLEL_FOR in engine.symbols
    name = "tsjit_rows_" + hashlib.sha256(repr(spec).encode()).hexdigest()[:20]
    ties = order_dtypes(spec.ops)   # the kernel follows NumPy's order measured here

    def build():      # the code generators load on the first miss of the caches
        if spec.column is None:
            from tsjit.codegen.reduction import build_row_kernel_module as build_module
        else:
            from tsjit.codegen.column_reduction import build_column_kernel_module as build_module
        return build_module(spec, name, parallel)
    compiled = engine.compile_keyed(
        f"{generator_fingerprint()}|rows|{parallel}|{spec!r}|{ties and fingerprint(ties)}",
        build, [name])
    return RowKernel(spec, name, compiled)
