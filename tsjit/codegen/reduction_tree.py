"""A sum pass of a row kernel: NumPy's pairwise-summation tree over the pass's operands.

A pass whose reductions are sums walks NumPy's pairwise tree (``pairwise``) down to
subtrees of at most NODE elements (``build_tree``); there one loop (which the vectorizer
widens) computes the operands of the pass's reductions that are not in memory already
(an input, a cached value) into stack buffers, and ``pairwise.run_reducer`` reduces each
run in NumPy's order (``build_node``); the tree adds the halves as NumPy does
(``combine_slots``, also the parallel split's, ``reduction_split``).  Each function takes
the kernel's builder (``reduction._RowKernelBuilder``) as ``kb``.
"""
from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir

from tsjit.codegen import fp_status
from tsjit.codegen.element_ops import llvm_type
from tsjit.codegen.fast_form_plan import nan_blind
from tsjit.codegen.ir_util import I64, PTR, element, i64, stack_slot
from tsjit.codegen.pairwise import (
    LANES,
    emit_combine,
    emit_split,
    equal_block_cases,
    equal_blocks,
    run_reducer,
)
from tsjit.codegen.reduction_interrupts import INTERRUPT_ELEMENTS, emit_pending
from tsjit.codegen.row_fast_blocks import UNCHECKED
from tsjit.codegen.row_pipeline import PIPELINE_ARGS, emit_with_previous
from tsjit.codegen.row_vectors import ARITHMETIC, FLOATS, operand_vectors
from tsjit.codegen.vmath import FAST_FORMS

F32, F64 = ir.FloatType(), ir.DoubleType()

__all__ = ["FUSED_ROW_BYTES", "NODE", "build_node", "build_tree", "combine_slots",
           "fuses_in_cache"]

# A pass's sums recurse down NumPy's tree to subtrees of at most this many elements, whose
# operands one loop computes into a stack buffer (a few KB: it stays in L1) for
# ``pairwise.run_reducer`` to reduce.
NODE = 1024
# A row whose array inputs hold at most this many bytes finds them in the L2 cache (512 KiB
# a core) in every pass after the first that read them: its sums of computed operands
# may read them at several places at once (``fuses_in_cache``).
FUSED_ROW_BYTES = 1 << 17


def build_node(kb, p: int, cached: bool, fused: bool = False,
               previous: bool = False) -> ir.Function:
    """``node(rowptrs, state, start, n, results)``: the pass's reductions of elements
    [start, start + n), n <= NODE, into 8-byte result slots; ``previous``: then
    ``(..., prevptrs, prevstate, stream, upcoming)``, and its loop writes those elements of
    the previous row's outputs too (``row_pipeline``).  A loop computes the
    operands that are not in memory already into node buffers (and the pass's cached
    values into their scratch buffers); it is in an inlined function whose pointers
    are noalias (inputs are only read; outputs are not touched; scratch buffers are
    private), so it vectorizes.  Each operand's run is then reduced in NumPy's order
    (``pairwise.run_reducer``).

    Where every fast-form result and every NaN select the loop could leave out reaches a
    reduced operand, NaN reaches its float sum (or max, min) too: the loop runs fast
    without checking an element, and only a node whose sums come out NaN computes its
    operands again exactly, from the floating-point flags saved before it.

    ``fused`` (where ``fuses_in_cache``): a node of equal blocks computes its operands
    where its sums read them (``_fused_equal_blocks``), without the node buffers."""
    spec = kb.spec
    reductions = kb.passes[p]
    loads, stores = kb.scratch(p, cached)
    sources = kb.sources(p, cached)
    computed = [kb._op(r).args[0] for r, k in zip(reductions, sources) if k is None]
    fn = kb.function(f"{kb.name}_node{p}{'c' if cached else ''}{'f' if fused else ''}"
                     f"{'p' if previous else ''}",
                     [PTR, PTR, I64, I64, PTR] + (PIPELINE_ARGS if previous else []),
                     computes=kb.needed(computed + list(stores), loads) - set(loads))
    rowptrs, state, start, n, results = fn.args[:5]
    following = list(fn.args[5:])
    b = ir.IRBuilder(fn.append_basic_block())
    pointers = kb.pointers_from(b, rowptrs, cached)
    buffers = [stack_slot(b, ir.ArrayType(llvm_type(spec.value_dtype(a)), NODE))
               for a in computed]
    computes = kb.needed(computed + list(stores), loads) - set(loads)
    quick = {v for v in kb.checkable(computes) if kb._op(v) is not None and
             kb._op(v).op in FAST_FORMS}
    reduced = kb.checkable(kb._op(r).args[0] for r in reductions
                           if kb._op(r).args[0] in computes)   # node or scratch buffers
    blind = kb.nan_blind(computes, reduced)
    checked = bool(quick or blind) and nan_blind(spec, sorted(quick), set(reduced)) == quick
    if not (computed or stores):
        _reduce(kb, b, p, cached, pointers, start, n, results, buffers)
    elif not checked:
        if fused:
            _fused_equal_blocks(kb, b, p, cached, pointers, state, start, n, results)
        b.call(_inner(kb, p, cached, True, previous=previous),
               pointers + [state, start, n, *buffers, *following])
        _reduce(kb, b, p, cached, pointers, start, n, results, buffers)
    else:
        saved = fp_status.save(b) if quick and fp_status.supported() else None
        b.call(_inner(kb, p, cached, UNCHECKED, blind, previous),
               pointers + [state, start, n, *buffers, *following])
        _reduce(kb, b, p, cached, pointers, start, n, results, buffers)
        with b.if_then(_any_nan(kb, b, p, results), likely=False):
            if saved is not None:
                fp_status.restore(b, saved)
            b.call(_inner(kb, p, cached, False, previous=previous),
                   pointers + [state, start, n, *buffers, *following])
            _reduce(kb, b, p, cached, pointers, start, n, results, buffers)
    b.ret_void()
    return fn


def _any_nan(kb, b: ir.IRBuilder, p: int, results: ir.Value) -> ir.Value:
    """Whether a float result of pass ``p``'s reductions is NaN (i1)."""
    values = [b.load(element(b, results, i64(j), I64), typ=llvm_type(kb._op(r).dtype))
              for j, r in enumerate(kb.passes[p])]
    return functools.reduce(b.or_, [b.fcmp_unordered("uno", value, value) for value in values
                                    if value.type in (F32, F64)])


def fuses_in_cache(kb, p: int, cached: bool) -> bool:
    """Whether pass ``p``'s computed operands may be computed where its sums read them
    (``_fused_equal_blocks``) in a row short enough (``FUSED_ROW_BYTES``): contiguous
    rows, no scratch values to store, float reductions of values of their own dtype,
    computed by float arithmetic alone (ARITHMETIC: each op's flags its instruction raises),
    from array inputs an earlier pass of the row has read (so they come from the cache).

    Why only from the cache: the equal blocks read their operands at ``count`` places a
    block apart, short streams that the hardware prefetchers do not follow from memory,
    where the buffered path reads its inputs in order (the loss ``np.mean((a - b) ** 2)``
    of 16M float32: 1.6x the buffered path's time; the first pass of a row kernel,
    ``((x - 1) ** 2).sum(-1)`` at [4096, 1024]: 1.47x)."""
    loads, stores = kb.scratch(p, cached)
    reductions = [r for r, k in zip(kb.passes[p], kb.sources(p, cached)) if k is None]
    if kb.spec.strided or kb.spec.full or stores or not reductions:
        return False
    values = kb.needed([kb._op(r).args[0] for r in reductions], loads)
    return all(np.dtype(kb._op(r).dtype) in FLOATS and
               kb.spec.value_dtype(kb._op(r).args[0]) == np.dtype(kb._op(r).dtype)
               for r in reductions) and \
        all(kb.spec.value_dtype(v) in FLOATS and (
            v in loads or kb._op(v) is None or kb._op(v).op in ARITHMETIC) for v in values) and \
        all(kb.first_use[v] < p for v in values if kb._op(v) is None)


def _fused_equal_blocks(kb, b: ir.IRBuilder, p: int, cached: bool, pointers: list,
                        state: ir.Value, start: ir.Value, n: ir.Value, results: ir.Value) -> None:
    """Where the node's tree ends in equal blocks (every node of a row of 1024), its
    reductions without the node buffers: each block's next LANES operands are computed
    as one vector and added to the block's accumulators, in the buffered path's order
    (layer norm's ``(x - mu) ** 2`` is not stored and read back: 0.90 of the row kernel's
    time at [4096, 1024], one thread).  The vectors are plain arithmetic, without the NaN
    selects that give NumPy's NaN bits (``operand_nans``): where no result is NaN, no
    operand was, and the values are the buffered path's; else the buffered path computes
    the node again, exactly.  Either way the flags are the buffered path's: it computes
    the same arithmetic on the same elements (the selects raise nothing).  Returns from
    the node where it fits; other sizes fall through to the buffered path."""
    loads, _ = kb.scratch(p, cached)
    row = kb.load_state(b, state)
    for count, fits in equal_block_cases(b, n):
        with b.if_then(fits):
            for j, (r, k) in enumerate(zip(kb.passes[p], kb.sources(p, cached))):
                op = kb._op(r)
                if k is None:
                    vectors = operand_vectors(kb, pointers, row, loads, start, [op.args[0]],
                                              LANES)
                    value = equal_blocks(b, op.op, op.dtype, n, count,
                                         lambda b, at, a=op.args[0], f=vectors: f(b, at)[a])
                else:
                    value = _reduce_memory(kb, b, op, pointers, k, start, n)
                b.store(value, element(b, results, i64(j), I64))
            with b.if_then(b.not_(_any_nan(kb, b, p, results)), likely=True):
                b.ret_void()


def _inner(kb, p: int, cached: bool, fast: bool | str,
           blind: frozenset[int] = frozenset(), previous: bool = False) -> ir.Function:
    """``inner(pointers..., state, start, n, buffers...)``, inlined into the node: the
    loop computing the node's operands into its buffers and the cached values into their
    scratch buffers (``fast``: as ``element_loop``'s; ``blind``: the ops that leave out
    their NaN selects in a fast pass); ``previous``: ``(..., PIPELINE_ARGS)``, and the
    loop writes the previous row's outputs too (``row_pipeline``)."""
    spec = kb.spec
    reductions = kb.passes[p]
    loads, stores = kb.scratch(p, cached)
    computed = [kb._op(r).args[0] for r, k in zip(reductions, kb.sources(p, cached))
                if k is None]
    types = [llvm_type(spec.value_dtype(a)) for a in computed]
    mode = {True: "", False: "_exact", UNCHECKED: "_fast"}[fast]
    name = f"{kb.name}_node{p}{'c' if cached else ''}_inner{mode}{'_p' if previous else ''}"
    if name in kb.module.globals:   # the node's other variant's (``fused``)
        return kb.module.globals[name]
    inner = kb.function(name,
                        [PTR] * kb.n_slots + [PTR, I64, I64] + [PTR] * len(computed) +
                        (PIPELINE_ARGS if previous else []), inline=True)
    for arg in inner.args[:kb.n_slots + 3 + len(computed)]:
        if arg.type == PTR:
            arg.add_attribute("noalias")
    inner_pointers = list(inner.args[:kb.n_slots])
    inner_state, inner_start, inner_n = inner.args[kb.n_slots:kb.n_slots + 3]
    inner_buffers = inner.args[kb.n_slots + 3:kb.n_slots + 3 + len(computed)]
    ib = ir.IRBuilder(inner.append_basic_block())
    row = kb.load_state(ib, inner_state)
    wanted = kb.needed(computed + list(stores), loads)

    def one(ib: ir.IRBuilder, i: ir.Value, fast: list | None) -> dict:
        index = ib.add(inner_start, i)
        values = kb.emit_elements(ib, inner_pointers, index, row, wanted, loads, fast, blind)
        kb.store_scratch(ib, inner_pointers, index, values, stores)
        for buffer, a, ty in zip(inner_buffers, computed, types):
            ib.store(values[a], element(ib, buffer, i, ty))
        return values

    if previous:
        emit_with_previous(kb, ib, inner_start, inner_n, one, *inner.args[-len(PIPELINE_ARGS):],
                           lambda ib, lo, hi, body: kb.element_loop(
                               ib, lo, hi, body, wanted - set(loads),
                               (row, inner_pointers, inner_start), fast=fast))
    else:
        kb.element_loop(ib, i64(0), inner_n, one, wanted - set(loads),
                        (row, inner_pointers, inner_start), fast=fast)
    ib.ret_void()
    return inner


def _reduce(kb, b: ir.IRBuilder, p: int, cached: bool, pointers: list, start: ir.Value,
            n: ir.Value, results: ir.Value, buffers: list) -> None:
    """Each reduction of pass ``p``'s run into its result slot: from its node buffer, or
    from memory where its operand is there already."""
    computed_runs = iter(buffers)
    for j, (r, k) in enumerate(zip(kb.passes[p], kb.sources(p, cached))):
        op = kb._op(r)
        if k is None:
            reduce = run_reducer(kb.module, op.op, op.dtype, np.dtype(op.dtype).itemsize)
            value = b.call(reduce, [next(computed_runs), n])
        else:
            value = _reduce_memory(kb, b, op, pointers, k, start, n)
        b.store(value, element(b, results, i64(j), I64))


def _reduce_memory(kb, b: ir.IRBuilder, op, pointers: list, k: int, start: ir.Value,
                   n: ir.Value) -> ir.Value:
    """The reduction ``op`` of elements [start, start + n) of the row pointer ``k``'s
    values (an input: perhaps an unaligned view; or a scratch buffer)."""
    run = b.gep(pointers[k], [start], source_etype=llvm_type(op.dtype))
    align = 1 if k < len(kb.array_inputs) else np.dtype(op.dtype).itemsize
    return b.call(run_reducer(kb.module, op.op, op.dtype, align), [run, n])


def build_tree(kb, p: int, node: ir.Function) -> ir.Function:
    """``tree(rowptrs, state, start, n, results)``: NumPy's pairwise recursion down to
    subtrees of at most NODE elements (a node that writes the previous row's outputs
    too takes their arguments after these: every call passes them on)."""
    reductions = kb.passes[p]
    fn = kb.function(f"{node.name}_tree", [a.type for a in node.args])
    rowptrs, state, start, n, results = fn.args[:5]
    following = list(fn.args[5:])
    b = ir.IRBuilder(fn.append_basic_block())
    with b.if_else(b.icmp_signed("<=", n, i64(NODE))) as (small, large):
        with small:
            b.call(node, [rowptrs, state, start, n, results, *following])
        with large:
            if kb.parallel:   # Ctrl-C: skip a large subtree (reduction_interrupts)
                with b.if_then(b.icmp_signed(">", n, i64(INTERRUPT_ELEMENTS))), \
                        b.if_then(emit_pending(b)):
                    for j in range(len(reductions)):
                        b.store(i64(0), element(b, results, i64(j), I64))
                    b.ret_void()
            half = emit_split(b, n)
            left = stack_slot(b, ir.ArrayType(I64, len(reductions)))
            right = stack_slot(b, ir.ArrayType(I64, len(reductions)))
            b.call(fn, [rowptrs, state, start, half, left, *following])
            b.call(fn, [rowptrs, state, b.add(start, half), b.sub(n, half), right,
                        *following])
            combine_slots(kb, b, reductions, left, right, results)
    b.ret_void()
    return fn


def combine_slots(kb, b: ir.IRBuilder, reductions: list[int], left, right,
                  results) -> None:
    for j, r in enumerate(reductions):
        op = kb._op(r)
        ty = llvm_type(op.dtype)
        x = b.load(element(b, left, i64(j), I64), typ=ty)
        y = b.load(element(b, right, i64(j), I64), typ=ty)
        b.store(emit_combine(b, op.op, op.dtype, x, y), element(b, results, i64(j), I64))
