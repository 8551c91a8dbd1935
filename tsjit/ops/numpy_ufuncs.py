"""What a NumPy ufunc offers besides its call: writing into `out=`.

A ufunc call with `out=` is compiled as its call without `out=` followed by the assignment
`out[...] = result` (so the fuser makes the pair one kernel writing in place).  The
assignment casts unsafely and drops leading 1s of the result's shape, where the ufunc
refuses a result dtype that 'same_kind' casting cannot write into `out` and an `out` of
lower rank than the result: `ufunc::out_check` raises those errors first, as NumPy raises
them before computing anything.
"""
from __future__ import annotations

import ast

from .registry import register

UFUNC = "ufunc"   # node attribute: the np.ufunc the node is about


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
    parts = [*map(_operand_stand_in, operands), f"out={_stand_in(out)}"]
    if dtype != "None":
        parts.append(f"dtype={dtype}")
    return f"{attrs[UFUNC]}({', '.join(parts)})"


# inputs: the ufunc's operands, out, dtype
OUT_CHECK = register("ufunc::out_check", "*operands", lambda types, attrs: None,
                     _out_check_call)
