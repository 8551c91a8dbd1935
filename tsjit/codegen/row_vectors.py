"""Plain float arithmetic of a row kernel's element values, emitted as vectors.

Two places of a row kernel compute a few element ops (``ARITHMETIC``) straight on vectors,
where the loop vectorizer cannot: a sum that adds its operands as it computes them
(``reduction_tree._fused_equal_blocks``, layer norm's ``(x - mu) ** 2``), and a streamed
output that goes from the registers to memory with non-temporal stores
(``vector_outputs``, layer norm's and softmax's outputs; the vectorizer refuses a
non-temporal store of a 4-byte-aligned float, and the L1 buffer the loop fills
instead costs a load and a store per vector to copy out: ``row_memory.stream_outputs``).

Each op is the arithmetic of its exact lowering (``element_ops``) without the NaN
selects that give NumPy's NaN bits (``operand_nans``): where no result is NaN, no operand
was, and the values are the exact ones; a caller sends any NaN result to the exact path,
which computes the same arithmetic on the same elements again, so the floating-point flags
are the exact path's too (the selects raise nothing).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from tsjit.codegen.element_ops import llvm_type, memory_type
from tsjit.codegen.elementwise_copies import store_fence
from tsjit.codegen.ir_util import I32, I64, PTR, declare_function, i64, loop, stack_slot

__all__ = ["ARITHMETIC", "FLOATS", "fits_vectors", "operand_vectors", "vector_outputs",
           "write_vectors"]

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
ARITHMETIC = {
    "add": lambda b, a: b.fadd(a[0], a[1]),
    "sub": lambda b, a: b.fsub(a[0], a[1]),
    "mul": lambda b, a: b.fmul(a[0], a[1]),
    "truediv": lambda b, a: b.fdiv(a[0], a[1]),
    "square": lambda b, a: b.fmul(a[0], a[0]),
    "neg": lambda b, a: b.fneg(a[0]),
}
_VECTOR_BYTES = 32   # an AVX register: the non-temporal stores' alignment


def operand_vectors(kb, pointers: list, row: dict, loads: dict, start: ir.Value, roots: list,
                    lanes: int):
    """``load(b, offset) -> {root: vector}``: the values ``roots`` of the row's elements
    [start + offset, start + offset + lanes) as ``lanes``-vectors (row values broadcast),
    by ARITHMETIC's plain ops; ``loads``: values read from their scratch slot."""
    wanted = kb.needed(list(roots), loads)

    def vector_type(v: int) -> ir.VectorType:
        return ir.VectorType(llvm_type(kb.spec.value_dtype(v)), lanes)

    def load(b: ir.IRBuilder, offset: ir.Value) -> dict:
        index = b.add(start, offset)
        values = {}
        for v in sorted(wanted):
            op = kb._op(v)
            if v in loads:   # a scratch buffer, aligned to its elements
                at = b.gep(pointers[loads[v]], [index], source_etype=vector_type(v).element)
                values[v] = b.load(at, typ=vector_type(v),
                                   align=kb.spec.value_dtype(v).itemsize)
            elif op is None:
                at = kb.input_address(b, pointers, kb.array_inputs.index(v), index, row)
                values[v] = b.load(at, typ=vector_type(v), align=1)
            else:
                args = [values[x] if x in values else _splat(b, row[x], lanes) for x in op.args]
                values[v] = ARITHMETIC[op.op](b, args)
        return {v: values[v] for v in roots}

    return load


def _splat(b: ir.IRBuilder, value: ir.Value, lanes: int) -> ir.Value:
    """A row value in every lane."""
    vector = ir.VectorType(value.type, lanes)
    first = b.insert_element(ir.Constant(vector, ir.Undefined), value, i64(0))
    return b.shuffle_vector(first, ir.Constant(vector, ir.Undefined),
                            ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))


def _plain(kb, loads: dict) -> np.dtype | None:
    """The one float dtype of the element-level outputs and every element value they
    need, where those are array inputs, scratch loads or ARITHMETIC ops (else None)."""
    spec = kb.spec
    outputs = [v for v in spec.outputs if kb.levels[v]]
    values = kb.needed(outputs, loads)
    dtypes = {spec.value_dtype(v) for v in values}
    if len(dtypes) != 1 or next(iter(dtypes)) not in FLOATS or spec.strided:
        return None
    if any(memory_type(spec.value_dtype(v)) != llvm_type(spec.value_dtype(v)) for v in outputs):
        return None
    if all(v in loads or kb._op(v) is None or kb._op(v).op in ARITHMETIC for v in values):
        return next(iter(dtypes))
    return None


def vector_outputs(kb, cached: bool) -> ir.Function | None:
    """``out(pointers..., state, begin, end, found)``: elements [begin, end) of the
    element-level outputs, ``end - begin`` a multiple of the vectors' lanes and every
    output's element ``begin`` 32-byte aligned, computed as vectors (``operand_vectors``)
    and stored with non-temporal stores; ``*found`` (i32) is set where an output came out
    NaN (the caller fences the stores and writes the range again, exactly).  None where
    the outputs are not plain arithmetic of one float dtype (``_plain``)."""
    loads, _ = kb.scratch(len(kb.passes), cached)
    dtype = _plain(kb, loads)
    if dtype is None:
        return None
    lanes = _VECTOR_BYTES // dtype.itemsize
    outputs = [j for j, v in enumerate(kb.spec.outputs) if kb.levels[v]]
    fn = kb.function(f"{kb.name}_outv{'c' if cached else ''}",
                     [PTR] * kb.n_slots + [PTR, I64, I64, PTR])
    pointers = list(fn.args[:kb.n_slots])
    state, begin, end, found = fn.args[kb.n_slots:]
    b = ir.IRBuilder(fn.append_basic_block())
    row = kb.load_state(b, state)
    key = ir.IntType(8 * dtype.itemsize)
    keys = ir.VectorType(key, lanes)
    noted = stack_slot(b, keys, ir.Constant(keys, [0] * lanes))
    nontemporal = b.module.add_metadata([ir.Constant(I32, 1)])
    roots = [kb.spec.outputs[j] for j in outputs]
    vectors = operand_vectors(kb, pointers, row, loads, begin, roots, lanes)

    def step(b: ir.IRBuilder, k: ir.Value) -> None:
        offset = b.mul(k, i64(lanes))
        values = vectors(b, offset)
        at = b.add(begin, offset)
        note = b.load(noted, typ=keys)
        for j, v in zip(outputs, roots):
            target = b.gep(pointers[len(kb.array_inputs) + j], [at],
                           source_etype=llvm_type(dtype))
            b.store(values[v], target, align=_VECTOR_BYTES).set_metadata(
                "nontemporal", nontemporal)
            note = _note_nans(b, note, values[v], keys)
        b.store(note, noted)

    loop(b, i64(0), b.sdiv(b.sub(end, begin), i64(lanes)), step)
    with b.if_then(_any_noted(b, b.load(noted, typ=keys), keys), likely=False):
        b.store(ir.Constant(I32, 1), found)
    b.ret_void()
    return fn


def _note_nans(b: ir.IRBuilder, note: ir.Value, value: ir.Value, keys: ir.VectorType):
    """``note`` with ``value``'s NaNs noted: float32, the largest of the bits without the
    sign (only a NaN's exceed an infinity's, as ``row_fast_blocks.note_nans``); float64,
    the lanes' NaN masks or-ed."""
    if keys.element.width == 32:
        umax = declare_function(b.module, "llvm.umax.v8i32", keys, [keys, keys])
        shifted = b.shl(b.bitcast(value, keys), ir.Constant(keys, [1] * keys.count))
        return b.call(umax, [note, shifted])
    return b.or_(note, b.sext(b.fcmp_unordered("uno", value, value), keys))


def _any_noted(b: ir.IRBuilder, note: ir.Value, keys: ir.VectorType) -> ir.Value:
    """Whether ``_note_nans`` noted a NaN (i1)."""
    if keys.element.width == 32:
        largest = b.call(declare_function(b.module, "llvm.vector.reduce.umax.v8i32",
                                          keys.element, [keys]), [note])
        return b.icmp_unsigned(">", largest, ir.Constant(keys.element, 0x7F800000 << 1))
    either = b.call(declare_function(b.module, "llvm.vector.reduce.or.v4i64",
                                     keys.element, [keys]), [note])
    return b.icmp_unsigned("!=", either, ir.Constant(keys.element, 0))


def fits_vectors(b: ir.IRBuilder, kb, pointers: list, lo: ir.Value, hi: ir.Value) -> ir.Value:
    """Whether elements [lo, hi) of the element-level outputs suit ``vector_outputs``
    (i1): a whole number of vectors, each output's element ``lo`` 32-byte aligned."""
    dtype = next(kb.spec.value_dtype(v) for v in kb.spec.outputs if kb.levels[v])
    lanes = _VECTOR_BYTES // dtype.itemsize
    whole = b.icmp_signed("==", b.srem(b.sub(hi, lo), i64(lanes)), i64(0))
    for j, v in enumerate(kb.spec.outputs):
        if kb.levels[v]:
            at = b.gep(pointers[len(kb.array_inputs) + j], [lo], source_etype=llvm_type(dtype))
            whole = b.and_(whole, b.icmp_unsigned("==", b.and_(
                b.ptrtoint(at, I64), i64(_VECTOR_BYTES - 1)), i64(0)))
    return whole


def write_vectors(b: ir.IRBuilder, kb, vectors: ir.Function, exact: ir.Function,
                  pointers: list, state: ir.Value, lo: ir.Value, hi: ir.Value) -> None:
    """Elements [lo, hi) by ``vectors`` (``vector_outputs``); where one came out NaN,
    the non-temporal stores fenced, again by the ``exact`` output function."""
    found = stack_slot(b, I32, ir.Constant(I32, 0))
    b.call(vectors, pointers + [state, lo, hi, found])
    with b.if_then(b.icmp_unsigned("!=", b.load(found, typ=I32), ir.Constant(I32, 0)),
                   likely=False):
        store_fence(b)
        b.call(exact, pointers + [state, lo, hi])
