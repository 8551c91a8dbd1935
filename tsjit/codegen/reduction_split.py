"""A long run's pairwise summation tree, cut into subtrees for the pool's threads.

A row kernel's pass that sums one long run (a full reduction, the only row of a job) splits
the top SUBTREE_DEPTH levels of NumPy's pairwise tree (``pairwise.split``): the subtrees
are claimed by the runtime's threads (``tsjit_parallel_for``; nested in a rows job, run
inline) and their results combined in the tree's order, so every thread count gives the
same bits.  Each task saves its thread's floating-point flags and gives the job's back to
the calling thread, whose rows task reports them.
"""
from __future__ import annotations

from llvmlite import ir

from tsjit.codegen.ir_util import I32, I64, PTR, element, i64, loop, stack_slot
from tsjit.codegen.pairwise import emit_split
from tsjit.codegen.reduction_tree import combine_slots

__all__ = ["PARALLEL_RUN", "SUBTREE_DEPTH", "build_parallel_tree"]

# A run of at least PARALLEL_RUN elements is cut into 2**SUBTREE_DEPTH subtrees.
SUBTREE_DEPTH = 4
PARALLEL_RUN = 1 << 18


def build_parallel_tree(kb, p: int, tree: ir.Function) -> ir.Function:
    """Row kernel pass ``p``'s ``tree`` (builder ``kb``, ``reduction._RowKernelBuilder``)
    of a whole run: ``run(rowptrs, state, n, results)``, its top SUBTREE_DEPTH levels cut
    into subtrees computed by the pool's threads, then combined in the tree's order."""
    reductions = kb.passes[p]
    count = 1 << SUBTREE_DEPTH
    job_type = ir.LiteralStructType([PTR, PTR, ir.ArrayType(I64, count),
                                     ir.ArrayType(I64, count), PTR, I32])
    task = kb.function(f"{kb.name}_subtrees{p}", [PTR, I64, I64])
    job, begin, end = task.args
    b = ir.IRBuilder(task.append_basic_block())

    def job_field(b, job, *path):
        return b.gep(job, [ir.Constant(I32, 0)] + [
            x if isinstance(x, ir.Value) else ir.Constant(I32, x) for x in path],
            source_etype=job_type)

    rowptrs = b.load(job_field(b, job, 0), typ=PTR)
    state = b.load(job_field(b, job, 1), typ=PTR)
    slots = b.load(job_field(b, job, 4), typ=PTR)
    before = kb.save_fp_status(b)

    def one(b: ir.IRBuilder, t: ir.Value) -> None:
        start = b.load(job_field(b, job, 2, t), typ=I64)
        n = b.load(job_field(b, job, 3, t), typ=I64)
        at = b.gep(slots, [b.mul(t, i64(len(reductions)))], source_etype=I64)
        b.call(tree, [rowptrs, state, start, n, at])

    loop(b, begin, end, one)
    kb.collect_fp_status(b, job_field(b, job, 5))
    kb.raise_fp_status(b, before)
    b.ret_void()

    fn = kb.function(f"{kb.name}_run{p}", [PTR, PTR, I64, PTR])
    rowptrs, state, n, results = fn.args
    b = ir.IRBuilder(fn.append_basic_block())
    with b.if_else(b.icmp_signed("<", n, i64(PARALLEL_RUN))) as (serial, parallel):
        with serial:
            b.call(tree, [rowptrs, state, i64(0), n, results])
        with parallel:
            job = stack_slot(b, job_type)
            slots = stack_slot(b, ir.ArrayType(I64, count * len(reductions)))
            for k, value in ((0, rowptrs), (1, state), (4, slots),
                             (5, ir.Constant(I32, 0))):
                b.store(value, job_field(b, job, k))
            # the subtrees, left to right: split every range SUBTREE_DEPTH times
            ranges = [(i64(0), n)]
            for _ in range(SUBTREE_DEPTH):
                ranges = [part for start, length in ranges
                          for part in _halves(b, start, length)]
            for t, (start, length) in enumerate(ranges):
                b.store(start, job_field(b, job, 2, t))
                b.store(length, job_field(b, job, 3, t))
            kb.call_parallel_for(b, task, job, i64(count), i64(1))
            # the workers' flags become this thread's, which the rows task collects
            kb.raise_fp_status(b, b.load(job_field(b, job, 5), typ=I32))
            level = [b.gep(slots, [i64(t * len(reductions))], source_etype=I64)
                     for t in range(count)]
            while len(level) > 1:
                merged = []
                for left, right in zip(level[::2], level[1::2]):
                    combine_slots(kb, b, reductions, left, right, left)
                    merged.append(left)
                level = merged
            for j in range(len(reductions)):
                b.store(b.load(element(b, level[0], i64(j), I64), typ=I64),
                        element(b, results, i64(j), I64))
    b.ret_void()
    return fn


def _halves(b: ir.IRBuilder, start: ir.Value, n: ir.Value) -> list[tuple]:
    """The two subtrees of a range (longer than a node: runs of at least PARALLEL_RUN
    split SUBTREE_DEPTH times stay far above it)."""
    half = emit_split(b, n)
    return [(start, half), (b.add(start, half), b.sub(n, half))]
