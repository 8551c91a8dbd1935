"""Keyword-only parameters (`def f(x, *, k: int)`), as TorchScript accepts them (without
defaults): script code calls them by keyword, and the scripted function binds Python's
calls as the plain function does on every tier, also after pickling and once a direct
entry (native code without a Python frame) would otherwise take positional calls."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from _differential import check

import tsjit


def offset(x: int, *, by: int) -> int:
    return x + by


def calls_by_keyword(x: int) -> int:
    return offset(x, by=4) * offset(by=-1, x=x)


def shifted_scaled(x: np.ndarray, *, scale: float, shift: float) -> np.ndarray:
    return x * scale + shift


CALLS = [((1,), {"by": 2}), ((), {"x": 1, "by": 2}), ((1, 2), {}), ((1,), {}),
         ((1,), {"by": 2, "other": 3})]


def outcome(fn, args, kwargs):
    try:
        return "value", fn(*args, **kwargs)
    except TypeError:
        return "raise", TypeError


@pytest.mark.parametrize("restore", [False, True])
def test_keyword_only_parameters_bind_as_in_python(restore):
    scripted = tsjit.script(offset)
    if restore:
        scripted = pickle.loads(pickle.dumps(scripted))
    for _ in range(4):
        for args, kwargs in CALLS:
            assert outcome(scripted, args, kwargs) == outcome(offset, args, kwargs)
    check(calls_by_keyword, (3,), (-2,), (3,))
    assert "def offset(x: int, *, by: int) -> int:" in scripted.code


def test_a_fused_function_with_keyword_only_parameters_never_takes_them_by_position():
    scripted = tsjit.script(shifted_scaled)
    x = np.arange(16, dtype=np.float32)
    for _ in range(4):
        got = scripted(x, shift=1.0, scale=0.5)
        np.testing.assert_array_equal(got, shifted_scaled(x, scale=0.5, shift=1.0))
    with pytest.raises(TypeError, match="positional"):
        scripted(x, 0.5, 1.0)


def defaulted_keyword(x: int, *, by: int = 1) -> int:
    return x + by


def test_a_keyword_only_parameter_with_a_default_is_refused_as_in_torchscript():
    with pytest.raises(tsjit.CompilationError, match="keyword-only parameters with defaults"):
        tsjit.script(defaulted_keyword)
