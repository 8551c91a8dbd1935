"""Column kernels: reductions over a block of axes before the last one, as NumPy adds them.

For ``x.sum(axis=0)`` of a C-contiguous matrix NumPy's iterator keeps the contiguous last
axis inner and walks the reduced axis outside it: ``out[j] = 0; out[j] += x[i, j]`` for
``i`` in order (its binary add loop, not the pairwise one).  So each output element is a
plain sequential sum, and the sums of neighbouring output elements are independent: the
kernel computes them side by side, a vector of output elements at a time, which is both
fast and NumPy's bits.  The same holds for float max/min (NumPy's binary loop at every
step, which keeps its zero and NaN: ``reduction_ties.emit_column_extreme``), integer sums,
products and argmax/argmin (``reduction_scan``: the first index along the reduced axis).

A ``column`` spec (``reduction_spec``) reduces the axes ``[start, stop)`` of the iteration
shape; the launcher views it as ``(O, R, I)``: the kept axes before the block (``O``,
collapsed), the reduced block (``R``), the kept axes after it (``I``, contiguous in every
operand that spans them).  The work is cut into tiles of one ``o`` and up to ``LANES``
output elements ``i``; a tile runs each pass of the spec (the passes of the row kernels:
reductions whose operands need earlier reductions, as var after its mean, come later) as
a sweep over ``r`` of a vector loop over its lanes, keeping the per-output values in
stack arrays (one per row-level value).  Element-level outputs (a reduced value broadcast
back, ``x - x.mean(axis=0)``) are a last sweep.  Tiles are independent, so splitting them
across threads changes no bit.

Entry point: as the row kernels' (``reduction.py``), with the int64 block
``[O, R, I, o-stride per operand..., r-stride per operand...]`` (bytes; elements along
``I`` are contiguous).  With the runtime, a thread checks for Ctrl-C every
``INTERRUPT_ROWS`` reduced rows of a tile (a tile may span all of a long axis); once it is
pending, the thread skips the rest of its work and the status says so, as the row
kernels' does (their launcher then runs the job again from the start if Python's handler
returns).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from tsjit.codegen.element_ops import llvm_type, lower_op, memory_type, store_value
from tsjit.codegen.elementwise_driver import (
    INTERRUPT_PENDING,
    STATUS_RESUME_SHIFT,
    WATCH_INTERRUPTS,
    WATCH_INTERRUPTS_MIN,
)
from tsjit.codegen.ir_util import (
    I8,
    I32,
    I64,
    PTR,
    declare_function,
    element,
    i64,
    loop,
    stack_slot,
)
from tsjit.codegen.reduction import _PARALLEL_WORK, INTERRUPT_ROWS, _RowKernelBuilder
from tsjit.codegen.reduction_scan import emit_scan_step, scan_start
from tsjit.codegen.reduction_spec import (
    ARG_REDUCTIONS,
    REDUCTIONS,
    ROW_LENGTH,
    RowKernelSpec,
    float_extremes,
)
from tsjit.codegen.reduction_ties import emit_column_extreme

__all__ = ["LANES", "build_column_kernel_module"]

LANES = 2048   # output elements per tile: their running values stay in L1


class _ColumnKernelBuilder(_RowKernelBuilder):
    def __init__(self, spec: RowKernelSpec, name: str, parallel: bool) -> None:
        super().__init__(spec, name, parallel)
        ops = range(self.n_in, self.n_in + len(spec.ops))
        # one stack array of LANES values per row-level op (reductions, means, ...), and
        # for argmax/argmin one more: the best value so far (their own holds the index)
        self.lane_values = [v for v in ops if not self.levels[v]]
        self.best_values = [v for v in self.lane_values if self._op(v).op in ARG_REDUCTIONS]
        slots = [*self.lane_values, *(("best", v) for v in self.best_values)]
        self.lane_offset = {v: k * LANES * 8 for k, v in enumerate(slots)}

    def input_address(self, b: ir.IRBuilder, pointers: list[ir.Value], k: int,
                      index: ir.Value, row: dict) -> ir.Value:
        """An input broadcast along the inner axes holds one value per reduced row, where
        its row pointer is: the same for every lane."""
        if self.array_inputs[k] in self.spec.inner_broadcast:
            return pointers[k]
        return super().input_address(b, pointers, k, index, row)

    # ------------------------------------------------------------------ lanes
    def lane_address(self, b: ir.IRBuilder, lanes: ir.Value, v: int, i: ir.Value,
                     best: bool = False) -> ir.Value:
        """Lane ``i`` of value ``v`` (``best``: an arg reduction's best value)."""
        base = b.gep(lanes, [i64(self.lane_offset[("best", v) if best else v])],
                     source_etype=I8)
        return b.gep(base, [i], source_etype=llvm_type(self.best_dtype(v) if best
                                                       else self.spec.value_dtype(v)))

    def best_dtype(self, v: int) -> np.dtype:
        return self.spec.value_dtype(self._op(v).args[0])

    def lane_load(self, b: ir.IRBuilder, lanes: ir.Value, v: int, i: ir.Value) -> ir.Value:
        return b.load(self.lane_address(b, lanes, v, i),
                      typ=llvm_type(self.spec.value_dtype(v)))

    def row_values_at(self, b: ir.IRBuilder, lanes: ir.Value, state: ir.Value,
                      i: ir.Value, wanted: set[int]) -> dict[int, ir.Value]:
        """The row-level operands of the ``wanted`` values at lane ``i``: scalars from the
        state, the others from their lane arrays."""
        values = {}
        for v in wanted:
            op = self._op(v)
            for a in (op.args if op is not None else ()):
                if self.levels[a] or a in values:
                    continue
                if a < self.n_in:
                    values[a] = b.load(self.state_slot(b, state, a),
                                       typ=llvm_type(self.spec.value_dtype(a)))
                else:
                    values[a] = self.lane_load(b, lanes, a, i)
        return values

    def lane_function(self, name: str, computes: set[int]) -> tuple[ir.Function, ir.IRBuilder]:
        """``fn(operand pointers..., lanes, state, w, count)``, inlined, every pointer
        noalias (the inputs are only read, the outputs fresh, the lanes private): its
        loop over the ``w`` lanes vectorizes.  ``count``: the reduced elements per output."""
        fn = self.function(name, [PTR] * self.n_operands + [PTR, PTR, I64, I64], inline=True,
                           computes=computes)
        for k in range(self.n_operands + 2):
            fn.args[k].add_attribute("noalias")
        return fn, ir.IRBuilder(fn.append_basic_block())

    # ------------------------------------------------------------------ sweeps
    def build_sweep(self, p: int) -> ir.Function:
        """Pass ``p`` over one row ``r`` of the tile (its last parameter): each reduction's
        lane array combined with the element values of that row."""
        reductions = self.passes[p]
        args = [self._op(r).args[0] for r in reductions]
        wanted = self.needed(args)
        fn, b = self.lane_function(f"{self.name}_sweep{p}", wanted)
        pointers = list(fn.args[:self.n_operands])
        lanes, state, w, r_index = fn.args[self.n_operands:]

        def one(b: ir.IRBuilder, i: ir.Value) -> None:
            row = self.row_values_at(b, lanes, state, i, wanted)
            values = self.emit_elements(b, pointers, i, row, wanted, {})
            for r, a in zip(reductions, args):
                kind, dtype = self._op(r).op, self.spec.value_dtype(a)
                if kind not in ARG_REDUCTIONS:
                    at = self.lane_address(b, lanes, r, i)
                    acc = b.load(at, typ=llvm_type(dtype))
                    if float_extremes([self._op(r)]):
                        b.store(emit_column_extreme(b, kind, dtype, acc, values[a]), at)
                    else:
                        b.store(emit_scan_step(b, kind, dtype, acc, None, values[a],
                                               r_index)[0], at)
                    continue
                at, best_at = self.lane_address(b, lanes, r, i), \
                    self.lane_address(b, lanes, r, i, best=True)
                best, index = emit_scan_step(b, kind, dtype,
                                             b.load(best_at, typ=llvm_type(dtype)),
                                             b.load(at, typ=I64), values[a], r_index)
                b.store(best, best_at)
                b.store(index, at)

        loop(b, i64(0), w, one)
        b.ret_void()
        return fn

    def build_row_ops(self, when: int) -> ir.Function | None:
        """The row-level ops known before pass ``when`` (a mean after its sum), per lane;
        the reductions of pass ``when`` start from their identity."""
        spec = self.spec
        ops = [v for v in self.lane_values
               if self._op(v).op not in REDUCTIONS and self.avail[v] == when]
        starts = self.passes[when] if when < len(self.passes) else []
        if not ops and not starts:
            return None
        fn, b = self.lane_function(f"{self.name}_rowops{when}", set())
        lanes, state, w, count = fn.args[self.n_operands:]

        def one(b: ir.IRBuilder, i: ir.Value) -> None:
            row = self.row_values_at(b, lanes, state, i, set(ops))
            for v in ops:
                op = self._op(v)
                value = count if op.op == ROW_LENGTH else lower_op(
                    b, op, [row[a] for a in op.args], [spec.value_dtype(a) for a in op.args],
                    operand_nans=self.operand_nans.get(v))
                row[v] = value
                b.store(value, self.lane_address(b, lanes, v, i))
            for r in starts:
                kind = self._op(r).op
                if kind in ARG_REDUCTIONS:
                    b.store(scan_start(kind, self.best_dtype(r)),
                            self.lane_address(b, lanes, r, i, best=True))
                    b.store(i64(0), self.lane_address(b, lanes, r, i))
                else:
                    b.store(scan_start(kind, self.spec.value_dtype(r)),
                            self.lane_address(b, lanes, r, i))

        loop(b, i64(0), w, one)
        b.ret_void()
        return fn

    def build_outputs_sweep(self) -> ir.Function | None:
        """The element-level outputs of one row ``r`` of the tile."""
        spec = self.spec
        element_outputs = [j for j, v in enumerate(spec.outputs) if self.levels[v]]
        if not element_outputs:
            return None
        wanted = self.needed([spec.outputs[j] for j in element_outputs])
        fn, b = self.lane_function(f"{self.name}_outputs", wanted)
        pointers = list(fn.args[:self.n_operands])
        lanes, state, w, _ = fn.args[self.n_operands:]

        def one(b: ir.IRBuilder, i: ir.Value) -> None:
            row = self.row_values_at(b, lanes, state, i, wanted)
            self.store_outputs(b, pointers, i, self.emit_elements(b, pointers, i, row, wanted, {}),
                               element_outputs)

        loop(b, i64(0), w, one)
        b.ret_void()
        return fn

    def build_row_outputs(self) -> ir.Function | None:
        """The row-level outputs of the tile, from their lane arrays."""
        spec = self.spec
        row_outputs = [j for j, v in enumerate(spec.outputs) if not self.levels[v]]
        if not row_outputs:
            return None
        fn, b = self.lane_function(f"{self.name}_results", set())
        pointers = list(fn.args[:self.n_operands])
        lanes, state, w, _ = fn.args[self.n_operands:]

        def one(b: ir.IRBuilder, i: ir.Value) -> None:
            for j in row_outputs:
                v = spec.outputs[j]
                dtype = spec.value_dtype(v)
                at = b.gep(pointers[len(self.array_inputs) + j], [i],
                           source_etype=memory_type(dtype), inbounds=True)
                store_value(b, self.lane_load(b, lanes, v, i), at, dtype)

        loop(b, i64(0), w, one)
        b.ret_void()
        return fn

    # ------------------------------------------------------------------ tiles
    def build_tiles_task(self) -> ir.Function:
        """``tiles(context, begin, end)``: tiles [begin, end) (``o * chunks + chunk``)."""
        spec = self.spec
        fn, b, bases, block, status, state = self.task_prologue(f"{self.name}_tiles")
        _, begin, end = fn.args
        count, inner = (b.load(element(b, block, i64(k), I64), typ=I64) for k in (1, 2))
        chunks = b.sdiv(b.add(inner, i64(LANES - 1)), i64(LANES))
        n = self.n_operands
        outer_strides = [b.load(element(b, block, i64(3 + k), I64), typ=I64) for k in range(n)]
        row_strides = [b.load(element(b, block, i64(3 + n + k), I64), typ=I64)
                       for k in range(n)]
        sizes = [memory_type(spec.value_dtype(v)) for v in self.operand_values()]
        lanes = stack_slot(b, ir.ArrayType(I8, max(len(self.lane_offset), 1) * LANES * 8))
        sweeps = [self.build_sweep(p) for p in range(len(self.passes))]
        row_ops = [self.build_row_ops(p) for p in range(len(self.passes) + 1)]
        outputs, results = self.build_outputs_sweep(), self.build_row_outputs()

        stopped = stack_slot(b, I32, ir.Constant(I32, 0))

        def running(b: ir.IRBuilder, body) -> None:
            """``body(b)`` unless this thread stopped for Ctrl-C."""
            with b.if_then(b.icmp_unsigned("==", b.load(stopped, typ=I32), ir.Constant(I32, 0))):
                body(b)

        def rows(b: ir.IRBuilder, body) -> None:
            """``body(b, r)`` for each reduced row of the tile, reading the runtime's
            Ctrl-C flag before each INTERRUPT_ROWS of them."""
            if not self.parallel:   # no runtime: nothing to check for Ctrl-C
                loop(b, i64(0), count, body)
                return
            pending = declare_function(self.module, INTERRUPT_PENDING, I32, [])

            def block(b: ir.IRBuilder, k: ir.Value) -> None:
                b.store(b.call(pending, []), stopped)
                first = b.mul(k, i64(INTERRUPT_ROWS))
                last = b.add(first, i64(INTERRUPT_ROWS))
                last = b.select(b.icmp_signed("<", last, count), last, count)
                running(b, lambda b: loop(b, first, last, body))

            loop(b, i64(0), b.sdiv(b.add(count, i64(INTERRUPT_ROWS - 1)), i64(INTERRUPT_ROWS)),
                 block)

        def tile(b: ir.IRBuilder, t: ir.Value) -> None:
            o, chunk = b.sdiv(t, chunks), b.srem(t, chunks)
            first = b.mul(chunk, i64(LANES))
            left = b.sub(inner, first)
            w = b.select(b.icmp_signed("<", left, i64(LANES)), left, i64(LANES))
            corner = [b.gep(b.gep(base, [b.mul(o, stride)], source_etype=I8),
                            [i64(0) if broadcast else first], source_etype=ty)
                      for base, stride, ty, broadcast in zip(bases, outer_strides, sizes,
                                                             self.broadcast_operands())]

            def at_row(b: ir.IRBuilder, r: ir.Value) -> list[ir.Value]:
                return [b.gep(p, [b.mul(r, stride)], source_etype=I8)
                        for p, stride in zip(corner, row_strides)]

            tail = [lanes, state, w, count]
            for p in range(len(self.passes) + 1):
                if row_ops[p] is not None:
                    running(b, lambda b, p=p: b.call(row_ops[p], corner + tail))
                if p < len(self.passes):
                    rows(b, lambda b, r, p=p: b.call(
                        sweeps[p], at_row(b, r) + [lanes, state, w, r]))
            if results is not None:
                running(b, lambda b: b.call(results, corner + tail))
            if outputs is not None:
                rows(b, lambda b, r: b.call(outputs, at_row(b, r) + tail))

        loop(b, begin, end, tile)
        with b.if_then(b.icmp_unsigned("!=", b.load(stopped, typ=I32), ir.Constant(I32, 0))):
            b.atomic_rmw("or", status, ir.Constant(I32, 1 << STATUS_RESUME_SHIFT), "monotonic")
        self.collect_fp_status(b, status)
        b.ret_void()
        return fn

    def operand_values(self) -> list[int]:
        """The value each operand holds: the array inputs, then the outputs."""
        return [*self.array_inputs, *self.spec.outputs]

    def broadcast_operands(self) -> list[bool]:
        """Per operand: whether it is broadcast along the inner axes (an input of
        ``spec.inner_broadcast``)."""
        return [k < len(self.array_inputs) and self.array_inputs[k] in self.spec.inner_broadcast
                for k in range(self.n_operands)]

    def build_entry(self, task: ir.Function) -> None:
        fn, b, context, block, status = self.entry_prologue()
        outer, count, inner = (b.load(element(b, block, i64(k), I64), typ=I64)
                               for k in range(3))
        tiles = b.mul(outer, b.sdiv(b.add(inner, i64(LANES - 1)), i64(LANES)))
        if self.parallel:   # a long job makes sure that Ctrl-C reaches it
            elements = b.mul(b.mul(outer, count), inner)
            with b.if_then(b.icmp_signed(">=", elements, i64(WATCH_INTERRUPTS_MIN))):
                b.call(declare_function(self.module, WATCH_INTERRUPTS, ir.VoidType(), []), [])
        if not self.parallel:
            b.call(task, [context, i64(0), tiles])
        else:
            work = b.mul(b.add(count, i64(1)), i64(LANES * (len(self.passes) + 1)))
            grain = b.add(b.sdiv(i64(_PARALLEL_WORK), work), i64(1))
            self.call_parallel_for(b, task, context, tiles, grain)
        b.ret(b.zext(b.load(status, typ=I32), I64))


def build_column_kernel_module(spec: RowKernelSpec, name: str, parallel: bool) -> ir.Module:
    """The column kernel for ``spec`` with entry point ``name``; ``parallel``: the runtime's
    thread pool is there to call."""
    kb = _ColumnKernelBuilder(spec, name, parallel)
    kb.build_entry(kb.build_tiles_task())
    return kb.module
