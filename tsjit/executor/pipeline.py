"""What happens to a specialized graph: the one place where native code plugs in.

After profiling, the executor gives each profiled value its observed type
(`specialize_types`), then runs OPTIMIZATION_PASSES in order.  A pass that compiles part
of the graph to native code replaces that part by a node of a `guarded` op (registered
with `attrs={"guarded": True}`) whose `subgraph` attribute holds the replaced nodes over
parameters typed as the native code assumes them; `insert_guards`, which runs after every
such pass, wraps each guarded node in a `prim::TypeCheck` and a `prim::FallbackGraph`.

Then every node whose kind has an entry in LOWERINGS gets its run-time object,
`attrs["runtime"] = LOWERINGS[kind](node, context)`: a callable that the interpreter's
generated code calls with the node's inputs (the op's template is `{runtime}(inputs)`)
and that returns its result (a tuple for several outputs).  A pass adding a native op
adds its lowering here.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from .. import config
from ..ir.graph import Graph, Node
from ..passes.dead_code_elimination import eliminate_dead_code
from ..passes.fuse_elementwise import fuse_elementwise
from ..passes.fuse_reductions import fuse_reductions
from ..passes.insert_guards import insert_guards
from ..passes.lower_native_regions import lower_native_regions
from .direct_entry import fused_direct_entry
from .fusion_runtime import lower_fusion_group
from .guards import lower_type_check


@dataclass(frozen=True)
class OptimizationPass:
    name: str
    run: Callable[[Graph], None]
    enabled: Callable[[], bool]


# The passes that compile parts of a specialized graph to native code, in order.
OPTIMIZATION_PASSES: list[OptimizationPass] = [
    # Scalar loops and element access first: they are numbers-only regions, so the fuser
    # still sees every array op.
    OptimizationPass("lower_native_regions", lower_native_regions, config.native_enabled),
    # Reductions and the elementwise work around them before the elementwise fuser, which
    # then groups what is left.
    OptimizationPass("fuse_reductions", fuse_reductions, config.fusion_enabled),
    OptimizationPass("fuse_elementwise", fuse_elementwise, config.fusion_enabled),
]


class LoweringContext:
    """What a lowering may ask of the executor whose graph it lowers."""

    def __init__(self, name: str, filename: str, stats, fallback: Callable[[Graph], Callable]):
        self.name = name
        self.filename = filename
        self.stats = stats
        self.fallback = fallback
        self.kernels: list = []
        self._labels = 0

    def next_label(self) -> int:
        self._labels += 1
        return self._labels - 1

    def add_kernel(self, runtime) -> None:
        self.kernels.append(runtime)
        self.stats.kernels.append(runtime)

    def count_guard_failure(self) -> None:
        self.stats.guard_failures += 1

    def count_bailout(self) -> None:
        self.stats.bailouts += 1


log = logging.getLogger("tsjit.executor")

Lowering = Callable[[Node, LoweringContext], Callable]

def _lower_native_call(node: Node, context: LoweringContext) -> Callable:
    from ..codegen.scalar import lower_native_call  # loaded where a region was found
    return lower_native_call(node, context)


LOWERINGS: dict[str, Lowering] = {
    "prim::TypeCheck": lower_type_check,
    "prim::FusionGroup": lower_fusion_group,
    "prim::FallbackGraph": lambda node, context: context.fallback(node.attrs["subgraph"]),
    "prim::NativeCall": _lower_native_call,
}


def optimize(graph: Graph) -> Graph | None:
    """The specialized graph after the enabled passes, with what they compiled guarded
    and what they left dead dropped; None when it has no native code.  Each pass works on
    a copy: one that fails is skipped (logged), since a bug there must cost speed, not a
    wrong result, nor the other passes' work."""
    for optimization in OPTIMIZATION_PASSES:
        if not optimization.enabled():
            continue
        trial = graph.copy()
        try:
            optimization.run(trial)
        except Exception:
            log.warning("%s failed; the graph goes on without it", optimization.name,
                        exc_info=True)
            continue
        graph = trial
    insert_guards(graph)
    eliminate_dead_code(graph)
    return graph if any(node.kind in LOWERINGS for node in graph.nodes()) else None


def lower(graph: Graph, context: LoweringContext) -> None:
    """Attach its run-time object to every node that has a lowering."""
    for node in graph.nodes():
        lowering = LOWERINGS.get(node.kind)
        if lowering is not None:
            node.attrs["runtime"] = lowering(node, context)


# Ways to call a function whose whole optimized graph is one native node straight into
# that node's code (no argument checks, executor or graph function in between): each takes
# the optimized graph and the normal call path (for calls its guards refuse) and returns
# the entry and its call counter, or None.
def _native_direct_entry(graph: Graph | None,
                         fallback: Callable) -> tuple[Callable, object] | None:
    if graph is None or not any(n.kind == "prim::NativeCall" for n in graph.block.nodes):
        return None
    from ..codegen.scalar import direct_entry
    return direct_entry(graph, fallback)


DIRECT_ENTRIES: list[Callable[[Graph | None, Callable], tuple[Callable, object] | None]] = [
    _native_direct_entry,
    fused_direct_entry,
]


def direct_entry(graph: Graph | None, fallback: Callable) -> tuple[Callable, object] | None:
    for make in DIRECT_ENTRIES:
        entry = make(graph, fallback)
        if entry is not None:
            return entry
    return None
