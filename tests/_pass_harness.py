"""Shared by the pass tests: IR text through passes with the verifier after each, and
the interpreter run before and after the canonical passes (results and inputs compared)."""
from __future__ import annotations

import numpy as np

from tsjit.interpreter import compile_graph
from tsjit.ir.graph import Graph
from tsjit.ir.parser import parse_ir
from tsjit.ir.verifier import verify
from tsjit.passes import run_canonical_passes

F32 = "Tensor(dtype=float32, sizes=[*], layout=C, ndarray=1)"


def run(text: str, *passes, resolve=None) -> Graph:
    """Parse `text`, then apply `passes` in order, verifying the graph before and after each."""
    graph = parse_ir(text, resolve)
    verify(graph)
    for apply in passes:
        apply(graph)
        verify(graph)
    return graph


def constants(graph: Graph) -> list[object]:
    return [n.attrs["value"] for n in graph.nodes() if n.kind == "prim::Constant"]


def count(graph: Graph, kind: str) -> int:
    return sum(n.kind == kind for n in graph.nodes())


def same(a: object, b: object) -> bool:
    """Indistinguishable: same type, and for NumPy values same dtype, shape and bits."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (np.ndarray, np.generic)):
        return a.dtype == b.dtype and np.shape(a) == np.shape(b) and a.tobytes() == b.tobytes()
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(map(same, a, b))
    return a == b


def run_original_and_optimized(text: str, make_inputs, resolve=None):
    """Run the graph of `text` in the interpreter before and after the canonical passes, each
    on fresh inputs; return both (result, inputs afterwards) pairs."""
    outcomes = []
    for graph in (parse_ir(text, resolve), run(text, run_canonical_passes, resolve=resolve)):
        inputs = make_inputs()
        outcomes.append((compile_graph(graph)(*inputs), inputs))
    return outcomes
