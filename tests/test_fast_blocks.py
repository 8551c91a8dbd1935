"""Fast blocks of compute-bound kernels (elementwise's ``fast_blocks_loop``).

A kernel whose ops include a math function with a fast form (vmath.FAST_FORMS) runs each
block of 64 elements with the fast forms first, which give NaN where an argument is not
ordinary (NaN, +-inf, a huge magnitude; for the log family a tiny or denormal one too),
and a block whose outputs hold a NaN again with the exact forms, from the floating-point
flags as they were before it. So a block holding a special lane gives NumPy's NaN bits
and values there, and its other lanes the same bits as in a block without it. (That the
fast pass's flags are dropped is tested by test_vmath_flags' quiet values: a spurious flag
would send the call back to NumPy, a bailout.)
"""
from __future__ import annotations

import numpy as np
import pytest
from test_vmath import ulp_distance

import tsjit


def exp_(a): return np.exp(a) * 2.0
def tanh_(a): return np.tanh(a) * 2.0
def sigmoid_(a): return 1.0 / (1.0 + np.exp(-a))
def gelu(a): return 0.5 * a * (1.0 + np.tanh(0.79788456 * (a + 0.044715 * a ** 3)))
def log_(a): return np.log(a) * 2.0
def log10_(a): return np.log10(a) * 2.0


def exp_into_itself(a, b):
    a += np.exp(b)   # reads and writes a: no fast blocks (a block cannot run twice)
    return a


PAYLOAD_NANS = {np.float32: (0x7FC00123, 0xFFC00123),
                np.float64: (0x7FF8000000000123, 0xFFF8000000000123)}
UINT = {np.float32: np.uint32, np.float64: np.uint64}


def specials(dtype) -> list:
    nans = np.array(PAYLOAD_NANS[dtype], UINT[dtype]).view(dtype)
    info = np.finfo(dtype)
    return [*nans, np.inf, -np.inf, 100.0, -100.0, 1000.0, -1000.0, 1e30, info.max,
            info.smallest_subnormal, -3 * info.smallest_subnormal, 1e-30, -0.0, 0.0, 12.0,
            -25.0, -1.0, info.smallest_normal]


def warm(fn, dtype, size: int, arity: int = 1):
    scripted = tsjit.script(fn)
    for _ in range(3):
        scripted(*(np.ones(size, dtype) for _ in range(arity)))
    assert scripted.stats()["kernel_launches"] > 0
    return scripted


def assert_as_numpy(got, want, composite: bool = False):
    """NumPy's NaNs; other values within 4 ulp, or for a composite of functions (whose
    errors cancellation amplifies: gelu near -3) relatively close."""
    bits = UINT[want.dtype.type]
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[nan].view(bits), want[nan].view(bits))
    if composite:
        rtol = 1e-3 if want.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(got[~nan], want[~nan], rtol=rtol, atol=1e-30)
    else:
        assert ulp_distance(got[~nan], want[~nan]).max(initial=0) <= 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [exp_, tanh_, sigmoid_, gelu, log_, log10_],
                         ids=lambda f: f.__name__)
def test_a_block_with_a_special_lane_is_computed_exactly(fn, dtype):
    low = 0.01 if fn in (log_, log10_) else -3
    x = np.random.default_rng(3).uniform(low, 3, 1000).astype(dtype)
    scripted = warm(fn, dtype, x.size)
    with np.errstate(all="ignore"):   # (no bailout to NumPy: the kernel's values are seen)
        plain = scripted(x)
        for value in specials(dtype):
            y = x.copy()
            y[150] = value     # in the third block, not its first lane
            got, want = scripted(y), fn(y)
            assert_as_numpy(got, want, composite=fn in (sigmoid_, gelu))
            others = np.arange(x.size) != 150
            bits = UINT[dtype]
            assert np.array_equal(got[others].view(bits), plain[others].view(bits)), value
    assert scripted.stats()["bailouts"] == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_kernel_writing_an_input_it_reads_computes_special_lanes_exactly(dtype):
    b = np.random.default_rng(4).uniform(-3, 3, 1000).astype(dtype)
    b[[70, 300, 301]] = [np.inf, np.nan, -np.inf]
    scripted = warm(exp_into_itself, dtype, b.size, arity=2)
    a = np.linspace(-1, 1, b.size, dtype=dtype)
    with np.errstate(all="ignore"):
        got, want = scripted(a.copy(), b), exp_into_itself(a.copy(), b)
    assert_as_numpy(got, want, composite=True)


def exp_floored(a): return np.fmax(np.exp(a), 1.0)   # fmax drops a NaN
def exp_above_one(a): return np.exp(a) > 1.0         # a bool result holds no NaN


@pytest.mark.parametrize("fn", [exp_floored, exp_above_one], ids=lambda f: f.__name__)
def test_a_function_whose_nan_is_dropped_before_an_output_is_computed_exactly(fn):
    """A fast form gives NaN where its argument is not ordinary, and a block runs again
    where its outputs hold one: an op that drops the NaN (fmax, a compare) would leave the
    fast pass's wrong value in place, so such a function keeps its exact form."""
    x = np.random.default_rng(5).uniform(-3, 3, 1000).astype(np.float32)
    x[150] = 100.0   # exp overflows: not ordinary
    scripted = warm(fn, np.float32, x.size)
    with np.errstate(all="ignore"):
        got, want = scripted(x), fn(x)
    assert got.dtype == want.dtype and got[150] == want[150]   # inf, True
    if want.dtype == bool:
        assert np.array_equal(got, want)
    else:
        assert_as_numpy(got, want)
    assert scripted.stats()["bailouts"] == 0


def exp_scaled(a): return np.exp(a) * 1e30   # overflows where exp(a) passes 3.4e8


@pytest.mark.parametrize("special_at", [200, 700])
def test_a_block_computed_again_keeps_the_flags_of_the_blocks_before_it(special_at):
    """The flags are saved once per group of blocks, and a block with a special lane runs
    again with its group's blocks before it: an overflow in the first block stays raised
    whether the NaN is in its group (200) or in a later one (700)."""
    from test_vmath_flags import outcome

    x = np.random.default_rng(6).uniform(-3, 3, 1000).astype(np.float32)
    x[5], x[special_at] = 21.0, np.nan   # exp(21) * 1e30 overflows; exp(NaN) is special
    scripted = warm(exp_scaled, np.float32, x.size)
    for errstate in ({"over": "call"}, {"over": "raise"}, {"over": "warn"}):
        want = outcome(exp_scaled, (x.copy(),), errstate)
        got = outcome(scripted, (x.copy(),), errstate)
        assert want[1:] == got[1:] and (want[1] or want[2] or isinstance(want[0], tuple))


def staged(a, b):
    """Three stages in a fast block (one ending at each float32 math function): values
    cross them as bool, int16, float32 and float64, and an output comes from the first."""
    above = a > b
    wide = a.astype(np.float64) * 3.0
    e = np.exp(a * np.float32(0.5))
    steps = (b * np.float32(4.0)).astype(np.int16)
    t = np.tanh(e * b + steps + above + wide.astype(np.float32))
    return t * steps + wide, e


def test_a_block_runs_in_stages_one_per_float32_math_function():
    from tsjit.codegen.fast_form_plan import block_stages
    from tsjit.codegen.kernel_spec import KernelInput, KernelOp, KernelSpec

    f32 = np.dtype(np.float32)
    x = KernelInput(dtype=f32, rank=1, is_scalar=False, never_nan=False)
    ops = (KernelOp("exp", (0,), f32), KernelOp("mul", (0, 0), f32),   # 1, 2
           KernelOp("add", (1, 2), f32), KernelOp("tanh", (3,), f32),   # 3, 4
           KernelOp("mul", (4, 0), f32))                                # 5
    spec = KernelSpec((x,), ops, (5, 1))
    stages = block_stages(spec, frozenset({1, 4}))
    assert stages.ops == (frozenset({1}), frozenset({2, 3, 4}), frozenset({5}))
    assert stages.kept == frozenset({1, 4})
    alone = KernelSpec((x, KernelInput(f32, 0, True, True)),
                       (KernelOp("tanh", (0,), f32), KernelOp("mul", (2, 1), f32)), (3,))
    assert len(block_stages(alone, frozenset({2})).ops) == 1   # nothing crosses tanh
    f64 = np.dtype(np.float64)
    wide = KernelSpec((KernelInput(f64, 1, False, False),),
                      tuple(KernelOp(o.op, o.args, f64) for o in ops), (5, 1))
    assert len(block_stages(wide, frozenset({1, 4})).ops) == 1   # float64: one stage


def test_staged_blocks_give_the_exact_blocks_bits():
    """A block holding a NaN runs again exactly, unstaged: the lanes of such blocks have
    the same bits as in staged fast blocks, and the values are NumPy's."""
    rng = np.random.default_rng(7)
    a, b = (rng.uniform(-3, 3, 1000).astype(np.float32) for _ in range(2))
    scripted = warm(staged, np.float32, a.size, arity=2)
    plain = scripted(a, b)
    for got, want in zip(plain, staged(a, b)):   # (float32 math in a float64 result)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    rerun = a.copy()
    rerun[::128] = np.nan   # every other block of 64 holds a NaN
    with np.errstate(invalid="ignore"):
        exact = scripted(rerun, b)
    lanes = np.arange(a.size) % 128 != 0
    for got, want in zip(exact, plain):
        bits = UINT[got.dtype.type]
        assert np.array_equal(got[lanes].view(bits), want[lanes].view(bits))
    assert scripted.stats()["bailouts"] == 0


def tanh_zeroing_nan(a):
    t = np.tanh(a) * 2.0
    return np.where(np.isnan(t), 0.0, t) + 1.0


def test_a_nan_fix_is_left_to_the_exact_pass():
    """np.where(np.isnan(t), ..., t), as gelu's cube fixes a NaN's sign: a fast block
    computes t (a NaN in t reaches the output and sends the block to its exact pass), so
    its NaN lanes are the exact pass's (0.0 here, NumPy's sign in the cube)."""
    from tsjit.codegen.fast_form_plan import nan_fixes
    from tsjit.codegen.kernel_spec import KernelInput, KernelOp, KernelSpec

    f32, boolean = np.dtype(np.float32), np.dtype(bool)
    x = KernelInput(dtype=f32, rank=1, is_scalar=False, never_nan=False)
    zero = KernelInput(dtype=f32, rank=0, is_scalar=True, never_nan=True)
    ops = (KernelOp("tanh", (0,), f32), KernelOp("isnan", (2,), boolean),        # 2, 3
           KernelOp("where", (3, 1, 2), f32), KernelOp("where", (3, 2, 1), f32))  # 4, 5
    assert nan_fixes(KernelSpec((x, zero), ops, (4, 5)), {4, 5}) == {4}   # 5's b: no NaN
    assert nan_fixes(KernelSpec((x, zero), ops, (4, 5)), {5}) == set()   # 4 not scanned
    a = np.random.default_rng(8).uniform(-3, 3, 1000).astype(np.float32)
    a[[5, 300]] = np.nan
    scripted = warm(tanh_zeroing_nan, np.float32, a.size)
    got, want = scripted(a), tanh_zeroing_nan(a)
    assert got[5] == got[300] == 1.0
    assert_as_numpy(got, want, composite=True)   # (1 + 2 tanh cancels near -0.55)
    assert scripted.stats()["bailouts"] == 0
