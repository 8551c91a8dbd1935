"""Ctrl-C inside one long row of a row kernel (a full reduction, a 1-D array's row).

Row kernels check the runtime's interrupt flag between rows (``reduction.INTERRUPT_ROWS``),
which leaves a job of one long row (10**8 elements of a loss) deaf to Ctrl-C.  Inside a row
the kernel therefore checks between blocks of ``INTERRUPT_ELEMENTS`` elements: a pairwise
tree before each subtree larger than that (the checks fall between subtrees of at most
twice that many elements, on every thread that computes some), and the passes that walk
the row in order (scans, the chunks of a buffered sum, the element-level outputs) before
each block.  Once the flag is up the rest of the row is skipped: its results are
meaningless, so the rows task reports the job as stopped (resume from the start: the
outputs are fresh) and drops the floating-point flags it raised.  A check is one call
that reads an atomic int, per 4K elements: ~0.1% of a loss's pass, ~1% of the cheapest
scan (a max of an input).  Measured on a max over one row of 45 nested sines (one
thread): blocks of 64K elements stopped 0.7-1.4 s after SIGINT, of 16K 0.2-0.3 s, of 4K
40-50 ms; the stop came some 15-35 blocks after the signal whatever their size, which is
not understood (a sum's tree, checked per 64K, stopped within ~0.1 s).
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from tsjit.codegen.elementwise_driver import INTERRUPT_PENDING
from tsjit.codegen.ir_util import I32, I64, declare_function, i64

__all__ = ["INTERRUPT_ELEMENTS", "emit_pending", "interruptible_blocks"]

INTERRUPT_ELEMENTS = 1 << 12


def emit_pending(b: ir.IRBuilder) -> ir.Value:
    """An i1: whether Ctrl-C is pending (the runtime's flag)."""
    pending = declare_function(b.module, INTERRUPT_PENDING, I32, [])
    return b.icmp_unsigned("!=", b.call(pending, []), ir.Constant(I32, 0))


def interruptible_blocks(b: ir.IRBuilder, begin: ir.Value, end: ir.Value, size: int,
                         body: Callable[[ir.IRBuilder, ir.Value, ir.Value], None],
                         check: bool) -> None:
    """``body(b, lo, hi)`` over [begin, end) in blocks of ``size``, in order; ``check``:
    before each block after the first, stop if Ctrl-C is pending (a range of one block
    costs nothing: the row's own check came before it)."""
    fn = b.function
    header, check_block, run, done = (fn.append_basic_block(name) for name in
                                      ("blocks", "blocks_check", "block", "blocks_done"))
    entry = b.block
    b.cbranch(b.icmp_signed("<", begin, end), header, done)
    b.position_at_end(header)
    lo = b.phi(I64)
    lo.add_incoming(begin, entry)
    b.cbranch(b.icmp_signed(">", lo, begin) if check else ir.Constant(ir.IntType(1), 0),
              check_block, run)
    b.position_at_end(check_block)
    b.cbranch(emit_pending(b), done, run)
    b.position_at_end(run)
    hi = b.add(lo, i64(size))
    hi = b.select(b.icmp_signed("<", hi, end), hi, end)
    body(b, lo, hi)
    lo.add_incoming(hi, b.block)
    b.cbranch(b.icmp_signed("<", hi, end), header, done)
    b.position_at_end(done)
