"""The N-d iteration driver shared by every elementwise kernel, compiled once per process.

A kernel module contains only what depends on its ops: a vectorized ``body`` over
contiguous element ranges and a small entry point that fills a ``Job``. Everything that
depends on shapes and strides lives here, once: reading the operands from their
``PyArrayObject``s, choosing the flat path, broadcasting, dimension collapsing, row
iteration with chunked gather/scatter for non-unit strides, streaming large outputs past
the cache, and splitting the work into blocks that the pool's threads claim. Generated per
kernel, that machinery made a two-op kernel compile as slowly as gelu (~20 ms of O3); here
it is compiled once, in the engine's quick mode (scalar cleanups and FastISel: ~10 ms
instead of ~300 ms at O3).

Body ABI: ``void body(ptr *pointers, void *scalars, i64 begin, i64 end, i64 *prefetch,
i64 rows, i64 *row_strides)`` processes elements ``[begin, end)`` of ``rows`` rows of
contiguous operands; row r of operand k has its element 0 at ``pointers[k] + r *
row_strides[k]`` (bytes). ``prefetch`` is NULL or, per operand, the byte distance at which
the body prefetches what it reads (the same place in the next row; 0: nothing to
prefetch).

The driver returns a status word (``STATUS_*``): the floating-point exception flags that
the job raised on any of its threads (MXCSR's sticky status bits, cleared when a thread
starts its part of the job and collected when it ends), and whether the job stopped early
for Ctrl-C (``tsjit_interrupt_pending``, checked before each block is claimed: a long job
is always cut into blocks, on one thread too). Stopped early, the blocks before the resume
point are done and none after it has begun: calling the driver again with ``JOB_START``
at the resume point finishes the job. A job with no element says whether an operand had
some (``STATUS_EMPTY_JOB``).
"""

from __future__ import annotations

from llvmlite import ir

from tsjit.codegen import fp_status
from tsjit.codegen.elementwise_copies import LINE, copy_strided, store_fence, stream_copy
from tsjit.codegen.ir_util import (
    ARRAY_DATA_OFFSET,
    ARRAY_DIMS_OFFSET,
    ARRAY_FLAGS_OFFSET,
    ARRAY_STRIDES_OFFSET,
    C_CONTIGUOUS,
    F_CONTIGUOUS,
    I1,
    I8,
    I32,
    I64,
    PTR,
    VOID,
    declare_function,
    element,
    i64,
    indirect_call,
    load_field,
    loop,
    stack_slot,
    tuple_item,
)
from tsjit.codegen.kernel_abi import (
    DRIVER_SYMBOL,
    PARALLEL_FOR,
    STATUS_EMPTY_JOB,
    STATUS_RESUME_SHIFT,
)
from tsjit.codegen.kernel_spec import MAX_OPERANDS, MAX_RANK

__all__ = [
    "ACCESS_READ",
    "ACCESS_WRITE",
    "BODY_TYPE",
    "JOB_TYPE",
    "OPERAND_INFO_TYPE",
    "build_driver_module",
]

# Elements per chunk of a strided row, gathered into per-operand stack buffers.
CHUNK = 256
# Write-only outputs (fresh ones, or ``out[...] = ...``) of a job that writes at least
# STREAM_MIN_OUTPUT bytes and touches at least STREAM_MIN_TOTAL are streamed: computed into
# a stack buffer, then written with non-temporal stores, which skip reading each line of
# the destination first (a quarter of a*x+y's memory traffic) and do not evict the inputs.
# A job whose data mostly fits in the last-level cache (32 MB here) is faster without: its
# output stays in cache for the next call or the next reader, where a streamed one goes to
# DRAM (ns per element: bias+relu [4096,1024] 0.12 plain vs 0.25 streamed, [6144,1024]
# 0.14 vs 0.23; a*x+y 16M float32, 192 MB touched: 0.30 plain vs 0.17 streamed).
STREAM_MIN_OUTPUT = 16 << 20
STREAM_MIN_TOTAL = 96 << 20
STREAM_CHUNK = 512  # elements per streamed chunk (4 KiB of float64 per operand)
# A row-path job touching at least this much memory (more than the caches keep between
# calls) prefetches the next row of operands whose rows are not adjacent in memory (slices
# of wider arrays: the LSTM cell's gate views). The hardware prefetcher restarts on every
# such row and leaves the start of each to demand misses: LSTM cell B=1024 H=1024 ran at
# 2.1 ns per element with its gate views, 1.5 with contiguous gates, 1.6 prefetching.
PREFETCH_MIN_TOTAL = 16 << 20
ACCESS_READ, ACCESS_WRITE = 1, 2
GET_NUM_THREADS = "tsjit_get_num_threads"
WATCH_INTERRUPTS = "tsjit_watch_interrupts"
INTERRUPT_PENDING = "tsjit_interrupt_pending"
# Jobs of at least this many items (rows or elements) make sure that Ctrl-C reaches them
# (tsjit_watch_interrupts, a system call): a shorter job ends soon enough on its own.
WATCH_INTERRUPTS_MIN = 1 << 20
# A parallel job is cut into about this many blocks per thread, claimed one at a time: a
# thread that shares its core with another process (or starts late) takes fewer blocks
# instead of setting the job's time, and the finishing tail is one block long.
BLOCKS_PER_THREAD = 16
# A block is at most this many grains (parallel_min's work: ~2**18 adds, ~0.1 ms), so
# that Ctrl-C, checked between blocks, stops the longest kernels within ~10 ms.
MAX_BLOCK_GRAINS = 64
# Flat blocks start at multiples of this many elements (whole cache lines for every dtype),
# so threads do not write the same line and each block's vector loop has no odd start.
FLAT_BLOCK_ALIGN = 64

BODY_TYPE = ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64, PTR, I64, PTR])
NO_PREFETCH = ir.Constant(PTR, None)
# Per operand: itemsize, rank, access bits. A kernel module holds a constant array of these.
OPERAND_INFO_TYPE = ir.LiteralStructType([I64, I64, I64])
# Field numbers of JOB_TYPE.
(
    JOB_BODY, JOB_SCALARS, JOB_OPERANDS, JOB_N_OPERANDS, JOB_RANK, JOB_INFO, JOB_OUT_OPERAND,
    JOB_PARALLEL_MIN, JOB_DATA, JOB_SHAPE, JOB_STRIDES, JOB_TASK, JOB_ITEMS, JOB_BLOCK,
    JOB_NEXT_BLOCK, JOB_STREAM, JOB_PREFETCH, JOB_START, JOB_INTERRUPTED, JOB_FP_STATUS,
) = range(20)
JOB_TYPE = ir.LiteralStructType(
    [
        PTR,  # body
        PTR,  # kernel-specific scalar block
        PTR,  # PyTupleObject* of the array operands (array inputs, then fresh outputs)
        I64,  # number of operands
        I64,  # rank of the iteration space
        PTR,  # OPERAND_INFO_TYPE[n_operands]
        I64,  # operand whose shape is the iteration space (an output)
        I64,  # elements of work below which the job runs on the calling thread
        ir.ArrayType(PTR, MAX_OPERANDS),  # data pointers
        ir.ArrayType(I64, MAX_RANK),  # collapsed shape (filled by the driver)
        ir.ArrayType(I64, MAX_OPERANDS * MAX_RANK),  # collapsed byte strides [k][d]
        PTR,  # task run over the blocks of a parallel job: rows or flat elements
        I64,  # items (rows or elements) of the parallel job
        I64,  # items per block
        I64,  # next block to claim (atomic)
        I1,  # write-only outputs are streamed (STREAM_MIN_OUTPUT)
        I1,  # rows prefetch the next row of their operands (PREFETCH_MIN_TOTAL)
        I64,  # first item to run (0, or where a job stopped by Ctrl-C resumes)
        I32,  # a block-split job stopped claiming blocks for Ctrl-C (atomic)
        I32,  # floating-point status flags raised by the job's threads (atomic or)
    ]
)


class _Driver:
    """Emits the driver functions into one module."""

    def __init__(self, parallel: bool) -> None:
        self.module = ir.Module(name="tsjit_elementwise_driver")
        self.parallel = parallel
        self.fp_status = fp_status.supported()

    def _function(self, name: str, args: list[ir.Type], internal: bool,
                  result: ir.Type = VOID) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(result, args), name=name)
        fn.attributes.add("nounwind")
        if internal:
            fn.linkage = "internal"
        return fn

    # ------------------------------------------------------------------ job access
    @staticmethod
    def field(b: ir.IRBuilder, job: ir.Value, *path) -> ir.Value:
        indices = [ir.Constant(I32, 0)] + [
            p if isinstance(p, ir.Value) else ir.Constant(I32, p) for p in path
        ]
        return b.gep(job, indices, source_etype=JOB_TYPE, inbounds=True)

    def get(self, b: ir.IRBuilder, job: ir.Value, ty: ir.Type, *path) -> ir.Value:
        return b.load(self.field(b, job, *path), typ=ty)

    def stride_slot(self, b: ir.IRBuilder, job: ir.Value, k: ir.Value, d: ir.Value):
        return self.field(b, job, JOB_STRIDES, b.add(b.mul(k, i64(MAX_RANK)), d))

    def info(self, b: ir.IRBuilder, job: ir.Value, k: ir.Value, item: int) -> ir.Value:
        table = self.get(b, job, PTR, JOB_INFO)
        address = b.gep(table, [k, ir.Constant(I32, item)], source_etype=OPERAND_INFO_TYPE)
        return b.load(address, typ=I64)

    # ------------------------------------------------------------------ entry
    def build(self) -> ir.Module:
        flat_task = self.build_flat_task()
        stream_task = self.build_streaming_flat_task()
        rows_task = self.build_rows_task()
        self.claim_task = self.build_claim_task() if self.parallel else None
        fn = self._function(DRIVER_SYMBOL, [PTR], internal=False, result=I64)
        b = ir.IRBuilder(fn.append_basic_block())
        job = fn.args[0]
        b.store(ir.Constant(I32, 0), self.field(b, job, JOB_INTERRUPTED))
        b.store(ir.Constant(I32, 0), self.field(b, job, JOB_FP_STATUS))
        self.clear_fp_status(b)
        n_operands = self.get(b, job, I64, JOB_N_OPERANDS)
        rank = self.get(b, job, I64, JOB_RANK)
        operands = self.get(b, job, PTR, JOB_OPERANDS)

        def read_data_pointer(b: ir.IRBuilder, k: ir.Value) -> None:
            data = load_field(b, tuple_item(b, operands, k), ARRAY_DATA_OFFSET, PTR)
            b.store(data, self.field(b, job, JOB_DATA, k))

        loop(b, i64(0), n_operands, read_data_pointer)
        out = tuple_item(b, operands, self.get(b, job, I64, JOB_OUT_OPERAND))
        out_dims = load_field(b, out, ARRAY_DIMS_OFFSET, PTR)
        size = stack_slot(b, I64, i64(1))
        loop(b, i64(0), rank, lambda b, d: b.store(
            b.mul(b.load(size, typ=I64), b.load(element(b, out_dims, d, I64), typ=I64)), size))
        n = b.load(size, typ=I64)
        with b.if_then(b.icmp_signed("==", n, i64(0))):
            filled = b.icmp_signed(">", self.operand_bytes(b, job, operands), i64(0))
            b.ret(b.select(filled, i64(STATUS_EMPTY_JOB), i64(0)))
        parallel_min = self.get(b, job, I64, JOB_PARALLEL_MIN)
        self.decide_streaming(b, job, operands, n)
        streamed = self.get(b, job, I1, JOB_STREAM)
        with b.if_else(self.is_flat(b, job, operands, out_dims)) as (flat, strided):
            with flat:
                with b.if_else(streamed) as (stream, plain):
                    with stream:
                        self.dispatch(b, stream_task, job, n, parallel_min, FLAT_BLOCK_ALIGN)
                    with plain:
                        self.dispatch(b, flat_task, job, n, parallel_min, FLAT_BLOCK_ALIGN)
            with strided:
                b.store(b.icmp_signed(">=", self.operand_bytes(b, job, operands),
                                      i64(PREFETCH_MIN_TOTAL)), self.field(b, job, JOB_PREFETCH))
                self.fill_strides(b, job, operands, out_dims)
                self.collapse(b, job)
                inner = self.get(b, job, I64, JOB_SHAPE, b.sub(rank, i64(1)))
                grain = b.add(b.sdiv(parallel_min, inner), i64(1))
                self.dispatch(b, rows_task, job, b.sdiv(n, inner), grain, 1)
        self.collect_fp_status(b, job)
        b.ret(self.status(b, job))
        return self.module

    def status(self, b: ir.IRBuilder, job) -> ir.Value:
        """The driver's result (see the module docstring)."""
        flags = b.zext(self.get(b, job, I32, JOB_FP_STATUS), I64)
        if not self.parallel:
            return flags
        stopped = b.icmp_unsigned("!=", self.get(b, job, I32, JOB_INTERRUPTED),
                                  ir.Constant(I32, 0))
        items = self.get(b, job, I64, JOB_ITEMS)
        claimed = b.mul(self.get(b, job, I64, JOB_NEXT_BLOCK), self.get(b, job, I64, JOB_BLOCK))
        done = _min(b, b.add(self.get(b, job, I64, JOB_START), claimed), items)
        resume = b.shl(b.add(done, i64(1)), i64(STATUS_RESUME_SHIFT))
        unfinished = b.and_(stopped, b.icmp_signed("<", done, items))
        return b.or_(flags, b.select(unfinished, resume, i64(0)))

    def clear_fp_status(self, b: ir.IRBuilder) -> None:
        if self.fp_status:
            fp_status.clear(b)

    def collect_fp_status(self, b: ir.IRBuilder, job) -> None:
        """Or this thread's floating-point status flags into the job's."""
        if self.fp_status:
            b.atomic_rmw("or", self.field(b, job, JOB_FP_STATUS), fp_status.read(b), "monotonic")

    def is_flat(self, b: ir.IRBuilder, job, operands, out_dims) -> ir.Value:
        """Every operand has the iteration shape and all are C- or all F-contiguous: element
        i of each is at byte i * itemsize, so one flat loop covers the job."""
        rank = self.get(b, job, I64, JOB_RANK)
        same_shape = stack_slot(b, I1, ir.Constant(I1, 1))
        flags = stack_slot(b, I32, ir.Constant(I32, C_CONTIGUOUS | F_CONTIGUOUS))

        def check_operand(b: ir.IRBuilder, k: ir.Value) -> None:
            obj = tuple_item(b, operands, k)
            b.store(b.and_(b.load(flags, typ=I32), load_field(b, obj, ARRAY_FLAGS_OFFSET, I32)),
                    flags)
            full_rank = b.icmp_signed("==", self.info(b, job, k, 1), rank)
            with b.if_else(full_rank) as (compare, broadcast):
                with compare:
                    dims = load_field(b, obj, ARRAY_DIMS_OFFSET, PTR)

                    def compare_dim(b: ir.IRBuilder, d: ir.Value) -> None:
                        equal = b.icmp_signed("==", b.load(element(b, dims, d, I64), typ=I64),
                                              b.load(element(b, out_dims, d, I64), typ=I64))
                        b.store(b.and_(b.load(same_shape, typ=I1), equal), same_shape)

                    loop(b, i64(0), rank, compare_dim)
                with broadcast:
                    b.store(ir.Constant(I1, 0), same_shape)

        loop(b, i64(0), self.get(b, job, I64, JOB_N_OPERANDS), check_operand)
        contiguous = b.icmp_unsigned("!=", b.load(flags, typ=I32), ir.Constant(I32, 0))
        return b.and_(b.load(same_shape, typ=I1), contiguous)

    def fill_strides(self, b: ir.IRBuilder, job, operands, out_dims) -> None:
        """Iteration shape and per-operand byte strides, right-aligned (NumPy broadcasting):
        missing and size-1 dimensions of an operand get stride 0. Fortran-ordered outputs
        are iterated with their dimensions reversed, so rows run along memory."""
        rank = self.get(b, job, I64, JOB_RANK)
        loop(b, i64(0), rank, lambda b, d: b.store(
            b.load(element(b, out_dims, d, I64), typ=I64), self.field(b, job, JOB_SHAPE, d)))

        def operand_strides(b: ir.IRBuilder, k: ir.Value) -> None:
            obj = tuple_item(b, operands, k)
            dims = load_field(b, obj, ARRAY_DIMS_OFFSET, PTR)
            strides = load_field(b, obj, ARRAY_STRIDES_OFFSET, PTR)
            missing = b.sub(rank, self.info(b, job, k, 1))

            def one(b: ir.IRBuilder, d: ir.Value) -> None:
                slot = self.stride_slot(b, job, k, d)
                b.store(i64(0), slot)
                e = b.sub(d, missing)
                with b.if_then(b.icmp_signed(">=", e, i64(0))):  # 0-d arrays: dims is NULL
                    extent = b.load(element(b, dims, e, I64), typ=I64)
                    stride = b.load(element(b, strides, e, I64), typ=I64)
                    used = b.icmp_signed("!=", extent, i64(1))
                    b.store(b.select(used, stride, i64(0)), slot)

            with b.if_then(b.icmp_signed(">", rank, i64(0))):
                loop(b, i64(0), rank, one)

        n_operands = self.get(b, job, I64, JOB_N_OPERANDS)
        loop(b, i64(0), n_operands, operand_strides)
        out_k = self.get(b, job, I64, JOB_OUT_OPERAND)
        last = b.sub(rank, i64(1))
        first_stride = _abs(b, b.load(self.stride_slot(b, job, out_k, i64(0)), typ=I64))
        last_stride = _abs(b, b.load(self.stride_slot(b, job, out_k, last), typ=I64))
        with b.if_then(b.icmp_unsigned("<", first_stride, last_stride)):

            def swap(b: ir.IRBuilder, d: ir.Value) -> None:
                mirror = b.sub(last, d)
                _swap(b, self.field(b, job, JOB_SHAPE, d), self.field(b, job, JOB_SHAPE, mirror))
                loop(b, i64(0), n_operands, lambda b, k: _swap(
                    b, self.stride_slot(b, job, k, d), self.stride_slot(b, job, k, mirror)))

            loop(b, i64(0), b.sdiv(rank, i64(2)), swap)

    def collapse(self, b: ir.IRBuilder, job) -> None:
        """Merge adjacent dimensions that are contiguous for every operand and drop size-1
        ones, keeping the result right-aligned; unused leading dimensions get extent 1.
        Rows then run over the longest contiguous stretch."""
        rank = self.get(b, job, I64, JOB_RANK)
        n_operands = self.get(b, job, I64, JOB_N_OPERANDS)
        last = b.sub(rank, i64(1))
        kept = stack_slot(b, I64, last)  # position of the innermost merged dimension

        def visit(b: ir.IRBuilder, step: ir.Value) -> None:
            d = b.sub(b.sub(last, i64(1)), step)  # last-1 down to 0
            j = b.load(kept, typ=I64)
            extent_d = self.get(b, job, I64, JOB_SHAPE, d)
            extent_j = self.get(b, job, I64, JOB_SHAPE, j)
            mergeable = stack_slot(b, I1, ir.Constant(I1, 1))

            def check(b: ir.IRBuilder, k: ir.Value) -> None:
                outer = b.load(self.stride_slot(b, job, k, d), typ=I64)
                inner = b.load(self.stride_slot(b, job, k, j), typ=I64)
                ok = b.icmp_signed("==", outer, b.mul(inner, extent_j))
                b.store(b.and_(b.load(mergeable, typ=I1), ok), mergeable)

            loop(b, i64(0), n_operands, check)
            skip = b.icmp_signed("==", extent_d, i64(1))
            replace = b.and_(b.not_(skip), b.icmp_signed("==", extent_j, i64(1)))
            merge = b.and_(b.and_(b.not_(skip), b.not_(replace)), b.load(mergeable, typ=I1))
            new_slot = b.and_(b.and_(b.not_(skip), b.not_(replace)), b.not_(merge))
            target = b.select(new_slot, b.sub(j, i64(1)), j)
            b.store(target, kept)
            with b.if_then(b.not_(skip)):
                extent = b.select(merge, b.mul(extent_j, extent_d), extent_d)
                b.store(extent, self.field(b, job, JOB_SHAPE, target))
                with b.if_then(b.not_(merge)):
                    loop(b, i64(0), n_operands, lambda b, k: b.store(
                        b.load(self.stride_slot(b, job, k, d), typ=I64),
                        self.stride_slot(b, job, k, target)))

        with b.if_then(b.icmp_signed(">", rank, i64(1))):
            loop(b, i64(0), last, visit)
        j = b.load(kept, typ=I64)

        def clear(b: ir.IRBuilder, d: ir.Value) -> None:
            b.store(i64(1), self.field(b, job, JOB_SHAPE, d))
            loop(b, i64(0), n_operands,
                 lambda b, k: b.store(i64(0), self.stride_slot(b, job, k, d)))

        loop(b, i64(0), j, clear)

    def dispatch(self, b: ir.IRBuilder, task: ir.Function, job, n, grain, align: int) -> None:
        """Run task over [JOB_START, n): on the calling thread when small (or without the
        runtime), else as blocks of at least ``grain`` items (a multiple of ``align``) that
        the pool's threads claim one at a time (``build_claim_task``), checking for Ctrl-C
        before each claim. With one thread, the calling thread claims them all."""
        start = self.get(b, job, I64, JOB_START)
        if not self.parallel:
            b.call(task, [job, start, n])
            return
        left = b.sub(n, start)
        with b.if_else(b.icmp_signed(">", left, grain)) as (split, inline):
            with split:
                threads = b.sext(b.call(self.runtime_function(GET_NUM_THREADS, I32, []), []),
                                 I64)
                blocks = b.mul(threads, i64(BLOCKS_PER_THREAD))
                block = _max(b, grain, b.sdiv(b.add(left, b.sub(blocks, i64(1))), blocks))
                block = _min(b, block, b.mul(grain, i64(MAX_BLOCK_GRAINS)))
                block = b.mul(b.sdiv(b.add(block, i64(align - 1)), i64(align)), i64(align))
                for number, value in ((JOB_TASK, task), (JOB_ITEMS, n), (JOB_BLOCK, block),
                                      (JOB_NEXT_BLOCK, i64(0))):
                    b.store(value, self.field(b, job, number))
                with b.if_then(b.icmp_signed(">=", left, i64(WATCH_INTERRUPTS_MIN))):
                    b.call(self.runtime_function(WATCH_INTERRUPTS, ir.VoidType(), []), [])
                n_blocks = b.sdiv(b.add(left, b.sub(block, i64(1))), block)
                parallel_for = self.runtime_function(PARALLEL_FOR, ir.VoidType(),
                                                     [PTR, PTR, I64, I64])
                # one claim task per thread (the runtime would cut more chunks)
                b.call(parallel_for, [self.claim_task, job, _min(b, n_blocks, threads), i64(1)])
            with inline:
                b.call(task, [job, start, n])

    def one_row(self) -> list[ir.Value]:
        """The body's ``rows, row_strides`` arguments for a single row."""
        zeros = self.module.globals.get("tsjit_elementwise_zero_strides")
        if zeros is None:
            zeros = ir.GlobalVariable(self.module, ir.ArrayType(I64, MAX_OPERANDS),
                                      "tsjit_elementwise_zero_strides")
            zeros.linkage = "internal"
            zeros.global_constant = True
            zeros.initializer = ir.Constant(zeros.value_type, None)
        return [i64(1), zeros]

    def runtime_function(self, name: str, result: ir.Type, args: list[ir.Type]) -> ir.Function:
        return declare_function(self.module, name, result, args)

    def build_claim_task(self) -> ir.Function:
        """The pool's task for a block-split job: each call (at most one per thread) claims
        blocks until none is left, so its own [begin, end) only says that it is one of the
        job's participants. Before each claim it checks for Ctrl-C: once that is pending,
        no thread claims another block (``JOB_INTERRUPTED``), so the blocks done are those
        before JOB_NEXT_BLOCK. Its floating-point flags go to the job's (JOB_FP_STATUS)."""
        fn = self._function("tsjit_elementwise_claim_task", [PTR, I64, I64], internal=True)
        job = fn.args[0]
        entry, claim, claiming, run, stop, done = (
            fn.append_basic_block(name)
            for name in ("entry", "claim", "claiming", "run", "stop", "done"))
        b = ir.IRBuilder(entry)
        self.clear_fp_status(b)
        items = self.get(b, job, I64, JOB_ITEMS)
        block = self.get(b, job, I64, JOB_BLOCK)
        start = self.get(b, job, I64, JOB_START)
        task = self.get(b, job, PTR, JOB_TASK)
        pending = self.runtime_function(INTERRUPT_PENDING, I32, [])
        b.branch(claim)
        b.position_at_end(claim)
        b.cbranch(b.icmp_unsigned("!=", b.call(pending, []), ir.Constant(I32, 0)), stop, claiming)
        b.position_at_end(stop)
        b.atomic_rmw("xchg", self.field(b, job, JOB_INTERRUPTED), ir.Constant(I32, 1), "monotonic")
        b.branch(done)
        b.position_at_end(claiming)
        index = b.atomic_rmw("add", self.field(b, job, JOB_NEXT_BLOCK), i64(1), "monotonic")
        begin = b.add(start, b.mul(index, block))
        b.cbranch(b.icmp_signed("<", begin, items), run, done)
        b.position_at_end(run)
        end = b.add(begin, block)
        end = b.select(b.icmp_signed("<", end, items), end, items)
        indirect_call(b, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]), task,
                      [job, begin, end])
        b.branch(claim)
        b.position_at_end(done)
        self.collect_fp_status(b, job)
        b.ret_void()
        return fn

    # ------------------------------------------------------------------ tasks
    def build_flat_task(self) -> ir.Function:
        fn = self._function("tsjit_elementwise_flat_task", [PTR, I64, I64], internal=True)
        b = ir.IRBuilder(fn.append_basic_block())
        job = fn.args[0]
        body = self.get(b, job, PTR, JOB_BODY)
        scalars = self.get(b, job, PTR, JOB_SCALARS)
        data = self.field(b, job, JOB_DATA, 0)
        indirect_call(b, BODY_TYPE, body,
                      [data, scalars, fn.args[1], fn.args[2], NO_PREFETCH, *self.one_row()])
        b.ret_void()
        return fn

    def is_streamed(self, b: ir.IRBuilder, job, k) -> ir.Value:
        """Operand k is written and never read: a fresh output, or ``out[...] = ...``."""
        return b.icmp_signed("==", self.info(b, job, k, 2), i64(ACCESS_WRITE))

    def decide_streaming(self, b: ir.IRBuilder, job, operands, n) -> None:
        """Set JOB_STREAM (see STREAM_MIN_OUTPUT); operand sizes are only counted for jobs
        whose output is large enough."""
        n_operands = self.get(b, job, I64, JOB_N_OPERANDS)
        output_bytes = stack_slot(b, I64, i64(0))
        loop(b, i64(0), n_operands, lambda b, k: b.store(
            b.add(b.load(output_bytes, typ=I64),
                  b.select(self.is_streamed(b, job, k), self.info(b, job, k, 0), i64(0))),
            output_bytes))
        large = b.icmp_signed(">=", b.mul(n, b.load(output_bytes, typ=I64)),
                              i64(STREAM_MIN_OUTPUT))
        b.store(large, self.field(b, job, JOB_STREAM))
        with b.if_then(large):
            total = self.operand_bytes(b, job, operands)
            b.store(b.icmp_signed(">=", total, i64(STREAM_MIN_TOTAL)),
                    self.field(b, job, JOB_STREAM))

    def operand_bytes(self, b: ir.IRBuilder, job, operands) -> ir.Value:
        """Bytes of all operands (each at its own size, not broadcast)."""
        total = stack_slot(b, I64, i64(0))

        def add_operand(b: ir.IRBuilder, k: ir.Value) -> None:
            dims = load_field(b, tuple_item(b, operands, k), ARRAY_DIMS_OFFSET, PTR)
            size = stack_slot(b, I64, self.info(b, job, k, 0))
            loop(b, i64(0), self.info(b, job, k, 1), lambda b, d: b.store(
                b.mul(b.load(size, typ=I64), b.load(element(b, dims, d, I64), typ=I64)), size))
            b.store(b.add(b.load(total, typ=I64), b.load(size, typ=I64)), total)

        loop(b, i64(0), self.get(b, job, I64, JOB_N_OPERANDS), add_operand)
        return b.load(total, typ=I64)

    def build_streaming_flat_task(self) -> ir.Function:
        """The flat task for large outputs: chunks of the body's output land in a stack
        buffer (hot in L1) and are streamed to memory (``stream_copy``). Chunks are cut
        where the first output's address is line-aligned, so its copies are whole lines."""
        fn = self._function("tsjit_elementwise_streaming_task", [PTR, I64, I64], internal=True)
        b = ir.IRBuilder(fn.append_basic_block())
        job, begin, end = fn.args
        n_operands = self.get(b, job, I64, JOB_N_OPERANDS)
        body = self.get(b, job, PTR, JOB_BODY)
        scalars = self.get(b, job, PTR, JOB_SCALARS)
        buffers_type = ir.ArrayType(ir.ArrayType(I64, STREAM_CHUNK), MAX_OPERANDS)
        with b.goto_entry_block():
            buffers = b.alloca(buffers_type)
            buffers.align = LINE
        buffers.type = PTR
        pointers = stack_slot(b, ir.ArrayType(PTR, MAX_OPERANDS))
        out_k = self.get(b, job, I64, JOB_OUT_OPERAND)
        out_size = self.info(b, job, out_k, 0)
        # Elements before the first output's next line boundary (its itemsize divides 64).
        out_address = b.ptrtoint(self.get(b, job, PTR, JOB_DATA, out_k), I64)
        misalignment = b.and_(b.add(out_address, b.mul(begin, out_size)), i64(LINE - 1))
        lead = b.sdiv(b.and_(b.sub(i64(LINE), misalignment), i64(LINE - 1)), out_size)
        start = stack_slot(b, I64, begin)
        first_end = b.add(begin, lead)
        chunk_end = stack_slot(b, I64, b.select(b.icmp_signed("<", first_end, end),
                                                first_end, end))

        def chunk(b: ir.IRBuilder) -> None:
            at, stop = b.load(start, typ=I64), b.load(chunk_end, typ=I64)
            length = b.sub(stop, at)

            def place(b: ir.IRBuilder, k: ir.Value):
                address = b.gep(self.get(b, job, PTR, JOB_DATA, k),
                                [b.mul(at, self.info(b, job, k, 0))], source_etype=I8)
                return address, b.gep(buffers, [i64(0), k], source_etype=buffers_type)

            def stage(b: ir.IRBuilder, k: ir.Value) -> None:
                address, buffer = place(b, k)
                b.store(b.select(self.is_streamed(b, job, k), buffer, address),
                        element(b, pointers, k, PTR))

            def stream_out(b: ir.IRBuilder, k: ir.Value) -> None:
                with b.if_then(self.is_streamed(b, job, k)):
                    address, buffer = place(b, k)
                    stream_copy(b, address, buffer, b.mul(length, self.info(b, job, k, 0)))

            loop(b, i64(0), n_operands, stage)
            indirect_call(b, BODY_TYPE, body,
                          [pointers, scalars, i64(0), length, NO_PREFETCH, *self.one_row()])
            loop(b, i64(0), n_operands, stream_out)
            b.store(stop, start)
            following = b.add(stop, i64(STREAM_CHUNK))
            b.store(b.select(b.icmp_signed("<", following, end), following, end), chunk_end)

        _while(b, lambda b: b.icmp_signed("<", b.load(start, typ=I64), end), chunk)
        store_fence(b)
        b.ret_void()
        return fn

    def next_row_distances(self, b: ir.IRBuilder, job, inner) -> ir.Value:
        """The body's ``prefetch`` argument for whole rows: per operand the distance to its
        next row when it is read and its rows are not adjacent; NULL when no operand has
        such rows or the job is small (``JOB_PREFETCH``)."""
        rank = self.get(b, job, I64, JOB_RANK)
        n_operands = self.get(b, job, I64, JOB_N_OPERANDS)
        distances = stack_slot(b, ir.ArrayType(I64, MAX_OPERANDS))
        any_gapped = stack_slot(b, I1, ir.Constant(I1, 0))
        wanted = b.and_(self.get(b, job, I1, JOB_PREFETCH), b.icmp_signed(">=", rank, i64(2)))
        with b.if_then(wanted):
            outer = b.sub(rank, i64(2))

            def distance(b: ir.IRBuilder, k: ir.Value) -> None:
                stride = b.load(self.stride_slot(b, job, k, outer), typ=I64)
                row_bytes = b.mul(inner, self.info(b, job, k, 0))
                reads = b.icmp_signed("!=", b.and_(self.info(b, job, k, 2), i64(ACCESS_READ)),
                                      i64(0))
                moving = b.and_(reads, b.icmp_signed("!=", stride, i64(0)))
                gapped = b.and_(moving, b.icmp_signed("!=", stride, row_bytes))
                b.store(b.select(moving, stride, i64(0)), element(b, distances, k, I64))
                b.store(b.or_(b.load(any_gapped, typ=I1), gapped), any_gapped)

            loop(b, i64(0), n_operands, distance)
        return b.select(b.load(any_gapped, typ=I1), distances, NO_PREFETCH)

    def build_rows_task(self) -> ir.Function:
        """Rows [begin, end) of the collapsed iteration space, stepped through with an
        odometer (per-operand offsets advance by strides; no division per row). Rows whose
        operands are all contiguous along the row run whole. Otherwise they run in chunks:
        operands with a non-unit stride along the row are gathered into (outputs scattered
        from) stack buffers, so the kernel's vectorized body serves every layout, and
        streamed outputs (``JOB_STREAM``) are staged and written with ``stream_copy``."""
        fn = self._function("tsjit_elementwise_rows_task", [PTR, I64, I64], internal=True)
        b = ir.IRBuilder(fn.append_basic_block())
        job, begin, end = fn.args
        rank = self.get(b, job, I64, JOB_RANK)
        n_operands = self.get(b, job, I64, JOB_N_OPERANDS)
        body = self.get(b, job, PTR, JOB_BODY)
        scalars = self.get(b, job, PTR, JOB_SCALARS)
        stream = self.get(b, job, I1, JOB_STREAM)
        buffers_type = ir.ArrayType(ir.ArrayType(I64, CHUNK), MAX_OPERANDS)
        buffers = stack_slot(b, buffers_type)
        pointers = stack_slot(b, ir.ArrayType(PTR, MAX_OPERANDS))
        offsets = stack_slot(b, ir.ArrayType(I64, MAX_OPERANDS))
        coords = stack_slot(b, ir.ArrayType(I64, MAX_RANK))
        last = b.sub(rank, i64(1))
        inner = self.get(b, job, I64, JOB_SHAPE, last)
        n_chunks = b.sdiv(b.add(inner, i64(CHUNK - 1)), i64(CHUNK))
        all_direct = stack_slot(b, I1, b.not_(stream))
        loop(b, i64(0), n_operands, lambda b, k: b.store(b.and_(
            b.load(all_direct, typ=I1),
            b.icmp_signed("==", b.load(self.stride_slot(b, job, k, last), typ=I64),
                          self.info(b, job, k, 0))), all_direct))
        whole_rows = b.load(all_direct, typ=I1)
        prefetch = self.next_row_distances(b, job, inner)

        def add_to_offsets(b: ir.IRBuilder, d: ir.Value, times: ir.Value) -> None:
            loop(b, i64(0), n_operands, lambda b, k: b.store(
                b.add(b.load(element(b, offsets, k, I64), typ=I64),
                      b.mul(times, b.load(self.stride_slot(b, job, k, d), typ=I64))),
                element(b, offsets, k, I64)))

        # The odometer's start: coordinates and offsets of row `begin`.
        loop(b, i64(0), n_operands, lambda b, k: b.store(i64(0), element(b, offsets, k, I64)))
        rest = stack_slot(b, I64, begin)

        def unravel(b: ir.IRBuilder, step: ir.Value) -> None:
            d = b.sub(b.sub(last, i64(1)), step)
            extent = self.get(b, job, I64, JOB_SHAPE, d)
            remaining = b.load(rest, typ=I64)
            coord = b.srem(remaining, extent)
            b.store(b.sdiv(remaining, extent), rest)
            b.store(coord, element(b, coords, d, I64))
            add_to_offsets(b, d, coord)

        loop(b, i64(0), last, unravel)

        def advance(b: ir.IRBuilder, rows: ir.Value) -> None:
            """Past ``rows`` rows (at most to the end of the innermost outer dimension):
            that coordinate steps by ``rows``, carrying one into outer ones."""
            dimension = stack_slot(b, I64, b.sub(last, i64(1)))
            carry = stack_slot(b, I1, b.icmp_signed(">", last, i64(0)))
            amount = stack_slot(b, I64, rows)

            def step(b: ir.IRBuilder) -> None:
                d = b.load(dimension, typ=I64)
                by = b.load(amount, typ=I64)
                coord = b.add(b.load(element(b, coords, d, I64), typ=I64), by)
                add_to_offsets(b, d, by)
                wraps = b.and_(b.icmp_signed("==", coord, self.get(b, job, I64, JOB_SHAPE, d)),
                               b.icmp_signed(">", d, i64(0)))
                with b.if_then(wraps):
                    add_to_offsets(b, d, b.neg(coord))
                b.store(b.select(wraps, i64(0), coord), element(b, coords, d, I64))
                b.store(b.sub(d, i64(1)), dimension)
                b.store(wraps, carry)
                b.store(i64(1), amount)

            _while(b, lambda b: b.load(carry, typ=I1), step)

        # Whole rows go to the body a run at a time: the rows up to the end of the
        # innermost outer dimension, which are evenly spaced (its strides).
        outer = _max(b, b.sub(last, i64(1)), i64(0))
        row_strides = stack_slot(b, ir.ArrayType(I64, MAX_OPERANDS))
        loop(b, i64(0), n_operands, lambda b, k: b.store(
            b.select(b.icmp_signed(">", last, i64(0)),
                     b.load(self.stride_slot(b, job, k, outer), typ=I64), i64(0)),
            element(b, row_strides, k, I64)))
        position = stack_slot(b, I64, begin)

        def run(b: ir.IRBuilder) -> None:
            at = b.load(position, typ=I64)
            left_in_dimension = b.sub(self.get(b, job, I64, JOB_SHAPE, outer),
                                      b.load(element(b, coords, outer, I64), typ=I64))
            rows = b.select(b.icmp_signed(">", last, i64(0)),
                            _min(b, left_in_dimension, b.sub(end, at)), b.sub(end, at))
            loop(b, i64(0), n_operands, lambda b, k: b.store(
                place(b, k, i64(0))[0], element(b, pointers, k, PTR)))
            indirect_call(b, BODY_TYPE, body,
                          [pointers, scalars, i64(0), inner, prefetch, rows, row_strides])
            advance(b, rows)
            b.store(b.add(at, rows), position)

        def row(b: ir.IRBuilder, index: ir.Value) -> None:
            loop(b, i64(0), n_chunks, lambda b, c: chunk(b, b.mul(c, i64(CHUNK))))
            advance(b, i64(1))

        def place(b: ir.IRBuilder, k: ir.Value, start: ir.Value):
            """(address of this chunk of operand k, its stride, whether it is unit)."""
            stride = b.load(self.stride_slot(b, job, k, last), typ=I64)
            offset = b.add(b.load(element(b, offsets, k, I64), typ=I64), b.mul(start, stride))
            data = self.get(b, job, PTR, JOB_DATA, k)
            direct = b.icmp_signed("==", stride, self.info(b, job, k, 0))
            return b.gep(data, [offset], source_etype=I8), stride, direct

        def chunk(b: ir.IRBuilder, start: ir.Value) -> None:
            length = b.sub(inner, start)
            length = b.select(b.icmp_signed("<", length, i64(CHUNK)), length, i64(CHUNK))

            def staging(b: ir.IRBuilder, k: ir.Value):
                address, stride, direct = place(b, k, start)
                buffer = b.gep(buffers, [i64(0), k], source_etype=buffers_type)
                streamed = b.and_(stream, b.and_(direct, self.is_streamed(b, job, k)))
                return address, stride, direct, buffer, streamed

            def stage_in(b: ir.IRBuilder, k: ir.Value) -> None:
                address, stride, direct, buffer, streamed = staging(b, k)
                reads = b.and_(self.info(b, job, k, 2), i64(ACCESS_READ))
                gather = b.and_(b.not_(direct), b.icmp_signed("!=", reads, i64(0)))
                with b.if_then(gather):
                    copy_strided(b, "gather", buffer, address, stride, self.info(b, job, k, 0),
                                 length)
                staged = b.or_(b.not_(direct), streamed)
                b.store(b.select(staged, buffer, address), element(b, pointers, k, PTR))

            def stage_out(b: ir.IRBuilder, k: ir.Value) -> None:
                address, stride, direct, buffer, streamed = staging(b, k)
                writes = b.and_(self.info(b, job, k, 2), i64(ACCESS_WRITE))
                scatter = b.and_(b.not_(direct), b.icmp_signed("!=", writes, i64(0)))
                with b.if_then(scatter):
                    copy_strided(b, "scatter", buffer, address, stride, self.info(b, job, k, 0),
                          length)
                with b.if_then(streamed):
                    stream_copy(b, address, buffer, b.mul(length, self.info(b, job, k, 0)))

            loop(b, i64(0), n_operands, stage_in)
            indirect_call(b, BODY_TYPE, body,
                          [pointers, scalars, i64(0), length, NO_PREFETCH, *self.one_row()])
            loop(b, i64(0), n_operands, stage_out)

        with b.if_else(whole_rows) as (whole, chunked):
            with whole:
                _while(b, lambda b: b.icmp_signed("<", b.load(position, typ=I64), end), run)
            with chunked:
                loop(b, begin, end, row)
        with b.if_then(stream):
            store_fence(b)
        b.ret_void()
        return fn


def _while(b: ir.IRBuilder, condition, body) -> None:
    """``while (condition(b)) body(b)``; the builder ends after the loop."""
    fn = b.function
    test, step, done = (fn.append_basic_block(name) for name in ("while", "while_body",
                                                                 "while_done"))
    b.branch(test)
    b.position_at_end(test)
    b.cbranch(condition(b), step, done)
    b.position_at_end(step)
    body(b)
    b.branch(test)
    b.position_at_end(done)


def _max(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def _abs(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", v, i64(0)), b.neg(v), v)


def _swap(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> None:
    vx, vy = b.load(x, typ=I64), b.load(y, typ=I64)
    b.store(vy, x)
    b.store(vx, y)


def build_driver_module(parallel: bool) -> ir.Module:
    """The driver (``DRIVER_SYMBOL``); ``parallel`` links it against tsjit_parallel_for."""
    return _Driver(parallel).build()
