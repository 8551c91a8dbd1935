"""Differential fuzzing of kernels large enough to run on several threads: the other
fuzzers draw arrays of at most a few hundred elements, which every kernel runs on one
thread, so their parallel split (elementwise blocks, rows across threads, one long
reduction in per-thread partials combined in a fixed order) was never compared with
NumPy. Here test_fuzz_fusion's and test_fuzz_reductions' random programs run on their
arguments grown along one axis to about 2**19 elements (broadcast axes stay broadcast),
scripted, with one thread and with two: every call must give eager's results (bitwise;
transcendental functions within 4 ulps; NaN where NumPy has NaN) and reports, and the two
thread counts the same bits, NaN bits included (issue 9: deterministic for every thread
count).

A few examples run in CI; a long run:

    TSJIT_FUZZ_EXAMPLES=300 python -m pytest tests/test_fuzz_threads.py -q
"""
from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import pytest
from _differential import assert_same
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_fuzz_fusion import Argument, load, run
from test_fuzz_fusion import programs as fusion_programs
from test_fuzz_reductions import programs as reduction_programs

import tsjit
from tsjit import runtime

EXAMPLES = int(os.environ.get("TSJIT_FUZZ_EXAMPLES", "6"))
ELEMENTS = 1 << 19      # past the kernels' parallel thresholds (2**16 to 2**18 of work)


def grown(arguments: tuple[Argument, ...]) -> tuple[Argument, ...]:
    """``arguments`` with their longest common axis (aligned from the right, as NumPy
    broadcasts) grown to make about ELEMENTS elements; an argument of length 1 there stays
    1 (it broadcasts)."""
    rank = max(len(a.shape) for a in arguments)
    shapes = [(1,) * (rank - len(a.shape)) + a.shape for a in arguments]
    base = [max(s[k] for s in shapes) for k in range(rank)]
    if not rank or 0 in base or max(base) < 2:
        return arguments
    axis = max(range(rank), key=lambda k: (base[k], k))
    factor = max(1, -(-ELEMENTS // math.prod(base)))

    def grow(argument: Argument, shape: tuple[int, ...]) -> Argument:
        new = [n * factor if k == axis and n > 1 else n for k, n in enumerate(shape)]
        return dataclasses.replace(argument, shape=tuple(new[rank - len(argument.shape):]))
    return tuple(grow(a, s) for a, s in zip(arguments, shapes))


def bits(value: object) -> object:
    """``value`` with every array as its bytes, dtype, shape and strides."""
    if isinstance(value, tuple):
        return tuple(bits(v) for v in value)
    if isinstance(value, np.ndarray | np.generic):
        array = np.asarray(value)
        return type(value), array.dtype, array.shape, array.strides, array.tobytes()
    return value


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")   # float16 arguments
def test_large_programs_give_numpys_results_with_one_thread_or_two(tmp_path):
    threads = runtime.get_num_threads()
    launches = []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 6,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(st.one_of(fusion_programs(), reduction_programs()))
    def check(program) -> None:
        arguments = grown(program.arguments)
        scalar = getattr(program, "scalar", None)

        def make() -> list:
            return [a.make() for a in arguments] + ([scalar] if scalar is not None else [])

        fn = load(program.source, tmp_path)
        want, want_args, want_reports = run(fn, make(), program.errstate)
        assume(not (isinstance(want, type) and issubclass(want, TypeError)))
        scripted = tsjit.script(fn)
        approximate = getattr(program, "approximate", ())
        seen = []
        for n in (2, 2, 1, 2):      # profiling, then optimized on two threads, one, two
            tsjit.set_num_threads(n)
            got, got_args, got_reports = run(scripted, make(), program.errstate)
            assert got_reports == want_reports, (n, program.source, got_reports,
                                                 want_reports)
            if isinstance(want, type):
                assert got is want, (n, program.source, got, want)
            else:
                for k, (g, w) in enumerate(zip(got, want)):
                    assert_same(g, w, f"{n} threads: result {k}\n{program.source}",
                                ulps=4 if k < len(approximate) and approximate[k] else 0)
                assert_same(got_args, want_args, f"{n} threads: arguments")
            seen.append(bits((got, *got_args)))
        assert seen[1] == seen[2] == seen[3], program.source
        launches.append(scripted.stats()["kernel_launches"])

    try:
        check()
    finally:
        tsjit.set_num_threads(threads)
    # the generators must exercise the kernels, not just the interpreter
    assert sum(n > 0 for n in launches) >= len(launches) // 4, launches
