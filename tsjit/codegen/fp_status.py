"""Reading and clearing a thread's floating-point exception flags in generated code.

x86's MXCSR register holds sticky status flags (invalid 0x1, denormal operand 0x2, divide
by zero 0x4, overflow 0x8, underflow 0x10, precision 0x20) that every SSE/AVX operation
sets and nothing clears. A kernel's threads clear them before their part of a job and
collect them after it (elementwise_driver), so the job knows which errors its ops raised,
on any thread, as NumPy knows after a ufunc loop. Elsewhere (``supported()`` false) no
flags are collected and kernels report no floating-point errors.

NumPy's integer loops report some errors by hand (floor_divide and remainder by zero,
floor_divide of the least integer by -1): no instruction flags them, so a kernel computes
their flags itself and sets them here (``raise_flags``), and they travel with the rest.
"""

from __future__ import annotations

from llvmlite import ir

from tsjit.codegen.ir_util import I32, PTR, VOID, stack_slot
from tsjit.codegen.kernel_abi import FLAG_BITS, FP_FLAGS

__all__ = ["FLAG_BITS", "FP_FLAGS", "clear", "raise_flags", "read", "restore", "save",
           "supported"]



def supported() -> bool:
    """Whether the host's status flags are read (x86 with SSE: MXCSR)."""
    import llvmlite.binding as llvm  # here: a loop from the disk cache never loads LLVM
    return llvm.get_process_triple().startswith(("x86_64", "i686", "i386"))


def _mxcsr(b: ir.IRBuilder, name: str, slot: ir.Value) -> None:
    module = b.module
    intrinsic = module.globals.get(name) or ir.Function(module, ir.FunctionType(VOID, [PTR]),
                                                        name)
    b.call(intrinsic, [slot])


def clear(b: ir.IRBuilder) -> None:
    """Clear this thread's status flags (not its rounding or masking modes)."""
    slot = stack_slot(b, I32)
    _mxcsr(b, "llvm.x86.sse.stmxcsr", slot)
    b.store(b.and_(b.load(slot, typ=I32), ir.Constant(I32, ~FP_FLAGS)), slot)
    _mxcsr(b, "llvm.x86.sse.ldmxcsr", slot)


def read(b: ir.IRBuilder) -> ir.Value:
    """This thread's status flags (an i32 of FP_FLAGS bits)."""
    slot = stack_slot(b, I32)
    _mxcsr(b, "llvm.x86.sse.stmxcsr", slot)
    return b.and_(b.load(slot, typ=I32), ir.Constant(I32, FP_FLAGS))


def save(b: ir.IRBuilder) -> ir.Value:
    """This thread's whole MXCSR (flags and modes), for ``restore``."""
    slot = stack_slot(b, I32)
    _mxcsr(b, "llvm.x86.sse.stmxcsr", slot)
    return b.load(slot, typ=I32)


def restore(b: ir.IRBuilder, saved: ir.Value) -> None:
    """Put back an MXCSR ``save`` read: the flags raised since are dropped."""
    _mxcsr(b, "llvm.x86.sse.ldmxcsr", stack_slot(b, I32, saved))


def raise_flags(b: ir.IRBuilder, flags: ir.Value) -> None:
    """Set ``flags`` (an i32 of FP_FLAGS bits) in this thread's status, as if an operation
    had raised them (they are masked: no trap)."""
    slot = stack_slot(b, I32)
    _mxcsr(b, "llvm.x86.sse.stmxcsr", slot)
    b.store(b.or_(b.load(slot, typ=I32), flags), slot)
    _mxcsr(b, "llvm.x86.sse.ldmxcsr", slot)
