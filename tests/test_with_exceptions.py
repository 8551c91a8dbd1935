"""An exception leaving the body of a `with` statement calls the manager's __exit__ before
it propagates, as Python's with statement does (PyTorch's test_with_exceptions checks
the same of TorchScript): on the profiling call, on optimized calls (with the body's loop
in native code) and in a saved and loaded function."""
from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from _differential import check

import tsjit


class Recorder:
    def __init__(self, log: list[str], name: str):
        self.log, self.name = log, name

    def __enter__(self):
        self.log.append("enter " + self.name)
        return len(self.log)

    def __exit__(self, kind: Any, value: Any, traceback: Any):
        self.log.append("exit " + self.name)


class FailingExit:
    def __init__(self, log: list[str]):
        self.log = log

    def __enter__(self):
        return 1

    def __exit__(self, kind: Any, value: Any, traceback: Any):
        self.log.append("failing exit")
        raise ValueError("from __exit__")


def raise_when(flag: bool) -> int:
    if flag:
        raise KeyError("raised in a callee")
    return 1


def explicit_raise(log: list[str], x: int) -> int:
    with Recorder(log, "a") as n:
        if x > n:
            raise IndexError("explicit")
        x += n
    return x


def raised_by_an_operation(log: list[str], xs: list[int], stop: int) -> int:
    total = 0
    with Recorder(log, "a"), Recorder(log, "b"):
        for i in range(stop):
            total += xs[i]              # IndexError past the end, in native code
    return total


def raised_in_a_callee(log: list[str], flag: bool) -> int:
    with Recorder(log, "outer"):
        with Recorder(log, "inner"):
            y = raise_when(flag)
    return y


def raised_by_exit(log: list[str], x: int) -> int:
    with Recorder(log, "outer"):
        with FailingExit(log) as one:
            x += one
            if x > 5:
                raise KeyError("replaced by __exit__'s ValueError")
    return x


def body_in_a_loop(log: list[str], xs: list[int]) -> int:
    total = 0
    for v in xs:
        with Recorder(log, str(v)):
            if v == 0:
                continue
            if v < 0:
                break
            total += 100 // (v - 5)     # ZeroDivisionError at v == 5
    return total


def elements(x: np.ndarray, n: int, log: list[str]) -> float:
    s = 0.0
    with Recorder(log, "sum"):
        for i in range(n):
            s += float(x[i])
    return s


CASES = [
    (explicit_raise, ([], 1), ([], 5)),
    (raised_by_an_operation, ([], [1, 2, 3], 2), ([], [1, 2, 3], 4)),
    (raised_in_a_callee, ([], False), ([], True)),
    (raised_by_exit, ([], 1), ([], 9)),
    (body_in_a_loop, ([], [1, 0, 6, -1, 2]), ([], [7, 5, 1]), ([], [])),
    (elements, (np.arange(4.0), 4, []), (np.arange(4.0), 6, []),
     (np.arange(4, dtype=np.float32), 2, [])),
]


def test_an_exception_in_the_body_calls_exit_then_propagates():
    for fn, *calls in CASES:
        scripted = tsjit.script(fn)
        for _ in range(3):          # profiling, then optimized calls
            check(fn, *calls, scripted=scripted)
        check(fn, *calls, scripted=pickle.loads(pickle.dumps(scripted)))


def test_the_body_is_a_try_statement_in_the_interpreters_code():
    code = tsjit.script(explicit_raise).code
    assert "__exit__(type(" in code and "try:" in code


class Suppressing:
    def __enter__(self):
        return 0

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> bool:
        return True


def suppressed(x: int) -> int:
    with Suppressing():
        x = 10 // x
    return x


def test_an_exit_that_suppresses_is_a_runtime_error_not_a_silent_difference():
    scripted = tsjit.script(suppressed)
    assert scripted(5) == suppressed(5) == 2
    with pytest.raises(RuntimeError, match="suppress the exception"):
        scripted(0)


class NarrowlyAnnotated:
    """An __exit__ annotated for the None its normal exit passes (Python ignores the
    annotations when an exception passes its type, value and traceback)."""

    def __init__(self, log: list[str]):
        self.log = log

    def __enter__(self) -> int:
        return 2

    def __exit__(self, kind: int | None, value: int | None, traceback: int | None) -> None:
        self.log.append("exit, exception: " + str(kind is not None))


def narrowly_annotated(log: list[str], xs: list[int], i: int) -> int:
    with NarrowlyAnnotated(log) as k:
        v = xs[i] * k
    return v


def test_a_loaded_exit_takes_the_exception_whatever_its_annotations():
    scripted = tsjit.script(narrowly_annotated)
    restored = pickle.loads(pickle.dumps(scripted))
    calls = [([], [1, 2], 1), ([], [1, 2], 5), ([], [3], 0), ([], [], 0)]  # IndexError
    for _ in range(3):
        check(narrowly_annotated, *calls, scripted=scripted)
        check(narrowly_annotated, *calls, scripted=restored)
