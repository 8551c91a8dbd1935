"""NumPy ufuncs in script code: calls with `out=` and the ufunc methods (`np.add.reduce`).

`np.add(a, b, out=c)` becomes `ufunc::call_out` (which the fuser turns into a kernel
writing into c), preceded by the check of what NumPy refuses (`ufunc::out_check`, see
tsjit/ops/numpy_ufuncs.py).  Its value is `c` itself, as NumPy returns the out array.

A ufunc method is a new Python object at every attribute access, so `np.add.reduce` is
found by (ufunc, method name), never by identity.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import SourceRange, Value
from ..ir.types import NoneType, TensorType, TupleType
from ..ops.numpy_ufuncs import CALL_OUT, OUT_CHECK, UFUNC, method_op
from ..ops.registry import OpDef
from .errors import CompilationError
from .sugared import OpFunction, Sugared


class UfuncFunction(OpFunction):
    """A NumPy ufunc (`np.add`): a call, possibly with `out=`, or one of its methods."""

    def attr(self, em, name, src):
        ufunc = self.obj
        op = method_op(ufunc, name)
        if op is None:
            if not hasattr(ufunc, name):
                return super().attr(em, name, src)
            raise CompilationError(f"'{self.name}.{name}' is not supported in script code "
                                   f"(ufunc methods: reduce, accumulate and outer of binary "
                                   f"ufuncs, at)", src)
        return UfuncMethod(op, ufunc, f"{self.name}.{name}")

    def call(self, em, args, kwargs, src):
        nin = self.obj.nin
        by_position = len(args) > nin        # np.add(a, b, c)
        given = args[nin] if by_position else kwargs.get("out")
        if given is None or (by_position and "out" in kwargs):
            return super().call(em, args, kwargs, src)
        out = em.as_value(given, src)
        outs = self.out_arrays(em, out, src)
        if by_position:
            args = [*args[:nin], *args[nin + 1:]]
        kwargs = {k: v for k, v in kwargs.items() if k != "out"}
        if outs is None:
            return super().call(em, args, {**kwargs, "out": out}, src)
        inputs = em.bind_arguments(self.op.params, args, kwargs, src, self.name)
        operands, dtype = inputs[:nin], inputs[-1]
        em.insert(OUT_CHECK.name, [*operands, *outs, dtype], [], {UFUNC: self.obj}, src)
        return em.emit_op(CALL_OUT.name, [outs[0], dtype, *operands], {UFUNC: self.obj}, src)

    def out_arrays(self, em, out: Value, src: SourceRange) -> list[Value] | None:
        """The arrays `out=` names (an array, or a tuple of one per output); None when it
        names none (None, or a tuple of Nones)."""
        t = out.type
        if t == NoneType or (isinstance(t, TupleType) and t.py_class is None and all(
                e == NoneType for e in t.elems)):
            return None
        if isinstance(t, TupleType) and t.py_class is None:
            if len(t.elems) != self.obj.nout:
                raise CompilationError(f"{self.name}(): the 'out' tuple must have exactly one "
                                       f"entry per ufunc output ({self.obj.nout})", src)
            outs = list(out.node.inputs if out.node.kind == "prim::TupleConstruct" else
                        em.insert("prim::TupleUnpack", [out], list(t.elems), src=src).outputs)
        else:
            outs = [out]
        if self.obj.nout != 1:
            raise CompilationError(f"{self.name}(): out= of a ufunc with {self.obj.nout} "
                                   "outputs is not supported in script code", src)
        for v in outs:
            if not isinstance(v.type, TensorType):
                raise CompilationError(f"{self.name}(): out= must be an array, found "
                                       f"{v.type.annotation}", src)
        return outs


class UfuncMethod(Sugared):
    """`np.maximum.reduce` before the call: the method's op, for this ufunc."""

    def __init__(self, op: OpDef, ufunc: np.ufunc, name: str):
        self.op, self.ufunc, self.name = op, ufunc, name

    def describe(self) -> str:
        return f"'{self.name}'"

    def call(self, em, args, kwargs, src):
        return em.call_op(self.op, args, kwargs, src, self.name, {UFUNC: self.ufunc})


def ufunc_value(op: OpDef | None, obj: object, name: str) -> Sugared | None:
    """What a ufunc or a ufunc's method found by name means in script code (None if
    `obj` is neither)."""
    if isinstance(obj, np.ufunc) and obj.signature is None and op is not None:
        return UfuncFunction(op, obj, name)
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, np.ufunc):
        method = method_op(owner, getattr(obj, "__name__", ""))
        return None if method is None else UfuncMethod(method, owner, name)
    return None
