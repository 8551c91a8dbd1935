"""Types in script code: annotations in every accepted spelling (typing, builtin generics,
`# type:` comments), Optional/Union refinement, Any, enums, defaults and keyword
arguments, resolution of Python values, and the tsjit helpers (ignore, unused,
is_scripting, annotate, isinstance, Final)."""
# The typing spellings (List, Optional, ...) are what this file tests.
# ruff: noqa: UP006, UP007, UP035, UP037, UP045
from __future__ import annotations

import enum
import math
from typing import Annotated, Any, Dict, List, NewType, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt
import pytest
from _differential import check

import tsjit

# ---- spellings of the same types


def typing_spelling(xs: List[int], d: Dict[str, float], t: Tuple[int, str],
                    o: Optional[int], u: Union[int, str]) -> Tuple[int, float, str, int, str]:
    return sum(xs), sum(d.values()), t[1], o if o is not None else -1, str(u)


def builtin_spelling(xs: list[int], d: dict[str, float], t: tuple[int, str],
                     o: int | None, u: int | str) -> tuple[int, float, str, int, str]:
    return sum(xs), sum(d.values()), t[1], o if o is not None else -1, str(u)


def type_comment_spelling(xs, d, t, o, u):
    # type: (List[int], Dict[str, float], Tuple[int, str], Optional[int], Union[int, str]) -> Tuple[int, float, str, int, str]  # noqa: E501
    return sum(xs), sum(d.values()), t[1], o if o is not None else -1, str(u)


SPELLING_CALLS = [([1, 2], {"a": 0.5}, (1, "x"), None, 3), ([], {}, (0, ""), 4, "s")]


@pytest.mark.parametrize("fn", [typing_spelling, builtin_spelling, type_comment_spelling])
def test_every_annotation_spelling_gives_the_same_schema(fn):
    scripted = check(fn, *SPELLING_CALLS)
    signature = scripted.schema.split("(", 1)[1]
    assert signature == tsjit.script(typing_spelling).schema.split("(", 1)[1]
    assert signature.startswith("List[int] xs, Dict[str, float] d, Tuple[int, str] t")


def type_comments_on_assignments(n: int) -> Tuple[List[int], Dict[str, float]]:
    xs = []  # type: List[int]
    d = {}  # type: Dict[str, float]
    for i in range(n):
        xs.append(i)
        d[str(i)] = i * 0.5
    return xs, d


def test_type_comments_on_assignments():
    check(type_comments_on_assignments, (0,), (3,))


def unannotated(x, y):
    return x * y + 1


def test_unannotated_parameters_are_arrays():
    scripted = check(unannotated, (np.arange(3.0), np.ones(3)))
    assert scripted.schema == "unannotated(Tensor x, Tensor y) -> Tensor"
    with pytest.raises(TypeError):
        scripted(1, 2)


def string_annotations(x: "int", xs: "List[float]") -> "float":
    return x + sum(xs)


def test_string_forward_reference_annotations():
    check(string_annotations, (1, [0.5, 0.25]))


def numpy_annotations(x: np.ndarray, y: tsjit.Tensor, s: np.float32) -> np.ndarray:
    return x + y * s


def test_ndarray_tensor_and_numpy_scalar_annotations():
    check(numpy_annotations, (np.ones(2), np.arange(2.0), np.float32(2)))


# ---- Optional / Union refinement


def refine_is_none(x: Optional[int]) -> int:
    if x is None:
        return 0
    return x + 1


def refine_is_not_none_else(x: Optional[int]) -> int:
    if x is not None:
        y = x * 2
    else:
        y = -1
    return y


def refine_and_chain(a: Optional[int], b: Optional[int]) -> int:
    if a is not None and b is not None and a > b:
        return a - b
    return 0


def refine_or_chain(a: Optional[int], b: Optional[int]) -> int:
    if a is None or b is None:
        return -1
    return a * b


def refine_not(a: Optional[int]) -> int:
    if not a is None:  # noqa: E714  (the `not` form is what is tested)
        return a
    return 7


def refine_assert(a: Optional[List[int]]) -> int:
    assert a is not None
    return len(a)


def refine_early_raise(a: Optional[str]) -> str:
    if a is None:
        raise ValueError("missing")
    return a.upper()


def refine_truthiness(a: Optional[str]) -> str:
    if a:
        return a + "!"
    return "empty"


def refine_reassign(a: Optional[int]) -> int:
    if a is None:
        a = 5
    return a + 1


def refine_in_ternary_and_bool_op(a: Optional[int]) -> Tuple[int, bool]:
    return (a if a is not None else 0), (a is not None and a > 3)


def refine_while(xs: List[int]) -> int:
    cur: Optional[int] = xs[0] if xs else None
    n = 0
    while cur is not None and cur > 0:
        n += cur
        cur = cur - 2 if cur > 2 else None
    return n


@pytest.mark.parametrize("fn,calls", [
    (refine_is_none, [(None,), (3,)]),
    (refine_is_not_none_else, [(None,), (3,)]),
    (refine_and_chain, [(None, 1), (5, None), (5, 2), (1, 5)]),
    (refine_or_chain, [(None, 1), (2, None), (3, 4)]),
    (refine_not, [(None,), (0,)]),
    (refine_assert, [(None,), ([1, 2],)]),
    (refine_early_raise, [(None,), ("ab",)]),
    (refine_truthiness, [(None,), ("",), ("x",)]),
    (refine_reassign, [(None,), (1,)]),
    (refine_in_ternary_and_bool_op, [(None,), (2,), (9,)]),
    (refine_while, [([],), ([7],), ([0],)]),
])
def test_optional_refinement(fn, calls):
    check(fn, *calls)


def union_isinstance(u: Union[int, str, List[float]]) -> str:
    if isinstance(u, int):
        return str(u + 1)
    elif isinstance(u, str):
        return u * 2
    else:
        return str(len(u))


def union_isinstance_tuple(u: Union[int, float, str]) -> str:
    if isinstance(u, (int, float)):
        return str(u)
    return u + "!"


def union_early_return(u: Union[int, np.ndarray]) -> int:
    if not isinstance(u, int):
        return int(u.sum())
    return u


def union_with_none(u: Optional[Union[int, str]]) -> str:
    if u is None:
        return "none"
    if isinstance(u, str):
        return u
    return str(u * 10)


def test_union_refinement_with_isinstance():
    check(union_isinstance, (3,), ("ab",), ([1.0, 2.0],))
    check(union_isinstance_tuple, (1,), (2.5,), ("abc",))
    check(union_early_return, (4,), (np.arange(4),))
    check(union_with_none, (None,), ("s",), (3,))


def static_isinstance(x: int, xs: List[int]) -> Tuple[bool, bool, bool, bool]:
    return isinstance(x, int), isinstance(x, float), isinstance(xs, list), \
        isinstance(x, (str, int))


def test_isinstance_decided_statically():
    check(static_isinstance, (1, [1]))


def any_values(a: Any, b: Any) -> Tuple[Any, bool, str]:
    if isinstance(a, int):
        return a + 1, a == b, "int"
    return a, a is b, "other"


def test_any_parameters_take_every_value():
    check(any_values, (1, 1), ("x", "y"), (None, None), ([1], 2))


def any_list(xs: List[Any]) -> int:
    return len(xs)


def test_list_of_any():
    check(any_list, ([1, "a", None],), ([],))


# ---- enums


class Color(enum.Enum):
    RED = 1
    GREEN = 2
    BLUE = 3


class Unit(enum.Enum):
    METER = "m"
    FOOT = "ft"


def enum_use(c: Color, u: Unit) -> Tuple[bool, int, str, str, Color, List[int]]:
    values = [member.value for member in Color]
    same = c == Color.RED or c is Color.BLUE
    return same, c.value, c.name, u.value, Color.GREEN if c != Color.GREEN else c, values


def enum_identity(c: Color) -> Color:
    return c


def test_enums_members_values_names_iteration():
    check(enum_use, *[(c, u) for c in Color for u in Unit])
    check(enum_identity, (Color.BLUE,))


def enum_in_containers(cs: List[Color]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for c in cs:
        counts[c.name] = counts.get(c.name, 0) + c.value
    return counts


def test_enums_in_containers():
    check(enum_in_containers, ([Color.RED, Color.BLUE, Color.RED],), ([],))


# ---- defaults and keyword arguments


def with_defaults(a: int, b: float = 2.5, c: str = "c", d: Optional[int] = None,
                  e: Tuple[int, int] = (1, 2)) -> Tuple[int, float, str, int, int]:
    return a, b, c, d if d is not None else -1, e[0] + e[1]


def test_defaults_and_keyword_arguments_of_the_scripted_function():
    f = tsjit.script(with_defaults)
    for args, kwargs in [((1,), {}), ((1, 0.5), {}), ((1,), {"c": "x"}),
                         ((), {"a": 3, "d": 4}), ((1, 1.0, "z", 5, (3, 4)), {})]:
        assert f(*args, **kwargs) == with_defaults(*args, **kwargs)
    with pytest.raises(TypeError):
        f()
    with pytest.raises(TypeError):
        f(1, 2.0, "x", 4, (1, 1), 6)
    with pytest.raises(TypeError):
        f(1, zz=2)


def calls_defaults(a: int) -> Tuple[Tuple[int, float, str, int, int], ...]:
    return with_defaults(a), with_defaults(a, c="k"), with_defaults(d=a, a=0), \
        with_defaults(a, 1.0, "q", None, (a, a))


def test_defaults_and_keywords_in_script_to_script_calls():
    check(calls_defaults, (4,), (-1,))


# ---- resolution: helpers compiled recursively, constants, closures


def leaf(x: int) -> int:
    return x * 3


def middle_helper(x: int) -> int:
    return leaf(x) + leaf(x + 1)


def top(xs: List[int]) -> List[int]:
    return [middle_helper(x) for x in xs]


def test_helpers_are_compiled_recursively():
    check(top, ([1, 2],), ([],))


scripted_leaf = tsjit.script(leaf)


def calls_scripted(x: int) -> int:
    return scripted_leaf(x) + 1


def test_calling_an_already_scripted_function():
    check(calls_scripted, (5,))


THRESHOLD = 10
FACTORS = (2, 3)
NAME = "tsjit"
FLAG = True


def uses_constants(x: int) -> Tuple[int, int, str, bool, float]:
    return x if x < THRESHOLD else THRESHOLD, x * FACTORS[1], NAME, FLAG, math.e


def test_module_constants_are_captured_at_compile_time():
    global THRESHOLD
    scripted = check(uses_constants, (3,), (30,))
    old = THRESHOLD
    THRESHOLD = 100
    try:
        assert scripted(30)[0] == old               # captured when compiled
        assert uses_constants(30)[0] == 30
    finally:
        THRESHOLD = old


def make_closure(k: int):
    def scaled(x: int) -> int:
        return x * k
    return scaled


def test_closure_variables_are_captured():
    fn = make_closure(7)
    check(fn, (3,), (-2,))


def dtype_constants(x: np.ndarray):
    return x.astype(np.float32), np.zeros(2, dtype=np.int8), x.dtype == np.float64


def test_numpy_dtypes_are_compile_time_values():
    check(dtype_constants, (np.arange(3.0),), (np.arange(3),))


# ---- tsjit helpers


@tsjit.ignore
def python_only(xs: List[int]) -> int:
    return len(set(xs))            # sets are not script code: runs in Python


def uses_ignore(xs: List[int]) -> int:
    return python_only(xs) + 1


def test_ignored_functions_are_called_back_in_python():
    check(uses_ignore, ([1, 1, 2],), ([],))


@tsjit.unused
def never_compiled(x: int) -> int:
    return {x}.pop()


def uses_unused(x: int) -> int:
    if x > 100:
        return never_compiled(x)
    return x


def test_unused_functions_compile_but_raise_when_called():
    scripted = tsjit.script(uses_unused)
    assert scripted(5) == 5
    with pytest.raises(RuntimeError):
        scripted(500)


def scripting_branch(x: int) -> int:
    if tsjit.is_scripting():
        return x + 1
    else:
        return {x: x}[x]       # not script code: only compiled when not scripting


def test_is_scripting_selects_the_branch_at_compile_time():
    assert tsjit.script(scripting_branch)(1) == 2
    assert scripting_branch(1) == 1


DEBUG = False


class Flags(tsjit.Module):
    verbose: tsjit.Final[bool]

    def __init__(self):
        super().__init__()
        self.verbose = False

    def forward(self, x: int) -> int:
        if not self.verbose and x >= 0:
            return x
        return {x: x}[x] if self.verbose else -x


def static_conditions(x: int) -> Tuple[int, int]:
    if not tsjit.is_scripting():
        return len({x}), 0          # not script code: never compiled
    if DEBUG and x > 0:
        print({x})
    a = x if tsjit.is_scripting() or {x} else 0
    b = len({x}) if DEBUG else x * 2
    return a, b


def test_conditions_known_when_compiled_skip_the_other_branch():
    scripted = tsjit.script(static_conditions)
    assert scripted(3) == (3, 6)
    assert static_conditions(3) == (1, 0)
    module = tsjit.script(Flags())
    assert module(3) == 3 and module(-2) == 2


def annotate_values(n: int) -> Tuple[List[int], Dict[int, str], Optional[int]]:
    xs = tsjit.annotate(List[int], [])
    d = tsjit.annotate(Dict[int, str], {})
    o = tsjit.annotate(Optional[int], None)
    for i in range(n):
        xs.append(i)
        d[i] = str(i)
        o = i
    return xs, d, o


def test_annotate_types_empty_containers_and_none():
    check(annotate_values, (0,), (3,))


def tsjit_isinstance(x: Any, y: Union[List[int], Dict[str, int]]) -> Tuple[bool, bool, int]:
    n = 0
    if tsjit.isinstance(y, List[int]):
        n = len(y) + 100
    elif tsjit.isinstance(y, Dict[str, int]):
        n = len(y) + 200
    return tsjit.isinstance(x, List[int]), tsjit.isinstance(x, Tuple[int, str]), n


def test_tsjit_isinstance_understands_container_types():
    check(tsjit_isinstance, ([1], [1, 2]), ((1, "a"), {"a": 1}), (3, {}))


def test_tsjit_isinstance_in_eager_python():
    assert tsjit.isinstance([1, 2], List[int])
    assert not tsjit.isinstance([1, "a"], List[int])
    assert tsjit.isinstance({"a": [1.0]}, Dict[str, List[float]])
    assert tsjit.isinstance(None, Optional[int])


def test_wrong_argument_types_raise_type_error():
    f = tsjit.script(typing_spelling)
    with pytest.raises(TypeError, match="xs"):
        f([1, "a"], {}, (1, "x"), None, 3)
    with pytest.raises(TypeError, match="u"):
        f([1], {}, (1, "x"), None, 2.5)


Meters = NewType("Meters", float)


def numpy_typing_spellings(x: npt.NDArray[np.float64], y: np.ndarray[Any, np.dtype[np.int64]],
                           scale: Annotated[float, "unit"], offset: Meters) -> npt.NDArray:
    return x * scale + y + offset


def test_numpy_typing_annotated_and_newtype_annotations():
    # NumPy's generic array spellings are Tensor, Annotated[T, ...] is T and a NewType its
    # base type; script() refused them as unknown annotations
    scripted = check(numpy_typing_spellings, (np.arange(3.0), np.arange(3), 2.0, Meters(0.5)),
                     (np.ones(2, np.float32), np.ones(2, np.int8), 1.5, 1.0))
    assert scripted.schema == ("numpy_typing_spellings(Tensor x, Tensor y, float scale, "
                               "float offset) -> Tensor")


def badly_quoted(x: "List[int") -> int:  # noqa: F722 (what is tested)
    return 0


def test_a_string_annotation_that_does_not_parse_is_a_compilation_error():
    with pytest.raises(tsjit.CompilationError, match="cannot parse the annotation"):
        tsjit.script(badly_quoted)


def pair_of_kinds(x: int) -> tuple:
    if x > 0:
        return (x, "positive")
    return (-x, "not positive")


def elements_as_tuple(xs: list[int]) -> tuple:
    return tuple(xs)


def bare_tuple_over_a_list(x: int) -> tuple:
    return [x]


def test_a_bare_tuple_return_annotation_infers_the_elements_as_torchscript():
    scripted = check(pair_of_kinds, (3,), (-2,), (0,))
    assert scripted.schema == "pair_of_kinds(int x) -> Tuple[int, str]"
    check(elements_as_tuple, ([1, 2],), ([],))
    with pytest.raises(tsjit.CompilationError, match="annotation is 'tuple'") as err:
        tsjit.script(bare_tuple_over_a_list)
    assert "-> tuple" in str(err.value).split("<--- HERE")[0].splitlines()[-2]
