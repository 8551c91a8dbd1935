"""Per-lane table lookups (vmath_table) and the float32 exp built on them (vmath_exp32).

A lookup in scalar code is a call with VFABI vector variants: the vectorized loop must hold
the permute itself (no call left after ``inline_variants``), and every form (the
vectorized loop, its scalar remainder, explicit vector code) must give values[index & 7].
"""
from __future__ import annotations

import ctypes
import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from _llvm_harness import MathKernels, _target_machine
from llvmlite import ir

from tsjit.codegen import vmath_table
from tsjit.codegen.vmath_emit import F32, Emit

VALUES = (3, -7, 1 << 30, -(1 << 31), 0x7F800000, 12345, -1, 0)
HAS_AVX2 = vmath_table._variant_lanes() != ()
VARIANT_CALL = re.compile(r"call <\d+ x i32> @tsjit_vmath_table_")


def _lookup_loop(lanes: int | None) -> ir.Module:
    """void f(ptr out, ptr index, i64 n): out[i] = lookup(VALUES, index[i]), scalar code the
    loop vectorizer widens (``lanes`` None) or explicit ``lanes``-wide vector code."""
    i32, i64, ptr = ir.IntType(32), ir.IntType(64), ir.PointerType()
    module = ir.Module("lookup")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, i64]), "f")
    set.add(fn.attributes, '"prefer-vector-width"="512"')
    out, index, n = fn.args
    out.add_attribute("noalias")
    index.add_attribute("noalias")
    entry, body, done = (fn.append_basic_block(s) for s in ("entry", "body", "done"))
    b = ir.IRBuilder(entry)
    b.branch(body)
    b.position_at_end(body)
    i = b.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), entry)
    shape = i32 if lanes is None else ir.VectorType(i32, lanes)
    value = b.load(b.gep(index, [i], source_etype=i32), typ=shape, align=4)
    result = vmath_table.lookup(Emit(b, F32, lanes), VALUES, value)
    b.store(result, b.gep(out, [i], source_etype=i32), align=4)
    following = b.add(i, ir.Constant(i64, 1 if lanes is None else lanes))
    i.add_incoming(following, body)
    b.cbranch(b.icmp_signed("<", following, n), body, done)
    b.position_at_end(done)
    b.ret_void()
    return module


def _compiled(module: ir.Module):
    tm = _target_machine()
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    parsed = llvm.parse_assembly(str(module))
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = True
    builder = llvm.create_pass_builder(tm, options)
    builder.getModulePassManager().run(parsed, builder)
    vmath_table.inline_variants(parsed, builder)
    engine = llvm.create_mcjit_compiler(parsed, _target_machine())
    engine.finalize_object()
    function = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        engine.get_function_address("f"))
    return str(parsed), engine, function


@pytest.mark.parametrize("lanes", [None, 8, 16])
def test_lookup_gives_the_entry_of_the_low_three_bits(lanes):
    optimized, _engine, f = _compiled(_lookup_loop(lanes))
    rng = np.random.default_rng(0)
    index = np.concatenate([np.arange(-40, 40), rng.integers(-2**31, 2**31, 4003)]
                           ).astype(np.int32)
    index = index[: index.size // 16 * 16 + (3 if lanes is None else 0)]  # a scalar tail
    out = np.zeros_like(index)
    f(out.ctypes.data, index.ctypes.data, index.size)
    assert np.array_equal(out, np.array(VALUES, np.int32)[index & 7])
    if lanes is None and HAS_AVX2:   # the vector loop permutes in line: no call of a variant
        start = optimized.index("@f(")
        body = optimized[start:optimized.index("\n}\n", start)]
        assert "@llvm.x86.avx" in body
        assert not VARIANT_CALL.search(body)


@pytest.mark.skipif(not HAS_AVX2, reason="the variants are AVX2's vpermd")
@pytest.mark.parametrize("fast", [False, True])
def test_the_vectorized_float32_exp_permutes_in_line(fast):
    """float32 exp's 2**(j/8) comes from one permute per vector, inlined: a call of the
    variant in the loop would spill every vector register (the C convention)."""
    kernels = MathKernels(np.float32, ["exp"], fast=fast)
    code = kernels.function_ir("exp")
    assert "@llvm.x86.avx2.permd" in code or "@llvm.x86.avx512.permvar.si.512" in code
    assert not VARIANT_CALL.search(code)
    x = np.linspace(-80, 80, 1001, dtype=np.float32)
    got = kernels("exp", x)
    assert np.all(np.abs(got.astype(np.float64) / np.exp(x.astype(np.float64)) - 1) < 2**-22)


@pytest.mark.skipif(not HAS_AVX2, reason="the variants are AVX2's vpermd")
def test_fused_kernels_permute_in_line():
    """The engine's pipeline (llvm_jit) inlines the variants the vectorizer called: a
    float32 exp kernel's optimized code permutes in line and calls no variant."""
    from tsjit.codegen.kernel_spec import KernelInput, KernelOp, KernelSpec
    from tsjit.codegen.launch import compile_kernel

    f32 = np.dtype(np.float32)
    kernel = compile_kernel(KernelSpec((KernelInput(f32, 1, False),),
                                       (KernelOp("exp", (0,), f32, ()),), (1,), ()))
    assert "@llvm.x86.avx2.permd" in kernel.llvm_ir or "permvar.si.512" in kernel.llvm_ir
    assert not VARIANT_CALL.search(kernel.llvm_ir)
    x = np.linspace(-80, 80, 4099, dtype=np.float32)
    (got,) = kernel(x)
    assert np.all(np.abs(got.astype(np.float64) / np.exp(x.astype(np.float64)) - 1) < 2**-22)
