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
RECORDS_PER_RUN = 32


# Profiling calls observe millions of values in loop code: the TensorType of a NumPy scalar
# class, and of an array's (dtype, shape, layout), is built once (`dtype.name` alone costs
# ~5 us in NumPy's Python code, the dataclass ~1.5 us).
_SCALAR_TYPES: dict[type, TensorType] = {}
_ARRAY_TYPES: dict[tuple, TensorType] = {}
_MAX_CACHED_ARRAY_TYPES = 4096


def observed_type(value: object) -> TensorType:
    """The refined type of one value: dtype, sizes, layout class and ndarray-ness of an
    ndarray, dtype of a NumPy scalar; plain Tensor for anything else (a Python number in
    a Tensor variable, an ndarray subclass)."""
    cls = type(value)
    if cls is np.ndarray:
        flags = value.flags
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "strided"
        key = (value.dtype, value.shape, layout)
        seen = _ARRAY_TYPES.get(key)
        if seen is None:
            seen = TensorType(dtype_name(value.dtype), value.shape, layout, True)
            if len(_ARRAY_TYPES) < _MAX_CACHED_ARRAY_TYPES:
                _ARRAY_TYPES[key] = seen
        return seen
    seen = _SCALAR_TYPES.get(cls)
    if seen is not None:
        return seen
    if isinstance(value, np.generic):
        seen = TensorType(dtype_name(value.dtype), (), None, False)
        # a class of numbers has one dtype; strings, bytes and datetimes carry a length
        # or unit in theirs
        if isinstance(value, (np.number, np.bool_)):
            _SCALAR_TYPES[cls] = seen
        return seen
    return TENSOR


@functools.lru_cache(maxsize=256)
def dtype_name(dtype: np.dtype) -> str | None:
    """The dtype a TensorType records for ``dtype``: its name when the name gives the
    dtype back, else None (any dtype). Names of str, bytes, void and structured dtypes
    ('str32', 'void96') drop the length and fields, and a byte-swapped float64 is named
    'float64'; tsjit compiles none of them, so such values are typed with an unknown
    dtype: nothing is fused over them and the interpreter runs NumPy's own operations,
    with NumPy's results and exceptions."""
    name = dtype.name
    try:
        return name if np.dtype(name) == dtype else None
    except TypeError:
        return None


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
    specialize a fallback of their own.

    A site records at most RECORDS_PER_RUN values per run (`budget`, which the generated
    code tests before calling `record`): a loop over 200k elements would otherwise pay a
    call per value and iteration.  Types seen are speculative anyway (code relying on one
    is guarded), so the first iterations stand for the rest.  The budget is a list, whose
    integer index CPython specializes: a bytearray's test cost a spent site about twice as
    much, in every iteration."""

    def __init__(self, nodes: list[Node]):
        self.nodes = sorted(nodes, key=lambda n: n.attrs["slot"])
        assert [n.attrs["slot"] for n in self.nodes] == list(range(len(self.nodes)))
        self.runs: list[list[object]] = []
        self._current = threading.local()
        self._lock = forking.lock()
        self._full_budget = [RECORDS_PER_RUN] * len(self.nodes)
        self.budget = list(self._full_budget)
        for node in self.nodes:
            node.attrs["runtime"] = self.record
            node.attrs["budget"] = self.budget

    def begin(self) -> list[object] | None:
        """Start a run in this thread; returns what `end` needs to restore (a run that
        this thread had started, when a profiled call re-enters the function)."""
        outer = getattr(self._current, "run", None)
        self._current.run = [_UNSEEN] * len(self.nodes)
        if outer is None:
            self.budget[:] = self._full_budget
        return outer

    def end(self, outer: list[object] | None) -> None:
        run, self._current.run = self._current.run, outer
        with self._lock:
            self.runs.append(run)

    def record(self, value: object, slot: int) -> None:
        left = self.budget[slot]
        if left:    # another thread may have used the budget up since the caller's test
            self.budget[slot] = left - 1
        run = self._current.run
        seen, before = observed_type(value), run[slot]
        if before is not seen:
            run[slot] = seen if before is _UNSEEN or before == seen else unify(before, seen)

    def write_back(self) -> None:
        """Store what each node saw in the chosen runs as its `profiled_type` attribute."""
        with self._lock:
            runs = list(self.runs)
        chosen = _agreeing_runs(runs)
        for slot, node in enumerate(self.nodes):
            node.attrs.pop("runtime", None)
            node.attrs.pop("budget", None)
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
