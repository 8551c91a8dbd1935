"""Per-lane lookups in 8-entry tables of 32-bit constants, one ``vpermd`` per vector.

The loop vectorizer cannot widen a table lookup well: a load from a constant array becomes
a gather (slow on Zen 3: the loop vectorizer scalarizes it instead), and an
``extractelement`` with a variable index is not vectorized at all. AVX2's ``vpermd``
selects each lane of an 8-entry table by the low 3 bits of that lane's index, in one
instruction (a 512-bit ``vpermd`` does the same on 16 entries: the table twice).

So a lookup in scalar code is a call of an internal function (its scalar form: the
``extractelement``) that carries VFABI vector variants (``vector-function-abi-variant``):
the loop vectorizer calls the variant of its width, whose body is the intrinsic, and
``inline_variants`` (run after the optimization pipeline, which has no inliner after the
vectorizer) inlines them: the vectorized loop holds the ``vpermd`` itself. Code that is
not vectorized (scalar native loops) calls the scalar form. Without AVX2 (or off x86)
there are no variants: the vectorizer then calls the scalar form per lane (correct and
slow; no such machine runs the benchmarks). Explicit vector code (``Emit`` with lanes)
gets the same per-lane values by ``extractelement``.
"""

from __future__ import annotations

import functools
import hashlib

from llvmlite import ir

__all__ = ["MARKER", "inline_variants", "keep_alive", "lookup"]

_I32 = ir.IntType(32)
_PTR = ir.PointerType()
# An attribute of the variants only: a module that holds it needs ``inline_variants``.
MARKER = "alwaysinline"


def lookup(em, values: tuple[int, ...], index) -> ir.Value:
    """values[index & 7] per lane, as ``em``'s 32-bit integers (``values``: 8 bit patterns,
    ``index``: an i32 of em's shape)."""
    assert len(values) == 8 and em.fmt.itype.width == 32
    vector = ir.Constant(ir.VectorType(_I32, 8), [(v + 2**31) % 2**32 - 2**31 for v in values])
    b = em.b
    if em.lanes is not None:    # explicit vector code: lane by lane
        result = ir.Constant(em.itype, None)
        for lane in range(em.lanes):
            j = b.and_(b.extract_element(index, ir.Constant(_I32, lane)), ir.Constant(_I32, 7))
            result = b.insert_element(result, b.extract_element(vector, j),
                                      ir.Constant(_I32, lane))
        return result
    function, variants = _scalar_form(b.module, vector)
    call = b.call(function, [index])
    if variants:
        set.add(call.attributes, f'"vector-function-abi-variant"="{variants}"')
    return call


def _scalar_form(module: ir.Module, vector: ir.Constant) -> tuple[ir.Function, str]:
    """``i32 f(i32 index)`` for one table, defined once per module (noinline: inlined
    before the vectorizer runs, its ``extractelement`` would keep the loop scalar), with
    its vector variants and their VFABI list ("" without AVX2)."""
    digest = hashlib.sha1(str(vector).encode()).hexdigest()[:12]
    symbol = f"tsjit_vmath_table_{digest}"
    lanes = _variant_lanes()
    variants = ",".join(f"_ZGV_LLVM_N{n}v_{symbol}({symbol}_v{n})" for n in lanes)
    function = module.globals.get(symbol)
    if function is None:
        function = _define(module, symbol, _I32, [_I32])
        function.attributes.add("noinline")
        b = ir.IRBuilder(function.append_basic_block())
        b.ret(b.extract_element(vector, b.and_(function.args[0], ir.Constant(_I32, 7))))
        keep_alive(module, [_variant(module, f"{symbol}_v{n}", vector, n) for n in lanes])
    return function, variants


def _variant(module: ir.Module, name: str, vector: ir.Constant, lanes: int) -> ir.Function:
    """``<lanes x i32> f(<lanes x i32> index)``: the table's vpermd on each 8 (or, with
    AVX-512, 16) lanes."""
    shape = ir.VectorType(_I32, lanes)
    function = _define(module, name, shape, [shape])
    set.add(function.attributes, MARKER)
    b = ir.IRBuilder(function.append_basic_block())
    index = function.args[0]
    if lanes == 16 and _has_avx512():
        doubled = ir.Constant(shape, [*vector.constant, *vector.constant])
        b.ret(_intrinsic(b, "llvm.x86.avx512.permvar.si.512", shape, [doubled, index]))
        return function
    halves = []
    for start in range(0, lanes, 8):
        part = b.shuffle_vector(index, ir.Constant(shape, None),
                                ir.Constant(ir.VectorType(_I32, 8), list(range(start, start + 8))))
        halves.append(_intrinsic(b, "llvm.x86.avx2.permd", part.type, [vector, part]))
    if lanes == 8:
        b.ret(halves[0])
    else:
        b.ret(b.shuffle_vector(halves[0], halves[1],
                               ir.Constant(ir.VectorType(_I32, 16), list(range(16)))))
    return function


def _intrinsic(b: ir.IRBuilder, name: str, result: ir.Type, args: list) -> ir.Value:
    module = b.module
    function = module.globals.get(name)
    if function is None:
        function = ir.Function(module, ir.FunctionType(result, [a.type for a in args]), name)
    return b.call(function, args)


def _define(module: ir.Module, name: str, result: ir.Type, params: list) -> ir.Function:
    function = ir.Function(module, ir.FunctionType(result, params), name)
    function.linkage = "internal"
    return function


def keep_alive(module: ir.Module, functions: list[ir.Function]) -> None:
    """List ``functions`` in @llvm.compiler.used: only call-site attributes name the vector
    variants, and the optimizer would delete them before the vectorizer looks for them."""
    used = module.globals.get("llvm.compiler.used")
    if used is None:
        used = ir.GlobalVariable(module, ir.ArrayType(_PTR, 0), "llvm.compiler.used")
        used.linkage = "appending"
        used.section = "llvm.metadata"
        used.initializer = ir.Constant(used.value_type, [])
    entries = [*used.initializer.constant, *functions]
    used.value_type = ir.ArrayType(_PTR, len(entries))
    used.initializer = ir.Constant(used.value_type, entries)


@functools.cache
def _host_features() -> dict:
    import llvmlite.binding as llvm  # here: a loop from the disk cache never loads LLVM
    if not llvm.get_process_triple().startswith("x86_64"):
        return {}
    return dict(llvm.get_host_cpu_features())


def _has_avx512() -> bool:
    return bool(_host_features().get("avx512f"))


def _variant_lanes() -> tuple[int, ...]:
    """The vector widths that get a variant: 8 and 16 lanes (256- and 512-bit vectors of
    float32) with AVX2, none without."""
    return (8, 16) if _host_features().get("avx2") else ()


def inline_variants(module, pass_builder) -> None:
    """Inline the variants the vectorizer called (an llvmlite ``ModuleRef``, after the
    optimization pipeline; ``pass_builder``: the one that ran it)."""
    import llvmlite.binding as llvm
    passes = llvm.create_new_module_pass_manager()
    passes.add_always_inliner_pass()
    passes.run(module, pass_builder)
