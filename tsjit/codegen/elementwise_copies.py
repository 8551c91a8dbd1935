"""Moving elements between array memory and the contiguous buffers a kernel body works on.

The elementwise driver (``elementwise_driver``) hands kernel bodies contiguous element
ranges. Operands that are not contiguous along a row are gathered into (outputs scattered
from) stack buffers, a broadcast value is filled in, and large outputs are staged and then
streamed to memory with non-temporal stores. Everything here is straight-line or counted
loops over bytes, independent of the kernel's dtypes (element size is a run-time value).
"""

from __future__ import annotations

from llvmlite import ir

from tsjit.codegen.ir_util import I1, I8, I32, I64, PTR, i64, loop

__all__ = ["LINE", "copy_strided", "store_fence", "stream_copy"]

LINE = 64  # bytes per cache line
_UNROLL = 4


def store_fence(b: ir.IRBuilder) -> None:
    """Non-temporal stores are weakly ordered: make them visible before the task ends."""
    b.call(b.module.declare_intrinsic("llvm.x86.sse.sfence", (),
                                      ir.FunctionType(ir.VoidType(), [])), [])


def stream_copy(b: ir.IRBuilder, target: ir.Value, source: ir.Value, nbytes: ir.Value) -> None:
    """target[0:nbytes] = source[0:nbytes]; the whole lines of target with non-temporal
    stores, the partial lines at either end with ordinary ones."""
    memcpy = b.module.declare_intrinsic("llvm.memcpy", [PTR, PTR, I64])
    address = b.ptrtoint(target, I64)
    head = b.and_(b.sub(i64(0), address), i64(LINE - 1))
    head = b.select(b.icmp_signed("<", head, nbytes), head, nbytes)
    with b.if_then(b.icmp_signed(">", head, i64(0))):  # calls are dearer than the test
        b.call(memcpy, [target, source, head, ir.Constant(I1, 0)])
    lines = b.sdiv(b.sub(nbytes, head), i64(LINE))
    line_type = ir.VectorType(I64, LINE // 8)
    nontemporal = b.module.add_metadata([ir.Constant(I32, 1)])

    def line(b: ir.IRBuilder, index: ir.Value) -> None:
        offset = b.add(head, b.mul(index, i64(LINE)))
        value = b.load(b.gep(source, [offset], source_etype=I8), typ=line_type, align=1)
        store = b.store(value, b.gep(target, [offset], source_etype=I8), align=LINE)
        store.set_metadata("nontemporal", nontemporal)

    loop(b, i64(0), lines, line)
    done = b.add(head, b.mul(lines, i64(LINE)))
    with b.if_then(b.icmp_signed("<", done, nbytes)):
        b.call(memcpy, [b.gep(target, [done], source_etype=I8),
                        b.gep(source, [done], source_etype=I8), b.sub(nbytes, done),
                        ir.Constant(I1, 0)])


def copy_strided(b: ir.IRBuilder, direction: str, packed, strided, stride, itemsize, n) -> None:
    """Gather (strided -> packed buffer) or scatter (packed buffer -> strided) n elements
    of ``itemsize`` bytes (a zero stride gathers a broadcast value). Scalar code unrolled
    by hand: Zen 4's vector gathers are slower than scalar loads, and the quick pipeline
    does not unroll."""
    switch = b.switch(itemsize, b.function.append_basic_block("copy_done"))
    done = switch.default
    for size in (1, 2, 4, 8):
        case = b.function.append_basic_block(f"{direction}_{size}")
        switch.add_case(ir.Constant(I64, size), case)
        b.position_at_end(case)
        ty = ir.IntType(8 * size)

        def move(b: ir.IRBuilder, i: ir.Value, ty=ty) -> None:
            at_packed = b.gep(packed, [i], source_etype=ty)
            at_strided = b.gep(strided, [b.mul(i, stride)], source_etype=I8)
            source, target = (
                (at_strided, at_packed) if direction == "gather" else (at_packed, at_strided)
            )
            b.store(b.load(source, typ=ty, align=1), target, align=1)

        if direction == "gather":
            with b.if_else(b.icmp_signed("==", stride, i64(0))) as (broadcast, strided_source):
                with broadcast:
                    _fill(b, packed, b.load(strided, typ=ty, align=1), n)
                with strided_source:
                    _unrolled_loop(b, n, move)
        else:
            _unrolled_loop(b, n, move)
        b.branch(done)
    b.position_at_end(done)


def _unrolled_loop(b: ir.IRBuilder, n: ir.Value, body) -> None:
    def group(b: ir.IRBuilder, g: ir.Value) -> None:
        first = b.mul(g, i64(_UNROLL))
        for lane in range(_UNROLL):
            body(b, b.add(first, i64(lane)))

    groups = b.sdiv(n, i64(_UNROLL))
    loop(b, i64(0), groups, group)
    loop(b, b.mul(groups, i64(_UNROLL)), n, body)


def _fill(b: ir.IRBuilder, packed: ir.Value, value: ir.Value, n: ir.Value) -> None:
    """packed[0:n] = value, 32 bytes per store (a broadcast operand's row)."""
    lanes = 256 // value.type.width
    vector_type = ir.VectorType(value.type, lanes)
    single = b.insert_element(ir.Constant(vector_type, ir.Undefined), value, ir.Constant(I32, 0))
    splat = b.shuffle_vector(single, single, ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))
    groups = b.sdiv(n, i64(lanes))
    loop(b, i64(0), groups, lambda b, g: b.store(
        splat, b.gep(packed, [b.mul(g, i64(lanes))], source_etype=value.type), align=1))
    loop(b, b.mul(groups, i64(lanes)), n, lambda b, i: b.store(
        value, b.gep(packed, [i], source_etype=value.type), align=1))
