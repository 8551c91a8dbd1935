"""Small llvmlite building blocks shared by the kernel generators: constants, counted
loops, stack variables, and reads of CPython/NumPy object fields."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()

# CPython's PyTupleObject: items follow PyObject_VAR_HEAD (refcount, type, size).
TUPLE_ITEMS_OFFSET = 24
# NumPy's PyArrayObject_fields on 64-bit platforms (after PyObject_HEAD): the stable ABI
# behind NumPy's inline PyArray_DATA / PyArray_DIMS / PyArray_STRIDES / PyArray_FLAGS.
ARRAY_DATA_OFFSET, ARRAY_DIMS_OFFSET, ARRAY_STRIDES_OFFSET, ARRAY_FLAGS_OFFSET = 16, 32, 40, 64
C_CONTIGUOUS, F_CONTIGUOUS = 0x1, 0x2


def i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def loop(
    b: ir.IRBuilder, begin: ir.Value, end: ir.Value, body: Callable[[ir.IRBuilder, ir.Value], None]
) -> None:
    """``for (i = begin; i < end; ++i) body(b, i)``; the builder ends after the loop."""
    fn = b.function
    header, done = fn.append_basic_block("loop"), fn.append_basic_block("loop_done")
    entry = b.block
    b.cbranch(b.icmp_signed("<", begin, end), header, done)
    b.position_at_end(header)
    i = b.phi(I64)
    i.add_incoming(begin, entry)
    body(b, i)
    nxt = b.add(i, i64(1), flags=["nsw"])
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, end), header, done)
    b.position_at_end(done)


def hinted_loop(b: ir.IRBuilder, begin, end, body, hints: dict) -> None:
    """``loop`` with loop-vectorizer hints: ``llvm.loop`` metadata on its latch, the
    branch back to its header (the first block ``loop`` appends)."""
    fn = b.function
    first_new = len(fn.blocks)
    loop(b, begin, end, body)
    header = fn.blocks[first_new]
    latch = next(block.terminator for block in fn.blocks[first_new:]
                 if isinstance(block.terminator, ir.ConditionalBranch)
                 and block.terminator.operands[1] is header)
    module = fn.module
    operands = [module.add_metadata([ir.MetaDataString(module, name),
                                     ir.Constant(I1 if isinstance(v, bool) else I32, int(v))])
                for name, v in hints.items()]
    loop_id = module.add_metadata([ir.MetaDataString(module, f"{fn.name}.loop{first_new}")])
    loop_id.operands = (loop_id, *operands)
    latch.set_metadata("llvm.loop", loop_id)


def stack_slot(b: ir.IRBuilder, ty: ir.Type, initial: ir.Value | None = None) -> ir.Value:
    """An ``alloca`` in the entry block, used as an opaque pointer (SROA turns scalar slots
    back into registers). llvmlite type-checks stores through typed pointers, hence the
    opaque view."""
    with b.goto_entry_block():
        slot = b.alloca(ty)
    slot.type = PTR
    if initial is not None:
        b.store(initial, slot)
    return slot


def load_field(b: ir.IRBuilder, obj: ir.Value, offset: int, ty: ir.Type) -> ir.Value:
    """The ``ty`` at byte ``offset`` of the object at ``obj``."""
    return b.load(b.gep(obj, [i64(offset)], source_etype=I8), typ=ty)


def element(b: ir.IRBuilder, base: ir.Value, index: ir.Value, ty: ir.Type) -> ir.Value:
    """Address of ``base[index]`` for elements of type ``ty``."""
    return b.gep(base, [index], source_etype=ty)


def tuple_item(b: ir.IRBuilder, tup: ir.Value, index: ir.Value) -> ir.Value:
    offset = b.add(i64(TUPLE_ITEMS_OFFSET), b.mul(index, i64(8)))
    return b.load(b.gep(tup, [offset], source_etype=I8), typ=PTR)


def set_string_attribute(fn: ir.Function, key: str, value: str) -> None:
    # llvmlite validates only keyword attributes; string attributes are printed verbatim.
    set.add(fn.attributes, f'"{key}"="{value}"')


def indirect_call(
    b: ir.IRBuilder, fn_type: ir.FunctionType, pointer: ir.Value, args: list[ir.Value]
) -> ir.Value:
    """Call through a function pointer just loaded from memory. llvmlite reads the callee
    type off the value's (typed) pointer type, so the load is retyped; LLVM's parser reads
    typed-pointer syntax as ``ptr``."""
    pointer.type = fn_type.as_pointer()
    return b.call(pointer, args)


def freeze(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """LLVM's ``freeze`` of ``value`` (llvmlite's builder has none): the same value, which
    the optimizer no longer sees as the load or computation it came from."""
    frozen = ir.Instruction(b.block, value.type, "freeze", [value])
    b._insert(frozen)
    return frozen


def fcmp_quiet(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """The ordered comparison ``x op y`` (false when either is NaN) without raising the
    invalid flag for a quiet NaN, as NumPy's comparisons do. x86's vector ``<``, ``<=``,
    ``>``, ``>=`` are signaling compares, so these compare the floats' bit patterns mapped
    to integers in the floats' order (-0.0 and +0.0 both map to 0), and ``fcmp ord``, a
    quiet compare, excludes NaN. ``==``, ``!=``, ``ord`` and ``uno`` are quiet already."""
    if op in ("==", "!=", "ord", "uno"):
        return b.fcmp_ordered(op, x, y) if op != "uno" else b.fcmp_unordered(op, x, y)
    ordered = b.fcmp_ordered("ord", x, y)
    return b.and_(ordered, b.icmp_signed(op, _ordered_key(b, x), _ordered_key(b, y)))


def _ordered_key(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    scalar = x.type.element if isinstance(x.type, ir.VectorType) else x.type
    width = {"half": 16, "float": 32, "double": 64}[str(scalar)]
    bits = ir.IntType(width)
    if isinstance(x.type, ir.VectorType):
        bits = ir.VectorType(bits, x.type.count)
    x_bits = b.bitcast(x, bits)
    negative = b.icmp_signed("<", x_bits, _splat(bits, 0))
    return b.select(negative, b.sub(_splat(bits, -(1 << (width - 1))), x_bits), x_bits)


def _splat(ty: ir.Type, value: int) -> ir.Constant:
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
    return ir.Constant(ty, value)


def declare_function(module: ir.Module, name: str, result: ir.Type,
                     args: list[ir.Type]) -> ir.Function:
    """The module's declaration of the external function ``name`` (added on first use)."""
    return module.globals.get(name) or ir.Function(module, ir.FunctionType(result, args), name)
