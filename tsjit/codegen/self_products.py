"""Plain ``x * x`` where LLVM cannot change its NaN.

element_ops lowers a float ``x * x`` as ``select(x is NaN, x + x, x * x)``: x86 gives a NaN
``x`` itself, quieted, but LLVM rewrites ``fabs(y) * fabs(y)`` and ``(-y) * (-y)`` as
``y * y``, which has y's sign. The select costs a blend on the product's path, which in a
scalar recurrence (mandelbrot's ``zr * zr``) is the loop's critical path. Once a function is
complete, its phis' incoming values are known, so each square whose operand can never
become a sign operation (``fabs``, ``fneg``, ``copysign``, a max/min of negations, or a
constant-folded ``-1.0 * y``) goes back to the plain product. Anything not understood keeps
the select.
"""

from __future__ import annotations

from llvmlite import ir

# Intrinsics whose result InstCombine never turns into a sign operation of something else.
_PLAIN_INTRINSICS = ("llvm.sqrt.", "llvm.fma.", "llvm.fmuladd.", "llvm.exp.", "llvm.exp2.",
                     "llvm.log.", "llvm.log2.", "llvm.log10.",
                     "llvm.pow.", "llvm.powi.", "llvm.floor.", "llvm.ceil.", "llvm.trunc.",
                     "llvm.rint.", "llvm.round.", "llvm.nearbyint.", "llvm.roundeven.",
                     "llvm.sin.", "llvm.cos.")
_ARITHMETIC = ("fadd", "fsub", "fmul", "fdiv", "frem")
_FROM_INTEGER = ("sitofp", "uitofp")


def plain_self_products(function: ir.Function) -> None:
    """Point the uses of every guarded square whose operand cannot become a sign
    operation at its plain product (the select and its test are left to LLVM's DCE)."""
    instructions = [i for block in function.blocks for i in block.instructions]
    stored = [i.operands[0] for i in instructions if isinstance(i, ir.StoreInstr)]
    replaced = {}
    for instr in instructions:
        product = _guarded_square(instr)
        if product is not None and not _may_become_sign_op(product.operands[0], stored, set()):
            replaced[instr] = product
    for instr in instructions:
        uses = ([v for v, _ in instr.incomings] if isinstance(instr, ir.PhiInstr)
                else instr.operands)
        for old in [v for v in uses if v in replaced]:
            instr.replace_usage(old, replaced[old])


def _guarded_square(instr: ir.Instruction) -> ir.Instruction | None:
    """The ``x * x`` of ``select(fcmp uno x x, x + x, x * x)``, or None."""
    if not isinstance(instr, ir.SelectInstr):
        return None
    test, quieted, product = instr.operands
    if not (isinstance(test, ir.FCMPInstr) and test.op == "uno"):
        return None
    x = test.operands[0]
    shapes = ((test, "fcmp"), (quieted, "fadd"), (product, "fmul"))
    if all(isinstance(i, ir.Instruction) and i.opname == name and list(i.operands) == [x, x]
           for i, name in shapes):
        return product
    return None


def _may_become_sign_op(value: ir.Value, stored: list[ir.Value], seen: set[int]) -> bool:
    """Whether LLVM may see ``value`` as a sign operation of another value: whether a sign
    operation (or an unknown instruction) reaches it through what LLVM folds or forwards."""
    if isinstance(value, (ir.Constant, ir.Argument)) or id(value) in seen:
        return False
    seen.add(id(value))
    if isinstance(value, ir.PhiInstr):
        sources = [v for v, _ in value.incomings]
    elif not isinstance(value, ir.Instruction):
        return True
    elif value.opname == "select":
        sources = value.operands[1:]
    elif value.opname in _ARITHMETIC:
        # x * -1.0 and -0.0 - x fold to -x; x + -0.0 and x * 1.0 to x; (-a) + (-b) to -(a + b)
        if any(_negative_or_zero(v) for v in value.operands):
            return True
        sources = value.operands
    elif isinstance(value, ir.LoadInstr):   # a store to the same place may be forwarded
        sources = [v for v in stored if v.type == value.type]
    elif value.opname in _FROM_INTEGER:
        return False
    elif isinstance(value, ir.CallInstr):
        return not getattr(value.callee, "name", "").startswith(_PLAIN_INTRINSICS)
    else:
        return True
    return any(_may_become_sign_op(v, stored, seen) for v in sources)


def _negative_or_zero(value: ir.Value) -> bool:
    """Whether ``value`` may fold to a constant that is not a positive number."""
    constants = _folded_constants(value, set())
    return constants is not None and any(not (isinstance(c, float) and c > 0.0)
                                         for c in constants)


def _folded_constants(value: ir.Value, seen: set[int]) -> list[object] | None:
    """The constants ``value`` is made of, if it is a constant or a phi or select of
    constants only (the only values that fold to a constant here); else None."""
    if isinstance(value, ir.Constant):
        return [value.constant]
    if not isinstance(value, (ir.PhiInstr, ir.SelectInstr)):
        return None
    if id(value) in seen:
        return []
    seen.add(id(value))
    arms = ([v for v, _ in value.incomings] if isinstance(value, ir.PhiInstr)
            else value.operands[1:])
    found: list[object] = []
    for arm in arms:
        constants = _folded_constants(arm, seen)
        if constants is None:
            return None
        found += constants
    return found
