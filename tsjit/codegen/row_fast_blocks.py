"""Fast blocks in the row kernels' element loops (``reduction``).

A row kernel's pass computes its element values (softmax's and logsumexp's ``exp(x -
max)``) in a loop over the row. Where they include a math function with a fast form
(``vmath.FAST_FORMS``: the exact form's bits and flags where the argument is ordinary, NaN
elsewhere), the loop runs blocks of BLOCK elements with the fast forms first, noting
whether a fast result is NaN in a slot (``note_nans``); a block where one is runs again
exactly, from the floating-point flags as they were before it (the fast pass's are
dropped). The fast pass also leaves out the NaN selects (``operand_nans``) of ops whose
NaN reaches a value the slot notes (``fast_form_plan.nan_blind``): those give NumPy's NaN
bits in the exact pass; a loop with only such ops runs its whole range as one block. The
loop writes only what it computes (node and scratch buffers, fresh outputs), so the second
pass finds its inputs unchanged. (A NaN the exact form gives too, of a NaN argument, only
costs the block its second pass.)
"""
from __future__ import annotations

import functools
from collections.abc import Callable

from llvmlite import ir

from tsjit.codegen import fp_status
from tsjit.codegen.ir_util import declare_function, hinted_loop, i64

__all__ = ["BLOCK", "UNCHECKED", "note_nans", "run_fast_block", "slot_type"]

BLOCK = 64   # a multiple of 4 vectors of any width (an interleaved iteration)
# A fast pass whose caller checks its results (a sum pass: whether a sum is NaN,
# ``reduction_tree``) instead of its elements.
UNCHECKED = "unchecked"


def slot_type(itemsizes: list[int]) -> ir.IntType:
    """The slot's type: an integer of the fast functions' float width (a wider or narrower
    one would pack or widen the lane masks in every vector)."""
    return ir.IntType(8 * max(itemsizes, default=4))


def note_nans(b: ir.IRBuilder, slot: ir.Value, ty: ir.IntType, values: list[ir.Value]) -> None:
    """Note in ``slot`` whether any of an element's fast results is NaN (a reduction over
    the block: it vectorizes).  A float32 slot keeps the largest of the values' bits
    without their sign, which exceed an infinity's only for a NaN: a shift and a max per
    vector, where or-ing the compare's lane masks took a compare, a pack and an or (the
    vectorizer narrows the masks).  A float64 slot ors the masks (AVX2 has no 64-bit
    max, and the masks are not packed).  ``_found`` reads the slot."""
    if not values:
        return
    current = b.load(slot, typ=ty)
    if ty.width == 32:
        umax = declare_function(b.module, "llvm.umax.i32", ty, [ty, ty])
        for v in values:
            current = b.call(umax, [current, b.shl(b.bitcast(v, ty), ir.Constant(ty, 1))])
    else:
        nan = functools.reduce(b.or_, [b.fcmp_unordered("uno", v, v) for v in values])
        current = b.or_(current, b.sext(nan, ty))
    b.store(current, slot)


def _found(b: ir.IRBuilder, slot: ir.Value, ty: ir.IntType) -> ir.Value:
    """Whether ``note_nans`` noted a NaN in ``slot`` (i1)."""
    limit = 0x7F800000 << 1 if ty.width == 32 else 0   # a float32 infinity's key
    return b.icmp_unsigned(">", b.load(slot, typ=ty), ir.Constant(ty, limit))


def run_fast_block(b: ir.IRBuilder, slot: ir.Value, ty: ir.IntType,
                   element: Callable[[ir.IRBuilder, ir.Value, bool], None],
                   hints: dict, begin: ir.Value | None = None, end: ir.Value | None = None,
                   flags: bool = True) -> None:
    """One block, ``element(b, j, fast)`` for j in [begin, end): fast first, then, where
    a fast result was NaN, again exactly, from the flags saved before the block
    (``flags``; without fast forms the fast pass raises the exact pass's flags: the NaN
    selects it leaves out raise none).  [begin, end) is [0, BLOCK) by default."""
    begin = i64(0) if begin is None else begin
    end = i64(BLOCK) if end is None else end
    saved = fp_status.save(b) if flags and fp_status.supported() else None
    none = ir.Constant(ty, 0)
    b.store(none, slot)
    hinted_loop(b, begin, end, lambda b, j: element(b, j, True), hints)
    with b.if_then(_found(b, slot, ty), likely=False):
        if saved is not None:
            fp_status.restore(b, saved)
        hinted_loop(b, begin, end, lambda b, j: element(b, j, False), hints)
