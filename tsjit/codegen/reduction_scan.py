"""Reductions NumPy computes element after element: prod, argmax, argmin.

NumPy's multiply reduction is a plain loop (``acc *= x[i]``, from the identity 1: no
pairwise tree), so a product is only NumPy's bits in that order.  argmax (argmin) keeps
the first index of the greatest (least) value, and a NaN is greater than everything: the
first NaN wins and ends the search (``numpy/_core/src/multiarray/arraytypes.c.src``:
``if (!(x <= best)) {best = x; index = i; if (isnan(best)) break;}``).  Here the search
starts from (-inf, 0) (+inf for argmin, the type's least or greatest for integers), which
gives the same index: a first element equal to the start keeps index 0.

``scan_start`` and ``emit_scan_step`` are the per-element rule, shared by the row kernels
(``build_scan``: a pass over a row, one element at a time) and the column kernels (a
vector of output elements, one reduced row at a time).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from tsjit.codegen.element_ops import llvm_type
from tsjit.codegen.ir_util import I64, PTR, element, fcmp_quiet, i64, stack_slot
from tsjit.codegen.pairwise import emit_combine
from tsjit.codegen.reduction_interrupts import INTERRUPT_ELEMENTS, interruptible_blocks
from tsjit.codegen.reduction_spec import ARG_REDUCTIONS

__all__ = ["build_scan", "emit_scan_step", "scan_start"]


def scan_start(kind: str, dtype: np.dtype) -> ir.Constant:
    """The value a reduction of values of ``dtype`` starts from (argmax: the best value)."""
    dtype = np.dtype(dtype)
    ty = llvm_type(dtype)
    if kind == "reduce_prod":
        return ir.Constant(ty, 1.0 if dtype.kind == "f" else 1)
    if kind == "reduce_sum":
        return ir.Constant(ty, 0.0 if dtype.kind == "f" else 0)
    biggest = kind in ("reduce_max", "reduce_argmax")
    if dtype.kind == "f":
        return ir.Constant(ty, float("-inf") if biggest else float("inf"))
    info = np.iinfo(dtype)
    return ir.Constant(ty, int(info.min if biggest else info.max))


def emit_scan_step(b: ir.IRBuilder, kind: str, dtype: np.dtype, best: ir.Value,
                   index: ir.Value | None, x: ir.Value, i: ir.Value) -> tuple:
    """``(best, index)`` after element ``x`` at index ``i`` (``index`` None: not an arg
    reduction)."""
    dtype = np.dtype(dtype)
    if kind == "reduce_prod":
        return (b.fmul(best, x) if dtype.kind == "f" else b.mul(best, x)), index
    if kind not in ARG_REDUCTIONS:
        return emit_combine(b, kind, dtype, best, x), index
    biggest = kind == "reduce_argmax"
    if dtype.kind == "f":   # x beats best, or x is the first NaN: !(x <= best), best no NaN
        beats = b.or_(b.fcmp_unordered("uno", x, x),   # (quiet compares: no invalid flag)
                      fcmp_quiet(b, ">" if biggest else "<", x, best))
        beats = b.and_(beats, b.fcmp_ordered("ord", best, best))
    elif dtype.kind == "u":
        beats = b.icmp_unsigned(">" if biggest else "<", x, best)
    else:
        beats = b.icmp_signed(">" if biggest else "<", x, best)
    return b.select(beats, x, best), b.select(beats, i, index)


def build_scan(kb, p: int, cached: bool) -> ir.Function:
    """Row kernel pass ``p`` (builder ``kb``, ``reduction._RowKernelBuilder``) of
    sequential reductions, or of max/min only (their value does not depend on the order;
    the row then sets a zero or NaN result to NumPy's element, ``reduction_ties``):
    ``run(rowptrs, state, start, n, results)``, one loop over the row in its order (the
    vectorizer widens max/min: ``llvm.maximum``, NaN wins) in blocks with checks for Ctrl-C
    between them (``reduction_interrupts``); an arg reduction's result slot holds the
    index."""
    reductions = kb.passes[p]
    loads, stores = kb.scratch(p, cached)
    args = [kb._op(r).args[0] for r in reductions]
    dtypes = [kb.spec.value_dtype(a) for a in args]
    inner = kb.function(f"{kb.name}_scan{p}{'c' if cached else ''}_inner",
                        [PTR] * kb.n_slots + [PTR, I64, I64, PTR], inline=True)
    for k in range(kb.n_slots):
        inner.args[k].add_attribute("noalias")
    pointers = list(inner.args[:kb.n_slots])
    state, start, n, results = inner.args[kb.n_slots:]
    b = ir.IRBuilder(inner.append_basic_block())
    row = kb.load_state(b, state)
    wanted = kb.needed(args, loads)
    slots = []
    for r, dtype in zip(reductions, dtypes):
        kind = kb._op(r).op
        slots.append((stack_slot(b, llvm_type(dtype), scan_start(kind, dtype)),
                      stack_slot(b, I64, i64(0)) if kind in ARG_REDUCTIONS else None))

    def one(b: ir.IRBuilder, i: ir.Value, _fast=None) -> None:
        values = kb.emit_elements(b, pointers, i, row, wanted, loads)
        kb.store_scratch(b, pointers, i, values, stores)
        for r, a, dtype, (best, index) in zip(reductions, args, dtypes, slots):
            old = b.load(index, typ=I64) if index is not None else None
            value, position = emit_scan_step(b, kb._op(r).op, dtype,
                                             b.load(best, typ=llvm_type(dtype)), old,
                                             values[a], b.sub(i, start))
            b.store(value, best)
            if index is not None:
                b.store(position, index)

    interruptible_blocks(b, start, b.add(start, n), INTERRUPT_ELEMENTS, lambda b, lo, hi:
                         kb.element_loop(b, lo, hi, one, wanted - set(loads),
                                         (row, pointers, i64(0))), kb.parallel)
    for j, (dtype, (best, index)) in enumerate(zip(dtypes, slots)):
        result = b.load(index, typ=I64) if index is not None else \
            b.load(best, typ=llvm_type(dtype))
        b.store(result, element(b, results, i64(j), I64))
    b.ret_void()
    fn = kb.function(f"{kb.name}_scan{p}{'c' if cached else ''}", [PTR, PTR, I64, I64, PTR],
                     computes=wanted - set(loads))
    rowptrs, state, start, n, results = fn.args
    b = ir.IRBuilder(fn.append_basic_block())
    b.call(inner, kb.pointers_from(b, rowptrs, cached) + [state, start, n, results])
    b.ret_void()
    return fn
