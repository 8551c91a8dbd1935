"""The optimized graph as `graph_for` shows it: run-time objects left out, and each
fallback's subgraph replaced by what its own executor runs (its specialization, if any)."""
from __future__ import annotations

from ..ir.graph import Graph


def display_graph(executor) -> Graph:
    source = executor.optimized if executor.optimized is not None else executor.graph
    copy = source.copy()
    fallbacks = {f.run: f for f in executor.fallbacks}
    for node in copy.nodes():
        runtime = node.attrs.pop("runtime", None)
        if node.kind == "prim::FallbackGraph" and runtime in fallbacks:
            node.attrs["subgraph"] = display_graph(fallbacks[runtime])
    return copy
