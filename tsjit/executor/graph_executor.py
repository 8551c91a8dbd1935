"""The GraphExecutor: how a scripted function's graph runs on each call.

Today every call runs the canonical graph through the reference interpreter;
the profiling executor (specialization, guards, fused kernels) plugs in here.
"""
from __future__ import annotations

from collections import Counter

from ..interpreter import compile_graph
from ..ir.graph import Graph


class GraphExecutor:
    def __init__(self, graph: Graph, name: str, filename: str = "<script>"):
        self.graph = graph
        self.name = name
        self.counters: Counter = Counter()
        self._run = compile_graph(graph, name, filename)

    def __call__(self, *args):
        self.counters["calls"] += 1
        return self._run(*args)

    def graph_for(self, *args) -> Graph:
        return self.graph

    def stats(self) -> dict[str, int]:
        return {"calls": self.counters["calls"], "profiled_runs": 0, "specializations": 0,
                "guard_failures": 0, "bailouts": 0, "kernel_launches": 0,
                "interpreter_runs": self.counters["calls"]}
