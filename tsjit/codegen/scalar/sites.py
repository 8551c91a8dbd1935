"""Fallback sites: single nodes of a native region, run by the reference interpreter.

Native code calls a site where it does not reproduce Python or NumPy itself (see
emitter.py): the site is the node alone in a graph (its constant inputs copied in), compiled
by the interpreter on first use, so it performs the eager program's very operation, raises
its exception with the interpreter's message and script location, and emits NumPy's
warnings.  The site then checks that the result is of the kind native code continues
with; where it is not (`a ** -1` is a float, `(-2.0) ** 0.5` a complex number, `int(1e300)`
or `2**62 * 4` an int that needs more than native code's 64 bits) the site returns a
`Rerun` instead, and native code gives up and runs the whole region again in the
interpreter (bailout.py), which computes Python's own result.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...interpreter import compile_graph
from ...ir.graph import Graph, Node, clone_node
from .bailout import Rerun, int_beyond_64_bits
from .emitter import SiteTable
from .ntypes import (
    Array,
    Const,
    NType,
    NumpyScalar,
    OptionalScalar,
    PyScalar,
    Shape,
    Tagged,
    Tuple,
    Undefined,
)

_PYTHON_TYPES = {"int": int, "float": float, "bool": bool}


_INT64_LIMIT = 1 << 63          # native ints hold -2**63 <= i < 2**63


class _Mismatch(Exception):
    """A site's result is not of the kind native code continues with (the message says
    why)."""


class _IntBeyond64Bits(_Mismatch):
    """A site's int result needs more bits than native code's ints have."""


def conform(value: object, kind: NType) -> object:
    """`value` as native code reads a value of `kind` (else _Mismatch)."""
    if isinstance(kind, PyScalar):
        if type(value) is _PYTHON_TYPES[kind.kind]:
            if kind.kind != "int" or -_INT64_LIMIT <= value < _INT64_LIMIT:
                return value
            raise _IntBeyond64Bits
    elif isinstance(kind, NumpyScalar):
        if type(value) is kind.dtype.type:
            return value
    elif isinstance(kind, (Const, Undefined)):
        return value
    elif isinstance(kind, Tagged):
        return conform(value, kind.numpy if isinstance(value, np.generic) else kind.python)
    elif isinstance(kind, OptionalScalar):
        return None if value is None else conform(value, kind.elem)
    elif isinstance(kind, (Tuple, Shape)):
        elems = kind.elems if isinstance(kind, Tuple) else (PyScalar("int"),) * kind.rank
        if type(value) is tuple and len(value) == len(elems):
            return tuple(conform(v, e) for v, e in zip(value, elems))
    elif isinstance(kind, Array):
        if type(value) is np.ndarray and value.dtype == kind.dtype and value.ndim == kind.rank:
            return value
    raise _Mismatch(f"Python's result is a {type(value).__name__}, not a value of kind {kind}")


def single_node_graph(node: Node) -> Graph:
    """A graph running `node` alone: non-constant inputs become graph inputs, constant
    inputs are copied in, and the node's outputs are the graph's outputs."""
    graph = Graph()
    env = {}
    for value in node.inputs:
        if value in env:
            continue
        if value.node.kind == "prim::Constant":
            graph.block.append(clone_node(value.node, env))
        else:
            env[value] = graph.add_input(value.type, value.name)
    clone = graph.block.append(clone_node(node, env))
    for out in clone.outputs:
        graph.block.add_output(out)
    return graph


class Site:
    """The Python callable native code calls to run one node (see the module doc)."""

    __slots__ = ("node", "out_kinds", "name", "_run")

    def __init__(self, node: Node, out_kinds: Sequence[NType], name: str):
        self.node, self.out_kinds, self.name = node, tuple(out_kinds), name
        self._run: Callable | None = None

    def __call__(self, *args: object) -> object:
        if self._run is None:
            self._run = compile_graph(single_node_graph(self.node), self.name).fn
        result = self._run(*args)
        try:
            if len(self.out_kinds) == 1:
                return conform(result, self.out_kinds[0])
            return tuple(conform(v, k) for v, k in zip(result, self.out_kinds))
        except _IntBeyond64Bits:
            return int_beyond_64_bits(self.node)
        except _Mismatch as mismatch:
            return Rerun(str(mismatch), self.node)

    def __repr__(self) -> str:
        return f"<tsjit fallback site {self.node.kind} of {self.name}>"


class Sites(SiteTable):
    """One Site per node of a region (shared by the region's variants)."""

    def __init__(self, name: str):
        self.name = name
        self._sites: dict[tuple[Node, tuple[NType, ...]], Site] = {}

    def site_for(self, node: Node, out_kinds: Sequence[NType]) -> Site:
        key = (node, tuple(out_kinds))
        site = self._sites.get(key)
        if site is None:
            site = self._sites[key] = Site(node, out_kinds, self.name)
        return site
