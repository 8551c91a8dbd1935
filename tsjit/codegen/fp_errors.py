"""NumPy's floating-point error reports for a kernel that cannot be re-run.

A kernel's hardware flags (MXCSR, see ``elementwise_driver``) say which kinds of error
happened, not in which op. Normally the kernel's caller re-runs the fused ops as NumPy
ufuncs, which report each error as eager code does. A kernel that reads and writes an
array in place (``x += y``) has overwritten its input, so it cannot be re-run. Its errors
are reported here instead. The ops that do not read the overwritten input run again in
NumPy, each on its own under ``np.errstate(all="call")``, which tells the kinds each raised;
a flagged kind that none of them raised is put on the first other op that can raise it.
NumPy then reports each (op, kind), in eager order, by running that op's ufunc on a small
*witness* input that raises exactly that kind, under the caller's ``np.errstate``: NumPy
itself warns with its RuntimeWarning text, raises FloatingPointError, calls the
``seterrcall`` handler, prints or logs, as the error state says. The witness of an (op,
dtypes, kind) is found once by trying special values. The reports are eager's (one per op
and kind) but for an op reading the overwritten input that raised a kind some other op
raised too: that one is not reported. Where two ops that can raise read the overwritten
input (``u = np.log(x); v = x / y; x += z``), a kind could not be put on the op that raised
it: the fuser does not form such a kernel (``reports_are_ambiguous``).

Reporting after the writes is eager's order only while a report cannot stop the program
or look at the arrays: eager ``out[...] = a / b`` and ``x += y / z`` raise (or call the
handler) before the target is touched. So under an error state that may raise (a "raise",
"call" or "log" mode, or "warn" under a warning filter that makes NumPy's RuntimeWarning an
exception: ``errstate_may_raise``), a kernel that writes in place is not run at all: its
group's ops run in NumPy, as eager code. Asking ``np.geterr()`` costs ~3 us, so the caller
asks once per error state object (NumPy 2 keeps one in a context variable, replaced by
every ``np.errstate`` and ``np.seterr``: ``current_errstate``) and list of filters.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Callable, Iterator

import numpy as np

from tsjit.codegen.kernel_spec import KernelSpec

__all__ = ["CATEGORIES", "MAY_RAISE_UNLESS_KNOWN", "current_errstate", "errstate_may_raise",
           "report_statically", "reports_are_ambiguous"]

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


def report_statically(spec: KernelSpec, categories: tuple[str, ...], operands: tuple = (),
                      scalars: tuple = ()) -> None:
    """Have NumPy report each of ``categories`` (in NumPy's order) as eager code would,
    reports ordered as the ops are. ``operands``, ``scalars``: the kernel's (its array
    inputs first, as they are after the kernel; its scalar inputs). The ops that read no
    input written in place run again in NumPy, each on its own, which tells the kinds each
    raised (one report per op and kind, as eager code gives); a kind none of them raised
    is put on the first other op that can raise it."""
    raised = _errors_per_op(spec, operands, scalars)
    reports, explained = [], set()
    for index, kinds in raised.items():
        for category in categories:
            witness = _op_witness(spec, index, category) if category in kinds else None
            if witness is not None:
                reports.append((index, CATEGORIES.index(category), witness))
                explained.add(category)
    for category in categories:
        if category in explained:
            continue
        for index in [i for i in range(len(spec.ops)) if i not in raised] + list(raised):
            witness = _op_witness(spec, index, category)
            if witness is not None:
                reports.append((index, CATEGORIES.index(category), witness))
                break
    for _, _, witness in sorted(reports, key=lambda r: r[:2]):
        witness()


def reports_are_ambiguous(spec: KernelSpec) -> bool:
    """Whether two or more ops that can raise floating-point errors read an input the
    kernel writes in place (directly or through other ops): after the kernel, neither can
    run again, so ``report_statically`` could not tell which raised a flagged kind."""
    stale = {t for t in spec.inplace if t is not None}   # and the values computed from them
    left = {v for k in stale for v in _left_in(spec, k)}  # but those the arrays hold after
    raising = 0
    for index, op in enumerate(spec.ops):
        if any(a in stale for a in op.args):
            if len(spec.inputs) + index not in left:
                stale.add(len(spec.inputs) + index)
            raising += _may_raise(op.op, op.attrs, tuple(spec.value_dtype(a) for a in op.args))
    return raising >= 2


def _op_witness(spec: KernelSpec, index: int, category: str) -> Callable[[], None] | None:
    op = spec.ops[index]
    return _witness(op.op, op.attrs, tuple(spec.value_dtype(a) for a in op.args), category)


def _errors_per_op(spec: KernelSpec, operands: tuple, scalars: tuple) -> dict[int, set]:
    """The error kinds each op raises when run alone in NumPy on the kernel's inputs, for
    the ops whose operands can be computed again: not from an input written in place (its
    old values are gone), nor from an op NumPy has no ufunc for."""
    arrays, given = iter(operands), iter(scalars)
    values: list = []
    written = {t for t in spec.inplace if t is not None}
    after: dict[int, object] = {}     # value number -> the array left holding it
    for k, inp in enumerate(spec.inputs):
        value = next(given) if inp.is_scalar else next(arrays, None)
        if inp.is_scalar:
            with np.errstate(all="ignore"):
                value = np.asarray(value).astype(inp.dtype)
        values.append(None if k in written else value)
        after.update({v: value for v in _left_in(spec, k)})
    raised: dict[int, set] = {}
    flags: list[int] = []

    def collect(_kind: str, flag: int) -> None:
        flags.append(flag)

    for index, op in enumerate(spec.ops):
        ufunc = np.where if op.op == "where" else _ufunc(op.op, op.attrs) \
            if op.op not in _EXTRA_UFUNCS else None
        args = [values[a] for a in op.args]
        value = None
        if ufunc is not None and all(a is not None for a in args):
            flags.clear()
            with np.errstate(all="call", call=collect):
                try:
                    value = ufunc(*args)
                except (TypeError, ValueError, FloatingPointError):
                    value = None
            bits = functools.reduce(int.__or__, flags, 0)
            if value is not None:
                raised[index] = {c for c in CATEGORIES if bits & _CALL_BITS[c]}
        values.append(after.get(len(spec.inputs) + index, value))
    return raised


def _left_in(spec: KernelSpec, k: int) -> list[int]:
    """The value the kernel writes into input ``k`` (its array holds it afterwards: the
    ops that read it can run again), if it writes one."""
    return [v for v, t in zip(spec.outputs, spec.inplace) if t == k]


def errstate_may_raise(known: list) -> bool:
    """Whether reporting an error may raise under the current error state and warning
    filters: a mode that raises, calls or logs, or "warn" where a filter turns NumPy's
    RuntimeWarning into an exception (``warnings.simplefilter("error")``, pytest's
    ``-W error``). ``known`` is the caller's ``[error state, warning filters, their number]``
    of a state found not to raise, then of one found to raise (six Nones at first), updated
    here: the caller tests ``MAY_RAISE_UNLESS_KNOWN`` (~70 ns) before calling this (~3 us
    when the state is new). ``catch_warnings`` replaces the filters list and each new
    filter lengthens it: its identity and length are tested."""
    state, filters = current_errstate(), warnings.filters
    if state is known[3] and filters is known[4] and len(filters) == known[5]:
        return True
    modes = np.geterr().values()
    raising = any(mode in _RAISING_MODES for mode in modes) or (
        "warn" in modes and _warning_may_be_error(filters))
    start = 3 if raising else 0
    known[start:start + 3] = [state, filters, len(filters)]
    return raising


# The test that the caller of errstate_may_raise inlines: false while the state is the
# one last found not to raise.
MAY_RAISE_UNLESS_KNOWN = ("{errstate}() is not {known}[0] or {warnings}.filters is not "
                          "{known}[1] or {len}({known}[1]) != {known}[2]")


def _warning_may_be_error(filters: list) -> bool:
    """Whether the first filter that may apply to NumPy's RuntimeWarning (from any module)
    may turn it into an exception."""
    for action, message, category, module, line in filters:
        if not issubclass(RuntimeWarning, category):
            continue
        if action == "error":
            return True
        if message is None and module is None and not line:   # it applies: the decision
            return False
    return warnings.defaultaction == "error"


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
    return next((functools.partial(ufunc, *args) for ufunc, args, bits
                 in _trials(op, attrs, dtypes) if bits == _CALL_BITS[category]), None)


@functools.cache
def _may_raise(op: str, attrs: tuple, dtypes: tuple[np.dtype, ...]) -> bool:
    """Whether ``op``'s ufunc raises some floating-point error on some special value."""
    return any(bits for _, _, bits in _trials(op, attrs, dtypes))


def _trials(op: str, attrs: tuple, dtypes: tuple[np.dtype, ...]) -> Iterator[tuple]:
    """Calls of ``op``'s ufunc on special values of ``dtypes``: (ufunc, arguments, the
    errors raised as seterrcall's bits); none where NumPy has no such ufunc or loop."""
    ufunc = _ufunc(op, attrs)
    if ufunc is None:
        return
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
                return
        yield ufunc, args, functools.reduce(int.__or__, raised, 0)
