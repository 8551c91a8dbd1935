"""Programs tsjit accepted but ran differently from Python (issue 12, item 2): each
runs eagerly and scripted, several calls (profiling, optimized), results or exception
classes compared."""
from __future__ import annotations

from _differential import check

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
