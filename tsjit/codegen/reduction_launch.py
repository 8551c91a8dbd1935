"""Compiling a RowKernelSpec once and calling it: ``kernel.call(*inputs, shape=None)``.

The call lays the broadcast iteration shape out as rows: the last axis is the row (its
elements must be contiguous in every array input that spans it), the leading axes
collapse into one row stride per operand (broadcast axes have stride 0).  A full
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

from tsjit.codegen.engine import CompiledModule, generator_fingerprint, get_engine
from tsjit.codegen.kernel_cache import KernelCache
from tsjit.codegen.launch import _finish, _native_function, broadcast_shape
from tsjit.codegen.output_pool import OutputPool
from tsjit.codegen.reduction import PARALLEL_FOR, build_row_kernel_module, row_entry_parameter_types
from tsjit.codegen.reduction_spec import RowKernelSpec, element_level, row_supports

__all__ = ["RowKernel", "compile_row_kernel"]

# Shared while some executor holds one (weak: see launch._kernels).
_kernels: KernelCache[RowKernelSpec, RowKernel] = KernelCache(row_supports, "row kernel")


class LayoutError(ValueError):
    """The operands' layout is not one the kernel computes as NumPy does (see module doc)."""


def _row_stride(array: np.ndarray, shape: tuple[int, ...], per_row: bool) -> int:
    """The byte distance between consecutive rows of ``array`` broadcast to ``shape``
    (``per_row``: the kernel reads one value per row)."""
    n = shape[-1]
    if per_row:
        pass
    elif array.shape[-1] != n:
        if n != 1:
            raise LayoutError("an operand broadcast along the row")
    elif n > 1 and array.strides[-1] != array.itemsize:
        raise LayoutError("a row that is not contiguous")
    lead = len(shape) - 1
    sizes, strides = shape[:-1], [0] * lead
    offset = lead - (array.ndim - 1)
    for d in range(array.ndim - 1):
        if array.shape[d] != 1:
            strides[offset + d] = array.strides[d]
    row_stride, inner = 0, None
    for d in reversed(range(lead)):
        if sizes[d] == 1:
            continue
        if inner is None:
            row_stride = strides[d]
        elif strides[d] != inner[0] * inner[1]:
            raise LayoutError("leading axes that do not collapse into rows")
        inner = (strides[d], sizes[d])
    return row_stride


class RowKernel:
    """A compiled row kernel (see the module docstring)."""

    def __init__(self, spec: RowKernelSpec, entry: str, compiled: CompiledModule) -> None:
        self.spec, self.compiled = spec, compiled
        self.native = _native_function(row_entry_parameter_types(spec), compiled.addresses[entry])
        self.arrays = [i for i, inp in enumerate(spec.inputs) if not inp.is_scalar]
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
        if spec.full:
            if any(a.shape != shape or not a.flags.c_contiguous for a in arrays):
                raise LayoutError("a full reduction of operands that are not one C run")
            rows, n = 1, math.prod(shape)
            strides = [0] * len(arrays)
        else:
            if not shape:
                raise LayoutError("no axis to reduce")
            n, rows = shape[-1], math.prod(shape[:-1])
            strides = [_row_stride(a, shape, i in spec.row_inputs)
                       for i, a in zip(self.arrays, arrays)]
        if n < spec.min_length:
            raise LayoutError("rows too short for the reductions (NumPy raises or warns)")
        results = []
        for (dtype, element, rank), allocate in zip(self.outputs, self.allocators):
            if element:
                out = allocate(shape, None)
                strides.append(n * dtype.itemsize)
            else:
                kept = shape[:-1] if not spec.full else ()
                if rank == len(shape):
                    kept = (1,) * len(shape) if spec.full else kept + (1,)
                out = np.empty(kept, dtype)
                strides.append(dtype.itemsize if not spec.full else 0)
            results.append(out)
        block = np.array([rows, n, *strides], np.int64)
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
    name = "tsjit_rows_" + hashlib.sha256(repr(spec).encode()).hexdigest()[:20]
    compiled = engine.compile_keyed(
        f"{generator_fingerprint()}|rows|{parallel}|{spec!r}",
        lambda: build_row_kernel_module(spec, name, parallel), [name])
    return RowKernel(spec, name, compiled)
