"""Regressions found by differential programs of the kind TorchScript users write: each
test is the smallest program that once differed from eager Python or was wrongly
rejected, called several times (profiling, optimized and re-specialized calls)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from _differential import check

import tsjit


def unique_counts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values, counts = np.unique(x, return_counts=True)
    return values, counts


def test_constant_flags_decide_a_numpy_result_structure():
    # The front end did not show constant arguments to NumPy type rules: the result
    # of np.unique(..., return_counts=True) was Any and could not be unpacked.
    x = np.array([3, 1, 3, 2])
    check(unique_counts, (x,), (x,), (x.astype(np.float32),))


def linspace_in_list(n: int) -> list[np.ndarray]:
    return [np.linspace(0.0, 1.0, n), np.zeros(n)]


def test_linspace_is_a_tensor_in_a_list_of_tensors():
    check(linspace_in_list, (3,), (3,), (0,))


def items_into_containers(x: np.ndarray) -> tuple[list[float], dict[str, float], list[float]]:
    out: list[float] = [x[0].item()]
    out.append(x[1].item())
    out.insert(0, x[-1].item())
    out[1] = x[1].item()
    d: dict[str, float] = {"first": x[0].item()}
    d["last"] = x[-1].item()
    d.setdefault("other", x[1].item())
    return out, d, [x[i].item() for i in range(x.shape[0])]


def test_any_values_are_stored_in_typed_containers_as_assignments_take_them():
    # x[i].item() is Any; `v: float = x[i].item()` was accepted but storing it in a
    # List[float] / Dict[str, float] (append, insert, item assignment, literal,
    # comprehension under an annotation) was rejected.
    x = np.array([1.5, -2.0, 4.25])
    check(items_into_containers, (x,), (x,), (x,), (x.astype(np.float32),), (np.arange(3),))


def falls_off_the_end(x: int):
    if x > 0:
        return x * 2


def stops_early(xs: list[int]) -> None:
    for x in xs:
        if x < 0:
            return
        xs.append(x)
        if len(xs) > 6:
            break


def test_falling_off_the_end_returns_none_only_on_paths_that_did_not_return():
    # The implicit `return None` was emitted unconditionally after the last statement:
    # a function whose last statement returns on one branch always returned None.
    check(falls_off_the_end, (3,), (3,), (-1,), (3,))
    check(stops_early, ([1, 2],), ([1, -1, 2],), ([1, 2, 3, 4],))


def deletes_an_undefined_name(x: int) -> int:
    del never_assigned  # noqa: F821
    return x


def test_deleting_an_undefined_name_is_a_compilation_error():
    # It was accepted, and the scripted function returned where Python raises.
    with pytest.raises(tsjit.CompilationError, match="never_assigned.*not defined") as e:
        tsjit.script(deletes_an_undefined_name)
    assert "del never_assigned" in str(e.value) and "<--- HERE" in str(e.value)


async def coroutine(x: int) -> int:
    return x


def test_an_async_def_is_rejected_with_its_source_marked():
    # The message was "<function coroutine at 0x...> is not a function definition",
    # with no source excerpt.
    with pytest.raises(tsjit.CompilationError, match="async def") as e:
        tsjit.script(coroutine)
    assert "<--- HERE" in str(e.value) and "async def coroutine" in str(e.value)


class History(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.seen: list[int] = []
        self.last: np.ndarray | None = None
        self.describe: Callable[[object], str] = repr     # not a script type, not used

    def forward(self, x: np.ndarray) -> tuple[int, np.ndarray]:
        self.seen.append(x.shape[0])
        last = self.last
        total = x.copy() if last is None else last + x
        self.last = total
        return len(self.seen), total


def test_module_attributes_take_their_init_annotations():
    # `self.seen: List[int] = []` in __init__ was typed from the empty list (List[Tensor]):
    # appending an int was rejected; `self.last: Optional[...] = None` was NoneType.
    eager, scripted = History(), tsjit.script(History())
    for x in (np.ones(2), np.arange(2.0), np.ones(2)):
        check(eager.forward, (x,), scripted=scripted)
    assert scripted.seen == eager.seen == [2, 2, 2]


def count_sizes(xs: list[int], groups: dict[str, list[int]]) -> int:
    return len(xs) + len(groups)


def group_by_parity(n: int) -> tuple[dict[str, list[int]], list[list[int]], int]:
    groups: dict[str, list[int]] = {}
    rows: list[list[int]] = []
    for i in range(n):
        groups.setdefault("odd" if i % 2 else "even", []).append(i)
        rows.append([])
        rows[-1].append(i * i)
    missing = groups.get("none", [])
    return groups, rows, count_sizes([], {}) + len(missing)


def test_empty_literal_arguments_take_the_parameter_type():
    # `[]` passed to d.setdefault / list.append / a script function was List[Tensor]
    # whatever the parameter: storing it in a Dict[str, List[int]] was rejected.
    check(group_by_parity, (0,), (5,), (5,), (5,))


class ExitLog:
    def __init__(self):
        self.events: list[str] = []

    def __enter__(self) -> int:
        self.events.append("enter")
        return 1

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        self.events.append("exit")


def with_object_annotations(x: int) -> list[str]:
    log = ExitLog()
    with log as v:
        log.events.append(str(x + v))
    return log.events


def test_object_annotation_is_any():
    # `object` (as in __exit__'s parameters) was an unknown type annotation.
    check(with_object_annotations, (1,), (2,))


def skip_strings_stop_above(x: int) -> tuple[int, str]:
    total = 0
    names = ""
    for v in (1, "two", 3.5, 4):
        if isinstance(v, str):
            names += v
            continue
        if v > x:
            break
        total += int(v)
    return total, names


def inner_unrolled_break(n: int) -> list[int]:
    out: list[int] = []
    for i in range(n):
        for k in (1, 2, 3):
            if k == i:
                break
            if (k + i) % 2 == 0:
                continue
            out.append(k * 10 + i)
        out.append(-1)
    return out


def return_or_break(x: int) -> int:
    for v in (1, 2, 3):
        if v == x:
            return v * 100
        if v > x:
            break
    return -x


class Scale(tsjit.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: int) -> int:
        return x * self.k


class UntilLarge(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.steps = tsjit.ModuleList([Scale(2), Scale(3), Scale(5)])

    def forward(self, x: int) -> int:
        for step in self.steps:
            x = step(x)
            if x > 20:
                break
        return x


def test_break_and_continue_in_unrolled_loops():
    # Loops over tuples and ModuleLists rejected break/continue.
    check(skip_strings_stop_above, (0,), (2,), (2,), (10,))
    check(inner_unrolled_break, (0,), (4,), (4,))
    check(return_or_break, (2,), (0,), (9,), (9,))
    scripted = tsjit.script(UntilLarge())
    for x in (1, 3, -1, 3):
        check(UntilLarge().forward, (x,), scripted=scripted)


def times_one(x: float) -> float:
    return x * 1.0


def plus_zero(x: int) -> int:
    return x + 0


def test_arithmetic_with_a_neutral_constant_keeps_python_result_types():
    # x * 1.0 was rewritten to x: a float parameter holding an int returned the int, an
    # int parameter holding a bool returned the bool.
    check(times_one, (3,), (3,), (2.5,), (True,))
    check(plus_zero, (True,), (True,), (7,))


def countdown_by_walrus(n: int) -> tuple[int, int]:
    s = 0
    while (k := n - s) > 0:
        s += 1
    return s, k


def read_until_negative(xs: list[int]) -> tuple[int, int]:
    i = 0
    total = 0
    while (v := xs[i]) >= 0:
        total += v
        i += 1
    return total, v


def test_an_assignment_in_a_while_condition_is_carried_by_the_loop():
    # `k := n - s` in the condition rebinds k on each test, but the loop did not carry
    # it: the body and the code after the loop saw the first test's k (6 for n=3, not 3)
    check(countdown_by_walrus, (3,), (0,), (5,))
    check(read_until_negative, ([3, 1, -2],), ([-1],), ([4, 5],))


def doubled_if_large(a: int) -> int:
    b = 0
    if a > 0 and (b := a * 2) > 3:
        return b
    return b - 1


def first_positive(a: int, c: int) -> tuple[int, int]:
    k = -1
    v = (k := a) if a > 0 else ((k := c) if c > 0 else 0)
    return v, k


def test_an_assignment_inside_and_or_or_a_ternary_is_seen_after_it():
    # the alternatives of `and`/`or`/`x if c else y` ran in frames whose assignments were
    # dropped: `a > 0 and (b := a * 2) > 3` left b at 0 (6 for a = 3)
    check(doubled_if_large, (3,), (1,), (-1,))
    check(first_positive, (3, 1), (-1, 4), (-1, -2))


def element_classes(x: np.ndarray):
    v = x[0]
    return (isinstance(v, np.int64), isinstance(v, (np.int8, np.float32)), isinstance(v, float),
            isinstance(v, complex), isinstance(v, int), isinstance(v, np.ndarray),
            isinstance(x, np.ndarray))


def test_isinstance_of_an_element_and_numpy_classes_is_decided_by_the_value():
    # a Tensor-typed value may be an ndarray or a NumPy scalar of any dtype: the answer
    # was decided when compiling (np.int64: True for int8 elements; float: False for
    # float64 elements, which are Python floats)
    arrays = [np.array([1, 2], np.int8), np.array([1.5]), np.array([3]), np.array([1j]),
              np.array([2.5], np.float32), np.array([True])]
    check(element_classes, *[(a,) for a in arrays])
    check(element_classes, (np.float64(2.0),), (np.array(1.0),))


def running_totals(xs: list[int]) -> tuple[list[int], int]:
    total = 0
    totals = [(total := total + x) for x in xs]
    return totals, total


def last_large_double(xs: list[int]) -> tuple[list[int], int]:
    y = 0
    large = [y for x in xs for _ in range(2) if (y := x * 2) > 2]
    return large, y


def test_an_assignment_in_a_comprehension_binds_in_the_function():
    # PEP 572: `:=` in a comprehension assigns the enclosing function's variable; the
    # comprehension's loop did not carry it (running totals [1, 2, 3] for [1, 2, 3],
    # and the variable after it unchanged)
    check(running_totals, ([1, 2, 3],), ([],))
    check(last_large_double, ([1, 2, 3],), ([5],), ([1],))
