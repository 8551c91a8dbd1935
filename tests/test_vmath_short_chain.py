"""Flags of the float32 exp polynomial's short chain (vmath._expm1_short_chain).

Estrin's scheme rounds r^2 alone, which underflows for |r| below 2**-63 where the Horner
form it replaced raises nothing and NumPy's exp is quiet. Arguments that small take the
Horner form's operations. vmath's sigmoid computes exp(-|x|) with no denormal_underflow
(its NumPy counterpart, 1 / (1 + exp(-x)), raises nothing at tiny normal x on any CPU),
so tiny normal arguments must leave the underflow flag clear; the x86 status register is
read through the C library's fetestexcept, in the thread that ran the kernel. (Not yet
below 2**-125: the Horner form's r/2 is a denormal there, inexact for odd mantissas.)
"""
from __future__ import annotations

import ctypes
import ctypes.util
import platform

import numpy as np
import pytest
from _llvm_harness import MathKernels

FE_UNDERFLOW = 0x10   # x86's <fenv.h>
FE_ALL_EXCEPT = 0x3F

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                reason="the flag bits above are x86's")


def raised_flags(kernels: MathKernels, name: str, x: np.ndarray) -> int:
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.feclearexcept(FE_ALL_EXCEPT)
    kernels(name, x)
    return libm.fetestexcept(FE_ALL_EXCEPT)


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_tiny_normal_arguments_raise_no_underflow(vector_bits):
    kernels = MathKernels(np.float32, ["sigmoid"], vector_bits=vector_bits)
    exponents = np.arange(-125, -29)
    magnitudes = np.concatenate([np.ldexp(1.0, exponents), np.ldexp(1.2345, exponents)])
    for magnitude in magnitudes.astype(np.float32):
        for x in (magnitude, -magnitude):
            arguments = np.full(37, x, np.float32)   # vector lanes and the loop's tail
            assert not raised_flags(kernels, "sigmoid", arguments) & FE_UNDERFLOW, x
