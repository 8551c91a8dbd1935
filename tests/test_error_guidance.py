"""Errors that say what to do (issue 12, item 4): each names the cause and the way out,
and points at the user's code (file, line and the marked source), not at a library's."""
from __future__ import annotations

import os
import pdb
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _differential import check
from test_errors import compile_error, line_of, underlined

import tsjit

# ---------------------------------------------------------------- unannotated parameters


def scale(x, k: int) -> int:
    return k


def test_a_call_type_error_for_an_unannotated_parameter_says_it_was_taken_as_a_tensor():
    scripted = tsjit.script(scale)
    with pytest.raises(TypeError) as info:
        scripted(1, 2)
    message = str(info.value)
    assert "argument 'x'" in message and "found type 'int'" in message
    assert "'x' has no annotation, so it was taken as a Tensor; annotate it (x: int)" in message


def test_an_annotated_parameter_of_the_wrong_type_gets_no_annotation_hint():
    scripted = tsjit.script(scale)
    with pytest.raises(TypeError) as info:
        scripted(np.ones(2), "2")
    assert "argument 'k'" in str(info.value) and "annotation" not in str(info.value)


def choose(x: int, name) -> int:
    if name == "double":
        return x * 2
    return x


def starts(x: int, mode) -> int:
    if mode in ("a", "b"):
        return x
    return -x


def test_an_unannotated_parameter_used_as_a_str_is_reported_at_script():
    for fn, text in ((choose, 'name == "double"'), (starts, 'mode in ("a", "b")')):
        error = compile_error(fn)
        param = "name" if fn is choose else "mode"
        assert f"parameter '{param}' has no annotation, so it was taken as a Tensor" in str(error)
        assert f"annotate it ({param}: str)" in str(error)
        assert underlined(str(error)) == [text]
        assert f"line {line_of(fn, text)}" in str(error)


def upper(x: int, name) -> int:
    return len(name.upper()) + x


def test_an_error_about_an_unannotated_parameter_names_the_missing_annotation():
    error = compile_error(upper)
    assert "'Tensor' object has no attribute 'upper'" in str(error)
    assert "parameter 'name' has no annotation, so it was taken as a Tensor" in str(error)


# ---------------------------------------------------------------- library code


def ignore_errors(x: float) -> float:
    with np.errstate(all="ignore"):
        y = x / 2.0
    return y


def debug(x: int) -> int:
    pdb.set_trace()
    return x


def test_numpy_errstate_is_reported_at_the_users_call():
    error = compile_error(ignore_errors)
    message = str(error)
    assert message.startswith("`numpy.errstate` is not supported in script code; call it from "
                              "a `@tsjit.ignore` function")
    assert underlined(message) == ["np.errstate"]
    assert f"line {line_of(ignore_errors, 'np.errstate')}" in message
    assert "_ufunc_config.py" not in message          # not located in NumPy's source


def test_pdb_set_trace_is_reported_at_the_users_call():
    message = str(compile_error(debug))
    assert message.startswith("`pdb.set_trace` is not supported in script code; call it from "
                              "a `@tsjit.ignore` function")
    assert underlined(message) == ["pdb.set_trace"]
    assert "pdb.py" not in message


# ---------------------------------------------------------------- no source


WAYS_OUT = ("tsjit.trace(fn, example_inputs)", "define it in a file", "TSJIT_DISABLE=1")


def test_a_function_made_by_exec_gets_an_error_naming_the_ways_out():
    namespace: dict = {}
    exec("def made(x: int) -> int:\n    return x + 1\n", namespace)
    message = str(compile_error(namespace["made"]))
    assert "defined in an interactive session, `python -c` or exec()" in message
    assert all(way in message for way in WAYS_OUT)


def test_a_function_defined_with_python_c_gets_an_error_naming_the_ways_out():
    program = textwrap.dedent("""
        import tsjit
        def f(x: int) -> int:
            return x
        try:
            tsjit.script(f)
        except tsjit.CompilationError as e:
            print(e)
    """)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True).stdout
    assert "its file is <string>" in out and all(way in out for way in WAYS_OUT)


# ---------------------------------------------------------------- @tsjit.ignore


@tsjit.ignore
def doubled_in_python(x):
    return x * 2


@tsjit.ignore
def shout(word: str):
    return word.upper() + "!"


def ignored_result_in_arithmetic(n: int) -> int:
    return doubled_in_python(n) + 1


def ignored_array_result(x: np.ndarray) -> np.ndarray:
    return doubled_in_python(x) - 1.0


def ignored_str_result(word: str) -> str:
    return shout(word) + "?"


def test_an_ignored_function_without_return_annotation_returns_what_python_returns():
    """Typed Any, not None: the result is whatever the Python function returns."""
    check(ignored_result_in_arithmetic, (2,), (5,), (-1,))
    check(ignored_array_result, (np.arange(3.0),), (np.ones((2, 2), np.float32),))
    check(ignored_str_result, ("a",), ("hey",))


def process_id(x: int) -> int:
    return os.getpid() + x


def test_a_python_callable_without_an_op_says_to_call_it_from_an_ignored_function():
    message = str(compile_error(process_id))
    assert "'os.getpid' (a Python builtin_function_or_method) is not supported in script " \
           "code; call it from a `@tsjit.ignore` function" in message
    assert underlined(message) == ["os.getpid"]


def loop_over_tolist(x) -> float:
    total = 0.0
    for v in x.tolist():
        total += v
    return total


def test_a_loop_over_a_value_of_unknown_element_type_says_to_annotate_it():
    error = compile_error(loop_over_tolist)
    assert "cannot iterate over a value of type Any" in str(error)
    assert "tsjit.annotate(List[float], x.tolist())" in str(error)
    assert underlined(str(error)) == ["for v in x.tolist():"]


def found_or_not(n: int) -> int:
    for i in range(10):
        if i == n:
            found = i
            break
    return found


def test_a_variable_set_only_before_a_break_is_reported_where_it_is_set():
    # the loop replaced the if's own reason with one pointing at a binding that had no
    # source: script() raised AttributeError ('NoneType' object has no attribute
    # 'highlight') while rendering the CompilationError
    error = compile_error(found_or_not)
    assert "'found' is not defined in the false branch" in str(error)
    assert underlined(str(error))[:2] == ["found", "found"]


def test_a_note_without_a_source_range_renders():
    error = tsjit.CompilationError("reason", None, ("a note without a location", None))
    assert str(error) == "reason\na note without a location"


LIMIT = 3


def reads_a_global_then_shadows_it(n: int) -> int:
    total = LIMIT + n  # noqa: F823 (the point of the test)
    LIMIT = 5
    return total + LIMIT


def reads_a_builtin_then_shadows_it(xs: list[int]) -> int:
    n = len(xs)  # noqa: F823
    len = 2
    return n + len


def test_a_name_assigned_later_in_the_function_is_local_everywhere_in_it():
    # Python raises UnboundLocalError on every call; script() read the global (or
    # builtin) instead and returned a value
    for fn, name in ((reads_a_global_then_shadows_it, "LIMIT"),
                     (reads_a_builtin_then_shadows_it, "len")):
        error = compile_error(fn)
        assert f"local variable '{name}' is referenced before assignment" in str(error)
        assert underlined(str(error))[0] == name
