"""Native loops that run in chunks (codegen/scalar/loops.py): a loop without loops inside
runs at most INTERRUPT_CHECK_INTERVAL (2**16) passes between two interrupt checks, as an
inner loop LLVM may unroll and vectorize.  Each test compares native code with eager
Python (results, exceptions, warnings, argument mutations) at trip counts on both sides
of the chunk boundaries, with the ways a loop can end early: break, return, a condition,
an exception after array writes, an int leaving int64, an index out of bounds.
"""
from __future__ import annotations

import numpy as np
import pytest
from _native import INT64_MAX, check_native, native

from tsjit.codegen.scalar.loops import INTERRUPT_CHECK_INTERVAL

CHUNK = INTERRUPT_CHECK_INTERVAL
TRIPS = [0, 1, 2, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 3]


def mod_sum(n: int) -> int:
    s = 0
    for i in range(n):
        s += i % 1000
    return s


def strided_sum(a: int, b: int, step: int) -> int:
    s = 0
    for i in range(a, b, step):
        s += i * 3 - (i & 7)
    return s


def sum_before_break(n: int, stop: int) -> int:
    s = 0
    for i in range(n):
        if i == stop:
            break
        s += i
    return s


def sum_skipping(n: int, every: int) -> int:
    s = 0
    for i in range(n):
        if i % every == 0:
            continue
        s += i
    return s


def first_multiple(n: int, k: int) -> int:
    for i in range(1, n):
        if i % k == 0:
            return i
    return -1


def count_while(limit: int) -> int:
    i = 0
    while i * 2 < limit:
        i += 1
    return i


@pytest.mark.parametrize("n", TRIPS)
def test_counted_loops_at_chunk_boundaries(n):
    check_native(mod_sum, (n,))
    check_native(strided_sum, (0, n, 1), (n, 0, -1), (-n, n, 3), (n, -n, -2))
    check_native(sum_before_break, (n + 5, n), (n, n + 1), (n, 0))
    check_native(sum_skipping, (n, 3), (n, 1))
    check_native(first_multiple, (n + 2, n + 1), (n, n + 1), (n + 3, max(n, 1)))
    check_native(count_while, (2 * n,), (2 * n - 1,))


def two_dims(m: np.ndarray) -> float:
    s = 0.0
    for r in range(m.shape[0]):
        for c in range(m.shape[1]):
            s += float(m[r, c]) * (r + 1)
    return s


@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (1, CHUNK + 1), (CHUNK + 1, 1),
                                   (3, CHUNK - 1), (300, 300)])
def test_nested_loops_share_the_budget(shape):
    """Short inner loops charge the budget of the outer loop's checks too."""
    m = np.arange(shape[0] * shape[1], dtype=np.float64).reshape(shape) % 17
    check_native(two_dims, (m,))


def divide_into(x: np.ndarray, out: np.ndarray) -> int:
    for i in range(x.shape[0]):
        out[i] = 1000 // int(x[i])
    return 0


def store_beyond(out: np.ndarray, n: int) -> int:
    for i in range(n):
        out[i] = i
    return n


def read_ahead(x: np.ndarray, out: np.ndarray) -> int:
    for i in range(x.shape[0]):
        out[i] = x[i] + x[i + 1]
    return 0


@pytest.mark.parametrize("at", [0, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 2])
def test_exceptions_mid_loop_keep_the_writes_before_them(at):
    x = np.arange(1, 2 * CHUNK + 4, dtype=np.int64)
    x[at] = 0
    check_native(divide_into, (x, np.zeros_like(x)))
    out = np.full(at + 1, -1, dtype=np.int64)
    check_native(store_beyond, (out, at + 1), (out, at + 2))     # IndexError at the last pass
    y = np.arange(at + 1, dtype=np.float64)
    check_native(read_ahead, (y, np.zeros_like(y)))


def grow(base: int, step: int, n: int, out: np.ndarray) -> int:
    v = base
    for i in range(n):
        v += step
        out[i & 7] = v & 255
    return v


def grow_quietly(base: int, step: int, n: int) -> int:
    v = base
    for _ in range(n):
        v += step
    return v


@pytest.mark.parametrize("passes", [CHUNK - 1, CHUNK, CHUNK + 1])
def test_an_int_leaving_int64_at_a_chunk_boundary(passes):
    """The pass that takes v beyond int64 lies by a chunk's end: without writes the region
    runs again in the interpreter (Python's int); after writes it raises OverflowError
    (README: an int beyond 64 bits after an effect), with the writes of the passes before
    that one done."""
    step = 1 << 40
    base = INT64_MAX - step * passes + 1
    check_native(grow_quietly, (base, step, passes - 1), (base, step, passes),
                 (base, step, passes + 1))
    out, eager_out = np.zeros(8, dtype=np.int64), np.zeros(8, dtype=np.int64)
    check_native(grow, (base, step, passes - 1, out))
    run, _ = native(grow)
    with pytest.raises(OverflowError):
        run(base, step, passes, out)
    grow(base, step, passes - 1, eager_out)
    assert np.array_equal(out, eager_out)


# ---------------------------------------------------------------------------- bounds
# A chunk runs without the bounds checks of accesses at indices affine in the counter
# where both of its ends lie within the arrays (codegen/scalar/element_access.py), and
# as written elsewhere: every form below is run where it stays within bounds, where it
# leaves them at the first or the last pass, on contiguous and strided arrays.

def shifted(x: np.ndarray, out: np.ndarray, lo: int, hi: int, step: int, k: int) -> int:
    for i in range(lo, hi, step):
        out[i] = x[i + k] * 2 - x[i - k]
    return 0


def columns(m: np.ndarray, out: np.ndarray) -> float:
    s = 0.0
    for r in range(m.shape[0]):
        for c in range(m.shape[1]):
            out[c] += m[r, c] * (c + 1)
            if c < m.shape[0] and r < m.shape[1]:
                s += float(m[c, r])
    return s


def guarded(x: np.ndarray, n: int) -> int:
    s = 0
    for i in range(n):
        if i < x.shape[0]:
            s += int(x[i])
    return s


def _layouts(n: int) -> list[np.ndarray]:
    base = np.arange(2 * n + 8, dtype=np.float64) * 0.5 - 3.0
    return [base[:n].copy(), base[: 2 * n : 2], base[n - 1 :: -1] if n else base[:0]]


@pytest.mark.parametrize("n", [1, 5, CHUNK + 3])
@pytest.mark.parametrize("layout", [0, 1, 2], ids=["contiguous", "strided", "reversed"])
def test_affine_indices_within_and_beyond_the_arrays(n, layout):
    x = _layouts(n)[layout]
    calls = [(lo, hi, step, k) for lo, hi, step, k in [
        (0, n, 1, 0), (1, n - 1, 1, 1), (0, n, 1, 1), (1, n, 1, 1), (0, n - 1, 1, -1),
        (n - 1, -1, -1, 0), (n - 1, 0, -1, 1), (0, n, 3, 0), (-n, 0, 1, 0), (0, n + 1, 1, 0),
        (n - 1, CHUNK + n, 1, 0)]]
    for lo, hi, step, k in calls:
        check_native(shifted, (x, np.zeros(n), lo, hi, step, k))
    check_native(guarded, (x.astype(np.int64), n), (x.astype(np.int64), n + 3))


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 5), (300, 220)])
def test_two_dimensional_accesses_along_either_axis(shape):
    m = (np.arange(shape[0] * shape[1], dtype=np.float64) % 11).reshape(shape)
    check_native(columns, (m, np.zeros(shape[1])), (np.asfortranarray(m), np.zeros(shape[1])),
                 (m, np.zeros(shape[1] - 1)))


def remainders(a: int, b: int) -> int:
    s = 0
    for i in range(a, b):
        s += i % 1000 + i // 7 + (i + a) % 3
    for j in range(b - a):
        s += j % 1000 + j // 7
    return s


@pytest.mark.parametrize("a, b", [(0, CHUNK + 5), (-CHUNK - 5, 3), (-7, 7),
                                  (INT64_MAX - 2 * CHUNK, INT64_MAX)])
def test_remainders_of_ints_of_either_sign(a, b):
    """`%` and `//` by a positive constant of an int int_ranges shows >= 0 are unsigned
    division (LLVM strength-reduces them); of any other int, Python's floor forms."""
    check_native(remainders, (a, b))


# ---------------------------------------------------------------------------- gathered tests
# A chunk without effects gathers the tests of its rare cases in a flag and, where one
# held, runs again as written (codegen/scalar/loops.py, _chunk): the warnings, the
# exceptions under np.errstate and the re-runs of ints beyond 64 bits must be eager's,
# at the pass where eager meets them.

def running_sum(a: np.ndarray) -> np.ndarray:
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


def running_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    s = a[0] * b[0]
    for i in range(1, a.shape[0]):
        s += a[i] * b[i]
    return s


def int_total(a: np.ndarray) -> int:
    s = 0
    for i in range(a.shape[0]):
        s += int(a[i])
    return s


@pytest.mark.parametrize("at", [0, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 2])
@pytest.mark.parametrize("errors", ["warn", "raise", "ignore"])
def test_rare_cases_of_a_gathered_chunk_are_eagers(at, errors):
    n = 2 * CHUNK + 3
    big = np.ones(n)
    big[at:at + 2] = np.finfo(np.float64).max   # overflow at `at + 1`, then inf - inf: nan
    big[-1] = -np.inf
    tiny = np.full(n, 0.5)
    tiny[at] = 1e-300                              # an underflowing product, and zeros
    zeros = np.where(np.arange(n) % 5 == 0, 0.0, tiny)
    with np.errstate(all=errors):
        check_native(running_sum, (big,), (np.ones(n),))
        check_native(running_dot, (tiny, tiny), (zeros, tiny), (big, tiny))
    wide = np.ones(n, dtype=np.int64)
    wide[at] = INT64_MAX
    check_native(int_total, (wide,), (-wide,), (np.ones(n, dtype=np.int64),))


# ---------------------------------------------------------------------------- NumPy indices

def bincount(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    for i in range(values.shape[0]):
        counts[values[i]] += 1
    return counts


def pick(m: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> float:
    s = 0.0
    for i in range(rows.shape[0]):
        s += float(m[rows[i], cols[i]])
    return s


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "uint64"])
def test_numpy_integers_index_arrays_as_numpy_does(dtype):
    """An index that is a NumPy integer (an element of another array) is its value:
    negative ones count from the end, and out of bounds (a uint64 from 2**63 too) raises
    NumPy's IndexError after the writes before it."""
    signed = np.dtype(dtype).kind == "i"
    values = np.array([3, 0, 5, 3, 1] * 7 + ([-1, -6] if signed else []), dtype=dtype)
    check_native(bincount, (values, np.zeros(6, np.int64)))
    beyond = np.append(values, np.array(6 if not signed else -7, dtype=dtype))
    check_native(bincount, (beyond, np.zeros(6, np.int64)))
    if dtype == "uint64":
        check_native(bincount, (np.array([1, 2 ** 63 + 1], dtype=dtype), np.zeros(6, np.int64)))
    m = np.arange(12.0).reshape(3, 4)
    check_native(pick, (m, np.array([0, 2, 1], dtype=dtype), np.array([3, 0, 2], dtype=dtype)),
                 (m, np.array([0, 3], dtype=dtype), np.array([1, 1], dtype=dtype)))


def bincount_every(values: np.ndarray, base: np.ndarray, step: int) -> np.ndarray:
    counts = base[::step]       # a view made here: check_native's copies are contiguous
    for i in range(values.shape[0]):
        counts[values[i]] += 1
    return base


def bincount_column(values: np.ndarray, m: np.ndarray) -> np.ndarray:
    counts = m[:, 1]
    for i in range(values.shape[0]):
        counts[values[i]] += 1
    return m


@pytest.mark.parametrize("n", [5, CHUNK + 1])
def test_an_index_from_an_array_into_a_strided_view(n):
    """counts[values[i]] uses the item size as its stride where the chunk's test shows
    the last axis contiguous (ElementAccesses.contiguous); a strided or reversed view of
    counts, or a column of a matrix, runs the chunk as written."""
    values = np.arange(n, dtype=np.int64) % 6 - 2
    check_native(bincount_every, *((values, np.zeros(12, np.int64), step)
                                   for step in (1, 2, -2)),
                 (np.append(values, 6), np.zeros(12, np.int64), 2))
    check_native(bincount_column, (values, np.zeros((6, 3), np.int64)))


def test_a_bool_or_float_index_is_left_to_the_interpreter():
    """NumPy's bool scalar index adds an axis and a float one raises: not element reads."""
    check_native(bincount, (np.array([True, False]), np.zeros(6, np.int64)), natively=False)
    check_native(bincount, (np.array([1.0, 2.0]), np.zeros(6, np.int64)), natively=False)


def sum_then_power(a: np.ndarray, n: int):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    k = 1
    for _ in range(n):
        k *= 3
    return s, k


def test_an_in_place_update_of_a_number_is_no_effect():
    """s += a[i] of NumPy scalars only computes: an int beyond 64 bits after it re-runs the
    region (eager's int), where it raised OverflowError as after an array write."""
    check_native(sum_then_power, (np.ones(4), 3), (np.ones(4), 50))


def masked_total(s0: int, n: int, sign: int) -> int:
    s = s0
    for i in range(n):
        if sign > 0:
            s += i & 255
        else:
            s -= i & 255
    return s


def plain_total(s0: int, n: int) -> int:
    s = s0
    for i in range(n):
        s += (i | 255) & 255        # always 255, known only to lie in [0, 255]
    return s


@pytest.mark.parametrize("margin", [0, 255, 20_000_000, 255 * CHUNK - 1, 255 * CHUNK,
                                    255 * CHUNK + 1, 2 * 255 * CHUNK])
def test_a_sum_of_bounded_terms_leaves_int64_as_eagers(margin):
    """A chunk leaves out the overflow test of s += (i & 255) where its entry value of s
    lies 255 * 2**16 inside int64 (_chunk_sums); by either end the chunk runs tested."""
    n = 3 * CHUNK
    check_native(plain_total, (INT64_MAX - margin, n), (-INT64_MAX - 1 + margin, n),
                 (0, n), (INT64_MAX - margin, 0))
    check_native(masked_total, (INT64_MAX - margin, n, 1), (-INT64_MAX - 1 + margin, n, -1))


def hashed(a: int, b: int) -> int:
    s = 0
    for i in range(a, b):
        s ^= (i * 2654435761) >> 20     # a wrapped product would change it
    return s


@pytest.mark.parametrize("offset", [-2 * CHUNK, -CHUNK - 1, -CHUNK, -1, 0, 1])
def test_a_product_of_the_index_leaves_int64_as_eagers(offset):
    """i * k is tested once, on i (int_ranges); a chunk whose first and last i lie within
    the bound leaves the test out (ElementAccesses.affine_tests), one reaching past it
    runs tested: the region re-runs at eager's pass."""
    bound = INT64_MAX // 2654435761
    check_native(hashed, (bound + offset, bound + offset + CHUNK + 2),
                 (-bound - offset - CHUNK - 2, -bound - offset), (0, CHUNK + 5))


# ------------------------------------------------------- int sums of any int64 terms

def int_balance(a: np.ndarray, s: int) -> int:
    for i in range(a.shape[0]):
        s -= int(a[i])
    return s


@pytest.mark.parametrize("at", [0, CHUNK - 3, CHUNK - 2, CHUNK, CHUNK + 1])
def test_a_wrapping_int_sum_is_exact_at_each_chunks_end(at):
    """s += int(a[i]) (and s -= ...) of any int64 terms adds in wrapping arithmetic within
    a chunk and tests the exact total at the chunk's end (chunk_sums.WideSums): four terms
    of 2**62 wrap to the entry value, and only the sum of the terms' high halves shows
    that the total left int64; a total that leaves int64 and comes back is Python's; a
    chunk whose total leaves int64 runs again tested, the region re-runs at eager's pass.
    `at` puts the terms within a chunk and across its end."""
    n = 2 * CHUNK + 3
    arrays = []
    for terms in ([2 ** 62] * 4, [2 ** 62, 2 ** 62, -2 ** 62, -2 ** 62],
                  [-2 ** 63, -2 ** 63, 5], [INT64_MAX, INT64_MAX, 2, -INT64_MAX]):
        a = np.ones(n, dtype=np.int64)
        a[at:at + len(terms)] = terms
        arrays.append(a)
    check_native(int_total, *((a,) for a in arrays), (-arrays[0],))
    check_native(int_balance, *((a, s0) for a in arrays for s0 in (0, INT64_MAX, -INT64_MAX)))
    if at % CHUNK < CHUNK - 3:      # within a chunk, a total back in int64 needs no re-run
        for fn, args in ((int_total, (arrays[1],)), (int_balance, (arrays[1], -7))):
            regions = check_native(fn, args)
            assert sum(r.stats()["reruns"] for r in regions) == 0


# ------------------------------------------------------- float rows written after a chunk

def row_dots(m: np.ndarray, x: np.ndarray, out: np.ndarray) -> np.ndarray:
    for r in range(m.shape[0]):
        s = 0.0
        for c in range(m.shape[1]):
            s += m[r, c] * x[c]
        out[r] = s
    return out


@pytest.mark.parametrize("at", [(0, 0), (1, CHUNK - 1), (2, CHUNK), (2, CHUNK + 2)])
@pytest.mark.parametrize("errors", ["warn", "raise"])
def test_events_of_a_gathered_row_come_after_the_rows_before_it(at, errors):
    """A row's inner loop gathers its products' cheap event tests (not normal: zeros
    too) and its sum's at the chunk's end; a chunk where one held runs again as written:
    an underflow (of a product) or an overflow (of the sum) at row r, pass p warns or
    raises there, with out written for the rows before r; zero products are no event."""
    rows, cols = 3, CHUNK + 4
    r, p = at
    x = np.full(cols, 0.5)
    tiny, big, zeros = (np.ones((rows, cols)) for _ in range(3))
    tiny[r, p] = 1e-300                          # 1e-300 * 1e-300: underflow to zero
    x_tiny = x.copy()
    x_tiny[p] = 1e-300
    big[r, p:p + 2] = np.finfo(np.float64).max  # finite products, the sum overflows
    zeros[:, ::7] = 0.0
    zeros[r, p] = 0.0
    with np.errstate(all=errors):
        check_native(row_dots, (tiny, x_tiny, np.zeros(rows)), (big, x * 2, np.zeros(rows)),
                     (zeros, x_tiny, np.zeros(rows)), (zeros, x, np.zeros(rows)))
