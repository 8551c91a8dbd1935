"""How a row kernel's task moves its rows through memory: prefetching each next row, and
writing large outputs past the caches.

Prefetching. A row of a few KB is read from memory by its first pass; the later passes
find it in L1. The hardware prefetchers do not cross a 4 KiB page, so with rows of about a
page each row starts cold: its first pass waits for memory line by line. A task whose rows
come from memory (the job is larger than the L2 cache) therefore asks for a later row's
lines while it computes one (``prefetch_next_row``): the next one where a row's elements
take transcendental functions, the one after it where the row's work is cheaper than its
trip from memory (layer norm's rows of 1024 float32: one thread's CPU time 0.90-0.91x,
softmax's and logsumexp's 1.01-1.04x with the row after next, python bench/row_against.py
--rows 4096).

Streaming. A normal store first reads its cache line from memory (write-allocate), so a
kernel that maps ``[rows, n]`` to ``[rows, n]`` moves three bytes for every two it must:
read the input, read the output's old line, write it back. When a job's element-level
outputs are larger than the last-level cache keeps, keeping them there gains nothing, and
non-temporal stores write whole lines without reading them: a third less memory traffic.
The row's output loop computes STREAM_CHUNK elements at a time into buffers that stay in
L1 (``stream_outputs``), which ``elementwise_copies.stream_copy`` writes out with
non-temporal stores of whole lines (the partial lines at the ends with ordinary ones), as
the elementwise driver streams its large outputs. x86 orders non-temporal stores only at
a fence: a task that streamed ends with ``store_fence`` before it reports its work done.
"""
from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from tsjit.codegen.elementwise_copies import stream_copy
from tsjit.codegen.ir_util import (
    I1,
    I8,
    I32,
    PTR,
    VOID,
    declare_function,
    i64,
    loop,
    stack_slot,
)
from tsjit.codegen.reduction_spec import ROW_INDEX

__all__ = ["CACHE_LINE", "PREFETCH_JOB", "STREAM_BYTES", "prefetch_line", "prefetch_next_row",
           "prefetched_operands",
           "prefetching", "rows_ahead", "stream_outputs", "streamed_outputs", "streaming"]

CACHE_LINE = 64
# A task prefetches when its rows hold at least PREFETCH_JOB bytes (smaller jobs stay in
# the L2 cache between calls) and each row at most PREFETCH_ROW bytes (a longer row keeps
# the hardware prefetcher running).
PREFETCH_JOB = 1 << 20
PREFETCH_ROW = 1 << 15
# Jobs whose element-level outputs hold at least STREAM_BYTES stream them, STREAM_CHUNK
# elements at a time, when each output row holds at least STREAM_ROW bytes (a shorter one
# is mostly unaligned ends).
STREAM_BYTES = 1 << 24
STREAM_CHUNK = 512
STREAM_ROW = 1 << 9


# ---------------------------------------------------------------------- prefetching

def prefetched_operands(spec, array_inputs: list[int]) -> list[tuple[int, int]]:
    """The operands whose rows a task prefetches, as (operand slot, itemsize): the array
    inputs read element by element (not the per-row ones), of contiguous rows (a strided
    kernel's rows, of other element strides, are left to the hardware)."""
    return [] if spec.strided else [(k, np.dtype(spec.inputs[i].dtype).itemsize)
                                    for k, i in enumerate(array_inputs)
                                    if i not in spec.row_inputs]


def prefetching(b: ir.IRBuilder, operands: list[tuple[int, int]], rows: ir.Value,
                n: ir.Value) -> ir.Value:
    """Whether a task of a job of ``rows`` rows of ``n`` elements prefetches (i1)."""
    if not operands:
        return ir.Constant(I1, 0)
    row_bytes = b.mul(n, i64(sum(size for _, size in operands)))
    return b.and_(b.icmp_signed(">=", b.mul(rows, row_bytes), i64(PREFETCH_JOB)),
                  b.icmp_signed("<=", row_bytes, i64(PREFETCH_ROW)))


def rows_ahead(expensive: bool) -> int:
    """How many rows ahead of the one it computes a task prefetches: 1 where its elements
    take transcendental functions (``expensive``: ``kernel_spec.MATH_FUNCTIONS``), else 2."""
    return 1 if expensive else 2


def prefetch_next_row(b: ir.IRBuilder, operands: list[tuple[int, int]], bases: list,
                      strides: list, r: ir.Value, n: ir.Value) -> None:
    """Ask for the cache lines of row ``r`` of ``operands``, one prefetch per line (those
    broadcast along the rows, stride 0, are in cache already)."""
    for k, itemsize in operands:
        with b.if_then(b.icmp_signed("!=", strides[k], i64(0))):
            row = b.gep(bases[k], [b.mul(r, strides[k])], source_etype=I8)
            lines = b.udiv(b.add(b.mul(n, i64(itemsize)), i64(CACHE_LINE - 1)),
                           i64(CACHE_LINE))
            loop(b, i64(0), lines, lambda b, line, row=row: prefetch_line(
                b, b.gep(row, [b.mul(line, i64(CACHE_LINE))], source_etype=I8)))


def prefetch_line(b: ir.IRBuilder, address: ir.Value) -> None:
    """Ask for the cache line at ``address`` (for reading, into every level)."""
    intrinsic = declare_function(b.module, "llvm.prefetch.p0", VOID, [PTR, I32, I32, I32])
    b.call(intrinsic, [address, ir.Constant(I32, 0), ir.Constant(I32, 3), ir.Constant(I32, 1)])


# ---------------------------------------------------------------------- streaming

def streamed_outputs(spec, levels) -> bool:
    """Whether a kernel of ``spec`` may stream its element-level outputs: it has some, on
    x86 (movnt, ordered by sfence), and its element values do not depend on where the
    output loop starts (``stream_outputs`` runs it on chunks as if each began a row, its
    inputs contiguous: not a strided kernel's)."""
    return (llvm.get_process_triple().startswith(("x86_64", "i686", "i386"))
            and not spec.full and not spec.strided and any(levels[v] for v in spec.outputs)
            and all(op.op != ROW_INDEX for op in spec.ops))


def streaming(b: ir.IRBuilder, spec, levels, rows: ir.Value, n: ir.Value) -> ir.Value:
    """Whether a job of ``rows`` rows of ``n`` elements streams its outputs (i1)."""
    if not streamed_outputs(spec, levels):
        return ir.Constant(I1, 0)
    itemsizes = [spec.value_dtype(v).itemsize for v in spec.outputs if levels[v]]
    return b.and_(
        b.icmp_signed(">=", b.mul(b.mul(rows, n), i64(sum(itemsizes))), i64(STREAM_BYTES)),
        b.icmp_signed(">=", b.mul(n, i64(min(itemsizes))), i64(STREAM_ROW)))


def stream_outputs(b: ir.IRBuilder, out: ir.Function, pointers: list, types: list,
                   outputs: list[int], state: ir.Value, begin: ir.Value,
                   end: ir.Value) -> None:
    """Elements [begin, end) of a row's element-level outputs: ``out(pointers..., state,
    0, m)`` on chunks of STREAM_CHUNK elements, every pointer moved to the chunk's start
    (``types``: each pointer's element type in memory), the ``outputs`` (by slot) to L1
    buffers that ``stream_copy`` writes to the row."""
    buffers = {k: stack_slot(b, ir.ArrayType(types[k], STREAM_CHUNK)) for k in outputs}

    def chunk(b: ir.IRBuilder, c: ir.Value) -> None:
        start = b.add(begin, b.mul(c, i64(STREAM_CHUNK)))
        stop = b.add(start, i64(STREAM_CHUNK))
        stop = b.select(b.icmp_signed("<", end, stop), end, stop)
        moved = [buffers.get(k) or (p if isinstance(p, ir.Constant) else
                                    b.gep(p, [start], source_etype=types[k]))
                 for k, p in enumerate(pointers)]
        b.call(out, moved + [state, i64(0), b.sub(stop, start)])
        for k, buffer in buffers.items():
            nbytes = b.mul(b.sub(stop, start), i64(_bytes(types[k])))
            stream_copy(b, b.gep(pointers[k], [start], source_etype=types[k]), buffer, nbytes)

    chunks = b.sdiv(b.add(b.sub(end, begin), i64(STREAM_CHUNK - 1)), i64(STREAM_CHUNK))
    loop(b, i64(0), chunks, chunk)


def _bytes(ty: ir.Type) -> int:
    """The size of a scalar type in memory."""
    if isinstance(ty, ir.IntType):
        return max(1, ty.width // 8)
    return {ir.HalfType: 2, ir.FloatType: 4, ir.DoubleType: 8}[type(ty)]
