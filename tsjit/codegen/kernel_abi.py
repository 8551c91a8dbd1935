"""What generated kernels and the Python side that launches them agree on: symbol names,
the status word, entry-point parameters, and the driver every elementwise kernel calls.

Names and numbers only, without the code generators (llvmlite.ir and the IR builders:
elementwise, elementwise_driver, reduction, the math library): a launcher whose kernels
come from the disk cache never imports them (`launch`, `reduction_launch`), which is a
good part of the back end's load time and so of the first optimized result of a process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from tsjit.codegen.engine import generator_fingerprint

if TYPE_CHECKING:
    from tsjit.codegen.engine import JitEngine
    from tsjit.codegen.kernel_spec import KernelSpec

__all__ = [
    "DRIVER_SYMBOL",
    "FLAG_BITS",
    "FP_FLAGS",
    "PARALLEL_FOR",
    "STATUS_EMPTY_JOB",
    "STATUS_FP_FLAGS",
    "STATUS_RESUME_SHIFT",
    "ensure_driver",
    "start_driver",
    "entry_parameter_types",
    "resume_symbol",
]

DRIVER_SYMBOL = "tsjit_elementwise_run"
PARALLEL_FOR = "tsjit_parallel_for"
# MXCSR's flags of NumPy's error kinds: invalid, divide by zero, overflow, underflow. Not
# precision (0x20), which nearly every float result raises (a status read with it sent every
# call of a kernel on real data through the error check), nor denormal operand (0x2).
FP_FLAGS = 0x1D
# Each of NumPy's error kinds (np.geterr()'s keys) as its MXCSR flag.
FLAG_BITS = {"divide": 0x4, "over": 0x8, "under": 0x10, "invalid": 0x1}
# The driver's status word: FP_FLAGS raised by the job in its low bits; a job stopped by
# Ctrl-C adds (resume point + 1) << STATUS_RESUME_SHIFT.
STATUS_FP_FLAGS = FP_FLAGS
STATUS_RESUME_SHIFT = 8
# A job with no element whose operands are not all empty: eager NumPy computes the ops on
# the non-empty ones before broadcasting to the empty result (``(y - y) + x`` with x of
# shape (0, 3) subtracts y of shape (3,)), which may warn. The kernel computed nothing: its
# caller runs the ops in NumPy.
STATUS_EMPTY_JOB = 0x80


def _c_scalar_type(dtype: np.dtype) -> str:
    kind = np.dtype(dtype).kind
    return "double" if kind == "f" else "uint64_t" if kind == "u" else "int64_t"


def entry_parameter_types(spec: KernelSpec) -> tuple[str, ...]:
    """C types of a kernel entry point's parameters (it returns void): the operand tuple's
    address, then the scalars (elementwise and row kernels alike)."""
    return ("int64_t",) + tuple(_c_scalar_type(i.dtype) for i in spec.inputs if i.is_scalar)


def resume_symbol(name: str) -> str:
    """The entry that finishes kernel ``name``'s job stopped early (see elementwise)."""
    return f"{name}_resume"


def ensure_driver(engine: JitEngine) -> None:
    """Compile the driver once per engine (from the disk cache when possible: then without
    building its IR) and make it callable from kernel modules."""
    start_driver(engine)()


def start_driver(engine: JitEngine) -> Callable[[], None]:
    """``ensure_driver`` in two steps: start compiling the driver (LLVM's part on a helper
    thread, ``JitEngine.start_compile_keyed``) and return what finishes it, to be called
    before a kernel is linked: in a process with no disk cache the driver's ~60 ms of LLVM
    then overlap the kernel's IR generation."""
    if DRIVER_SYMBOL in engine.symbols:
        return _nothing
    parallel = PARALLEL_FOR in engine.symbols

    def build():
        from tsjit.codegen.elementwise_driver import build_driver_module
        return build_driver_module(parallel)
    compiled = engine.start_compile_keyed(
        f"{generator_fingerprint()}|driver|parallel={parallel}", build, [DRIVER_SYMBOL],
        pipeline="quick")

    def finish() -> None:
        if DRIVER_SYMBOL not in engine.symbols:
            engine.register_symbol(DRIVER_SYMBOL, compiled())
    return finish


def _nothing() -> None:
    pass
