"""Loops over array elements as users write them (distances, scans, running extremes,
powers of NumPy scalars), native against eager Python: results with their Python types
(np.float64 is not float), warnings, exceptions and array writes; and the native forms
these loops now take (the first pass of a loop peeled off where it turns a Python number
into a NumPy scalar, a Python-or-NumPy value compared without a branch on which it is).
"""
from __future__ import annotations

import numpy as np
import pytest
from _native import check_native, native

import tsjit
from tsjit.codegen.scalar import emitter as scalar_emitter
from tsjit.codegen.scalar.inference import infer_kinds
from tsjit.codegen.scalar.ntypes import NumpyScalar, Tagged, kind_of_value

FLOATS = (np.float64, np.float32)
RNG = np.random.default_rng(5)


def pairwise_distances(x: tsjit.Tensor, out: tsjit.Tensor) -> tsjit.Tensor:
    n = x.shape[0]
    d = x.shape[1]
    for i in range(n):
        for j in range(n):
            s = 0.0
            for k in range(d):
                t = x[i, k] - x[j, k]
                s += t * t
            out[i, j] = s ** 0.5
    return out


def running_sum(x: tsjit.Tensor):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def max_drawdown(prices: tsjit.Tensor):
    peak = prices[0]
    worst = 0.0
    for i in range(prices.shape[0]):
        p = prices[i]
        if p > peak:
            peak = p
        drawdown = (peak - p) / peak
        if drawdown > worst:
            worst = drawdown
    return worst


def power_each(x: tsjit.Tensor, e: float, out: tsjit.Tensor) -> tsjit.Tensor:
    for i in range(x.shape[0]):
        out[i] = x[i] ** e
    return out


def product(x: tsjit.Tensor):
    p = 1.0
    for i in range(x.shape[0]):
        p *= x[i]
    return p


def int_total(x: tsjit.Tensor):
    s = 0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def ewma(x: tsjit.Tensor, out: tsjit.Tensor, alpha: float) -> tsjit.Tensor:
    level = x[0]
    for i in range(x.shape[0]):
        level = alpha * x[i] + (1.0 - alpha) * level
        out[i] = level
    return out


def lookup_sum(x: tsjit.Tensor, idx: tsjit.Tensor):
    s = 0.0
    for i in range(idx.shape[0]):
        s += x[int(idx[i])]
    return s


@pytest.mark.parametrize("dtype", FLOATS)
def test_pairwise_distances(dtype):
    x = RNG.standard_normal((7, 5)).astype(dtype)
    check_native(pairwise_distances, (x, np.zeros((7, 7), dtype)),
                 (x[:0], np.zeros((0, 0), dtype)), (x, np.zeros((7, 7), np.float64)))


@pytest.mark.parametrize("dtype", (*FLOATS, np.int64, np.int32, np.uint8, np.bool_))
def test_a_running_sum_is_a_python_float_only_when_the_loop_never_ran(dtype):
    x = (RNG.standard_normal(9) * 50).astype(dtype)
    check_native(running_sum, (x,), (x[:1],), (x[:0],))


@pytest.mark.parametrize("dtype", FLOATS)
def test_running_sums_overflow_and_nan_as_numpy_warns(dtype):
    big = np.finfo(dtype).max
    check_native(running_sum, (np.array([big, big, -big, 1.0], dtype),),
                 (np.array([np.inf, -np.inf, 2.0], dtype),),
                 (np.array([1.0, np.nan], dtype),))


def test_max_drawdown_returns_the_python_float_until_a_drawdown_replaces_it():
    rising = np.arange(1.0, 9.0)
    prices = 100.0 + np.cumsum(RNG.standard_normal(50))
    check_native(max_drawdown, (rising,), (prices,), (prices.astype(np.float32),),
                 (np.array([3.0, np.nan, 1.0]),), (np.array([2.0, 0.0, -1.0]),),
                 (np.array([0.0, 0.0]),), (rising[:0],))


@pytest.mark.parametrize("dtype", FLOATS)
def test_powers_of_numpy_scalars_are_the_c_librarys_with_numpys_warnings(dtype):
    x = np.array([2.0, 0.5, 0.0, -0.0, 1e-30, 3.0, np.inf, np.nan], dtype)
    for e in (0.5, 2.0, -1.0, 1.5, 0.0, -0.5, 40.0, 1e4):
        check_native(power_each, (x, e, np.zeros_like(x)), (-x, e, np.zeros_like(x)))
    with np.errstate(all="raise"):
        check_native(power_each, (x[:2], 0.5, np.zeros(2, dtype)), (-x[:1], 0.5, x[:1] * 0),
                     (x[4:5], 40.0, x[:1] * 0), (x[2:3], -1.0, x[:1] * 0))
    with np.errstate(under="warn"):
        check_native(power_each, (x[4:5], 40.0, x[:1] * 0))


@pytest.mark.parametrize("dtype", FLOATS)
def test_a_peeled_product_overflows_underflows_and_raises_as_numpy(dtype):
    info = np.finfo(dtype)
    x = np.array([1e20, 1e20, 1e20, 1e-30], dtype)
    check_native(product, (x,), (np.array([info.tiny, info.tiny], dtype),), (x[:0],))
    with np.errstate(over="raise", under="raise"):
        check_native(product, (x,), (np.array([info.tiny, info.tiny], dtype),))


@pytest.mark.parametrize("dtype", (np.int64, np.int32, np.uint64, np.int8))
def test_numpy_integer_totals_wrap_with_numpys_overflow_warning(dtype):
    info = np.iinfo(dtype)
    check_native(int_total, (np.array([info.max, 1, 5], dtype),),
                 (np.array([3, 4], dtype),), (np.array([], dtype),))
    with np.errstate(over="raise"):
        check_native(int_total, (np.array([info.max, 1], dtype),))


def test_float32_arithmetic_with_python_floats_stays_float32():
    x = RNG.standard_normal(20).astype(np.float32)
    check_native(ewma, (x, np.zeros_like(x), 0.125), (x, np.zeros(20), 0.3),
                 (x.astype(np.float64), np.zeros(20, np.float32), 0.3))


def test_indexes_out_of_range_raise_index_error_after_the_writes_before_them():
    x = np.arange(5.0)
    check_native(lookup_sum, (x, np.array([0, 4, -1, -5])), (x, np.array([1, 5, 2])),
                 (x, np.array([0, -6])))
    check_native(power_each, (x, 2.0, np.zeros(3)))


def _loop_params(fn, *args):
    """The run-time kinds of the loop-carried values of fn's (only) native region, and
    whether its loop is peeled."""
    _, (region,) = native(fn)
    kinds = infer_kinds(region.region, [kind_of_value(a) for a in args])
    (loop,) = [n for n in region.region.nodes() if n.kind == "prim::Loop"]
    return [kinds[p] for p in loop.blocks[0].params[1:]], loop in kinds.peeled


@pytest.mark.parametrize("dtype", (np.float64, np.float32, np.int64))
def test_a_loop_turning_a_python_number_into_a_numpy_scalar_is_peeled(dtype):
    params, peeled = _loop_params(running_sum, np.zeros(3, dtype))
    assert peeled and params == [NumpyScalar((0.0 + dtype(1)).dtype)]   # int64: float64


def test_a_loop_whose_value_may_stay_a_python_number_is_not_peeled():
    params, peeled = _loop_params(max_drawdown, np.zeros(3))
    assert not peeled and any(isinstance(k, Tagged) for k in params)


def test_a_python_or_numpy_float_compares_with_a_numpy_float_without_a_branch(monkeypatch):
    """`drawdown > worst` reads `worst` (a Python float or an np.float64 of the same value)
    as an np.float64: the comparison is emitted once, not once per possibility."""
    splits = []
    original = scalar_emitter.FunctionEmitter._split

    def recording(self, node, args, k):
        splits.append(node.kind)
        return original(self, node, args, k)
    monkeypatch.setattr(scalar_emitter.FunctionEmitter, "_split", recording)
    prices = 100.0 + np.cumsum(RNG.standard_normal(30))
    check_native(max_drawdown, (prices,))
    assert "aten::gt" not in splits


def test_guard_failures_and_other_dtypes_after_specializing():
    """Through the executor: profiled, specialized for float64, then float32, int and
    empty arguments fail its guards and give eager's results."""
    scripted = tsjit.script(running_sum)
    x = RNG.standard_normal(6)
    for args in [(x,)] * 4 + [(x.astype(np.float32),), (np.arange(4),), (x[:0],), (x,)]:
        got, want = scripted(*args), running_sum(*args)
        assert type(got) is type(want) and got == want
    stats = scripted.stats()
    assert stats["kernel_launches"] > 0 and stats["guard_failures"] > 0


def test_powers_and_zero_products_run_without_the_interpreter(monkeypatch):
    """`s ** 0.5` of an np.float64 (0.0 included: a point's distance to itself) and
    products with a zero operand stay in native code: no fallback site runs."""
    from tsjit.codegen.scalar import sites
    calls = []
    original = sites.Site.__call__

    def counting(self, *args):
        calls.append(self.node.kind)
        return original(self, *args)
    monkeypatch.setattr(sites.Site, "__call__", counting)
    x = RNG.standard_normal((6, 4))
    x[2] = 0.0
    check_native(pairwise_distances, (x, np.zeros((6, 6))))
    check_native(product, (np.array([2.0, 0.0, 3.0, -0.0]),))
    assert calls == []


def step_toward_zero(x: tsjit.Tensor, out: tsjit.Tensor, k: int) -> tsjit.Tensor:
    for i in range(x.shape[0]):
        v = x[i]
        if v < 0:
            w = v + k
        else:
            w = v - k
        out[i] = w
    return out


def scale_by_sign(x: tsjit.Tensor, out: tsjit.Tensor) -> tsjit.Tensor:
    for i in range(x.shape[0]):
        v = x[i]
        if v < 0.0:
            w = v * 1e300
        else:
            w = v * 1e-300
        out[i] = w
    return out


@pytest.mark.parametrize("dtype", (np.int64, np.int32, np.uint8))
def test_both_arms_of_a_numpy_if_run_but_only_the_taken_one_warns(dtype, monkeypatch):
    """The arms' NumPy arithmetic runs unconditionally with its overflow tests collected
    (no branch to mispredict); only an overflow of the arm taken warns or raises."""
    checked = []
    original = scalar_emitter.FunctionEmitter._checked_select_if

    def recording(self, node):
        checked.append(node)
        return original(self, node)
    monkeypatch.setattr(scalar_emitter.FunctionEmitter, "_checked_select_if", recording)
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, 0, info.min + 3, 7], dtype)
    calls = [(x, np.zeros_like(x), 1), (x, np.zeros_like(x), 5), (x[2:], np.zeros(3), 300)]
    check_native(step_toward_zero, *calls)
    with np.errstate(over="raise"):
        check_native(step_toward_zero, *calls)
    assert checked


def test_float_arms_overflow_or_underflow_only_where_taken():
    x = np.array([-1e10, 1e-10, 2.0, -0.0, 0.0, np.nan, -3.0])
    for state in ("ignore", "warn", "raise"):
        with np.errstate(over=state, under=state):
            check_native(scale_by_sign, (x, np.zeros_like(x)), (x[1:2], np.zeros(1)),
                         (x[4:], np.zeros(3)))


def test_an_index_out_of_bounds_ends_the_native_run(monkeypatch):
    """The path of an index out of bounds calls Python's indexing (NumPy's IndexError)
    and never comes back into the loop, so the loop after a read may take its index as
    in bounds (one bounds test for `counts[b] += 1`, no registers saved around the
    call).  A Python indexing that did not raise would be a bug: SystemError."""
    from tsjit.codegen.scalar import sites
    x = np.arange(5.0)
    check_native(lookup_sum, (x, np.array([0, 7])), (x, np.array([-6])))
    monkeypatch.setattr(sites.Site, "__call__", lambda self, *args: np.float64(0.0))
    run, _ = native(lookup_sum)
    with pytest.raises(SystemError, match="did not raise"):
        run(x, np.array([0, 7]))


def int_steps(x: tsjit.Tensor, d: int):
    s = x[0]
    t = x[0]
    for i in range(x.shape[0]):
        s = s + x[i] * 3
        t = x[i] // d + x[i] % d
    return s, t


def quotients(x: tsjit.Tensor, d: float):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] / d
    return s


def python_quotients(n: int, d: int) -> float:
    s = 0.0
    for i in range(n):
        s += i % d + i / d
    return s


def test_numpy_scalar_overflow_and_division_by_zero_warn_or_raise_as_numpy():
    """NumPy 2.4 warns "overflow encountered in scalar multiply" for np.int64, "divide by
    zero encountered in scalar floor_divide / remainder" (result 0) for integer // and %
    by zero, and "divide by zero" / "invalid value" for float division: native loops
    give the same values and warnings, and FloatingPointError under errstate(raise)."""
    x = np.array([2**62, 2**62, 5], np.int64)
    ints = [(x, 0), (x, 3), (x.astype(np.int32), 7), (x.astype(np.uint64), 0)]
    floats = [(np.array([1.0, 0.0, -1.0]), 0.0), (np.array([1.0, 2.0], np.float32), 4.0)]
    check_native(int_steps, *ints)
    check_native(quotients, *floats)
    with np.errstate(all="raise"):
        check_native(int_steps, *ints)
        check_native(quotients, *floats)


def test_python_division_by_zero_raises_zero_division_error_from_native_loops():
    check_native(python_quotients, (5, 2), (5, 0), (0, 0), (3, -2))
