"""Python complex numbers in script code: `complex(re, im)`, `z.real`, `z.imag`,
`z.conjugate()` and the functions of `cmath` (calls of cmath's own, so results and errors
are CPython's); arithmetic on them is in operators.py (numeric_result), `abs(z)` in
builtin_ops.py.

A complex number is a scalar of the interpreter only: native code declines a region that
holds one (ntypes has no complex kind), so every tier computes it as CPython does.
"""
from __future__ import annotations

import cmath

from ..ir.types import TENSOR, BoolType, ComplexType, FloatType, IntType, TupleType
from .python_calls import REAL, Accepts, register_function, register_method, signature_rule
from .registry import register

NUMBER = Accepts("a number", (IntType, BoolType, FloatType, ComplexType, TENSOR))

register_function("aten::complex", complex, "real=0, imag=0",
                  signature_rule("complex", (NUMBER, NUMBER), ComplexType))
for _part in ("real", "imag"):
    register(f"prim::complex_{_part}", "z", lambda types, attrs: FloatType,
             f"{{0}}.{_part}", attributes=((ComplexType, _part),), may_raise=False)
register_method("prim::complex_conjugate", [ComplexType], "conjugate", "self",
                signature_rule("conjugate", (), ComplexType, receiver=True), may_raise=False)

# cmath takes ints, floats and complex numbers alike (a float argument gives a complex)
for _fn in (cmath.exp, cmath.sqrt, cmath.log10, cmath.sin, cmath.cos, cmath.tan, cmath.asin,
            cmath.acos, cmath.atan, cmath.sinh, cmath.cosh, cmath.tanh, cmath.asinh,
            cmath.acosh, cmath.atanh):
    register_function(f"cmath::{_fn.__name__}", _fn, "z",
                      signature_rule(_fn.__name__, (NUMBER,), ComplexType))
register_function("cmath::log", cmath.log, "z, *base",
                  signature_rule("log", (NUMBER,), ComplexType, rest=NUMBER))
register_function("cmath::phase", cmath.phase, "z",
                  signature_rule("phase", (NUMBER,), FloatType))
register_function("cmath::polar", cmath.polar, "z",
                  signature_rule("polar", (NUMBER,), TupleType((FloatType, FloatType))))
register_function("cmath::rect", cmath.rect, "r, phi",
                  signature_rule("rect", (REAL, REAL), ComplexType))
for _fn in (cmath.isnan, cmath.isinf, cmath.isfinite):
    register_function(f"cmath::{_fn.__name__}", _fn, "z",
                      signature_rule(_fn.__name__, (NUMBER,), BoolType))
register_function("cmath::isclose", cmath.isclose, "a, b, *, rel_tol=1e-09, abs_tol=0.0",
                  signature_rule("isclose", (NUMBER, NUMBER, REAL, REAL), BoolType))
