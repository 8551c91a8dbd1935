"""KernelSpec -> LLVM IR module: one fused loop over N-d strided operands.

The native ABI is chosen for the cheapest possible call from Python (cffi converts each
argument for ~50 ns). The array operands (array inputs, then fresh outputs) travel as one
tuple, passed as ``id(tuple)``; the entry point reads the ``PyArrayObject*`` items from
CPython's tuple layout and data pointer, shape, strides and flags from NumPy's public
struct layout (``PyArrayObject_fields``: the stable ABI that NumPy's inline
``PyArray_DATA``/``PyArray_DIMS`` accessors use). The caller keeps the tuple alive for the
duration of the call. Scalars are passed by value (double, int64 or uint64) and converted
to their dtype inside.

Code layout per kernel (``{name}`` is the kernel's symbol):
- ``{name}_body(p..., scalars..., begin, end)``: the contiguous loop; every pointer is
  ``noalias`` (the launcher copies inputs that overlap an in-place output), so the loop
  vectorizes with no runtime alias checks.
- ``{name}_flat_task`` / ``{name}_rows_task(ctx, begin, end)``: the runtime's task ABI;
  rows with non-unit strides are gathered into stack buffers chunk by chunk and run
  through the same ``body``.
- ``{name}(operand tuple, scalars...)``: reads the arrays, picks the flat path when every
  operand is C- (or every operand F-) contiguous with the output's shape, otherwise
  collapses dimensions and runs rows, and splits large jobs with ``tsjit_parallel_for``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from tsjit.codegen.element_ops import (
    float_truncate,
    llvm_type,
    load_value,
    lower_op,
    memory_type,
    store_value,
)
from tsjit.codegen.engine import FUNCTION_ATTRIBUTES
from tsjit.codegen.kernel_spec import KernelSpec

__all__ = ["KernelModule", "build_kernel_module", "PARALLEL_FOR"]

PARALLEL_FOR = "tsjit_parallel_for"
# CPython's PyTupleObject: items follow PyObject_VAR_HEAD (refcount, type, size).
_TUPLE_ITEMS_OFFSET = 24
# PyArrayObject_fields offsets on 64-bit platforms (after PyObject_HEAD).
_DATA_OFFSET, _DIMS_OFFSET, _STRIDES_OFFSET, _FLAGS_OFFSET = 16, 32, 40, 64
_C_CONTIGUOUS, _F_CONTIGUOUS = 0x1, 0x2
# Work (in units of one add) below which a kernel runs on the calling thread: dispatching
# costs ~1-2 us, about 2**13 elements of a simple loop; the estimate per op is coarse.
_PARALLEL_WORK = 1 << 18
# Elements per chunk of a strided row (gathered into stack buffers of this length).
_CHUNK = 256
_OP_COST = {
    **dict.fromkeys(
        ("exp", "expm1", "log", "log1p", "log2", "log10", "tanh", "sigmoid", "sin", "cos"), 16
    ),
    "pow": 32, "floordiv": 8, "mod": 8, "truediv": 2, "sqrt": 4,
}

_I1, _I8, _I32, _I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
_PTR = ir.PointerType()


@dataclass(frozen=True)
class KernelModule:
    """Generated IR plus what the launcher needs to call it."""

    module: ir.Module
    entry: str
    c_signature: str  # cffi function-pointer type of the entry point
    parallel_min: int  # iteration count from which the kernel splits work across threads


def _c_scalar_type(dtype: np.dtype) -> str:
    kind = np.dtype(dtype).kind
    return "double" if kind == "f" else "uint64_t" if kind == "u" else "int64_t"


def _parallel_threshold(spec: KernelSpec) -> int:
    work = sum(_OP_COST.get(op.op, 1) for op in spec.ops) + len(spec.inputs) + 1
    return max(1 << 12, _PARALLEL_WORK // work)


def _const(v: int) -> ir.Constant:
    return ir.Constant(_I64, v)


class _KernelBuilder:
    """Builds the functions of one kernel; operands are the distinct memory regions (array
    inputs, then fresh outputs), an in-place output shares its target input's operand."""

    def __init__(self, spec: KernelSpec, name: str, parallel: bool) -> None:
        self.spec = spec
        self.name = name
        self.parallel = parallel
        self.module = ir.Module(name=name)
        self.rank = spec.out_rank
        self.array_inputs = [i for i, inp in enumerate(spec.inputs) if not inp.is_scalar]
        self.scalar_inputs = [i for i, inp in enumerate(spec.inputs) if inp.is_scalar]
        self.fresh_outputs = [j for j in range(len(spec.outputs)) if spec.inplace_target(j) is None]
        self.operand_dtypes = [np.dtype(spec.inputs[i].dtype) for i in self.array_inputs] + [
            spec.value_dtype(spec.outputs[j]) for j in self.fresh_outputs
        ]
        self.n_operands = len(self.operand_dtypes)
        self.scalar_types = [llvm_type(spec.inputs[i].dtype) for i in self.scalar_inputs]
        ranks = [spec.inputs[i].rank for i in self.array_inputs] + [self.rank] * len(
            self.fresh_outputs
        )
        self.operand_ranks = ranks
        self.ctx_type = ir.LiteralStructType(
            [
                ir.ArrayType(_PTR, self.n_operands),
                ir.LiteralStructType(self.scalar_types),
                ir.ArrayType(_I64, max(self.rank, 1)),
                ir.ArrayType(ir.ArrayType(_I64, max(self.rank, 1)), self.n_operands),
            ]
        )

    # ------------------------------------------------------------------ helpers
    def _function(self, name: str, ret: ir.Type, args: list[ir.Type], internal: bool):
        fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        for key, value in FUNCTION_ATTRIBUTES:
            # llvmlite only validates keyword attributes; string ones are printed verbatim.
            set.add(fn.attributes, f'"{key}"="{value}"')
        fn.attributes.add("nounwind")
        if internal:
            fn.linkage = "internal"
            fn.attributes.add("noinline")
        return fn

    def output_operand(self, j: int) -> int:
        target = self.spec.inplace_target(j)
        if target is None:
            return len(self.array_inputs) + self.fresh_outputs.index(j)
        return self.array_inputs.index(target)

    def emit_element(self, b: ir.IRBuilder, pointers: list[ir.Value], scalars: list[ir.Value]):
        """Load the inputs at ``pointers``, compute the fused ops, store the outputs."""
        spec = self.spec
        values: dict[int, ir.Value] = {}
        for k, i in enumerate(self.array_inputs):
            values[i] = load_value(b, pointers[k], spec.inputs[i].dtype)
        for i, v in zip(self.scalar_inputs, scalars):
            values[i] = v
        n_in = len(spec.inputs)
        needed = self._needed_values()
        for index, op in enumerate(spec.ops, start=n_in):
            if index in needed:
                arg_dtypes = [spec.value_dtype(a) for a in op.args]
                values[index] = lower_op(b, op, [values[a] for a in op.args], arg_dtypes)
        for j, value_number in enumerate(spec.outputs):
            store_value(
                b, values[value_number], pointers[self.output_operand(j)],
                spec.value_dtype(value_number),
            )

    def _needed_values(self) -> set[int]:
        n_in = len(self.spec.inputs)
        needed, stack = set(), list(self.spec.outputs)
        while stack:
            v = stack.pop()
            if v not in needed:
                needed.add(v)
                if v >= n_in:
                    stack.extend(self.spec.ops[v - n_in].args)
        return needed

    # ------------------------------------------------------------------ inner loops
    def build_body(self) -> ir.Function:
        args = [_PTR] * self.n_operands + self.scalar_types + [_I64, _I64]
        fn = self._function(f"{self.name}_body", ir.VoidType(), args, internal=True)
        for k in range(self.n_operands):
            fn.args[k].add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block())
        ptrs = fn.args[: self.n_operands]
        scalars = list(fn.args[self.n_operands : -2])

        def body(b: ir.IRBuilder, i: ir.Value) -> None:
            at = [
                b.gep(p, [i], source_etype=memory_type(dt), inbounds=True)
                for p, dt in zip(ptrs, self.operand_dtypes)
            ]
            self.emit_element(b, at, scalars)

        _loop(b, fn.args[-2], fn.args[-1], body)
        b.ret_void()
        return fn

    # ------------------------------------------------------------------ tasks
    def _ctx_field(self, b: ir.IRBuilder, ctx: ir.Value, *path: int) -> ir.Value:
        indices = [ir.Constant(_I32, 0)] + [ir.Constant(_I32, p) for p in path]
        return b.gep(ctx, indices, source_etype=self.ctx_type, inbounds=True)

    def _ctx_pointers_scalars(self, b: ir.IRBuilder, ctx: ir.Value):
        ptrs = [b.load(self._ctx_field(b, ctx, 0, k), typ=_PTR) for k in range(self.n_operands)]
        scalars = [
            b.load(self._ctx_field(b, ctx, 1, s), typ=t) for s, t in enumerate(self.scalar_types)
        ]
        return ptrs, scalars

    def build_flat_task(self, body: ir.Function) -> ir.Function:
        fn = self._function(f"{self.name}_flat_task", ir.VoidType(), [_PTR, _I64, _I64], True)
        b = ir.IRBuilder(fn.append_basic_block())
        ptrs, scalars = self._ctx_pointers_scalars(b, fn.args[0])
        b.call(body, ptrs + scalars + [fn.args[1], fn.args[2]])
        b.ret_void()
        return fn

    def build_rows_task(self, body: ir.Function) -> ir.Function:
        """Rows [begin, end) of the collapsed iteration space: the last dimension is the row,
        the leading ones are unravelled from the row number. A row is processed in chunks;
        operands with a non-unit stride along the row are gathered into (and outputs
        scattered from) a stack buffer, so the one vectorized ``body`` serves every layout
        and the fused math is compiled once."""
        fn = self._function(f"{self.name}_rows_task", ir.VoidType(), [_PTR, _I64, _I64], True)
        # Scalar copy loops: vectorizing them (gathers plus runtime checks) triples the
        # compile time for a path that is bound by strided memory access anyway.
        fn.attributes.add("minsize")
        fn.attributes.add("optsize")
        b = ir.IRBuilder(fn.append_basic_block())
        ctx = fn.args[0]
        ptrs, scalars = self._ctx_pointers_scalars(b, ctx)
        r = self.rank
        shape = [b.load(self._ctx_field(b, ctx, 2, d), typ=_I64) for d in range(r)]
        strides = [
            [b.load(self._ctx_field(b, ctx, 3, k, d), typ=_I64) for d in range(r)]
            for k in range(self.n_operands)
        ]
        inner = shape[-1]
        buffers = []
        for dt in self.operand_dtypes:
            buffer = b.alloca(ir.ArrayType(memory_type(dt), _CHUNK))
            buffer.type = _PTR  # opaque, as in build_entry
            buffers.append(buffer)
        direct = [
            b.icmp_signed("==", row[-1], _const(dt.itemsize))
            for row, dt in zip(strides, self.operand_dtypes)
        ]
        read = self._read_operands()
        written = {self.output_operand(j) for j in range(len(self.spec.outputs))}
        n_chunks = b.sdiv(b.add(inner, _const(_CHUNK - 1)), _const(_CHUNK))

        def chunk(b: ir.IRBuilder, at: list[ir.Value], index: ir.Value) -> None:
            start = b.mul(index, _const(_CHUNK))
            length = b.sub(inner, start)
            length = b.select(b.icmp_signed("<", length, _const(_CHUNK)), length, _const(_CHUNK))
            places = []
            for k, dt in enumerate(self.operand_dtypes):
                place = b.gep(at[k], [b.mul(start, strides[k][-1])], source_etype=_I8)
                if k in read:
                    with b.if_then(b.not_(direct[k])):
                        _copy(b, buffers[k], dt.itemsize, place, strides[k][-1], dt, length)
                places.append(place)
            operands = [b.select(d, p, buf) for d, p, buf in zip(direct, places, buffers)]
            b.call(body, operands + scalars + [_const(0), length])
            for k in sorted(written):
                dt = self.operand_dtypes[k]
                with b.if_then(b.not_(direct[k])):
                    _copy(b, places[k], strides[k][-1], buffers[k], dt.itemsize, dt, length)

        def row(b: ir.IRBuilder, index: ir.Value) -> None:
            offsets = [_const(0)] * self.n_operands
            rest = index
            for d in range(r - 2, -1, -1):
                coord = b.srem(rest, shape[d]) if d else rest
                rest = b.sdiv(rest, shape[d]) if d else rest
                offsets = [b.add(o, b.mul(coord, s[d])) for o, s in zip(offsets, strides)]
            at = [b.gep(p, [o], source_etype=_I8) for p, o in zip(ptrs, offsets)]
            _loop(b, _const(0), n_chunks, lambda b, i: chunk(b, at, i))

        _loop(b, fn.args[1], fn.args[2], row)
        b.ret_void()
        return fn

    def _read_operands(self) -> set[int]:
        """Operands the kernel loads: every array input (in-place targets included)."""
        return set(range(len(self.array_inputs)))

    # ------------------------------------------------------------------ entry
    def build_entry(self, flat_task: ir.Function, rows_task: ir.Function | None) -> str:
        """Emit the exported entry point; return its cffi signature."""
        spec = self.spec
        c_types = ["int64_t"] + [_c_scalar_type(spec.inputs[i].dtype) for i in self.scalar_inputs]
        params = [ir.DoubleType() if c == "double" else _I64 for c in c_types]
        fn = self._function(self.name, ir.VoidType(), params, internal=False)
        fn.attributes.add("minsize")  # straight-line setup: size is speed here
        fn.attributes.add("optsize")
        b = ir.IRBuilder(fn.append_basic_block())
        operands = b.inttoptr(fn.args[0], _PTR)
        objects = [
            b.load(b.gep(operands, [_const(_TUPLE_ITEMS_OFFSET + 8 * k)], source_etype=_I8),
                   typ=_PTR)
            for k in range(self.n_operands)
        ]
        ctx = b.alloca(self.ctx_type)
        ctx.type = _PTR  # use it as an opaque pointer (llvmlite type-checks typed ones)
        for k, obj in enumerate(objects):
            b.store(_field(b, obj, _DATA_OFFSET, _PTR), self._ctx_field(b, ctx, 0, k))
        for s, i in enumerate(self.scalar_inputs):
            value = _convert_scalar(b, fn.args[1 + s], np.dtype(spec.inputs[i].dtype))
            b.store(value, self._ctx_field(b, ctx, 1, s))

        dims = [_dims(b, obj, rank) for obj, rank in zip(objects, self.operand_ranks)]
        out_dims = dims[self.output_operand(0)]
        n = _const(1)
        for d in out_dims:
            n = b.mul(n, d)
        with b.if_then(b.icmp_signed("==", n, _const(0))):
            b.ret_void()
        threshold = _parallel_threshold(spec)
        if rows_task is None:  # rank 0: a single element
            self._run(b, flat_task, ctx, n, _const(threshold))
            b.ret_void()
            return f"void(*)({', '.join(c_types)})"
        with b.if_else(self._is_flat(b, objects, dims, out_dims)) as (flat, strided):
            with flat:
                self._run(b, flat_task, ctx, n, _const(threshold))
            with strided:
                self._collapse_dims(b, ctx, objects, dims)
                inner = b.load(self._ctx_field(b, ctx, 2, self.rank - 1), typ=_I64)
                grain = b.add(b.sdiv(_const(threshold), inner), _const(1))
                self._run(b, rows_task, ctx, b.sdiv(n, inner), grain)
        b.ret_void()
        return f"void(*)({', '.join(c_types)})"

    def _is_flat(self, b: ir.IRBuilder, objects, dims, out_dims) -> ir.Value:
        """Every operand has the output's shape and all are C- or all are F-contiguous:
        element i of each is at byte i * itemsize, so one flat loop covers the job."""
        if any(rank != self.rank for rank in self.operand_ranks):
            return ir.Constant(_I1, 0)
        all_flags = _field(b, objects[0], _FLAGS_OFFSET, _I32)
        for obj in objects[1:]:
            all_flags = b.and_(all_flags, _field(b, obj, _FLAGS_OFFSET, _I32))
        layout = ir.Constant(_I32, _C_CONTIGUOUS | _F_CONTIGUOUS)
        flat = b.icmp_unsigned("!=", b.and_(all_flags, layout), ir.Constant(_I32, 0))
        for operand_dims in dims:
            for d_k, d_out in zip(operand_dims, out_dims):
                flat = b.and_(flat, b.icmp_signed("==", d_k, d_out))
        return flat

    def _collapse_dims(self, b: ir.IRBuilder, ctx: ir.Value, objects, dims) -> None:
        """Fill the context's shape and byte strides (0 along broadcast dimensions), in the
        output's memory order, with contiguous runs of dimensions merged: the row loop then
        runs over the longest contiguous stretch and size-1 dimensions cost nothing."""
        r = self.rank
        shape = list(dims[self.output_operand(0)])
        strides = []
        for obj, operand_dims, rank in zip(objects, dims, self.operand_ranks):
            strides_ptr = _field(b, obj, _STRIDES_OFFSET, _PTR)
            row = [_const(0)] * (r - rank)
            for e, extent in enumerate(operand_dims):
                stride = b.load(b.gep(strides_ptr, [_const(e)], source_etype=_I64), typ=_I64)
                broadcast = b.icmp_signed("==", extent, _const(1))
                row.append(b.select(broadcast, _const(0), stride))
            strides.append(row)
        # Iterate Fortran-ordered outputs from the first dimension inward.
        out_strides = strides[self.output_operand(0)]
        reverse = b.icmp_unsigned("<", _abs(b, out_strides[0]), _abs(b, out_strides[-1]))
        shape = [b.select(reverse, shape[r - 1 - d], shape[d]) for d in range(r)]
        strides = [[b.select(reverse, row[r - 1 - d], row[d]) for d in range(r)] for row in strides]

        def shape_at(index: ir.Value) -> ir.Value:
            return b.gep(ctx, [ir.Constant(_I32, 0), ir.Constant(_I32, 2), index],
                         source_etype=self.ctx_type, inbounds=True)

        def stride_at(k: int, index: ir.Value) -> ir.Value:
            return b.gep(ctx, [ir.Constant(_I32, 0), ir.Constant(_I32, 3),
                               ir.Constant(_I32, k), index],
                         source_etype=self.ctx_type, inbounds=True)

        j = _const(r - 1)
        b.store(shape[-1], shape_at(j))
        for k, row in enumerate(strides):
            b.store(row[-1], stride_at(k, j))
        for d in range(r - 2, -1, -1):
            extent_j = b.load(shape_at(j), typ=_I64)
            stride_j = [b.load(stride_at(k, j), typ=_I64) for k in range(self.n_operands)]
            skip = b.icmp_signed("==", shape[d], _const(1))
            replace = b.icmp_signed("==", extent_j, _const(1))
            merge = ir.Constant(_I1, 1)
            for row, s_j in zip(strides, stride_j):
                merge = b.and_(merge, b.icmp_signed("==", row[d], b.mul(s_j, extent_j)))
            keep_j = b.or_(skip, b.or_(replace, merge))
            j = b.select(keep_j, j, b.sub(j, _const(1)))
            extent = b.select(merge, b.mul(extent_j, shape[d]), shape[d])
            extent = b.select(replace, shape[d], extent)
            b.store(b.select(skip, extent_j, extent), shape_at(j))
            for k, (row, s_j) in enumerate(zip(strides, stride_j)):
                stride = b.select(b.and_(merge, b.not_(replace)), s_j, row[d])
                b.store(b.select(skip, s_j, stride), stride_at(k, j))
        for d in range(r - 1):  # dimensions left of the last merged one are unused
            unused = b.icmp_signed("<", _const(d), j)
            index = _const(d)
            b.store(b.select(unused, _const(1), b.load(shape_at(index), typ=_I64)), shape_at(index))
            for k in range(self.n_operands):
                old = b.load(stride_at(k, index), typ=_I64)
                b.store(b.select(unused, _const(0), old), stride_at(k, index))

    def _run(self, b: ir.IRBuilder, task: ir.Function, ctx, n: ir.Value, grain: ir.Value):
        """Run task over [0, n): inline when small (or without the runtime), else split."""
        if not self.parallel:
            b.call(task, [ctx, _const(0), n])
            return
        parallel_for = self.module.globals.get(PARALLEL_FOR) or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [_PTR, _PTR, _I64, _I64]), PARALLEL_FOR
        )
        with b.if_else(b.icmp_signed(">", n, grain)) as (split, inline):
            with split:
                b.call(parallel_for, [task, ctx, n, grain])
            with inline:
                b.call(task, [ctx, _const(0), n])


def _loop(b: ir.IRBuilder, begin: ir.Value, end: ir.Value, body) -> None:
    """for (i = begin; i < end; ++i) body(b, i); the builder ends after the loop."""
    fn = b.function
    loop, done = fn.append_basic_block("loop"), fn.append_basic_block("loop_done")
    entry = b.block
    b.cbranch(b.icmp_signed("<", begin, end), loop, done)
    b.position_at_end(loop)
    i = b.phi(_I64)
    i.add_incoming(begin, entry)
    body(b, i)
    nxt = b.add(i, _const(1), flags=["nsw"])
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, end), loop, done)
    b.position_at_end(done)


def _copy(b: ir.IRBuilder, dst, dst_stride, src, src_stride, dtype: np.dtype, n) -> None:
    """Copy n elements between strided places (byte strides; ints or constants)."""
    ty = memory_type(dtype)

    def element(b: ir.IRBuilder, i: ir.Value) -> None:
        source = b.gep(src, [b.mul(i, _as_value(src_stride))], source_etype=_I8)
        target = b.gep(dst, [b.mul(i, _as_value(dst_stride))], source_etype=_I8)
        b.store(b.load(source, typ=ty, align=1), target, align=1)

    _loop(b, _const(0), n, element)


def _as_value(stride) -> ir.Value:
    return stride if isinstance(stride, ir.Value) else _const(stride)


def _field(b: ir.IRBuilder, obj: ir.Value, offset: int, ty: ir.Type) -> ir.Value:
    return b.load(b.gep(obj, [_const(offset)], source_etype=_I8), typ=ty)


def _dims(b: ir.IRBuilder, obj: ir.Value, rank: int) -> list[ir.Value]:
    dims_ptr = _field(b, obj, _DIMS_OFFSET, _PTR)
    return [b.load(b.gep(dims_ptr, [_const(d)], source_etype=_I64), typ=_I64) for d in range(rank)]


def _abs(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", v, _const(0)), b.neg(v), v)


def _convert_scalar(b: ir.IRBuilder, arg: ir.Value, dtype: np.dtype) -> ir.Value:
    """A scalar argument (double / int64 / uint64) as its dtype, rounded as NumPy does."""
    if dtype.kind == "f":
        return arg if dtype.itemsize == 8 else float_truncate(b, arg, dtype)
    if dtype.kind == "b":
        return b.icmp_unsigned("!=", arg, _const(0))
    return b.trunc(arg, llvm_type(dtype)) if dtype.itemsize < 8 else arg


def build_kernel_module(spec: KernelSpec, name: str, parallel: bool) -> KernelModule:
    """Generate the kernel for ``spec`` (``parallel``: link against the runtime's
    ``tsjit_parallel_for``; otherwise every job runs on the calling thread)."""
    kb = _KernelBuilder(spec, name, parallel)
    body = kb.build_body()
    flat_task = kb.build_flat_task(body)
    rows_task = kb.build_rows_task(body) if kb.rank > 0 else None
    signature = kb.build_entry(flat_task, rows_task)
    return KernelModule(kb.module, name, signature, _parallel_threshold(spec))
