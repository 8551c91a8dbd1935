"""Compiling a RowKernelSpec once and calling it: ``kernel.call(*inputs, shape=None)``.

The call lays the broadcast iteration shape out as the kernel walks it
(``reduction_layout``: rows, or a column kernel's outer, reduced and inner blocks).  A full
reduction (``spec.full``) needs every array input C-contiguous with the iteration shape:
NumPy then sums one run of all elements, which is what the kernel follows.  Anything else
(a Fortran-ordered or strided row, an empty or too short row) raises ValueError, which
the group's launcher answers by running the group's ops in the interpreter: NumPy's own
results and errors, never a wrong one.

A kernel that raised floating-point flags which NumPy's error state does not ignore
raises ``FloatingPointFlags`` (``launch._finish``): the launcher then runs the group's ops
in NumPy, which warns or raises as eager code does.

Outputs are fresh C-ordered arrays; a row-level output of rank 0 is returned as a NumPy
scalar, as NumPy's full reductions do.
"""
from __future__ import annotations

import hashlib
import math

import numpy as np

from tsjit.codegen.column_reduction import build_column_kernel_module
from tsjit.codegen.engine import CompiledModule, generator_fingerprint, get_engine
from tsjit.codegen.kernel_cache import KernelCache
from tsjit.codegen.launch import _finish, _native_function, broadcast_shape
from tsjit.codegen.output_pool import OutputPool
from tsjit.codegen.reduction import PARALLEL_FOR, build_row_kernel_module, row_entry_parameter_types
from tsjit.codegen.reduction_layout import LayoutError, column_layout, kept_shape, row_layout
from tsjit.codegen.reduction_spec import (
    BUFFER,
    BUFFERED,
    RowKernelSpec,
    element_level,
    row_supports,
)

__all__ = ["RowKernel", "compile_row_kernel"]

# Shared while some executor holds one (weak: see launch._kernels).
_kernels: KernelCache[RowKernelSpec, RowKernel] = KernelCache(row_supports, "row kernel")


class RowKernel:
    """A compiled row kernel (see the module docstring)."""

    def __init__(self, spec: RowKernelSpec, entry: str, compiled: CompiledModule) -> None:
        self.spec, self.compiled = spec, compiled
        self.native = _native_function(row_entry_parameter_types(spec), compiled.addresses[entry])
        self.arrays = [i for i, inp in enumerate(spec.inputs) if not inp.is_scalar]
        self.buffered = any(BUFFERED in op.attrs for op in spec.ops)
        self.scalars = [i for i, inp in enumerate(spec.inputs) if inp.is_scalar]
        levels = element_level(spec)
        self.outputs = [(spec.value_dtype(v), levels[v], rank)
                        for v, rank in zip(spec.outputs, spec.output_ranks)]
        # element-level outputs come from the kernels' output memory (pages kept between
        # calls: a fresh 16 MB array faults in every page)
        pool = OutputPool.shared()
        self.allocators = [pool.allocator(dtype, rank) if element else None
                           for dtype, element, rank in self.outputs]

    def call(self, *args, shape=None) -> tuple:
        spec = self.spec
        arrays = [args[i] for i in self.arrays]
        if shape is None:
            shape = arrays[0].shape
            if any(a.shape != shape for a in arrays[1:]):
                shape = broadcast_shape(*(a.shape for a in arrays))
        if spec.column is not None:
            return self.call_columns(args, arrays, shape)
        if self.buffered and np.getbufsize() != BUFFER:
            raise LayoutError("NumPy's buffer size is not the one the kernel follows")
        if spec.full:
            if any(a.shape != shape or not a.flags.c_contiguous for a in arrays):
                raise LayoutError("a full reduction of operands that are not one C run")
            rows, n = 1, math.prod(shape)
            strides = [0] * len(arrays)
        else:
            rows, n, strides = row_layout(arrays, [i in spec.row_inputs for i in self.arrays],
                                          shape, spec.row_axes)
        if n < spec.min_length:
            raise LayoutError("rows too short for the reductions (NumPy raises or warns)")
        reduced = range(0 if spec.full else len(shape) - spec.row_axes, len(shape))
        results = self.allocate(shape, reduced)
        for dtype, element, _ in self.outputs:
            strides.append(n * dtype.itemsize if element else
                           dtype.itemsize if not spec.full else 0)
        block = np.array([rows, n, *strides], np.int64)
        return self.run(args, arrays, results, block)

    def call_columns(self, args: tuple, arrays: list, shape: tuple[int, ...]) -> tuple:
        """A column kernel's call (``reduction_layout.column_layout``)."""
        start, stop = self.spec.column
        (outer, count, inner), outer_strides, row_strides = column_layout(arrays, shape,
                                                                          (start, stop))
        if count < self.spec.min_length:
            raise LayoutError("too few elements to reduce (NumPy raises or warns)")
        results = self.allocate(shape, range(start, stop))
        for dtype, element, _ in self.outputs:
            outer_strides.append(count * inner * dtype.itemsize if element
                                 else inner * dtype.itemsize)
            row_strides.append(inner * dtype.itemsize if element else 0)
        block = np.array([outer, count, inner, *outer_strides, *row_strides], np.int64)
        return self.run(args, arrays, results, block)

    def allocate(self, shape: tuple[int, ...], axes: range) -> list[np.ndarray]:
        """Fresh outputs: element-level ones of ``shape``, reduced ones without ``axes``
        (or with them as 1: keepdims)."""
        results = []
        for (dtype, element, rank), allocate in zip(self.outputs, self.allocators):
            if element:
                results.append(allocate(shape, None))
            else:
                results.append(np.empty(kept_shape(shape, axes, rank == len(shape)), dtype))
        return results

    def run(self, args: tuple, arrays: list, results: list, block: np.ndarray) -> tuple:
        operands = (*arrays, *results, block)
        status = self.native(id(operands), *(args[i] for i in self.scalars))
        if status:   # flags NumPy's error state may report: FloatingPointFlags
            _finish(status, None, operands, (), None)
        return tuple(r[()] if r.ndim == 0 else r for r in results)

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
    build = build_row_kernel_module if spec.column is None else build_column_kernel_module
    name = "tsjit_rows_" + hashlib.sha256(repr(spec).encode()).hexdigest()[:20]
    compiled = engine.compile_keyed(
        f"{generator_fingerprint()}|rows|{parallel}|{spec!r}",
        lambda: build(spec, name, parallel), [name])
    return RowKernel(spec, name, compiled)
