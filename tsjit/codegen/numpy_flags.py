"""Whether NumPy's math loops on this machine raise underflow for denormal arguments.

A function whose value at a denormal x is x itself, or 1 (tanh, log1p, expm1, exp), may or
may not raise the underflow flag there, depending on the loop NumPy dispatched to: here
(AVX2) float32 exp, expm1 and log1p and float64 expm1 and log1p raise it, float64 exp and
tanh of either type do not, and an AVX-512 machine's loops (SVML) may differ again. A
fused kernel raises the flags NumPy raises and no others (an extra flag sends the call
through NumPy again, a missing one loses a warning), so the kernels ask this module, which
runs each function once on a few denormals, and follow its answer. The answers shape
generated code: ``fingerprint()`` is part of every disk-cache entry's key material.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np

__all__ = ["fingerprint", "underflows_at_denormals"]

_UFUNCS: dict[str, np.ufunc] = {"exp": np.exp, "expm1": np.expm1, "tanh": np.tanh,
                                "log1p": np.log1p}
_DTYPES = ("float16", "float32", "float64")
# Elements per probe: enough for the vector body of NumPy's loop.
_LENGTH = 67


@functools.cache
def underflows_at_denormals(name: str, dtype: str) -> bool:
    """Whether NumPy's ``name`` raises underflow for denormal arguments of ``dtype`` (both
    signs, the smallest and a larger one); False for functions it is not asked about."""
    ufunc = _UFUNCS.get(name)
    if ufunc is None:
        return False
    info = np.finfo(dtype)
    raised = []
    with np.errstate(all="ignore"):   # tiny / 3 underflows, under whatever state
        denormals = (info.smallest_subnormal, info.tiny / 3)
    for value in denormals:
        for sign in (1, -1):
            with np.errstate(all="call", call=lambda kind, flag: raised.append(kind)):
                ufunc(np.full(_LENGTH, sign * value, dtype))
    return "underflow" in raised


@functools.cache
def fingerprint() -> str:
    """A digest of every answer (all functions, all float types)."""
    table = repr([(name, dtype, underflows_at_denormals(name, dtype))
                  for name in sorted(_UFUNCS) for dtype in _DTYPES])
    return hashlib.sha256(table.encode()).hexdigest()[:16]
