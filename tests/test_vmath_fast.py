"""The fast forms of vmath's functions (``emit_math(..., fast=True)``).

A fast form drops its function's special lanes (NaN, infinities, results beyond the normal
range, arguments that are not normal positive numbers for the log family) and gives NaN
there; kernels find those NaNs in their outputs and compute such a block again with the
exact form (tests/test_fast_blocks.py). So: on every ordinary argument the fast form gives
the exact form's bits, and on every other one a NaN.
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
    """Where the fast form must give the exact form's bits (the bound is vmath's): exp's
    tiny and denormal arguments, whose exact form takes the same operations, included;
    tanh's tiny, denormal and saturated ones too."""
    if name.startswith("log"):
        return (x >= np.finfo(x.dtype).smallest_normal) & (x < np.inf)
    if name == "exp":
        return np.abs(x) <= vmath._EXP_FAST_LIMIT[x.dtype.name]
    return ~np.isnan(x)


def arguments(dtype: type) -> np.ndarray:
    """Every binade, random bit patterns, the special values and the ordinary range's ends
    with their neighbours, of both signs."""
    ends = [0.0, 2.0**-60, 2.0**-500, 86.0, 707.0, 2.0**-12, 2.0**-27, 10.0, 22.0, 1e-30,
            np.finfo(dtype).smallest_normal, np.finfo(dtype).smallest_subnormal]
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
def test_fast_forms_give_the_exact_bits_and_nan_on_every_other_argument(both_forms, name):
    fast, exact = both_forms
    x = arguments(fast.dtype.type)
    value = fast(name, x)
    want = ordinary(name, x)
    assert np.all(np.isnan(value[~want])), x[~want & ~np.isnan(value)][:10]
    bits = np.uint32 if fast.dtype == np.float32 else np.uint64
    expected = exact(name, x)
    differ = value.view(bits) != expected.view(bits)
    assert not np.any(differ & want), (x[differ & want][:10], value[differ & want][:10],
                                       expected[differ & want][:10])


def test_functions_without_a_fast_form_emit_their_exact_form():
    """``fast`` changes only FAST_FORMS: a kernel computes every other function exactly in
    its fast blocks too."""
    import llvmlite.ir as ir

    def emitted(fast: bool) -> str:
        module = ir.Module()
        fn = ir.Function(module, ir.FunctionType(ir.FloatType(), [ir.FloatType()]), "f")
        b = ir.IRBuilder(fn.append_basic_block())
        b.ret(vmath.emit_math(b, "log1p", [fn.args[0]], fast=fast))
        return str(module)

    assert emitted(True) == emitted(False)
    assert "log1p" not in vmath.FAST_FORMS and {"exp", "tanh", "log"} <= vmath.FAST_FORMS


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_fast_exp_of_nonpositive_arguments_gives_the_nonpositive_forms_bits(dtype):
    """Row kernels take exp's fast form for x - max (<= 0 or NaN) too: over the
    nonpositive arguments it gives the nonpositive form's bits down to the limit (tiny and
    denormal arguments included), NaN below it and for NaN."""
    from test_nonpositive_exp import nonpositive_arguments

    fast = MathKernels(dtype, ["exp"], fast=True, nonpositive=True)
    exact = MathKernels(dtype, ["exp"], nonpositive=True)
    x = nonpositive_arguments(dtype)
    value = fast("exp", x)
    want = x >= -vmath._EXP_FAST_LIMIT[np.dtype(dtype).name]   # NaN: False
    assert np.any(want & (x > -np.finfo(dtype).smallest_normal) & (x < 0))   # denormals
    assert np.all(np.isnan(value[~want])), x[~want & ~np.isnan(value)][:10]
    bits = np.uint32 if dtype == np.float32 else np.uint64
    differ = value.view(bits) != exact("exp", x).view(bits)
    assert not np.any(differ & want), x[differ & want][:10]


def test_the_fast_exps_test_their_arguments_with_one_compare_and_an_or():
    """Softmax's exp loop is bound by its operation count, the LSTM cell's by its vectors'
    chains and registers: for x - max the fast form checks its argument with one float
    compare (NaN fails it too), the general fast form |x| with one (true for NaN too), and
    both mark the other lanes NaN with an or of the compare's mask. An integer compare of
    |x|'s bits is two operations in AVX2 (it is unsigned), and a blend needs the NaN
    constant in a register: the LSTM cell ran 0.96-0.99 of that form's time."""
    import llvmlite.ir as ir

    def emitted(nonpositive: bool) -> str:
        module = ir.Module()
        fn = ir.Function(module, ir.FunctionType(ir.FloatType(), [ir.FloatType()]), "f")
        b = ir.IRBuilder(fn.append_basic_block())
        b.ret(vmath.emit_math(b, "exp", [fn.args[0]], nonpositive=nonpositive, fast=True))
        return str(module)

    general, nonpositive = emitted(False), emitted(True)
    for form, compare in ((general, "fcmp ugt"), (nonpositive, "fcmp ult")):
        assert form.count("fcmp") == 1 and form.count(compare) == 1, form
        assert "icmp" not in form and "select" not in form and form.count(" = or ") == 1
