"""Python scalars in fused kernels as NEP 50 converts them, found by a probe of every
dtype against Python scalars at the edges of their ranges: a weak Python float meets a
float32 or float16 loop as a value of that dtype, which NumPy converts with its cast's
floating-point report ("overflow encountered in cast" for 1e40 into float32)."""
from __future__ import annotations

import numpy as np
import pytest
from test_fuzz_fusion import indistinguishable, run

import tsjit


def plus_a_large_constant(x):
    return (x + 1e40) * 2


def below_a_large_constant(x):
    return (x < -1e300) | (x > 1)


def where_a_large_constant(x):
    return np.where(x > 0, x, 65520.0) + 1


def plus_a_float(x, s: float):
    return (x + s) * 2


@pytest.mark.parametrize("errstate", ["default", "raise", "call"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("fn,scalars", [(plus_a_large_constant, ()),
                                        (below_a_large_constant, ()),
                                        (where_a_large_constant, ()),
                                        (plus_a_float, (1e40,)), (plus_a_float, (-7e4,))])
def test_a_python_float_out_of_the_loops_range_reports_its_cast(fn, scalars, dtype, errstate):
    """(x + 1e40) * 2 of a float32 x: NumPy warns "overflow encountered in cast" (raises
    FloatingPointError under errstate "raise", calls the handler under "call"); the fused
    kernel took the scalar as float32 infinity and reported nothing (65520.0 is float16's
    first value that rounds to infinity; 65519.99 does not). The conversion is NumPy's
    again: a constant out of range keeps its op out of the kernel, a float argument out of
    range runs the group in the interpreter."""
    scripted = tsjit.script(fn)
    for _ in range(3):
        x = np.array([1.0, -2.0, np.nan, 0.5], dtype)
        want = run(fn, [x.copy(), *scalars], errstate)
        got = run(scripted, [x.copy(), *scalars], errstate)
        assert got[2] == want[2], (got[2], want[2])
        if isinstance(want[0], type):
            assert got[0] is want[0]
        else:
            indistinguishable(got[0], want[0], False)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_a_python_float_in_the_loops_range_stays_in_the_kernel(dtype):
    """The range check sends only floats out of range to the interpreter."""
    scripted = tsjit.script(plus_a_float)
    x = np.array([1.0, -2.0, np.nan, 0.5], dtype)
    for s in (2.5, 65519.99, -1e-3):
        with np.errstate(all="ignore"):     # (65504 + 1) * 2 overflows in float16
            indistinguishable(scripted(x, s), plus_a_float(x, s), False)
    assert scripted.stats()["kernel_launches"] == 3
