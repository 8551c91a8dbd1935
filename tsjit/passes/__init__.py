"""Graph-to-graph transformations, one per module, each with one entry function.

The canonical pipeline runs on every scripted graph before execution: inline
calls once, then fold constants, apply peephole rules, merge common
subexpressions and delete dead code until the graph stops changing (each pass
exposes work for the others: an inlined callee receives constants to fold, a
folded branch leaves dead code, a rewritten power leaves products to merge).
PASSES names every pass, so that tests and logging (`TSJIT_LOG`) can refer to
them; the logger `tsjit.passes` prints the graph after each pass at DEBUG level.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from ..ir.graph import Graph
from ..ir.printer import print_graph
from .common_subexpression_elimination import eliminate_common_subexpressions
from .constant_propagation import propagate_constants
from .dead_code_elimination import eliminate_dead_code
from .fuse_elementwise import fuse_elementwise
from .inline_calls import inline_calls
from .insert_guards import insert_guards
from .peephole import peephole
from .profile_insertion import insert_profiles
from .propagate_types import propagate_types
from .specialize_types import specialize_types

Pass = Callable[[Graph], None]

PASSES: dict[str, Pass] = {
    "inline_calls": inline_calls,
    "constant_propagation": propagate_constants,
    "peephole": peephole,
    "common_subexpression_elimination": eliminate_common_subexpressions,
    "dead_code_elimination": eliminate_dead_code,
    # the profiling executor's passes (tsjit/executor/pipeline.py runs them)
    "profile_insertion": insert_profiles,
    "specialize_types": specialize_types,
    "propagate_types": propagate_types,
    "fuse_elementwise": fuse_elementwise,
    "insert_guards": insert_guards,
}

# The passes repeated until a fixed point, in order.
SIMPLIFICATION_PASSES = ("constant_propagation", "peephole", "common_subexpression_elimination",
                         "dead_code_elimination")
MAX_ROUNDS = 8      # a safety bound, should rules ever undo each other

log = logging.getLogger(__name__)


def run_canonical_passes(graph: Graph) -> None:
    """Inline calls, then simplify until the graph no longer changes (or MAX_ROUNDS)."""
    _run("inline_calls", graph)
    before = print_graph(graph)
    for _ in range(MAX_ROUNDS):
        for name in SIMPLIFICATION_PASSES:
            _run(name, graph)
        after = print_graph(graph)
        if after == before:
            return
        before = after


def _run(name: str, graph: Graph) -> None:
    PASSES[name](graph)
    log.debug("after %s:\n%s", name, graph)


__all__ = ["PASSES", "eliminate_common_subexpressions", "eliminate_dead_code", "fuse_elementwise",
           "inline_calls", "insert_guards", "insert_profiles", "peephole", "propagate_constants",
           "propagate_types", "run_canonical_passes", "specialize_types"]
