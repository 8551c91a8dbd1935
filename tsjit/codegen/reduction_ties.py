"""Which of several equal values a fused max or min returns: NumPy's (``numpy_minmax``).

The row kernels compute a float max/min's value in whatever order is fastest
(``llvm.maximum``: the same value in any order).  Its bits are ambiguous only where the
value is a zero (either sign may win) or a NaN (sign and payload): then ``emit_row_ties``
searches the row for the element NumPy returns.  The search runs only for rows whose max
or min is a zero or a NaN, and computes the operand again (the producer), but a block of
1024 elements at a time, in a loop the vectorizer widens like the kernel's own, which
writes a byte per element (does it match?); the flags are then read a vector (or eight
bytes) at a time, so a row costs about one more pass of the kernel (an element-by-element
walk of NumPy's sequence cost 4-8 passes: bench/reduction_coverage.py, row_max_zero_last).

- Contiguous float32/float64 runs: the last zero in NumPy's sequence (``numpy_minmax.
  in_order``): the scalar rest backwards, else the top lane's last zero, else the seed,
  else the last zero of the highest-priority lane that has one (each lane's last is the
  first found, the vectors flagged block by block from the end; the search stops at the
  top lane's); a NaN in the seed or the vector part gives NumPy's default NaN, else the
  first NaN of the rest keeps its bits.
- float16 runs: the first element equal to the value, or the first NaN.
- float32/float64 runs a strided kernel reads from an input at another stride than the
  element size (a reversed view reduced as it is; ``numpy_minmax``'s unrolled scalar
  loop): a NaN in the seed, else the first NaN of the lowest accumulator that has one,
  else the first NaN of the rest; of zeros the last of the rest, else the last of the
  highest accumulator that has one, else the seed (``_unrolled_ties``).

Column kernels follow NumPy's binary loop (``out = op(out, x[i])``, one reduced row after
another) at every step, ``emit_column_extreme``: the first NaN, the last of equal values
for float32/float64 (the newer wins), the first for float16.  Its compares and select
cost what ``llvm.maximum`` does, so a column whose max is a zero takes no more time than
another (a walk of the rows for NumPy's zero after the max took 1.4-4x the max).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from tsjit.codegen.element_ops import llvm_type
from tsjit.codegen.ir_util import (
    I8,
    I64,
    PTR,
    declare_function,
    freeze,
    hinted_loop,
    i64,
    loop,
    stack_slot,
)
from tsjit.codegen.numpy_minmax import UNROLL, RowOrder, column_newer_wins, row_order
from tsjit.codegen.reduction_strided import stride_key

__all__ = ["emit_column_extreme", "emit_row_ties"]


def emit_column_extreme(b: ir.IRBuilder, kind: str, dtype: np.dtype, acc: ir.Value,
                        x: ir.Value) -> ir.Value:
    """Float max/min ``kind`` of the value ``acc`` so far (loaded from its lane) and the
    next reduced row's ``x`` by NumPy's binary loop along a leading axis (``out =
    op(out, x)``): a NaN so far stays, bits and all; else ``x`` unless ``acc`` is beyond it
    (float32/float64: the newer of equal values) or beyond or equal (float16: the older).
    The ordered compare raises the invalid flag on a NaN, as ``llvm.maximum``'s ``vmaxps``
    does: such a call goes to NumPy unless its error state ignores invalid.  ``acc`` is
    frozen: a select between a loaded value and another one, stored back, is what LLVM
    turns into a masked store (``vmaskmovps``, microcoded on AMD's cores: the column max
    ran 3.5x slower)."""
    newer = column_newer_wins(np.dtype(dtype).name)
    pred = (">" if newer else ">=") if kind == "reduce_max" else ("<" if newer else "<=")
    keep = b.or_(b.fcmp_unordered("uno", acc, acc), b.fcmp_ordered(pred, acc, x))
    return b.select(keep, freeze(b, acc), x)


def _bits(b: ir.IRBuilder, ty: ir.Type, bits: int) -> ir.Value:
    """The float of type ``ty`` with exactly these bits (a NaN's payload included)."""
    width = {"half": 16, "float": 32, "double": 64}[str(ty)]
    return b.bitcast(ir.Constant(ir.IntType(width), bits), ty)


def emit_row_ties(kb, b: ir.IRBuilder, rowptrs: ir.Value, state: ir.Value, n: ir.Value,
                  r: int, value: ir.Value) -> ir.Value:
    """Row-kernel reduction ``r`` (a float max/min whose value is ``value``) with NumPy's
    bits: ``value`` unless it is a zero or a NaN, else the element NumPy returns."""
    fn = _ties_function(kb, r)
    result = stack_slot(b, value.type, value)
    with b.if_then(_zero_or_nan(b, value), likely=False):
        b.store(b.call(fn, [rowptrs, state, n, value]), result)
    return b.load(result)


def _ties_function(kb, r: int) -> ir.Function:
    """``T ties(rowptrs, state, n, value)``: NumPy's element for a zero or NaN ``value``."""
    name = f"{kb.name}_ties{r}"
    existing = kb.module.globals.get(name)
    if existing is not None:
        return existing
    op = kb._op(r)
    dtype = np.dtype(op.dtype)
    ty = llvm_type(dtype)
    arg = op.args[0]
    fn = ir.Function(kb.module, ir.FunctionType(ty, [PTR, PTR, I64, ty]), name=name)
    _cold(fn)
    rowptrs, state, n, value = fn.args
    b = ir.IRBuilder(fn.append_basic_block())
    pointers = kb.pointers_from(b, rowptrs, False)
    row = kb.load_state(b, state)
    wanted = kb.needed([arg])
    order = row_order(dtype.name)

    def element(b: ir.IRBuilder, i: ir.Value, row: dict) -> ir.Value:
        return kb.emit_elements(b, pointers, i, row, wanted, {})[arg]

    def at(b: ir.IRBuilder, i: ir.Value) -> ir.Value:
        return element(b, i, row)

    def flags(test) -> _Flags:
        return _Flags(kb, b, row, pointers, wanted, lambda b, i, row: test(b, element(b, i, row)))

    def nan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
        return b.fcmp_unordered("uno", x, x)

    is_nan = b.fcmp_unordered("uno", value, value)
    if order.lanes == 0:   # one element after another: the first equal one, the first NaN
        def found(b: ir.IRBuilder, i: ir.Value) -> None:
            b.ret(at(b, i))

        _first_match(b, flags(lambda b, x: _matches(b, x, value, is_nan)), i64(0), n, found)
        b.ret(value)
        return fn
    if kb.spec.strided and arg in kb.array_inputs:   # NumPy reads it as it is
        stride = row[stride_key(kb.array_inputs.index(arg))]
        with b.if_then(b.icmp_signed("!=", stride, i64(dtype.itemsize))):
            _unrolled_ties(b, at, n, value, is_nan)
    lanes = order.lanes
    whole = b.sdiv(b.sub(n, i64(1)), i64(lanes))   # K: the vectors after the seed
    vector_part = b.select(b.icmp_signed("==", n, i64(1)), i64(0),
                           b.add(i64(1), b.mul(whole, i64(lanes))))
    with b.if_then(is_nan):
        def first_nan(b: ir.IRBuilder, i: ir.Value) -> None:
            b.ret(b.select(b.icmp_signed("<", i, vector_part), _bits(b, ty, order.vector_nan),
                           at(b, i)))

        _first_match(b, flags(nan), i64(0), n, first_nan)
        b.ret(value)

    def last_in_rest(b: ir.IRBuilder, k: ir.Value) -> None:   # fewer than ``lanes``
        x = at(b, b.sub(b.sub(n, i64(1)), k))
        with b.if_then(b.fcmp_ordered("==", x, value)):
            b.ret(x)

    loop(b, i64(0), b.sub(n, vector_part), last_in_rest)
    i = _last_in_lanes(b, flags(lambda b, x: b.fcmp_ordered("==", x, value)), order, whole)
    b.ret(at(b, i))
    return fn


def _unrolled_ties(b: ir.IRBuilder, at, n: ir.Value, value: ir.Value,
                   is_nan: ir.Value) -> None:
    """Return NumPy's element of a zero or NaN ``value`` from a run NumPy reduces by its
    scalar loop unrolled by ``UNROLL`` (``numpy_minmax``; ``at(b, i)``: element ``i``):
    the seed, ``whole`` elements in ``UNROLL`` accumulators (element ``1 + j + UNROLL *
    t`` in accumulator ``j``), then the rest.  Element by element: it runs only for a
    run whose max or min is a zero or a NaN."""
    whole = b.sdiv(b.sub(n, i64(1)), i64(UNROLL))    # elements per accumulator
    rest = b.add(i64(1), b.mul(whole, i64(UNROLL)))

    def lane_element(b: ir.IRBuilder, j: ir.Value, t: ir.Value) -> ir.Value:
        return at(b, b.add(b.add(i64(1), j), b.mul(t, i64(UNROLL))))

    def returns(b: ir.IRBuilder, x: ir.Value, test: ir.Value) -> None:
        with b.if_then(test):
            b.ret(x)

    with b.if_then(is_nan):   # the seed's, the lowest accumulator's first, the rest's first
        seed = at(b, i64(0))
        returns(b, seed, b.fcmp_unordered("uno", seed, seed))

        def nan_lane(b: ir.IRBuilder, j: ir.Value) -> None:
            def step(b: ir.IRBuilder, t: ir.Value) -> None:
                x = lane_element(b, j, t)
                returns(b, x, b.fcmp_unordered("uno", x, x))
            loop(b, i64(0), whole, step)

        loop(b, i64(0), i64(UNROLL), nan_lane)

        def nan_rest(b: ir.IRBuilder, i: ir.Value) -> None:
            x = at(b, i)
            returns(b, x, b.fcmp_unordered("uno", x, x))

        loop(b, rest, n, nan_rest)
        b.ret(value)

    def zero_rest(b: ir.IRBuilder, k: ir.Value) -> None:   # the rest's last
        x = at(b, b.sub(b.sub(n, i64(1)), k))
        returns(b, x, b.fcmp_ordered("==", x, value))

    loop(b, i64(0), b.sub(n, rest), zero_rest)

    def zero_lane(b: ir.IRBuilder, k: ir.Value) -> None:   # the highest accumulator's last
        def step(b: ir.IRBuilder, u: ir.Value) -> None:
            x = lane_element(b, b.sub(i64(UNROLL - 1), k), b.sub(b.sub(whole, i64(1)), u))
            returns(b, x, b.fcmp_ordered("==", x, value))
        loop(b, i64(0), whole, step)

    loop(b, i64(0), i64(UNROLL), zero_lane)
    b.ret(at(b, i64(0)))


# Elements whose match flags one step of a search computes at once (a stack buffer of
# bytes, written by a loop the vectorizer widens as it widens the kernel's own loops).
_BLOCK = 1024


class _Flags:
    """A search's match flags, a byte per element of a block: ``test(b, i, row)`` of
    element ``i`` (``row``: the row values, where a strided kernel's element loop sets
    its pieces' bases: ``reduction_strided``)."""

    def __init__(self, kb, b: ir.IRBuilder, row: dict, pointers: list[ir.Value],
                 wanted: set[int], test) -> None:
        self.kb, self.row, self.pointers, self.wanted, self.test = kb, row, pointers, wanted, test
        self.buffer = stack_slot(b, ir.ArrayType(I8, _BLOCK + 8))

    def holds(self, b: ir.IRBuilder, i: ir.Value) -> ir.Value:
        """The test of element ``i`` alone."""
        return self.test(b, i, self.row)

    def mark(self, b: ir.IRBuilder, start: ir.Value, count: ir.Value) -> None:
        """Flag ``e`` (0 or 1): the test of element ``start + e``, for ``e`` in ``[0,
        count)``; then eight zero bytes."""
        row = dict(self.row)   # a strided walk's piece bases stay in its loops

        def one(b: ir.IRBuilder, e: ir.Value, _fast=None) -> None:
            b.store(b.zext(self.test(b, b.add(start, e), row), I8),
                    b.gep(self.buffer, [e], source_etype=I8))

        if self.kb.spec.strided:
            self.kb.element_loop(b, i64(0), count, one, self.wanted, (row, self.pointers, start))
        else:
            hinted_loop(b, i64(0), count, one, {"llvm.loop.vectorize.enable": True})
        b.store(ir.Constant(I64, 0), b.gep(self.buffer, [count], source_etype=I8), align=1)

    def load(self, b: ir.IRBuilder, offset: ir.Value, ty: ir.Type) -> ir.Value:
        """The flags from ``offset`` on as one integer of type ``ty``."""
        return b.load(b.gep(self.buffer, [offset], source_etype=I8), typ=ty, align=1)


def _first_match(b: ir.IRBuilder, flags: _Flags, begin: ir.Value, end: ir.Value,
                 found) -> None:
    """``found(b, i)`` (which returns) for the first ``i`` in ``[begin, end)`` whose flag
    is set, a block of flags at a time; falls through if there is none."""
    blocks = b.sdiv(b.add(b.sub(end, begin), i64(_BLOCK - 1)), i64(_BLOCK))

    def block(b: ir.IRBuilder, q: ir.Value) -> None:
        start = b.add(begin, b.mul(q, i64(_BLOCK)))
        count = b.sub(end, start)
        count = b.select(b.icmp_signed("<", count, i64(_BLOCK)), count, i64(_BLOCK))
        flags.mark(b, start, count)

        def word(b: ir.IRBuilder, w: ir.Value) -> None:
            bits = flags.load(b, b.mul(w, i64(8)), I64)
            with b.if_then(b.icmp_unsigned("!=", bits, i64(0)), likely=False):
                byte = b.lshr(_count_trailing_zeros(b, bits), i64(3))
                found(b, b.add(start, b.add(b.mul(w, i64(8)), byte)))

        loop(b, i64(0), b.sdiv(b.add(count, i64(7)), i64(8)), word)

    loop(b, i64(0), blocks, block)


def _last_in_lanes(b: ir.IRBuilder, flags: _Flags, order: RowOrder,
                   whole: ir.Value) -> ir.Value:
    """The index of the last element in NumPy's sequence of the vector part (the seed and
    ``whole`` vectors of ``order.lanes`` after it) whose flag is set: the top lane's
    last, else the seed, else the last of the highest lane that has one (the seed where
    none does).  The vectors are flagged a block at a time from the end; each lane's
    last is the first found; the search ends at the top lane's."""
    lanes = order.lanes
    mask_type = ir.IntType(8 * lanes)
    per_block = _BLOCK // lanes
    priority = _constant_table(b.module, [order.lane_order.index(k) for k in range(lanes)])
    best = stack_slot(b, I64, i64(-1))      # the priority of the best lane found
    best_index = stack_slot(b, I64, i64(0))
    seen = stack_slot(b, mask_type, ir.Constant(mask_type, 0))
    decide = b.function.append_basic_block("decide")
    blocks = b.sdiv(b.add(whole, i64(per_block - 1)), i64(per_block))

    def block(b: ir.IRBuilder, q: ir.Value) -> None:
        stop = b.sub(whole, b.mul(q, i64(per_block)))     # vectors [first, stop)
        first = b.sub(stop, i64(per_block))
        first = b.select(b.icmp_signed("<", first, i64(0)), i64(0), first)
        flags.mark(b, b.add(i64(1), b.mul(first, i64(lanes))),
                   b.mul(b.sub(stop, first), i64(lanes)))

        def vector(b: ir.IRBuilder, t: ir.Value) -> None:
            j = b.sub(b.sub(stop, i64(1)), t)
            offset = b.mul(b.sub(j, first), i64(lanes))
            bits = flags.load(b, offset, mask_type)
            new = b.and_(bits, b.not_(b.load(seen, typ=mask_type)))
            with b.if_then(b.icmp_unsigned("!=", new, ir.Constant(mask_type, 0)),
                           likely=False):
                b.store(b.or_(b.load(seen, typ=mask_type), new), seen)

                def lane(b: ir.IRBuilder, _: ir.Value) -> None:   # each lane new here
                    rest = b.load(seen_now, typ=mask_type)
                    k = b.lshr(_as_i64(b, _count_trailing_zeros(b, rest)), i64(3))
                    b.store(b.and_(rest, b.sub(rest, ir.Constant(mask_type, 1))), seen_now)
                    rank = b.load(b.gep(priority, [i64(0), k], source_etype=priority.value_type),
                                  typ=I64)
                    with b.if_then(b.icmp_signed(">", rank, b.load(best, typ=I64))):
                        b.store(rank, best)
                        b.store(b.add(i64(1), b.add(b.mul(j, i64(lanes)), k)), best_index)

                seen_now = stack_slot(b, mask_type, new)
                loop(b, i64(0), _count_ones(b, new), lane)
                with b.if_then(b.icmp_signed("==", b.load(best, typ=I64), i64(lanes - 1))):
                    b.branch(decide)

        loop(b, i64(0), b.sub(stop, first), vector)

    loop(b, i64(0), blocks, block)
    b.branch(decide)
    b.position_at_end(decide)
    rank = b.load(best, typ=I64)
    top = b.icmp_signed("==", rank, i64(lanes - 1))
    none = b.icmp_signed("<", rank, i64(0))
    seed = b.select(b.or_(top, none), ir.Constant(ir.IntType(1), 0), flags.holds(b, i64(0)))
    return b.select(b.or_(none, seed), i64(0), b.load(best_index, typ=I64))


def _count_trailing_zeros(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    cttz = declare_function(b.module, f"llvm.cttz.i{x.type.width}", x.type,
                            [x.type, ir.IntType(1)])
    return b.call(cttz, [x, ir.Constant(ir.IntType(1), 1)])   # x is not zero


def _count_ones(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ctpop = declare_function(b.module, f"llvm.ctpop.i{x.type.width}", x.type, [x.type])
    return _as_i64(b, b.call(ctpop, [x]))


def _as_i64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """An unsigned integer (a count) as an int64."""
    width = x.type.width
    return x if width == 64 else b.zext(x, I64) if width < 64 else b.trunc(x, I64)


def _constant_table(module: ir.Module, values: list[int]) -> ir.GlobalVariable:
    """``values`` as a constant int64 array (shared by name)."""
    name = "tsjit_table_" + "_".join(map(str, values))
    table = module.globals.get(name)
    if table is None:
        ty = ir.ArrayType(I64, len(values))
        table = ir.GlobalVariable(module, ty, name=name)
        table.global_constant = True
        table.linkage = "internal"
        table.initializer = ir.Constant(ty, [i64(v) for v in values])
    return table


def _cold(fn: ir.Function) -> None:
    """A rarely called internal function: kept out of the hot loops."""
    fn.linkage = "internal"
    for attribute in ("nounwind", "noinline", "cold"):
        fn.attributes.add(attribute)


def _zero_or_nan(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    return b.fcmp_unordered("==", value, ir.Constant(value.type, 0.0))


def _matches(b: ir.IRBuilder, x: ir.Value, value: ir.Value, is_nan: ir.Value) -> ir.Value:
    """``x`` is the zero ``value`` (either sign), or a NaN where ``value`` is one."""
    return b.or_(b.fcmp_ordered("==", x, value),
                 b.and_(is_nan, b.fcmp_unordered("uno", x, x)))
