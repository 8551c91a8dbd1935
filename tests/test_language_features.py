"""Programs that Python and TorchScript both run, which tsjit rejected (issue 12, item
1): each feature runs eagerly and scripted, several calls (profiling, optimized), with
results and argument mutations compared."""
from __future__ import annotations

from typing import List, Optional  # noqa: UP035 (string forward references)

import numpy as np
import pytest
from _differential import assert_same, check
from test_frontend_modules import check_module

import tsjit

# ---------------------------------------------------------------- dict() and list()


def dict_of_keywords(a: int, b: int) -> dict[str, int]:
    return dict(first=a, second=b * 2)


def dict_of_mapping_and_keywords(m: dict[str, float], x: float) -> dict[str, float]:
    merged = dict(m, extra=x, first=-x)
    merged["after"] = 1.0
    return merged


def empty_constructors(n: int) -> tuple[int, list[str], dict[str, list[int]]]:
    counts: dict[str, int] = dict()
    names: list[str] = list()
    groups = dict()  # type: Dict[str, List[int]]
    for i in range(n):
        key = str(i % 3)
        counts[key] = counts.get(key, 0) + 1
        names.append(key)
        groups.setdefault(key, list()).append(i)
    return len(counts), names, groups


def constructor_arguments(xs: list[int]) -> list[int]:
    return extended(list(), xs)


def extended(acc: list[int], xs: list[int]) -> list[int]:
    acc.extend(xs)
    return acc


def test_dict_of_keywords():
    check(dict_of_keywords, (1, 2), (0, -5))


def test_dict_of_a_mapping_and_keywords_copies_then_stores():
    check(dict_of_mapping_and_keywords, ({"first": 1.5, "b": 2.0}, 3.0), ({}, -1.0))


def test_zero_argument_dict_and_list_take_the_annotation():
    check(empty_constructors, (0,), (5,), (7,))
    check(constructor_arguments, ([1, 2],), ([],))


# ---------------------------------------------------------------- conversions


class Meters:
    def __init__(self, value: float):
        self.value = value

    def __float__(self) -> float:
        return self.value

    def __int__(self) -> int:
        return int(self.value * 100.0)


class Slot:
    def __init__(self, i: int):
        self.i = i

    def __index__(self) -> int:
        return self.i


def conversions(v: float, i: int) -> tuple[float, int, int, float]:
    m = Meters(v)
    s = Slot(i)
    return float(m) + 1.0, int(m), int(s), float(s)


def test_int_and_float_of_an_object_call_its_conversion_methods():
    check(conversions, (1.25, 3), (-2.5, 0))


# ---------------------------------------------------------------- classmethod, property


class Counter:
    start: int = 10

    def __init__(self, n: int):
        self.n = n

    @classmethod
    def from_pair(cls, a: int, b: int) -> Counter:
        return cls(a * b)

    @classmethod
    def twice(cls, n: int) -> Counter:
        return cls.from_pair(n, 2)

    @property
    def double(self) -> int:
        return self.n * 2

    @property
    def tripled(self) -> int:
        return self.n * 3

    @double.setter
    def double(self, value: int) -> None:
        self.n = value // 2


def classmethods(a: int, b: int) -> tuple[int, int, int]:
    c = Counter.from_pair(a, b)
    d = c.twice(b)                  # on an instance: cls is still the class
    return c.n, d.n, Counter.twice(a).n


def property_setter(a: int) -> tuple[int, int]:
    c = Counter(a)
    c.double = 10
    c.double += 4
    return c.n, c.double


def test_classmethods_called_on_the_class_and_on_an_instance():
    check(classmethods, (2, 3), (0, -1))


def test_property_setter_of_a_script_class():
    check(property_setter, (1,), (7,))


class Scaled(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.w = np.array([1.0, 2.0])
        self.gain = 1.0

    @property
    def scale(self) -> float:
        return self.gain * 10.0

    @scale.setter
    def scale(self, value: float) -> None:
        self.gain = value / 10.0

    def forward(self, x: np.ndarray, s: float) -> np.ndarray:
        self.scale = s
        return x * self.w * self.scale


def test_property_setter_of_a_module():
    eager, scripted = Scaled(), tsjit.script(Scaled())
    for s in (5.0, 20.0):
        x = np.arange(2.0)
        assert np.array_equal(scripted(x, s), eager(x, s))
        assert scripted.gain == eager.gain


def read_only_assigned(c: Counter) -> None:
    c.tripled = 3


# ---------------------------------------------------------------- forward references


class Node:
    # the typing spelling with quoted names, as TorchScript code writes it
    def __init__(self, value: int, children: List["Node"],  # noqa: UP006, UP037
                 parent: Optional["Node"]):  # noqa: UP037, UP045
        self.value = value
        self.children = children
        self.parent = parent


def tree_sum(n: int) -> int:
    root = Node(0, [], None)
    for i in range(n):
        root.children.append(Node(i, [], root))
    total = 0
    for child in root.children:
        p = child.parent
        if p is not None:
            total += child.value + p.value
    return total


def test_string_forward_references_inside_generics():
    check(tree_sum, (0,), (4,))


# ---------------------------------------------------------------- for targets


def for_targets(xs: list[int], pairs: list[tuple[int, tuple[int, int]]]) -> list[int]:
    out = [0, 0, 0]
    for i, in zip(xs):
        out[0] += i
    for a, (b, c) in pairs:
        out[1] += a * b - c
    for out[2], _ in pairs:         # a subscript as a target, as Python allows
        pass
    for first, *rest in [xs, xs[1:]]:
        out.append(first * len(rest))
    for [a], *middle, last in (((1,), 2, 3), ((4,), 5)):
        out.append(a + len(middle) + last)
    return out


class Box:
    def __init__(self):
        self.last = 0


def attribute_target(xs: list[int]) -> int:
    box = Box()
    for box.last in xs:
        pass
    return box.last


def test_the_target_shapes_of_a_for_loop():
    check(for_targets, ([1, 2, 3], [(1, (2, 3)), (4, (5, 6))]), ([7, 8], []))
    check(attribute_target, ([4, 5],), ([],))


@pytest.mark.parametrize("fn", [read_only_assigned])
def test_assigning_a_property_without_setter_is_a_compilation_error(fn):
    with pytest.raises(tsjit.CompilationError, match="has no setter"):
        tsjit.script(fn)


# ---------------------------------------------------------------- module containers


class AddConst(tsjit.Module):
    def __init__(self, k: float):
        super().__init__()
        self.k = k

    def forward(self, x: np.ndarray) -> np.ndarray:
        return x + self.k


class Chain(tsjit.ModuleList):
    def forward(self, x: np.ndarray) -> np.ndarray:
        for layer in self:
            x = layer(x)
        return x * float(len(self)) + self[0](x)


class Named(tsjit.ModuleDict):
    def forward(self, x: np.ndarray) -> tuple[np.ndarray, list[str]]:
        seen: list[str] = []
        for name, layer in self.items():
            x = layer(x)
            seen.append(name)
        for key in self.keys():
            seen.append(key)
        return x, seen


class Holder(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.branches = tsjit.ModuleDict({"a": AddConst(1.0), "b": AddConst(-3.0)})

    def forward(self, x: np.ndarray, key: str) -> np.ndarray:
        if "a" in self.branches:
            x = x * 2.0
        if "z" not in self.branches and key in self.branches:
            x = x + 0.5
        for item in self.branches.items():
            if item[0] != key:
                x = item[1](x)
        return x


def test_a_module_list_subclass_iterates_and_indexes_itself():
    check_module(lambda: Chain([AddConst(1.0), AddConst(2.5)]), "forward",
                 (np.arange(3.0),))


class HoldsChain(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.chain = Chain([AddConst(1.0), AddConst(-0.5)])

    def forward(self, x: np.ndarray) -> np.ndarray:
        total = self.chain(x)
        for layer in self.chain:        # still a container of submodules
            total = total + layer(x)
        return total


def test_a_module_list_subclass_held_by_a_module_is_callable_and_iterable():
    check_module(HoldsChain, "forward", (np.arange(3.0),), (np.ones((2, 2)),))


def test_a_module_dict_subclass_iterates_its_items_and_keys():
    check_module(lambda: Named({"first": AddConst(1.0), "second": AddConst(2.0)}), "forward",
                 (np.ones(2),))


def test_membership_and_indexed_items_of_a_module_dict():
    check_module(Holder, "forward", (np.arange(2.0), "a"), (np.arange(2.0), "b"),
                 (np.arange(2.0), "q"))


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


class WithActivation(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.activation = relu
        self.w = np.array([1.0, -2.0, 3.0])

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self.activation(x * self.w)


class WithUfunc(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.activation = np.tanh
        self.reduce = max

    def forward(self, x: np.ndarray, a: int) -> tuple[np.ndarray, int]:
        return self.activation(x) * 2.0, self.reduce(a, 3)


def test_a_module_attribute_holding_a_function_is_called_without_self():
    scripted = check_module(WithActivation, "forward", (np.array([1.0, 1.0, -1.0]),))
    with pytest.raises(AttributeError, match="compiled into the code"):
        scripted.activation = np.tanh
    scripted, eager = tsjit.script(WithUfunc()), WithUfunc()
    for x, a in ((np.arange(3.0), 5), (np.ones(2, np.float32), 1), (np.arange(3.0), 5)):
        for got, want in zip(scripted(x, a), eager(x, a)):
            assert_same(got, want, ulps=4)
    with pytest.raises(AttributeError, match="compiled into the code"):
        scripted.reduce = min


class Base(tsjit.Module):
    history: list[int]

    def __init__(self):
        super().__init__()
        self.history = []
        self.scale = 2


class Derived(Base):
    def __init__(self):
        super().__init__()
        self.extra = 1

    def forward(self, x: int) -> int:
        self.history.append(x * self.scale + self.extra)
        return len(self.history)


class InitAnnotatedBase(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.seen: dict[str, float] = {}


class InitAnnotatedDerived(InitAnnotatedBase):
    def forward(self, key: str, v: float) -> float:
        self.seen[key] = self.seen.get(key, 0.0) + v
        return self.seen[key]


class Point2:
    x: float

    def __init__(self, x: float):
        self.x = x
        self.tags = []


class Point3(Point2):
    tags: list[str]

    def tagged(self, tag: str) -> int:
        self.tags.append(tag)
        return len(self.tags)


def inherited_class_annotation(x: float) -> int:
    p = Point3(x)
    p.tagged("a")
    return p.tagged(str(p.x))


def test_attribute_annotations_are_inherited_from_a_base_module_or_class():
    check_module(Derived, "forward", (1,), (5,))
    check_module(InitAnnotatedDerived, "forward", ("a", 1.5), ("b", 2.0), ("a", 0.25))
    check(inherited_class_annotation, (1.5,), (0.0,))


# ---------------------------------------------------------------- sorting


def sort_unorderable(xs: list[int], n: int, sort_them: bool) -> tuple[list[int], int]:
    maybe: list[int | None] = []
    for _ in range(n):
        maybe.append(None)
    if sort_them:
        maybe.sort()                # TypeError only when it runs with two elements or more
    rows: list[dict[str, int]] = [{"a": i} for i in range(n)]
    ordered = sorted(rows, reverse=True)
    xs.sort()
    return xs, len(maybe) + len(ordered)


def test_sorting_elements_without_less_than_is_checked_when_the_sort_runs():
    check(sort_unorderable, ([3, 1, 2], 5, False), ([3, 1], 1, True), ([2, 1], 0, True),
          ([1], 2, True), ([1], 2, False))


# ---------------------------------------------------------------- complex


def complex_arithmetic(a: float, z: complex) -> tuple[complex, float, complex, bool]:
    w = complex(a, 2.0)
    v = w * w + 1j - z / (1 + 2j)
    v += 3
    v = -v ** 2
    return v.conjugate(), abs(w) + w.real - w.imag, complex(a) + 0.5j, v == z


def complex_loop(z: complex, n: int) -> tuple[complex, float]:
    acc = 0j
    for i in range(n):
        acc = acc * z + i
    return acc, abs(acc)


def test_complex_values_in_arithmetic():
    check(complex_arithmetic, (1.0, 2j), (0.5, 1 + 1j), (-2.0, 3), (0.0, -0.0j),
          (1.0, 1.5))
    check(complex_loop, (0.5 + 0.5j, 10), (1j, 0), (2.0, 5))


def test_complex_round_trips_through_save_and_load(tmp_path):
    scripted = tsjit.script(complex_arithmetic)
    scripted.save(tmp_path / "f.tsjit")
    loaded = tsjit.load(tmp_path / "f.tsjit")
    assert loaded(1.0, 2j) == complex_arithmetic(1.0, 2j)
    assert "complex z" in loaded.schema


def complex_with_arrays(x: np.ndarray, z: complex) -> tuple[np.ndarray, np.ndarray]:
    y = x * z + 1j
    return np.abs(y) * 2.0 + x, (x + 2.0) * 1j - x


def test_complex_scalars_with_arrays_promote_as_numpy_does():
    """The fuser declines complex operands; the arrays around them still fuse."""
    check(complex_with_arrays, (np.arange(4.0), 1 + 2j), (np.ones((2, 3), np.float32), 0.5j),
          (np.arange(3), -1j), (np.arange(4.0), 1 + 2j))


def complex_floor_division(z: complex) -> complex:
    return z // 2


def complex_ordering(z: complex, w: complex) -> bool:
    return z < w


@pytest.mark.parametrize("fn", [complex_floor_division, complex_ordering])
def test_operators_python_does_not_define_on_complex_are_compilation_errors(fn):
    with pytest.raises(tsjit.CompilationError, match="not supported|unsupported operand"):
        tsjit.script(fn)


def test_a_complex_parameter_takes_ints_and_floats_as_the_numeric_tower_allows():
    scripted = tsjit.script(complex_loop)
    assert scripted(2, 3) == complex_loop(2, 3)
    with pytest.raises(TypeError, match="argument 'z'"):
        scripted("1j", 3)
