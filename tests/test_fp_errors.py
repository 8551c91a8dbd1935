"""NumPy's floating-point error semantics in fused kernels (issue 8, item 4).

A fused kernel collects the hardware flags of every thread that ran it; where NumPy's
error state does not ignore them, the group's ops re-run as NumPy ufuncs (fresh outputs)
or NumPy reports them on the first op that can raise them (arrays updated in place), so
scripted calls warn with NumPy's text, raise FloatingPointError or call the seterrcall
handler exactly where eager code does. Inputs that raise nothing must not raise flags
(no eager re-run): the stats' bailout count shows it.
"""
from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections.abc import Iterator

import numpy as np
import pytest
from _differential import assert_same
from _subprocess import child_environment

import tsjit
from tsjit import runtime


@pytest.fixture
def threads() -> Iterator[None]:
    before = runtime.get_num_threads()
    yield
    runtime.set_num_threads(before)


def divide_plus_one(a, b):
    return a / b + 1


def update_in_place(x, y):
    x += 1.0 / y
    return x


def overflowing_product(a, b):
    return a * b - a


def record(fn, *args, **errstate):
    """fn's result (or exception class) and the (category, message) of its warnings."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(**errstate):
        warnings.simplefilter("always")
        try:
            result = fn(*args)
        except FloatingPointError as error:
            result = (FloatingPointError, str(error).splitlines()[0])
    return result, [(w.category, str(w.message)) for w in caught]


def compiled(fn, *args, kernel: bool = True):
    """`fn` scripted and run on `args` until optimized (`kernel`: it runs a kernel)."""
    scripted = tsjit.script(fn)
    with warnings.catch_warnings():   # the warm-up's own warnings (log(1 - 2)) are not checked
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(3):   # profile, specialize, run the kernel
            scripted(*[a.copy() for a in args])
    assert (scripted.stats()["kernel_launches"] > 0) == kernel
    return scripted


def check(fn, args, kernel: bool = True, **errstate):
    scripted = compiled(fn, *[np.ones_like(a) for a in args], kernel=kernel)
    want_args, got_args = [a.copy() for a in args], [a.copy() for a in args]
    want, want_warnings = record(fn, *want_args, **errstate)
    got, got_warnings = record(scripted, *got_args, **errstate)
    assert got_warnings == want_warnings
    if isinstance(want, tuple) and want[0] is FloatingPointError:
        assert got == want
    else:
        assert_same(got, want)
    return scripted, want_warnings


@pytest.mark.parametrize("errstate", [{}, {"all": "warn"}, {"divide": "raise"},
                                      {"all": "ignore"}, {"invalid": "raise"}])
def test_division_by_zero_follows_errstate(errstate):
    a = np.linspace(-1, 1, 1001)
    b = np.ones(1001)
    b[[7, 500]] = 0.0   # 1/0 and 0/0
    check(divide_plus_one, (a, b), **errstate)


def test_default_errstate_warns_with_numpys_text():
    a, b = np.ones(100, np.float32), np.ones(100, np.float32)
    b[3] = 0
    _, warned = check(divide_plus_one, (a, b))
    assert warned == [(RuntimeWarning, "divide by zero encountered in divide")]


def test_overflow_and_invalid_name_their_ops():
    a = np.full(300, 3e38, np.float32)
    b = np.full(300, 10.0, np.float32)
    a[1] = np.inf
    _, warned = check(overflowing_product, (a, b), all="warn")
    assert (RuntimeWarning, "overflow encountered in multiply") in warned


def test_seterrcall_handler_is_called_as_eagerly():
    a, b = np.ones(50), np.ones(50)
    b[0] = 0.0
    calls = {"eager": [], "scripted": []}
    scripted = compiled(divide_plus_one, a, np.ones(50))
    for name, fn in (("eager", divide_plus_one), ("scripted", scripted)):
        with np.errstate(all="call", call=lambda kind, flag, name=name: calls[name].append(
                (kind, flag))):
            fn(a, b)
    assert calls["scripted"] == calls["eager"] == [("divide by zero", 1)]


@pytest.mark.parametrize("errstate", [{}, {"divide": "raise"}, {"all": "ignore"}])
def test_an_in_place_update_reports_as_eagerly(errstate):
    x = np.linspace(0, 1, 200)
    y = np.ones(200)
    y[50] = 0.0
    check(update_in_place, (x, y), **errstate)


def test_flags_raised_on_a_worker_thread_are_reported(threads):
    runtime.set_num_threads(2)
    n = 1 << 20
    a, b = np.ones(n), np.ones(n)
    b[-1] = 0.0   # the last block: claimed by whichever thread comes last
    _, warned = check(divide_plus_one, (a, b))
    assert warned == [(RuntimeWarning, "divide by zero encountered in divide")]


@pytest.mark.parametrize("n", [1, 63, 65, 1000])
def test_partial_vectors_raise_no_flags(n):
    """The tail of a compute-bound loop (fewer elements than a block) raises only its
    elements' flags: a masked vector loop computed 0/0 in its inactive lanes."""
    def sqrt_ratio(x, y):
        return np.sqrt(x * x) / y + x

    x, y = np.full(n, 2.0, np.float32), np.full(n, 3.0, np.float32)
    scripted = compiled(sqrt_ratio, x, y)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        result = scripted(x, y)
    assert_same(result, sqrt_ratio(x, y))
    assert scripted.stats()["bailouts"] == 0


def floor_divide_plus_one(a, b):
    return a // b + 1


def remainder_times_two(a, b):
    return np.remainder(a, b) * 2


def floor_divide_in_place(x, y):
    x //= y * 1
    return x


def row_sums_of_quotients(a, b):
    return np.sum(a // b, axis=-1)


INTEGER_ERRSTATES = [{}, {"divide": "raise"}, {"over": "raise"}, {"all": "ignore"},
                     {"all": "warn"}]


# (divisor, dtype): x // 0 and x % 0 report divide by zero; MIN // -1 overflows (not %)
INTEGER_CASES = [*[("zero", d) for d in (np.int8, np.int32, np.int64, np.uint8, np.uint64)],
                 *[("minus one", d) for d in (np.int8, np.int16, np.int32, np.int64)]]


@pytest.mark.parametrize("divisor, dtype", INTEGER_CASES)
@pytest.mark.parametrize("errstate", INTEGER_ERRSTATES)
@pytest.mark.parametrize("fn", [floor_divide_plus_one, remainder_times_two,
                                floor_divide_in_place])
def test_integer_errors_are_reported_as_eagerly(fn, divisor, dtype, errstate):
    """No instruction flags these integer errors: the kernel reports them itself."""
    a = np.arange(300).astype(dtype)
    b = np.ones(300, dtype)
    if divisor == "zero":
        b[[3, 200]] = 0
    else:
        a[100], b[100] = np.iinfo(dtype).min, -1
    _, warned = check(fn, (a, b), **errstate)
    name = "remainder" if fn is remainder_times_two else "floor_divide"
    expected = [(RuntimeWarning, f"divide by zero encountered in {name}")] \
        if divisor == "zero" else [] if fn is remainder_times_two \
        else [(RuntimeWarning, "overflow encountered in floor_divide")]
    if not errstate:
        assert warned == expected


@pytest.mark.parametrize("errstate", INTEGER_ERRSTATES)
def test_integer_errors_in_a_row_kernel_are_reported_as_eagerly(errstate):
    a = np.arange(3000, dtype=np.int64).reshape(10, 300)
    b = np.ones((10, 300), np.int64)
    b[4, 17] = 0
    a[7, 5], b[7, 5] = np.iinfo(np.int64).min, -1
    _, warned = check(row_sums_of_quotients, (a, b), **errstate)
    if not errstate:
        assert warned == [(RuntimeWarning, "divide by zero encountered in floor_divide"),
                          (RuntimeWarning, "overflow encountered in floor_divide")]


def test_integer_division_by_zero_calls_the_seterrcall_handler():
    a, b = np.arange(50), np.ones(50, np.int64)
    b[9] = 0
    calls = {"eager": [], "scripted": []}
    scripted = compiled(floor_divide_plus_one, a, np.ones(50, np.int64))
    for name, fn in (("eager", floor_divide_plus_one), ("scripted", scripted)):
        with np.errstate(all="call", call=lambda kind, flag, name=name: calls[name].append(
                (kind, flag))):
            fn(a, b)
    assert calls["scripted"] == calls["eager"] == [("divide by zero", 1)]


def assign_ratio(out, a, b):
    out[...] = a / b
    return out


def add_ratio_in_place(x, y, z):
    x += y / z
    return x


def ratio_into(a, b, c):
    np.divide(a * 1.0, b, out=c)
    return c


def lone_ratio_into(a, b, c):
    return np.divide(a, b, out=c)


def scale_in_place(x, y):
    x *= y * 1e300
    return x


def record_with_arguments(fn, args, **errstate):
    """record(), and each argument's contents afterwards."""
    result, warned = record(fn, *args, **errstate)
    return result, warned, [a.copy() for a in args]


@pytest.mark.parametrize("errstate", [{"all": "raise"}, {"divide": "raise"}, {}, {"all": "ignore"},
                                      {"all": "log"}])
@pytest.mark.parametrize("fn, target", [(assign_ratio, 0), (add_ratio_in_place, 0),
                                        (ratio_into, 2), (lone_ratio_into, 2)])
def test_in_place_writes_happen_exactly_when_they_do_eagerly(fn, target, errstate):
    """Eager `out[...] = a / b` and `x += y / z` raise before the target is written;
    `np.divide(a, b, out=c)` writes c, then raises."""
    n = 300
    numerator, divisor, target_array = np.linspace(0.0, 1.0, n), np.ones(n), np.full(n, 7.0)
    divisor[[5, 250]] = 0.0
    args = [target_array, numerator, divisor] if target == 0 else \
        [numerator, divisor, target_array]
    scripted = tsjit.script(fn)
    for _ in range(3):
        scripted(*[np.ones(n)] * 3)
    assert scripted.stats()["kernel_launches"] > 0 or fn is lone_ratio_into   # NumPy's call
    if "log" in errstate.values():
        errstate["call"] = _RaisingLog()
    want = record_with_arguments(fn, [a.copy() for a in args], **errstate)
    got = record_with_arguments(scripted, [a.copy() for a in args], **errstate)
    assert got[1] == want[1]
    for g, w in zip(got[2], want[2]):
        assert_same(g, w)
    if isinstance(want[0], tuple):
        assert got[0] == want[0]
    else:
        assert_same(got[0], want[0])


class _RaisingLog:
    """A seterrcall log object that raises (np.errstate(all="log") calls its write)."""

    def write(self, message: str) -> None:
        raise FloatingPointError(message.strip())


def test_a_handler_sees_the_target_as_eager_code_does():
    n = 100
    out, a, b = np.full(n, 7.0), np.ones(n), np.ones(n)
    b[3] = 0.0
    scripted = compiled(assign_ratio, out, a, np.ones(n))
    seen = {}
    for name, fn in (("eager", assign_ratio), ("scripted", scripted)):
        target = out.copy()
        with np.errstate(all="call", call=lambda *_, name=name, target=target: seen.setdefault(
                name, target.copy())):
            fn(target, a, b)
    assert_same(seen["scripted"], seen["eager"])
    assert (seen["eager"] == 7.0).all()


@pytest.mark.parametrize("errstate", [{"all": "raise"}, {}])
def test_an_in_place_op_that_overflows_writes_then_raises_as_eagerly(errstate):
    """`x *= y * 1e300` is np.multiply(x, t, out=x): x is written when the overflow of
    that multiply raises."""
    x, y = np.ones(64), np.ones(64)
    x[7] = 1e10
    scripted = compiled(scale_in_place, np.ones(64), np.ones(64))
    want = record_with_arguments(scale_in_place, [x.copy(), y.copy()], **errstate)
    got = record_with_arguments(scripted, [x.copy(), y.copy()], **errstate)
    assert got[1] == want[1]
    if isinstance(want[0], tuple):
        assert got[0] == want[0]
    assert_same(got[2][0], want[2][0])
    assert np.isinf(want[2][0][7])


def test_in_place_kernels_run_under_the_default_error_state():
    """The error state is looked at once per state object: the kernel runs, no bailout."""
    x, y, z = np.ones(64), np.ones(64), np.ones(64)
    scripted = compiled(add_ratio_in_place, x, y, z)
    before = scripted.stats()
    for _ in range(3):
        scripted(x, y, z)
    after = scripted.stats()
    assert after["kernel_launches"] == before["kernel_launches"] + 3
    assert after["bailouts"] == before["bailouts"]


def unused_quotient(x, y):
    t = x * 2.0
    r = t + 1.0
    q = t / y  # noqa: F841  (nothing uses q: it stays for its warning)
    return r


def unused_integer_quotient(x, y):
    t = x * 2
    r = t + 1
    q = t // y  # noqa: F841
    return r


def unused_row_sums(x, y):
    t = x * 1e306
    r = t - 1.0
    s = np.sum(t * y, axis=-1)  # noqa: F841
    return r


@pytest.mark.parametrize("errstate", [{}, {"all": "raise"}, {"all": "call"}])
@pytest.mark.parametrize("fn, dtype", [(unused_quotient, np.float64),
                                       (unused_integer_quotient, np.int64),
                                       (unused_row_sums, np.float64)])
def test_an_unused_op_warns_as_eagerly(fn, dtype, errstate):
    """Dead-code elimination keeps an op that may warn; the fuser must not take it into a
    kernel, which computes only the values its outputs need."""
    x = np.ones((4, 64), dtype)
    y = np.ones((4, 64), dtype) * (10 if fn is unused_row_sums else 1)
    y[2, 5] = 0
    if errstate.get("all") == "call":
        calls = []
        errstate["call"] = lambda *report: calls.append(report)
    _, warned = check(fn, (x, y), **errstate)
    if not errstate:
        assert len(warned) == 1


@pytest.mark.parametrize("errstate", [{}, {"all": "warn"}])
def test_a_float_floor_division_by_zero_raises_no_invalid_flag(errstate):
    """NumPy's x // 0.0 is x / 0.0 alone (divide by zero; invalid only for 0 // 0): the
    kernel's remainder of x by 0 raised invalid too, which an in-place kernel reported."""
    x, y = np.linspace(1.0, 2.0, 200), np.ones(200)
    y[7] = 0.0
    _, warned = check(floor_divide_in_place, (x, y), **errstate)
    assert warned == [(RuntimeWarning, "divide by zero encountered in floor_divide")]


def shifted(x, y):
    return (y - y) + x * 2.0


def shifted_row_sums(x, y):
    return np.sum((y - y) + x, axis=-1)


def shifted_column_sums(x, y):
    return np.sum((y - y) + x, axis=0)


def shift_in_place(x, y):
    x += y - y
    return x


# (function, x of the compiling calls, x and y of the call with no element)
EMPTY_CASES = [
    (shifted, (2, 3), (0, 3), (3,)),
    (shifted_row_sums, (2, 3), (0, 3), (3,)),
    (shifted_row_sums, (3, 2), (3, 0), (3, 1)),
    (shifted_column_sums, (3, 2), (3, 0), (3, 1)),
    (shifted_column_sums, (3, 3), (0, 3), (3,)),
    (shift_in_place, (2, 3), (0, 3), (3,)),
]


@pytest.mark.parametrize("errstate", [{}, {"invalid": "raise"}, {"all": "ignore"}])
@pytest.mark.parametrize("fn, compile_shape, x_shape, y_shape", EMPTY_CASES)
def test_ops_on_a_non_empty_operand_warn_when_the_result_is_empty(fn, compile_shape,
                                                                  x_shape, y_shape, errstate):
    """Eager NumPy computes `y - y` on y before broadcasting it against an empty x: inf - inf
    warns, though the kernel's iteration space has no element."""
    scripted = compiled(fn, np.ones(compile_shape), np.ones(y_shape))
    x, y = np.ones(x_shape), np.full(y_shape, np.inf)
    want, want_warnings = record(fn, x.copy(), y.copy(), **errstate)
    got, got_warnings = record(scripted, x.copy(), y.copy(), **errstate)
    assert got_warnings == want_warnings
    assert (got == want) if isinstance(want, tuple) else assert_same(got, want) is None
    if not errstate:
        assert want_warnings == [(RuntimeWarning, "invalid value encountered in subtract")]


@pytest.mark.parametrize("fn, compile_shape", [(fn, c) for fn, c, _, _ in EMPTY_CASES[:4]])
def test_a_call_with_every_operand_empty_runs_the_kernel(fn, compile_shape):
    """Only a non-empty operand sends the call to NumPy."""
    scripted = compiled(fn, np.ones(compile_shape), np.ones(compile_shape[-1:]))
    before = scripted.stats()
    x, y = np.ones((compile_shape[0], 0)), np.full(0, np.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same(scripted(x.copy(), y), fn(x.copy(), y))
    after = scripted.stats()
    assert after["kernel_launches"] > before["kernel_launches"]
    assert after["bailouts"] == before["bailouts"]


def where_of_equal_branches(x):
    return np.where(np.sqrt(x) > x, x, x)


def where_of_equal_computations(x):
    return np.where(np.sqrt(x) > 0, -x, -x)


def root_above_itself(x):
    t = np.sqrt(x)
    return (t > t) | (x > 0)


@pytest.mark.parametrize("errstate", [{}, {"invalid": "raise"}, {"all": "call"}])
@pytest.mark.parametrize("fn", [where_of_equal_branches, where_of_equal_computations,
                                root_above_itself])
@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_an_op_that_llvm_folds_keeps_the_errors_of_its_operands(fn, dtype, errstate):
    """select(c, a, a) is a and t > t is false to LLVM: the sqrt computing c or t went
    with the fold, and its invalid flag too (found by the fusion fuzzer)."""
    x = np.arange(-3, 61).astype(dtype)
    calls = []
    if errstate.get("all") == "call":
        errstate["call"] = lambda *report: calls.append(report)
    _, warned = check(fn, (x,), **errstate)
    if not errstate:
        assert warned == [(RuntimeWarning, "invalid value encountered in sqrt")]
    if calls:   # eager's, then the scripted function's
        assert calls == [("invalid value", 8)] * 2


def root_then_arctanh(a, c):
    t = np.sqrt(1.5 - a)
    u = np.arctanh(c - 0.5)      # no kernel op: NumPy's call, between the members of a group
    return t * 2.0 + u


def root_then_log(a, c):
    t = np.sqrt(1.5 - a)
    u = np.log(c)          # a kernel op, but alone: NumPy's call
    v = t * 2.0
    return v, u


@pytest.mark.parametrize("errstate", [{}, {"all": "raise"}, {"all": "call"}])
@pytest.mark.parametrize("fn, c", [(root_then_arctanh, 2.0), (root_then_log, 0.0)])
def test_errors_of_fused_ops_and_of_numpys_calls_come_in_program_order(fn, c, errstate):
    """A fused op may not move past a NumPy call that may report an error: eager code
    warns for the sqrt first (and raises there, or calls the handler first)."""
    a = np.full(64, 2.0)
    c = np.full(64, c)
    calls = []
    if errstate:
        errstate["call"] = lambda kind, flag: calls.append((kind, flag))
    # the group of sqrt would pass the log, alone: it is not fused
    _, warned = check(fn, (a, c), kernel=fn is root_then_arctanh, **errstate)
    if not errstate:
        assert warned[0] == (RuntimeWarning, "invalid value encountered in sqrt")
        assert len(warned) == 2
    if calls:
        assert calls[:2] == calls[2:] and calls[0] == ("invalid value", 8)


def outcome(fn, args, before_call=lambda: None):
    """What `fn(*args)` raises (its class and message) under warnings that are errors,
    and the arguments afterwards."""
    with warnings.catch_warnings():
        before_call()
        try:
            fn(*args)
            raised = None
        except RuntimeWarning as warning:
            raised = (type(warning), str(warning).splitlines()[0])
    return raised, [a.copy() for a in args]


@pytest.mark.parametrize("when", ["before", "after a call"])
@pytest.mark.parametrize("fn", [add_ratio_in_place, assign_ratio])
def test_a_warning_made_an_error_stops_before_the_write_as_eagerly(fn, when):
    """Under warnings.simplefilter("error") (pytest's -W error) eager `x += y / z` raises
    RuntimeWarning from the divide before x is written; the kernel wrote x, then warned.
    The filter may come while a state without it is known (the list grows)."""
    n = 64
    scripted = compiled(fn, *[np.ones(n)] * 3)
    results = []
    for f in (fn, scripted):
        args = [np.full(n, 7.0), np.ones(n), np.ones(n)]
        args[2][5] = 0.0

        def make_errors(f=f):
            if when != "before":
                f(*[np.ones(n)] * 3)
            warnings.simplefilter("error")

        results.append(outcome(f, args, make_errors))
    (got, got_args), (want, want_args) = results[1], results[0]
    assert want == (RuntimeWarning, "divide by zero encountered in divide")
    assert got == want
    for g, w in zip(got_args, want_args):
        assert_same(g, w)


def test_an_error_filter_of_another_category_keeps_the_kernel():
    x, y, z = np.ones(64), np.ones(64), np.ones(64)
    scripted = compiled(add_ratio_in_place, x, y, z)
    before = scripted.stats()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        warnings.filterwarnings("error", message="something else", category=UserWarning)
        scripted(x, y, z)
    after = scripted.stats()
    assert after["kernel_launches"] == before["kernel_launches"] + 1
    assert after["bailouts"] == before["bailouts"]


def two_quotients_in_place(x, y, z):
    x += y / z + z / y
    return x


def quotient_and_log_in_place(x, y, z):
    x += y / z + np.log(y - 2.0)
    return x


@pytest.mark.parametrize("errstate", [{}, {"all": "warn"}])
@pytest.mark.parametrize("fn", [two_quotients_in_place, quotient_and_log_in_place])
def test_an_in_place_kernel_reports_each_ops_errors_as_eagerly(fn, errstate):
    """The kernel overwrote x, so its ops cannot all run again; those that do not read x
    do, which tells which of them raised what: eager code warns once per op (under the
    "always" filter) and names it (log, not the divide that could have raised invalid)."""
    x, y, z = np.linspace(0.0, 1.0, 100), np.full(100, 3.0), np.full(100, 2.0)
    y[10], z[20] = 0.0, 0.0
    _, warned = check(fn, (x, y, z), **errstate)
    assert len(warned) == 2


_FIRST_CALLS_UNDER_WARN = '''
import json
import warnings

import numpy as np

with np.errstate(all="warn"), warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import tsjit

    def program(x):
        return np.tanh(x) + np.exp(x) + np.log1p(x) + np.expm1(x)

    scripted = tsjit.script(program)
    for dtype in ("float16", "float32", "float64"):
        x = np.linspace(0.5, 2.0, 100).astype(dtype)
        for _ in range(3):
            scripted(x)
            program(x)
print(json.dumps([str(w.message) for w in caught]))
'''


def test_compiling_under_the_callers_error_state_adds_no_warning(tmp_path):
    """A fresh process (nothing cached) imports tsjit and compiles under
    np.errstate(all="warn"): probing NumPy's loops (tiny / 3 underflows) and computing
    constants must not warn; the program itself raises no error."""
    script = tmp_path / "first_calls.py"
    script.write_text(_FIRST_CALLS_UNDER_WARN)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env=child_environment(TSJIT_DISK_CACHE="0",
                                                             TSJIT_BACKGROUND_COMPILE="0"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def log_then_floor_quotient(x):
    y = np.log(x)         # float16 for bools, float64 for int64: log(0) divides by zero
    x // x                # an integer division by zero, reported after the log's
    return y + 1


@pytest.mark.parametrize("dtype", [np.bool_, np.int64])
def test_an_integer_input_computed_in_float_reports_in_program_order(dtype):
    """np.log of an integer or bool array reports floating-point errors (its loop is a
    float one): it does not move past x // x, whose own report must come second, as
    eagerly. Of int64s, x // x joins the kernel (its ops then report in program order);
    of bools it is no kernel op, and the log stays before it, unfused."""
    x = np.array([0, 1, 2, 0], dtype=dtype)
    _, warned = check(log_then_floor_quotient, (x,), kernel=dtype is np.int64)
    assert [str(m) for _, m in warned] == ["divide by zero encountered in log",
                                          "divide by zero encountered in floor_divide"]


def ops_reading_the_target(x, y):
    x / (x - y)           # x = y: divide by zero; unused, but eager code warns
    u = np.sqrt(x)        # x < 0: invalid
    x += y
    return u


@pytest.mark.parametrize("errstate", [{}, {"all": "warn"}, {"invalid": "raise"}])
@pytest.mark.parametrize("bad", [-2.0, 1.0, np.inf])
def test_errors_of_ops_reading_an_array_written_in_place_name_their_op(bad, errstate):
    """Two ops that may raise read x, which x += y overwrites: after a kernel holding all
    three neither could run again to tell which raised (sqrt(-2) is the sqrt's invalid,
    inf / inf the divide's), so the fuser keeps the write out of their kernel."""
    x, y = np.linspace(2.0, 3.0, 100), np.ones(100)
    x[40] = bad
    scripted, _ = check(ops_reading_the_target, (x, y), **errstate)
    graph = str(scripted.graph_for(x, y))
    group = graph[graph.index("with prim::FusionGroup"):].split("with prim::FallbackGraph")[0]
    assert "aten::sqrt" in group or "numpy::sqrt" in group
    assert "aten::iadd" not in group


def log_of_isnan(x):
    return np.log(np.isnan(x))


def log2_of_isinf_in_float32(x):
    return np.log2(np.isinf(x).astype(np.float32)) * 2.0


def root_where_isnan(x, y):
    return np.where(np.isnan(x), np.sqrt(y), 1.0)


def isnan_and_positive_root(x, y):
    return np.isnan(x) & (np.sqrt(y) > 0)


@pytest.mark.parametrize("errstate", [{}, {"divide": "raise", "invalid": "raise"},
                                      {"all": "call"}])
@pytest.mark.parametrize("fn", [log_of_isnan, log2_of_isinf_in_float32, root_where_isnan,
                                isnan_and_positive_root])
@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.uint8])
def test_an_op_of_a_value_constant_to_llvm_keeps_numpys_errors(fn, dtype, errstate):
    """np.isnan of an integer or bool array is False everywhere, a constant to LLVM: it
    folded np.log of it to -inf, and NumPy's divide-by-zero went with the fold (found by
    the fusion fuzzer); np.where and & decided by such a constant dropped the sqrt of the
    operand they no longer read, and its invalid flag. Such ops are not fused."""
    x = np.ones(67, dtype)
    args = (x,) if fn.__code__.co_argcount == 1 else (x, np.linspace(-3.0, 3.0, 67))
    calls = {"eager": [], "scripted": []}
    scripted = tsjit.script(fn)
    with np.errstate(all="ignore"):
        for _ in range(3):
            scripted(*args)
    for name, f in (("eager", fn), ("scripted", scripted)):
        state = dict(errstate)
        if state.get("all") == "call":
            state["call"] = lambda *report, name=name: calls[name].append(report)
        calls[name].append(record(f, *args, **state))
    (want, want_warnings), (got, got_warnings) = calls["eager"].pop(), calls["scripted"].pop()
    assert got_warnings == want_warnings
    assert calls["scripted"] == calls["eager"]
    if isinstance(want, tuple) and want[0] is FloatingPointError:
        assert got == want
    else:
        assert_same(got, want)
    if not errstate:
        assert want_warnings   # the program reports an error eagerly
