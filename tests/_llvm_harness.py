"""A minimal JIT around ``vmath.emit_math``: one elementwise loop per math function.

It is independent of tsjit.codegen.engine on purpose, so vmath is tested on its own, but it
uses the settings the engine uses (host CPU and features, the O3 module pipeline with loop
and SLP vectorization, 512-bit vectors preferred unless asked otherwise), so the measured
code is what kernels get.
"""

from __future__ import annotations

import ctypes
import re
from types import ModuleType

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from tsjit.codegen import vmath, vmath_table

_LLVM_TYPES = {np.dtype(np.float32): ir.FloatType(), np.dtype(np.float64): ir.DoubleType()}
_ARITY = {"pow": 2, "arctan2": 2}
# llvm.* intrinsics that stay calls in optimized IR without becoming library calls.
_NON_LIBRARY_DECLARATION = re.compile(r"declare .*@llvm\.")


def _target_machine() -> llvm.TargetMachine:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3
    )


def arity(name: str) -> int:
    return _ARITY.get(name, 1)


def _define_loop(module: ir.Module, name: str, fty: ir.Type, vector_bits: int,
                 library: ModuleType, nonpositive: bool, fast: bool = False) -> None:
    """void vm_<name>(ptr noalias out, ptr noalias x, ptr noalias y, i64 n):
    out[i] = name(x[i]) or name(x[i], y[i]) for i < n, by ``library.emit_math``
    (``nonpositive``: the form for arguments known to be <= 0 or NaN; ``fast``: the fast
    form of a one-argument function)."""
    ptr, i64 = ir.PointerType(), ir.IntType(64)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr, i64]), f"vm_{name}")
    set.add(fn.attributes, f'"prefer-vector-width"="{vector_bits}"')
    for arg in fn.args[:3]:
        arg.add_attribute("noalias")
    out, x, y, n = fn.args
    entry, body, done = (fn.append_basic_block(s) for s in ("entry", "body", "done"))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", n, ir.Constant(i64, 0)), body, done)
    b.position_at_end(body)
    i = b.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), entry)
    args = [b.load(b.gep(p, [i], source_etype=fty), typ=fty) for p in (x, y)[: arity(name)]]
    forms = {"nonpositive": True} if nonpositive else {}
    if fast:
        forms["fast"] = True
    b.store(library.emit_math(b, name, args, **forms), b.gep(out, [i], source_etype=fty))
    following = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(following, b.block)  # the element may have branched (trig's huge lanes)
    b.cbranch(b.icmp_signed("<", following, n), body, done)
    b.position_at_end(done)
    b.ret_void()


class MathKernels:
    """Every requested vmath function for one dtype, compiled together into one module
    (``library``: another version of tsjit.codegen.vmath, for comparisons)."""

    def __init__(self, dtype: np.dtype | type, names: list[str], vector_bits: int = 512,
                 library: ModuleType = vmath, nonpositive: bool = False, fast: bool = False):
        self.dtype = np.dtype(dtype)
        tm = _target_machine()
        module = ir.Module(name=f"vmath_{self.dtype}")
        module.triple = tm.triple
        module.data_layout = str(tm.target_data)
        for name in names:
            _define_loop(module, name, _LLVM_TYPES[self.dtype], vector_bits, library,
                         nonpositive, fast)
        parsed = llvm.parse_assembly(str(module))
        parsed.verify()
        options = llvm.create_pipeline_tuning_options(speed_level=3)
        options.loop_vectorization = True
        options.slp_vectorization = True
        builder = llvm.create_pass_builder(tm, options)
        builder.getModulePassManager().run(parsed, builder)
        if vmath_table.MARKER in str(module):   # (as llvm_jit.optimize_and_emit does)
            vmath_table.inline_variants(parsed, builder)
        self.optimized_ir = str(parsed)
        declared = [line for line in self.optimized_ir.splitlines() if line.startswith("declare")]
        library_calls = [d for d in declared if not _NON_LIBRARY_DECLARATION.match(d)]
        # MCJIT would jump to address 0 for an unresolved symbol: refuse before running.
        if library_calls:
            raise AssertionError(f"vmath emitted library calls: {library_calls}")
        self._engine = llvm.create_mcjit_compiler(parsed, _target_machine())  # owns its TM
        self._engine.finalize_object()
        signature = ctypes.CFUNCTYPE(
            None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64
        )
        self._functions = {
            name: signature(self._engine.get_function_address(f"vm_{name}")) for name in names
        }

    def function_ir(self, name: str) -> str:
        """The optimized IR of one function's loop."""
        start = self.optimized_ir.index(f"@vm_{name}(")
        return self.optimized_ir[start : self.optimized_ir.index("\n}\n", start)]

    def __call__(self, name: str, *inputs: np.ndarray, out: np.ndarray | None = None):
        inputs = tuple(np.ascontiguousarray(a, dtype=self.dtype) for a in inputs)
        if len(inputs) != arity(name) or any(a.shape != inputs[0].shape for a in inputs):
            raise ValueError(f"{name} needs {arity(name)} input(s) of one shape")
        if out is None:
            out = np.empty_like(inputs[0])
        second = inputs[-1]
        self._functions[name](out.ctypes.data, inputs[0].ctypes.data, second.ctypes.data,
                              out.size)
        return out

