"""What a NumPy ufunc offers besides its call: writing into `out=`, and its methods.

One op per method (`ufunc::reduce`, `ufunc::accumulate`, `ufunc::outer`, `ufunc::at`) serves
every ufunc: the node's `ufunc` attribute says which (`np.maximum.reduce(x)` is
`ufunc::reduce[ufunc=np.maximum](x, ...)`), the interpreter calls that ufunc's method, and
the type rule asks NumPy for the result dtype of that very method.

A ufunc call with `out=` is `ufunc::call_out` (the call itself: NumPy writes `out`, then
reports its floating-point errors, so under `np.errstate(all="raise")` `out` is written
when FloatingPointError comes), preceded by `ufunc::out_check`: the fuser proves with it,
once, that NumPy's casting and rank rules let the call write into `out` (see
passes/elementwise_kernel.py).
"""
from __future__ import annotations

import ast
from collections.abc import Callable

import numpy as np

from ..ir.types import NoneType, Type
from .numpy_reductions import along_axis, reduction
from .numpy_rules import (
    ARRAY,
    OPTIONAL_ARRAY,
    CallTypes,
    call_template,
    define,
    dtype_or,
    probe_dtype,
    sizes_of,
    tensor,
)
from .promotion import array_dtype
from .registry import OPS, OpDef, infer_types, register

UFUNC = "ufunc"   # node attribute: the np.ufunc whose method the node calls


# -- out= --

_PYTHON_NUMBERS = (int, float, bool, complex)


def _stand_in(x: str) -> str:
    """A zero-size array of x's dtype with one more dimension than x: the ufunc resolves
    its loop and checks out's rank for it as for x, without computing an element."""
    return f"np.empty((0,) * (np.ndim({x}) + 1), np.asarray({x}).dtype)"


def _operand_stand_in(x: str) -> str:
    """A Python number stays itself (NumPy types it weakly, by value)."""
    try:
        if type(ast.literal_eval(x)) in _PYTHON_NUMBERS:
            return x
    except (ValueError, SyntaxError):
        pass
    return f"({x} if type({x}) in (int, float, bool, complex) else {_stand_in(x)})"


def _out_check_call(args: list[str], attrs: dict) -> str:
    *operands, out, dtype = args
    # an out that is no array (a NumPy scalar passed for a Tensor) goes in itself: NumPy
    # refuses it before resolving the loop ("return arrays must be of ArrayType")
    parts = [*map(_operand_stand_in, operands),
             f"out=({out} if not isinstance({out}, np.ndarray) else {_stand_in(out)})"]
    if dtype != "None":
        parts.append(f"dtype={dtype}")
    return f"{attrs[UFUNC]}({', '.join(parts)})"


# inputs: the ufunc's operands, out, dtype
OUT_CHECK = register("ufunc::out_check", "*operands", lambda types, attrs: None,
                     _out_check_call)


def _call_out_rule(types: list[Type], attrs: dict) -> Type:
    """The `out` array, once the ufunc's own rule accepts the operands."""
    out, dtype, *operands = types
    infer_types(OPS[f"numpy::{attrs[UFUNC].__name__}"], [*operands, NoneType, dtype], {})
    return out


def _call_out_call(args: list[str], attrs: dict) -> str:
    out, dtype, *operands = args
    extra = "" if dtype == "None" else f", dtype={dtype}"
    return f"{attrs[UFUNC]}({', '.join(operands)}, out={out}{extra})"


# inputs: out, dtype, the ufunc's operands; its value is `out`, which it writes
CALL_OUT = register("ufunc::call_out", "out, dtype, *operands", _call_out_rule, _call_out_call,
                    writes=(0,))


# -- methods --

def _outer_rule(outer: Callable) -> Callable[[CallTypes], Type]:
    """A.outer(B) makes both arrays first: the sizes of A then B, a NumPy scalar when both
    are 0-d."""
    def result(call: CallTypes) -> Type:
        a, b = sizes_of(call["A"]), sizes_of(call["B"])
        dtypes = (array_dtype(call["A"]), array_dtype(call["B"]))
        dtype = None if any(d is None for d in dtypes) else probe_dtype(outer, *dtypes)
        sizes = None if a is None or b is None else (*a, *b)
        return tensor(dtype_or(call, dtype), sizes, None if sizes is None else sizes != ())
    return result


_KINDS = {"A": ARRAY, "B": ARRAY, "b": OPTIONAL_ARRAY}


def _define_method(method: str, signature: str, rule: Callable, *, no_value: tuple = (),
                   **traits: object) -> OpDef:
    """Op `ufunc::<method>` with NumPy's parameters for it, called as
    `<the node's ufunc>.<method>(...)`."""
    template = call_template(f".{method}", f"ufunc, {signature}", omit=("out",),
                             no_value=no_value, method=True)
    return define(f"ufunc::{method}", signature, rule,
                  lambda args, attrs: template([attrs[UFUNC], *args], attrs), kinds=_KINDS,
                  **traits)


def _for_node_ufunc(rule: Callable[[Callable], Callable[[CallTypes], Type]], method: str
                   ) -> Callable[[CallTypes], Type | None]:
    """`rule` for the method of the node's ufunc (bound methods of one ufunc are equal, so
    `probe_dtype` caches them)."""
    def result(call: CallTypes) -> Type:
        ufunc = call.attrs.get(UFUNC)
        return tensor() if ufunc is None else rule(getattr(ufunc, method))(call)
    return result


_define_method("reduce", "array, axis=0, dtype=None, out=None, keepdims=False, initial=None, "
               "where=True", _for_node_ufunc(reduction, "reduce"), no_value=("initial",))
_define_method("accumulate", "array, axis=0, dtype=None, out=None",
               _for_node_ufunc(along_axis, "accumulate"))
_define_method("outer", "A, B, /, *, dtype=None", _for_node_ufunc(_outer_rule, "outer"))


def _at_call(args: list[str], attrs: dict) -> str:
    """ufunc.at(a, indices, b): NumPy takes b=None for "not given" only by leaving it out."""
    a, indices, b = args
    return f"{attrs[UFUNC]}.at({a}, {indices}{'' if b == 'None' else ', ' + b})"


define("ufunc::at", "a, indices, b=None, /", lambda call: None, _at_call, kinds=_KINDS,
       writes=(0,))

METHODS = ("reduce", "accumulate", "outer", "at")


def method_op(ufunc: np.ufunc, method: str) -> OpDef | None:
    """The op for `ufunc.method`, if script code supports it for this ufunc (reduce,
    accumulate and outer are NumPy's for binary ufuncs with one output only)."""
    if method not in METHODS or ufunc.nout != 1 or (method != "at" and ufunc.nin != 2):
        return None
    return OPS[f"ufunc::{method}"]
