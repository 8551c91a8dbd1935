"""The fast forms of vmath's functions (``emit_math(..., special=[...])``).

A fast form drops its function's special lanes (NaN, infinities, saturation, tiny and
denormal arguments, results beyond the normal range) and says where its argument was not
ordinary; kernels compute a block with such a lane again with the exact form
(tests/test_fast_blocks.py). So: on every ordinary argument the fast form gives the exact
form's bits, and every argument where they could differ is reported.
"""
from __future__ import annotations

import numpy as np
import pytest
from _llvm_harness import MathKernels
from test_vmath import all_magnitudes, random_bits, special_values

from tsjit.codegen import vmath

DTYPES = [np.float32, np.float64]
FAST = sorted(vmath.FAST_FORMS)


@pytest.fixture(scope="module", params=DTYPES, ids=lambda d: np.dtype(d).name)
def both_forms(request) -> tuple[MathKernels, MathKernels]:
    return (MathKernels(request.param, FAST, fast=True),
            MathKernels(request.param, FAST))


def ordinary(name: str, x: np.ndarray) -> np.ndarray:
    """Where the fast form must not report its argument (the bounds are vmath's)."""
    if name.startswith("log"):
        return (x >= np.finfo(x.dtype).smallest_normal) & (x < np.inf)
    if name == "exp":
        low, high = vmath._ORDINARY_EXP[x.dtype.name]
    else:
        low, high = vmath._TANH_LINEAR[x.dtype.name], np.inf
    magnitude = np.abs(x)
    return (magnitude == 0) | ((magnitude >= low) & (magnitude <= high))


def arguments(dtype: type) -> np.ndarray:
    """Every binade, random bit patterns, the special values and the ordinary range's ends
    with their neighbours, of both signs."""
    ends = [0.0, 2.0**-60, 2.0**-500, 86.0, 707.0, 2.0**-12, 2.0**-27, 10.0, 22.0, 1e-30]
    ends = np.array(ends, dtype)
    near = np.concatenate([ends, np.nextafter(ends, dtype(np.inf)),
                           np.nextafter(ends, dtype(0))])
    values = np.concatenate([all_magnitudes(dtype, 1 << 14), random_bits(dtype, 1 << 14, 5),
                             special_values(dtype), near, -near,
                             np.linspace(-30, 30, 4001, dtype=dtype)])
    nans = np.array([0x7FC00123, 0xFFC00123] if dtype == np.float32 else
                    [0x7FF8000000000123, 0xFFF8000000000123],
                    np.uint32 if dtype == np.float32 else np.uint64).view(dtype)
    return np.concatenate([values, nans])


@pytest.mark.parametrize("name", FAST)
def test_fast_forms_give_the_exact_bits_and_report_every_other_argument(both_forms, name):
    fast, exact = both_forms
    x = arguments(fast.dtype.type)
    value, reported = fast.with_reports(name, x)
    want = ordinary(name, x)
    assert np.array_equal(~reported, want), x[~reported != want][:10]
    bits = np.uint32 if fast.dtype == np.float32 else np.uint64
    expected = exact(name, x)
    differ = value.view(bits) != expected.view(bits)
    assert not np.any(differ & want), (x[differ & want][:10], value[differ & want][:10],
                                       expected[differ & want][:10])


def test_functions_without_a_fast_form_report_nothing():
    """emit_math appends to ``special`` only for FAST_FORMS: a kernel computes every other
    function exactly in its fast blocks too."""
    import llvmlite.ir as ir

    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.FloatType(), [ir.FloatType()]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    special: list = []
    b.ret(vmath.emit_math(b, "log1p", [fn.args[0]], special=special))
    assert special == []
    assert "log1p" not in vmath.FAST_FORMS and {"exp", "tanh", "log"} <= vmath.FAST_FORMS
