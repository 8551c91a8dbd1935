"""Differential fuzzing of what a scripted function becomes after it ran: saved with
``save`` and loaded with ``tsjit.load``, and pickled and unpickled (API.md: both travel
through the saved form, without the source). A copy must be as indistinguishable from the
plain function as the original: test_fuzz_tensor_programs' random programs (every integer
width, float16, NEP 50 scalars, views, reductions, in-place updates, control flow) are
scripted, called twice (profiled, then optimized: the executor holds specializations when
it is saved), and each copy then makes every call of the program (with other dtypes too,
whose guards fail) compared with eager's as that fuzzer compares them.

A few examples run in CI; a long run:

    TSJIT_FUZZ_EXAMPLES=500 python -m pytest tests/test_fuzz_round_trips.py -q
"""
from __future__ import annotations

import itertools
import os
import pickle

import pytest
from hypothesis import HealthCheck, assume, given, settings
from test_fuzz_fusion import load, run
from test_fuzz_tensor_programs import Program, arguments_for, calls_match, programs

import tsjit

EXAMPLES = int(os.environ.get("TSJIT_FUZZ_EXAMPLES", "5"))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")   # float16 arguments
def test_saved_and_pickled_programs_match_numpy(tmp_path):
    saves = itertools.count()

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 5,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(programs())
    def check(program: Program) -> None:
        fn = load(program.source, tmp_path)
        first = arguments_for(program, program.dtypes[0], program.counts[0])
        assume(run(fn, first)[0] is not TypeError)   # an operand type NumPy has no loop for
        scripted = tsjit.script(fn)
        for _ in range(2):
            run(scripted, arguments_for(program, program.dtypes[0], program.counts[0]),
                program.errstate)
        path = tmp_path / f"saved_{next(saves)}.tsjit"
        scripted.save(path)
        for name, copy in (("loaded", tsjit.load(path)),
                           ("unpickled", pickle.loads(pickle.dumps(scripted)))):
            try:
                calls_match(fn, copy, program)
            except AssertionError as e:
                raise AssertionError(f"{name}: {e}") from None

    check()
