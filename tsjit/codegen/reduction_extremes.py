"""A row's float max or min of values in memory, one vector instruction per vector.

The exact scan (``reduction_scan``, ``llvm.maximum``: NaN wins, -0 < +0) costs five
vector operations per vector on AVX2: a blend on each side for the zeros, the max, and a
compare and blend for NaN (softmax's and logsumexp's first pass: 140 ns of a row of 1024
float32's ~600). x86's ``maxps``/``minps`` alone give the same value wherever the row has
no NaN (a zero of either sign: ``reduction_ties`` then picks NumPy's element), and raise
the invalid flag for every NaN operand, quiet or not. So where the invalid flag is clear
(it is, unless an earlier row raised it: the exact scan runs then) this pass runs
``maxps`` over the row, and where the flag is raised after it (the row has a NaN) runs
the exact scan instead, from the flags as they were: the same result and flags as the
exact scan alone (which raises invalid for a NaN too), and no MXCSR write (slow) unless
there is a NaN. Only where the host has AVX (the 256-bit intrinsics), for float32/float64
values that are in memory already (an input's row or a scratch buffer), and rows short
enough that no check for Ctrl-C is due in them.
"""
from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from tsjit.codegen import fp_status
from tsjit.codegen.element_ops import llvm_type
from tsjit.codegen.ir_util import I32, I64, PTR, element, i64, loop, stack_slot
from tsjit.codegen.kernel_abi import FLAG_BITS
from tsjit.codegen.reduction_interrupts import INTERRUPT_ELEMENTS

__all__ = ["build_extremes", "fast_extremes"]

_UNROLL = 4   # vectors per iteration, each with its own accumulator
_INTRINSICS = {("reduce_max", "float32"): "llvm.x86.avx.max.ps.256",
               ("reduce_min", "float32"): "llvm.x86.avx.min.ps.256",
               ("reduce_max", "float64"): "llvm.x86.avx.max.pd.256",
               ("reduce_min", "float64"): "llvm.x86.avx.min.pd.256"}


def fast_extremes(kb, p: int, cached: bool) -> bool:
    """Whether pass ``p`` of row kernel builder ``kb`` takes this form: every reduction a
    float32/float64 max or min of values in memory, on a host with AVX."""
    if not (fp_status.supported() and llvm.get_host_cpu_features().get("avx", False)):
        return False
    ops = [kb._op(r) for r in kb.passes[p]]
    _, stores = kb.scratch(p, cached)   # (a value this pass computes is not there yet)
    return all((op.op, np.dtype(op.dtype).name) in _INTRINSICS for op in ops) and \
        all(k is not None for k in kb.sources(p, cached)) and \
        not any(op.args[0] in stores for op in ops)


def build_extremes(kb, p: int, cached: bool, exact: ir.Function) -> ir.Function:
    """``run(rowptrs, state, start, n, results)`` of pass ``p``, as ``exact`` (the scan
    with the same signature) computes it (see the module docstring)."""
    reductions = kb.passes[p]
    ops = [kb._op(r) for r in reductions]
    fn = kb.function(f"{kb.name}_extremes{p}{'c' if cached else ''}",
                     [PTR, PTR, I64, I64, PTR])
    rowptrs, state, start, n, results = fn.args
    b = ir.IRBuilder(fn.append_basic_block())
    lanes = max(32 // np.dtype(op.dtype).itemsize for op in ops)   # (a vector, at least)
    outside = b.or_(b.icmp_signed(">", n, i64(INTERRUPT_ELEMENTS)),
                    b.icmp_signed("<", n, i64(lanes)))
    with b.if_then(outside, likely=False):   # long rows, and shorter than a vector
        b.call(exact, fn.args)
        b.ret_void()
    pointers = kb.pointers_from(b, rowptrs, cached)
    runs = [b.gep(pointers[k], [start], source_etype=llvm_type(op.dtype))
            for op, k in zip(ops, kb.sources(p, cached))]
    saved = fp_status.save(b)
    invalid = ir.Constant(I32, FLAG_BITS["invalid"])
    zero = ir.Constant(I32, 0)
    with b.if_then(b.icmp_unsigned("!=", b.and_(saved, invalid), zero), likely=False):
        b.call(exact, fn.args)   # raised already: it could not tell a NaN here
        b.ret_void()
    for j, (op, run) in enumerate(zip(ops, runs)):
        b.store(_extreme(b, op, run, n), element(b, results, i64(j), I64))
    after = fp_status.save(b)
    with b.if_then(b.icmp_unsigned("!=", b.and_(after, invalid), zero), likely=False):
        fp_status.restore(b, saved)   # a NaN: the exact scan, from the flags before
        b.call(exact, fn.args)
    b.ret_void()
    return fn


def _extreme(b: ir.IRBuilder, op, run: ir.Value, n: ir.Value) -> ir.Value:
    """The max or min of ``run[0:n]`` (n at least a vector; unaligned) by ``maxps``/
    ``minps``, every element through one of them (its NaN raises invalid): the row's
    extreme where it has no NaN."""
    dtype = np.dtype(op.dtype)
    ty = llvm_type(dtype)
    lanes = 32 // dtype.itemsize
    vector = ir.VectorType(ty, lanes)
    intrinsic = b.module.globals.get(_INTRINSICS[op.op, dtype.name]) or ir.Function(
        b.module, ir.FunctionType(vector, [vector, vector]), _INTRINSICS[op.op, dtype.name])
    start = ir.Constant(ty, float("-inf") if op.op == "reduce_max" else float("inf"))
    accumulators = [stack_slot(b, vector, ir.Constant(vector, [start.constant] * lanes))
                    for _ in range(_UNROLL)]
    step = lanes * _UNROLL

    def group(b: ir.IRBuilder, g: ir.Value) -> None:
        base = b.mul(g, i64(step))
        for u, slot in enumerate(accumulators):
            at = b.gep(run, [b.add(base, i64(u * lanes))], source_etype=ty)
            x = b.load(at, typ=vector, align=1)
            b.store(b.call(intrinsic, [b.load(slot, typ=vector), x]), slot)

    groups = b.sdiv(n, i64(step))
    loop(b, i64(0), groups, group)
    done = b.mul(groups, i64(step))   # then vectors up to the end (the last one overlaps)
    rest = b.sdiv(b.add(b.sub(n, done), i64(lanes - 1)), i64(lanes))
    last = b.sub(n, i64(lanes))

    def one(b: ir.IRBuilder, v: ir.Value) -> None:
        at = b.add(done, b.mul(v, i64(lanes)))
        at = b.select(b.icmp_signed("<", at, last), at, last)
        x = b.load(b.gep(run, [at], source_etype=ty), typ=vector, align=1)
        b.store(b.call(intrinsic, [b.load(accumulators[0], typ=vector), x]), accumulators[0])

    loop(b, i64(0), rest, one)
    total = accumulators[0]
    for slot in accumulators[1:]:
        b.store(b.call(intrinsic, [b.load(total, typ=vector), b.load(slot, typ=vector)]), total)
    combined = b.load(total, typ=vector)
    result = b.extract_element(combined, i64(0))
    for lane in range(1, lanes):   # (no NaN is left unless the flag says so)
        x = b.extract_element(combined, i64(lane))
        wins = b.fcmp_ordered(">" if op.op == "reduce_max" else "<", x, result)
        result = b.select(wins, x, result)
    return result
