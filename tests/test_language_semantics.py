"""Programs tsjit accepted but ran differently from Python (issue 12, item 2): each
runs eagerly and scripted, several calls (profiling, optimized), results or exception
classes compared."""
from __future__ import annotations

from typing import Final

import numpy as np
import pytest
from _differential import assert_same, check

import tsjit

# ---------------------------------------------------------------- mutable defaults


def remember(x: int, seen: list[int] = []) -> list[int]:  # noqa: B006 (the point)
    seen.append(x)
    return seen


def count_remembered(x: int) -> int:
    return len(remember(x))


def test_a_mutable_default_of_a_called_function_is_one_list_shared_by_every_call():
    """As in Python, the default list is created once, with the function: a call from
    script code appends to the same list as a call from Python.  Each script call used
    to get a fresh list."""
    scripted = tsjit.script(count_remembered)
    before = len(remember.__defaults__[0])
    got = [scripted(i) for i in range(4)]
    assert got == [before + 1, before + 2, before + 3, before + 4]
    assert count_remembered(9) == before + 5            # eager Python sees the same list
    assert remember.__defaults__[0][-5:] == [0, 1, 2, 3, 9]


def tally(key: str, counts: dict[str, int] = {}) -> int:  # noqa: B006 (the point)
    counts[key] = counts.get(key, 0) + 1
    return counts[key]


def tally_twice(key: str) -> tuple[int, int]:
    return tally(key), tally(key + "!")


def test_a_mutable_default_dict_is_shared_between_script_and_python_calls():
    scripted = tsjit.script(tally_twice)
    assert [scripted("a") for _ in range(3)] == [(1, 1), (2, 2), (3, 3)]
    assert tally_twice("a") == (4, 4)


# ---------------------------------------------------------------- __bool__


class Truthy:
    def __init__(self, v: int):
        self.v = v

    def __bool__(self) -> int:                  # not a bool: Python raises TypeError
        return self.v


class MaybeTruthy:
    def __init__(self, v: int):
        self.v = v

    def __bool__(self) -> bool | None:
        if self.v > 0:
            return True
        return None


def truth_of_int_bool(v: int) -> int:
    if Truthy(v):
        return 1
    return 0


def truth_of_union_bool(v: int) -> int:
    return 1 if MaybeTruthy(v) else 0


def test_bool_returning_a_non_bool_raises_type_error():
    check(truth_of_int_bool, (2,), (0,), (2,))


def test_bool_returning_a_non_bool_on_some_calls_raises_type_error_on_those():
    check(truth_of_union_bool, (2,), (0,), (-1,), (3,))


# ---------------------------------------------------------------- constructors


class NoInit:
    k: int = 3


class Base:
    def __init__(self, v: int):
        self.v = v


class Child(Base):
    def doubled(self) -> int:
        return 2 * self.v


def make_without_init(v: int) -> int:
    NoInit(v)
    return v


def make_without_init_no_args(v: int) -> int:
    return NoInit().k + v


def make_with_inherited_init(v: int) -> int:
    return Child(v).doubled()


def test_a_class_without_init_called_with_arguments_raises_type_error():
    check(make_without_init, (1,), (2,))
    check(make_without_init_no_args, (1,), (2,))


def test_an_inherited_init_runs():
    check(make_with_inherited_init, (1,), (5,))


# ---------------------------------------------------------------- class variables


class Config:
    step = 2
    label = "run"
    LIMIT: Final[int] = 100


def stepped(n: int) -> int:
    step = Config.step
    total = 0
    for i in range(n):                  # a native loop: the step enters it as a value
        total += i * step
    return total + Config.LIMIT


def labelled(n: int) -> str:
    return Config.label + str(n)


class Scaled(tsjit.Module):
    factor = 3

    def forward(self, x: np.ndarray) -> np.ndarray:
        return x * self.factor


def test_a_class_variable_is_read_when_the_code_runs(tmp_path):
    """Not frozen when compiled: `Config.step = ...` in Python is seen by script code on
    every call (profiling, optimized, native), as by Python.  Final ones are constants."""
    scripted, named = tsjit.script(stepped), tsjit.script(labelled)
    try:
        for step in (2, 5, -1, 7):
            Config.step = step
            Config.label = f"run{step}"
            for n in (0, 3, 10, 10):
                assert_same(scripted(n), stepped(n))
                assert_same(named(n), labelled(n))
        Config.step = 2.5           # typed code is not run on a value of another type
        with pytest.raises(TypeError, match="class variable Config.step was int when"):
            scripted(3)
    finally:
        Config.step, Config.label = 2, "run"


def test_a_class_variable_of_a_module_is_read_through_the_instance(tmp_path):
    scripted = tsjit.script(Scaled())
    x = np.arange(3.0)
    try:
        for factor in (3, 4, -2):
            Scaled.factor = factor
            for _ in range(3):
                assert_same(scripted(x), Scaled()(x))
        scripted.save(tmp_path / "m.tsjit")
        Scaled.factor = 10                  # the saved module holds the value it had
        loaded = tsjit.load(tmp_path / "m.tsjit")
        assert_same(loaded(x), x * -2)
        Scaled.factor = 0.5
        with pytest.raises(TypeError, match="class variable Scaled.factor was int"):
            scripted(x)
        scripted.factor = 2                 # the instance's own value shadows the class's
        assert_same(scripted(x), x * 2)
    finally:
        Scaled.factor = 3


def stepped_inside(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * Config.step        # read once per call, at its start
    return total


def test_a_class_variable_read_in_a_loop_leaves_the_loop_native(default_settings):
    tsjit.set_native_enabled(True)
    scripted = tsjit.script(stepped_inside)
    try:
        for step in (2, 9):
            Config.step = step
            for n in (3, 10, 10):
                assert_same(scripted(n), stepped_inside(n))
        assert "prim::NativeCall" in str(scripted.graph_for(10))
        Config.step = 1.5
        with pytest.raises(TypeError, match="class variable Config.step"):
            scripted(10)
        Config.step = 4
        assert_same(scripted(10), stepped_inside(10))
    finally:
        Config.step = 2


class Inner(tsjit.Module):
    gain = 2

    def forward(self, x: np.ndarray) -> np.ndarray:
        return x * self.gain


class Outer(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x: np.ndarray, flag: bool) -> np.ndarray:
        inner = self.inner
        if flag:
            y = x * inner.gain
        else:
            y = x - inner.gain
        return y + inner(x)


def test_a_class_variable_of_a_submodule_is_read_where_it_is_used():
    scripted = tsjit.script(Outer())
    x = np.arange(3.0)
    try:
        for gain in (2, 5):
            Inner.gain = gain
            for flag in (True, False, True):
                assert_same(scripted(x, flag), Outer()(x, flag))
    finally:
        Inner.gain = 2


class Sized:
    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n


def truth_by_length(n: int) -> int:
    return 1 if Sized(n) else 0


def test_truth_by_a_negative_length_raises_value_error():
    check(truth_by_length, (2,), (0,), (-1,), (3,))
