"""Differential fuzzing of the whole language pipeline: hypothesis writes random,
well-typed scalar programs (ints, floats, bools, an Optional[int], a str and a list, with
if/elif/else, for and while loops, break, continue, early returns, raise, assert and a
helper call) as Python source; each runs eagerly and scripted on several inputs, and
results, exception classes and the mutated list argument must be identical.

Programs keep ints inside 64 bits (products of leaves only, clamped assignments) so that
Python's unbounded ints and script code's 64-bit ints agree, and every loop is bounded.
A long run:

    TSJIT_FUZZ_EXAMPLES=2000 python -m pytest tests/test_frontend_fuzz.py -q
"""
from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import tempfile
from pathlib import Path

from _differential import check
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tsjit

# CI runs 150 examples; TSJIT_FUZZ_EXAMPLES asks for a long run (as the other fuzzers).
DEFAULT_EXAMPLES = 150
EXAMPLES = int(os.environ.get("TSJIT_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))

HEADER = """\
import math


def helper(v: int, w: float) -> float:
    if v > 3:
        return w * v
    return w - v


def fuzzed(a: int, b: int, c: float, flag: bool, xs: list[int]) -> \\
        tuple[int, int, int, float, float, bool, list[int], int | None, str]:
    i0 = 0
    i1 = a
    f0 = 0.5
    f1 = c
    p0 = False
    o0: int | None = None
    s0 = ""
"""
RESULT = "(i0, i1, b, f0, f1, p0, xs, o0, s0)"
INT_VARS = ["a", "b", "i0", "i1"]
FLOAT_VARS = ["c", "f0", "f1"]
BOOL_VARS = ["flag", "p0"]
CLAMP = 100_000
STRINGS = ["''", "'1'", "'-2'", "'12'"]


class ProgramWriter:
    """Draws one random program, statement by statement, tracking what is in scope."""

    def __init__(self, draw):
        self.draw = draw
        self.lines: list[str] = []
        self.loop_ints: list[str] = []        # loop variables visible at this point

    def choice(self, options):
        return self.draw(st.sampled_from(options))

    # ---- expressions
    def int_leaf(self) -> str:
        kind = self.choice(["var", "var", "literal", "len", "optional"])
        if kind == "var":
            return self.choice(INT_VARS + self.loop_ints)
        if kind == "literal":
            return str(self.draw(st.integers(-5, 9)))
        if kind == "optional":
            return f"(o0 if o0 is not None else {self.draw(st.integers(-3, 3))})"
        return self.choice(["len(xs)", "len(s0)"])

    def int_expr(self, depth: int) -> str:
        if depth <= 0:
            return self.int_leaf()
        form = self.choice(["leaf", "add", "sub", "mul", "floordiv", "mod", "neg", "abs",
                            "min", "max", "ternary", "bits", "index", "int_of_float"])
        left, right = (lambda: self.int_expr(depth - 1)), (lambda: self.int_expr(depth - 1))
        if form == "leaf":
            return self.int_leaf()
        if form in ("add", "sub", "floordiv", "mod"):
            op = {"add": "+", "sub": "-", "floordiv": "//", "mod": "%"}[form]
            return f"({left()} {op} {right()})"
        if form == "mul":                     # leaves only: products stay small
            return f"({self.int_leaf()} * {self.int_leaf()})"
        if form == "neg":
            return f"(-{left()})"
        if form in ("abs",):
            return f"abs({left()})"
        if form in ("min", "max"):
            return f"{form}({left()}, {right()})"
        if form == "ternary":
            return f"({left()} if {self.bool_expr(depth - 1)} else {right()})"
        if form == "bits":
            return f"({left()} {self.choice(['&', '|', '^'])} {right()})"
        if form == "index":
            return f"xs[{self.int_leaf()}]"
        return f"int(max(-1e6, min(1e6, {self.float_expr(depth - 1)})))"

    def float_expr(self, depth: int) -> str:
        if depth <= 0:
            kind = self.choice(["var", "var", "literal", "of_int"])
            if kind == "var":
                return self.choice(FLOAT_VARS)
            if kind == "literal":
                return self.choice(["0.0", "-0.0", "0.5", "1.5", "-2.25", "3.0", "1e300"])
            return f"float({self.int_leaf()})"
        form = self.choice(["leaf", "arith", "div", "neg", "abs", "minmax", "ternary", "mixed",
                            "sqrt", "floor", "call"])
        sub = lambda: self.float_expr(depth - 1)  # noqa: E731
        if form == "leaf":
            return self.float_expr(0)
        if form == "arith":
            return f"({sub()} {self.choice(['+', '-', '*'])} {sub()})"
        if form == "div":
            return f"({sub()} {self.choice(['/', '//', '%'])} {sub()})"
        if form == "neg":
            return f"(-{sub()})"
        if form == "abs":
            return f"abs({sub()})"
        if form == "minmax":
            return f"{self.choice(['min', 'max'])}({sub()}, {sub()})"
        if form == "ternary":
            return f"({sub()} if {self.bool_expr(depth - 1)} else {sub()})"
        if form == "mixed":
            return f"({sub()} {self.choice(['+', '-', '*'])} {self.int_expr(depth - 1)})"
        if form == "sqrt":
            return f"math.sqrt(abs({sub()}))"
        if form == "call":
            return f"helper({self.int_leaf()}, {sub()})"
        return f"float(math.floor(max(-1e6, min(1e6, {sub()}))))"

    def bool_expr(self, depth: int) -> str:
        if depth <= 0:
            return self.choice(BOOL_VARS + ["True", "False"])
        form = self.choice(["int_cmp", "float_cmp", "mixed_cmp", "chain", "not", "and_or",
                            "leaf", "in", "optional", "str"])
        cmp = lambda: self.choice(["<", "<=", ">", ">=", "==", "!="])  # noqa: E731
        if form == "int_cmp":
            return f"({self.int_expr(depth - 1)} {cmp()} {self.int_expr(depth - 1)})"
        if form == "float_cmp":
            return f"({self.float_expr(depth - 1)} {cmp()} {self.float_expr(depth - 1)})"
        if form == "mixed_cmp":
            return f"({self.int_expr(depth - 1)} {cmp()} {self.float_expr(depth - 1)})"
        if form == "chain":
            return f"({self.int_leaf()} {cmp()} {self.int_leaf()} {cmp()} {self.int_leaf()})"
        if form == "not":
            return f"(not {self.bool_expr(depth - 1)})"
        if form == "and_or":
            op = self.choice(["and", "or"])
            return f"({self.bool_expr(depth - 1)} {op} {self.bool_expr(depth - 1)})"
        if form == "in":
            return f"({self.int_leaf()} in xs)"
        if form == "optional":          # narrowed by the `and`
            return f"(o0 is not None and o0 {cmp()} {self.int_leaf()})"
        if form == "str":
            return f"(s0 {cmp()} {self.choice(STRINGS)})"
        return self.bool_expr(0)

    # ---- statements
    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def block(self, indent: int, depth: int, loop_depth: int, size: int) -> None:
        for _ in range(self.draw(st.integers(1, size))):
            self.statement(indent, depth, loop_depth)

    def statement(self, indent: int, depth: int, loop_depth: int) -> None:
        kinds = ["int", "int", "float", "bool", "aug", "append", "setitem", "optional", "str"]
        if depth > 0:
            kinds += ["if", "if", "for", "while"]
        if loop_depth > 0:
            kinds += ["break", "continue"]
        kinds += ["return", "raise", "assert"]
        kind = self.choice(kinds)
        e = 2
        if kind == "int":
            target = self.choice(INT_VARS)
            self.emit(indent, f"{target} = max(-{CLAMP}, min({CLAMP}, {self.int_expr(e)}))")
        elif kind == "float":
            self.emit(indent, f"{self.choice(FLOAT_VARS)} = {self.float_expr(e)}")
        elif kind == "bool":
            self.emit(indent, f"{self.choice(BOOL_VARS)} = {self.bool_expr(e)}")
        elif kind == "aug":
            if self.draw(st.booleans()):
                op = self.choice(["+=", "-="])
                self.emit(indent, f"{self.choice(INT_VARS)} {op} {self.int_expr(1)}")
            else:
                op = self.choice(["+=", "-=", "*=", "/="])
                self.emit(indent, f"{self.choice(FLOAT_VARS)} {op} {self.float_expr(1)}")
        elif kind == "optional":
            value = self.choice(["None", f"max(-{CLAMP}, min({CLAMP}, {self.int_expr(1)}))"])
            self.emit(indent, f"o0 = {value}")
        elif kind == "str":
            self.emit(indent, f"s0 = (s0 + str({self.int_leaf()}))[-6:]")
        elif kind == "append":
            self.emit(indent, f"xs.append(max(-{CLAMP}, min({CLAMP}, {self.int_expr(1)})))")
        elif kind == "setitem":
            value = f"max(-{CLAMP}, min({CLAMP}, {self.int_expr(1)}))"
            self.emit(indent, f"xs[{self.int_leaf()}] = {value}")
        elif kind == "if":
            self.emit(indent, f"if {self.bool_expr(e)}:")
            self.block(indent + 1, depth - 1, loop_depth, 3)
            if self.draw(st.booleans()):
                self.emit(indent, f"elif {self.bool_expr(e)}:")
                self.block(indent + 1, depth - 1, loop_depth, 2)
            if self.draw(st.booleans()):
                self.emit(indent, "else:")
                self.block(indent + 1, depth - 1, loop_depth, 2)
        elif kind == "for":
            var = f"k{loop_depth}"
            bounds = self.choice([f"min(abs({self.int_leaf()}), 5)", "4",
                                  f"{self.int_leaf()} % 5, 6", "5, -1, -2", "3, 0, -1"])
            self.emit(indent, f"for {var} in range({bounds}):")
            self.loop_ints.append(var)
            self.block(indent + 1, depth - 1, loop_depth + 1, 3)
            self.loop_ints.pop()
        elif kind == "while":
            counter = f"w{loop_depth}"
            self.emit(indent, f"{counter} = 0")
            self.emit(indent, f"while {counter} < 5 and {self.bool_expr(1)}:")
            self.emit(indent + 1, f"{counter} += 1")
            self.block(indent + 1, depth - 1, loop_depth + 1, 3)
        elif kind in ("break", "continue"):
            self.emit(indent, f"if {self.bool_expr(1)}:")
            self.emit(indent + 1, kind)
        elif kind == "return":
            self.emit(indent, f"if {self.bool_expr(1)}:")
            self.emit(indent + 1, f"return {RESULT}")
        elif kind == "raise":
            self.emit(indent, f"if {self.bool_expr(1)}:")
            self.emit(indent + 1, f"raise ValueError(\"at line {len(self.lines)}\")")
        else:
            self.emit(indent, f"assert {self.bool_expr(1)}, \"assertion {len(self.lines)}\"")


@st.composite
def programs(draw) -> str:
    writer = ProgramWriter(draw)
    writer.block(1, 3, 0, 6)
    writer.emit(1, f"return {RESULT}")
    return HEADER + "\n".join(writer.lines) + "\n"


ARGUMENTS = st.tuples(
    st.integers(-20, 20), st.integers(-20, 20),
    st.sampled_from([0.0, -0.0, 1.0, -2.5, 0.1, 7.0, math.inf, -math.inf, math.nan]),
    st.booleans(), st.lists(st.integers(-9, 9), max_size=4))

_MODULES = Path(tempfile.mkdtemp(prefix="tsjit_fuzz_"))


def load(source: str):
    """Import `source` from a real file (script() reads functions' source files)."""
    name = "fuzzed_" + hashlib.sha1(source.encode()).hexdigest()[:16]
    path = _MODULES / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.fuzzed


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=EXAMPLES <= DEFAULT_EXAMPLES)
@given(source=programs(), calls=st.lists(ARGUMENTS, min_size=4, max_size=4))
def test_random_scalar_programs_match_python(source, calls):
    fn = load(source)
    try:
        scripted = tsjit.script(fn)
    except tsjit.CompilationError as e:       # every generated program is valid script
        raise AssertionError(f"{e}\n--- program ---\n{source}") from None
    try:
        check(fn, *calls, scripted=scripted)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- program ---\n{source}") from None
