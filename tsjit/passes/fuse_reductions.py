"""Fusion across reductions: a reduction, the elementwise ops feeding it and those using
its result become one `prim::FusionGroup` whose kernel works row by row
(`reduction_kernel`, `codegen.reduction`).

It runs before the elementwise fuser and groups exactly as it does (`BlockFuser`: the
same joins and the same rules for moving members past other nodes), with reductions as
candidates too.  `((a - b) ** 2).mean()` then never materializes `a - b`, and softmax's
max, exp, sum and division become one kernel that keeps each row in cache across its
passes.  Only groups holding a reduction are replaced; the rest is left to the
elementwise fuser.  A reduction alone stays a NumPy call, but for those NumPy computes
in several passes.
`TSJIT_LOG=fuser` logs why a reduction was not fused.
"""
from __future__ import annotations

from ..ir.graph import Block, Graph, Node
from .elementwise_kernel import FusedKernel
from .fuse_elementwise import BlockFuser, log
from .fuse_elementwise import _describe as describe
from .reduction_kernel import ReductionCall, build_row_group, read_reduction, reduction_or_refusal

# Reductions that NumPy computes in several passes with temporaries (np.var: the mean, the
# deviations, their squares, their sum; np.linalg.norm over an axis: x * x or |x|, then
# its reduction; np.count_nonzero over an axis: x cast to bool, then its sum): one kernel
# beats them even alone.
_COMPOSITE = frozenset({"var", "std", "linalg_norm", "count_nonzero"})


def fuse_reductions(graph: Graph) -> None:
    """Replace groups of reductions and elementwise ops by prim::FusionGroup nodes."""
    blocks = [graph.block, *(b for node in graph.nodes() for b in node.blocks)]
    for block in blocks:
        # only groups holding a reduction are replaced: without one, grouping is wasted
        if any(read_reduction(node) is not None for node in block.nodes):
            _ReductionFuser(block).run()
            continue
        for node in block.nodes:
            _log_refusal(node)


class _ReductionFuser(BlockFuser):
    def __init__(self, block: Block):
        super().__init__(block)

    def candidate(self, node: Node) -> bool:
        return _log_refusal(node) or super().candidate(node)

    def build(self, members: list[Node], used_outside) -> FusedKernel:
        return build_row_group(members, used_outside)

    def extend(self, group: list[Node], kernel: FusedKernel, node: Node,
               used_outside) -> FusedKernel:
        return self.build([*group, node], used_outside)

    def wanted(self, group: list[Node]) -> bool:
        reductions = [m for m in group if read_reduction(m) is not None]
        if not reductions:
            return False
        if len(group) == 1 and read_reduction(group[0]).kind not in _COMPOSITE:
            log.debug("not fused: %s alone (NumPy's own reduction)", group[0].kind)
            return False
        return True


def _log_refusal(node: Node) -> bool:
    """Whether `node` is a reduction the kernels compute; if it is one they do not, the
    fuser's log says why."""
    call = reduction_or_refusal(node)
    if isinstance(call, str):
        log.debug("not fused: %s: %s", describe(node), call)
    return isinstance(call, ReductionCall)
