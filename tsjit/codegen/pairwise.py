"""NumPy's summation order, the one place tsjit follows it (and max/min of a block).

NumPy sums a contiguous run of ``n`` values with ``pairwise_sum`` (its umath
``loops_utils.h.src``):

- ``n < 8``: ``res = 0.; for i: res += a[i]``;
- ``n <= 128`` (``PW_BLOCKSIZE``): eight accumulators ``r[j] = a[j]``, then
  ``r[j] += a[i + j]`` for each whole group of eight, combined as
  ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``, then the rest added in order;
- above: ``n2 = n / 2; n2 -= n2 % 8`` and the two halves summed recursively, added.

The reduction itself starts from the identity: a run's sum is ``0.0 + pairwise(run)``
(so ``sum([-0.0])`` is ``0.0``), measured against NumPy 2.4 for float32 and float64 runs
of every length class (tests/test_reduction_numerics.py).  The eight accumulators are one
``<8 x T>`` vector here, which is exactly NumPy's order, vectorized.

``split(n)`` is the tree's split point; the generator recurses with it, and a parallel
full reduction cuts the same tree into subtrees that threads compute, so results are the
same bits for every thread count.

``run_reducer`` reduces a run in memory along that tree.  One block's eight accumulators
are one chain of dependent vector adds (16 for a block of 128: ~48 cycles of latency for
~16 cycles of loads); where a subtree ends in 2, 4 or 8 blocks of one size (every subtree
of a row of 1024 does), their chains run interleaved, which is the same additions in the
same order per block, so the same bits at the adds' throughput instead of their latency.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from llvmlite import ir

from tsjit.codegen.element_ops import llvm_type
from tsjit.codegen.ir_util import I64, PTR, i64, loop, stack_slot

__all__ = ["BLOCK", "LANES", "emit_block_reduce", "emit_combine", "emit_split", "equal_block_cases",
           "equal_blocks", "run_reducer", "split"]

BLOCK = 128   # NumPy's PW_BLOCKSIZE: runs up to this long are one block
LANES = 8     # NumPy's accumulators per block
# Subtrees of 2**k equal blocks whose chains run interleaved (largest first).
_INTERLEAVED = (8, 4, 2)


def split(n: int) -> int:
    """Where NumPy's pairwise sum splits a run of ``n > BLOCK`` values."""
    n2 = n // 2
    return n2 - n2 % LANES


def emit_split(b: ir.IRBuilder, n: ir.Value) -> ir.Value:
    half = b.sdiv(n, i64(2))
    return b.sub(half, b.srem(half, i64(LANES)))


def _intrinsic(b: ir.IRBuilder, name: str, ty: ir.Type) -> ir.Function:
    if isinstance(ty, ir.VectorType):
        suffix = f"v{ty.count}{_scalar_suffix(ty.element)}"
    else:
        suffix = _scalar_suffix(ty)
    full = f"llvm.{name}.{suffix}"
    fn = b.module.globals.get(full)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(ty, [ty, ty]), name=full)
    return fn


def _scalar_suffix(ty: ir.Type) -> str:
    return {"float": "f32", "double": "f64"}.get(str(ty), str(ty))


def emit_combine(b: ir.IRBuilder, kind: str, dtype: np.dtype, x: ir.Value, y: ir.Value):
    """``x (+ | max | min) y`` for values (scalars or vectors) of ``dtype``: NaN wins a max
    or min, integers add with wraparound as NumPy's do."""
    dtype = np.dtype(dtype)
    if kind == "reduce_sum":
        if dtype.kind == "f":
            return b.fadd(x, y)
        return b.or_(x, y) if dtype.kind == "b" else b.add(x, y)
    biggest = kind == "reduce_max"
    if dtype.kind == "f":
        return b.call(_intrinsic(b, "maximum" if biggest else "minimum", x.type), [x, y])
    if dtype.kind == "b":
        return b.or_(x, y) if biggest else b.and_(x, y)
    prefix = "s" if dtype.kind == "i" else "u"
    return b.call(_intrinsic(b, f"{prefix}{'max' if biggest else 'min'}", x.type), [x, y])


def _lane_tree(b: ir.IRBuilder, kind: str, dtype: np.dtype, r: ir.Value) -> ir.Value:
    """NumPy's combination of a block's accumulators: ((r0 + r1) + (r2 + r3)) + ..."""
    lanes = [b.extract_element(r, i64(j)) for j in range(LANES)]
    while len(lanes) > 1:
        lanes = [emit_combine(b, kind, dtype, lanes[j], lanes[j + 1])
                 for j in range(0, len(lanes), 2)]
    return lanes[0]


def emit_block_reduce(b: ir.IRBuilder, kind: str, dtype: np.dtype, buffer: ir.Value,
                      n: ir.Value, align: int = 4) -> ir.Value:
    """The reduction of ``buffer[0:n]`` (``n <= BLOCK`` values of ``dtype`` in memory as
    their register type, ``align``-byte aligned) in NumPy's pairwise-sum block order; max
    and min in the same shape (their result does not depend on the order)."""
    dtype = np.dtype(dtype)
    ty = llvm_type(dtype)
    vector = ir.VectorType(ty, LANES)
    result = stack_slot(b, ty)
    with b.if_else(b.icmp_signed("<", n, i64(LANES))) as (short, blocked):
        with short:
            if kind == "reduce_sum":
                b.store(ir.Constant(ty, 0.0 if dtype.kind == "f" else 0), result)
                first = i64(0)
            else:
                b.store(b.load(b.gep(buffer, [i64(0)], source_etype=ty), typ=ty, align=align),
                        result)
                first = i64(1)
            loop(b, first, n, lambda b, i: b.store(
                emit_combine(b, kind, dtype, b.load(result, typ=ty),
                             b.load(b.gep(buffer, [i], source_etype=ty), typ=ty, align=align)),
                result))
        with blocked:
            whole = b.sdiv(n, i64(LANES))
            accumulators = stack_slot(b, vector)
            b.store(b.load(buffer, typ=vector, align=align), accumulators)

            def add_group(b: ir.IRBuilder, g: ir.Value) -> None:
                at = b.gep(buffer, [b.mul(g, i64(LANES))], source_etype=ty)
                b.store(emit_combine(b, kind, dtype, b.load(accumulators, typ=vector),
                                     b.load(at, typ=vector, align=align)), accumulators)

            loop(b, i64(1), whole, add_group)
            b.store(_lane_tree(b, kind, dtype, b.load(accumulators, typ=vector)), result)
            loop(b, b.mul(whole, i64(LANES)), n, lambda b, i: b.store(
                emit_combine(b, kind, dtype, b.load(result, typ=ty),
                             b.load(b.gep(buffer, [i], source_etype=ty), typ=ty, align=align)),
                result))
    return b.load(result, typ=ty)


def equal_blocks(b: ir.IRBuilder, kind: str, dtype: np.dtype, n: ir.Value, count: int,
                 load: Callable[[ir.IRBuilder, ir.Value], ir.Value]) -> ir.Value:
    """The subtree of ``n`` values whose tree ends in ``count`` blocks of ``n / count``
    values, each a whole number of accumulator groups (``equal_block_cases``): the
    blocks' chains interleaved, then each block's lanes and the blocks combined as the
    tree combines them.  ``load(b, offset)``: the ``<LANES x T>`` vector of the values
    [offset, offset + LANES) of the subtree (from memory, or computed where they are
    needed: a row kernel's sum of ``(x - mu) ** 2`` never stores its operand)."""
    ty = llvm_type(dtype)
    vector = ir.VectorType(ty, LANES)
    size = b.sdiv(n, i64(count))
    starts = [b.mul(size, i64(k)) for k in range(count)]
    accumulators = [stack_slot(b, vector, load(b, at)) for at in starts]

    def add_group(b: ir.IRBuilder, g: ir.Value) -> None:
        offset = b.mul(g, i64(LANES))
        for at, slot in zip(starts, accumulators):
            value = load(b, b.add(at, offset))
            b.store(emit_combine(b, kind, dtype, b.load(slot, typ=vector), value), slot)

    loop(b, i64(1), b.sdiv(size, i64(LANES)), add_group)
    level = [_lane_tree(b, kind, dtype, b.load(slot, typ=vector)) for slot in accumulators]
    while len(level) > 1:
        level = [emit_combine(b, kind, dtype, level[k], level[k + 1])
                 for k in range(0, len(level), 2)]
    return level[0]


def equal_block_cases(b: ir.IRBuilder, n: ir.Value) -> Iterator[tuple[int, ir.Value]]:
    """``(count, whether n's subtree ends in count equal blocks)``, largest count first:
    BLOCK*count/2 < n <= BLOCK*count and n a multiple of LANES*count (every split on the
    way halves it exactly into whole groups).  Each condition is computed where the
    caller takes it (after the previous case's code)."""
    for count in _INTERLEAVED:
        fits = b.and_(b.icmp_signed("<=", n, i64(BLOCK * count)),
                      b.icmp_signed("==", b.srem(n, i64(LANES * count)), i64(0)))
        yield count, b.and_(fits, b.icmp_signed(">", n, i64(BLOCK * count // 2)))


def run_reducer(module: ir.Module, kind: str, dtype: np.dtype, align: int) -> ir.Function:
    """``T reduce(T *run, int64 n)``: the module's function reducing ``run[0:n]`` (n >= 1,
    ``align``-byte aligned) in NumPy's pairwise order (see the module docstring)."""
    dtype = np.dtype(dtype)
    name = f"tsjit_pairwise_{kind}_{dtype.name}_a{align}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    ty = llvm_type(dtype)
    fn = ir.Function(module, ir.FunctionType(ty, [PTR, I64]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    run, n = fn.args
    run.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block())
    with b.if_then(b.icmp_signed("<=", n, i64(BLOCK))):
        b.ret(emit_block_reduce(b, kind, dtype, run, n, align))
    vector = ir.VectorType(ty, LANES)

    def load(b: ir.IRBuilder, offset: ir.Value) -> ir.Value:
        return b.load(b.gep(run, [offset], source_etype=ty), typ=vector, align=align)

    for count, fits in equal_block_cases(b, n):
        with b.if_then(fits):
            b.ret(equal_blocks(b, kind, dtype, n, count, load))
    half = emit_split(b, n)
    left = b.call(fn, [run, half])
    right = b.call(fn, [b.gep(run, [half], source_etype=ty), b.sub(n, half)])
    b.ret(emit_combine(b, kind, dtype, left, right))
    return fn
