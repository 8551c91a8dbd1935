"""Script classes: instances are real instances of the user's class, created and
mutated in script code or passed in from Python; methods call methods; magic methods
give operators, len, subscripts, bool and `in`; instances live in containers."""
from __future__ import annotations

from typing import ClassVar, NamedTuple

import numpy as np
import pytest
from _differential import check

import tsjit


class Vec:
    def __init__(self, x: float, y: float):
        self.x = x
        self.y = y

    def norm2(self) -> float:
        return self.dot(self)

    def dot(self, other: Vec) -> float:
        return self.x * other.x + self.y * other.y

    def scaled(self, k: float) -> Vec:
        return Vec(self.x * k, self.y * k)

    def __add__(self, other: Vec) -> Vec:
        return Vec(self.x + other.x, self.y + other.y)

    def __sub__(self, other: Vec) -> Vec:
        return Vec(self.x - other.x, self.y - other.y)

    def __mul__(self, k: float) -> Vec:
        return self.scaled(k)

    def __neg__(self) -> Vec:
        return Vec(-self.x, -self.y)

    def __eq__(self, other: Vec) -> bool:
        return self.x == other.x and self.y == other.y

    def __lt__(self, other: Vec) -> bool:
        return self.norm2() < other.norm2()


def vec_math(a: Vec, b: Vec) -> tuple[Vec, Vec, Vec, float, bool, bool, bool]:
    return a + b, (a - b) * 2.0, -a, a.norm2(), a == b, a < b, a != b


def test_methods_calling_methods_and_operator_magic_methods():
    check(vec_math, (Vec(1.0, 2.0), Vec(3.0, -1.0)), (Vec(0.0, 0.0), Vec(0.0, 0.0)))


def test_results_are_instances_of_the_users_class():
    result = tsjit.script(vec_math)(Vec(1.0, 2.0), Vec(3.0, 4.0))[0]
    assert type(result) is Vec and (result.x, result.y) == (4.0, 6.0)


class Counter:
    def __init__(self, start: int):
        self.count = start
        self.history: list[int] = []

    def bump(self, by: int = 1) -> int:
        self.count += by
        self.history.append(self.count)
        return self.count


def mutate_instance(c: Counter, n: int) -> int:
    for i in range(n):
        c.bump(i)
    c.bump()
    return c.count


def test_instances_passed_in_are_mutated_in_place():
    check(mutate_instance, (Counter(0), 3), (Counter(10), 0))


def create_and_return(n: int) -> Counter:
    c = Counter(n)
    c.bump(by=5)
    return c


def test_instances_created_in_script_code_are_returned():
    check(create_and_return, (1,), (-5,))


def list_of_instances(n: int) -> tuple[list[Vec], float]:
    vs = [Vec(float(i), 1.0) for i in range(n)]
    total = 0.0
    for v in vs:
        total += v.norm2()
    vs.append(Vec(0.0, 0.0))
    return vs, total


def instance_dict(vs: dict[str, Vec]) -> dict[str, float]:
    return {k: v.x for k, v in vs.items()}


def test_instances_in_lists_and_dicts():
    check(list_of_instances, (0,), (3,))
    check(instance_dict, ({"a": Vec(1.0, 2.0)},), ({},))


class Stack:
    def __init__(self):
        self.items: list[int] = []

    def push(self, v: int) -> None:
        self.items.append(v)

    def pop(self) -> int:
        return self.items.pop()

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> int:
        return self.items[i]

    def __setitem__(self, i: int, v: int) -> None:
        self.items[i] = v

    def __contains__(self, v: int) -> bool:
        return v in self.items


def stack_protocol(values: list[int]) -> tuple[int, bool, bool, int, list[int], bool]:
    s = Stack()
    for v in values:
        s.push(v)
    empty = not s
    if len(s) > 0:
        s[0] = s[-1] * 10
    top = s.pop() if s else -1
    return len(s), 3 in s, empty, top, s.items, bool(s)


def test_len_getitem_setitem_contains_and_truthiness():
    check(stack_protocol, ([1, 2, 3],), ([],), ([3],))


class Node:
    def __init__(self, value: int, next: Node | None):
        self.value = value
        self.next = next


def linked_sum(head: Node | None) -> int:
    total = 0
    cur = head
    while cur is not None:
        total += cur.value
        cur = cur.next
    return total


def build_list(n: int) -> Node | None:
    head: Node | None = None
    for i in range(n):
        head = Node(i, head)
    return head


def test_recursive_class_types_and_optional_attributes():
    check(linked_sum, (None,), (Node(1, Node(2, None)),))
    check(build_list, (0,), (3,))


class Holder:
    def __init__(self, data: np.ndarray, scale: float):
        self.data = data
        self.scale = scale

    def apply(self, x: np.ndarray) -> np.ndarray:
        self.data += x
        return self.data * self.scale


def array_attributes(h: Holder, x: np.ndarray) -> np.ndarray:
    return h.apply(x) + h.apply(x)


def test_array_attributes_mutated_in_place():
    check(array_attributes, (Holder(np.zeros(3), 2.0), np.arange(3.0)))


class Accumulator:
    def __init__(self):
        self.total = 0.0
        self.n = 0

    def __enter__(self) -> Accumulator:
        self.n += 1
        return self

    def __exit__(self, a: int | None, b: int | None, c: int | None) -> None:
        self.total = self.total / max(self.n, 1)


def with_as_self(xs: list[float]) -> float:
    acc = Accumulator()
    with acc as a:
        for x in xs:
            a.total += x
    return acc.total


def test_with_binding_the_instance_itself():
    check(with_as_self, ([1.0, 2.0],), ([],))


def isinstance_of_class(v: Vec, o: Vec | None) -> tuple[bool, bool, float]:
    got = 0.0
    if isinstance(o, Vec):
        got = o.x
    return isinstance(v, Vec), isinstance(o, Vec), got


def test_isinstance_with_script_classes():
    check(isinstance_of_class, (Vec(1.0, 2.0), None), (Vec(1.0, 2.0), Vec(3.0, 4.0)))


def test_script_class_decorator_returns_the_class():
    cls = tsjit.script(Counter)
    assert cls is Counter
    c = cls(3)
    assert c.bump() == 4


class Shadow:
    def __init__(self, v: int):
        self.v = v

    def get(self) -> int:
        return self.v

    @tsjit.ignore
    def python_side(self) -> int:
        return len({self.v})


def ignored_method(s: Shadow) -> int:
    return s.get() + s.python_side()


def test_ignored_methods_run_in_python():
    check(ignored_method, (Shadow(3),))


def identity_of_instances(a: Vec, b: Vec) -> tuple[bool, bool]:
    c = a
    return a is c, a is b


def test_instance_identity():
    v = Vec(1.0, 1.0)
    assert tsjit.script(identity_of_instances)(v, v) == (True, True)
    check(identity_of_instances, (Vec(1.0, 1.0), Vec(1.0, 1.0)))


@pytest.mark.parametrize("value", [1, 5])
def test_class_attribute_widened_to_optional_in_init(value):
    check(uses_optional_attribute, (value,))


class MaybeCache:
    def __init__(self, k: int):
        self.cached: int | None = None
        if k > 2:
            self.cached = k * 2

    def value(self) -> int:
        c = self.cached
        return c if c is not None else -1


def uses_optional_attribute(k: int) -> int:
    return MaybeCache(k).value()


class Grid:
    SIZE = 3
    NAME = "grid"

    def __init__(self, fill: int):
        self.cells: dict[str, list[int]] = {}
        self.fill = min(fill, Grid.SIZE)

    @staticmethod
    def key(i: int, j: int) -> str:
        return f"{i},{j}"

    def put(self, i: int, j: int) -> None:
        k = self.key(i, j)
        if k not in self.cells:
            self.cells[k] = []
        self.cells[k].append(self.fill * self.SIZE)


def static_methods_and_class_constants(fill: int, n: int) -> tuple[dict[str, list[int]], str,
                                                                   int]:
    g = Grid(fill)
    for i in range(n):
        g.put(i % 2, 0)
    return g.cells, Grid.key(n, n) + Grid.NAME, Grid.SIZE


def test_static_methods_and_class_level_constants():
    check(static_methods_and_class_constants, (1, 3), (7, 0))


class Total:
    def __init__(self):
        self.n = 0

    def __iadd__(self, k: int) -> Total:
        self.n += k
        return self


def in_place_operator(ks: list[int]) -> tuple[int, bool]:
    t = Total()
    alias = t
    for k in ks:
        t += k
    return t.n, alias is t


def test_augmented_assignment_calls_in_place_magic_methods():
    check(in_place_operator, ([1, 2, 3],), ([],))


def reflective_access(s: Stack) -> tuple[bool, bool, list[int], int]:
    items = getattr(s, "items")  # noqa: B009  (getattr is what is tested)
    return hasattr(s, "items"), hasattr(s, "missing"), items, getattr(s, "missing", 7)


def test_hasattr_and_getattr_with_a_default():
    check(reflective_access, (Stack(),))


def test_decorated_class_names_itself_before_the_class_statement_returns():
    # `@tsjit.script` on the class compiles its methods while the name is not bound yet
    # (here a cell of this function; at module level, a global): annotations and bodies
    # that name the class mean the class itself
    @tsjit.script
    class Interval:
        def __init__(self, lo: int, hi: int):
            self.lo = lo
            self.hi = hi

        def union(self, other: Interval) -> Interval:
            return Interval(min(self.lo, other.lo), max(self.hi, other.hi))

        def width(self) -> int:
            return self.hi - self.lo

    def spread(a: int, b: int) -> int:
        return Interval(a, a + 1).union(Interval(b, b + 2)).width()

    check(spread, (1, 5), (4, -3))


class Tally:
    def __init__(self, start: int):
        self.total = start
        self.steps: list[int] = []

    def add(self, x: int) -> int:
        self.total += x
        self.steps.append(x)
        return self.total

    @classmethod
    def fresh(cls, start: int) -> Tally:
        return cls(start)


def test_a_bound_method_scripts_as_its_class_method_bound_to_the_instance():
    # tsjit.script(obj.method) behaves as obj.method: self is the instance (it dropped the
    # binding, so every call missed an argument)
    eager, scripted_owner = Tally(10), Tally(10)
    add = tsjit.script(scripted_owner.add)
    for x in (2, -5, 7):
        assert add(x) == eager.add(x)
    assert (scripted_owner.total, scripted_owner.steps) == (eager.total, eager.steps)
    assert add(x=1) == eager.add(x=1)
    with pytest.raises(TypeError):
        add("2")
    with pytest.raises(tsjit.CompilationError, match="classmethod"):
        tsjit.script(Tally.fresh)


def test_class_level_annotations_may_name_the_class_being_decorated():
    # `nxt: Optional[Chain]` in the class body is read while the class statement runs
    @tsjit.script
    class Chain:
        value: int
        nxt: Chain | None

        def __init__(self, value: int, nxt: Chain | None):
            self.value = value
            self.nxt = nxt

    def length_and_sum(xs: list[int]) -> tuple[int, int]:
        head: Chain | None = None
        for x in xs:
            head = Chain(x, head)
        n, total = 0, 0
        while head is not None:
            n, total = n + 1, total + head.value
            head = head.nxt
        return n, total

    check(length_and_sum, ([4, 5, 6],), ([],))


class SelfContaining(NamedTuple):
    value: int
    rest: SelfContaining | None


def first_value(t: SelfContaining) -> int:
    return t.value


def test_unresolvable_or_recursive_class_annotations_are_compilation_errors():
    # they escaped as NameError and RecursionError from inside script()
    class Unknown:
        field: NoSuchName  # noqa: F821

        def __init__(self):
            self.field = 1

    with pytest.raises(tsjit.CompilationError, match="NoSuchName"):
        tsjit.script(Unknown)
    with pytest.raises(tsjit.CompilationError, match="recursive"):
        tsjit.script(first_value)


class Registry:
    prefix: ClassVar[str] = "id-"
    capacity: ClassVar[int] = 2
    names: list[str]

    def __init__(self):
        self.names = []

    def add(self, n: int) -> str:
        name = Registry.prefix + str(n)
        if len(self.names) < Registry.capacity:
            self.names.append(name)
        return name


def register_all(n: int) -> tuple[list[str], str]:
    r = Registry()
    last = ""
    for i in range(n):
        last = r.add(i)
    return r.names, last


def test_classvar_annotations_declare_class_variables_not_attributes():
    # script() refused `x: ClassVar[int] = 0` in a class body ("unknown type annotation")
    check(register_all, (1,), (4,))
