"""Script classes that derive from one another (beyond TorchScript, which has no class
inheritance): isinstance() answers as Python's (an instance of a subclass is an instance
of its bases), on every tier and in a loaded program, whose rebuilt classes have no
Python bases; and where script code would call a base's methods on a subclass instance
(a parameter typed by the base, an Any narrowed to it) it refuses rather than give
another result than the Python function. `super()` calls the next class's method in the
instance's MRO, and `Cls.method(obj)` that class's method, compiled for the instance's
class."""
from __future__ import annotations

import pickle
from typing import Any

import pytest
from _differential import check

import tsjit


class Shape:
    def __init__(self, side: int):
        self.side = side

    def area(self) -> int:
        return self.side * self.side

    def twice_area(self) -> int:
        return self.area() * 2


class Rectangle(Shape):
    def __init__(self, side: int, other: int):
        self.side = side
        self.other = other

    def area(self) -> int:
        return self.side * self.other


def static_isinstance(n: int):
    r, s = Rectangle(n, 2), Shape(n)
    return isinstance(r, Shape), isinstance(s, Rectangle), isinstance(r, (int, Shape)), \
        tsjit.isinstance(r, Shape), r.twice_area(), s.twice_area()


def narrowed_union(n: int):
    x: Shape | Rectangle | int = n
    if n > 0:
        x = Rectangle(n, 3)
    elif n < 0:
        x = Shape(n)
    kinds = 0
    if isinstance(x, Shape):
        kinds += 1
    if isinstance(x, Rectangle):
        kinds += 10
    return kinds


def test_isinstance_of_a_subclass_instance_is_true_on_every_tier_and_loaded():
    scripted = check(static_isinstance, (3,), (-1,), (3,))
    check(static_isinstance, (4,), scripted=pickle.loads(pickle.dumps(scripted)))
    scripted = check(narrowed_union, (3,), (-2,), (0,), (3,))
    check(narrowed_union, (3,), (-2,), (0,), scripted=pickle.loads(pickle.dumps(scripted)))


def twice_area_of(shape: Shape | None) -> int:
    return shape.twice_area() if shape is not None else 0


class Tagged(Shape):
    """Adds state and a method, overrides nothing: runs Shape's code as Shape does."""

    def __init__(self, side: int, tag: str):
        self.side = side
        self.tag = tag

    def shout(self) -> str:
        return self.tag.upper()


def test_a_subclass_instance_that_overrides_a_method_is_a_type_error_for_its_base():
    # was Shape's area on a Rectangle: 18 where Python gives 24
    scripted = tsjit.script(twice_area_of)
    assert scripted(Shape(3)) == twice_area_of(Shape(3)) == 18
    with pytest.raises(TypeError, match="a subclass of Shape"):
        scripted(Rectangle(3, 4))
    check(twice_area_of, (Tagged(3, "t"),), (None,), (Tagged(-2, ""),), scripted=scripted)


def area_if_shape(x: Any) -> int:
    if isinstance(x, Shape):
        return x.area()
    return -1


def test_narrowing_an_any_to_a_class_with_subclasses_is_refused():
    with pytest.raises(tsjit.CompilationError, match="has subclasses") as err:
        tsjit.script(area_if_shape)
    assert "isinstance(x, Shape)" in str(err.value)


def test_tsjit_isinstance_of_a_class_runs_eagerly():
    assert tsjit.isinstance(Rectangle(1, 2), Shape) and not tsjit.isinstance(Shape(1), Rectangle)


class Square(Shape):
    def __init__(self, side: int):
        super().__init__(side)
        self.label = "square"

    def area(self) -> int:
        return super().area() + 0

    def twice_area(self) -> int:
        return super().twice_area() + 1


class LabelledSquare(Square):
    def __init__(self, side: int, label: str):
        super().__init__(side)
        self.label = label + "/" + self.label


class Standalone:
    def __init__(self, n: int):
        super().__init__()
        self.n = n


def through_super(n: int):
    sq, ls = Square(n), LabelledSquare(n, "big")
    return sq.area(), sq.twice_area(), ls.twice_area(), ls.label, Standalone(n).n


def test_super_calls_the_next_classes_method_on_every_tier_and_loaded():
    scripted = check(through_super, (3,), (-2,), (3,))
    check(through_super, (5,), scripted=pickle.loads(pickle.dumps(scripted)))


def super_outside_a_method(n: int) -> int:
    return super().__hash__()


def test_super_outside_a_script_class_method_is_a_located_error():
    with pytest.raises(tsjit.CompilationError, match="super\\(\\) is supported") as err:
        tsjit.script(super_outside_a_method)
    assert "<--- HERE" in str(err.value)


class Cube(Square):
    def __init__(self, side: int):
        Square.__init__(self, side)

    def area(self) -> int:
        return Shape.area(self) * 6


def through_the_class(n: int):
    c, s = Cube(n), Shape(n)
    return c.area(), Square.area(c), Shape.twice_area(c), Shape.area(s), c.label


def test_a_method_called_through_its_class_is_that_classs_method():
    scripted = check(through_the_class, (2,), (-3,), (2,))
    check(through_the_class, (4,), scripted=pickle.loads(pickle.dumps(scripted)))


def through_an_unrelated_class(n: int) -> int:
    return Rectangle.area(Shape(n))


def test_a_method_called_through_a_class_the_instance_is_not_of_is_refused():
    with pytest.raises(tsjit.CompilationError, match="takes an instance of Rectangle"):
        tsjit.script(through_an_unrelated_class)
