"""RowKernelSpec -> LLVM IR module: fused reductions, row by row.

One call of the kernel computes ``rows`` rows of ``n`` elements (see ``reduction_spec``).
Per row, the reductions run in passes over the row (a row of a few KB stays in cache
between passes): pass ``p`` computes the reductions whose operands need the row values of
passes before it (softmax: the max, then the sum of ``exp(x - max)``, then the normalized
output).  A pass of sums walks NumPy's pairwise-summation tree (``reduction_tree``),
other passes scan the row (``reduction_scan``, ``reduction_extremes``).  Row-level values
(means, ``log`` of a sum, ...) are computed once per row between passes, and the
element-level outputs in a last loop over the row.

Module functions (``name`` is the entry point):
- ``{name}(operands, scalars...) -> status``: the floating-point flags (MXCSR's) that the
  job raised on any thread; ``operands`` is the address of a tuple of the array
  inputs, the outputs, and an int64 array ``[rows, n, row stride per operand (bytes)...]``
  (cffi charges per argument; the data pointers are read from NumPy's structs here).
  Elements within a row are contiguous (``strided``: where the inputs' elements are
  follows in the block, ``reduction_strided``).  Rows are split across
  the runtime's threads (``tsjit_parallel_for``); a job of one long row (a full
  reduction, or a 1-D array's) splits the top of its summation tree instead, so every
  thread count gives the same bits.
  With the runtime, every ``INTERRUPT_ROWS`` rows a thread checks for Ctrl-C (the
  runtime's flag, see runtime/interrupts.c), and a long row between blocks of its passes
  (``reduction_interrupts``); once it is pending the job's threads skip their remaining
  work and the status says so (``1 << STATUS_RESUME_SHIFT``, resume from the start): the
  outputs are fresh, so the launcher lets Python's handler run and, if it returns, runs
  the kernel again.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from tsjit.codegen import fp_status
from tsjit.codegen.element_ops import (
    computed_errors,
    llvm_type,
    load_value,
    lower_op,
    memory_type,
    store_value,
)
from tsjit.codegen.elementwise_copies import store_fence
from tsjit.codegen.elementwise_driver import (
    INTERRUPT_PENDING,
    WATCH_INTERRUPTS,
    WATCH_INTERRUPTS_MIN,
)
from tsjit.codegen.fast_form_plan import nan_blind
from tsjit.codegen.ir_util import (
    I1,
    I32,
    I64,
    PTR,
    declare_function,
    element,
    hinted_loop,
    i64,
    loop,
    set_string_attribute,
    stack_slot,
)
from tsjit.codegen.kernel_abi import (
    STATUS_RESUME_SHIFT,
)
from tsjit.codegen.kernel_spec import MATH_FUNCTIONS, KernelOp
from tsjit.codegen.operand_nans import operand_nans
from tsjit.codegen.pairwise import emit_combine
from tsjit.codegen.reduction_entry import KernelPrologues
from tsjit.codegen.reduction_extremes import build_extremes, fast_extremes
from tsjit.codegen.reduction_interrupts import (
    INTERRUPT_ELEMENTS,
    emit_pending,
    interruptible_blocks,
)
from tsjit.codegen.reduction_scan import build_scan
from tsjit.codegen.reduction_spec import (
    BUFFER,
    BUFFERED,
    REDUCTIONS,
    ROW_INDEX,
    ROW_LENGTH,
    SEQUENTIAL,
    RowKernelSpec,
    element_level,
    float_extremes,
    nonpositive_values,
    schedule,
)
from tsjit.codegen.reduction_split import build_parallel_tree
from tsjit.codegen.reduction_strided import (
    element_address,
    load_strides,
    piece_loop,
    strided_fields,
)
from tsjit.codegen.reduction_ties import emit_row_ties
from tsjit.codegen.reduction_tree import FUSED_ROW_BYTES, build_node, build_tree, fuses_in_cache
from tsjit.codegen.row_fast_blocks import BLOCK as FAST_BLOCK
from tsjit.codegen.row_fast_blocks import UNCHECKED, note_nans, run_fast_block, slot_type
from tsjit.codegen.row_memory import (
    prefetch_next_row,
    prefetched_operands,
    prefetching,
    rows_ahead,
    stream_outputs,
    streamed_outputs,
    streaming,
)
from tsjit.codegen.row_pipeline import (
    Pipeline,
    build_pipeline,
    emit_pipelined_rows,
    pipelines,
)
from tsjit.codegen.row_vectors import fits_vectors, vector_outputs, write_vectors
from tsjit.codegen.vmath import FAST_FORMS, emit_math

__all__ = ["build_row_kernel_module"]

# Elements of work (per thread chunk) below which rows run on the calling thread.
_PARALLEL_WORK = 1 << 16
_TASK_TYPE = ir.FunctionType(ir.VoidType(), [PTR, I64, I64])
# Rows up to this long keep the expensive values of a pass for the later passes in a
# stack buffer (longer rows compute them again).
SCRATCH_ELEMENTS = 4096
_INTERLEAVE = 4
_EXPENSIVE = frozenset({*MATH_FUNCTIONS, "pow"})
_CHECKABLE = (np.dtype(np.float32), np.dtype(np.float64))
# Rows between two checks for Ctrl-C (a call each: rows may be a few elements long).
INTERRUPT_ROWS = 16


class _RowKernelBuilder(KernelPrologues):
    def __init__(self, spec: RowKernelSpec, name: str, parallel: bool) -> None:
        self.spec = spec
        self.name = name
        self.parallel = parallel
        self.module = ir.Module(name=name)
        self.n_in = len(spec.inputs)
        self.operand_nans = operand_nans(spec.inputs, spec.ops, spec.value_dtype)
        self.array_inputs = [i for i, inp in enumerate(spec.inputs) if not inp.is_scalar]
        self.scalar_inputs = [i for i, inp in enumerate(spec.inputs) if inp.is_scalar]
        self.n_operands = len(self.array_inputs) + len(spec.outputs)
        self.levels = element_level(spec)
        self.avail, self.passes = schedule(spec, self.levels)
        self.nonpositive = nonpositive_values(spec)
        self.first_use, self.cached = self._cached_values()
        self.n_slots = self.n_operands + len(self.cached)
        # the row state: every row-level value, by value number
        self.row_values = [v for v in range(self.n_in + len(spec.ops)) if not self.levels[v]]
        # then, strided, where its inputs' elements are (reduction_strided, set per job)
        self.state_type = ir.LiteralStructType(
            [llvm_type(spec.value_dtype(v)) for v in self.row_values] +
            (strided_fields(len(self.array_inputs)) if spec.strided else []) or [I64])
        self.field = {v: k for k, v in enumerate(self.row_values)}
        scalar_types = [llvm_type(spec.inputs[i].dtype) for i in self.scalar_inputs]
        self.scalars_type = ir.LiteralStructType(scalar_types or [I64])
        # data, block, scalars, the job's floating-point status (i32)
        self.context_type = ir.LiteralStructType([PTR, PTR, PTR, PTR])
        self.fp_status = fp_status.supported()
        self.trees: dict[tuple, ir.Function] = {}   # each pass's, by (pass, cached, follow)

    # ------------------------------------------------------------------ schedule
    def _op(self, v: int) -> KernelOp | None:
        return self.spec.ops[v - self.n_in] if v >= self.n_in else None

    def _cached_values(self) -> tuple[dict[int, int], list[int]]:
        """The pass that first computes each element-level value, and the expensive values
        (transcendental functions) that later passes read back from a row-long scratch
        buffer instead of computing them again (softmax's exp: its sum's pass, then the
        output)."""
        roots = [[self._op(r).args[0] for r in reductions] for reductions in self.passes]
        roots.append([v for v in self.spec.outputs if self.levels[v]])
        first_use: dict[int, int] = {}
        used_later = set()
        for p, values in enumerate(roots):
            for v in self.needed(values):
                if v in first_use:
                    used_later.add(v)
                else:
                    first_use[v] = p
        cached = [v for v in sorted(used_later)
                  if self._op(v) is not None and self._op(v).op in _EXPENSIVE]
        return first_use, cached

    # ------------------------------------------------------------------ helpers
    def function(self, name: str, args: list[ir.Type], inline: bool = False,
                 computes: set[int] = frozenset()) -> ir.Function:
        """An internal function; its loops (and those inlined into it) use 512-bit vectors
        when the values it ``computes`` include transcendental functions (compute-bound,
        as in ``elementwise.vector_width``), else 256-bit ones."""
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), args), name=name)
        fn.attributes.add("nounwind")
        fn.linkage = "internal"
        set_string_attribute(fn, "prefer-vector-width",
                             "512" if self.expensive(computes) else "256")
        if inline:
            fn.attributes.add("alwaysinline")
        return fn

    def expensive(self, computes: set[int]) -> bool:
        """Whether computing these values includes transcendental functions."""
        return any(self._op(v) is not None and self._op(v).op in _EXPENSIVE for v in computes)

    def checkable(self, values) -> tuple[int, ...]:
        """The ``values`` whose NaN a fast pass can check: float32 and float64 ones."""
        return tuple(v for v in values if self.spec.value_dtype(v) in _CHECKABLE)

    def nan_blind(self, computes: set[int], noted) -> frozenset[int]:
        """The ops among ``computes`` whose NaN selects (``operand_nans``) a fast pass
        leaves out: their NaN always reaches a ``noted`` value, which sends the fast pass
        to its exact one (``fast_form_plan.nan_blind``)."""
        return nan_blind(self.spec, [v for v in sorted(computes) if self.operand_nans.get(v)],
                         set(noted))

    def element_loop(self, b: ir.IRBuilder, begin: ir.Value, end: ir.Value, body,
                     computes: set[int], pieces: tuple, fast: bool | str = False,
                     noted: tuple[int, ...] = ()) -> None:
        """A loop over elements, ``body(b, i, fast)`` (-> the element's values by number);
        one that computes transcendental functions (long dependency chains) interleaves
        _INTERLEAVE vectors per iteration, as the elementwise kernels' do
        (``elementwise._INTERLEAVE``).  ``fast``: a body that only writes what it
        computes runs with the math functions' fast forms and without the NaN selects of
        the ops whose NaN reaches a ``noted`` value first (``row_fast_blocks``; ``fast``
        is then a list for ``emit_elements``, else None): whole blocks where it computes
        fast forms, else the whole range; UNCHECKED: the whole range runs fast, its
        caller checks the results (``reduction_tree``).  ``pieces``: ``(row values, row
        pointers, offset)``, for a strided kernel's walk (``reduction_strided``)."""
        hints = {"llvm.loop.interleave.count": _INTERLEAVE}
        sizes = [self.spec.value_dtype(v).itemsize for v in computes if fast is True and
                 self._op(v) is not None and self._op(v).op in FAST_FORMS]
        sizes = [size for size in sizes if size >= 4]
        noted = noted if fast is True else ()
        ty = slot_type(sizes + [self.spec.value_dtype(v).itemsize for v in noted])
        slot = stack_slot(b, ty) if sizes or noted else None

        def element(b: ir.IRBuilder, i: ir.Value, quick: bool) -> None:
            results = [] if quick else None
            values = body(b, i, results)
            if quick:
                note_nans(b, slot, ty, results + [values[v] for v in noted])

        def run(b: ir.IRBuilder, lo: ir.Value, hi: ir.Value) -> None:
            if fast == UNCHECKED:
                hinted_loop(b, lo, hi, lambda b, i: body(b, i, []), hints)
                return
            if noted and not sizes:   # NaN selects only: the flags are the exact pass's
                run_fast_block(b, slot, ty, element, hints, lo, hi, flags=False)
                return
            if not self.expensive(computes):
                loop(b, lo, hi, lambda b, i: body(b, i, None))
                return
            middle = lo
            if sizes:
                blocks = b.sdiv(b.sub(hi, lo), i64(FAST_BLOCK))
                middle = b.add(lo, b.mul(blocks, i64(FAST_BLOCK)))

                def block(b: ir.IRBuilder, k: ir.Value) -> None:
                    start = b.add(lo, b.mul(k, i64(FAST_BLOCK)))
                    run_fast_block(b, slot, ty, lambda b, j, quick: element(
                        b, b.add(start, j, flags=["nsw"]), quick), hints)

                loop(b, i64(0), blocks, block)
            hinted_loop(b, middle, hi, lambda b, i: body(b, i, None), hints)

        if self.spec.strided:
            row, pointers, offset = pieces
            piece_loop(b, begin, end, offset, row, pointers[:len(self.array_inputs)],
                       [self.spec.inputs[i].dtype.itemsize for i in self.array_inputs], run)
        else:
            run(b, begin, end)

    def clear_fp_status(self, b: ir.IRBuilder) -> None:
        """Clear this thread's sticky floating-point flags (a task's start)."""
        if self.fp_status:
            fp_status.clear(b)

    def save_fp_status(self, b: ir.IRBuilder) -> ir.Value:
        """This thread's flags, then cleared (a subtree task: on the calling thread it
        must give them back, ``raise_fp_status``)."""
        if not self.fp_status:
            return ir.Constant(I32, 0)
        flags = fp_status.read(b)
        fp_status.clear(b)
        return flags

    def raise_fp_status(self, b: ir.IRBuilder, flags: ir.Value) -> None:
        """Set ``flags`` in this thread's sticky status (they raise no trap: masked)."""
        if self.fp_status:
            fp_status.raise_flags(b, flags)

    def collect_fp_status(self, b: ir.IRBuilder, status: ir.Value) -> None:
        """Or this thread's floating-point flags into the job's ``status`` (a task's end):
        the launcher has NumPy report them (see ``reduction_launch``)."""
        if self.fp_status:
            b.atomic_rmw("or", status, fp_status.read(b), "monotonic")

    def state_slot(self, b: ir.IRBuilder, state: ir.Value, v: int) -> ir.Value:
        return b.gep(state, [ir.Constant(I32, 0), ir.Constant(I32, self.field[v])],
                     source_etype=self.state_type)

    def strided_slot(self, b: ir.IRBuilder, state: ir.Value, j: int) -> ir.Value:
        """The state's ``j``-th strided field (``reduction_strided``)."""
        return b.gep(state, [ir.Constant(I32, 0), ir.Constant(I32, len(self.row_values) + j)],
                     source_etype=self.state_type)

    def load_state(self, b: ir.IRBuilder, state: ir.Value) -> dict:
        """The row values by value number; strided, the layout's fields by key."""
        values = {v: b.load(self.state_slot(b, state, v), typ=self.state_type.elements[k])
                  for k, v in enumerate(self.row_values)}
        if self.spec.strided:
            values.update(load_strides(b, lambda j: self.strided_slot(b, state, j),
                                       len(self.array_inputs)))
        return values

    def needed(self, roots: list[int], loaded=frozenset()) -> set[int]:
        """Element-level values that computing ``roots`` needs (``loaded`` ones are read,
        not computed)."""
        needed, stack = set(), list(roots)
        while stack:
            v = stack.pop()
            if v in needed or not self.levels[v]:
                continue
            needed.add(v)
            op = self._op(v)
            if op is not None and v not in loaded:
                stack.extend(op.args)
        return needed

    def scratch(self, p: int, cached: bool) -> tuple[dict[int, int], dict[int, int]]:
        """For pass ``p`` (len(passes): the outputs): the cached values it loads and those
        it stores, each with its slot among the row pointers."""
        if not cached:
            return {}, {}
        slots = {v: self.n_operands + j for j, v in enumerate(self.cached)}
        return ({v: k for v, k in slots.items() if self.first_use[v] < p},
                {v: k for v, k in slots.items() if self.first_use[v] == p})

    def emit_elements(self, b: ir.IRBuilder, pointers: list[ir.Value], index: ir.Value,
                      row: dict[int, ir.Value], wanted: set[int], loads: dict[int, int],
                      fast: list | None = None,
                      blind: frozenset[int] = frozenset()) -> dict[int, ir.Value]:
        """Element ``index`` of the element-level values in ``wanted`` (row values from
        ``row``, ``loads``: values read from their scratch slot; ``fast``: a list, math
        functions take their fast forms, and their results are appended to it, and the
        ``blind`` ops leave out their NaN selects)."""
        values = dict(row)
        spec = self.spec
        for v, k in loads.items():
            if v in wanted:
                values[v] = b.load(b.gep(pointers[k], [index],
                                         source_etype=llvm_type(spec.value_dtype(v))),
                                   typ=llvm_type(spec.value_dtype(v)))
        for k, i in enumerate(self.array_inputs):
            if i in wanted:
                values[i] = load_value(b, self.input_address(b, pointers, k, index, row),
                                       spec.inputs[i].dtype)
        for v in sorted(wanted):
            op = self._op(v)
            if op is not None and op.op == ROW_INDEX:
                values[v] = index
            elif op is not None and v not in loads:
                args, dtypes = [values[a] for a in op.args], [spec.value_dtype(a) for a in op.args]
                quick = fast is not None and op.op in FAST_FORMS
                if op.op in MATH_FUNCTIONS and op.args[0] in self.nonpositive:
                    values[v] = emit_math(b, op.op, args, nonpositive=True, fast=quick)
                else:
                    selects = None if fast is not None and v in blind else \
                        self.operand_nans.get(v)
                    values[v] = lower_op(b, op, args, dtypes, fast=quick, operand_nans=selects)
                if quick:
                    fast.append(values[v])
                self.raise_computed_errors(b, op, args, dtypes)
        return values

    def raise_computed_errors(self, b: ir.IRBuilder, op: KernelOp, args: list[ir.Value],
                              dtypes: list[np.dtype]) -> None:
        """Set the errors NumPy reports for ``op`` that the kernel computes
        (``element_ops.computed_errors``: x // 0 of ints, float -> int casts ...), where
        they happen (rare)."""
        flags = computed_errors(b, op, args, dtypes)
        if flags is not None:
            with b.if_then(b.icmp_unsigned("!=", flags, ir.Constant(I32, 0))):
                self.raise_fp_status(b, flags)

    def input_address(self, b: ir.IRBuilder, pointers: list[ir.Value], k: int,
                      index: ir.Value, row: dict) -> ir.Value:
        """Where element ``index`` of array input ``k`` (by position) is."""
        if self.spec.strided:
            return element_address(b, pointers[k], row, k, index)
        return b.gep(pointers[k], [index], source_etype=memory_type(
            self.spec.inputs[self.array_inputs[k]].dtype), inbounds=True)

    def pointers_from(self, b: ir.IRBuilder, array: ir.Value, cached: bool) -> list[ir.Value]:
        """The row pointers (then the scratch buffers, or null without them)."""
        pointers = [b.load(element(b, array, i64(k), PTR), typ=PTR)
                    for k in range(self.n_slots if cached else self.n_operands)]
        return pointers + [ir.Constant(PTR, None)] * (self.n_slots - len(pointers))

    def store_outputs(self, b: ir.IRBuilder, pointers, index, values,
                      outputs: list[int]) -> None:
        """Element ``index`` of the ``outputs`` (by position) from ``values``."""
        for j in outputs:
            v = self.spec.outputs[j]
            dtype = self.spec.value_dtype(v)
            at = b.gep(pointers[len(self.array_inputs) + j], [index],
                       source_etype=memory_type(dtype), inbounds=True)
            store_value(b, values[v], at, dtype)

    def store_scratch(self, b: ir.IRBuilder, pointers, index, values, stores) -> None:
        for v, k in stores.items():
            b.store(values[v], b.gep(pointers[k], [index],
                                     source_etype=llvm_type(self.spec.value_dtype(v))))

    # ------------------------------------------------------------------ passes
    def sources(self, p: int, cached: bool) -> list[int | None]:
        """Per reduction of pass ``p``: the row pointer slot its operand is read from
        where it is in memory already (an array input, or a cached value in its scratch
        buffer), else None (computed into a node buffer)."""
        loads, stores = self.scratch(p, cached)
        slots = []
        for r in self.passes[p]:
            a = self._op(r).args[0]
            dtype = self.spec.value_dtype(a)
            if a in self.array_inputs and memory_type(dtype) == llvm_type(dtype) and \
                    not self.spec.strided:
                slots.append(self.array_inputs.index(a))
            else:
                slots.append(loads.get(a, stores.get(a)))
        return slots

    def build_outputs(self, cached: bool) -> ir.Function | None:
        """``out(p..., state, n)``: the element-level outputs of a row, every pointer
        noalias (outputs are fresh arrays, scratch buffers private) so the loop
        vectorizes."""
        spec = self.spec
        element_outputs = [j for j, v in enumerate(spec.outputs) if self.levels[v]]
        if not element_outputs:
            return None
        loads, _ = self.scratch(len(self.passes), cached)
        fn = self.function(f"{self.name}_out{'c' if cached else ''}",
                           [PTR] * self.n_slots + [PTR, I64, I64], inline=True)
        for k in range(self.n_slots):
            fn.args[k].add_attribute("noalias")
        pointers = list(fn.args[:self.n_slots])
        state, begin, end = fn.args[self.n_slots:]
        b = ir.IRBuilder(fn.append_basic_block())
        row = self.load_state(b, state)
        wanted = self.needed([spec.outputs[j] for j in element_outputs], loads)
        noted = self.checkable(dict.fromkeys(spec.outputs[j] for j in element_outputs))
        blind = self.nan_blind(wanted - set(loads), noted)

        def one(b: ir.IRBuilder, i: ir.Value, fast: list | None) -> dict:
            values = self.emit_elements(b, pointers, i, row, wanted, loads, fast, blind)
            self.store_outputs(b, pointers, i, values, element_outputs)
            return values

        self.element_loop(b, begin, end, one, wanted - set(loads), (row, pointers, i64(0)),
                          fast=True, noted=noted if blind else ())
        b.ret_void()
        return fn

    # ------------------------------------------------------------------ a row
    def compute_row_values(self, b: ir.IRBuilder, state: ir.Value, n: ir.Value,
                           when: int) -> None:
        """Row-level ops that become known before pass ``when``, into the state."""
        values = self.load_state(b, state)
        for v in range(self.n_in, self.n_in + len(self.spec.ops)):
            op = self._op(v)
            if self.levels[v] or op.op in REDUCTIONS or self.avail[v] != when:
                continue
            if op.op == ROW_LENGTH:
                value = n
            else:
                args, dtypes = [values[a] for a in op.args], [self.spec.value_dtype(a)
                                                              for a in op.args]
                value = lower_op(b, op, args, dtypes, operand_nans=self.operand_nans.get(v))
                self.raise_computed_errors(b, op, args, dtypes)   # (once per row)
            values[v] = value
            b.store(value, self.state_slot(b, state, v))

    def build_row_variant(self, cached: bool, deferred: str = "") -> ir.Function:
        """``row(rowptrs, state, n, stream)``: one row, every pass, its outputs; ``cached``:
        the row pointers end with the scratch buffers of the cached values.  ``deferred``
        (``row_pipeline``): the row's element outputs are left to the next row or the
        task's end ("first"), or the last pass writes the previous row's too ("follow":
        ``(..., prevptrs, prevstate, upcoming)``, upcoming: the pointers of the row to
        prefetch meanwhile)."""
        spec = self.spec
        # a long row splits its tree across threads: a full reduction's one run, or the
        # only row of a job (the entry calls the task on this thread then, see build_entry);
        # within a rows job the split runs inline (the runtime does not nest)
        parallel = self.parallel and not cached
        # split: the pass's run is cut into subtrees for threads; buffered: into chunks;
        # fused: the tree that short rows take (reduction_tree.fuses_in_cache)
        trees, split, buffered, fused = [], [], [], []
        for p, reductions in enumerate(self.passes):
            sequential = any(self._op(r).op in SEQUENTIAL for r in reductions)
            buffered.append(any(BUFFERED in self._op(r).attrs for r in reductions))
            split.append(parallel and not sequential and not buffered[p])
            follow = deferred == "follow" and p == len(self.passes) - 1
            key = (p, cached, follow)   # a pipeline's two row functions share the others
            if key not in self.trees:
                tree, fused_tree = None, None
                if sequential or all(self._op(r).op != "reduce_sum" for r in reductions):
                    tree = build_scan(self, p, cached)   # max/min too: in any order
                    if fast_extremes(self, p, cached):
                        tree = build_extremes(self, p, cached, tree)
                else:
                    tree = build_tree(self, p, build_node(self, p, cached, previous=follow))
                    if not follow and not buffered[p] and fuses_in_cache(self, p, cached):
                        fused_tree = build_tree(self, p, build_node(self, p, cached, fused=True))
                self.trees[key] = (build_parallel_tree(self, p, tree) if split[p] else tree,
                                   fused_tree)
            trees.append(self.trees[key][0])
            fused.append(self.trees[key][1])
        outputs = None if deferred else self.build_outputs(cached)
        vectors = vector_outputs(self, cached) if outputs is not None and \
            streamed_outputs(spec, self.levels) else None
        loads, _ = self.scratch(len(self.passes), cached)
        outputs_compute = self.needed([v for v in spec.outputs if self.levels[v]], loads)
        fn = self.function(f"{self.name}_row{'c' if cached else ''}{deferred}",
                           [PTR, PTR, I64, I1] + ([PTR] * 3 if deferred == "follow" else []),
                           computes=outputs_compute - set(loads))
        rowptrs, state, n, stream = fn.args[:4]
        previous = [*fn.args[4:6], stream, *fn.args[6:]]   # as PIPELINE_ARGS
        b = ir.IRBuilder(fn.append_basic_block())
        for p, reductions in enumerate(self.passes):
            self.compute_row_values(b, state, n, p)
            results = stack_slot(b, ir.ArrayType(I64, len(reductions)))
            if fused[p] is not None:
                with b.if_else(self.in_cache(b, n)) as (short, long):
                    with short:
                        b.call(fused[p], [rowptrs, state, i64(0), n, results])
                    with long:
                        self.call_tree(b, trees[p], split[p], buffered[p], rowptrs, state, n,
                                       results)
            else:
                last = deferred == "follow" and p == len(self.passes) - 1
                self.call_tree(b, trees[p], split[p], buffered[p], rowptrs, state, n, results,
                               previous if last else [])
            for j, r in enumerate(reductions):
                op = self._op(r)
                ty = llvm_type(op.dtype)
                value = b.load(element(b, results, i64(j), I64), typ=ty)
                if op.op == "reduce_sum" and np.dtype(op.dtype).kind == "f":
                    value = b.fadd(ir.Constant(ty, 0.0), value)   # NumPy's identity first
                elif float_extremes([op]):   # a zero's sign, a NaN's bits: NumPy's
                    value = emit_row_ties(self, b, rowptrs, state, n, r, value)
                b.store(value, self.state_slot(b, state, r))
            if buffered[p]:
                self.add_later_chunks(b, reductions, trees[p], rowptrs, state, n)
        self.compute_row_values(b, state, n, len(self.passes))
        pointers = self.pointers_from(b, rowptrs, cached)
        if outputs is not None:
            interruptible_blocks(b, i64(0), n, INTERRUPT_ELEMENTS, lambda b, lo, hi:
                                 self.write_outputs(b, outputs, vectors, pointers, state, lo,
                                                    hi, stream),
                                 self.parallel)
        row = self.load_state(b, state)
        for j, v in enumerate(spec.outputs):
            if not self.levels[v]:
                store_value(b, row[v], pointers[len(self.array_inputs) + j],
                            spec.value_dtype(v))
        b.ret_void()
        return fn

    def call_tree(self, b: ir.IRBuilder, tree: ir.Function, split: bool, buffered: bool,
                  rowptrs: ir.Value, state: ir.Value, n: ir.Value, results: ir.Value,
                  following: list = ()) -> None:
        """A pass's ``tree`` on the row (``split``: a parallel run's; ``buffered``: its
        first chunk; ``following``: a pipelined pass's PIPELINE_ARGS)."""
        if split:
            b.call(tree, [rowptrs, state, n, results])
        else:
            first = b.select(b.icmp_signed("<", n, i64(BUFFER)), n, i64(BUFFER)) \
                if buffered else n
            b.call(tree, [rowptrs, state, i64(0), first, results, *following])

    def in_cache(self, b: ir.IRBuilder, n: ir.Value) -> ir.Value:
        """Whether a row of ``n`` elements stays in the cache from pass to pass (i1): its
        array inputs hold at most FUSED_ROW_BYTES."""
        itemsize = sum(np.dtype(self.spec.inputs[i].dtype).itemsize for i in self.array_inputs
                       if i not in self.spec.row_inputs)
        return b.icmp_signed("<=", b.mul(n, i64(itemsize)), i64(FUSED_ROW_BYTES))

    def write_outputs(self, b: ir.IRBuilder, outputs: ir.Function,
                      vectors: ir.Function | None, pointers: list, state: ir.Value,
                      lo: ir.Value, hi: ir.Value, stream: ir.Value) -> None:
        """Elements [lo, hi) of the element-level outputs; ``stream``: past the caches,
        from the registers where ``vectors`` (``row_vectors.vector_outputs``) suits the
        range, else through L1 chunk buffers."""
        with b.if_else(stream) as (streamed, cached):
            with streamed:
                if vectors is None:
                    self.stream_chunks(b, outputs, pointers, state, lo, hi)
                else:
                    with b.if_else(fits_vectors(b, self, pointers, lo, hi)) as (fits, other):
                        with fits:
                            write_vectors(b, self, vectors, outputs, pointers, state, lo, hi)
                        with other:
                            self.stream_chunks(b, outputs, pointers, state, lo, hi)
            with cached:
                b.call(outputs, pointers + [state, lo, hi])

    def stream_chunks(self, b: ir.IRBuilder, outputs: ir.Function, pointers: list,
                      state: ir.Value, lo: ir.Value, hi: ir.Value) -> None:
        """Elements [lo, hi) of the element-level outputs through L1 chunk buffers
        (``row_memory.stream_outputs``)."""
        spec, n_in = self.spec, len(self.array_inputs)
        types = [memory_type(spec.inputs[i].dtype) for i in self.array_inputs] + \
            [memory_type(spec.value_dtype(v)) for v in spec.outputs] + \
            [llvm_type(spec.value_dtype(v)) for v in self.cached]
        stream_outputs(b, outputs, pointers, types, [n_in + j for j, v in enumerate(
            spec.outputs) if self.levels[v]], state, lo, hi)

    def add_later_chunks(self, b: ir.IRBuilder, reductions: list[int], tree: ir.Function,
                         rowptrs: ir.Value, state: ir.Value, n: ir.Value) -> None:
        """The reductions of a row's chunks after the first, added in order to the first's
        (NumPy's buffered loop: ``out += pairwise(chunk)`` for each buffer of a cast)."""
        results = stack_slot(b, ir.ArrayType(I64, len(reductions)))

        def chunk(b: ir.IRBuilder, start: ir.Value, end: ir.Value) -> None:
            b.call(tree, [rowptrs, state, start, b.sub(end, start), results])
            for j, r in enumerate(reductions):
                op = self._op(r)
                ty = llvm_type(op.dtype)
                slot = self.state_slot(b, state, r)
                b.store(emit_combine(b, op.op, op.dtype, b.load(slot, typ=ty),
                                     b.load(element(b, results, i64(j), I64), typ=ty)), slot)

        interruptible_blocks(b, i64(BUFFER), n, BUFFER, chunk, self.parallel)

    def build_row(self) -> ir.Function:
        """A row: with scratch buffers for the cached values when it fits them (a
        pipelined kernel's task runs those rows itself, ``row_pipeline``)."""
        plain = self.build_row_variant(False)
        if not self.cached or pipelines(self):
            return plain
        with_scratch = self.build_row_variant(True)
        fn = self.function(f"{self.name}_row_dispatch", [PTR, PTR, I64, I1])
        rowptrs, state, n, stream = fn.args
        b = ir.IRBuilder(fn.append_basic_block())
        with b.if_else(b.icmp_signed("<=", n, i64(SCRATCH_ELEMENTS))) as (short, long):
            with short:
                slots = stack_slot(b, ir.ArrayType(PTR, self.n_slots))
                for k in range(self.n_operands):
                    b.store(b.load(element(b, rowptrs, i64(k), PTR), typ=PTR),
                            element(b, slots, i64(k), PTR))
                for j, v in enumerate(self.cached):
                    buffer = stack_slot(b, ir.ArrayType(llvm_type(self.spec.value_dtype(v)),
                                                        SCRATCH_ELEMENTS))
                    b.store(buffer, element(b, slots, i64(self.n_operands + j), PTR))
                b.call(with_scratch, [slots, state, n, stream])
            with long:
                b.call(plain, [rowptrs, state, n, stream])
        b.ret_void()
        return fn

    # ------------------------------------------------------------------ rows, entry
    def build_rows_task(self, row: ir.Function, pipeline: Pipeline | None) -> ir.Function:
        """``rows(context, begin, end)``: rows [begin, end), the pool's task (``row``
        each; ``pipeline``: rows that fit the scratch buffers pipelined instead)."""
        spec = self.spec
        fn, b, bases, block, status, state = self.task_prologue(f"{self.name}_rows")
        _, begin, end = fn.args
        n = b.load(element(b, block, i64(1), I64), typ=I64)
        strides = [b.load(element(b, block, i64(2 + k), I64), typ=I64)
                   for k in range(self.n_operands)]
        rowptrs = stack_slot(b, ir.ArrayType(PTR, self.n_operands))
        stopped = stack_slot(b, I32, ir.Constant(I32, 0))
        if spec.strided:   # the block's strided fields follow the row strides
            for j in range(len(strided_fields(len(self.array_inputs)))):
                field = element(b, block, i64(2 + self.n_operands + j), I64)
                b.store(b.load(field, typ=I64), self.strided_slot(b, state, j))
        prefetched = prefetched_operands(spec, self.array_inputs)
        prefetch = prefetching(b, prefetched, b.load(block, typ=I64), n)
        stream = streaming(b, spec, self.levels, b.load(block, typ=I64), n)
        ahead = rows_ahead(any(self.levels[v] and self._op(v).op in MATH_FUNCTIONS
                               for v in range(self.n_in, len(self.levels))))

        def fill(b: ir.IRBuilder, r: ir.Value, rowptrs: ir.Value, state: ir.Value,
                 prefetched_here: bool = True) -> None:
            if prefetched_here:
                following = b.add(r, i64(ahead))
                with b.if_then(b.and_(prefetch, b.icmp_signed("<", following, end))):
                    prefetch_next_row(b, prefetched, bases, strides, following, n)
            for k in range(self.n_operands):
                at = b.gep(bases[k], [b.mul(r, strides[k])], source_etype=ir.IntType(8))
                b.store(at, element(b, rowptrs, i64(k), PTR))
                if k < len(self.array_inputs) and self.array_inputs[k] in spec.row_inputs:
                    i = self.array_inputs[k]
                    b.store(load_value(b, at, spec.inputs[i].dtype),
                            self.state_slot(b, state, i))

        def rows(visit) -> None:
            def one(b: ir.IRBuilder, r: ir.Value) -> None:
                if not self.parallel:   # no runtime: nothing to check for Ctrl-C
                    visit(b, r)
                    return
                pending = declare_function(self.module, INTERRUPT_PENDING, I32, [])
                with b.if_then(b.icmp_signed("==", b.srem(r, i64(INTERRUPT_ROWS)), i64(0))):
                    b.store(b.call(pending, []), stopped)
                with b.if_then(b.icmp_unsigned("==", b.load(stopped, typ=I32),
                                               ir.Constant(I32, 0))):
                    visit(b, r)

            loop(b, begin, end, one)

        def upcoming(b: ir.IRBuilder, r: ir.Value) -> ir.Value:
            """The pointers of the row to prefetch while row ``r`` runs, or null."""
            following, slots = b.add(r, i64(ahead)), rowptrs   # rowptrs: unused then
            for k in range(self.n_operands):
                at = b.gep(bases[k], [b.mul(following, strides[k])], source_etype=ir.IntType(8))
                b.store(at, element(b, slots, i64(k), PTR))
            return b.select(b.and_(prefetch, b.icmp_signed("<", following, end)),
                            slots, ir.Constant(PTR, None))

        def plain(b: ir.IRBuilder, r: ir.Value) -> None:
            fill(b, r, rowptrs, state)
            b.call(row, [rowptrs, state, n, stream])

        if pipeline is None:
            rows(plain)
        else:
            with b.if_else(b.icmp_signed("<=", n, i64(SCRATCH_ELEMENTS))) as (short, long):
                with short:
                    emit_pipelined_rows(self, b, pipeline, state, n, stream, SCRATCH_ELEMENTS,
                                        fill, upcoming, rows)
                with long:
                    rows(plain)
        if streamed_outputs(spec, self.levels):
            with b.if_then(stream):
                store_fence(b)
        if self.parallel:   # a row may have been cut short (reduction_interrupts)
            stop = b.or_(b.icmp_unsigned("!=", b.load(stopped, typ=I32), ir.Constant(I32, 0)),
                         emit_pending(b))
            with b.if_then(stop):   # the job runs again: this run's results and flags go
                b.atomic_rmw("or", status, ir.Constant(I32, 1 << STATUS_RESUME_SHIFT),
                             "monotonic")
                self.clear_fp_status(b)
        self.collect_fp_status(b, status)
        b.ret_void()
        return fn

    def build_entry(self, task: ir.Function) -> None:
        spec = self.spec
        fn, b, context, block, status = self.entry_prologue()
        rows = b.load(block, typ=I64)
        if self.parallel:   # a long job makes sure that Ctrl-C reaches it
            elements = b.mul(rows, b.load(element(b, block, i64(1), I64), typ=I64))
            with b.if_then(b.icmp_signed(">=", elements, i64(WATCH_INTERRUPTS_MIN))):
                b.call(declare_function(self.module, WATCH_INTERRUPTS, ir.VoidType(), []), [])
        if not self.parallel or spec.full:
            b.call(task, [context, i64(0), rows])
        else:
            with b.if_else(b.icmp_signed("==", rows, i64(1))) as (single, several):
                with single:   # one row: called here, so its tree may split across threads
                    b.call(task, [context, i64(0), rows])
                with several:
                    n = b.load(element(b, block, i64(1), I64), typ=I64)
                    work = b.mul(b.add(n, i64(1)), i64(len(self.passes) + 1))
                    grain = b.add(b.sdiv(i64(_PARALLEL_WORK), work), i64(1))
                    self.call_parallel_for(b, task, context, rows, grain)
        b.ret(b.zext(b.load(status, typ=I32), I64))


def build_row_kernel_module(spec: RowKernelSpec, name: str, parallel: bool) -> ir.Module:
    """The row kernel for ``spec`` with entry point ``name``; ``parallel``: the runtime's
    thread pool is there to call."""
    kb = _RowKernelBuilder(spec, name, parallel)
    kb.build_entry(kb.build_rows_task(kb.build_row(),
                                      build_pipeline(kb) if pipelines(kb) else None))
    return kb.module
