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

After the native call, a non-zero status (rare) is handled by ``_finish``: a job stopped
for Ctrl-C lets Python run its signal handlers (KeyboardInterrupt by default) and, if they
return, resumes where it stopped; floating-point flags that NumPy's error state does not
ignore raise ``FloatingPointFlags``. Its catcher (the fusion group's launcher) then runs
the group's ops as NumPy ufuncs, which warn, raise or call the handler exactly as eager
code does, naming each op. That re-run needs the inputs as they were: a kernel that reads
and writes an array in place (``x += y``) has overwritten one, so its errors are reported
by ``fp_errors.report_statically`` instead (each kind of error put on the first op that can
raise it). Under an error state that may raise, the fusion group's launcher does not run a
kernel that writes in place at all (see ``fp_errors``). A job with no element but a
non-empty operand (``STATUS_EMPTY_JOB``: eager NumPy computes ops on that operand before
broadcasting, and they may warn) raises ``FloatingPointFlags`` too, unless every error is
ignored: the kernel wrote nothing, so the ops can run in NumPy.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
from collections.abc import Callable

import _cffi_backend
import numpy as np

from tsjit.codegen.engine import CompiledModule, generator_fingerprint, get_engine
from tsjit.codegen.fp_errors import CATEGORIES, report_statically
from tsjit.codegen.kernel_abi import (
    FLAG_BITS,
    STATUS_EMPTY_JOB,
    STATUS_FP_FLAGS,
    STATUS_RESUME_SHIFT,
    entry_parameter_types,
    resume_symbol,
    start_driver,
)
from tsjit.codegen.kernel_cache import KernelCache
from tsjit.codegen.kernel_spec import KernelSpec, invalid_values_vary, supports
from tsjit.codegen.output_layout import OutputLayouts
from tsjit.codegen.output_pool import OutputPool

__all__ = ["FloatingPointFlags", "Kernel", "broadcast_shape", "compile_kernel"]

# Kernels of equal specs are shared while some executor holds one (weak: dropped with the
# last, and their code unloaded with them).
_kernels: KernelCache[KernelSpec, Kernel] = KernelCache(supports, "kernel")
# LLVM's O2, not O3: O3's unroller copies the generator's already interleaved vector loops
# again, so gelu's object doubled and its compile took 2.2x as long (LSTM 1.6x), for the
# same speed (bench/kernel_against.py, O3 / O2 at 16M, 1 and 2 threads: gelu 1.03, LSTM
# 0.99-1.00, Black-Scholes 1.01-1.08).
KERNEL_PIPELINE = "O2"


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
        parameters = entry_parameter_types(spec)
        namespace = {
            "_native": _native_function(parameters, compiled.addresses[entry]),
            "_resume": _native_function((parameters[0], "int64_t", *parameters[1:]),
                                        compiled.addresses[resume_symbol(entry)]),
            "_finish": _finish,
            "_report": functools.partial(report_statically, spec) if _reads_and_writes(spec)
            else None,
            "_code": compiled,      # whoever holds the call function keeps the code loaded
            "_broadcasts": _broadcasts,
            "_broadcast_shape": broadcast_shape,
            "_overlaps": np.may_share_memory,
            "_target_error": _target_error,
            "_check_out": _check_out,
            "_dtypes": tuple(spec.value_dtype(v) for v in spec.outputs),
            "_empty": np.empty,
            "_layouts": OutputLayouts(spec, [j for j in range(len(spec.outputs))
                                            if spec.inplace_target(j) is None]),
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
    """A callable for the native ``int64_t f(parameter_types...)`` at ``address``. cffi's
    backend is used directly: ``cffi.FFI`` parses C declarations with pycparser, whose
    import alone costs ~50-100 ms on the first kernel of a process."""
    parameters = tuple(_cffi_backend.new_primitive_type(t) for t in parameter_types)
    signature = _cffi_backend.new_function_type(parameters, _INT64, 0)
    return _cffi_backend.cast(signature, address)


_INT64 = _cffi_backend.new_primitive_type("int64_t")


class FloatingPointFlags(Exception):  # noqa: N818  (a signal to the caller, not an error)
    """A kernel raised floating-point flags that NumPy's error state (``np.geterr()``)
    does not ignore: its caller must produce NumPy's warnings or error itself, by running
    the ops as NumPy does (the kernel's outputs are not to be used)."""

    def __init__(self, categories: tuple[str, ...]) -> None:
        super().__init__(", ".join(categories))
        self.categories = categories


_python_check_signals = ctypes.pythonapi.PyErr_CheckSignals
_python_check_signals.restype = ctypes.c_int
_python_check_signals.argtypes = []


def _finish(status: int, resume: Callable, operands: tuple, scalars: tuple,
            report: Callable | None, rerun: int = 0) -> None:
    """Handle a kernel's non-zero status (see the module docstring). Python's signal
    handlers run through PyErr_CheckSignals, called by ctypes with the GIL held: what
    they raise (KeyboardInterrupt) propagates from here. Errors NumPy would report go to
    ``report``, or without one raise FloatingPointFlags. Flags in ``rerun`` (an invalid
    whose values NumPy decides: ``kernel_spec.invalid_values_vary``) go there even where
    NumPy's error state ignores them."""
    flags = 0
    while True:
        flags |= status & STATUS_FP_FLAGS
        resume_at = (status >> STATUS_RESUME_SHIFT) - 1
        if resume_at < 0:
            break
        from tsjit import runtime  # loaded: the kernel links against it

        runtime.clear_interrupt()
        _python_check_signals()
        status = resume(id(operands), resume_at, *scalars)
    if status & STATUS_EMPTY_JOB:   # nothing was computed or written: NumPy's run reports
        modes = np.geterr()
        raised = tuple(name for name in CATEGORIES if modes[name] != "ignore")
        if raised:
            raise FloatingPointFlags(raised)
    elif flags:
        modes = np.geterr()
        raised = tuple(name for name in CATEGORIES
                       if flags & FLAG_BITS[name] and modes[name] != "ignore")
        if (raised or flags & rerun) and report is not None:
            report(raised, operands, scalars)
        elif raised or flags & rerun:
            raise FloatingPointFlags(raised)


def _reads_and_writes(spec: KernelSpec) -> bool:
    """Whether the kernel writes in place an input that it also reads (its callers cannot
    re-run its ops after it)."""
    n_in = len(spec.inputs)
    read = {a for op in spec.ops for a in op.args if a < n_in}
    return any(t is not None and t in read for t in spec.inplace)


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
    if fresh:
        lines.append("    if out is None:")
        if spec.out_rank > 1:   # C order unless an input of two or more axes is not C
            all_c = " and ".join(f"a{i}.flags.c_contiguous" for i, inp in enumerate(spec.inputs)
                                 if not inp.is_scalar and inp.rank > 1)
            lines.append(f"        layouts = None if {all_c} else _layouts({', '.join(arrays)})")
        for k, j in enumerate(fresh):
            if spec.out_rank > 1:
                lines.append(f"        o{j} = _alloc{j}(shape, layouts and layouts[{k}])")
            elif spec.out_rank == 1:  # one layout: small vectors skip the allocator's call
                lines.append(f"        o{j} = _empty(shape, _dtypes[{j}]) if shape[0] < _min{j} "
                             f"else _alloc{j}(shape, None)")
            else:
                lines.append(f"        o{j} = _alloc{j}(shape, None)")
        # Caller-supplied outputs: the native code trusts their shape and dtype.
        lines.append("    else:")
        targets = ", ".join(f"o{j}" for j in fresh)
        lines.append(f"        ({targets},) = out")
        for j in fresh:
            lines.append(f"        _check_out(o{j}, shape, _dtypes[{j}])")
    # The tuple must stay referenced until the native call returns: it reads the items.
    operands = ", ".join(arrays + [f"o{j}" for j in fresh])
    lines.append(f"    operands = ({operands},)")
    lines.append(f"    status = _native({', '.join(['id(operands)'] + scalars)})")
    lines.append("    if status:")
    lines.append(f"        _finish(status, _resume, operands, "
                 f"({''.join(f'{a}, ' for a in scalars)}), _report, "
                 f"{FLAG_BITS['invalid'] if invalid_values_vary(spec) else 0})")
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
    return _kernels.get(spec, _build_kernel)


def _build_kernel(spec: KernelSpec) -> Kernel:
    engine = get_engine()
    finish_driver = start_driver(engine)   # (its LLVM part runs while this IR is made)
    name = _kernel_name(spec)

    def build():      # the code generator loads on the first miss of the caches
        from tsjit.codegen.elementwise import build_kernel_module
        return build_kernel_module(spec, name)
    compiled = engine.compile_keyed(f"{generator_fingerprint()}|kernel|{spec!r}", build,
                                    [name, resume_symbol(name)], KERNEL_PIPELINE,
                                    before_link=finish_driver)
    finish_driver()   # (when the kernel was still in memory, nothing else called it)
    return Kernel(spec, name, compiled)
