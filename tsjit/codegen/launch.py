"""Compiling a KernelSpec once and calling it with the least work per call.

Per kernel we generate (with ``exec``, as ``dataclasses`` and ``namedtuple`` do) a Python
function specialized to the spec: it finds the broadcast shape (a tuple comparison when the
array inputs' shapes are equal, else a look-up of shapes seen before), allocates fresh outputs,
makes in-place calls safe, and calls the native entry through cffi with the arrays as one
tuple (the native code reads CPython's and NumPy's structs itself, see ``elementwise``)
and scalars by value.

The caller (the executor's guards) guarantees dtypes and ranks match the spec; what the
guards cannot know per call is checked here: shapes broadcast (ValueError as NumPy), an
in-place target has the broadcast shape and is writeable, and inputs overlapping an
in-place target are copied first (``x[1:] += x[:-1]``).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable

import _cffi_backend
import numpy as np

from tsjit import forking
from tsjit.codegen.elementwise import build_kernel_module, entry_parameter_types
from tsjit.codegen.elementwise_driver import ensure_driver
from tsjit.codegen.engine import CompiledModule, generator_fingerprint, get_engine
from tsjit.codegen.kernel_spec import KernelSpec, supports
from tsjit.codegen.output_pool import OutputPool

__all__ = ["Kernel", "broadcast_shape", "compile_kernel"]

# Kernels of equal specs are shared while some executor holds one (weak: dropped with the
# last, and their code unloaded with them).
_kernels: weakref.WeakValueDictionary[KernelSpec, Kernel] = weakref.WeakValueDictionary()
_kernels_lock = forking.lock()


class Kernel:
    """A compiled fused kernel: ``kernel(*inputs, out=None, shape=None) -> tuple of outputs``.

    ``out`` optionally supplies arrays for the fresh (not in-place) outputs, in output
    order; they must have the broadcast shape and the output dtypes. ``shape``, if given,
    must be ``broadcast_shape`` of the array inputs' shapes: a caller that needed it for
    checks of its own passes it, so that a call computes it once. Each kernel gets its
    own subclass whose ``__call__`` *is* the generated function, so a call costs no extra
    Python frame."""

    call: Callable[..., tuple]

    def __new__(cls, spec: KernelSpec, entry: str, compiled: CompiledModule):
        source = _call_source(spec)
        pool = OutputPool.shared()
        namespace = {
            "_native": _native_function(entry_parameter_types(spec), compiled.addresses[entry]),
            "_broadcasts": _broadcasts,
            "_broadcast_shape": broadcast_shape,
            "_overlaps": np.may_share_memory,
            "_target_error": _target_error,
            "_check_out": _check_out,
            "_dtypes": tuple(spec.value_dtype(v) for v in spec.outputs),
            "_empty": np.empty,
            **{
                f"_alloc{j}": pool.allocator(spec.value_dtype(v), spec.out_rank)
                for j, v in enumerate(spec.outputs)
                if spec.inplace_target(j) is None
            },
            **{f"_min{j}": pool.min_elements(spec.value_dtype(v))
               for j, v in enumerate(spec.outputs)},
        }
        exec(compile(source, f"<tsjit kernel {entry}>", "exec"), namespace)
        call = staticmethod(namespace["call"])
        specialized = type(cls.__name__, (cls,), {"__call__": call, "call": call})
        kernel = object.__new__(specialized)
        kernel.spec, kernel.compiled, kernel.python_source = spec, compiled, source
        return kernel

    def __call__(self, *args, out=None, shape=None) -> tuple:  # overridden per instance
        return self.call(*args, out=out, shape=shape)

    @property
    def llvm_ir(self) -> str:
        """Optimized LLVM IR of the kernel module."""
        return self.compiled.optimized_ir

    @property
    def asm(self) -> str:
        """Machine assembly of the kernel module (generated on first request)."""
        return self.compiled.asm


def _native_function(parameter_types: tuple[str, ...], address: int):
    """A callable for the native ``void f(parameter_types...)`` at ``address``. cffi's
    backend is used directly: ``cffi.FFI`` parses C declarations with pycparser, whose
    import alone costs ~50-100 ms on the first kernel of a process."""
    parameters = tuple(_cffi_backend.new_primitive_type(t) for t in parameter_types)
    signature = _cffi_backend.new_function_type(parameters, _cffi_backend.new_void_type(), 0)
    return _cffi_backend.cast(signature, address)


def _target_error(target: np.ndarray, shape: tuple) -> None:
    """Raise NumPy's error for ``x op= y`` that cannot write into ``x``."""
    if target.shape != shape:
        raise ValueError(
            f"non-broadcastable output operand with shape {target.shape} doesn't match "
            f"the broadcast shape {shape}"
        )
    if not target.flags.writeable:
        raise ValueError("output array is read-only")


def _check_out(array: np.ndarray, shape: tuple, dtype: np.dtype) -> None:
    """An ``out=`` array must be exactly what the kernel writes: anything else would make
    the native code write out of bounds."""
    if type(array) is not np.ndarray or array.shape != shape or array.dtype != dtype:
        raise ValueError(
            f"out= needs an ndarray of shape {shape} and dtype {dtype}, got "
            f"{type(array).__name__} {getattr(array, 'shape', '')} {getattr(array, 'dtype', '')}"
        )
    if not array.flags.writeable:
        raise ValueError("output array is read-only")


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcast of ``shapes``, raising NumPy's own ValueError when there is none.
    A call's shapes repeat from call to call, and ``np.broadcast_shapes`` costs ~2 us (it
    builds arrays): results are remembered, keyed by the tuple of shapes."""
    try:
        return _broadcasts[shapes]
    except KeyError:
        shape = np.broadcast_shapes(*shapes)
    if len(_broadcasts) >= _BROADCASTS_KEPT:  # a program with ever new shapes
        _broadcasts.clear()
    _broadcasts[shapes] = shape
    return shape


_BROADCASTS_KEPT = 1024
_broadcasts: dict[tuple[tuple[int, ...], ...], tuple[int, ...]] = {}


def _broadcast_lines(arrays: list[str]) -> list[str]:
    """Statements setting ``shape`` to the broadcast of the ``arrays``' shapes: one tuple
    comparison per array when they are equal; else a look-up in ``broadcast_shape``'s
    results, inline (no call) on a hit."""
    lines = [f"    s_{a} = {a}.shape" for a in arrays]
    first = f"s_{arrays[0]}"
    if len(arrays) == 1:
        return lines + [f"    shape = {first}"]
    key = ", ".join(f"s_{a}" for a in arrays)
    return lines + [
        f"    if {' and '.join(f's_{a} == {first}' for a in arrays[1:])}:",
        f"        shape = {first}",
        "    else:",
        "        try:",
        f"            shape = _broadcasts[{key}]",
        "        except KeyError:",
        f"            shape = _broadcast_shape({key})",
    ]


def _call_source(spec: KernelSpec) -> str:
    """Python source of the per-kernel call function (see the module docstring)."""
    params = [f"a{i}" for i in range(len(spec.inputs))]
    arrays = [f"a{i}" for i, inp in enumerate(spec.inputs) if not inp.is_scalar]
    scalars = [f"a{i}" for i, inp in enumerate(spec.inputs) if inp.is_scalar]
    full_rank = [
        f"a{i}" for i, inp in enumerate(spec.inputs)
        if not inp.is_scalar and inp.rank == spec.out_rank
    ]
    lines = [f"def call({', '.join(params)}, out=None, shape=None):", "    if shape is None:"]
    lines += ["    " + line for line in _broadcast_lines(arrays)]
    for t in sorted({t for t in spec.inplace if t is not None}):
        lines.append(f"    if a{t}.shape != shape or not a{t}.flags.writeable:")
        lines.append(f"        _target_error(a{t}, shape)")
        for a in arrays:
            if a != f"a{t}":  # noalias in the kernel: overlapping inputs are read from a copy
                lines.append(f"    if _overlaps({a}, a{t}):")
                lines.append(f"        {a} = {a}.copy()")
    fresh = [j for j in range(len(spec.outputs)) if spec.inplace_target(j) is None]
    model = full_rank[0] if full_rank else "None"
    if fresh:
        lines.append("    if out is None:")
        for j in fresh:
            if spec.out_rank == 1:  # one layout: small vectors skip the allocator's call
                lines.append(f"        o{j} = _empty(shape, _dtypes[{j}]) if shape[0] < _min{j} "
                             f"else _alloc{j}(shape, {model})")
            else:
                lines.append(f"        o{j} = _alloc{j}(shape, {model})")
        # Caller-supplied outputs: the native code trusts their shape and dtype.
        lines.append("    else:")
        targets = ", ".join(f"o{j}" for j in fresh)
        lines.append(f"        ({targets},) = out")
        for j in fresh:
            lines.append(f"        _check_out(o{j}, shape, _dtypes[{j}])")
    # The tuple must stay referenced until the native call returns: it reads the items.
    operands = ", ".join(arrays + [f"o{j}" for j in fresh])
    lines.append(f"    operands = ({operands},)")
    lines.append(f"    _native({', '.join(['id(operands)'] + scalars)})")
    results = [
        f"o{j}" if spec.inplace_target(j) is None else f"a{spec.inplace_target(j)}"
        for j in range(len(spec.outputs))
    ]
    lines.append(f"    return ({', '.join(results)},)")
    return "\n".join(lines) + "\n"


def _kernel_name(spec: KernelSpec) -> str:
    digest = hashlib.sha256(repr(spec).encode()).hexdigest()[:20]
    return f"tsjit_ew_{digest}"


def compile_kernel(spec: KernelSpec) -> Kernel:
    """The compiled kernel for ``spec`` (compiled on first request, then cached while it
    is in use)."""
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
            ensure_driver(engine)
            name = _kernel_name(spec)
            compiled = engine.compile_keyed(
                f"{generator_fingerprint()}|kernel|{spec!r}",
                lambda: build_kernel_module(spec, name),
                [name],
            )
            kernel = Kernel(spec, name, compiled)
            _kernels[spec] = kernel
    return kernel
