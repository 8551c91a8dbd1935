"""How a strided row kernel (``RowKernelSpec.strided``) finds its inputs' elements.

A row of ``n`` elements whose axes do not collapse into one contiguous run is laid out in
pieces of ``m`` elements (``reduction_layout.strided_row_layout``): element ``f`` of array
input ``k`` is at ``row_k + (f // m) * outer_k + (f % m) * stride_k`` (bytes; a 1-D slice
or a reversed array is one piece, ``m = n``; a 2-D slice or a broadcast operand reduced
whole is a piece per row of it).  NumPy sums such a row (its elementwise temporaries are
C-ordered) in the logical order, so every loop over elements walks the pieces in order:
per piece, each input's *virtual base* ``row_k + r * (outer_k - m * stride_k)`` makes the
address ``base + f * stride_k``, which the loop vectorizes where the stride is the
element size (LLVM versions the loop on it).  A reversed view (every input at minus its
element size: ``x[:, ::-1]``) gets a version of its own with those strides as constants,
which the vectorizer widens with reversed vector loads (it speculates a stride of plus
one element only).

The state holds, after the row values, each array input's element stride, then its outer
stride, then ``m``; ``StridedState.load`` gives them to the loops by key.
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from tsjit.codegen.ir_util import I8, I64, i64

__all__ = ["base_key", "element_address", "load_strides", "piece_loop", "stride_key",
           "strided_fields"]


def stride_key(k: int) -> tuple:
    return ("stride", k)


def base_key(k: int) -> tuple:
    return ("base", k)


def strided_fields(arrays: int) -> list[ir.Type]:
    """The state fields of a strided kernel: element strides, outer strides, ``m``."""
    return [I64] * (2 * arrays + 1)


def load_strides(b: ir.IRBuilder, field: Callable[[int], ir.Value], arrays: int) -> dict:
    """The strided fields as loop values (``field(j)``: the j-th strided field's slot)."""
    values = {stride_key(k): b.load(field(k), typ=I64) for k in range(arrays)}
    values.update({("outer", k): b.load(field(arrays + k), typ=I64) for k in range(arrays)})
    values["piece"] = b.load(field(2 * arrays), typ=I64)
    return values


def piece_loop(b: ir.IRBuilder, begin: ir.Value, end: ir.Value, offset: ir.Value,
               row: dict, pointers: list[ir.Value], sizes: list[int],
               run: Callable[[ir.IRBuilder, ir.Value, ir.Value], None]) -> None:
    """``run(b, lo, hi)`` over [begin, end) (element ``offset + i`` of the row for loop
    index ``i``) piece by piece, with ``row[base_key(k)]`` set to each array input's
    virtual base for the piece (``pointers``: the inputs' row pointers, ``sizes``: their
    element sizes)."""
    fn = b.function
    header, done = fn.append_basic_block("pieces"), fn.append_basic_block("pieces_done")
    m = row["piece"]
    entry = b.block
    first_piece = b.sdiv(b.add(begin, offset), m)
    b.cbranch(b.icmp_signed("<", begin, end), header, done)
    b.position_at_end(header)
    lo, r = b.phi(I64), b.phi(I64)
    lo.add_incoming(begin, entry)
    r.add_incoming(first_piece, entry)
    hi = b.sub(b.mul(b.add(r, i64(1)), m), offset)
    hi = b.select(b.icmp_signed("<", hi, end), hi, end)
    for k, pointer in enumerate(pointers):
        shift = b.mul(r, b.sub(row[("outer", k)], b.mul(m, row[stride_key(k)])))
        row[base_key(k)] = b.gep(pointer, [shift], source_etype=I8)
    _versions(b, row, sizes, lambda b: run(b, lo, hi))
    lo.add_incoming(hi, b.block)
    r.add_incoming(b.add(r, i64(1)), b.block)
    b.cbranch(b.icmp_signed("<", hi, end), header, done)
    b.position_at_end(done)


def _versions(b: ir.IRBuilder, row: dict, sizes: list[int],
              run: Callable[[ir.IRBuilder], None], signs: tuple[int, ...] = (1, -1)) -> None:
    """``run(b)`` in versions: every input at its element size (contiguous pieces), every
    one at minus it (reversed), each with these strides as constants (the vectorizer
    widens both: plain or reversed vector loads), then any strides."""
    if not signs:
        run(b)
        return
    strides = {stride_key(k): row[stride_key(k)] for k in range(len(sizes))}
    constants = {stride_key(k): i64(signs[0] * size) for k, size in enumerate(sizes)}
    every = ir.Constant(ir.IntType(1), 1)
    for key, stride in strides.items():
        every = b.and_(every, b.icmp_signed("==", stride, constants[key]))
    with b.if_else(every) as (constant, other):
        with constant:
            row.update(constants)
            run(b)
            row.update(strides)
        with other:
            _versions(b, row, sizes, run, signs[1:])


def element_address(b: ir.IRBuilder, pointer: ir.Value, row: dict, k: int,
                    index: ir.Value) -> ir.Value:
    """The address of element ``index`` of array input ``k`` (row pointer ``pointer``):
    from the piece's virtual base inside ``piece_loop``, else (a cold walk one element at
    a time, ``reduction_ties``) from the index's piece."""
    offset = b.mul(index, row[stride_key(k)])
    if base_key(k) in row:
        return b.gep(row[base_key(k)], [offset], source_etype=I8)
    m = row["piece"]
    piece = b.sdiv(index, m)
    shift = b.mul(piece, b.sub(row[("outer", k)], b.mul(m, row[stride_key(k)])))
    return b.gep(pointer, [b.add(shift, offset)], source_etype=I8)
