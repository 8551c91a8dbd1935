"""How an IR node reads as an elementwise computation NumPy performs on arrays.

`read_call` is the one reading of a node that the fuser (which kernel op, which operands,
written where) and the analyses (whether the node may report a floating-point error,
``analysis.reports_errors``) share: a ufunc or operator on arrays, `x op= y`, `astype`,
`np.clip`, `np.where`, a ufunc call with `out=`, and `out[...] = value`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.graph import Node, Value, constant_value
from ..ir.types import BoolType, FloatType, IntType, NoneType, TensorType
from ..ops import OPS
from ..ops.numpy_ufuncs import CALL_OUT, OUT_CHECK, UFUNC

__all__ = ["ElementwiseCall", "read_call"]


@dataclass(frozen=True)
class ElementwiseCall:
    """One node read as NumPy computes it: `kernel` over `operands` with `ufunc`'s loop
    (None for where and casts), writing the result into `target` if given."""

    kernel: str
    ufunc: np.ufunc | None
    operands: tuple[Value, ...]
    target: Value | None = None
    cast_to: np.dtype | None = None
    assignment: bool = False
    # `x ** e` (or `x **= e`), which NumPy's ndarray operator may compute without its
    # power loop (``kernel_spec.PYTHON_INT_EXPONENT``); np.power always runs the loop
    power_operator: bool = False


def read_call(node: Node) -> ElementwiseCall | None:
    """The elementwise computation `node` performs on arrays, or None if it is not one."""
    if node.kind == "aten::__setitem__":
        return _read_assignment(node)
    if node.kind == OUT_CHECK.name:    # inputs: the ufunc's operands, out, dtype
        return ElementwiseCall("out_check", node.attrs[UFUNC], tuple(node.inputs))
    if node.kind == CALL_OUT.name:     # inputs: out, dtype, the ufunc's operands
        return _read_call_out(node)
    op = OPS.get(node.kind)
    # x op= y carries its operator's kernel without being pure (it writes x)
    kernel = op.attrs.get("kernel") if op is not None and (
        op.elementwise or op.writes == (0,)) else None
    if kernel is None or len(node.outputs) != 1 or \
            not any(isinstance(v.type, TensorType) for v in node.inputs):
        return None
    args = {p.name: v for p, v in zip(op.params, node.inputs)}
    if kernel == "where":
        cond, x, y = node.inputs
        if NoneType in (x.type, y.type):
            return None
        return ElementwiseCall("where", None, (cond, x, y))
    if kernel == "clip":
        return _read_clip(op.attrs["ufunc"], args)
    if kernel == "cast":
        return _read_cast(args)
    ufunc = op.attrs["ufunc"]
    operands, rest = node.inputs[:ufunc.nin], node.inputs[ufunc.nin:]
    if any(v.type != NoneType for v in rest):   # out= or dtype= given
        return None
    target = node.inputs[0] if op.writes == (0,) and _may_be_array(node.inputs[0]) else None
    return ElementwiseCall(kernel, ufunc, tuple(operands), target,
                           power_operator=node.kind in ("aten::pow", "aten::ipow"))


def _may_be_array(v: Value) -> bool:
    """Whether `x op= y` may write into x: not if x is a number (a Python one, or a NumPy
    scalar), which it rebinds to `x op y` as Python does (`s += x[i]` in loop code)."""
    return isinstance(v.type, TensorType) and v.type.ndarray is not False


def _read_call_out(node: Node) -> ElementwiseCall | None:
    ufunc = node.attrs[UFUNC]
    out, dtype, *operands = node.inputs
    kernel = OPS[f"numpy::{ufunc.__name__}"].attrs.get("kernel")
    if kernel is None or dtype.type != NoneType or ufunc.nout != 1:
        return None
    return ElementwiseCall(kernel, ufunc, tuple(operands), target=out)


def _read_clip(clip: np.ufunc, args: dict[str, Value]) -> ElementwiseCall | None:
    """np.clip / ndarray.clip: NumPy runs clip, maximum or minimum by the bounds given."""
    if args["out"].type != NoneType:
        return None
    lo = _given(args.get("a_min"), args.get("min"))
    hi = _given(args.get("a_max"), args.get("max"))
    if lo is None or hi is None:
        return None
    a = args["a"]
    if lo is not _ABSENT and hi is not _ABSENT:
        return ElementwiseCall("clip", clip, (a, lo, hi))
    if lo is not _ABSENT:
        return ElementwiseCall("maximum", np.maximum, (a, lo))
    if hi is not _ABSENT:
        return ElementwiseCall("minimum", np.minimum, (a, hi))
    return None


_ABSENT = object()


def _given(*candidates: Value | None) -> Value | object | None:
    """The bound passed among `candidates` (_ABSENT if none; None if it may be None)."""
    given = [v for v in candidates if v is not None and v.type != NoneType]
    if len(given) > 1:
        return None
    if not given:
        return _ABSENT
    return given[0] if isinstance(given[0].type, TensorType) or given[0].type in (
        IntType, FloatType, BoolType) else None


def _read_cast(args: dict[str, Value]) -> ElementwiseCall | None:
    """astype with a constant dtype, copying (copy=False may return the array itself)."""
    settings = {name: constant_value(v) for name, v in args.items() if name != "a" and name != "x"}
    if settings.get("copy") is not True or settings.get("casting", "unsafe") != "unsafe" or \
            settings.get("order", "K") != "K":
        return None
    try:
        dtype = np.dtype(settings["dtype"])
    except TypeError:
        return None
    return ElementwiseCall("cast", None, (args.get("a") or args["x"],), cast_to=dtype)


def _read_assignment(node: Node) -> ElementwiseCall | None:
    """`out[...] = value` and `out[:] = value`: value cast (unsafe, as NumPy's assignment)
    and written into the whole of `out`."""
    seq, index, value = node.inputs
    if not isinstance(seq.type, TensorType) or not _is_whole(index):
        return None
    return ElementwiseCall("cast", None, (value,), target=seq, assignment=True)


def _is_whole(index: Value) -> bool:
    if constant_value(index) is Ellipsis:
        return True
    return index.node.kind == "prim::Slice" and all(
        constant_value(v) is None for v in index.node.inputs)
