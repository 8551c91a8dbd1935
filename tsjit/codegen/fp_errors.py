"""NumPy's floating-point error reports for a kernel that cannot be re-run.

A kernel's hardware flags (MXCSR, see ``elementwise_driver``) say which kinds of error
happened, not in which op. Normally the kernel's caller re-runs the fused ops as NumPy
ufuncs, which report each error as eager code does. A kernel that reads and writes an
array in place (``x += y``) has overwritten its input, so it cannot be re-run. Its errors
are reported here instead: each flagged kind is put on the first op, in eager order, that
can raise it, and NumPy reports it, by running that op's ufunc on a small *witness* input
that raises exactly that kind, under the caller's ``np.errstate``: NumPy itself then warns
with its RuntimeWarning text, raises FloatingPointError, calls the ``seterrcall`` handler,
prints or logs, as the error state says. The witness of an (op, dtypes, kind) is found once
by trying special values. The op is exact whenever one op of the kernel can raise that kind
(``x += y``); otherwise it is the first candidate.

Reporting after the writes is eager's order only while a report cannot stop the program
or look at the arrays: eager ``out[...] = a / b`` and ``x += y / z`` raise (or call the
handler) before the target is touched. So under an error state that may raise (a "raise",
"call" or "log" mode: ``errstate_may_raise``), a kernel that writes in place is not run at all: its
group's ops run in NumPy, as eager code. Asking ``np.geterr()`` costs ~3 us, so the caller
asks once per error state object (NumPy 2 keeps one in a context variable, replaced by
every ``np.errstate`` and ``np.seterr``: ``current_errstate``).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

import numpy as np

from tsjit.codegen.kernel_spec import KernelSpec

__all__ = ["CATEGORIES", "current_errstate", "errstate_may_raise", "report_statically"]

# NumPy's error kinds in the order it reports them after a ufunc, with their bits in
# np.seterrcall's flag argument.
CATEGORIES = ("divide", "over", "under", "invalid")
_CALL_BITS = {"divide": 1, "over": 2, "under": 4, "invalid": 8}
_RAISING_MODES = frozenset({"raise", "call", "log"})
try:
    from numpy._core._ufunc_config import _extobj_contextvar

    current_errstate: Callable[[], object] = _extobj_contextvar.get
except (ImportError, AttributeError):  # another NumPy: a new object per call, always asked
    current_errstate = object
_EXTRA_UFUNCS = {"tan": np.tan, "arctan": np.arctan, "arctan2": np.arctan2,
                 "sigmoid": np.exp}  # sigmoid's errors come from its exp


def report_statically(spec: KernelSpec, categories: tuple[str, ...]) -> None:
    """Have NumPy report each of ``categories`` (in NumPy's order) for the first op of
    ``spec`` that can raise it, reports ordered as the ops are."""
    reports = []
    for category in categories:
        for index, op in enumerate(spec.ops):
            witness = _witness(op.op, op.attrs, tuple(spec.value_dtype(a) for a in op.args),
                               category)
            if witness is not None:
                reports.append((index, CATEGORIES.index(category), witness))
                break
    for _, _, witness in sorted(reports, key=lambda r: r[:2]):
        witness()


def errstate_may_raise(known: list) -> bool:
    """Whether reporting an error may raise under the current error state. ``known`` is
    the caller's ``[a state that may not, a state that may]`` (None at first), updated
    here: the caller tests ``current_errstate() is not known[0]`` (~50 ns) before calling
    this (~3 us when the state is new). Each holds its state, whose identity is tested."""
    state = current_errstate()
    if state is known[1]:
        return True
    raising = any(mode in _RAISING_MODES for mode in np.geterr().values())
    known[1 if raising else 0] = state
    return raising


def _ufunc(op: str, attrs: tuple) -> Callable | None:
    if op == "cast":
        target = attrs[0]
        return lambda x: x.astype(target)
    from tsjit.ops.promotion import KERNEL_UFUNCS

    return KERNEL_UFUNCS.get(op) or _EXTRA_UFUNCS.get(op)


def _candidates(dtype: np.dtype) -> list:
    if dtype.kind in "iu":   # the extremes: MIN // -1 overflows
        info = np.iinfo(dtype)
        return [v for v in (0, 1, -1, 2, int(info.min), int(info.max)) if info.min <= v]
    if dtype.kind != "f":
        return [0, 1]
    info = np.finfo(dtype)
    return [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 0.3, 3.0, np.inf, -np.inf, np.nan,
            float(info.max), -float(info.max), float(info.tiny), float(info.tiny) / 3,
            1000.0, -1000.0]


@functools.cache
def _witness(op: str, attrs: tuple, dtypes: tuple[np.dtype, ...],
             category: str) -> Callable[[], None] | None:
    """A call of ``op``'s ufunc that raises exactly ``category``, or None if none is found."""
    ufunc = _ufunc(op, attrs)
    if ufunc is None:
        return None
    pools = [_candidates(d) for d in dtypes]
    if len(pools) > 2:
        pools = [p[:8] for p in pools]
    raised: list[int] = []

    def collect(_kind: str, flag: int) -> None:
        raised.append(flag)

    for values in itertools.product(*pools):
        with np.errstate(all="ignore"):
            args = [np.array([v], dtype=d) for v, d in zip(values, dtypes)]
        raised.clear()
        with np.errstate(all="call", call=collect):
            try:
                ufunc(*args)
            except (TypeError, ValueError):
                return None
        bits = functools.reduce(int.__or__, raised, 0)
        if bits == _CALL_BITS[category]:
            return functools.partial(ufunc, *args)
    return None
