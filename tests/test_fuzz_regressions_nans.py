"""NaN bits of fused results that differed from NumPy's, found by the fusion fuzzer (seed
14 x 400: float16 x ** 3 of -nan), the tensor-program fuzzer (float16 x ** 1 of -nan, x ** 0
of a signalling NaN) and probes of every float dtype, exponent and NaN bit pattern.
Expectations are NumPy's own results on this machine."""
from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from test_fuzz_fusion import run

import tsjit

UINTS = {2: np.uint16, 4: np.uint32, 8: np.uint64}
# quiet and signalling NaNs of both signs, with and without a payload
NANS = {2: [0x7E00, 0xFE00, 0x7E11, 0xFE11],
        4: [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FC12345, 0xFFC12345],
        8: [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
            0xFFF0000000000001, 0x7FF8000000000123, 0xFFF8000000000123]}
EXPONENTS = ["3", "7", "4", "2.5", "1.5", "-2", "-3", "y"]


def program(exponent: str, directory, power: str = "x ** {e}") -> object:
    """``x ** exponent`` (``power``) beside ``x * 2``, which makes it a kernel of two ops."""
    name = f"nan_power_{len(sys.modules)}"
    path = directory / f"{name}.py"
    path.write_text(f"import numpy as np\n\n\ndef program(x, y):\n"
                    f"    return {power.format(e=exponent)}, x * 2\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.program


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("exponent", EXPONENTS)
def test_power_of_a_nan_gives_numpys_nan(exponent, dtype, tmp_path):
    """NumPy's pow of a NaN x is glibc's x * x: x quieted, its sign flipped where it is
    negative and the exponent an odd integer (-nan ** 3 is +nan in float16, computed by
    powf; -nan ** 7 in every dtype; -nan ** 4 stays -nan). The kernel's pow returned x
    itself: the sign kept, a signalling NaN not quieted. (float32 and float64 x ** 3 are
    products with a fix of their own.)"""
    fn = program(exponent, tmp_path)
    uint = UINTS[np.dtype(dtype).itemsize]
    x = np.array(NANS[np.dtype(dtype).itemsize] * 5, uint).view(dtype)
    y = np.full(x.shape, 3, dtype)
    scripted = tsjit.script(fn)
    with np.errstate(all="ignore"):
        want = fn(x, y)[0].view(uint)
        for _ in range(3):
            got = scripted(x, y)[0].view(uint)
            assert [hex(v) for v in got] == [hex(v) for v in want]
    assert scripted.stats()["kernel_launches"] > 0


def _same_bits(fn, x, y) -> None:
    uint = UINTS[x.dtype.itemsize]
    scripted = tsjit.script(fn)
    with np.errstate(all="ignore"):
        want = fn(x, y)[0]
        for _ in range(3):
            got = scripted(x, y)[0]
            assert got.dtype == want.dtype
            assert [hex(v) for v in got.view(uint)] == [hex(v) for v in want.view(uint)]
    assert scripted.stats()["kernel_launches"] > 0


# x ** e in NumPy's power loop (np.power, and the operator but for a Python int -1 and 2
# and a Python float 0.5: ndarray's fast_scalar_power takes np.reciprocal, np.square and
# np.sqrt for those), whose float16 form is powf for every exponent
HALF_POWERS = [("x ** {e}", e) for e in ("0", "1", "1.0", "-1", "-1.0", "0.5", "2", "0.0",
                                         "np.float16(1)", "np.int8(-1)")] + \
    [("np.power(x, {e})", e) for e in ("0", "1", "-1", "0.5", "2")]


@pytest.mark.parametrize("power, exponent", HALF_POWERS)
def test_float16_power_by_a_scalar_is_powf_unless_the_operator_shortcuts_it(
        power, exponent, tmp_path):
    """float16 x ** 1 (and ** 1.0, np.power(x, -1), x ** -1.0) of -nan is +nan: powf clears
    the sign for an odd integer exponent, where the kernel returned x (1/x) itself;
    x ** 0 of a signalling NaN is NaN (powf), not 1; np.power(x, 0.5) of -0.0 and -inf is
    +0.0 and +inf (powf), where x ** 0.5 is np.sqrt's -0.0 and NaN."""
    fn = program(exponent, tmp_path, power)
    x = np.array(NANS[2] + [0x7C01, 0xFC01, 0x8000, 0xFC00, 0x3E00, 0xC000, 0x0001], np.uint16)
    x = np.resize(x.view(np.float16), 40)
    _same_bits(fn, x, x)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_power_of_arrays_follows_glibc_at_signalling_nans(dtype, tmp_path):
    """np.power(x, y) of arrays runs glibc's pow, which gives a NaN (x + y) for
    pow(sNaN, 0) and pow(1, sNaN), where the kernel gave 1 (C99's rule for quiet NaNs)."""
    fn = program("y", tmp_path, "np.power(x, {e})")
    size = np.dtype(dtype).itemsize
    quiet, signalling = NANS[size][0], {2: 0x7C01, 4: 0x7F800001, 8: 0x7FF0000000000001}[size]
    special = np.array([signalling, quiet, signalling | 1 << (8 * size - 1)], UINTS[size]) \
        .view(dtype)
    numbers = np.array([0.0, -0.0, 1.0, 2.0, -1.0], dtype)
    grid = np.concatenate([special, numbers])
    x, y = (np.resize(v.ravel(), 64) for v in np.meshgrid(grid, grid, indexing="ij"))
    _same_bits(fn, x.copy(), y.copy())


REMAINDERS = ["x % {e}", "np.remainder(x, {e})", "x // {e}"]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("remainder", REMAINDERS)
def test_remainder_of_two_nans_is_numpys(remainder, dtype, tmp_path):
    """NumPy's remainder loop computes fmod by x87's fprem: of two NaNs it gives the one
    with the larger significand, the positive one of a tie (-nan % +nan is +nan), where
    the kernel's fmod (the C library's, as np.fmod) gave the first one. Every pair of
    quiet and signalling NaNs of both signs, and NaNs beside numbers; the quotient keeps
    the first NaN."""
    fn = program("y", tmp_path, remainder)
    size = np.dtype(dtype).itemsize
    grid = np.concatenate([np.array(NANS[size], UINTS[size]).view(dtype),
                           np.array([1.5, -1.5, 0.0, -0.0, np.inf], dtype)])
    x, y = (np.resize(v.ravel(), 128) for v in np.meshgrid(grid, grid, indexing="ij"))
    _same_bits(fn, x.copy(), y.copy())


SIGNALLING = {np.float16: 0x7D01, np.float32: 0xFFA00001, np.float64: 0x7FF4000000000001}


@pytest.mark.parametrize("errstate", ["default", "raise", "call"])
@pytest.mark.parametrize("array_dtype", [np.float32, np.int8])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("expression", ["x + s", "np.maximum(x, s) * 2", "x < s"])
def test_a_signalling_nan_scalar_operand_reports_as_numpy(expression, dtype, array_dtype,
                                                           errstate, tmp_path):
    """A NumPy scalar holding a signalling NaN reached the kernel as a double, which
    quiets it: NumPy's loop raises invalid on it ("invalid value encountered in add", or
    "in cast" where it is converted to the loop's type), the kernel raised nothing. The
    launcher now runs such a call's ops in NumPy."""
    fn = program("y", tmp_path, expression.replace("s", "{e}"))
    s = np.array([SIGNALLING[dtype]], UINTS[np.dtype(dtype).itemsize]).view(dtype)[0]
    x = np.array([1.0, -2.0, 0.0, 3.0] * 5, array_dtype)
    scripted = tsjit.script(fn)
    want = run(fn, [x.copy(), s], errstate)
    for _ in range(3):
        got = run(scripted, [x.copy(), s], errstate)
        assert got[2] == want[2]
        if isinstance(want[0], type):
            assert got[0] is want[0]
        else:
            assert [(r.dtype, r.tobytes()) for r in got[0]] == \
                [(r.dtype, r.tobytes()) for r in want[0]]
    if expression == "x + s":   # (the compare raises nothing in NumPy either)
        assert want[2] or want[0] is FloatingPointError
