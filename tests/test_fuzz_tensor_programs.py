"""Differential fuzzing of tensor programs with control flow, as an outside fuzzer writes
them: random NumPy programs over every integer width (signed and unsigned), float16/32/64
and bool, run eagerly and through tsjit.script on every call (profiling, optimized, a call
with other dtypes whose guards fail, a call whose loop count differs, the first types again,
and the first dtypes in other layouts: C, Fortran, reversed or strided, a guard failing).

What test_fuzz_fusion and test_fuzz_reductions do not draw, this generator does:
- int8/16, uint8/16/32/64 and float16 arguments holding their extremes (overflow,
  wrap-around, the most negative int), mixed with Python scalars under NEP 50 (``x + 300``
  on uint8 raises OverflowError, ``x * 2.5`` on int16 is float64, ``x + True`` ...) and
  NumPy scalars of other widths (np.uint8(200), np.float16(0.1), np.int64(-2));
- integer ``//``, ``%``, np.fmod and ``**`` on zero and negative operands (NumPy's
  divide-by-zero reports, its zero results, ValueError for negative integer powers),
  shifts by the width and beyond;
- clip bounds and exponents that are arrays, scalars or broadcast one-element arrays (the
  second argument's shape may hold ones), where NumPy's loops read them at stride 0 and
  take their scalar paths (x ** 0.5 as sqrt, clip's ties kept);
- comparisons chained with ``& | ^ ~`` and np.logical_* into np.where;
- views: ``a[::-1]``, ``a[..., ::-1]``, ``a.T`` (square shapes), reductions with
  keepdims, dtype= and tuple axes inside elementwise chains, full reductions (NumPy
  scalars) as operands, alone or through Python's operators (NumPy's scalar math, which
  reports integer overflow), 0-d arrays (whose elementwise results are NumPy scalars);
- float -> uint32 casts, whose NaN and out-of-range values NumPy's vectorized loop makes
  by place (its body's and its scalar tail's differ: sizes 7 and 40 have both);
- in-place updates: ``x0 op= ...``, through a reversed or transposed view of x0 with x0
  itself on the right (NumPy copies overlapping operands), ``x0[...] = ...``,
  ``np.<ufunc>(..., out=x0)``, the same array passed as two arguments;
- scalar control flow around tensor ops: ifs on an int argument and on data
  (``float(t.sum()) > 0``, ``bool((t > 0).any())``), for loops that carry tensors, with
  break, an early return and a raise inside.

Every call's results, exception class, the arguments' final contents and the floating-point
reports (warnings, FloatingPointError, seterrcall calls) under a drawn NumPy error state
must be eager's, compared as test_fuzz_fusion does (types, dtypes, shapes, strides, which
results are or share memory with which arguments, bitwise values with NaN bits).
Programs use only exact operations (no transcendental functions: test_fuzz_fusion covers
their ulps); float inputs hold one NaN bit pattern so that where two NaNs meet, NumPy's
answer does not depend on its loop's operand order (test_fuzz_fusion covers that case).

A few examples run in CI; a long run:

    TSJIT_FUZZ_EXAMPLES=500 python -m pytest tests/test_fuzz_tensor_programs.py -q
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_fuzz_fusion import ERRSTATES, aliasing, indistinguishable, load, run

import tsjit

EXAMPLES = int(os.environ.get("TSJIT_FUZZ_EXAMPLES", "20"))
DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64")
FLOAT_SPECIALS = (0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 6e4, -1e30, 0.5, -2.25, 3.0)
# Python and NumPy scalars an operation may take: NEP 50 makes Python's weak (out of an
# integer dtype's range they raise OverflowError; out of float16's or float32's range a
# float warns "overflow encountered in cast"), NumPy's strong.
SCALARS = ("2", "-1", "0", "3", "300", "-129", "2.5", "-0.0", "True", "np.uint8(200)",
           "np.int8(-3)", "np.float16(0.1)", "np.float32(1.5)", "np.int64(-2)",
           "np.uint64(7)", "65520.0", "-1e40", "0.5", "np.float64(-0.0)")
BINARY = ("{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / {b}", "{a} // {b}", "{a} % {b}",
          "{a} ** {b}", "np.maximum({a}, {b})", "np.minimum({a}, {b})", "np.fmod({a}, {b})",
          "np.floor_divide({a}, {b})", "np.power({a}, {b})", "np.subtract({a}, {b})",
          "np.clip({a}, {b}, 3.5)", "np.clip({a}, -2, {b})", "np.remainder({b}, {a})")
BITWISE = ("{a} & {b}", "{a} | {b}", "{a} ^ {b}", "{a} << {b}", "{a} >> {b}")
COMPARE = ("<", "<=", ">", ">=", "==", "!=")
UNARY = ("-{a}", "np.abs({a})", "np.negative({a})", "np.sign({a})", "np.square({a})",
         "np.sqrt({a})", "np.floor({a})", "np.trunc({a})", "np.rint({a})", "{a} ** 2",
         "np.clip({a}, -3, 100)", "np.isnan({a})", "np.logical_not({a})", "+{a}",
         "{a}.astype(np.int8)", "{a}.astype(np.uint16)", "{a}.astype(np.float16)",
         "{a}.astype(np.float64)", "{a}.astype(np.int64)", "{a}.astype(bool)",
         "{a}.astype(np.uint32)")
VIEWS = ("{a}[::-1]", "{a}[..., ::-1]")
REDUCTIONS = ("{a}.sum(axis={axis}, keepdims=True)", "np.max({a}, axis={axis}, keepdims=True)",
              "{a}.min(axis={axis}, keepdims=True)", "np.mean({a}, axis={axis}, keepdims=True)",
              "{a}.sum(axis={axis}, keepdims=True, dtype=np.int64)",
              "np.prod({a}, axis={axis}, keepdims=True)", "{a}.any(axis={axis}, keepdims=True)",
              "np.all({a}, axis={axis}, keepdims=True)",
              "{a}.mean(axis={axis}, keepdims=True, dtype=np.float32)")
FULL_REDUCTIONS = ("{a}.sum()", "np.max({a})", "{a}.mean()", "np.count_nonzero({a})")
# Python's operators on full reductions (NumPy scalars) are NumPy's scalar math, which
# reports integer overflow ("overflow encountered in scalar multiply"): arrays' do not
SCALAR_MATH = ("({f} * {s})", "({f} + {s})", "({f} - {g})", "(-{f})", "abs({f})",
               "({f} * {g})")
IN_PLACE = ("x0 {op}= {e}", "x0[::-1] {op}= {e}", "x0[...] = {e}", "np.add(x0, {e}, out=x0)",
            "np.multiply({e}, x0, out=x0)")


@dataclass(frozen=True)
class Argument:
    """One array argument: built afresh, equal, for every call."""

    shape: tuple[int, ...]
    layout: str          # C, F, reversed
    seed: int

    def make(self, dtype: str) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        n = max(1, int(np.prod(self.shape)))
        kind = np.dtype(dtype).kind
        if kind == "b":
            values = rng.integers(0, 2, n).astype(bool)
        elif kind in "iu":
            info = np.iinfo(dtype)
            extremes = np.array([v for v in (0, 1, -1, 2, int(info.min), int(info.max),
                                             int(info.max) - 1, -7, 5)
                                 if info.min <= v <= info.max], dtype)
            small = rng.integers(max(int(info.min), -9), 10, n).astype(dtype)
            values = np.where(rng.random(n) < 0.25, rng.choice(extremes, n), small)
        else:
            values = np.where(rng.random(n) < 0.3, rng.choice(FLOAT_SPECIALS, n),
                              rng.standard_normal(n) * 8)
            with np.errstate(over="ignore"):
                values = values.astype(dtype)
        values = values[:int(np.prod(self.shape))].reshape(self.shape)
        if self.layout == "F":
            return np.asfortranarray(values)
        if self.layout == "reversed":
            return values[(slice(None, None, -1),) * len(self.shape)]
        if self.layout == "strided" and self.shape:    # every other element of the last axis
            return np.repeat(values, 2, axis=-1)[..., ::2]
        return values


@dataclass(frozen=True)
class Program:
    source: str
    arguments: tuple[Argument, ...]
    same_array: bool                  # x1 is x0 (one array passed twice)
    dtypes: tuple[tuple[str, ...], ...]   # per call
    counts: tuple[int, ...]           # n per call
    errstate: str
    layouts: tuple[tuple[str, str] | None, ...]  # per call: other layouts (None: own)


class ProgramWriter:
    """Draws one program statement by statement; every tensor value it names broadcasts
    to the arguments' shape (views and reductions keep the rank)."""

    def __init__(self, draw, rank: int, square: bool, integral: bool):
        self.draw = draw
        self.rank = rank
        self.square = square
        self.integral = integral     # the first call's arguments are ints or bools
        self.values = ["x0", "x1"]
        self.lines: list[str] = []
        self.loop_vars: list[str] = []

    def choice(self, options):
        return self.draw(st.sampled_from(options))

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def axis(self) -> str:
        axes = ["None"] + [str(a) for a in range(-self.rank, self.rank)]
        if self.rank >= 2:
            axes += ["(0, 1)", "(-1, 0)"]
        return self.choice(axes)

    def operand(self) -> str:
        kind = self.choice(["value", "value", "value", "scalar", "full", "loop"]
                           if self.loop_vars else ["value", "value", "value", "scalar", "full"])
        if kind == "scalar":
            return self.choice(SCALARS)
        if kind == "full":
            full = self.choice(FULL_REDUCTIONS).format(a=self.choice(self.values))
            if self.draw(st.booleans()):
                return full
            other = self.choice(FULL_REDUCTIONS).format(a=self.choice(self.values))
            return self.choice(SCALAR_MATH).format(f=full, g=other, s=self.choice(SCALARS))
        if kind == "loop":
            return self.choice(self.loop_vars)
        return self.choice(self.values)

    def condition(self) -> str:
        a = self.choice(self.values)
        return self.choice([f"({a} {self.choice(COMPARE)} {self.operand()})",
                            f"(({a} {self.choice(COMPARE)} {self.operand()}) "
                            f"{self.choice(['&', '|', '^'])} ~({self.choice(self.values)} "
                            f"{self.choice(COMPARE)} {self.operand()}))",
                            f"np.logical_{self.choice(['and', 'or', 'xor'])}({a} > 0, "
                            f"{self.choice(self.values)} != {self.operand()})",
                            f"np.isfinite({a})"])

    def expression(self, depth: int) -> str:
        if depth <= 0:
            return self.choice(self.values)
        kind = self.choice(["binary", "binary", "binary", "unary", "where", "compare", "view",
                            "reduce"])
        a = self.expression(depth - 1)
        if kind == "binary":
            b = self.operand() if self.draw(st.booleans()) else self.expression(depth - 1)
            a, b = (b, a) if self.draw(st.booleans()) else (a, b)
            ops = BINARY + BITWISE if self.integral else BINARY
            return f"({self.choice(ops).format(a=a, b=b)})"
        if kind == "unary":
            return f"({self.choice(UNARY + ('~{a}',) if self.integral else UNARY).format(a=a)})"
        if kind == "where":
            return f"np.where({self.condition()}, {a}, {self.operand()})"
        if kind == "compare":
            return self.condition()
        if kind == "view":
            views = VIEWS + (("{a}.T",) if self.square else ())
            return self.choice(views).format(a=f"({a})") if self.rank else a
        return self.choice(REDUCTIONS).format(a=f"({a})", axis=self.axis())

    def new_value(self, indent: int) -> None:
        name = f"t{len(self.lines)}"
        self.emit(indent, f"{name} = {self.expression(self.draw(st.integers(1, 3)))}")
        self.values.append(name)

    def reassign(self, indent: int) -> None:
        """Reassign a value made before (or an argument): both branches of an if, a loop's
        carried tensor."""
        name = self.choice(self.values)
        self.emit(indent, f"{name} = {self.expression(self.draw(st.integers(1, 2)))}")

    def block(self, indent: int, depth: int, size: int) -> None:
        for _ in range(self.draw(st.integers(1, size))):
            kinds = ["reassign", "in_place"] + (["if", "for"] if depth > 0 else []) + (
                ["break", "return", "raise"] if self.loop_vars else [])
            kind = self.choice(kinds)
            if kind == "reassign":
                self.reassign(indent)
            elif kind == "in_place":
                op = self.choice(["+", "-", "*", "//"] + (["&", "|"] if self.integral else []))
                templates = IN_PLACE if self.rank else IN_PLACE[:1] + IN_PLACE[2:]
                if self.square:
                    templates += ("x0.T[...] {op}= {e}",)
                template = self.choice(templates)
                self.emit(indent, template.format(op=op, e=self.expression(1)))
            elif kind == "if":
                test = self.choice([f"n > {self.draw(st.integers(0, 3))}",
                                    f"float({self.choice(self.values)}.sum()) > 0.0",
                                    f"bool(({self.choice(self.values)} > 0).any())"])
                self.emit(indent, f"if {test}:")
                self.block(indent + 1, depth - 1, 2)
                if self.draw(st.booleans()):
                    self.emit(indent, "else:")
                    self.block(indent + 1, depth - 1, 2)
            elif kind == "for":
                var = f"i{len(self.loop_vars)}"
                self.emit(indent, f"for {var} in range({self.choice(['n', '3', 'n, 4'])}):")
                self.loop_vars.append(var)
                self.block(indent + 1, depth - 1, 3)
                self.loop_vars.pop()
            else:
                test = self.choice([f"{self.loop_vars[-1]} == {self.draw(st.integers(0, 3))}",
                                    f"float({self.choice(self.values)}.max()) > 1.0"])
                self.emit(indent, f"if {test}:")
                statement = {"break": "break", "raise": "raise ValueError('fuzzed')",
                             "return": f"return {self.result()}"}[kind]
                self.emit(indent + 1, statement)

    def result(self) -> str:
        """Two values (a fixed arity: every return of the program has one type)."""
        return f"({self.choice(self.values[2:] or self.values)}, {self.choice(self.values)})"


@st.composite
def programs(draw) -> Program:
    rank = draw(st.sampled_from((0, 1, 1, 2, 2, 3)))
    square = rank >= 2 and draw(st.booleans())
    if square:
        base = (draw(st.sampled_from((0, 1, 3, 5))),) * rank
    else:
        base = tuple(draw(st.sampled_from((0, 1, 2, 3, 7, 40))) for _ in range(rank))
    second = base
    if rank and draw(st.booleans()):      # a broadcasting operand
        second = tuple(1 if draw(st.booleans()) else s for s in base)
    arguments = tuple(Argument(shape, draw(st.sampled_from(("C", "C", "F", "reversed"))),
                               draw(st.integers(0, 2**16))) for shape in (base, second))
    first = (draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES)))
    writer = ProgramWriter(draw, rank, square, all(np.dtype(d).kind in "biu" for d in first))
    for _ in range(draw(st.integers(1, 3))):
        writer.new_value(1)
    writer.block(1, 2, 4)
    writer.emit(1, f"return {writer.result()}")
    source = ("import numpy as np\nimport tsjit\n\n\n"
              "def program(x0: tsjit.Tensor, x1: tsjit.Tensor, n: int):\n"
              + "\n".join(writer.lines) + "\n")
    other = (draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES)))
    same_array = second == base and draw(st.integers(0, 5)) == 0
    n, m = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    layouts = tuple(draw(st.sampled_from(("C", "F", "reversed", "strided"))) for _ in range(2))
    return Program(source, arguments, same_array,
                   (first, first, first, other, first, first, first), (n, n, n, n, n, m, n),
                   draw(st.sampled_from(ERRSTATES)), (None,) * 6 + (layouts,))


def arguments_for(program: Program, dtypes: tuple[str, ...], n: int,
                  layouts: tuple[str, str] | None = None) -> list:
    arguments = program.arguments if layouts is None else tuple(
        dataclasses.replace(a, layout=layout) for a, layout in zip(program.arguments, layouts))
    x0 = arguments[0].make(dtypes[0])
    x1 = x0 if program.same_array else arguments[1].make(dtypes[1])
    return [x0, x1, n]


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")   # float16 arguments
def test_random_tensor_programs_match_numpy(tmp_path):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 20,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(programs())
    def check(program: Program) -> None:
        fn = load(program.source, tmp_path)
        first, _, _ = run(fn, arguments_for(program, program.dtypes[0], program.counts[0]))
        assume(first is not TypeError)     # an operand type NumPy has no loop for
        try:
            scripted = tsjit.script(fn)
        except tsjit.CompilationError as e:      # every generated program is valid script
            raise AssertionError(f"{e}\n--- program ---\n{program.source}") from None
        calls_match(fn, scripted, program)

    check()


def calls_match(fn, scripted, program: Program) -> None:
    """Every call of ``program`` (its dtypes and loop counts) gives ``scripted`` eager's
    results, reports and final arguments (test_fuzz_fusion's comparisons)."""
    for call, (dtypes, n, layouts) in enumerate(zip(program.dtypes, program.counts,
                                                    program.layouts)):
        want, want_args, want_reports = run(fn, arguments_for(program, dtypes, n, layouts),
                                            program.errstate)
        got, got_args, got_reports = run(scripted, arguments_for(program, dtypes, n, layouts),
                                          program.errstate)
        where = (f"call {call} {dtypes} n={n} layouts={layouts} errstate={program.errstate} "
                 f"same_array="
                 f"{program.same_array}\n--- program ---\n{program.source}")
        assert got_reports == want_reports, (got_reports, want_reports, where)
        if isinstance(want, type) or isinstance(got, type):
            assert got is want, (got, want, where)
        else:
            try:
                indistinguishable(got, want, False)
                for g, w in zip(got, want):
                    indistinguishable(g, w, False)
            except AssertionError as e:
                raise AssertionError(f"{e}\n{where}") from None
        assert aliasing(got, got_args) == aliasing(want, want_args), where
        for g, w in zip(got_args[:2], want_args[:2]):
            try:
                indistinguishable(g, w, False)
            except AssertionError as e:
                raise AssertionError(f"argument: {e}\n{where}") from None
