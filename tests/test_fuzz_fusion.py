"""Differential fuzzing of the fuser: random elementwise programs, eager against optimized.

Hypothesis writes random programs as Python source (op DAGs over bool, signed and
unsigned integer arrays of every width, float16, float32 and float64 arrays with
broadcasting shapes, C-, Fortran-ordered and strided
inputs, NaN, infinities and signed zeros, Python and NumPy scalar operands, in-place
updates of an argument or an assignment into it), scripts each with tsjit and calls it
with fresh arguments: a first call (which specializes), optimized calls, a call with
other dtypes (a guard fails, a fallback specializes) and a call with the first types
again.  Every result, every exception class and every argument's final contents must
match NumPy's (dtype, shape, which results are which arguments or share their memory):
bitwise for arithmetic,
comparisons, casts and sqrt, within 4 ulps for transcendental functions (whose results
the generator never feeds into other ops, so errors cannot grow); NaN where NumPy has NaN,
with NumPy's bits (sign and payload). Where two NaNs meet in a commutative op, NumPy's own
NaN depends on its loop (x86 gives the first operand's, but its compiler commuted some
loops: on AVX2 the vector loops' tails and broadcast second operands): there the kernel's
NaN may be the one NumPy gives computing the program one element at a time. Each program
runs under a drawn NumPy error state (default, all "warn", "ignore", "raise" or "call"):
the warnings (category and message), the FloatingPointError and the seterrcall handler's
calls must be eager's.

A few examples run in CI; a long run:

    TSJIT_FUZZ_EXAMPLES=5000 python -m pytest tests/test_fuzz_fusion.py -q
"""
from __future__ import annotations

import functools
import importlib.util
import itertools
import os
import sys
import warnings
from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tsjit

EXAMPLES = int(os.environ.get("TSJIT_FUZZ_EXAMPLES", "25"))
DTYPES = ("bool", "int32", "int64", "float32", "float64", "int8", "uint8", "int16", "uint16",
          "uint32", "uint64", "float16")
# NaNs of both signs, one with a payload: results must carry NumPy's NaN bits.
PAYLOAD_NAN = float(np.array(0x7FF8000000000123, dtype=np.uint64).view(np.float64))
FLOAT_SPECIALS = (0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, PAYLOAD_NAN, 1e-40, -1e30, 0.5,
                  -2.25, 3.0)
# NumPy error states a program runs under: NumPy's default (warn, under ignored), every
# kind warned, ignored, raised, or reported to a seterrcall handler.
ERRSTATES = ("default", "warn", "ignore", "raise", "call")

# fmax's sign on a +0/-0 tie is NumPy's loop position (the second operand in its vector
# loop, the first at position 0 and in the tail): "+ 0.0" makes every zero +0.
EXACT_BINARY = ("{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / {b}", "{a} // {b}", "{a} % {b}",
                "{a} < {b}", "{a} >= {b}", "{a} == {b}", "{a} != {b}", "{a} & {b}",
                "{a} | {b}", "{a} ^ {b}", "np.maximum({a}, {b})", "np.minimum({a}, {b})",
                "np.fmax({a}, {b}) + 0.0", "np.copysign({a}, {b})")
EXACT_UNARY = ("-{a}", "~{a}", "np.abs({a})", "np.sqrt({a})", "np.floor({a})", "np.ceil({a})",
               "np.isnan({a})", "np.isfinite({a})", "{a} ** 2", "{a} ** 0.5",
               "{a}.astype(np.float32)", "{a}.astype(np.int32)", "{a}.astype(np.float64)",
               "np.logical_not({a})", "np.sign({a})", "np.clip({a}, -2, 3.5)",
               "{a}.clip(0.5, None)", "np.where({a}, 1.5, -1)")
APPROXIMATE_UNARY = ("np.exp({a})", "np.log({a})", "np.tanh({a})", "np.sin({a})",
                     "np.expm1({a})", "np.log1p({a})", "{a} ** 3")


@dataclass(frozen=True)
class Argument:
    """How to build one array argument, so that every call gets a fresh, equal one."""

    dtype: str
    shape: tuple[int, ...]
    layout: str          # C, F, strided, transposed, reversed
    seed: int

    def make(self, dtype: str | None = None) -> np.ndarray:
        dtype = dtype or self.dtype
        rng = np.random.default_rng(self.seed)
        n = max(1, int(np.prod(self.shape)))
        if dtype == "bool":
            values = rng.integers(0, 2, n).astype(bool)
        elif np.dtype(dtype).kind in "iu":
            values = rng.integers(-40, 41, n).astype(dtype)
        else:
            values = np.where(rng.random(n) < 0.3, rng.choice(FLOAT_SPECIALS, n),
                              rng.standard_normal(n) * 10)
            with np.errstate(over="ignore"):    # float16: -1e30 is -inf
                values = values.astype(dtype)
        values = values[:int(np.prod(self.shape))]
        if self.layout == "F":
            return np.asfortranarray(values.reshape(self.shape))
        if self.layout == "strided":
            return np.repeat(values.reshape(self.shape), 2, axis=-1)[..., ::2]
        if self.layout == "transposed":
            return np.ascontiguousarray(values.reshape(self.shape[::-1])).T
        if self.layout == "reversed":   # every axis walked backwards
            return values.reshape(self.shape)[(slice(None, None, -1),) * len(self.shape)]
        return values.reshape(self.shape)


@dataclass(frozen=True)
class Program:
    source: str
    arguments: tuple[Argument, ...]
    scalar: float | int | None
    other_dtypes: tuple[str, ...]
    approximate: tuple[bool, ...]     # per result
    errstate: str                     # see ERRSTATES


@st.composite
def programs(draw) -> Program:
    rank = draw(st.integers(1, 2))
    base = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    n_arrays = draw(st.integers(1, 3))
    arguments = []
    for i in range(n_arrays):
        shape = base
        if i and draw(st.booleans()):     # a broadcasting operand
            shape = tuple(1 if draw(st.booleans()) else s for s in base)[
                draw(st.integers(0, rank - 1)):]
        layout = draw(st.sampled_from(("C", "F", "strided", "transposed")))
        arguments.append(Argument(draw(st.sampled_from(DTYPES)), shape, layout,
                                  draw(st.integers(0, 2**16))))
    scalar = draw(st.one_of(st.none(), st.sampled_from((2, -3, 0.5, -1.25, 7.0, np.float32(1.5),
                                                          np.int32(-2), np.float64(0.25)))))
    names = [f"x{i}" for i in range(n_arrays)]
    params = [f"x{i}: tsjit.Tensor" for i in range(n_arrays)]
    if scalar is not None:
        kind = "tsjit.Tensor" if isinstance(scalar, np.generic) else type(scalar).__name__
        params.append(f"s: {kind}")
    operands = [*names, *(["s"] if scalar is not None else [])]
    constants = ("2", "0.5", "-1", "3.0", "True")
    lines, exact, approximate = [], list(names), []
    for k in range(draw(st.integers(2, 7))):
        a = draw(st.sampled_from(exact))
        kind = draw(st.sampled_from(("binary", "binary", "unary", "approximate", "where")))
        if kind == "binary":
            b = draw(st.sampled_from(exact + operands[n_arrays:] + list(constants)))
            a, b = (b, a) if draw(st.booleans()) and b in exact else (a, b)
            expr = draw(st.sampled_from(EXACT_BINARY)).format(a=a, b=b)
        elif kind == "unary":
            expr = draw(st.sampled_from(EXACT_UNARY)).format(a=a)
        elif kind == "where":
            b, c = draw(st.sampled_from(exact)), draw(st.sampled_from(exact + list(constants)))
            expr = f"np.where({a} > {b}, {b}, {c})"
        else:
            expr = draw(st.sampled_from(APPROXIMATE_UNARY)).format(a=a)
        lines.append(f"    t{k} = {expr}")
        (approximate if kind == "approximate" else exact).append(f"t{k}")
    # Some values may go unused: an op that may warn or raise stays (dead-code
    # elimination keeps what may raise), and its reports must be eager's.
    computed = [name for name in (*exact, *approximate) if name not in names]
    results = [name for name in computed if draw(st.integers(0, 3))]
    assume(results)
    if draw(st.booleans()):     # an in-place update of the first argument
        op = draw(st.sampled_from(("+=", "*=", "-=", "[...] =")))
        lines.append(f"    x0{' ' if op[0] != '[' else ''}{op} "
                     f"{draw(st.sampled_from(exact[1:] + list(constants)))}")
        if draw(st.booleans()):   # the updated argument itself is a result
            results.append("x0")
    source = (f"import numpy as np\nimport tsjit\n\n\ndef program({', '.join(params)}):\n"
              + "\n".join(lines) + f"\n    return ({', '.join(results)},)\n")
    other = tuple(draw(st.sampled_from(DTYPES)) for _ in arguments)
    errstate = draw(st.sampled_from(ERRSTATES))
    return Program(source, tuple(arguments), scalar, other,
                   tuple(r in approximate for r in results), errstate)


_modules = itertools.count()


def load(source: str, directory) -> object:
    """The function `program` of `source`, imported from a file (tsjit reads the source)."""
    name = f"_fuzz_program_{next(_modules)}"
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.program


def run(fn, args: list, errstate: str = "ignore") -> tuple[object, list, list]:
    """(results or the exception class, the arguments afterwards, the floating-point
    reports: (category, message) of each warning, or (kind, flag) of each seterrcall
    call) under the NumPy error state `errstate` (see ERRSTATES)."""
    reports: list = []
    modes = {"default": {}, "call": {"all": "call", "call": lambda *r: reports.append(r)}}
    with warnings.catch_warnings(record=True) as caught, \
            np.errstate(**modes.get(errstate, {"all": errstate})):
        warnings.simplefilter("always")
        try:
            result = fn(*args)
        except Exception as e:   # the class is compared
            result = type(e)
    reports += [(w.category, str(w.message)) for w in caught]
    return result, args, reports


def indistinguishable(got, want, approximate: bool, one_at_a_time=None) -> None:
    """``one_at_a_time()``: ``want`` computed one element at a time, where NumPy's NaN
    may differ from its loop's (see the module docstring)."""
    assert type(got) is type(want), (got, want)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape, got.strides) == (want.dtype, want.shape, want.strides)
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[want.dtype.itemsize]
    differ = nan & (got.view(ints) != want.view(ints))    # NaN bits
    if differ.any() and one_at_a_time is not None:
        one = np.asarray(one_at_a_time()).view(ints)
        differ &= ~((one != want.view(ints)) & (got.view(ints) == one))
    assert not differ.any(), (got[differ].view(ints), want[differ].view(ints))
    g, w = got[~nan].view(ints).astype(np.int64), want[~nan].view(ints).astype(np.int64)
    if not approximate:
        np.testing.assert_array_equal(g, w)    # bitwise, signed zeros included
        return
    g = np.where(g < 0, np.iinfo(ints).min - g, g)
    w = np.where(w < 0, np.iinfo(ints).min - w, w)
    assert np.abs(g - w).max(initial=0) <= 4, (got, want)


def one_element_at_a_time(fn, program: Program, dtypes, want: tuple,
                          want_args: list) -> tuple[list, list]:
    """The program's results and final arguments (shaped as ``want``, ``want_args``),
    each element computed by a call on one-element views: NumPy's one-element loops."""
    args = arguments_for(program, dtypes)
    shape = np.broadcast_shapes(*(a.shape for a in args if isinstance(a, np.ndarray)))
    results = [np.empty_like(w) for w in want]
    finals = [np.empty_like(a) for a in want_args if isinstance(a, np.ndarray)]

    def at(index: tuple, dims: tuple) -> tuple:   # a broadcast operand's element
        return tuple(i if n > 1 else 0 for i, n in zip(index[len(index) - len(dims):], dims))

    for index in np.ndindex(shape):
        sliced = [a[tuple(slice(i, i + 1) for i in at(index, a.shape))]
                  if isinstance(a, np.ndarray) else a for a in arguments_for(program, dtypes)]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = fn(*sliced)
        for result, value in zip(results, out):
            result[at(index, result.shape)] = np.asarray(value).reshape(-1)[0]
        for final, value in zip(finals, sliced):
            final[at(index, final.shape)] = value.reshape(-1)[0]
    return results, finals


def aliasing(results, args: list) -> list[list[bool]]:
    """Which of the results and arguments are one object, and which share memory."""
    values = [*(results if isinstance(results, tuple) else ()), *args]
    return [[(a is b, isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and
              np.shares_memory(a, b)) for b in values] for a in values]


def arguments_for(program: Program, dtypes: tuple[str, ...] | None = None) -> list:
    args = [a.make(None if dtypes is None else d)
            for a, d in zip(program.arguments, dtypes or program.other_dtypes)]
    return args + ([program.scalar] if program.scalar is not None else [])


def test_random_elementwise_programs_match_numpy(tmp_path):
    launches = []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 25,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(programs())
    def check(program: Program) -> None:
        fn = load(program.source, tmp_path)
        expected, _, _ = run(fn, arguments_for(program))
        assume(not (isinstance(expected, type) and issubclass(expected, TypeError)))
        scripted = tsjit.script(fn)
        for dtypes in (None, None, None, program.other_dtypes, None):
            want, want_args, want_reports = run(fn, arguments_for(program, dtypes),
                                                program.errstate)
            got, got_args, got_reports = run(scripted, arguments_for(program, dtypes),
                                              program.errstate)
            assert got_reports == want_reports, (program.source, program.errstate)
            assert aliasing(got, got_args) == aliasing(want, want_args), program.source
            reference = functools.cache(lambda dtypes=dtypes, want=want, want_args=want_args:
                                        one_element_at_a_time(fn, program, dtypes, want,
                                                              want_args))
            if isinstance(want, type):
                assert got is want, (program.source, got, want)
            else:
                indistinguishable(got, want, False)
                for j, (g, w, approximate) in enumerate(zip(got, want, program.approximate)):
                    indistinguishable(g, w, approximate,
                                      lambda j=j, reference=reference: reference()[0][j])
            for k, (g, w) in enumerate(zip(got_args, want_args)):
                indistinguishable(g, w, False,
                                  lambda k=k, reference=reference: reference()[1][k])
        launches.append(scripted.stats()["kernel_launches"])

    check()
    # the generator must exercise the fuser, not just the interpreter
    assert sum(n > 0 for n in launches) >= len(launches) // 3, launches
