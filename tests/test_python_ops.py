"""The ops of Python's builtins, `math`, and str / list / dict / tuple methods.

Each case resolves a Python call the way the front end does (by the function object, or
by the receiver's type and the method name), passes every parameter as the front end
does (defaults filled in), runs the op's template, and checks it against the direct
Python call: the same result (type, value, sign of zero, nan), or the same exception
class, and the same mutation of the arguments.  The op's type rule must give a static
type that the actual result conforms to.
"""
from __future__ import annotations

import copy
import math
import operator
import re
from dataclasses import dataclass, field

import numpy as np
import pytest

from tsjit.interpreter.rendering import Renderer
from tsjit.ir.types import (
    TENSOR,
    AnyType,
    BoolType,
    ClassType,
    DictType,
    FloatType,
    IntType,
    IterableType,
    ListType,
    NoneType,
    OptionalType,
    StrType,
    TensorType,
    TupleType,
    Type,
    UnionType,
    VarTupleType,
)
from tsjit.ops import OPS, OpTypeError, lookup_method, lookup_python
from tsjit.ops.python_calls import KEYWORDS
from tsjit.ops.registry import NO_DEFAULT, infer_types

DICT_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))
ITERATORS = (type(reversed([])), type(reversed("")), type(reversed(range(0))))
NAMESPACE = {"math": math, "_operator": operator, "np": np}
NAN, INF = math.nan, math.inf


# ---- values, types and the comparison of results


def type_of(value: object) -> Type:
    """The IR type the front end gives a Python value (homogeneous containers)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return TENSOR
    if isinstance(value, (bool, int, float, str)) or value is None:
        return {bool: BoolType, int: IntType, float: FloatType, str: StrType,
                type(None): NoneType}[type(value)]
    if isinstance(value, list):
        return ListType(type_of(value[0]) if value else AnyType)
    if isinstance(value, dict):
        k, v = next(iter(value.items())) if value else (None, None)
        return DictType(type_of(k), type_of(v)) if value else DictType(AnyType, AnyType)
    if isinstance(value, tuple):
        return TupleType(tuple(map(type_of, value)))
    raise TypeError(f"no IR type for {value!r}")


def conforms(value: object, t: Type) -> bool:
    """Whether a run-time value is a value of static type `t`."""
    if t == AnyType:
        return True
    if isinstance(t, OptionalType):
        return value is None or conforms(value, t.elem)
    if isinstance(t, UnionType):
        return any(conforms(value, o) for o in t.options)
    if isinstance(t, TensorType):
        return isinstance(value, (np.ndarray, np.generic))
    if isinstance(t, ListType):
        return isinstance(value, list) and all(conforms(v, t.elem) for v in value)
    if isinstance(t, VarTupleType):
        return isinstance(value, tuple) and all(conforms(v, t.elem) for v in value)
    if isinstance(t, TupleType):
        return isinstance(value, tuple) and len(value) == len(t.elems) and all(
            map(conforms, value, t.elems))
    if isinstance(t, IterableType):
        return isinstance(value, ITERATORS) if t.kind == "reversed" else (
            type(value).__name__ == t.kind and all(conforms(v, t.elem) for v in value))
    if isinstance(t, DictType):
        return isinstance(value, dict) and all(
            conforms(k, t.key) and conforms(v, t.value) for k, v in value.items())
    return type(value) is {IntType: int, FloatType: float, BoolType: bool, StrType: str,
                           NoneType: type(None)}[t]


def same(a: object, b: object) -> bool:
    """Indistinguishable results: same types, values, signs of zero and nans."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1.0, a) == math.copysign(1.0, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, DICT_VIEWS + ITERATORS):   # by contents (dict_values compare by
        return same(list(a), list(b))           # identity, iterators not at all)
    if isinstance(a, (np.ndarray, np.generic)):
        return a.dtype == b.dtype and np.shape(a) == np.shape(b) and np.array_equal(
            a, b, equal_nan=a.dtype.kind in "fc")
    return a == b


def outcome(thunk):
    try:
        return "value", thunk()
    except Exception as e:  # noqa: BLE001 - the exception class is the result compared
        return "raises", type(e)


# ---- a call as the front end makes it


@dataclass
class Call:
    """A Python call `fn(*args, **kwargs)`, or `receiver.method(*args, **kwargs)`."""

    fn: object
    args: tuple
    kwargs: dict = field(default_factory=dict)
    method: str | None = None
    types: tuple | None = None       # the static types of the inputs, when not type_of's
    imprecise: Type | None = None    # the documented static type the value does not have

    @property
    def op(self):
        if self.method is None:
            return lookup_python(self.fn)
        receiver = self.types[0] if self.types else type_of(self.args[0])
        return lookup_method(receiver, self.method)

    def inputs(self) -> list:
        """Every parameter as a node input, in signature order, defaults filled in."""
        rest, kwargs, values = list(self.args), dict(self.kwargs), []
        for p in self.op.params:
            if p.variadic:
                values += rest
                rest = []
            elif p.kwvariadic:
                values += [kwargs.pop(k) for k in self.attrs().get(KEYWORDS, ())]
            elif rest and not p.kwonly:
                values.append(rest.pop(0))
            elif p.name in kwargs:
                values.append(kwargs.pop(p.name))
            else:
                assert p.default is not NO_DEFAULT, f"{self}: {p.name} missing"
                values.append(p.default)
        assert not rest and not kwargs, f"{self}: {rest} {kwargs} left over"
        return values

    def attrs(self) -> dict:
        """The node attributes of the call: the names a `**kwargs` parameter takes."""
        if not any(p.kwvariadic for p in self.op.params):
            return {}
        named = {p.name for p in self.op.params}
        return {KEYWORDS: tuple(k for k in self.kwargs if k not in named)}

    def input_types(self) -> list[Type]:
        given = list(self.types or ())
        return given + [type_of(v) for v in self.inputs()[len(given):]]

    def direct(self):
        if self.method is None:
            return self.fn(*self.args, **self.kwargs)
        receiver, *args = self.args
        return getattr(receiver, self.method)(*args, **self.kwargs)

    def __str__(self) -> str:
        name = self.method or getattr(self.fn, "__name__", "?")
        return f"{name}{self.args!r}{self.kwargs or ''}"


def call(fn, *args, **kwargs) -> Call:
    return Call(fn, args, kwargs)


def method(receiver, name, *args, **kwargs) -> Call:
    return Call(None, (receiver, *args), kwargs, method=name)


def typed(c: Call, *types: Type) -> Call:
    c.types = types
    return c


def imprecise(c: Call, static: Type) -> Call:
    """A call whose result Python types by value (`2 ** -1` is a float, `(-1.0) ** 0.5` a
    complex): the rule gives `static`, the documented type of the usual case."""
    c.imprecise = static
    return c


def run_template(op, inputs: list, attrs: dict | None = None):
    names = [f"a{i}" for i in range(len(inputs))]
    renderer = Renderer()       # attributes rendered as the interpreter renders them
    code = op.emit_python(names, renderer.attributes(attrs or {}, op.attrs.get("names", ())))
    scope = {**dict(zip(names, inputs)), **renderer.bound}
    try:
        compiled = compile(code, op.name, "eval")
    except SyntaxError:
        exec(compile(code, op.name, "exec"), NAMESPACE, scope)
        return None
    return eval(compiled, NAMESPACE, scope)




def check(c: Call) -> None:
    op = c.op
    assert op is not None, f"no op for {c}"
    eager_args, script_inputs = copy.deepcopy(c.args), copy.deepcopy(c.inputs())
    kind, expected = outcome(Call(c.fn, eager_args, c.kwargs, c.method).direct)
    got_kind, got = outcome(lambda: run_template(op, script_inputs, c.attrs()))
    assert got_kind == kind, f"{c}: {got_kind} {got!r}, eager {kind} {expected!r}"
    assert got is expected if kind == "raises" else same(got, expected), (
        f"{c}: {got!r} != {expected!r}")
    for before, after in zip(eager_args, script_inputs):
        assert same(after, before), f"{c}: argument mutated differently"
    out_types = infer_types(op, c.input_types(), c.attrs())
    if c.imprecise is not None:
        assert out_types == [c.imprecise] and not conforms(expected, c.imprecise)
    elif kind == "value":
        assert conforms(expected, out_types[0]) if out_types else expected is None, (
            f"{c}: {expected!r} is not a {out_types}")


# ---- the cases

LI, LF, LS, DSI = ListType(IntType), ListType(FloatType), ListType(StrType), DictType(
    StrType, IntType)
ARRAY = np.array([1.5, -2.5, 0.0])
INTS = np.array([3, -7, 0], dtype=np.int32)

BUILTIN_CASES = [
    call(len, [1, 2, 3]), call(len, ""), call(len, {"a": 1}), call(len, (1, "x")),
    call(len, np.zeros((4, 2))), call(len, np.float32(1.0)),
    call(abs, -3), call(abs, True), call(abs, -0.0), call(abs, -INF), call(abs, NAN),
    call(abs, INTS), call(abs, np.float32(-1.5)),
    call(min, 3, -1), call(min, 2.5, -0.0, 7.0), call(min, 0.0, -0.0), call(min, NAN, 1.0),
    call(min, 1.0, NAN), call(min, "b", "a"), call(min, [3, 1, 2]), call(min, []),
    call(min, "zebra"), call(min, (1, 5)), call(min, [[2, 1], [1, 9]]),
    call(min, np.float32(2), np.float32(-1)), call(min, INTS),
    call(max, 3, -1), call(max, -0.0, 0.0), call(max, [0.5, INF]), call(max, {"a": 1, "z": 0}),
    call(max, ["pear", "fig"]), call(max, []),
    imprecise(call(min, 1, 2.5), FloatType), imprecise(call(max, np.float32(1), 2.0), TENSOR),
    imprecise(typed(call(sum, []), LF), FloatType),
    call(sum, [1, 2, 3]), call(sum, [0.1, 0.2, 0.3]), call(sum, []), call(sum, [True, True]),
    call(sum, [1, 2], 0.5), typed(call(sum, [[1], [2]], []), ListType(LI), LI),
    call(sum, [INF, -INF]),
    call(sum, INTS), call(sum, [np.float32(1), np.float32(2)]),
    call(round, 2.5), call(round, -2.5), call(round, 3.5), call(round, -0.4), call(round, 7),
    call(round, 2.675, 2), call(round, -0.4, 0), call(round, 1234, -2), call(round, INF),
    call(round, NAN), call(round, 0.5, None), call(round, np.float32(2.5)),
    call(round, np.float64(2.567), 2), call(round, ARRAY), call(round, True),
    call(divmod, 7, 2), call(divmod, -7, 2), call(divmod, 7, -2), call(divmod, 7.5, -2.0),
    call(divmod, -0.0, 1.0), call(divmod, 1, 0), call(divmod, 1.0, 0.0),
    call(divmod, INTS, 2),
    call(pow, 2, 10), call(pow, 2.0, 0.5), call(pow, -8, 3), call(pow, 0, -1),
    call(pow, 3, 4, 5), call(pow, INTS, 2), call(pow, 7, 2, 0),
    imprecise(call(pow, 2, -1), IntType), imprecise(call(pow, -1.0, 0.5), FloatType),
    call(int, 2.7), call(int, -2.7), call(int, -0.5), call(int, 1e10), call(int, True),
    call(int, "42"), call(int, " -7 "), call(int, "4.5"), call(int, NAN), call(int, INF),
    call(int, "ff", 16), call(int, "0x1f", 0), call(int, np.float32(-3.9)),
    call(int, np.array(7)), call(int, ARRAY),
    call(float, 3), call(float, "3.25"), call(float, "-inf"), call(float, "nan"),
    call(float, "-0.0"), call(float, "x"), call(float, True), call(float, np.float32(0.1)),
    call(float, np.array(3, dtype=np.int32)), call(float, ARRAY),
    call(bool, 0), call(bool, -0.0), call(bool, NAN), call(bool, ""), call(bool, [0]),
    call(bool, {}), call(bool, None), call(bool, np.float32(0)), call(bool, np.array([2])),
    call(bool, ARRAY),
    call(str, 12), call(str, -0.0), call(str, 1e22), call(str, 0.1), call(str, NAN),
    call(str, True), call(str, None), call(str, [1, "a"]), call(str, np.float32(0.1)),
    call(repr, "a'b"), call(repr, 1.5), call(ascii, "é"),
    call(bin, 10), call(bin, -10), call(bin, 0), call(hex, 255), call(hex, -256),
    call(oct, 8), call(hex, np.int64(255)), call(hex, np.float64(1.0)),
    call(ord, "a"), call(ord, "é"), call(ord, "ab"), call(ord, ""), call(chr, 65),
    call(chr, 233), call(chr, -1), call(chr, 0x110000),
    call(hash, -1), call(hash, 2**70), call(hash, "key"), call(hash, -0.0), call(hash, NAN),
    call(hash, (1, "a")), call(hash, None), call(hash, True),
    call(sorted, [3, -1, 2, 2, 0]), call(sorted, ["pear", "Apple", "apple"]),
    call(sorted, [2.5, NAN, 1.0]), call(sorted, [], reverse=True),
    call(sorted, [1, 3, 2], reverse=True), call(sorted, "hello"), call(sorted, {"b": 1, "a": 2}),
    call(sorted, [(1, "b"), (1, "a")]), call(sorted, INTS),
    call(reversed, [1, 2, 3]), call(reversed, "abc"), call(reversed, (1, 2)),
    call(reversed, []),
    call(any, []), call(any, [0, 0.0, 1]), call(any, [False]), call(any, INTS),
    call(all, []), call(all, [1, 2]), call(all, ["a", ""]), call(all, np.array([1, 0])),
    call(list, "abc"), call(list, [1, 2]), call(list, {"k": 1, "j": 2}), call(list, (1, 2)),
    call(list, INTS), call(list, ()),
    call(tuple, [1, 2]), call(tuple, (1, "a")), call(tuple, "ab"),
    call(dict, {"a": 1}), call(dict, [("a", 1), ("b", 2)]), call(dict, []),
    call(format, 3.14159, ".2f"), call(format, 42), call(format, "ab", ">5"),
    call(format, -0.0, "+.1f"), call(format, 7, "x"), call(format, "a", "d"),
    call(format, np.float32(0.5), ".3f"),
]

MATH_CASES = [
    *(call(f, x) for f in (math.sqrt, math.exp, math.expm1, math.log2, math.log10, math.log1p,
                           math.sin, math.cos, math.tan, math.atan, math.sinh, math.cosh,
                           math.tanh, math.asinh, math.fabs, math.erf, math.erfc, math.gamma,
                           math.lgamma, math.degrees, math.radians, math.ulp,
                           *(getattr(math, name) for name in ("cbrt", "exp2")
                             if hasattr(math, name)))
      for x in (0.5, -0.0, 3, INF, NAN)),
    *(call(f, x) for f in (math.asin, math.acos, math.atanh, math.acosh)
      for x in (0.5, -0.0, 1.0, 2, -INF)),
    call(math.sqrt, -1.0), call(math.log, 0.0), call(math.log, -1), call(math.log, 100),
    call(math.log, 8, 2), call(math.log, 10.0, 10), call(math.log, 5, 1), call(math.exp, 1000),
    call(math.sqrt, np.float32(2.0)), call(math.sqrt, np.int64(9)), call(math.gamma, 0.0),
    call(math.sqrt, ARRAY), call(math.log, True),
    *(call(f, x, y) for f in (math.atan2, math.pow, math.copysign, math.fmod, math.remainder,
                              math.nextafter)
      for x, y in ((3.0, 4.0), (-0.0, -1.0), (0.0, 0.0), (-7, 2), (INF, 2.0), (NAN, 1.0),
                   (1.0, INF))),
    call(math.pow, 0.0, -1.0), call(math.fmod, 1.0, 0.0),
    call(math.hypot, 3, 4), call(math.hypot), call(math.hypot, 1.0, INF, NAN),
    call(math.hypot, -0.0), call(math.ldexp, 0.75, 4), call(math.ldexp, 1.0, 5000),
    *(call(f, x) for f in (math.floor, math.ceil, math.trunc)
      for x in (2.5, -2.5, -0.0, 7, True, -7.75, 1e300, INF, NAN, np.float32(-2.5),
                np.float64(3.5))),
    *(call(f, x) for f in (math.isnan, math.isinf, math.isfinite)
      for x in (1.0, INF, -INF, NAN, 0, np.float32(NAN))),
    call(math.isclose, 1.0, 1.0 + 1e-10), call(math.isclose, 0.0, 1e-12),
    call(math.isclose, 0.0, 1e-12, abs_tol=1e-9), call(math.isclose, 1.0, 1.1, rel_tol=0.2),
    call(math.isclose, NAN, NAN), call(math.isclose, INF, INF),
    call(math.isclose, 1, 1, rel_tol=-1),
    call(math.gcd, 12, 18), call(math.gcd, -4, 6), call(math.gcd), call(math.gcd, 0, 0, 9),
    call(math.lcm, 4, 6), call(math.lcm, 0, 5),
    call(math.factorial, 0), call(math.factorial, 20), call(math.factorial, -1),
    call(math.factorial, np.int64(5)), call(math.isqrt, 17), call(math.isqrt, -1),
    call(math.comb, 5, 2), call(math.comb, 5, 7), call(math.comb, -1, 2),
    call(math.perm, 5, 2), call(math.perm, 4), call(math.perm, 5, -1),
    call(math.frexp, 8.0), call(math.frexp, -0.0), call(math.frexp, INF), call(math.frexp, 3),
    call(math.modf, -2.5), call(math.modf, INF), call(math.modf, -0.0),
    call(math.fsum, [0.1] * 10), call(math.fsum, []), call(math.fsum, [1e100, 1.0, -1e100]),
    call(math.fsum, [INF, -INF]), call(math.fsum, INTS),
    call(math.prod, [2, 3, 4]), call(math.prod, []), call(math.prod, [0.5, 4]),
    call(math.prod, [2, 3], start=0.5), call(math.prod, [True, True]), call(math.prod, INTS),
    *(method(x, "is_integer") for x in (2.0, 2.5, -0.0, INF, NAN)),
    *(method(n, "bit_length") for n in (0, 1, 255, -256, 2**62)),
]

TEXT = "  Key=Value,Other=2;  "
STR_CASES = [
    *(method(s, m) for m in ("upper", "lower", "capitalize", "title", "swapcase", "casefold",
                             "isdigit", "isalpha", "isspace", "isupper", "islower", "isalnum",
                             "isdecimal", "isnumeric", "istitle", "isidentifier", "isascii",
                             "isprintable", "strip", "lstrip", "rstrip", "split", "rsplit",
                             "splitlines", "expandtabs")
      for s in ("", "hello World", "ß straße", "123", "²", " \t\n", "a\tb\r\nc\n", "ABC")),
    method(TEXT, "strip", " ;"), method("xxaxx", "lstrip", "x"), method("xxaxx", "rstrip", "x"),
    method("a,,b", "split", ","), method("a b  c", "split", None, 1), method("a,b,c", "rsplit",
                                                                            ",", 1),
    method("a,b", "split", ""), method("a,b,c", "split", sep=",", maxsplit=1),
    method("a\nb\n", "splitlines", True), method("a\tb", "expandtabs", 4),
    method("a,b", "replace", ",", ", "), method("aaa", "replace", "a", "b", 2),
    method("aaa", "replace", "", "-"),
    method("Key=1", "startswith", "Key"), method("Key=1", "startswith", ("x", "K")),
    method("Key=1", "startswith", "e", 1), method("abc;", "endswith", ";"),
    method("abc", "endswith", "b", 0, 2), method("abc", "startswith", ""),
    *(method("banana", m, "an") for m in ("find", "rfind", "index", "rindex", "count")),
    *(method("banana", m, "x") for m in ("find", "rfind", "index", "rindex", "count")),
    method("banana", "find", "a", 2), method("banana", "count", "a", -3, None),
    method("banana", "count", ""), method("banana", "find", "n", 1, 3),
    method("ab", "center", 7, "*"), method("ab", "center", 1), method("ab", "ljust", 5),
    method("ab", "rjust", 5, "0"), method("ab", "center", 5, "**"),
    method("-42", "zfill", 6), method("7", "zfill", -1),
    method("a=b=c", "partition", "="), method("a=b=c", "rpartition", "="),
    method("abc", "partition", "x"), method("abc", "partition", ""),
    method("prefix_x", "removeprefix", "prefix_"), method("x.py", "removesuffix", ".py"),
    method("|", "join", ["a", "b"]), method("", "join", []), method("-", "join", "abc"),
    method(", ", "join", ("x", "y")), method("-", "join", {"k": 1, "j": 2}),
    method("{} has {} items", "format", "box", 3), method("{}/{}: {}", "format", 3, 6, True),
    method("{}", "format", 1.5), method("{:>6.2f}|{!r}", "format", -0.0, "s"),
    method("{0}{0}", "format", "ab"), method("{}{}", "format", 1),
    method("{}", "format", np.float32(0.1)), method("no fields", "format"),
    method("{a}-{0}", "format", 1, a=2.5), method("{a}", "format", b=1),
    method("{b!r:>4}{}", "format", "x", b="y"),
]

LIST_CASES = [
    method([1, 2], "append", 3), method([], "append", 1.5), method([[1]], "append", [2]),
    method([1, 2], "extend", [3, 4]), method(["a"], "extend", "bc"),
    typed(method([1], "extend", []), LI, LI),
    method([1, 2, 3], "insert", 1, 9), method([1], "insert", 100, 9),
    method([1], "insert", -100, 9), method([], "insert", 0, 5),
    method([1, 2, 3], "pop"), method([1, 2, 3], "pop", 0), method([1, 2, 3], "pop", -2),
    method([], "pop"), method([1], "pop", 5),
    method([1, 2, 1], "remove", 1), method([1, 2], "remove", 3), method([1.0, 2.0], "remove", 1),
    method(["a", "b", "a"], "index", "a"), method(["a", "b", "a"], "index", "a", 1),
    method([1, 2], "index", 3), method([1, 2, 3, 2], "index", 2, -1),
    method([1, 2, 3], "index", 3, 0, 2),
    method([1, 2, 1], "count", 1), method([], "count", 0), method([NAN], "count", NAN),
    method([1, 2, 3], "reverse"), method([], "reverse"),
    method([3, -1, 2, 0], "sort"), method(["b", "A", "a"], "sort", reverse=True),
    method([2.5, -0.0, 0.0, -1.0], "sort"), method([], "sort"),
    method([(2, "a"), (1, "b")], "sort"),
    method([1, 2], "clear"), method([[1], [2]], "copy"), method([], "copy"),
]

DICT_CASES = [
    method({"a": 1, "b": 2}, "keys"), method({"a": 1, "b": 2}, "values"),
    method({"a": 1, "b": 2}, "items"), method({}, "items"),
    method({"a": 1}, "get", "a"), method({"a": 1}, "get", "z"), method({"a": 1}, "get", "z", -1),
    method({1: "x"}, "get", 1.0), method({0.5: 1}, "get", 0.5, 0),
    method({"a": 1, "b": 2}, "pop", "a"), method({"a": 1}, "pop", "z"),
    method({"a": 1}, "pop", "z", -5), method({"a": 1}, "pop", "a", -5),
    method({"a": 1, "b": 2}, "popitem"), method({}, "popitem"),
    method({"a": 1}, "setdefault", "new", 7), method({"a": 1}, "setdefault", "a", 8),
    method({"a": 1, "b": 3}, "update", {"b": 30, "c": 40}), method({}, "update", {}),
    method({"a": 1}, "update", [("z", 0)]),
    method({"a": 1}, "clear"), method({"a": [1]}, "copy"),
]

TUPLE_CASES = [
    method((1, 2, 1), "index", 1), method((1, 2, 1), "index", 1, 1), method((1, 2), "index", 5),
    method((1, 2, 1), "count", 1), method(("a", "b"), "count", "c"),
    typed(method((4, 3), "index", 3), VarTupleType(IntType)),
    typed(method((4, 3, 3), "count", 3), VarTupleType(IntType)),
]

ALL_CASES = BUILTIN_CASES + MATH_CASES + STR_CASES + LIST_CASES + DICT_CASES + TUPLE_CASES


@pytest.mark.parametrize("c", ALL_CASES, ids=str)
def test_template_behaves_as_the_python_call(c: Call) -> None:
    check(c)


MY_NAMESPACES = ("math::", "str::", "list::", "dict::", "tuple::", "float::", "int::")
MY_BUILTINS = {"aten::len", "prim::abs", "prim::min", "prim::max", "prim::sum", "prim::round",
               "aten::divmod", "prim::pow", "prim::any", "prim::all", "aten::Int",
               "aten::Float", "aten::Bool", "aten::str", "aten::repr", "aten::ascii",
               "prim::FormatValue", "aten::bin", "aten::hex", "aten::oct", "aten::ord",
               "aten::hash", "aten::chr", "aten::sorted", "aten::reversed", "aten::list",
               "aten::tuple", "aten::dict", "aten::format"}


def test_every_op_has_a_case() -> None:
    mine = {n for n in OPS if n.startswith(MY_NAMESPACES)} | MY_BUILTINS
    assert mine - {c.op.name for c in ALL_CASES} == set()


# ---- f-string fields: prim::FormatValue with the front end's `conversion` attribute


@pytest.mark.parametrize("value", [3.14159, -0.0, NAN, 42, True, "ab", "é", np.float32(1.5)])
@pytest.mark.parametrize("conversion", ["", "s", "r", "a"])
@pytest.mark.parametrize("spec", ["", ">10", ".3f", "^8", "+"])
def test_format_value_is_the_f_string_field(value, conversion, spec) -> None:
    field = "{v" + ("!" + conversion if conversion else "") + (":" + spec if spec else "") + "}"
    expected = outcome(lambda: eval("f" + repr(field), {}, {"v": value}))
    op = OPS["prim::FormatValue"]
    got = outcome(lambda: run_template(op, [value, spec], {"conversion": conversion}))
    assert got == expected


# ---- type rules: static types and rejections


def rule(c_or_op, *types: Type):
    """The output types of an op (given, or of a Python function / method) for `types`."""
    if isinstance(c_or_op, str):
        op = OPS[c_or_op]
    elif isinstance(c_or_op, tuple):
        op = lookup_method(types[0], c_or_op[1])
    else:
        op = lookup_python(c_or_op)
    return infer_types(op, list(types), {})


REFINED = TensorType(dtype="float32", sizes=(None,))

ACCEPTED = [
    ((("list", "append"), LI, IntType), []),
    ((("list", "append"), ListType(TENSOR), REFINED), []),
    ((("list", "append"), ListType(AnyType), StrType), []),
    ((("list", "append"), ListType(OptionalType(IntType)), NoneType), []),
    ((("list", "extend"), LS, StrType), []),
    ((("list", "pop"), LF, IntType), [FloatType]),
    ((("list", "copy"), LS), [LS]),
    ((("dict", "keys"), DSI), [IterableType("dict_keys", StrType)]),
    ((("dict", "items"), DSI), [IterableType("dict_items", TupleType((StrType, IntType)))]),
    ((list, IterableType("dict_values", IntType)), [LI]),
    ((len, IterableType("dict_items", TupleType((StrType, IntType)))), [IntType]),
    ((("dict", "get"), DSI, StrType, NoneType), [OptionalType(IntType)]),
    ((("dict", "get"), DSI, StrType, IntType), [IntType]),
    ((("dict", "get"), DSI, StrType, FloatType), [UnionType((IntType, FloatType))]),
    ((("dict", "pop"), DSI, StrType), [IntType]),
    ((("dict", "pop"), DSI, StrType, NoneType), [OptionalType(IntType)]),
    ((("dict", "get"), DictType(FloatType, IntType), IntType, NoneType), [OptionalType(IntType)]),
    ((("str", "startswith"), StrType, TupleType((StrType, StrType)), NoneType, NoneType),
     [BoolType]),
    ((("str", "split"), StrType, NoneType, IntType), [LS]),
    ((min, IntType, FloatType), [FloatType]),       # documented: Python returns either
    ((max, IntType, BoolType), [IntType]),
    ((min, BoolType, BoolType), [BoolType]),
    ((max, TENSOR, FloatType), [TENSOR]),
    ((min, LF), [FloatType]),
    ((max, StrType), [StrType]),
    ((min, TupleType((IntType, FloatType))), [FloatType]),
    ((sum, LI, IntType), [IntType]),
    ((sum, LF, IntType), [FloatType]),
    ((sum, ListType(BoolType), IntType), [IntType]),
    ((sum, LI, FloatType), [FloatType]),
    ((sum, ListType(TENSOR), IntType), [TENSOR]),
    ((round, FloatType, NoneType), [IntType]),
    ((round, FloatType, IntType), [FloatType]),
    ((round, IntType, IntType), [IntType]),
    ((round, TENSOR, NoneType), [IntType]),
    ((round, TENSOR, IntType), [TENSOR]),
    ((divmod, IntType, FloatType), [TupleType((FloatType, FloatType))]),
    ((pow, IntType, IntType, NoneType), [IntType]),
    ((pow, IntType, FloatType, NoneType), [FloatType]),
    ((abs, BoolType), [IntType]),
    ((int, TENSOR), [IntType]),
    ((float, StrType), [FloatType]),
    ((float, UnionType((IntType, FloatType))), [FloatType]),
    ((bool, ListType(IntType)), [BoolType]),
    ((len, ClassType.for_class(type("Sized", (), {"__len__": lambda self: 0}))), [IntType]),
    ((sorted, DictType(StrType, FloatType), BoolType), [LS]),
    ((list, TENSOR), [ListType(TENSOR)]),
    ((tuple, LI), [VarTupleType(IntType)]),
    ((dict, ListType(TupleType((StrType, IntType)))), [DSI]),
    ((math.floor, FloatType), [IntType]),
    ((math.sqrt, IntType), [FloatType]),
    ((math.log, FloatType, IntType), [FloatType]),
    ((math.prod, LI, IntType), [IntType]),
    ((math.gcd, IntType, BoolType, TENSOR), [IntType]),
    ((format, FloatType, StrType), [StrType]),
    (("list::remove", LI, StrType), []),            # lookups compare with ==, as `in` does
]

REJECTED = [
    ((("list", "append"), LI, StrType), "expected int, found str"),
    ((("list", "append"), LF, IntType), "expected float, found int"),
    ((("list", "append"), LI, OptionalType(IntType)), "expected int, found Optional[int]"),
    ((("list", "extend"), LI, LS), "expected int, found str"),
    ((("list", "insert"), LI, StrType, IntType), "argument 1 must be int, not str"),
    ((("list", "pop"), LI, FloatType), "must be int, not float"),
    ((("list", "index"), LI, IntType, StrType, IntType), "must be int, not str"),
    ((("dict", "get"), DSI, IntType, NoneType), "dict key must be str, found int"),
    ((("dict", "pop"), DSI, IntType), "dict key must be str, found int"),
    ((("dict", "setdefault"), DSI, StrType, NoneType), "would store a NoneType"),
    ((("dict", "update"), DSI, DictType(StrType, FloatType)), "cannot store"),
    ((("dict", "update"), DSI, LI), "needs a dict or"),
    ((("str", "split"), StrType, IntType, IntType), "argument 1 must be str or None, not int"),
    ((("str", "replace"), StrType, StrType, IntType, IntType), "argument 2 must be str"),
    ((("str", "join"), StrType, LI), "expected str instance, int found"),
    ((("str", "center"), StrType, StrType, StrType), "argument 1 must be int, not str"),
    ((("str", "find"), StrType, ListType(StrType), NoneType, NoneType), "must be str"),
    ((len, IntType), "object of type 'int' has no len()"),
    ((len, OptionalType(StrType)), "has no len()"),
    ((abs, StrType), "bad operand type for abs(): 'str'"),
    ((min, IntType, StrType), "'<' not supported between instances of 'str' and 'int'"),
    ((min,), "expected at least 1 argument"),
    ((max, IntType), "'int' object is not iterable"),
    ((max, ListType(NoneType)), "'<' not supported"),
    ((min, TupleType((IntType, StrType))), "different types"),
    ((sum, LS, IntType), "unsupported operand types for +: 'int' and 'str'"),
    ((sum, LS, StrType), "can't sum strings"),
    ((round, StrType, NoneType), "doesn't define __round__"),
    ((round, FloatType, FloatType), "cannot be interpreted as an integer"),
    ((divmod, StrType, IntType), "unsupported operand type"),
    ((pow, FloatType, IntType, IntType), "3rd argument not allowed"),
    ((pow, StrType, IntType, NoneType), "unsupported operand"),
    ((int, LI), "int() argument must be"),
    ((int, FloatType, IntType), "argument 1 must be str, not float"),
    ((float, NoneType), "float() argument must be"),
    ((hex, FloatType), "'float' object cannot be interpreted as an integer"),
    ((ord, IntType), "ord() expected string of length 1, but int found"),
    ((chr, StrType), "must be int, not str"),
    ((hash, LI), "unhashable type: 'List[int]'"),
    ((hash, TupleType((IntType, DictType(StrType, IntType)))), "unhashable type"),
    ((hash, TENSOR), "unhashable type: 'Tensor'"),
    ((sorted, IntType, BoolType), "not iterable"),
    ((sorted, LI, StrType), "must be int, not str"),
    ((dict, LI), "dict() argument must be"),
    ((any, FloatType), "not iterable"),
    ((math.sqrt, StrType), "sqrt() argument 1 must be real number, not str"),
    ((math.factorial, FloatType), "must be int, not float"),
    ((math.isclose, FloatType, FloatType, StrType, FloatType), "argument 3 must be real"),
    ((math.fsum, LS), "fsum() needs an iterable of real numbers"),
    ((format, IntType, IntType), "format() argument 2 must be str, not int"),
]


def _resolve(spec):
    target, *types = spec
    if isinstance(target, tuple):
        return ("method", target[1]), types
    return target, types


@pytest.mark.parametrize("spec, expected", ACCEPTED, ids=str)
def test_type_rule_gives_the_type(spec, expected) -> None:
    target, types = _resolve(spec)
    assert rule(target, *types) == expected


@pytest.mark.parametrize("spec, message", REJECTED, ids=str)
def test_type_rule_rejects(spec, message) -> None:
    target, types = _resolve(spec)
    with pytest.raises(OpTypeError, match=re.escape(message)):
        rule(target, *types)


# ---- effects


def test_effects() -> None:
    for name in ("list::append", "list::pop", "list::sort", "dict::pop", "dict::update",
                 "dict::setdefault", "list::clear"):
        assert OPS[name].writes == (0,), name
    for name in ("str::upper", "str::isdigit", "list::copy", "dict::keys", "dict::items"):
        assert OPS[name].is_pure, name
    for name in ("list::index", "dict::get", "aten::len", "prim::min", "math::sqrt",
                 "aten::Int", "str::split"):
        assert not OPS[name].has_effects and not OPS[name].is_pure, name
    # results that are, or hold, an argument's objects: writes through them reach it (a
    # dict view follows its dict)
    for name in ("prim::min", "prim::max", "aten::list", "aten::sorted", "list::pop",
                 "list::copy", "dict::get", "dict::keys", "dict::values", "dict::items",
                 "dict::setdefault"):
        assert OPS[name].views, name
    for name in ("aten::len", "list::append", "str::split", "math::floor"):
        assert not OPS[name].views, name
