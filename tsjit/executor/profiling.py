"""The run-time side of `prim::profile`: what NumPy value each profiled value held."""
from __future__ import annotations

import collections
import functools
import threading

import numpy as np

from .. import forking
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


PYTHON_NUMBERS = {bool: BoolType, int: IntType, float: FloatType}


def observed_number_type(value: object, declared: Type) -> Type | None:
    """The exact type of a Python number passed where `declared` (int, float or bool) is
    expected, which NumPy's promotion depends on (`x * 2` and `x * 2.0` differ for an
    int32 x); None for a parameter of another type."""
    if declared not in PYTHON_NUMBERS.values():
        return None
    return PYTHON_NUMBERS.get(type(value))


class ProfileRecorder:
    """Collects observations for the profile nodes of one graph (slot k = nodes[k]).

    Each profiled call records into a run of its own (per thread: calls from several
    threads may profile at once); within a run, the types a value took are merged as
    control-flow joins merge them.  Runs that disagree on a value's dtype, rank or
    ndarray-ness are not merged, since a value typed as both could not be fused: the
    profile written back is the most common kind of run (the most recent on a tie) merged
    with the runs that agree with it.  Calls of the other kinds then fail its guards and
    specialize a fallback of their own."""

    def __init__(self, nodes: list[Node]):
        self.nodes = sorted(nodes, key=lambda n: n.attrs["slot"])
        assert [n.attrs["slot"] for n in self.nodes] == list(range(len(self.nodes)))
        self.runs: list[list[object]] = []
        self._current = threading.local()
        self._lock = forking.lock()
        for node in self.nodes:
            node.attrs["runtime"] = self.record

    def begin(self) -> list[object] | None:
        """Start a run in this thread; returns what `end` needs to restore (a run that
        this thread had started, when a profiled call re-enters the function)."""
        outer = getattr(self._current, "run", None)
        self._current.run = [_UNSEEN] * len(self.nodes)
        return outer

    def end(self, outer: list[object] | None) -> None:
        run, self._current.run = self._current.run, outer
        with self._lock:
            self.runs.append(run)

    def record(self, value: object, slot: int) -> None:
        run = self._current.run
        seen, before = observed_type(value), run[slot]
        run[slot] = seen if before is _UNSEEN or before == seen else unify(before, seen)

    def write_back(self) -> None:
        """Store what each node saw in the chosen runs as its `profiled_type` attribute."""
        with self._lock:
            runs = list(self.runs)
        chosen = _agreeing_runs(runs)
        for slot, node in enumerate(self.nodes):
            node.attrs.pop("runtime", None)
            seen = [run[slot] for run in chosen if run[slot] is not _UNSEEN]
            if seen:
                node.attrs["profiled_type"] = functools.reduce(unify, seen)


def _kind(seen: object) -> object:
    """What guards and kernels depend on: runs whose values differ only in sizes or
    layout merge into one profile that still specializes."""
    if not isinstance(seen, TensorType):
        return seen
    return seen.dtype, None if seen.sizes is None else len(seen.sizes), seen.ndarray


def _agreeing_runs(runs: list[list[object]]) -> list[list[object]]:
    """The runs of the most common kind (the latest on a tie), with every run that agrees
    with it on each value both saw."""
    if not runs:
        return []
    kinds = [tuple(map(_kind, run)) for run in runs]
    count = collections.Counter(kinds)
    leader = max(range(len(runs)), key=lambda k: (count[kinds[k]], k))

    def agrees(kind: tuple) -> bool:
        return all(a == b for a, b in zip(kind, kinds[leader])
                   if a is not _UNSEEN and b is not _UNSEEN)

    return [run for run, kind in zip(runs, kinds) if agrees(kind)]
