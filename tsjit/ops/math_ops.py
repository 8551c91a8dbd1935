"""The functions of Python's `math` module as ops (`math::sqrt`, ...).

Each op calls the `math` function itself, so results are CPython's bit for bit, including
its errors (`math.sqrt(-1.0)` raises ValueError where NumPy would return nan).  Arguments
are what `math` takes: ints, bools, floats and NumPy values (through `__float__` /
`__index__`); results are Python floats, ints (`floor`, `ceil`, `trunc`, `gcd`, ...) or
bools.  The constants (`math.pi`, `math.inf`, ...) are captured by the front end.

The ops live in their own `math::` namespace: NumPy's functions of the same names are
different ops (elementwise on arrays, nan instead of ValueError).
"""
from __future__ import annotations

import math

from ..ir.types import (
    TENSOR,
    AnyType,
    BoolType,
    FloatType,
    IntType,
    TensorType,
    TupleType,
    is_number,
)
from .python_calls import (
    INDEX,
    OPTIONAL_INDEX,
    REAL,
    Accepts,
    iterated_type,
    number_join,
    register_function,
    register_method,
    signature_rule,
)
from .registry import OpTypeError

REAL_TO_FLOAT = (
    math.sqrt, math.exp, math.expm1, math.log2, math.log10, math.log1p,
    math.sin, math.cos, math.tan, math.asin, math.acos, math.atan,
    math.sinh, math.cosh, math.tanh, math.asinh, math.acosh, math.atanh,
    math.fabs, math.erf, math.erfc, math.gamma, math.lgamma, math.degrees, math.radians,
    math.ulp,
    # Python 3.11's additions
    *(getattr(math, name) for name in ("cbrt", "exp2") if hasattr(math, name)),
)
REALS_TO_FLOAT = (math.atan2, math.pow, math.copysign, math.fmod, math.remainder,
                  math.nextafter)


def _elements_rule(callee: str, accepts: Accepts, result):
    """fsum / prod: a function of the elements of one iterable."""
    def infer(types, attrs):
        elem = iterated_type(types[0])
        if not accepts(elem):
            raise OpTypeError(f"{callee}() needs an iterable of {accepts.description}s, "
                              f"not of {elem.annotation}")
        return result(elem, types[1:])
    return infer


def _product_type(elem, start_types):
    (start,) = start_types
    joined = [elem, start]
    if AnyType in joined:
        return AnyType
    if any(isinstance(t, TensorType) for t in joined) and all(map(REAL, joined)):
        return TENSOR
    if not all(map(is_number, joined)):
        raise OpTypeError(f"prod() start must be a number, not {start.annotation}")
    return IntType if number_join(joined) == BoolType else number_join(joined)


for _fn in REAL_TO_FLOAT:
    register_function(f"math::{_fn.__name__}", _fn, "x",
                      signature_rule(_fn.__name__, (REAL,), FloatType))
for _fn in REALS_TO_FLOAT:
    register_function(f"math::{_fn.__name__}", _fn, "x, y",
                      signature_rule(_fn.__name__, (REAL, REAL), FloatType))
# math.log(x) and math.log(x, math.e) are different computations: the base stays optional
register_function("math::log", math.log, "x, *base",
                  signature_rule("log", (REAL,), FloatType, rest=REAL))
register_function("math::hypot", math.hypot, "*coordinates",
                  signature_rule("hypot", (), FloatType, rest=REAL))
register_function("math::ldexp", math.ldexp, "x, i",
                  signature_rule("ldexp", (REAL, INDEX), FloatType))

for _fn in (math.floor, math.ceil, math.trunc):
    register_function(f"math::{_fn.__name__}", _fn, "x",
                      signature_rule(_fn.__name__, (REAL,), IntType))
for _fn in (math.isnan, math.isinf, math.isfinite):
    register_function(f"math::{_fn.__name__}", _fn, "x",
                      signature_rule(_fn.__name__, (REAL,), BoolType))
register_function("math::isclose", math.isclose, "a, b, *, rel_tol=1e-09, abs_tol=0.0",
                  signature_rule("isclose", (REAL,) * 4, BoolType))

for _fn in (math.gcd, math.lcm):
    register_function(f"math::{_fn.__name__}", _fn, "*integers",
                      signature_rule(_fn.__name__, (), IntType, rest=INDEX))
for _fn in (math.factorial, math.isqrt):
    register_function(f"math::{_fn.__name__}", _fn, "n",
                      signature_rule(_fn.__name__, (INDEX,), IntType))
register_function("math::comb", math.comb, "n, k",
                  signature_rule("comb", (INDEX, INDEX), IntType))
register_function("math::perm", math.perm, "n, k=None",
                  signature_rule("perm", (INDEX, OPTIONAL_INDEX), IntType))

register_function("math::frexp", math.frexp, "x",
                  signature_rule("frexp", (REAL,), TupleType((FloatType, IntType))))
register_function("math::modf", math.modf, "x",
                  signature_rule("modf", (REAL,), TupleType((FloatType, FloatType))))
register_function("math::fsum", math.fsum, "seq",
                  _elements_rule("fsum", REAL, lambda elem, rest: FloatType))
# prod([], start=s) is s itself
register_function("math::prod", math.prod, "iterable, *, start=1",
                  _elements_rule("prod", REAL, _product_type), views=True)

# Methods of Python numbers.
register_method("float::is_integer", (FloatType,), "is_integer", "self",
                lambda types, attrs: BoolType, may_raise=False)
register_method("int::bit_length", (IntType,), "bit_length", "self",
                lambda types, attrs: IntType, may_raise=False)
