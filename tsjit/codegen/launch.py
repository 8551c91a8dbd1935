"""Compiling a KernelSpec once and calling it with the least work per call.

Per kernel we generate (with ``exec``, as ``dataclasses`` and ``namedtuple`` do) a Python
function specialized to the spec: it computes the broadcast shape, allocates fresh outputs,
makes in-place calls safe, and calls the native entry through cffi with ``id(array)`` for
arrays (the native code reads NumPy's struct itself, see ``elementwise``) and scalars by
value. A 16-element call costs a few hundred nanoseconds on top of the cffi call.

The caller (the executor's guards) guarantees dtypes and ranks match the spec; what the
guards cannot know per call is checked here: shapes broadcast (ValueError as NumPy), an
in-place target has the broadcast shape and is writeable, and inputs overlapping an
in-place target are copied first (``x[1:] += x[:-1]``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable

import cffi
import numpy as np

from tsjit.codegen.elementwise import PARALLEL_FOR, KernelModule, build_kernel_module
from tsjit.codegen.engine import CompiledModule, get_engine
from tsjit.codegen.kernel_spec import KernelSpec, supports
from tsjit.codegen.output_pool import OutputPool

__all__ = ["Kernel", "compile_kernel"]

_ffi = cffi.FFI()
_kernels: dict[KernelSpec, Kernel] = {}
_kernels_lock = threading.Lock()


class Kernel:
    """A compiled fused kernel: ``kernel(*inputs, out=None) -> tuple of outputs``.

    ``out`` optionally supplies arrays for the fresh (not in-place) outputs, in output
    order; they must have the broadcast shape and the output dtypes."""

    def __init__(self, spec: KernelSpec, module: KernelModule, compiled: CompiledModule):
        self.spec = spec
        self.compiled = compiled
        self.native = _ffi.cast(module.c_signature, compiled.addresses[module.entry])
        self.python_source = _call_source(spec)
        namespace = {
            "_native": self.native,
            "_broadcast_shapes": np.broadcast_shapes,
            "_overlaps": np.may_share_memory,
            "_check_target": _check_inplace_target,
            "_pool": OutputPool.shared(),
            "_dtypes": tuple(spec.value_dtype(v) for v in spec.outputs),
        }
        exec(compile(self.python_source, f"<tsjit kernel {module.entry}>", "exec"), namespace)
        # The executor's hot path may hold ``kernel.call`` directly (one frame less).
        self.call: Callable[..., tuple] = namespace["call"]

    def __call__(self, *args, out=None) -> tuple:
        return self.call(*args, out=out)

    @property
    def llvm_ir(self) -> str:
        return self.compiled.optimized_ir

    @property
    def asm(self) -> str:
        return self.compiled.asm


def _check_inplace_target(target: np.ndarray, shape: tuple) -> None:
    """NumPy's errors for ``x op= y`` that cannot write into ``x``."""
    if target.shape != shape:
        raise ValueError(
            f"non-broadcastable output operand with shape {target.shape} doesn't match "
            f"the broadcast shape {shape}"
        )
    if not target.flags.writeable:
        raise ValueError("output array is read-only")


def _call_source(spec: KernelSpec) -> str:
    """Python source of the per-kernel call function (see the module docstring)."""
    params = [f"a{i}" for i in range(len(spec.inputs))]
    arrays = [f"a{i}" for i, inp in enumerate(spec.inputs) if not inp.is_scalar]
    full_rank = [
        f"a{i}" for i, inp in enumerate(spec.inputs)
        if not inp.is_scalar and inp.rank == spec.out_rank
    ]
    lines = [f"def call({', '.join(params)}, out=None):"]
    # Broadcast shape: the common case (equal shapes) costs one tuple comparison per array.
    first = arrays[0]
    lines.append(f"    shape = {first}.shape")
    if len(arrays) > 1:
        differs = " or ".join(f"{a}.shape != shape" for a in arrays[1:])
        all_shapes = ", ".join(f"{a}.shape" for a in arrays)
        lines.append(f"    if {differs}:")
        lines.append(f"        shape = _broadcast_shapes({all_shapes})")
    targets = {t for t in spec.inplace if t is not None}
    for t in sorted(targets):
        lines.append(f"    _check_target(a{t}, shape)")
        for a in arrays:
            if a != f"a{t}":
                lines.append(f"    if _overlaps({a}, a{t}):")
                lines.append(f"        {a} = {a}.copy()")
    # Fresh outputs follow NumPy's layout: like the (first full-shape) input when it has
    # the result's shape, so Fortran-ordered inputs give Fortran-ordered results.
    fresh = [j for j in range(len(spec.outputs)) if spec.inplace_target(j) is None]
    model = full_rank[0] if full_rank else None
    results = []
    for position, j in enumerate(fresh):
        lines.append("    if out is None:")
        if model is not None:
            lines.append(f"        o{j} = _pool.take(shape, _dtypes[{j}], {model})")
        else:
            lines.append(f"        o{j} = _pool.take(shape, _dtypes[{j}], None)")
        lines.append("    else:")
        lines.append(f"        o{j} = out[{position}]")
    native_args = [
        f"id(a{i})" if not inp.is_scalar else f"a{i}" for i, inp in enumerate(spec.inputs)
    ] + [f"id(o{j})" for j in fresh]
    lines.append(f"    _native({', '.join(native_args)})")
    for j in range(len(spec.outputs)):
        t = spec.inplace_target(j)
        results.append(f"o{j}" if t is None else f"a{t}")
    lines.append(f"    return ({', '.join(results)},)")
    return "\n".join(lines) + "\n"


def _kernel_name(spec: KernelSpec, parallel: bool) -> str:
    digest = hashlib.sha256(f"{spec!r}|{parallel}".encode()).hexdigest()[:20]
    return f"tsjit_ew_{digest}"


def compile_kernel(spec: KernelSpec) -> Kernel:
    """The compiled kernel for ``spec`` (compiled on first request, then cached)."""
    kernel = _kernels.get(spec)
    if kernel is not None:
        return kernel
    ok, reason = supports(spec)
    if not ok:
        raise ValueError(f"cannot compile this kernel: {reason}")
    with _kernels_lock:
        kernel = _kernels.get(spec)
        if kernel is None:
            engine = get_engine()
            parallel = PARALLEL_FOR in engine.runtime_symbols
            module = build_kernel_module(spec, _kernel_name(spec, parallel), parallel)
            compiled = engine.compile(module.module, [module.entry])
            kernel = Kernel(spec, module, compiled)
            _kernels[spec] = kernel
    return kernel
