"""KernelSpec -> LLVM IR module: the fused per-element computation of one kernel.

A kernel module holds only what depends on the spec's ops; shapes, strides, broadcasting
and threading are the shared driver's job (``elementwise_driver``):
- ``{name}_inner(p0..., scalars..., begin, end, prefetch)``: the loop over contiguous
  elements, every pointer ``noalias`` (true: outputs are fresh, or written in place over
  exactly the element read, and the launcher copies inputs that overlap an in-place
  target), so it vectorizes (8- or 16-wide for float32, see ``vector_width``) with no
  runtime alias checks. Compute-bound loops interleave vectors and may prefetch inputs'
  next rows (``prefetch``, see the driver's body ABI).
- ``{name}_body``: the driver's body ABI around it (pointers and scalars from memory).
- ``{name}(operands, scalars...) -> status``: the exported entry. The array operands
  (array inputs, then fresh outputs) travel as one tuple, passed as ``id(tuple)``, because
  cffi charges ~50 ns per argument; the driver reads CPython's tuple and NumPy's array
  structs itself. Scalars arrive by value (double, int64 or uint64) and are converted to
  their dtype here, rounded as NumPy would. The status is the driver's: floating-point
  flags raised, and where a job stopped for Ctrl-C resumes.
- ``{name}_resume(operands, start, scalars...) -> status``: the same, from item ``start``
  on (finishing a job stopped for Ctrl-C).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from tsjit.codegen import fp_status
from tsjit.codegen.element_ops import (
    computed_errors,
    float_truncate,
        llvm_type,
    load_value,
    lower_op,
    memory_type,
    store_value,
)
from tsjit.codegen.elementwise_driver import (
    ACCESS_READ,
    ACCESS_WRITE,
    BODY_TYPE,
    JOB_START,
    JOB_TYPE,
    OPERAND_INFO_TYPE,
)
from tsjit.codegen.fast_form_plan import block_stages, fast_plan, nan_blind, nan_fixes
from tsjit.codegen.ir_util import (
    I8,
    I32,
    I64,
    PTR,
    VOID,
    element,
    hinted_loop,
    i64,
    loop,
    set_string_attribute,
    stack_slot,
)
from tsjit.codegen.kernel_abi import DRIVER_SYMBOL, entry_parameter_types, resume_symbol
from tsjit.codegen.kernel_spec import MATH_FUNCTIONS, KernelSpec
from tsjit.codegen.operand_nans import operand_nans

__all__ = [
    "build_kernel_module",
    "parallel_threshold",
    "vector_width",
]

# Work (in units of one add per element) below which a job runs on the calling thread:
# a parallel dispatch costs ~1-2 us, about 2**13 elements of a simple loop.
_PARALLEL_WORK = 1 << 18
# Vector width (LLVM's per-function "prefer-vector-width"), measured on Zen 4: memory-bound
# loops run ~15% faster with 256-bit vectors (a 4M float64 add: 2.3 ms against 2.8 ms at
# 512, NumPy 2.2 ms), compute-bound ones ~45% faster with 512 (gelu: 3.1 ms against 4.5).
# A kernel counts as compute-bound from this much work per element (in units of one add).
_WIDE_VECTOR_WORK = 8
# Compute-bound loops (transcendentals: long dependency chains) are latency-bound at one
# vector per iteration: the out-of-order window cannot reach the next iteration's
# independent work. Interleaving 4 vectors per iteration ran them 20-30% faster (LSTM cell
# 2.2 -> 1.77 ns per element, Black-Scholes float64 7.4 -> 5.3; 2 or 8: less). The
# interleaved loop covers whole blocks of this many elements (a multiple of 4 vectors of
# any width); the rest, as one padded block (``padded_tail``), not element by element.
_INTERLEAVE = 4
_INTERLEAVED_BLOCK = 64
# Fast blocks save the floating-point flags once per this many blocks (see
# ``fast_blocks_loop``): a block with a special lane runs again with those before it.
_SAVED_BLOCKS = 8
_LINE = 64  # bytes per cache line (prefetches)
_OP_COST = {
    **dict.fromkeys(MATH_FUNCTIONS, 16),
    "pow": 32, "arctan2": 24, "floordiv": 8, "mod": 8, "truediv": 2, "sqrt": 4,
}


def parallel_threshold(spec: KernelSpec) -> int:
    """Elements from which the kernel splits its work across threads."""
    work = sum(_OP_COST.get(op.op, 1) for op in spec.ops) + len(spec.inputs) + 1
    return max(1 << 12, _PARALLEL_WORK // work)


def _is_compute_bound(spec: KernelSpec) -> bool:
    return sum(_OP_COST.get(op.op, 1) for op in spec.ops) >= _WIDE_VECTOR_WORK


def vector_width(spec: KernelSpec) -> int:
    """The vector width the kernel's loop is tuned for (bits)."""
    return 512 if _is_compute_bound(spec) else 256


class _KernelBuilder:
    """Operands are the distinct memory regions: array inputs, then fresh outputs; an
    in-place output shares its target input's operand."""

    def __init__(self, spec: KernelSpec, name: str) -> None:
        self.spec = spec
        self.name = name
        self.module = ir.Module(name=name)
        self.array_inputs = [i for i, inp in enumerate(spec.inputs) if not inp.is_scalar]
        self.scalar_inputs = [i for i, inp in enumerate(spec.inputs) if inp.is_scalar]
        self.fresh_outputs = [
            j for j in range(len(spec.outputs)) if spec.inplace_target(j) is None
        ]
        self.operand_dtypes = [np.dtype(spec.inputs[i].dtype) for i in self.array_inputs] + [
            spec.value_dtype(spec.outputs[j]) for j in self.fresh_outputs
        ]
        self.operand_ranks = [spec.inputs[i].rank for i in self.array_inputs] + [
            spec.out_rank
        ] * len(self.fresh_outputs)
        self.n_operands = len(self.operand_dtypes)
        self.scalar_types = [llvm_type(spec.inputs[i].dtype) for i in self.scalar_inputs]
        self.scalars_type = ir.LiteralStructType(self.scalar_types)
        self.vector_width = str(vector_width(spec))
        self.operand_nans = operand_nans(spec.inputs, spec.ops, spec.value_dtype)
        # the computed errors of the inner loop's elements (an i32 of MXCSR flags, or None)
        self.computed_errors: ir.Value | None = None
        # the ops (value numbers) that fast blocks compute by their fast forms, and the
        # outputs (operands) where a NaN they give shows (see ``fast_blocks_loop``)
        self.fast_ops, self.scanned = fast_plan(spec, self.output_operand)
        # the ops whose NaN bits fast blocks need not give (a NaN they give is scanned):
        # their NaN selects are left out there
        scanned_values = {v for j, v in enumerate(spec.outputs)
                          if self.output_operand(j) in self.scanned}
        self.nan_blind = nan_blind(spec, self.operand_nans, scanned_values)
        self.stages = block_stages(spec, self.fast_ops)
        self.nan_fixes = nan_fixes(spec, scanned_values)

    def _function(self, name: str, args: list[ir.Type], internal: bool,
                  result: ir.Type = VOID) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(result, args), name=name)
        set_string_attribute(fn, "prefer-vector-width", self.vector_width)
        set_string_attribute(fn, "min-legal-vector-width", self.vector_width)
        fn.attributes.add("nounwind")
        if internal:
            fn.linkage = "internal"
        return fn

    def output_operand(self, j: int) -> int:
        target = self.spec.inplace_target(j)
        if target is None:
            return len(self.array_inputs) + self.fresh_outputs.index(j)
        return self.array_inputs.index(target)

    # ------------------------------------------------------------------ the element
    def emit_element(self, b: ir.IRBuilder, pointers: list[ir.Value], scalars: list[ir.Value],
                     fast: bool = False, stage: int | None = None,
                     kept: dict[int, ir.Value] | None = None):
        """Load the inputs at ``pointers``, compute the fused ops, store the outputs.
        ``fast``: the ops of ``fast_ops`` take their math functions' fast forms.
        ``stage``: only the ops of that fast block stage (``self.stages``) and the
        outputs they give (the last one also an output that is an input); the kept
        values are read from, or stored to, the element's place in ``kept``."""
        spec = self.spec
        if stage is None:
            computed, last = self._needed_values(), True
        else:
            computed, last = self.stages.ops[stage], stage == len(self.stages.ops) - 1
        values: dict[int, ir.Value] = {}
        for k, i in enumerate(self.array_inputs):   # (LLVM drops the loads not used)
            values[i] = load_value(b, pointers[k], spec.inputs[i].dtype)
        values.update(zip(self.scalar_inputs, scalars))
        for index, op in enumerate(spec.ops, start=len(spec.inputs)):
            if index not in computed:
                continue
            for a in op.args:
                if a not in values:   # a value an earlier stage kept
                    values[a] = load_value(b, kept[a], spec.value_dtype(a))
            if fast and index in self.nan_fixes:
                values[index] = values[op.args[2]]
            else:
                blind = fast and index in self.nan_blind
                arg_dtypes = [spec.value_dtype(a) for a in op.args]
                args = [values[a] for a in op.args]
                values[index] = lower_op(b, op, args, arg_dtypes,
                                         fast and index in self.fast_ops,
                                         None if blind else self.operand_nans.get(index))
                self.collect_computed_errors(b, computed_errors(b, op, args, arg_dtypes))
            if stage is not None and index in self.stages.kept:
                store_value(b, values[index], kept[index], spec.value_dtype(index))
        for j, value_number in enumerate(spec.outputs):
            if value_number in computed or last and value_number < len(spec.inputs):
                pointer = pointers[self.output_operand(j)]
                store_value(b, values[value_number], pointer, spec.value_dtype(value_number))

    def collect_computed_errors(self, b: ir.IRBuilder, flags: ir.Value | None) -> None:
        """Or an element's computed errors into the loop's (an or-reduction: it vectorizes)."""
        if flags is not None and self.computed_errors is not None:
            b.store(b.or_(b.load(self.computed_errors, typ=I32), flags), self.computed_errors)

    def raise_computed_errors(self, b: ir.IRBuilder) -> None:
        """Set the loop's computed errors in MXCSR, where the driver collects the flags (a
        slot no element wrote folds away)."""
        if self.computed_errors is not None:
            flags = b.load(self.computed_errors, typ=I32)
            with b.if_then(b.icmp_unsigned("!=", flags, ir.Constant(I32, 0))):
                fp_status.raise_flags(b, flags)

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

    # ------------------------------------------------------------------ functions
    def build_inner(self) -> ir.Function:
        args = [PTR] * self.n_operands + self.scalar_types + [I64, I64, PTR]
        fn = self._function(f"{self.name}_inner", args, internal=True)
        fn.attributes.add("alwaysinline")  # its noalias becomes scoped metadata in body
        for k in range(self.n_operands):
            fn.args[k].add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block())
        pointers = fn.args[: self.n_operands]
        scalars = list(fn.args[self.n_operands : -3])
        begin, end, prefetch = fn.args[-3:]
        if fp_status.supported():
            self.computed_errors = stack_slot(b, I32, ir.Constant(I32, 0))

        def element_of(operands, b: ir.IRBuilder, i: ir.Value, fast: bool = False) -> None:
            at = [
                b.gep(p, [i], source_etype=memory_type(dt), inbounds=True)
                for p, dt in zip(operands, self.operand_dtypes)
            ]
            self.emit_element(b, at, scalars, fast)

        def one_element(b: ir.IRBuilder, i: ir.Value) -> None:
            element_of(pointers, b, i)

        if not _is_compute_bound(self.spec):
            loop(b, begin, end, one_element)
            self.raise_computed_errors(b)
            b.ret_void()
            return fn
        blocks = b.sdiv(b.sub(end, begin), i64(_INTERLEAVED_BLOCK))
        middle = b.add(begin, b.mul(blocks, i64(_INTERLEAVED_BLOCK)))
        interleaved = {"llvm.loop.interleave.count": _INTERLEAVE}
        exact_block = self.build_exact_block(interleaved)
        if self.fast_blocks:
            def fast_block(b: ir.IRBuilder, start: ir.Value) -> ir.Value:
                if self.prefetches:
                    with b.if_then(b.icmp_unsigned("!=", prefetch, ir.Constant(PTR, None))):
                        self.emit_prefetches(b, pointers, prefetch, start)
                self.staged_block(b, pointers, scalars, start, interleaved)
                return self.holds_nan(b, pointers, start)

            self.fast_blocks_loop(b, begin, blocks, fast_block,
                                  lambda b, start: b.call(exact_block,
                                                          [*pointers, *scalars, start]))
        elif not self.prefetches:
            hinted_loop(b, begin, middle, one_element, interleaved)
        else:
            with b.if_else(b.icmp_unsigned("==", prefetch, ir.Constant(PTR, None))) as (
                    plain, prefetching):
                with plain:
                    hinted_loop(b, begin, middle, one_element, interleaved)
                with prefetching:
                    def prefetched_block(b: ir.IRBuilder, index: ir.Value) -> None:
                        start = b.add(begin, b.mul(index, i64(_INTERLEAVED_BLOCK)))
                        self.emit_prefetches(b, pointers, prefetch, start)
                        hinted_loop(b, i64(0), i64(_INTERLEAVED_BLOCK),  # a constant count
                                     lambda b, j: one_element(b, b.add(start, j, flags=["nsw"])),
                                     interleaved)

                    loop(b, i64(0), blocks, prefetched_block)
        self.padded_tail(b, pointers, scalars, middle, end, exact_block)
        self.raise_computed_errors(b)
        b.ret_void()
        return fn

    def staged_block(self, b: ir.IRBuilder, pointers, scalars, start, hints: dict) -> None:
        """A fast block's elements [start, start + _INTERLEAVED_BLOCK), stage by stage
        (``fast_form_plan.block_stages``): each stage a loop over the block, the values a
        later stage reads kept in stack buffers (64-byte aligned: unaligned, a vector's
        store and reload across a cache line cost the LSTM cell ~25%)."""
        spec = self.spec
        buffers = {}
        for v in sorted(self.stages.kept):
            with b.goto_entry_block():
                buffer = b.alloca(ir.ArrayType(memory_type(spec.value_dtype(v)),
                                               _INTERLEAVED_BLOCK))
            buffer.align = _LINE
            buffer.type = PTR   # (an opaque pointer, as stack_slot's)
            buffers[v] = buffer
        for stage in range(len(self.stages.ops)):
            def element(b: ir.IRBuilder, j: ir.Value, stage=stage) -> None:
                i = b.add(start, j, flags=["nsw"])
                at = [b.gep(p, [i], source_etype=memory_type(dt), inbounds=True)
                      for p, dt in zip(pointers, self.operand_dtypes)]
                kept = {v: b.gep(buffer, [j], source_etype=memory_type(spec.value_dtype(v)))
                        for v, buffer in buffers.items()}
                self.emit_element(b, at, scalars, True, stage, kept)

            hinted_loop(b, i64(0), i64(_INTERLEAVED_BLOCK), element, hints)

    def build_exact_block(self, hints: dict) -> ir.Function:
        """``{name}_block(operands..., scalars..., start)``: the elements [start, start +
        _INTERLEAVED_BLOCK) of a compute-bound kernel, exactly (a fast block computed
        again, the padded tail). Never inlined: nested in the fast blocks' loop, the exact
        loop's constants were kept live across it, and its values spilled every
        iteration."""
        args = [PTR] * self.n_operands + self.scalar_types + [I64]
        fn = self._function(f"{self.name}_block", args, internal=True)
        fn.attributes.add("noinline")
        for k in range(self.n_operands):
            fn.args[k].add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block())
        pointers, scalars, start = fn.args[: self.n_operands], fn.args[self.n_operands:-1], \
            fn.args[-1]
        outer_errors = self.computed_errors   # (this function raises its own)
        if fp_status.supported():
            self.computed_errors = stack_slot(b, I32, ir.Constant(I32, 0))

        def element(b: ir.IRBuilder, j: ir.Value) -> None:
            i = b.add(start, j, flags=["nsw"])
            self.emit_element(b, [b.gep(p, [i], source_etype=memory_type(dt), inbounds=True)
                                  for p, dt in zip(pointers, self.operand_dtypes)],
                              list(scalars))

        hinted_loop(b, i64(0), i64(_INTERLEAVED_BLOCK), element, hints)
        self.raise_computed_errors(b)
        self.computed_errors = outer_errors
        b.ret_void()
        return fn

    @property
    def fast_blocks(self) -> bool:
        """Whether the compute-bound loop runs its blocks fast first (``fast_blocks_loop``): some
        op has a fast form whose NaNs reach an output, and no operand it reads is also
        written (a block computed again must find its inputs unchanged)."""
        return bool(self.fast_ops) and not (self._read_operands() & self._written_operands())

    def fast_blocks_loop(self, b: ir.IRBuilder, begin, blocks, fast_block, exact) -> None:
        """Blocks 0 .. ``blocks`` - 1 of _INTERLEAVED_BLOCK elements from ``begin``, each by
        ``fast_block(b, start)``: with the fast forms of ``fast_ops``, which give their
        exact bits and flags on ordinary arguments, with fewer operations than their special
        lanes' selects take, and NaN on the others, which reaches a ``scanned`` output; it
        returns whether the block's outputs hold a NaN. Then the block runs again exactly
        (``exact(b, start)``), from the floating-point flags as they were before it (the
        fast pass's are dropped): they are saved before each group of _SAVED_BLOCKS blocks
        (reading MXCSR waits for the operations in flight: before every block it cost
        gelu ~6%), and the group's blocks up to that one run again exactly."""
        fn = b.function
        index = stack_slot(b, I64, i64(0))
        groups, group, blocks_test, block, rerun, done = (fn.append_basic_block(name) for name in (
            "groups", "group", "blocks", "block", "rerun", "groups_done"))
        b.branch(groups)
        b.position_at_end(groups)
        b.cbranch(b.icmp_signed("<", b.load(index, typ=I64), blocks), group, done)
        b.position_at_end(group)
        saved = fp_status.save(b) if fp_status.supported() else None
        first = b.load(index, typ=I64)
        limit = b.add(first, i64(_SAVED_BLOCKS))
        limit = b.select(b.icmp_signed("<", limit, blocks), limit, blocks)
        b.branch(blocks_test)
        b.position_at_end(blocks_test)
        i = b.load(index, typ=I64)
        b.cbranch(b.icmp_signed("<", i, limit), block, groups)
        b.position_at_end(block)
        following = b.add(i, i64(1))
        b.store(following, index)
        again = fast_block(b, b.add(begin, b.mul(i, i64(_INTERLEAVED_BLOCK))))
        b.cbranch(again, rerun, blocks_test)
        b.block.terminator.set_weights([1, 99])
        b.position_at_end(rerun)
        if saved is not None:
            fp_status.restore(b, saved)
        loop(b, first, following,
             lambda b, k: exact(b, b.add(begin, b.mul(k, i64(_INTERLEAVED_BLOCK)))))
        b.branch(groups)
        b.position_at_end(done)

    def holds_nan(self, b: ir.IRBuilder, pointers, start) -> ir.Value:
        """Whether the ``scanned`` outputs hold a NaN among the block's elements from
        ``start`` (an or-reduction of i32s, which vectorizes: one of i1s became a branch
        per element)."""
        found = stack_slot(b, I32, ir.Constant(I32, 0))
        for k in self.scanned:
            etype = memory_type(self.operand_dtypes[k])
            first = b.gep(pointers[k], [start], source_etype=etype, inbounds=True)

            def scan(b: ir.IRBuilder, j: ir.Value, first=first, etype=etype) -> None:
                value = b.load(b.gep(first, [j], source_etype=etype, inbounds=True), typ=etype)
                nan = b.zext(b.fcmp_unordered("uno", value, value), I32)
                b.store(b.or_(b.load(found, typ=I32), nan), found)

            loop(b, i64(0), i64(_INTERLEAVED_BLOCK), scan)
        return b.icmp_unsigned("!=", b.load(found, typ=I32), ir.Constant(I32, 0))

    def padded_tail(self, b: ir.IRBuilder, pointers, scalars, begin, end,
                    exact_block: ir.Function) -> None:
        """Elements [begin, end), fewer than _INTERLEAVED_BLOCK, as one whole exact block in
        stack buffers: operands are copied in, the block's missing elements filled with
        copies of element ``begin``, and the written operands copied back. A masked
        (predicated) vector loop would compute its inactive lanes on whatever they hold
        (zeros: 0/0, log(0)), raising floating-point flags that no element raised; here
        every lane computes a real element, so the flags are exactly the elements'."""
        count = b.sub(end, begin)
        with b.if_then(b.icmp_signed(">", count, i64(0))):
            written = self._written_operands()
            buffers = []
            for k, dtype in enumerate(self.operand_dtypes):
                etype = memory_type(dtype)
                buffer = stack_slot(b, ir.ArrayType(etype, _INTERLEAVED_BLOCK))
                source = b.gep(pointers[k], [begin], source_etype=etype, inbounds=True)

                def fill(b: ir.IRBuilder, i: ir.Value, source=source, buffer=buffer,
                         etype=etype) -> None:
                    real = b.select(b.icmp_signed("<", i, count), i, i64(0))
                    value = b.load(b.gep(source, [real], source_etype=etype), typ=etype, align=1)
                    b.store(value, b.gep(buffer, [i], source_etype=etype))

                loop(b, i64(0), i64(_INTERLEAVED_BLOCK), fill)
                buffers.append((buffer, source, etype))
            b.call(exact_block, [*(buffer for buffer, _, _ in buffers), *scalars, i64(0)])
            for k in sorted(written):
                buffer, target, etype = buffers[k]
                loop(b, i64(0), count, lambda b, i, buffer=buffer, target=target, etype=etype:
                     b.store(b.load(b.gep(buffer, [i], source_etype=etype), typ=etype),
                             b.gep(target, [i], source_etype=etype), align=1))

    @property
    def prefetches(self) -> bool:
        """Whether the body can prefetch next rows (``prefetch`` argument): only rows of
        2-d and higher inputs are ever apart, and only compute-bound loops get the blocked
        loop it needs."""
        return _is_compute_bound(self.spec) and any(
            self.spec.inputs[i].rank >= 2 for i in self.array_inputs)

    def emit_prefetches(self, b: ir.IRBuilder, pointers, distances, start) -> None:
        """Prefetch (into L2) the lines that elements [start, start + block) of each array
        input have at their operand's distance: each line once, one block ahead of use."""
        prefetch = self.module.declare_intrinsic(
            "llvm.prefetch", [PTR], ir.FunctionType(ir.VoidType(), [PTR, I32, I32, I32]))
        for k in range(len(self.array_inputs)):
            itemsize = self.operand_dtypes[k].itemsize
            distance = b.load(element(b, distances, i64(k), I64), typ=I64)
            base = b.gep(pointers[k], [b.add(b.mul(start, i64(itemsize)), distance)],
                         source_etype=I8)
            for line in range(_INTERLEAVED_BLOCK * itemsize // _LINE):
                b.call(prefetch, [b.gep(base, [i64(line * _LINE)], source_etype=I8),
                                  ir.Constant(I32, 0), ir.Constant(I32, 2), ir.Constant(I32, 1)])

    def build_body(self, inner: ir.Function) -> ir.Function:
        """The body ABI (``BODY_TYPE``): ``rows`` rows of elements [begin, end), row r's
        operand k starting ``row_strides[k] * r`` bytes past ``pointers[k]``. The loop
        over rows is here, compiled with the kernel, rather than a call per row from the
        driver: rows of 64 elements ran 3x slower with a call each."""
        fn = self._function(f"{self.name}_body", list(BODY_TYPE.args), internal=True)
        pointers_array, scalars_block, begin, end, prefetch, rows, row_strides = fn.args
        b = ir.IRBuilder(fn.append_basic_block())
        pointers = [
            b.load(element(b, pointers_array, i64(k), PTR), typ=PTR)
            for k in range(self.n_operands)
        ]
        strides = [
            b.load(element(b, row_strides, i64(k), I64), typ=I64)
            for k in range(self.n_operands)
        ]
        scalars = [
            b.load(b.gep(scalars_block, [ir.Constant(I32, 0), ir.Constant(I32, s)],
                         source_etype=self.scalars_type), typ=t)
            for s, t in enumerate(self.scalar_types)
        ]

        def row(b: ir.IRBuilder, r: ir.Value) -> None:
            at = [b.gep(p, [b.mul(r, stride)], source_etype=I8)
                  for p, stride in zip(pointers, strides)]
            b.call(inner, at + scalars + [begin, end, prefetch])

        loop(b, i64(0), rows, row)
        b.ret_void()
        return fn

    def build_entry(self, body: ir.Function, resume: bool) -> None:
        """Emit the exported entry point (see ``entry_parameter_types``), or with
        ``resume`` the one that starts at a given item (its second parameter)."""
        spec = self.spec
        params = [ir.DoubleType() if c == "double" else I64 for c in entry_parameter_types(spec)]
        if resume:
            params.insert(1, I64)
        name = resume_symbol(self.name) if resume else self.name
        fn = self._function(name, params, internal=False, result=I64)
        b = ir.IRBuilder(fn.append_basic_block())
        first_scalar = 2 if resume else 1
        scalars = stack_slot(b, self.scalars_type)
        for s, i in enumerate(self.scalar_inputs):
            value = convert_scalar(b, fn.args[first_scalar + s], np.dtype(spec.inputs[i].dtype))
            slot = b.gep(scalars, [ir.Constant(I32, 0), ir.Constant(I32, s)],
                         source_etype=self.scalars_type)
            b.store(value, slot)
        job = stack_slot(b, JOB_TYPE)
        fields = [
            body, scalars, b.inttoptr(fn.args[0], PTR), i64(self.n_operands),
            i64(spec.out_rank), self._operand_info(), i64(self.output_operand(0)),
            i64(parallel_threshold(spec)),
        ]
        fields = {**dict(enumerate(fields)), JOB_START: fn.args[1] if resume else i64(0)}
        for number, value in fields.items():
            b.store(value, b.gep(job, [ir.Constant(I32, 0), ir.Constant(I32, number)],
                                 source_etype=JOB_TYPE))
        driver = self.module.globals.get(DRIVER_SYMBOL) or ir.Function(
            self.module, ir.FunctionType(I64, [PTR]), DRIVER_SYMBOL)
        b.ret(b.call(driver, [job]))

    def _written_operands(self) -> set[int]:
        return {self.output_operand(j) for j in range(len(self.spec.outputs))}

    def _read_operands(self) -> set[int]:
        needed = self._needed_values()
        return {k for k, i in enumerate(self.array_inputs) if i in needed}  # not out[:] = ...

    def _operand_info(self) -> ir.GlobalVariable:
        existing = self.module.globals.get(f"{self.name}_operands")
        if existing is not None:  # both entries use it
            return existing
        written, read = self._written_operands(), self._read_operands()
        rows = []
        for k, (dtype, rank) in enumerate(zip(self.operand_dtypes, self.operand_ranks)):
            access = (ACCESS_READ if k in read else 0) | (ACCESS_WRITE if k in written else 0)
            rows.append(ir.Constant(OPERAND_INFO_TYPE, [i64(dtype.itemsize), i64(rank),
                                                        i64(access)]))
        table_type = ir.ArrayType(OPERAND_INFO_TYPE, len(rows))
        table = ir.GlobalVariable(self.module, table_type, f"{self.name}_operands")
        table.global_constant = True
        table.linkage = "internal"
        table.initializer = ir.Constant(table_type, rows)
        return table


def convert_scalar(b: ir.IRBuilder, arg: ir.Value, dtype: np.dtype) -> ir.Value:
    """A scalar argument (double / int64 / uint64) as its dtype, rounded as NumPy does."""
    if dtype.kind == "f":
        return arg if dtype.itemsize == 8 else float_truncate(b, arg, dtype)
    if dtype.kind == "b":
        return b.icmp_unsigned("!=", arg, i64(0))
    return b.trunc(arg, llvm_type(dtype)) if dtype.itemsize < 8 else arg


def build_kernel_module(spec: KernelSpec, name: str) -> ir.Module:
    """Generate the kernel for ``spec`` with entry points ``name`` and
    ``resume_symbol(name)``; they call the shared driver (``DRIVER_SYMBOL``)."""
    kb = _KernelBuilder(spec, name)
    body = kb.build_body(kb.build_inner())
    kb.build_entry(body, resume=False)
    kb.build_entry(body, resume=True)
    return kb.module
