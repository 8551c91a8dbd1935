"""Dataclasses in script code: the methods @dataclass generates (__init__ with its
defaults, InitVars and __post_init__; __eq__ and the order comparisons) are written out
again from the fields and compiled, as TorchScript does; the class's own methods win."""
from __future__ import annotations

import dataclasses
import pickle
from dataclasses import InitVar, dataclass, field
from typing import ClassVar

import numpy as np
import pytest
from _differential import check
from test_errors import compile_error, line_of, underlined

import tsjit


@dataclass(order=True)
class Sample:
    weight: float
    label: str = "none"
    norm: np.ndarray | None = None
    scale: InitVar[int] = 2
    seen: int = field(default=0, init=False)
    kind: ClassVar[str] = "sample"

    def __post_init__(self, scale: int):
        self.norm = np.array(self.weight) * scale
        self.seen += 1


def build_samples(w: float, s: int):
    a = Sample(w)
    b = Sample(w, "b", None, s)
    c = Sample(label="c", weight=-w)
    return (a.weight, a.label, a.norm, a.seen, b.norm, c.label, c.norm,
            a == b, a < b, a <= c, a > c, b >= a)


def class_variable_of_sample() -> str:
    return Sample.kind + Sample(1.0).kind


def test_generated_init_takes_defaults_init_vars_and_post_init():
    check(build_samples, (1.5, 3), (-0.0, 0), (2.0, -1), (2.0, 2))
    check(class_variable_of_sample, ())         # a ClassVar is no field
    scripted = tsjit.script(build_samples)
    restored = pickle.loads(pickle.dumps(scripted))
    assert restored(2.5, 4)[:4] == (2.5, "none", np.array(5.0), 1)


@dataclass
class Pair:
    first: int
    second: list[int]
    note: str = field(default="", compare=False)

    def total(self) -> int:
        return self.first + sum(self.second)


@dataclass
class FirstOnly:
    first: int
    second: int

    def __eq__(self, other: FirstOnly) -> bool:     # written by the class: kept
        return self.first == other.first


def compare_pairs(a: int, xs: list[int], ys: list[int]):
    p, q = Pair(a, xs, "p"), Pair(a, ys)       # (notes not compared)
    p.second.append(a)
    return p == q, p != q, p.total(), FirstOnly(a, 1) == FirstOnly(a, 2), \
        FirstOnly(a, 1) != FirstOnly(a + 1, 1)


def test_generated_equality_compares_fields_and_a_written_one_is_kept():
    check(compare_pairs, (1, [2], [2, 1]), (1, [2], [2]), (0, [], [0]))


def pair_from(p: Pair, extra: int) -> Pair:
    return Pair(p.first + extra, p.second + [extra])


def test_dataclass_instances_cross_the_call_boundary():
    check(pair_from, (Pair(1, [2, 3]), 4), (Pair(-1, []), 0))


@dataclass(frozen=True)
class Frozen:
    x: int
    y: float = 0.5

    def moved(self, dx: int) -> Frozen:
        return Frozen(self.x + dx, self.y)


def use_frozen(x: int):
    f = Frozen(x).moved(2)
    return f.x, f.y, f == Frozen(x + 2)


def assign_frozen(x: int) -> int:
    f = Frozen(x)
    f.x = 3             # FrozenInstanceError, as eager
    return f.x


def test_a_frozen_dataclass_is_built_and_stays_frozen():
    check(use_frozen, (1,), (-5,))
    check(assign_frozen, (1,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        tsjit.script(assign_frozen)(1)


@dataclass(frozen=True)
class Derived:
    a: int
    twice: int = field(default=0, init=False)

    def __post_init__(self):
        object.__setattr__(self, "twice", self.a * 2)


def derived(a: int):
    d = Derived(a)
    return d.a, d.twice


def test_object_setattr_sets_past_a_frozen_class():
    check(derived, (3,), (-1,))
    restored = pickle.loads(pickle.dumps(tsjit.script(derived)))
    assert restored(4) == (4, 8)


@dataclass
class Listed:
    xs: list[int] = field(default_factory=list)


def make_listed() -> int:
    return len(Listed().xs)


def test_a_default_factory_is_refused_where_the_class_is_used():
    message = str(compile_error(make_listed))
    assert "field 'xs' of dataclass Listed has a default_factory" in message
    assert underlined(message) == ["Listed"]
    assert f"line {line_of(make_listed, 'Listed()')}" in message


def test_a_loaded_frozen_dataclass_stays_frozen():
    restored = pickle.loads(pickle.dumps(tsjit.script(assign_frozen)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        restored(1)
    assert pickle.loads(pickle.dumps(tsjit.script(use_frozen)))(1) == use_frozen(1)


@dataclass(kw_only=True)
class Schedule:
    rate: float
    steps: int = 10


@dataclass
class Window:
    start: int = 0
    _: dataclasses.KW_ONLY
    width: int
    label: str = "w"


def use_keyword_only_fields(n: int):
    s, w = Schedule(rate=0.5, steps=n), Window(n, width=3)
    return s.rate * s.steps, Schedule(rate=2.0).steps, w.start + w.width, w.label, \
        Window(width=1, label="q").label, s == Schedule(steps=n, rate=0.5)


def test_keyword_only_fields_are_keyword_only_parameters_of_init():
    # was refused: the KW_ONLY marker as an unknown annotation, and __init__'s defaults
    # before parameters without one
    scripted = check(use_keyword_only_fields, (3,), (-1,), (3,))
    check(use_keyword_only_fields, (4,), scripted=pickle.loads(pickle.dumps(scripted)))
