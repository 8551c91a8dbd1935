"""Differential fuzzing of the reduction fuser: random programs mixing elementwise ops and
reductions, eager against optimized.

Hypothesis writes programs (test_fuzz_fusion's machinery: arguments in C, Fortran, strided,
transposed and reversed layouts, NaN, infinities and signed zeros in floats) whose chain of exact
elementwise ops feeds a reduction (sum, prod, mean, max, min, argmax, argmin, var, std
with ddof, any, all, count_nonzero, np.linalg.norm's vector forms, dtype= too) over random
axes (the last, all, the first, a middle one, a tuple; axes apart stay NumPy's) with or
without keepdims, on float16, float32, float64, int32, int64 and bool arrays with empty
and size-1 axes; a kept result is broadcast back into a consumer (`t - r`). Each program
runs under a drawn NumPy error state (test_fuzz_fusion's ERRSTATES: default, all "warn",
"ignore", "raise" or "call"), and once under the default: every result, exception class
and floating-point report (the warnings' category and text, the FloatingPointError, the
seterrcall handler's calls) must be NumPy's, bitwise: sums and means follow NumPy's order.
NaN results carry NumPy's bits (sign and payload) wherever the reduced values hold at most
one NaN bit pattern and no infinity: where a sum meets two different NaNs (or makes one
of inf + -inf), which one survives depends on the operand order each compiler picks for a
commutative add (NumPy's own answer differs between its SIMD loops), so those compare as
NaN, not by bits.

A max or min whose extreme is a tie between +0.0 and -0.0 is compared by its bits too:
which zero NumPy returns depends on its SIMD lane layout, which the kernels measure of
NumPy at run time (codegen/numpy_minmax.py).

A few examples run in CI; a long run:

    TSJIT_FUZZ_EXAMPLES=2000 python -m pytest tests/test_fuzz_reductions.py -q
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass

import numpy as np
import pytest
from _differential import assert_same
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_fuzz_fusion import ERRSTATES, Argument, load, run

import tsjit

EXAMPLES = int(os.environ.get("TSJIT_FUZZ_EXAMPLES", "30"))
DTYPES = ("float32", "float64", "float64", "int32", "int64", "bool", "float16")
ELEMENTWISE = ("{a} + {b}", "{a} - {b}", "{a} * {b}", "np.maximum({a}, {b})", "{a} * 1.5",
               "{a} - 0.25", "np.abs({a})", "{a} ** 2", "np.sqrt(np.abs({a}))")
REDUCTIONS = ("np.sum({a}{axis}{keep})", "{a}.mean({axis0}{keep})", "np.max({a}{axis}{keep})",
              "{a}.min({axis0}{keep})", "np.var({a}{axis}{keep}{ddof})",
              "{a}.std({axis0}{keep}{ddof})", "np.any({a}{axis}{keep})",
              "{a}.all({axis0}{keep})", "np.count_nonzero({a}{axis}{keep})",
              "np.linalg.norm({a}, axis=-1{keep})", "np.linalg.norm({a}, ord=1, axis=0{keep})",
              "np.prod({a}{axis}{keep})", "{a}.argmax({axis0}{keep})",
              "np.argmin({a}{axis}{keep})", "np.sum({a}{axis}{keep}, dtype=np.float64)",
              "{a}.mean({axis0}{keep}, dtype=np.float32)", "{a}.sum({axis0}{keep}, dtype=int)")


@dataclass(frozen=True)
class ReductionProgram:
    source: str                       # defines program(x...), and operand(x...): the
    arguments: tuple[Argument, ...]   # value the reduction reduces
    axes: tuple[int, ...] | None      # the reduced axes (None: all of them)
    keepdims: bool
    errstate: str                     # see test_fuzz_fusion.ERRSTATES


@st.composite
def programs(draw) -> ReductionProgram:
    rank = draw(st.integers(1, 3))
    base = [draw(st.sampled_from((0, 1, 2, 3, 5))) for _ in range(rank)]
    base[-1] = draw(st.sampled_from((0, 1, 3, 8, 17, 130, 300)))
    dtype = draw(st.sampled_from(DTYPES))
    arguments = [Argument(dtype, tuple(base), draw(st.sampled_from(("C", "C", "F", "strided",
                                                                       "transposed", "reversed"))),
                          draw(st.integers(0, 2**16)))]
    if draw(st.booleans()):     # a second operand, maybe broadcast over rows or along them,
        # or one value per index of the first axis (a column kernel reads it once per row)
        shape = draw(st.sampled_from((tuple(base[-1:]), tuple(base), (*base[:-1], 1),
                                      (base[0], *[1] * (rank - 1)))))
        arguments.append(Argument(draw(st.sampled_from(DTYPES)), shape, "C",
                                  draw(st.integers(0, 2**16))))
    names = [f"x{i}" for i in range(len(arguments))]
    values, lines = list(names), []
    for k in range(draw(st.integers(1, 3))):
        a, b = values[-1], draw(st.sampled_from(values))   # a chain: every value is used
        lines.append(f"    t{k} = {draw(st.sampled_from(ELEMENTWISE)).format(a=a, b=b)}")
        values.append(f"t{k}")
    operand = lines.copy()
    axis = draw(st.sampled_from(("", ", axis=-1", ", axis=-1", f", axis={rank - 1}",
                                 ", axis=0", ", axis=0", ", axis=None", ", axis=1",
                                 ", axis=(0, 1)", ", axis=(-2, -1)", ", axis=(0, -1)")))
    keep = draw(st.sampled_from(("", ", keepdims=True")))
    template = draw(st.sampled_from(REDUCTIONS))
    reduction = template.format(
        a=values[-1], axis=axis, axis0=axis[2:] or "axis=None", keep=keep,
        ddof=draw(st.sampled_from(("", ", ddof=1"))))
    lines.append(f"    r = {reduction}")
    results = ["r"]
    if (keep or axis == ", axis=0") and draw(st.booleans()):   # axis 0: aligned anyway
        lines.append(f"    c = {values[-1]} - r")
        results.append("c")
    source = (f"import numpy as np\nimport tsjit\n\n\ndef program({', '.join(names)}):\n"
              + "\n".join(lines) + f"\n    return ({', '.join(results)},)\n"
              + f"\n\ndef operand({', '.join(names)}):\n"
              + "\n".join(operand) + f"\n    return {values[-1]}\n")
    given = "axis=-1" if "axis=-1" in template else "axis=0" if "axis=0" in template \
        else axis[2:]
    axes = eval(given.split("=")[1]) if given else None  # noqa: S307  (our own literal)
    return ReductionProgram(source, tuple(arguments),
                            (axes,) if isinstance(axes, int) else axes, bool(keep),
                            draw(st.sampled_from(ERRSTATES)))


def nan_bits_defined(operand: object, axes: tuple[int, ...] | None,
                     keepdims: bool) -> np.ndarray | bool:
    """Where (per reduced set of values, shaped as the reduction's result) NumPy's NaN
    bits do not depend on the order of its adds: no NaN, or NaNs of one bit pattern and
    no infinity (inf + -inf makes another NaN)."""
    t = np.asarray(operand)
    if t.dtype.kind != "f":
        return True
    axes = tuple(range(t.ndim)) if axes is None else tuple(a % t.ndim for a in axes)
    kept = [d for d in range(t.ndim) if d not in axes]
    t = np.transpose(t, kept + list(axes)).reshape(
        *[t.shape[d] for d in kept], math.prod(t.shape[d] for d in axes))
    ints = t.view(f"i{t.dtype.itemsize}")
    nan = np.isnan(t)
    info = np.iinfo(ints.dtype)
    lowest = np.where(nan, ints, info.max).min(axis=-1, initial=info.max)
    highest = np.where(nan, ints, info.min).max(axis=-1, initial=info.min)
    defined = ~nan.any(axis=-1) | ((lowest == highest) & ~np.isinf(t).any(axis=-1))
    return np.expand_dims(defined, axes) if keepdims else defined


def assert_nan_bits(got: tuple, want: tuple, defined: np.ndarray | bool, source: str) -> None:
    """NaN results carry NumPy's bits where ``defined`` (broadcast to each result)."""
    for g, w in zip(got, want):
        w, g = np.asarray(w), np.asarray(g)
        if w.dtype.kind != "f":
            continue
        compared = np.isnan(w) & np.broadcast_to(defined, w.shape)
        ints = f"i{w.dtype.itemsize}"
        assert np.array_equal(g[compared].view(ints), w[compared].view(ints)), source


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")   # float16 arguments
def test_random_reduction_programs_match_numpy(tmp_path):
    launches = []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 30,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(programs())
    def check(program: ReductionProgram) -> None:
        fn = load(program.source, tmp_path)
        expected, _, _ = run(fn, [a.make() for a in program.arguments])
        assume(not (isinstance(expected, type) and issubclass(expected, TypeError)))
        scripted = tsjit.script(fn)
        operand = sys.modules[fn.__module__].operand
        for errstate in (program.errstate, "default", program.errstate):
            want, _, want_reports = run(fn, [a.make() for a in program.arguments], errstate)
            got, _, got_reports = run(scripted, [a.make() for a in program.arguments],
                                      errstate)
            assert got_reports == want_reports, (program.source, errstate, got_reports,
                                                 want_reports)
            if isinstance(want, type):
                assert got is want, (program.source, got, want)
                continue
            assert type(got) is type(want), (program.source, got, want)
            assert_same(got, want, program.source)
            with np.errstate(all="ignore"):
                t = operand(*[a.make() for a in program.arguments])
            assert_nan_bits(got, want, nan_bits_defined(t, program.axes, program.keepdims),
                            program.source)
        launches.append(scripted.stats()["kernel_launches"])

    check()
    # the generator must exercise the row kernels, not just the interpreter
    assert sum(n > 0 for n in launches) >= len(launches) // 4, launches
