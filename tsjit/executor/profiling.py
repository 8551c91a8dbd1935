"""The run-time side of `prim::profile`: what NumPy value each profiled value held."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node
from ..ir.types import TENSOR, BoolType, FloatType, IntType, TensorType, Type, unify

_UNSEEN = object()


def observed_type(value: object) -> TensorType:
    """The refined type of one value: dtype, sizes, layout class and ndarray-ness of an
    ndarray, dtype of a NumPy scalar; plain Tensor for anything else (a Python number in
    a Tensor variable, an ndarray subclass)."""
    if type(value) is np.ndarray:
        flags = value.flags
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "strided"
        return TensorType(value.dtype.name, value.shape, layout, True)
    if isinstance(value, np.generic):
        return TensorType(value.dtype.name, (), None, False)
    return TENSOR


_NUMBER_TYPES = {bool: BoolType, int: IntType, float: FloatType}


def observed_number_type(value: object, declared: Type) -> Type | None:
    """The exact type of a Python number passed where `declared` (int, float or bool) is
    expected, which NumPy's promotion depends on (`x * 2` and `x * 2.0` differ for an
    int32 x); None for a parameter of another type."""
    if declared not in _NUMBER_TYPES.values():
        return None
    return _NUMBER_TYPES.get(type(value))


class ProfileRecorder:
    """Collects observations for the profile nodes of one graph (slot k = nodes[k]); the
    types seen in every profiled call are merged as control-flow joins merge them."""

    def __init__(self, nodes: list[Node]):
        self.nodes = sorted(nodes, key=lambda n: n.attrs["slot"])
        assert [n.attrs["slot"] for n in self.nodes] == list(range(len(self.nodes)))
        self.seen: list[object] = [_UNSEEN] * len(self.nodes)
        for node in self.nodes:
            node.attrs["runtime"] = self.record

    def record(self, value: object, slot: int) -> None:
        seen = observed_type(value)
        before = self.seen[slot]
        self.seen[slot] = seen if before is _UNSEEN or before == seen else unify(before, seen)

    def write_back(self) -> None:
        """Store what each node saw as its `profiled_type` attribute."""
        for node, seen in zip(self.nodes, self.seen):
            node.attrs.pop("runtime", None)
            if seen is not _UNSEEN:
                node.attrs["profiled_type"] = seen
