"""Which NaN NumPy's math loops return on this machine, asked of NumPy itself.

NumPy picks its float loops at import by CPU dispatch (AVX-512, AVX2, baseline), and the
loops differ in the NaN they return. For a NaN argument some return it (sign and payload),
others the positive default NaN (float32 log on AVX-512 and AVX2, float64 tanh). For an
argument outside the domain (log of a negative) x86's invalid operation gives the default
NaN with the sign bit set, yet some loops return it with the sign bit clear (float64 log
on AVX2, log10 of every float type). No table of one machine holds on another, so the
kernels ask this module, which runs each function once on a few tiny arrays of the NaN and
out-of-domain arguments and remembers the answer. The answers shape generated code:
``fingerprint()`` is part of every disk-cache entry's key material.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import numpy as np

__all__ = ["NanBits", "converted", "cube_nan_positive", "fingerprint", "invalid_nan_bits",
           "larger_nan_wins_remainder", "nan_bits", "second_nan_wins"]

_INF = float("inf")

# NumPy's ufunc for each math function whose NaN results a kernel mimics, with the
# arguments (x, or (x, y) for binary functions) outside its domain: NaN results of
# non-NaN arguments.
_UFUNCS: dict[str, np.ufunc] = {
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "arctan": np.arctan, "pow": np.power,
}
_OUTSIDE_DOMAIN: dict[str, tuple] = {
    "log": (-2.0, -0.5, -_INF), "log2": (-2.0, -0.5, -_INF), "log10": (-2.0, -0.5, -_INF),
    "log1p": (-2.0, -1.5, -_INF), "pow": ((-2.0, 1.5), (-0.5, 0.25), (-3.0, -2.5)),
}
# NaNs with a payload, of either sign, per float width.
_PAYLOAD_NANS = {2: (0x7E03, 0xFE03), 4: (0x7FC00123, 0xFFC00123),
                 8: (0x7FF8000000000123, 0xFFF8000000000123)}
# Lengths probed: one element (a loop's scalar tail) and enough for its vector body.
_LENGTHS = (1, 67)
_DTYPES = ("float16", "float32", "float64")


@dataclass(frozen=True)
class NanBits:
    """NumPy's NaN results of one function in one dtype. ``argument``: the bits a unary
    function returns for a NaN argument, None when it returns the argument itself (binary
    ones are not asked: pow's code propagates its NaN operand). ``invalid_positive``:
    whether the NaN it makes from an argument outside the domain has its sign bit clear
    (x86's default NaN has it set)."""

    argument: int | None
    invalid_positive: bool


def _uint(dtype: np.dtype) -> type:
    return {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]


def _run(ufunc: np.ufunc, args: list[np.ndarray]) -> np.ndarray:
    with np.errstate(all="ignore"):
        return ufunc(*args)


def _argument_bits(ufunc: np.ufunc, dtype: np.dtype) -> int | None:
    """None if every NaN argument comes back as itself, else the bits of the first result
    of the longest probe (the vector loop's, which most elements of real data take)."""
    uint = _uint(dtype)
    propagated, first = True, 0
    for length in _LENGTHS:
        nans = np.tile(np.array(_PAYLOAD_NANS[dtype.itemsize], dtype=uint), length)
        result = _run(ufunc, [nans.view(dtype)]).view(uint)
        propagated = propagated and bool(np.array_equal(result, nans))
        first = int(result[0])
    return None if propagated else first


def _invalid_positive(ufunc: np.ufunc, name: str, dtype: np.dtype) -> bool:
    """Whether NumPy's NaNs of out-of-domain arguments have their sign bit clear (decided by
    the longest probe, as for the NaN argument)."""
    signs = np.array([], dtype=bool)
    for value in _OUTSIDE_DOMAIN.get(name, ()):
        columns = value if isinstance(value, tuple) else (value,)
        args = [np.full(_LENGTHS[-1], v, dtype) for v in columns]
        result = _run(ufunc, args)
        signs = np.concatenate([signs, np.signbit(result[np.isnan(result)])])
    return bool(signs.size) and not bool(signs.any())


@functools.cache
def nan_bits(name: str, dtype: str) -> NanBits:
    """NumPy's NaN behaviour for vmath function ``name`` in ``dtype`` (a float type name);
    functions NumPy lacks (sigmoid, erf) get x86's: the argument, the negative default."""
    ufunc = _UFUNCS.get(name)
    if ufunc is None:
        return NanBits(None, False)
    np_dtype = np.dtype(dtype)
    argument = _argument_bits(ufunc, np_dtype) if ufunc.nin == 1 else None
    return NanBits(argument, _invalid_positive(ufunc, name, np_dtype))


@functools.cache
def cube_nan_positive(dtype: str) -> bool:
    """Whether NumPy's ``x ** 3`` of a NaN ``x`` (a call of pow, where the kernel
    multiplies) clears its sign bit: glibc's pow does for integral exponents."""
    uint = _uint(np.dtype(dtype))
    nans = np.tile(np.array(_PAYLOAD_NANS[np.dtype(dtype).itemsize], dtype=uint),
                   _LENGTHS[-1])
    return not bool(np.signbit(_run(np.power, [nans.view(dtype), np.array(3, dtype)])).any())


@functools.cache
def invalid_nan_bits(dtype: str) -> int:
    """The bits of the NaN NumPy's arithmetic gives for an invalid operation (inf - inf,
    0 * inf, 0 / 0) of non-NaN operands: x86's default NaN."""
    inf = np.full(_LENGTHS[-1], _INF, dtype)
    return int(_run(np.subtract, [inf, inf]).view(_uint(np.dtype(dtype)))[0])


@functools.cache
def second_nan_wins(name: str, dtype: str) -> bool:
    """Whether NumPy's ``add`` or ``multiply`` (``name`` "add", "mul") of two NaNs gives
    the second one's NaN: x86 gives the first operand's, but a compiler may commute a
    commutative op's operands (NumPy's float16 loops on x86). Asked of its loop for one
    element: where its vector loops choose otherwise (their tails on AVX2) the choice
    depends on the position, which no kernel mimics."""
    uint = _uint(np.dtype(dtype))
    first, second = (np.array([bits], uint) for bits in _PAYLOAD_NANS[np.dtype(dtype).itemsize])
    ufunc = np.add if name == "add" else np.multiply
    return int(_run(ufunc, [first.view(dtype), second.view(dtype)]).view(uint)[0]) == \
        int(second[0])


@functools.cache
def larger_nan_wins_remainder(dtype: str) -> bool:
    """Whether NumPy's ``remainder`` (and divmod's remainder) of two NaNs gives the one with
    the larger significand, the positive one where they tie: x87's rule, where NumPy's
    loop computes fmod inline by the x87 ``fprem`` (GCC's builtin), while ``np.fmod``, the
    C library's, gives the first operand's NaN as SSE arithmetic does (-nan % +nan is
    +nan, np.fmod(-nan, +nan) -nan). Asked of its loop for each sign pair, both orders."""
    uint = _uint(np.dtype(dtype))
    small = _PAYLOAD_NANS[np.dtype(dtype).itemsize][0]      # positive
    sign = 1 << (8 * np.dtype(dtype).itemsize - 1)
    for x, y in ((small, small + 2), (small + 2, small), (small, small)):
        for a, b in ((x, y), (x | sign, y), (x, y | sign), (x | sign, y | sign)):
            if x != y:
                want = a if x > y else b
            else:
                want = a if not a & sign else b          # a tie: the positive one
            got = _run(np.remainder, [np.array([v], uint).view(dtype) for v in (a, b)])
            if int(got.view(uint)[0]) != want:
                return False
    return True


def converted(bits: int, dtype: str, target: str) -> int:
    """The bits of the NaN ``bits`` of ``dtype`` converted to ``target`` as NumPy converts
    (sign and payload kept, so converting back gives ``bits``)."""
    value = np.array([bits], _uint(np.dtype(dtype))).view(dtype).astype(target)
    return int(value.view(_uint(value.dtype))[0])


@functools.cache
def fingerprint() -> str:
    """A digest of every answer (all functions, all float types)."""
    table = repr([(name, dtype, nan_bits(name, dtype)) for name in sorted(_UFUNCS)
                  for dtype in _DTYPES] + [cube_nan_positive(d) for d in _DTYPES[1:]]
                 + [invalid_nan_bits(d) for d in _DTYPES[1:]]
                 + [second_nan_wins(op, d) for op in ("add", "mul") for d in _DTYPES]
                 + [larger_nan_wins_remainder(d) for d in _DTYPES[1:]])
    return hashlib.sha256(table.encode()).hexdigest()[:16]
