"""Random programs of native scalar code against eager Python (see _native.check_native):
Python numbers, NumPy scalars, arrays, control flow and exceptions; and int arithmetic
whose exact results need more than 64 bits, for which native code runs the region again
in the interpreter.

A few examples run in CI; a long run:

    TSJIT_FUZZ_EXAMPLES=2000 python -m pytest tests/test_native_fuzz.py -q
"""
from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from _native import INT64_MAX, INT64_MIN, check_native
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# CI runs 40 examples; TSJIT_FUZZ_EXAMPLES asks for a long run (as the other fuzzers).
DEFAULT_EXAMPLES = 40
EXAMPLES = int(os.environ.get("TSJIT_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))

HEADER = """\
import math


def fuzzed(a: int, b: int, c: float, flag: bool, x: tsjit.Tensor):
    i0 = 0
    i1 = a
    f0 = 0.5
    f1 = c
    p0 = False
"""
RESULT = "(i0, i1, b, f0, f1, p0)"
INT_VARS = ["a", "b", "i0", "i1"]
FLOAT_VARS = ["c", "f0", "f1"]
BOOL_VARS = ["flag", "p0"]
CLAMP = 100_000


@st.composite
def int_exprs(draw, depth: int, loop_vars: tuple[str, ...]) -> str:
    """Int expressions that stay far inside 64 bits (int variables are clamped to CLAMP,
    products and shifts take leaves only), so that eager Python ints agree with script
    ints also where a region runs in the interpreter."""
    leaf = st.sampled_from(INT_VARS + list(loop_vars) + ["3", "-2", "7", "len(x)",
                                                          "x.shape[0]"])
    if depth <= 0:
        return draw(leaf)
    form = draw(st.sampled_from(["leaf", "arith", "div", "bits", "shift", "minmax", "abs",
                                 "ternary", "int_of"]))
    sub = int_exprs(depth - 1, loop_vars)
    if form == "leaf":
        return draw(leaf)
    if form == "arith":
        if draw(st.booleans()):
            return f"({draw(leaf)} * {draw(leaf)})"
        return f"({draw(sub)} {draw(st.sampled_from(['+', '-']))} {draw(sub)})"
    if form == "div":
        return f"({draw(sub)} {draw(st.sampled_from(['//', '%']))} {draw(sub)})"
    if form == "bits":
        return f"({draw(sub)} {draw(st.sampled_from(['&', '|', '^']))} {draw(sub)})"
    if form == "shift":
        return f"({draw(leaf)} {draw(st.sampled_from(['<<', '>>']))} ({draw(leaf)} % 16))"
    if form == "minmax":
        return f"{draw(st.sampled_from(['min', 'max']))}({draw(sub)}, {draw(sub)})"
    if form == "abs":
        return f"abs({draw(sub)})"
    if form == "ternary":
        return f"({draw(sub)} if {draw(bool_exprs(depth - 1, loop_vars))} else {draw(sub)})"
    return f"int(max(-1e15, min(1e15, {draw(float_exprs(depth - 1, loop_vars))})))"


@st.composite
def float_exprs(draw, depth: int, loop_vars: tuple[str, ...]) -> str:
    leaf = st.sampled_from(FLOAT_VARS + ["0.5", "-0.0", "2.25", "1e300", "float(x[0])"])
    if depth <= 0:
        return draw(leaf)
    form = draw(st.sampled_from(["leaf", "arith", "div", "mixed", "math", "minmax", "neg",
                                 "element"]))
    sub = float_exprs(depth - 1, loop_vars)
    if form == "leaf":
        return draw(leaf)
    if form == "element":        # NumPy scalar arithmetic (the array's dtype, NEP 50)
        element = f"x[{draw(int_exprs(0, loop_vars))} % len(x)]"
        op = draw(st.sampled_from(["+", "-", "*", "/", "//", "%"]))
        return f"float({element} {op} {draw(st.sampled_from([element, *FLOAT_VARS, '3']))})"
    if form == "arith":
        return f"({draw(sub)} {draw(st.sampled_from(['+', '-', '*']))} {draw(sub)})"
    if form == "div":
        return f"({draw(sub)} {draw(st.sampled_from(['/', '//', '%']))} {draw(sub)})"
    if form == "mixed":
        return f"({draw(sub)} {draw(st.sampled_from(['+', '*', '/']))} " \
               f"{draw(int_exprs(depth - 1, loop_vars))})"
    if form == "math":
        # (math.floor's int of a float beyond 2**63 would not fit native code's ints:
        # math.floor(1e300), folded to a constant, kept the region out of native code)
        fn = draw(st.sampled_from(["math.sqrt(abs({}))", "math.exp(min({}, 5.0))",
                                   "math.sin({})", "math.atan({})",
                                   "math.floor(min({}, 1e15)) * 1.0"]))
        return fn.format(draw(sub))
    if form == "minmax":
        return f"{draw(st.sampled_from(['min', 'max']))}({draw(sub)}, {draw(sub)})"
    return f"(-{draw(sub)})"


@st.composite
def bool_exprs(draw, depth: int, loop_vars: tuple[str, ...]) -> str:
    cmp = st.sampled_from(["<", "<=", ">", ">=", "==", "!="])
    form = draw(st.sampled_from(["leaf", "int", "float", "mixed", "not", "and_or", "element"]
                                if depth > 0 else ["leaf"]))
    if form == "leaf":
        return draw(st.sampled_from(BOOL_VARS + ["True"]))
    if form == "int":
        return f"({draw(int_exprs(depth - 1, loop_vars))} {draw(cmp)} " \
               f"{draw(int_exprs(depth - 1, loop_vars))})"
    if form == "float":
        return f"({draw(float_exprs(depth - 1, loop_vars))} {draw(cmp)} " \
               f"{draw(float_exprs(depth - 1, loop_vars))})"
    if form == "mixed":
        return f"({draw(int_exprs(depth - 1, loop_vars))} {draw(cmp)} " \
               f"{draw(float_exprs(depth - 1, loop_vars))})"
    if form == "not":
        return f"(not {draw(bool_exprs(depth - 1, loop_vars))})"
    if form == "element":
        return f"bool(x[{draw(int_exprs(0, loop_vars))} % len(x)] {draw(cmp)} 0.5)"
    op = draw(st.sampled_from(["and", "or"]))
    return f"({draw(bool_exprs(depth - 1, loop_vars))} {op} " \
           f"{draw(bool_exprs(depth - 1, loop_vars))})"


def counted_while(pad: str, var: str, condition: str) -> list[str]:
    """A while loop's first lines: its counter (0, then + 1 per pass) and its header."""
    return [f"{pad}{var} = 0", f"{pad}while {condition}:", f"{pad}    {var} += 1"]


@st.composite
def statements(draw, indent: int, depth: int, loop_vars: tuple[str, ...]) -> list[str]:
    pad = "    " * indent
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        kinds = ["int", "float", "bool", "store", "raise"] + (
            ["if", "for", "while"] if depth > 0 else []) + (
            ["break", "continue"] if loop_vars else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "int":
            lines.append(f"{pad}{draw(st.sampled_from(INT_VARS[2:]))} = "
                         f"max(-{CLAMP}, min({CLAMP}, {draw(int_exprs(2, loop_vars))}))")
        elif kind == "float":
            lines.append(f"{pad}{draw(st.sampled_from(FLOAT_VARS[1:]))} = "
                         f"{draw(float_exprs(2, loop_vars))}")
        elif kind == "bool":
            lines.append(f"{pad}p0 = {draw(bool_exprs(2, loop_vars))}")
        elif kind == "store":
            lines.append(f"{pad}x[{draw(int_exprs(1, loop_vars))} % len(x)] = "
                         f"{draw(float_exprs(1, loop_vars))}")
        elif kind == "raise":
            lines.append(f"{pad}if {draw(bool_exprs(1, loop_vars))}:")
            lines.append(f"{pad}    raise ValueError('fuzzed')")
        elif kind == "if":
            lines.append(f"{pad}if {draw(bool_exprs(2, loop_vars))}:")
            lines += draw(statements(indent + 1, depth - 1, loop_vars))
            lines.append(f"{pad}else:")
            lines += draw(statements(indent + 1, depth - 1, loop_vars))
        elif kind == "for":
            var = f"k{len(loop_vars)}"
            bounds = draw(st.sampled_from(["4", "a % 5", "len(x)", "6, -1, -2", "b, 9, 3"]))
            lines.append(f"{pad}for {var} in range({bounds}):")
            lines += draw(statements(indent + 1, depth - 1, (*loop_vars, var)))
        elif kind == "while":
            var = f"w{len(loop_vars)}"
            lines += counted_while(pad, var, f"{var} < 6 and {draw(bool_exprs(1, loop_vars))}")
            lines += draw(statements(indent + 1, depth - 1, (*loop_vars, var)))
        else:
            lines.append(f"{pad}if {draw(bool_exprs(1, loop_vars))}:")
            lines.append(f"{pad}    {kind}")
    return lines


@st.composite
def programs(draw) -> str:
    body = ["    for k in range(2):"] + draw(statements(2, 2, ("k",)))
    return HEADER + "\n".join(body) + f"\n    return {RESULT}\n"


_MODULES = Path(tempfile.mkdtemp(prefix="tsjit_native_fuzz_"))


def load(source: str):
    """Import `source` from a real file (script() reads functions' source files)."""
    text = "import tsjit\n" + source
    name = "native_fuzzed_" + hashlib.sha1(text.encode()).hexdigest()[:16]
    path = _MODULES / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.fuzzed


ARGUMENTS = st.tuples(
    st.integers(-20, 20), st.integers(-20, 20),
    st.sampled_from([0.0, -0.0, 1.0, -2.5, 0.1, 7.0, math.inf, -math.inf, math.nan]),
    st.booleans(),
    st.tuples(st.lists(st.floats(-4, 4, allow_nan=False), min_size=1, max_size=5),
              st.sampled_from(["float64", "float32", "int32", "int8"])).map(
        lambda values_dtype: np.array(values_dtype[0]).astype(values_dtype[1])))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=EXAMPLES <= DEFAULT_EXAMPLES)
@given(source=programs(), calls=st.lists(ARGUMENTS, min_size=3, max_size=3))
def test_random_scalar_programs_match_python(source, calls):
    fn = load(source)
    try:
        check_native(fn, *calls)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- program ---\n{source}") from None


WIDE_HEADER = """\
def fuzzed(a: int, b: int, c: int):
    x = a
    y = b
"""
WIDE_CONSTANTS = ["1", "-1", "3", "-7", "2", str(2 ** 31), str(-(2 ** 62)), str(INT64_MAX)]


@st.composite
def wide_int_exprs(draw, depth: int, names: tuple[str, ...]) -> str:
    """Int expressions whose exact values may need more than 64 bits: chains of `+ - *`
    with constants, products, shifts, powers, `//`, negation.  Constants appear only next
    to a variable operand: a constant expression is folded at compile time."""
    leaf = st.sampled_from(names)
    if depth <= 0:
        return draw(leaf)
    sub = wide_int_exprs(depth - 1, names)
    form = draw(st.sampled_from(["leaf", "affine", "arith", "shift", "power", "div", "unary",
                                 "ternary"]))
    if form == "leaf":
        return draw(leaf)
    if form == "ternary":
        return f"({draw(sub)} if {draw(sub)} > {draw(sub)} else {draw(sub)})"
    if form == "affine":
        operation = f"{draw(st.sampled_from(WIDE_CONSTANTS))} * {draw(sub)} " \
                    f"{draw(st.sampled_from(['+', '-']))} {draw(st.sampled_from(WIDE_CONSTANTS))}"
    elif form == "arith":
        operation = f"{draw(sub)} {draw(st.sampled_from(['+', '-', '*']))} {draw(sub)}"
    elif form == "shift":
        operation = f"{draw(sub)} {draw(st.sampled_from(['<<', '>>']))} {draw(st.integers(0, 70))}"
    elif form == "power":     # small exponents: eager Python computes the exact powers of
        operation = f"{draw(sub)} ** {draw(st.integers(0, 6))}"   # powers, which grow fast
    elif form == "div":
        operation = f"{draw(sub)} {draw(st.sampled_from(['//', '%']))} {draw(leaf)}"
    else:
        operation = f"{draw(st.sampled_from(['-', 'abs']))}({draw(sub)})"
    return f"({operation})"


@st.composite
def wide_programs(draw) -> str:
    names = ("a", "b", "c", "x", "y")
    body = [f"    x = {draw(wide_int_exprs(2, names))}",
            "    for i in range(3):",
            f"        y = {draw(wide_int_exprs(2, (*names, 'i')))}",
            f"        x = {draw(wide_int_exprs(1, (*names, 'i')))}"]
    return WIDE_HEADER + "\n".join(body) + "\n    return x, y\n"


WIDE_INTS = st.one_of(st.integers(-20, 20), st.sampled_from(
    [INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1, 2 ** 31, -(2 ** 32), 3 ** 39]))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=EXAMPLES <= DEFAULT_EXAMPLES)
@given(source=wide_programs(), calls=st.lists(st.tuples(WIDE_INTS, WIDE_INTS, WIDE_INTS),
                                              min_size=3, max_size=3))
def test_random_int_programs_beyond_64_bits_give_pythons_ints(source, calls):
    """Each int operation that leaves the int64 range makes the region run again in the
    interpreter, so the program gives Python's ints as eagerly."""
    fn = load(source)
    try:
        check_native(fn, *calls)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- program ---\n{source}") from None


RANGED_HEADER = """\
def fuzzed(a: int, b: int, c: int):
    s = 0
    t = a
    u = c
"""
# loop headers whose trip counts stay small for every argument (eager Python runs them)
RANGES = ["range(a, min(b, a + 4))", "range(b - 3, b)", "range(4, -2, -2)",
          "range(a, max(b, a - 4), -1)", "range(c % 5, 6, 2)", "range(b, b + 3, 3)",
          "range(b, b - 3, -1)", "range(a - 5, a, 2)"]
INDEX_USES = ["+ 1", "+ 2", "- 1", "- 2", "* 2", "* -1", "- b", "+ a"]


@st.composite
def ranged_statements(draw, indent: int, depth: int, loop_vars: tuple[str, ...]) -> list[str]:
    """Counters, affine updates, masks and loops over ranges whose bounds come from the
    arguments: what int_ranges bounds (native code then leaves tests out)."""
    pad = "    " * indent
    names = ("a", "b", "c", "s", "t", "u", *loop_vars)
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["count", "affine", "mask", "index", "if"]
                                    + (["for", "while"] if depth > 0 else [])))
        target = draw(st.sampled_from(["s", "t", "u"]))
        name = draw(st.sampled_from(names))
        if kind == "count":
            lines.append(f"{pad}{target} {draw(st.sampled_from(['+=', '-=']))} "
                         f"{draw(st.sampled_from(['1', '3', '7', str(2 ** 40)]))}")
        elif kind == "affine":
            lines.append(f"{pad}{target} = {draw(st.sampled_from(WIDE_CONSTANTS))} * {name} "
                         f"{draw(st.sampled_from(['+', '-']))} "
                         f"{draw(st.sampled_from(WIDE_CONSTANTS))}")
        elif kind == "mask":
            lines.append(f"{pad}{target} = ({name} {draw(st.sampled_from(['%', '&']))} "
                         f"{draw(st.sampled_from(['7', '1024', '-9']))}) * "
                         f"{draw(st.sampled_from(['3', str(2 ** 40), str(-(2 ** 52))]))}")
        elif kind == "index" and loop_vars:
            lines.append(f"{pad}{target} = {loop_vars[-1]} {draw(st.sampled_from(INDEX_USES))}")
        elif kind == "if":
            lines.append(f"{pad}if {name} > {draw(st.sampled_from(names))}:")
            lines += draw(ranged_statements(indent + 1, 0, loop_vars))
            lines.append(f"{pad}else:")
            lines += draw(ranged_statements(indent + 1, 0, loop_vars))
        elif kind == "for":
            var = f"k{len(loop_vars)}"
            lines.append(f"{pad}for {var} in {draw(st.sampled_from(RANGES))}:")
            lines.append(f"{pad}    {target} = {var} {draw(st.sampled_from(INDEX_USES))}")
            lines += draw(ranged_statements(indent + 1, depth - 1, (*loop_vars, var)))
        elif kind == "while":
            var = f"w{len(loop_vars)}"
            lines += counted_while(pad, var, f"{var} < 4")
            lines += draw(ranged_statements(indent + 1, depth - 1, (*loop_vars, var)))
        else:
            lines.append(f"{pad}{target} = {name}")
    return lines


@st.composite
def ranged_programs(draw) -> str:
    body = draw(ranged_statements(1, 2, ()))
    return RANGED_HEADER + "\n".join(body) + "\n    return s, t, u\n"


EDGE_INTS = st.one_of(st.integers(-6, 6), st.sampled_from(
    [INT64_MIN, INT64_MIN + 1, INT64_MIN + 2, INT64_MAX, INT64_MAX - 1, INT64_MAX - 2,
     2 ** 62, -(2 ** 62), (INT64_MAX - 1) // 3, 2 ** 23]),
    st.integers(INT64_MAX - 8, INT64_MAX), st.integers(INT64_MIN, INT64_MIN + 8))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=EXAMPLES <= DEFAULT_EXAMPLES)
@given(source=ranged_programs(), calls=st.lists(st.tuples(EDGE_INTS, EDGE_INTS, EDGE_INTS),
                                                min_size=3, max_size=3))
def test_random_loops_over_bounded_ints_give_pythons_ints(source, calls):
    """Where int_ranges lets native code leave a test out, the value must stay in int64
    on every call: counters, loop indices and affine values at the ends of int64."""
    fn = load(source)
    try:
        check_native(fn, *calls)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- program ---\n{source}") from None
