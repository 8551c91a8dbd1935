"""Differential checks for the front-end tests: a scripted function must be
indistinguishable from the plain Python function (API.md, "the one invariant").

`assert_same` compares two results the way the contract defines "indistinguishable":
same Python type at every level, arrays with the same dtype, shape and bitwise values
(NaN in the same places), script-class instances by their attributes.  `check` runs a
function eagerly and scripted on fresh copies of each argument tuple and compares the
results (or the exception classes) and the arguments afterwards (mutation).
"""
from __future__ import annotations

import copy
import enum

import numpy as np

import tsjit

DICT_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))
ITERATORS = (zip, enumerate, type(reversed([])), type(reversed(range(0))), reversed)


def assert_same(got: object, want: object, where: str = "result", ulps: int = 0) -> None:
    """Indistinguishable results.  Floats compare bitwise (the sign of zero counts, NaN
    matches NaN) unless `ulps` allows the contract's tolerance for transcendental functions
    (4 ulp)."""
    assert type(got) is type(want), f"{where}: type {type(got).__name__} != " \
                                    f"{type(want).__name__} ({got!r} vs {want!r})"
    if isinstance(want, np.ndarray | np.generic):
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}"
        assert np.shape(got) == np.shape(want), f"{where}: shape {np.shape(got)} != " \
                                                f"{np.shape(want)}"
        if want.dtype.kind == "f":
            assert _same_floats(got, want, ulps), f"{where}: {got!r} != {want!r}"
        elif want.dtype.kind == "c":   # each part as a float (NaN matches NaN)
            assert _same_floats(np.real(got), np.real(want), ulps) and \
                _same_floats(np.imag(got), np.imag(want), ulps), f"{where}: {got!r} != {want!r}"
        else:
            assert np.array_equal(got, want), f"{where}: {got!r} != {want!r}"
    elif isinstance(want, float):
        assert _same_floats(np.float64(got), np.float64(want), ulps), \
            f"{where}: {got!r} != {want!r}"
    elif isinstance(want, list | tuple):
        assert len(got) == len(want), f"{where}: length {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]", ulps)
    elif isinstance(want, dict):
        assert list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
        for k in want:
            assert_same(got[k], want[k], f"{where}[{k!r}]", ulps)
    elif isinstance(want, DICT_VIEWS + ITERATORS):  # the same class, the same items left
        assert_same(list(got), list(want), f"list({where})", ulps)
    elif isinstance(want, range | slice):
        assert got == want, f"{where}: {got!r} != {want!r}"
    elif isinstance(want, complex):       # each part as a float (NaN matches NaN)
        assert_same(got.real, want.real, f"{where}.real", ulps)
        assert_same(got.imag, want.imag, f"{where}.imag", ulps)
    elif isinstance(want, int | str | bytes | enum.Enum) or want is None:
        assert got == want, f"{where}: {got!r} != {want!r}"
    else:                                   # a script-class instance: compare its state
        assert_same(vars(got), vars(want), f"{where}.__dict__", ulps)


def _same_floats(got: np.ndarray, want: np.ndarray, ulps: int) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    nan = np.isnan(want)
    if not np.array_equal(np.isnan(got), nan):
        return False
    got, want = got[~nan], want[~nan]
    if ulps == 0:
        return bool(np.all((got == want) & (np.signbit(got) == np.signbit(want))))
    return bool(np.all((got == want) | (np.abs(got - want) <= ulps * np.abs(np.spacing(want)))))


def outcome(fn, args: tuple) -> tuple[str, object]:
    """("value", result) or ("raise", exception class)."""
    try:
        return "value", fn(*args)
    except Exception as e:  # noqa: BLE001  (any exception class is a possible outcome)
        return "raise", type(e)


def check(fn, *calls: tuple, scripted=None, ulps: int = 0) -> object:
    """Script `fn` (unless given) and compare it with `fn` on every argument tuple."""
    scripted = scripted if scripted is not None else tsjit.script(fn)
    for args in calls:
        eager_args, script_args = copy.deepcopy(args), copy.deepcopy(args)
        want = outcome(fn, eager_args)
        got = outcome(scripted, script_args)
        assert got[0] == want[0], f"{fn.__name__}{args!r}: scripted {got}, eager {want}"
        if want[0] == "raise":
            assert got[1] is want[1], f"{fn.__name__}{args!r}: raised {got[1].__name__}, " \
                                      f"eager raised {want[1].__name__}"
        else:
            assert_same(got[1], want[1], f"{fn.__name__}{args!r}", ulps)
        assert_same(list(script_args), list(eager_args), f"{fn.__name__}{args!r} arguments")
    return scripted
