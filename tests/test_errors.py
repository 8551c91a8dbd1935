"""Error reporting: CompilationError (a RuntimeError) names the reason, the file and
line, and shows the source with the offending range underlined `~~~~ <--- HERE` — both
places for a branch type mismatch or a variable defined on one branch only (the two
examples of the TorchScript language reference).  Wrong argument types raise TypeError;
runtime errors keep their eager class and point at the script source; TSJIT_DISABLE=1
turns scripting off."""
from __future__ import annotations

import inspect
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _subprocess import child_environment

import tsjit

HERE = re.compile(r"^( *)(~+)( <--- HERE)?$")


def underlined(message: str) -> list[str]:
    """The source text under each `~~~~ <--- HERE` marker, in order (multi-line ranges
    joined with newlines)."""
    lines = message.split("\n")
    found, current = [], []
    for above, line in zip(lines, lines[1:]):
        m = HERE.match(line)
        if m is None:
            continue
        start = len(m.group(1))
        current.append(above[start:start + len(m.group(2))])
        if m.group(3):
            found.append("\n".join(current))
            current = []
    return found


def line_of(fn, text: str) -> int:
    """The line number, in this file, of the first line of `fn` containing `text`."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def compile_error(fn) -> tsjit.CompilationError:
    with pytest.raises(tsjit.CompilationError) as info:
        tsjit.script(fn)
    return info.value


# ---- the two examples of the language reference


def an_error(x):
    if x:
        r = np.zeros(1)
    else:
        r = 4
    return r


def foo(x):
    if x < 0:
        y = 4
    print(y)


def test_type_mismatch_between_branches_shows_both_assignments_and_the_use():
    error = compile_error(an_error)
    message = str(error)
    assert isinstance(error, RuntimeError)
    assert re.search(r"type mismatch.*'r'.*Tensor.*true branch.*int.*false branch", message,
                     re.IGNORECASE)
    marked = underlined(message)
    assert "r" in marked                                   # the use in `return r`
    assert f'File "{__file__}", line {line_of(an_error, "r = np.zeros(1)")}' in message
    assert f'File "{__file__}", line {line_of(an_error, "r = 4")}' in message
    assert f'File "{__file__}", line {line_of(an_error, "return r")}' in message


def test_variable_defined_on_one_branch_only_shows_the_definition_and_the_use():
    message = str(compile_error(foo))
    assert re.search(r"'y' is not defined in the false branch", message)
    assert f'File "{__file__}", line {line_of(foo, "y = 4")}' in message
    assert f'File "{__file__}", line {line_of(foo, "print(y)")}' in message
    assert "y" in underlined(message)
    assert "    print(y)" in message and "        y = 4" in message


# ---- anatomy of a message


def undefined_name(x: int) -> int:
    return x + not_defined_anywhere  # noqa: F821


def test_message_has_reason_file_line_excerpt_and_marker():
    error = compile_error(undefined_name)
    message = str(error)
    assert message.startswith("undefined value not_defined_anywhere")
    assert error.reason.startswith("undefined value")
    assert f'File "{__file__}", line {line_of(undefined_name, "not_defined_anywhere")}' \
        in message
    assert underlined(message) == ["not_defined_anywhere"]
    assert "def undefined_name(x: int) -> int:" in message     # context lines


def multi_line_expression(x: int) -> int:
    return (x +
            "text")


def test_multi_line_ranges_are_underlined_on_every_line():
    marked = underlined(str(compile_error(multi_line_expression)))
    assert marked == ['x +\n"text"']


def broken_callee(x: int) -> int:
    return x + "a"


def calls_broken_callee(y: int) -> int:
    return broken_callee(y) * 2


def calls_through_a_chain(z: int) -> int:
    return calls_broken_callee(z)


def test_error_in_a_callee_shows_the_calls_that_compiled_it():
    message = str(compile_error(calls_through_a_chain))
    assert message.startswith("unsupported operand types for +")
    assert underlined(message) == ['x + "a"', "broken_callee", "calls_broken_callee"]
    assert "'broken_callee' is being compiled since it was called from " \
           "'calls_broken_callee'" in message


# ---- unsupported syntax


def uses_lambda(x: int) -> int:
    f = lambda a: a + 1  # noqa: E731
    return f(x)


def uses_yield(x: int):
    yield x


def uses_try(x: int) -> int:
    try:
        return x
    except ValueError:
        return 0


COUNTER = 0


def uses_global(x: int) -> int:
    global COUNTER
    return x


def make_nonlocal():
    z = 1

    def uses_nonlocal(x: int) -> int:
        nonlocal z
        return x
    return uses_nonlocal


def uses_for_else(x: int) -> int:
    for _ in range(x):
        pass
    else:
        return 1
    return 0


def uses_while_else(x: int) -> int:
    while x > 0:
        x -= 1
    else:
        x = 5
    return x


def uses_nested_def(x: int) -> int:
    def h(y: int) -> int:
        return y
    return h(x)


def uses_set_literal(x: int) -> int:
    return len({x, 1})


def uses_set_comprehension(x: int) -> int:
    return len({i for i in range(x)})


def uses_generator_expression(x: int) -> int:
    return len(i for i in range(x))    # (a TypeError in Python: no len of a generator)


def uses_kwargs_parameter(x: int, **kwargs) -> int:
    return x


def uses_varargs_parameter(*args) -> int:
    return 0


def uses_starred_call(xs: list[int]) -> int:
    return max(*xs)


def uses_double_starred_call(d: dict[str, int]) -> int:
    return max(**d)


def uses_import(x: int) -> int:
    import math
    return int(math.sqrt(x))


def uses_class_definition(x: int) -> int:
    class Local:
        pass
    return x


def uses_bare_raise(x: int) -> int:
    raise


def uses_dict_unpacking(xs: list[int]) -> dict[str, int]:
    return {**xs}           # a TypeError in Python: ** needs a mapping


@pytest.mark.parametrize("fn,reason,marked", [
    (uses_lambda, r"lambda", "lambda a: a + 1"),
    (uses_yield, r"yield", "yield x"),
    (uses_try, r"try", "try:"),
    (uses_global, r"global", "global COUNTER"),
    (make_nonlocal(), r"nonlocal", "nonlocal z"),
    (uses_for_else, r"else", "for _ in range(x):"),
    (uses_while_else, r"else", "while x > 0:"),
    (uses_nested_def, r"nested function", "def h(y: int) -> int:"),
    (uses_set_literal, r"set", "{x, 1}"),
    (uses_set_comprehension, r"set comprehension", "{i for i in range(x)}"),
    (uses_generator_expression, r"generator", "i for i in range(x)"),
    (uses_kwargs_parameter, r"\*\*kwargs", None),
    (uses_varargs_parameter, r"\*args", None),
    (uses_starred_call, r"starred List\[int\].*only a tuple", "*xs"),
    (uses_double_starred_call, r"\*\*kwargs", "max(**d)"),
    (uses_import, r"import", "import math"),
    (uses_class_definition, r"class", "class Local:"),
    (uses_bare_raise, r"raise", "raise"),
    (uses_dict_unpacking, r"'\*\*' in a dict literal needs a dict", "{**xs}"),
])
def test_unsupported_syntax_is_rejected_at_its_location(fn, reason, marked):
    error = compile_error(fn)
    assert re.search(reason, error.reason, re.IGNORECASE), error.reason
    assert "<--- HERE" in str(error) and f'File "{__file__}"' in str(error)
    if marked is not None:
        assert marked in underlined(str(error))[0]


# ---- type and resolution errors


def helper(a: int, b: int) -> int:
    return a + b


def too_few(x: int) -> int:
    return helper(x)


def too_many(x: int) -> int:
    return helper(x, 1, 2)


def unknown_keyword(x: int) -> int:
    return helper(x, c=1)


def duplicate_argument(x: int) -> int:
    return helper(x, a=1)


def wrong_argument_type(x: int) -> int:
    return helper(x, "s")


def recursive(x: int) -> int:
    if x <= 0:
        return 0
    return recursive(x - 1)


def ping(x: int) -> int:
    return pong(x - 1) if x > 0 else 0


def pong(x: int) -> int:
    return ping(x)


def returns_wrong_type(x: int) -> str:
    return x


def missing_return(x: int) -> int:
    if x > 0:
        return x


def heterogeneous_list(x: int):
    return [x, "a"]


def bad_dict_key(x: int):
    return {[x]: 1}


def bad_dict_key_annotation(d: dict[list[int], int]) -> int:
    return len(d)


def ternary_mismatch(x: int) -> int:
    return x if x > 0 else "neg"


def loop_changes_type(n: int):
    v = 0
    for i in range(n):
        v = "s" * i
    return v


def loop_only_variable(n: int) -> int:
    for i in range(n):
        last = i
    return last


def deleted_variable(x: int) -> int:
    y = x
    del y
    return y  # noqa: F821  (deleted on purpose)


def bad_operands(x: int, s: str):
    return x + s


def unknown_attribute(x: int):
    return x.no_such_attribute


def unknown_module_attribute(x: int):
    return np.no_such_function(x)


def call_a_number(x: int) -> int:
    return x(1)


def optional_not_refined(x: int | None) -> int:
    return x + 1


def unknown_annotation(x: NoSuchType) -> int:  # noqa: F821
    return 0


def list_of_mixed_assignment(xs: list[int]) -> None:
    xs[0] = "a"


def numpy_scalar_returned_as_float(x: np.ndarray) -> float:
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
    return total


def print_with_separator(x: int) -> None:
    print(x, x, sep=",")


def return_mismatch_between_paths(x: int):
    if x > 0:
        return 1
    return "s"


class Holder:
    def __init__(self, v: int):
        self.v = v

    def set_other(self) -> None:
        self.w = 3

    def wrong_attribute_type(self) -> None:
        self.v = "s"


def sets_attribute_outside_init(x: int) -> int:
    h = Holder(x)
    h.set_other()
    return h.v


def sets_wrong_attribute_type(x: int) -> None:
    Holder(x).wrong_attribute_type()


@pytest.mark.parametrize("fn,reason,marked", [
    (too_few, r"missing required argument 'b'", "helper(x)"),
    (too_many, r"takes 2 positional arguments but 3", "helper(x, 1, 2)"),
    (unknown_keyword, r"unexpected keyword argument 'c'", "helper(x, c=1)"),
    (duplicate_argument, r"multiple values for argument 'a'", "helper(x, a=1)"),
    (wrong_argument_type, r"helper.*int.*argument 'b'.*str", 'helper(x, "s")'),
    (recursive, r"recursive", "recursive"),
    (ping, r"recursive", "ping"),
    (returns_wrong_type, r"return.*int.*str", "x"),
    (missing_return, r"None.*int|int.*None", None),
    (heterogeneous_list, r"single type.*int.*str", '[x, "a"]'),
    (bad_dict_key, r"dict key.*List\[int\]", "{[x]: 1}"),
    (bad_dict_key_annotation, r"dict key.*List\[int\]", "dict[list[int], int]"),
    (ternary_mismatch, r"int.*str", 'x if x > 0 else "neg"'),
    (loop_changes_type, r"'v'.*int.*str", None),
    (loop_only_variable, r"'last'.*loop", "last"),
    (deleted_variable, r"'y'.*deleted", "y"),
    (bad_operands, r"int.*str", "x + s"),
    (unknown_attribute, r"no attribute 'no_such_attribute'", "x.no_such_attribute"),
    (unknown_module_attribute, r"no attribute 'no_such_function'", "np.no_such_function"),
    (call_a_number, r"not callable", "x(1)"),
    (optional_not_refined, r"Optional\[int\]|int\?", "x + 1"),
    (unknown_annotation, r"NoSuchType", None),
    (list_of_mixed_assignment, r"List\[int\].*str|str.*List\[int\]", None),
    (return_mismatch_between_paths, r"int.*str", None),
    (print_with_separator, r"print\(\) keyword arguments \(sep=\)", 'print(x, x, sep=",")'),
    (numpy_scalar_returned_as_float, r"Tensor.*float.*convert it with float", "total"),
    (sets_attribute_outside_init, r"nonexistent attribute 'w'", "self.w"),
    (sets_wrong_attribute_type, r"attribute 'v'.*int.*str", "self.v"),
])
def test_type_errors_are_rejected_at_their_location(fn, reason, marked):
    error = compile_error(fn)
    assert re.search(reason, error.reason, re.IGNORECASE | re.DOTALL), error.reason
    assert "<--- HERE" in str(error)
    if marked is not None:
        assert any(marked in text for text in underlined(str(error))), str(error)


class UninferableAttribute(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.mixed = [1, "a"]

    def forward(self, x: int) -> int:
        return len(self.mixed) + x


def test_module_attribute_without_an_inferable_type_asks_for_an_annotation():
    error = compile_error(UninferableAttribute())
    assert re.search(r"attribute 'mixed'.*annotate", error.reason)
    assert underlined(str(error)) == ["self.mixed"]


# ---- calling with wrong argument types


def typed(a: int, b: float, xs: list[int], d: dict[str, np.ndarray], o: int | None,
          x: np.ndarray) -> int:
    return a


GOOD = (1, 2.0, [1], {"k": np.zeros(1)}, None, np.zeros(2))


@pytest.mark.parametrize("index,value,expected,found", [
    (0, "1", "int", "str"),
    (0, 1.0, "int", "float"),
    (1, "x", "float", "str"),
    (2, [1, "a"], r"List\[int\]", "list"),
    (2, (1, "a"), r"List\[int\]", "tuple"),  # a tuple is a List[int] only with ints in it
    (3, {"k": 1}, r"Dict\[str, Tensor\]", "dict"),
    (4, 1.5, r"Optional\[int\]|int\?", "float"),
    (5, [1.0], "Tensor", "list"),
])
def test_wrong_argument_type_raises_type_error_naming_it(index, value, expected, found):
    f = tsjit.script(typed)
    args = list(GOOD)
    args[index] = value
    name = list(inspect.signature(typed).parameters)[index]
    with pytest.raises(TypeError) as info:
        f(*args)
    message = str(info.value)
    assert f"'{name}'" in message
    assert re.search(expected, message) and f"'{found}'" in message, message


def with_default(a: int, b: int = 2) -> int:
    return a + b


@pytest.mark.parametrize("args,kwargs,text", [
    ((), {}, "missing a required argument: 'a'"),
    ((), {"b": 1}, "missing a required argument: 'a'"),
    ((1,), {"c": 3}, "unexpected keyword argument 'c'"),
    ((1, 2, 3), {}, "too many positional arguments"),
    ((1,), {"a": 2}, "multiple values for argument 'a'"),
])
def test_wrong_arity_at_call_time_raises_type_error(args, kwargs, text):
    with pytest.raises(TypeError) as info:
        tsjit.script(with_default)(*args, **kwargs)
    assert str(info.value).startswith("with_default()") and text in str(info.value)


def test_python_numeric_tower_is_accepted():
    f = tsjit.script(typed)
    args = list(GOOD)
    args[1] = 2          # an int where a float is expected
    assert f(*args) == 1
    args[0] = True       # a bool is an int
    assert f(*args) is True


# ---- runtime errors


def index_error(xs: list[int], i: int) -> int:
    value = xs[i]
    return value


def key_error(d: dict[str, int]) -> int:
    return d["missing"]


def divides(a: int) -> int:
    return 10 // a


def calls_divides(a: int) -> int:
    return divides(a) + 1


def array_shape_error(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x + y


def located(exc: BaseException) -> str:
    return str(exc) + "\n".join(getattr(exc, "__notes__", []))


@pytest.mark.parametrize("fn,args,cls,text", [
    (index_error, ([1], 3), IndexError, "xs[i]"),
    (key_error, ({},), KeyError, 'd["missing"]'),
    (divides, (0,), ZeroDivisionError, "10 // a"),
    (calls_divides, (0,), ZeroDivisionError, "10 // a"),
    (array_shape_error, (np.zeros(2), np.zeros(3)), ValueError, "x + y"),
])
def test_runtime_errors_keep_the_eager_class_and_point_at_the_script(fn, args, cls, text):
    with pytest.raises(cls) as info:
        tsjit.script(fn)(*args)
    where = located(info.value)
    assert f'File "{__file__}"' in where and "<--- HERE" in where
    assert text in underlined(where)


def test_runtime_error_in_a_callee_points_at_the_callee_only():
    with pytest.raises(ZeroDivisionError) as info:
        tsjit.script(calls_divides)(0)
    where = located(info.value)
    assert underlined(where) == ["10 // a"]
    assert f"line {line_of(divides, '10 // a')}" in where


# ---- TSJIT_DISABLE


DISABLED_PROGRAM = textwrap.dedent("""
    import tsjit

    def not_script_code(x: int) -> int:
        return len({x, x + 1})          # a set: not script code

    class M(tsjit.Module):
        def forward(self, x: int) -> int:
            return not_script_code(x)

    f = tsjit.script(not_script_code)
    m = M()
    print(f is not_script_code, f(3), tsjit.script(m) is m, m(1))
""")


def test_tsjit_disable_returns_the_python_objects(tmp_path):
    program = tmp_path / "disabled.py"
    program.write_text(DISABLED_PROGRAM)
    env = child_environment(TSJIT_DISABLE="1")
    out = subprocess.run([sys.executable, str(program)], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "2", "True", "2"]


# ---- special forms called with the wrong arguments, and reflection script code cannot do


def isinstance_of_one(x: int) -> bool:
    return isinstance(x)


def isinstance_of_one_in_a_condition(x: int) -> int:
    if isinstance(x):
        return 1
    return 0


def enumerate_of_nothing(x: int) -> int:
    for _ in enumerate():
        return 1
    return x


def zip_of_nothing(x: int) -> int:
    for _ in zip():
        return 1
    return x


def annotate_of_a_type_only(x: int) -> list[int]:
    return tsjit.annotate(list[int])


def is_scripting_with_an_argument(x: int) -> bool:
    return tsjit.is_scripting(x)


def real_part_or_default(x: int) -> int:
    return getattr(x, "real", 3)


def tensor_has_flags(x) -> bool:
    return hasattr(x, "flags")


@pytest.mark.parametrize("fn, text, marked", [
    (isinstance_of_one, "isinstance() takes 2 arguments (1 given)", "isinstance(x)"),
    (isinstance_of_one_in_a_condition, "isinstance() takes 2 arguments", "isinstance(x)"),
    (enumerate_of_nothing, "enumerate() takes 1 to 2 arguments (0 given)", "enumerate()"),
    (zip_of_nothing, "zip() takes at least 1 arguments (0 given)", "zip()"),
    (annotate_of_a_type_only, "annotate() takes 2 arguments (1 given)",
     "tsjit.annotate(list[int])"),
    (is_scripting_with_an_argument, "is_scripting() takes 0 arguments (1 given)",
     "tsjit.is_scripting(x)"),
    # Python has these attributes: getattr's default or hasattr's False would be wrong
    (real_part_or_default, "'int' object has attribute 'real' in Python",
     'getattr(x, "real", 3)'),
    (tensor_has_flags, "'Tensor' object has attribute 'flags' in Python",
     'hasattr(x, "flags")'),
])
def test_special_forms_with_wrong_arguments_and_unknowable_reflection(fn, text, marked):
    # they escaped script() as IndexError, or compiled to a different answer than eager's
    error = compile_error(fn)
    assert text in str(error)
    assert underlined(str(error)) == [marked]
