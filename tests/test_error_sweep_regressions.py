"""Regressions from a sweep of invalid and borderline programs: each was accepted and gave
a different answer, escaped as an internal exception, or was rejected with a message that
named the wrong thing or pointed outside the user's code."""
from __future__ import annotations

import functools
import math
import typing

import pytest

import tsjit


def underlined(message: str) -> str:
    """The source text above the first `<--- HERE` marker's tildes."""
    lines = message.split("\n")
    for above, line in zip(lines, lines[1:]):
        if line.endswith("<--- HERE"):
            start = len(line) - len(line.lstrip())
            return above[start:start + line.count("~")]
    raise AssertionError(f"no marker in {message!r}")


def compile_error(obj) -> str:
    with pytest.raises(tsjit.CompilationError) as info:
        tsjit.script(obj)
    return str(info.value)


# ---- a functools.wraps wrapper: inspect finds the inner function's source


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2 * fn(x)
    return wrapper


@doubled
def plus_one_doubled(x: int) -> int:
    return x + 1


def test_wrapped_function_is_rejected_not_compiled_without_its_wrapper():
    assert plus_one_doubled(3) == 8
    message = compile_error(plus_one_doubled)
    assert "wrapper" in message and __file__ in message
    assert underlined(message) == "doubled"


def test_wrapped_function_marked_ignore_still_runs_in_python():
    ignored = tsjit.ignore(plus_one_doubled)

    def caller(x: int) -> int:
        return ignored(x)

    assert tsjit.script(caller)(3) == 8


# ---- assigning a module constant


class AssignsConstant(tsjit.Module):
    __constants__ = ["k"]

    def __init__(self):
        super().__init__()
        self.k = 3

    def forward(self, x: int) -> int:
        self.k = x
        return x


def test_assigning_a_module_constant_says_it_is_a_constant():
    message = compile_error(AssignsConstant())
    assert "constant" in message and "nonexistent" not in message
    assert underlined(message) == "self.k"


# ---- container annotations without element types


def bare_list(x: typing.List) -> int:  # noqa: UP006
    return len(x)


def bare_tuple(x: typing.Tuple) -> int:  # noqa: UP006
    return len(x)


def bare_dict(x: typing.Dict) -> int:  # noqa: UP006
    return len(x)


@pytest.mark.parametrize("fn, name", [(bare_list, "List"), (bare_tuple, "Tuple"),
                                      (bare_dict, "Dict")])
def test_bare_container_annotation_is_rejected(fn, name):
    # was accepted as List[Tensor] / Tuple[()] / Dict[str, Tensor]: the call the Python
    # function accepts, fn([1]), then raised TypeError
    message = compile_error(fn)
    assert f"'{name}' needs element types" in message
    assert underlined(message) == f"typing.{name}"


# ---- a type comment with the wrong number of parameter types


def comment_too_short(x, y):
    # type: (int) -> int
    return x + y


def test_type_comment_with_too_few_types_is_rejected():
    # was accepted with y typed Tensor, so comment_too_short(1, 2) raised TypeError
    message = compile_error(comment_too_short)
    assert "gives 1 parameter types" in message and "has 2 parameters" in message
    assert underlined(message) == "def comment_too_short(x, y):"


# ---- a class whose constructor cannot be compiled, called from script code


class TakesVarargs:
    def __init__(self, *items: int):
        self.n = len(items)


def builds_takes_varargs(x: int) -> int:
    return TakesVarargs(x).n


def test_uncompilable_class_error_shows_the_call_that_needed_it():
    # the message marked only the class's __init__ (for a library class such as
    # collections.Counter, a file the user never wrote), not the user's call
    message = compile_error(builds_takes_varargs)
    assert "*args" in message
    assert "'TakesVarargs' is being compiled since it was called from" in message
    assert "TakesVarargs(x)" in message.split("called from")[1]


# ---- isinstance with a value where a type belongs


def isinstance_of_a_number(x: int) -> bool:
    return isinstance(x, (int, 3))


def test_isinstance_with_a_value_says_a_type_is_needed():
    # the message showed the IR value (`unknown type annotation: %_:int`)
    message = compile_error(isinstance_of_a_number)
    assert "must be a type or a tuple of types, not a value of type int" in message
    assert "%" not in message.split("\n")[0]
    assert underlined(message) == "isinstance(x, (int, 3))"


# ---- assigning an attribute of a Python module


def assigns_math_pi(x: float) -> float:
    math.pi = x
    return x


def test_assigning_a_module_attribute_says_what_cannot_be_assigned():
    # was "module 'math' cannot be used as a value", marking only `math`
    message = compile_error(assigns_math_pi)
    assert "cannot assign to attribute 'pi' of module 'math'" in message
    assert underlined(message) == "math.pi"


# ---- a default value the argument check rejects on every call that omits it


def unannotated_int_default(x, n=2):
    return x * n


def int_with_none_default(x: int = None) -> int:
    return 1


@pytest.mark.parametrize("fn, default, hint", [
    (unannotated_int_default, "2", "assumed to be a Tensor"),
    (int_with_none_default, "None", "Optional"),
])
def test_default_of_the_wrong_type_is_rejected_at_the_default(fn, default, hint):
    # was accepted; every call that omitted the argument then raised TypeError
    message = compile_error(fn)
    assert "default value" in message and hint in message
    assert underlined(message) == default


def test_int_default_for_a_float_parameter_is_accepted():
    def scale(x: float = 1) -> float:
        return x * 2.0

    assert tsjit.script(scale)() == scale() == 2.0


class NoForward(tsjit.Module):
    def __init__(self) -> None:
        super().__init__()
        self.k = 2


def test_a_module_without_forward_is_a_compilation_error():
    # was an internal AttributeError from the scripting of its methods
    with pytest.raises(tsjit.CompilationError, match="'NoForward' has no forward method"):
        tsjit.script(NoForward())
