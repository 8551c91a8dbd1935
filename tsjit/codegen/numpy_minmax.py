"""Which of several equal values NumPy's max and min return on this machine, asked of NumPy.

Values that compare equal differ in their bits only as zeros of either sign, and NaNs
differ in sign and payload; which one NumPy's ``max``/``min`` returns depends on the loop
it runs (``numpy/_core/src/umath/loops_minmax.dispatch.c.src``; ``loops.c.src`` for
float16):

- a contiguous float32/float64 run (a row, or a whole C-contiguous array) goes to
  ``simd_reduce_c_max``: the first element seeds every lane of an accumulator of the
  dispatched SIMD width, the next whole vectors are combined lane by lane in order, the
  lanes by a fixed shuffle tree (``npyv_reduce_maxn``), the rest one at a time.  Each
  combine is x86's ``max(a, b) = a > b ? a : b``: of equal values the second operand
  wins, so the result is the *last* value equal to the maximum in the in-order sequence
  of the tree's leaves; that sequence is the lanes in the shuffle tree's order (each lane:
  the seed, then its elements), then the remaining elements.  A NaN in the seed or the
  vector part gives the default NaN, one in the scalar rest its own bits (a run of one
  element is returned as it is).
- float16 runs one element after another, ``acc >= x || isnan(acc) ? acc : x``: the first
  of equal values, the first NaN.
- along a leading axis (a column kernel) the output is combined with each reduced row in
  turn by the binary loop: float32/float64 ``isnan(out) ? out : max(out, x)`` (the newer of
  equal values), float16 as above (the older); the first NaN keeps its bits.

- a float32/float64 run read at another stride (a reversed view reduced as it is: NumPy's
  reductions keep negative strides, ``NPY_ITER_DONT_NEGATE_STRIDES``) goes to the scalar
  loop unrolled by eight: the first element seeds the output, the next eight seed eight
  accumulators (when there are eight more), each combining every eighth element after
  them while a whole group of eight is left; the accumulators pair up in a tree
  ((0, 1), (2, 3)), ((4, 5), (6, 7)), the output is combined with the tree's result and
  then with the rest one at a time.  Each combine is ``isnan(a) ? a : max(a, b)`` (x86:
  of equal values the second operand wins, a NaN keeps its bits): ``unrolled_holds``.

The lane width and the shuffle tree depend on the CPU NumPy dispatched to (AVX2: 8 float32
lanes, AVX-512: 16), so this module derives them from NumPy itself: it finds the lanes'
order from rows of one seed and one vector of zeros of either sign, then checks the whole
model against NumPy on rows of zeros, negative numbers and NaNs of many lengths.  A model
that does not hold is not used: the fuser leaves those reductions to NumPy.
``fingerprint(dtypes)`` is part of the key of every kernel that follows these answers.
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import numpy as np

__all__ = ["UNROLL", "RowOrder", "column_newer_wins", "fingerprint", "in_order", "row_order",
           "unrolled_holds"]

UNROLL = 8   # accumulators of NumPy's scalar reduction loop (a strided run)
_VECTOR_BYTES = (64, 32, 16)   # AVX-512, AVX2, SSE: the widths NumPy dispatches on x86
_NAN_PAYLOADS = {2: (0x7E03, 0xFE05), 4: (0x7FC00123, 0xFFC00456),
                 8: (0x7FF8000000000123, 0xFFF8000000000456)}


@dataclass(frozen=True)
class RowOrder:
    """NumPy's max/min of a contiguous run of one float dtype.  ``lanes == 0``: one element
    after another, the first of equal values kept.  Else ``lane_order`` lists the lanes by
    rising priority (the shuffle tree's leaves, left to right) and ``vector_nan`` is the
    NaN's bits when one is in the seed or the vector part."""

    lanes: int
    lane_order: tuple[int, ...] = ()
    vector_nan: int = 0


def _uint(dtype: np.dtype) -> type:
    return {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]


def in_order(order: RowOrder, n: int) -> np.ndarray:
    """The element indices of a run of ``n`` by rising priority: of the values equal to the
    maximum (minimum), NumPy returns the last in this sequence."""
    if order.lanes == 0:
        return np.arange(n)[::-1]
    lanes = order.lanes
    body = (n - 1) // lanes * lanes
    parts = []
    for lane in order.lane_order:
        parts += [np.zeros(1, np.int64), np.arange(1 + lane, 1 + body, lanes)]
    parts.append(np.arange(1 + body, n))
    return np.concatenate(parts)


def _vector_part(order: RowOrder, n: int) -> int:
    """How many leading elements of a run of ``n`` the vector loop takes (the seed and the
    whole vectors after it; none for a single element: NumPy returns it as it is)."""
    if order.lanes == 0 or n == 1:
        return 0
    return 1 + (n - 1) // order.lanes * order.lanes


def _model_rows(order: RowOrder, x: np.ndarray, biggest: bool) -> np.ndarray:
    """The model's result bits for each row of ``x``."""
    uint = _uint(x.dtype)
    rows, n = x.shape
    every = np.arange(rows)
    ranked = x[:, in_order(order, n)]
    extreme = ranked.max(axis=1) if biggest else ranked.min(axis=1)
    hits = ranked == extreme[:, None]
    last = n + (hits.shape[1] - n) - 1 - np.argmax(hits[:, ::-1], axis=1)
    bits = ranked.view(uint)[every, last]
    nan = np.isnan(x)
    nan_bits = np.where(nan[:, :_vector_part(order, n)].any(axis=1), uint(order.vector_nan),
                        x.view(uint)[every, np.argmax(nan, axis=1)])
    return np.where(nan.any(axis=1), nan_bits, bits).astype(uint)


def _numpy_rows(x: np.ndarray, biggest: bool) -> np.ndarray:
    with np.errstate(all="ignore"):
        result = np.max(x, axis=-1) if biggest else np.min(x, axis=-1)
    return result.view(_uint(x.dtype))


def _probe_rows(dtype: np.dtype, n: int, rng: np.random.Generator,
                biggest: bool) -> np.ndarray:
    """Rows of zeros of either sign and numbers on the far side of zero, some with NaNs."""
    far = -1.0 if biggest else 1.0
    rows = rng.choice(np.array([0.0, -0.0, far, 0.0, -0.0], dtype), size=(6, n))
    uint = _uint(dtype)
    for r in range(3, 6):   # a NaN of each sign somewhere: in the vector part or the rest
        for payload in _NAN_PAYLOADS[dtype.itemsize][: r - 3 + 1]:
            rows[r, rng.integers(0, n)] = np.array(payload, uint).view(dtype)
    return rows


def _lengths(lanes: int) -> list[int]:
    """Run lengths that reach each part of the loop: the seed alone, the first vectors
    and the rest, around one and two blocks of eight vectors, long runs."""
    block = 8 * lanes
    return [1000, 4099, *range(1, 3 * lanes + 3), *range(block - 1, block + 3),
            block + lanes + 1, 2 * block + lanes + 2]   # a wrong model fails the long first


def _holds(order: RowOrder, dtype: np.dtype) -> bool:
    rng = np.random.default_rng(2024)
    for n in _lengths(max(order.lanes, 8)):
        for biggest in (True, False):
            x = _probe_rows(dtype, n, rng, biggest)
            if not np.array_equal(_model_rows(order, x, biggest), _numpy_rows(x, biggest)):
                return False
    return True


def _lane_order(dtype: np.dtype, lanes: int) -> RowOrder:
    """The lanes' order if NumPy's vectors had ``lanes`` lanes: from rows of a negative
    seed and one vector holding zeros of either sign, the highest-priority lane among a
    set found by halving it, then the next without it."""
    remaining, ranked = list(range(lanes)), []
    while remaining:
        candidates = remaining
        while len(candidates) > 1:
            half = candidates[: len(candidates) // 2]
            row = np.full(1 + lanes, -1.0, dtype)
            row[[1 + lane for lane in candidates]] = -0.0
            row[[1 + lane for lane in half]] = 0.0
            positive = not np.signbit(np.max(row))
            candidates = half if positive else candidates[len(half):]
        ranked.insert(0, candidates[0])
        remaining = [lane for lane in remaining if lane != candidates[0]]
    row = np.zeros(1 + lanes, dtype)
    row[1] = np.array(_NAN_PAYLOADS[dtype.itemsize][1], _uint(dtype)).view(dtype)
    with np.errstate(all="ignore"):
        nan_bits = int(np.max(row).view(_uint(dtype)))
    return RowOrder(lanes, tuple(ranked), nan_bits)


@functools.cache
def row_order(dtype: str) -> RowOrder | None:
    """NumPy's max/min order for contiguous runs of float ``dtype`` on this machine, or
    None where no model here matches NumPy's results. Measured once per machine (the
    disk cache remembers it: ~50 ms of probing in every process that fused a max/min)."""
    from tsjit.codegen.engine import remembered

    def measure() -> str:
        order = _measured_row_order(dtype)
        return "none" if order is None else \
            " ".join(map(str, (order.lanes, order.vector_nan, *order.lane_order)))
    answer = remembered(f"numpy_minmax.row_order({dtype})", measure)
    if answer == "none":
        return None
    lanes, vector_nan, *lane_order = map(int, answer.split())
    return RowOrder(lanes, tuple(lane_order), vector_nan)


def _measured_row_order(dtype: str) -> RowOrder | None:
    np_dtype = np.dtype(dtype)
    if np_dtype == np.float16:
        candidates = [RowOrder(0)]
    else:
        candidates = [_lane_order(np_dtype, width // np_dtype.itemsize)
                      for width in _VECTOR_BYTES]
    return next((order for order in candidates if _holds(order, np_dtype)), None)


def _unrolled_model(x: np.ndarray, biggest: bool) -> np.ndarray:
    """The unrolled scalar loop's result bits for each row of ``x`` (module docstring)."""
    def combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        wins = (a > b) if biggest else (a < b)
        return np.where(np.isnan(a) | wins, a, b)

    out, rest = x[:, 0], x.shape[1] - 1
    whole = rest // UNROLL * UNROLL
    if whole:
        lanes = x[:, 1:1 + UNROLL]
        for i in range(1 + UNROLL, 1 + whole, UNROLL):
            lanes = combine(lanes, x[:, i:i + UNROLL])
        while lanes.shape[1] > 1:
            lanes = combine(lanes[:, 0::2], lanes[:, 1::2])
        out = combine(out, lanes[:, 0])
    for i in range(1 + whole, x.shape[1]):
        out = combine(out, x[:, i])
    return out.view(_uint(x.dtype))


@functools.cache
def unrolled_holds(dtype: str) -> bool:
    """Whether NumPy's max/min of float32/float64 runs read at a stride other than the
    element size (reversed, every other element) follows the unrolled scalar loop here
    (``_unrolled_model``); where it does not, no kernel reads such a run for a max/min."""
    from tsjit.codegen.engine import remembered

    def measure() -> str:
        np_dtype = np.dtype(dtype)
        rng = np.random.default_rng(11)
        for n in (*range(1, 3 * UNROLL + 3), 64, 65, 1000):
            for biggest in (True, False):
                x = _probe_rows(np_dtype, 2 * n, rng, biggest)
                for view in (x[:, ::-1], x[:, ::2]):
                    row = np.ascontiguousarray(view[:, :n])
                    if not np.array_equal(_unrolled_model(row, biggest),
                                          _numpy_rows(view[:, :n], biggest)):
                        return "no"
        return "yes"
    return remembered(f"numpy_minmax.unrolled_holds({dtype})", measure) == "yes"


def _column_model(x: np.ndarray, biggest: bool, newer: bool) -> np.ndarray:
    uint = _uint(x.dtype)
    out = x[0].copy()
    for row in x[1:]:
        if biggest:
            wins = (row > out) | (newer & (row == out))
        else:
            wins = (row < out) | (newer & (row == out))
        out = np.where(np.isnan(out) | ~(wins | np.isnan(row)), out, row)
    return out.view(uint)


@functools.cache
def column_newer_wins(dtype: str) -> bool | None:
    """Whether NumPy's max/min along a leading axis (``out = op(out, x[i])``, row after
    row) keeps the newer of equal values (float32/float64 on x86) or the older (float16);
    None if neither model matches NumPy's results here."""
    np_dtype = np.dtype(dtype)
    rng = np.random.default_rng(7)
    matches = {True, False}
    for rows in (2, 3, 9, 40):
        for biggest in (True, False):
            x = _probe_rows(np_dtype, rows * 24, rng, biggest).reshape(-1, rows, 24)[0]
            x = np.ascontiguousarray(x.reshape(rows, 24))
            with np.errstate(all="ignore"):
                want = (np.max(x, axis=0) if biggest else np.min(x, axis=0)).view(_uint(x.dtype))
            matches = {newer for newer in matches
                       if np.array_equal(_column_model(x, biggest, newer), want)}
    return matches.pop() if len(matches) == 1 else None


def fingerprint(dtypes) -> str:
    """A digest of the answers for these float dtypes (names), asked only when a kernel
    takes a float max or min of them (probing costs ~50 ms per dtype)."""
    table = repr([(dtype, row_order(dtype), column_newer_wins(dtype))
                  for dtype in sorted(set(dtypes))])
    return hashlib.sha256(table.encode()).hexdigest()[:16]
