"""Python complex numbers in script code: `complex(re, im)`, `z.real`, `z.imag` and
`z.conjugate()`; arithmetic on them is in operators.py (numeric_result), `abs(z)` in
builtin_ops.py.

A complex number is a scalar of the interpreter only: native code declines a region that
holds one (ntypes has no complex kind), so every tier computes it as CPython does.
"""
from __future__ import annotations

from ..ir.types import TENSOR, BoolType, ComplexType, FloatType, IntType
from .python_calls import Accepts, register_function, register_method, signature_rule
from .registry import register

NUMBER = Accepts("a number", (IntType, BoolType, FloatType, ComplexType, TENSOR))

register_function("aten::complex", complex, "real=0, imag=0",
                  signature_rule("complex", (NUMBER, NUMBER), ComplexType))
for _part in ("real", "imag"):
    register(f"prim::complex_{_part}", "z", lambda types, attrs: FloatType,
             f"{{0}}.{_part}", attributes=((ComplexType, _part),), may_raise=False)
register_method("prim::complex_conjugate", [ComplexType], "conjugate", "self",
                signature_rule("conjugate", (), ComplexType, receiver=True), may_raise=False)
