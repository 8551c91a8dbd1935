"""Differential fuzzing of reductions that read views as they are, beside the elementwise
ops that fuse them: ``v = <view of x>; t = <op of v>; r = <reduction of v>``, returned
alone, with ``t``, or broadcast back (``t - r`` of keepdims results).

What the other fuzzers do not draw, this one does:
- views reduced directly (NumPy keeps their negative strides: a reversed run goes to its
  scalar reduction loop, not its SIMD one): ``x[::-1]``, ``x[..., ::-1]``, both reversed,
  every other element, ``x.T``, ``np.broadcast_to`` of a row or a column, slices, swapped
  and reversed axes; arguments in C, Fortran or reversed layouts;
- max/min (NaNs of both signs and zeros of either sign: their bits are NumPy's),
  argmax/argmin ties and NaNs, sums with ``dtype=`` (int64, float32), means, products,
  var/std with ``ddof`` 0-2, np.linalg.norm of several ``ord``, any/all, count_nonzero,
  cumsum, ``initial=``;
- every call compared (the profiling call, optimized calls, a call with another dtype whose
  guard fails, the first dtype again, and the first dtype in another layout) under a drawn
  NumPy error state (often "ignore": a NaN's invalid flag sends other states' calls to
  NumPy): results, reports, and which results share memory with the argument.

Where two NaNs meet in a sum NumPy's answer is its loop's operand order, which kernels do
not follow: such reductions draw one NaN bit pattern (as test_fuzz_tensor_programs does).
var, std and norm compare within 4 ulp (their square roots and divisions are exact, but
the fused form may square the deviations in another precision).

A few examples run in CI; a long run:

    TSJIT_FUZZ_EXAMPLES=300 python -m pytest tests/test_fuzz_views.py --hypothesis-seed=1
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_fuzz_fusion import ERRSTATES, aliasing, indistinguishable, load, run

import tsjit

EXAMPLES = int(os.environ.get("TSJIT_FUZZ_EXAMPLES", "12"))
DTYPES = ("float32", "float64", "float16", "int32", "int8", "uint8", "bool", "int64")
REDUCTIONS = (
    "np.max(v, axis={a}{k})", "v.min(axis={a}{k})", "v.sum(axis={a}{k})",
    "np.mean(v, axis={a}{k})", "v.argmax(axis={a1})", "np.argmin(v, axis={a1}{k})",
    "v.sum(axis={a}{k}, dtype=np.int64)", "v.sum(axis={a}{k}, dtype=np.float32)",
    "np.prod(v, axis={a}{k})", "v.var(axis={a}{k}, ddof={d})",
    "np.std(v, axis={a}{k}, ddof={d})", "np.any(v, axis={a}{k})",
    "np.all(v > 0, axis={a}{k})", "np.count_nonzero(v, axis={a1})",
    "v.mean(axis={a}{k}, dtype=np.float64)", "np.max(v * 2, axis={a}{k})",
    "np.min(v + 0.0, axis={a}{k})", "np.linalg.norm(v, axis={a1}{k})",
    "np.linalg.norm(v, ord={o}, axis={a1})", "np.max(np.abs(v), axis={a}{k})",
    "np.cumsum(v, axis={a1})", "v.max(axis={a}, initial=-3)")
VIEWS = ("x", "x[::-1]", "x[..., ::-1]", "x[::-1, ::-1]", "x[::2]", "x[..., ::2]", "x.T",
         "np.broadcast_to(x[:1], x.shape)", "np.broadcast_to(x[..., :1], x.shape)",
         "x[1:, :-1]", "np.swapaxes(x, 0, -1)[::-1]")
VIEWS_1D = ("x", "x[::-1]", "x[::2]", "np.broadcast_to(x[:1], x.shape)")
PRODUCERS = ("v + 1", "v * 2", "v - v", "np.abs(v)", "v * v", "-v")
RETURNS = ("(t, r)", "(r, t)", "(t - r, r)", "(r,)")
# NaNs of both signs, infinities, zeros of either sign, a number whose square overflows
SPECIALS = (np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 0.0, -0.0, 1e300)
APPROXIMATE = ("var", "std", "norm")
BITS_ARE_CONTRACT = ("max", "min", "arg")   # reductions whose NaN bits NumPy's are


@dataclass(frozen=True)
class Program:
    source: str
    shape: tuple[int, ...]
    seed: int
    mixed_nans: bool          # NaNs of both signs
    approximate: bool
    calls: tuple[tuple[str, str], ...]   # (dtype, layout) per call
    errstate: str


def make(shape: tuple[int, ...], dtype: str, seed: int, layout: str, mixed: bool):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    kind = np.dtype(dtype).kind
    if kind == "b":
        values = rng.integers(0, 2, n).astype(bool)
    elif kind in "iu":
        values = rng.integers(-5 if kind == "i" else 0, 6, n).astype(dtype)
    else:
        values = rng.standard_normal(n) * 3
        special = rng.random(n) < 0.25
        specials = SPECIALS if mixed else tuple(abs(s) if s != s else s for s in SPECIALS)
        values[special] = rng.choice(specials, special.sum())
        with np.errstate(all="ignore"):
            values = values.astype(dtype)
    values = values.reshape(shape)
    if layout == "F":
        return np.asfortranarray(values)
    if layout == "reversed":
        return values[(slice(None, None, -1),) * len(shape)]
    return values


@st.composite
def programs(draw) -> Program:
    rank = draw(st.sampled_from((1, 2, 2, 3)))
    axes = ["None", *map(str, range(-rank, rank))] + (["(0, 1)", "(-1, 0)"] if rank > 1 else [])
    reduction = draw(st.sampled_from(REDUCTIONS)).format(
        a=draw(st.sampled_from(axes)), a1=draw(st.sampled_from(axes[1:rank * 2 + 1])),
        k=draw(st.sampled_from(("", ", keepdims=True"))), d=draw(st.integers(0, 2)),
        o=draw(st.sampled_from(("1", "2", "np.inf", "-np.inf", "0", "-1"))))
    view = draw(st.sampled_from(VIEWS if rank > 1 else VIEWS_1D))
    if view == "x.T" and rank > 2:
        view = "x[::-1]"
    source = ("import numpy as np\nimport tsjit\n\n\ndef program(x):\n"
              f"    v = {view}\n    t = {draw(st.sampled_from(PRODUCERS))}\n"
              f"    r = {reduction}\n    return {draw(st.sampled_from(RETURNS))}\n")
    shape = tuple(draw(st.sampled_from((1, 2, 3, 5, 8, 9, 17, 33))) for _ in range(rank))
    first, other = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    layout = draw(st.sampled_from(("C", "C", "F", "reversed")))
    other_layout = draw(st.sampled_from(("C", "F", "reversed")))
    calls = ((first, layout),) * 3 + ((other, layout), (first, layout), (first, other_layout))
    return Program(source, shape, draw(st.integers(0, 2**16)),
                   any(s in reduction for s in BITS_ARE_CONTRACT),
                   any(s in reduction for s in APPROXIMATE), calls,
                   draw(st.sampled_from((*ERRSTATES, "ignore", "ignore"))))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")   # float16 arguments
def test_reductions_of_views_match_numpy(tmp_path):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 20,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(programs())
    def check(program: Program) -> None:
        fn = load(program.source, tmp_path)

        def arguments(dtype: str, layout: str) -> list:
            return [make(program.shape, dtype, program.seed, layout, program.mixed_nans)]

        first = run(fn, arguments(*program.calls[0]))[0]
        assume(not (isinstance(first, type) and issubclass(first, TypeError)))
        scripted = tsjit.script(fn)
        for call, (dtype, layout) in enumerate(program.calls):
            want, want_args, want_reports = run(fn, arguments(dtype, layout), program.errstate)
            got, got_args, got_reports = run(scripted, arguments(dtype, layout),
                                             program.errstate)
            where = (f"call {call} {dtype} {layout} shape={program.shape} "
                     f"errstate={program.errstate}\n--- program ---\n{program.source}")
            assert got_reports == want_reports, (got_reports, want_reports, where)
            if isinstance(want, type) or isinstance(got, type):
                assert got is want, (got, want, where)
                continue
            try:
                indistinguishable(got, want, False)
                for g, w in zip(got, want):
                    indistinguishable(g, w, program.approximate)
            except AssertionError as e:
                raise AssertionError(f"{e}\n{where}") from None
            assert aliasing(got, got_args) == aliasing(want, want_args), where

    check()
