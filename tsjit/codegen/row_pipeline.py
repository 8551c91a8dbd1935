"""Row pipelining: a row's element outputs are written by the next row's last pass.

Why: softmax's last loop over a row (``e / sum``) is a division and a store per element,
its exp pass a long chain of multiplies and adds. Run one after the other, each leaves
the other's units idle: the divider and the stores wait while exp runs on the multiply
pipes, and the exp of the next row waits while the stores drain to memory. A kernel that
``pipelines`` therefore defers a row's element outputs: row r's passes run and leave its
row values in one of two row states and its cached values (``reduction``: the scratch
buffers) in one of two sets; row r+1's last pass computes and writes row r's outputs in
the same loop as its own values (``emit_with_previous``), and the task writes its last
row's after its loop. The outputs are the same operations on the same values, computed
exactly (their fast blocks would need their own NaN checks), so the same bits and flags.

Streaming: LLVM does not vectorize a loop whose non-temporal stores are not known to be
aligned, so the loop writes each CHUNK of elements to small buffers in L1, which are
copied to the rows after the chunk: with non-temporal stores of whole lines where the job
streams its outputs (``row_memory``) and the chunk's rows are line-aligned, else with
ordinary ones. A chunk is a few vectors: the copies' stores drain while the next chunk
computes, where one copy of a whole row would stall the loop behind the store queue.

Softmax [4096, 1024] float32, one thread's CPU time: see the commit that added this.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from llvmlite import ir

from tsjit.codegen.element_ops import llvm_type, memory_type, store_value
from tsjit.codegen.ir_util import I1, I8, I32, I64, PTR, element, i64, loop, stack_slot
from tsjit.codegen.reduction_interrupts import INTERRUPT_ELEMENTS, interruptible_blocks
from tsjit.codegen.reduction_spec import BUFFERED, SEQUENTIAL
from tsjit.codegen.row_memory import (
    CACHE_LINE,
    prefetch_line,
    prefetched_operands,
    streamed_outputs,
)
from tsjit.codegen.row_vectors import vector_outputs

__all__ = ["CHUNK", "PIPELINE_ARGS", "Pipeline", "build_pipeline", "emit_pipelined_rows",
           "emit_with_previous", "pipelines"]

# The arguments a pass that writes the previous row's outputs takes after its own:
# the previous row's pointers (with its scratch buffers), its state, whether to stream,
# the pointers of the row to prefetch meanwhile (or null).
PIPELINE_ARGS = [PTR, PTR, I1, PTR]
# Elements per chunk of the previous row's outputs: a line or more of every dtype.
CHUNK = 64


def pipelines(kb) -> bool:
    """Whether kernel ``kb`` (``reduction._RowKernelBuilder``) defers its rows' element
    outputs: it caches values for later passes (rows of up to SCRATCH_ELEMENTS run with
    scratch buffers), its rows are contiguous, its last pass is a sum pass whose loop
    computes values (the loop the outputs join), and its outputs take no transcendental
    functions (the joined loop computes them exactly)."""
    spec = kb.spec
    if not kb.cached or spec.strided or spec.full or not kb.passes:
        return False
    outputs = [v for v in spec.outputs if kb.levels[v]]
    last = len(kb.passes) - 1
    reductions = [kb._op(r) for r in kb.passes[last]]
    if not outputs or any(op.op != "reduce_sum" or op.op in SEQUENTIAL or
                          BUFFERED in op.attrs for op in reductions):
        return False
    _, stores = kb.scratch(last, True)
    if not stores and None not in kb.sources(last, True):
        return False
    loads, _ = kb.scratch(len(kb.passes), True)
    return not kb.expensive(kb.needed(outputs, loads) - set(loads))


class Pipeline:
    """The row functions of a pipelined kernel: ``first`` (a task's first row), ``follow``
    (every later row, writing the previous row's outputs), ``finish`` (the last row's
    outputs)."""

    def __init__(self, first: ir.Function, follow: ir.Function, finish: ir.Function):
        self.first, self.follow, self.finish = first, follow, finish


def build_pipeline(kb) -> Pipeline:
    return Pipeline(kb.build_row_variant(True, "first"), kb.build_row_variant(True, "follow"),
                    _build_finish(kb))


def _build_finish(kb) -> ir.Function:
    """``finish(rowptrs, state, n, stream)``: a deferred row's element outputs."""
    outputs = kb.build_outputs(True)
    vectors = vector_outputs(kb, True) if streamed_outputs(kb.spec, kb.levels) else None
    fn = kb.function(f"{kb.name}_finish", [PTR, PTR, I64, I1])
    rowptrs, state, n, stream = fn.args
    b = ir.IRBuilder(fn.append_basic_block())
    pointers = kb.pointers_from(b, rowptrs, True)
    interruptible_blocks(b, i64(0), n, INTERRUPT_ELEMENTS, lambda b, lo, hi:
                         kb.write_outputs(b, outputs, vectors, pointers, state, lo, hi,
                                          stream),
                         kb.parallel)
    b.ret_void()
    return fn


def emit_pipelined_rows(kb, b: ir.IRBuilder, pipeline: Pipeline, state: ir.Value,
                        n: ir.Value, stream: ir.Value, scratch_elements: int,
                        fill: Callable, upcoming: Callable[[ir.IRBuilder, ir.Value], ir.Value],
                        rows: Callable[[Callable[[ir.IRBuilder, ir.Value], None]], None]
                        ) -> None:
    """A task's rows (``rows(visit)`` calls ``visit(b, r)`` for each, as Ctrl-C allows;
    ``fill(b, r, rowptrs, state, prefetch)`` sets a row's pointers and row inputs, and
    prefetches the next row at once; ``upcoming(b, r)``: the pointers of the row to
    prefetch while row r runs, or null), pipelined: two sets of row pointers with scratch
    buffers and two row states, alternating. A following row's loop prefetches the next
    row chunk by chunk (``emit_with_previous``): asked for at once, a row's lines queue
    up behind the core's few outstanding misses and stall it."""
    slots_type = ir.ArrayType(PTR, kb.n_slots)
    slots = [stack_slot(b, slots_type) for _ in range(2)]
    states = [state, stack_slot(b, kb.state_type)]
    b.store(b.load(state, typ=kb.state_type), states[1])   # the scalars
    for slot in slots:
        for j, v in enumerate(kb.cached):
            buffer = stack_slot(b, ir.ArrayType(llvm_type(kb.spec.value_dtype(v)),
                                                scratch_elements))
            b.store(buffer, element(b, slot, i64(kb.n_operands + j), PTR))
    done = stack_slot(b, I64, i64(0))

    def pick(b: ir.IRBuilder, count: ir.Value, pair: list) -> ir.Value:
        return b.select(b.trunc(count, I1), pair[1], pair[0])

    def visit(b: ir.IRBuilder, r: ir.Value) -> None:
        count = b.load(done, typ=I64)
        before = b.sub(count, i64(1))
        current, current_state = pick(b, count, slots), pick(b, count, states)
        with b.if_else(b.icmp_signed("==", count, i64(0))) as (first, later):
            with first:
                fill(b, r, current, current_state)
                b.call(pipeline.first, [current, current_state, n, stream])
            with later:
                fill(b, r, current, current_state, False)
                b.call(pipeline.follow, [current, current_state, n, stream,
                                         pick(b, before, slots), pick(b, before, states),
                                         upcoming(b, r)])
        b.store(b.add(count, i64(1)), done)

    rows(visit)
    count = b.load(done, typ=I64)
    with b.if_then(b.icmp_signed(">", count, i64(0))):
        last = b.sub(count, i64(1))
        b.call(pipeline.finish, [pick(b, last, slots), pick(b, last, states), n, stream])


def emit_with_previous(kb, b: ir.IRBuilder, start: ir.Value, n: ir.Value, one,
                       prevptrs: ir.Value, prevstate: ir.Value, stream: ir.Value,
                       upcoming: ir.Value, run: Callable) -> None:
    """A last pass's loop over elements [start, start + n) of its row (``one(b, i, fast)``
    for i in [0, n), run by ``run(b, lo, hi, body)``), which also computes and writes
    those elements of the previous row's outputs: CHUNK elements at a time through L1
    buffers, copied after each chunk (see the module docstring), the rest directly; and
    prefetches the chunk's lines of the ``upcoming`` row's inputs (null: none)."""
    spec = kb.spec
    outputs = [j for j, v in enumerate(spec.outputs) if kb.levels[v]]
    loads, _ = kb.scratch(len(kb.passes), True)
    wanted = kb.needed([spec.outputs[j] for j in outputs], loads)
    pointers = kb.pointers_from(b, prevptrs, True)
    row = kb.load_state(b, prevstate)
    types = {j: memory_type(spec.value_dtype(spec.outputs[j])) for j in outputs}
    sizes = {j: np.dtype(spec.value_dtype(spec.outputs[j])).itemsize for j in outputs}
    buffers = {j: stack_slot(b, ir.ArrayType(types[j], CHUNK)) for j in outputs}
    targets = {j: b.gep(pointers[len(kb.array_inputs) + j], [start], source_etype=types[j])
               for j in outputs}
    lines = stream
    for j in outputs:   # every chunk's rows line-aligned
        address = b.ptrtoint(targets[j], I64)
        aligned = b.icmp_unsigned("==", b.and_(address, i64(CACHE_LINE - 1)), i64(0))
        lines = b.and_(lines, aligned)
    prefetching = b.icmp_unsigned("!=", upcoming, ir.Constant(PTR, None))
    ahead = [(b.gep(b.load(element(b, b.select(prefetching, upcoming, prevptrs), i64(k), PTR),
                           typ=PTR), [b.mul(start, i64(size))], source_etype=I8), size)
             for k, size in prefetched_operands(spec, kb.array_inputs)]

    def previous(b: ir.IRBuilder, i: ir.Value) -> dict:
        return kb.emit_elements(b, pointers, b.add(start, i), row, wanted, loads)

    def chunk(b: ir.IRBuilder, c: ir.Value) -> None:
        lo = b.mul(c, i64(CHUNK))

        def body(b: ir.IRBuilder, i: ir.Value, fast) -> dict:
            values = one(b, i, fast)
            earlier = previous(b, i)
            for j in outputs:
                store_value(b, earlier[spec.outputs[j]],
                            b.gep(buffers[j], [b.sub(i, lo)], source_etype=types[j]),
                            spec.value_dtype(spec.outputs[j]))
            return values

        with b.if_then(prefetching):
            for row_start, size in ahead:
                for line in range(CHUNK * size // CACHE_LINE):
                    prefetch_line(b, b.gep(row_start, [b.add(b.mul(lo, i64(size)),
                                                             i64(line * CACHE_LINE))],
                                           source_etype=I8))
        run(b, lo, b.add(lo, i64(CHUNK)), body)
        for j in outputs:
            _copy_lines(b, b.gep(targets[j], [lo], source_etype=types[j]), buffers[j],
                        CHUNK * sizes[j] // CACHE_LINE, lines)

    chunks = b.sdiv(n, i64(CHUNK))
    loop(b, i64(0), chunks, chunk)

    done = b.mul(chunks, i64(CHUNK))
    with b.if_then(prefetching):   # the lines of the rest, from the first one it touches
        for row_start, size in ahead:
            first = b.sdiv(b.mul(done, i64(size)), i64(CACHE_LINE))
            last = b.sdiv(b.add(b.mul(n, i64(size)), i64(CACHE_LINE - 1)), i64(CACHE_LINE))
            loop(b, first, last, lambda b, line, row_start=row_start: prefetch_line(
                b, b.gep(row_start, [b.mul(line, i64(CACHE_LINE))], source_etype=I8)))

    def rest(b: ir.IRBuilder, i: ir.Value, fast) -> dict:
        values = one(b, i, fast)
        kb.store_outputs(b, pointers, b.add(start, i), previous(b, i), outputs)
        return values

    run(b, done, n, rest)


def _copy_lines(b: ir.IRBuilder, target: ir.Value, source: ir.Value, count: int,
                nontemporal: ir.Value) -> None:
    """target[0:count lines] = source[...]: non-temporal stores (``nontemporal``; target
    line-aligned) or ordinary ones."""
    line_type = ir.VectorType(I64, CACHE_LINE // 8)
    values = [b.load(b.gep(source, [i64(k * CACHE_LINE)], source_etype=I8), typ=line_type,
                     align=1) for k in range(count)]
    marker = b.module.add_metadata([ir.Constant(I32, 1)])
    with b.if_else(nontemporal) as (streamed, cached):
        with streamed:
            for k, value in enumerate(values):
                store = b.store(value, b.gep(target, [i64(k * CACHE_LINE)], source_etype=I8),
                                align=CACHE_LINE)
                store.set_metadata("nontemporal", marker)
        with cached:
            for k, value in enumerate(values):
                b.store(value, b.gep(target, [i64(k * CACHE_LINE)], source_etype=I8), align=1)
