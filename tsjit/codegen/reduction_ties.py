"""Which of several equal values a fused max or min returns: NumPy's (``numpy_minmax``).

The row kernels compute a float max/min's value in whatever order is fastest
(``llvm.maximum``: the same value in any order).  Its bits are ambiguous only where the
value is a zero (either sign may win) or a NaN (sign and payload): then ``emit_row_ties`` walks
the row in NumPy's order and returns NumPy's bits.  That walk evaluates the operand one
element at a time (the producer again), but it runs only for rows whose max or min is a
zero or a NaN.

- Contiguous float32/float64 runs: the last zero in NumPy's sequence (``numpy_minmax.
  in_order``), looked for from its end: the scalar rest backwards, the highest-priority
  lane backwards, the seed, the other lanes; a NaN in the seed or the vector part gives
  NumPy's default NaN, else the first NaN of the rest keeps its bits.
- float16 runs: the first element equal to the value, or the first NaN.

Column kernels compute the value as fast (``llvm.maximum`` per output element, one reduced
row after another); ``build_column_ties`` then replaces a zero or NaN by the element
NumPy's binary loop (``out = op(out, x[i])``) leaves: the first NaN, the last zero for
float32/float64 (the newer of equal values wins), the first for float16.  (Computing
NumPy's rule at every step instead is a select of the value just loaded, which LLVM turns
into a masked store: 3.5x slower on AMD's cores.)
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from tsjit.codegen.element_ops import llvm_type
from tsjit.codegen.ir_util import I64, PTR, i64, loop, stack_slot
from tsjit.codegen.numpy_minmax import column_newer_wins, row_order
from tsjit.codegen.reduction_spec import float_extremes

__all__ = ["build_column_ties", "emit_row_ties"]


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

    def at(b: ir.IRBuilder, i: ir.Value) -> ir.Value:
        return kb.emit_elements(b, pointers, i, row, wanted, {})[arg]

    is_nan = b.fcmp_unordered("uno", value, value)
    if order.lanes == 0:   # one element after another: the first equal one, the first NaN
        def first(b: ir.IRBuilder, i: ir.Value) -> None:
            x = at(b, i)
            with b.if_then(_matches(b, x, value, is_nan)):
                b.ret(x)

        loop(b, i64(0), n, first)
        b.ret(value)
        return fn
    lanes = order.lanes
    whole = b.sdiv(b.sub(n, i64(1)), i64(lanes))   # K: the vectors after the seed
    vector_part = b.select(b.icmp_signed("==", n, i64(1)), i64(0),
                           b.add(i64(1), b.mul(whole, i64(lanes))))
    with b.if_then(is_nan):
        def first_nan(b: ir.IRBuilder, i: ir.Value) -> None:
            x = at(b, i)
            with b.if_then(b.fcmp_unordered("uno", x, x)):
                b.ret(b.select(b.icmp_signed("<", i, vector_part),
                               _bits(b, ty, order.vector_nan), x))

        loop(b, i64(0), n, first_nan)
        b.ret(value)
    table = _lane_table(kb.module, order.lane_order)

    def last_zero(b: ir.IRBuilder, k: ir.Value) -> None:
        i = _reverse_position(b, table, lanes, n, whole, vector_part, k)
        x = at(b, i)
        with b.if_then(b.fcmp_ordered("==", x, value)):
            b.ret(x)

    loop(b, i64(0), n, last_zero)
    b.ret(value)
    return fn


def _lane_table(module: ir.Module, lane_order: tuple[int, ...]) -> ir.GlobalVariable:
    """The lanes by falling priority, as a constant int64 array."""
    name = "tsjit_lanes_" + "_".join(map(str, lane_order))
    table = module.globals.get(name)
    if table is None:
        ty = ir.ArrayType(I64, len(lane_order))
        table = ir.GlobalVariable(module, ty, name=name)
        table.global_constant = True
        table.linkage = "internal"
        table.initializer = ir.Constant(ty, [i64(lane) for lane in reversed(lane_order)])
    return table


def _reverse_position(b: ir.IRBuilder, table: ir.GlobalVariable, lanes: int, n: ir.Value,
                      whole: ir.Value, vector_part: ir.Value, k: ir.Value) -> ir.Value:
    """The element index of step ``k`` of NumPy's sequence walked from its end: the rest
    (``n - vector_part`` elements) backwards, the top lane's ``whole`` elements backwards,
    the seed, then the other lanes, each backwards."""
    rest = b.sub(n, vector_part)
    in_rest = b.icmp_signed("<", k, rest)
    step = b.sub(k, rest)                              # into the lanes' part
    after_top = b.icmp_signed(">", step, whole)        # past the top lane and the seed
    shifted = b.select(after_top, b.sub(step, i64(1)), step)
    safe = b.select(b.icmp_signed(">", whole, i64(0)), whole, i64(1))
    rank = b.sdiv(shifted, safe)
    within = b.srem(shifted, safe)
    lane = b.load(b.gep(table, [i64(0), rank], source_etype=table.value_type), typ=I64)
    in_lane = b.add(b.add(i64(1), lane),
                    b.mul(b.sub(b.sub(whole, i64(1)), within), i64(lanes)))
    seed = b.icmp_signed("==", step, whole)
    lane_or_seed = b.select(seed, i64(0), in_lane)
    return b.select(in_rest, b.sub(b.sub(n, i64(1)), k), lane_or_seed)


def build_column_ties(kb, p: int) -> ir.Function | None:
    """Column kernel pass ``p``'s fix-up (builder ``kb``, ``column_reduction.
    _ColumnKernelBuilder``): ``ties(corner pointers..., lanes, state, w, count, row
    strides...)`` replaces each of the tile's float max/min values that is a zero or a
    NaN by NumPy's element; None if the pass has none."""
    reductions = [r for r in kb.passes[p] if float_extremes([kb._op(r)])]
    if not reductions:
        return None
    n = kb.n_operands
    fn = ir.Function(kb.module, ir.FunctionType(ir.VoidType(), [PTR] * n + [PTR, PTR, I64, I64]
                                                + [I64] * n), name=f"{kb.name}_column_ties{p}")
    _cold(fn)
    corner, (lanes, state, w, count), strides = fn.args[:n], fn.args[n:n + 4], fn.args[n + 4:]
    b = ir.IRBuilder(fn.append_basic_block())
    finds = {r: _column_find(kb, r) for r in reductions}

    def lane(b: ir.IRBuilder, i: ir.Value) -> None:
        for r in reductions:
            value = kb.lane_load(b, lanes, r, i)
            with b.if_then(_zero_or_nan(b, value), likely=False):
                b.store(b.call(finds[r], [*corner, *strides, lanes, state, i, count, value]),
                        kb.lane_address(b, lanes, r, i))

    loop(b, i64(0), w, lane)
    b.ret_void()
    return fn


def _column_find(kb, r: int) -> ir.Function:
    """``T find(corner pointers..., row strides..., lanes, state, i, count, value)``: the
    element of lane ``i`` NumPy's binary loop leaves for a zero or NaN ``value``: the first
    NaN; the last zero for float32/float64 (the newer of equal values wins), the first for
    float16."""
    op = kb._op(r)
    dtype = np.dtype(op.dtype)
    ty = llvm_type(dtype)
    n = kb.n_operands
    fn = ir.Function(kb.module, ir.FunctionType(ty, [PTR] * n + [I64] * n +
                                                [PTR, PTR, I64, I64, ty]),
                     name=f"{kb.name}_find{r}")
    _cold(fn)
    corner, strides = fn.args[:n], fn.args[n:2 * n]
    lanes, state, i, count, value = fn.args[2 * n:]
    b = ir.IRBuilder(fn.append_basic_block())
    wanted = kb.needed([op.args[0]])
    row = kb.row_values_at(b, lanes, state, i, wanted)
    is_nan = b.fcmp_unordered("uno", value, value)
    forward = is_nan if column_newer_wins(dtype.name) else ir.Constant(ir.IntType(1), 1)

    def one(b: ir.IRBuilder, k: ir.Value) -> None:
        at = b.select(forward, k, b.sub(b.sub(count, i64(1)), k))
        pointers = [b.gep(c, [b.mul(at, stride)], source_etype=ir.IntType(8))
                    for c, stride in zip(corner, strides)]
        x = kb.emit_elements(b, pointers, i, row, wanted, {})[op.args[0]]
        with b.if_then(_matches(b, x, value, is_nan)):
            b.ret(x)

    loop(b, i64(0), count, one)
    b.ret(value)
    return fn


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
