"""Python objects to native values and back, for every kind in ntypes.py.

`unbox` with a `miss` block is a guard: it checks that the object is exactly of the kind
(exact type, int64 range, array dtype/rank/WRITEABLE) and jumps to `miss` otherwise; these
checks mirror `ntypes.kind_of_value` exactly, so that the Python dispatcher and the native
guards always agree.  Without `miss` the object is trusted (results of fallback sites,
whose kinds the site has already checked).

`box` returns a new reference (NULL only when CPython is out of memory).  A NumPy scalar is
made by calling its type with the equivalent Python number, which is exact for every
supported dtype: the element keeps its NumPy type where it leaves native code.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from llvmlite import ir

from ..element_ops import load_value
from . import cpython
from .ntypes import (
    DOUBLE,
    I32,
    I64,
    PTR,
    Array,
    Const,
    NType,
    NumpyScalar,
    NValue,
    OptionalScalar,
    PyList,
    PyScalar,
    Shape,
    Tagged,
    Tuple,
    Undefined,
)

if TYPE_CHECKING:
    from .emitter import FunctionEmitter


def _null() -> ir.Constant:
    return ir.Constant(PTR, None)


def _new_ref(em: FunctionEmitter, obj: ir.Value) -> ir.Value:
    cpython.call(em.b, "Py_IncRef", obj)
    return obj


def box(em: FunctionEmitter, value: NValue) -> ir.Value:
    b, kind = em.b, value.kind
    if isinstance(kind, PyScalar):
        if kind.kind == "int":
            return cpython.call(b, "PyLong_FromLongLong", value.value)
        if kind.kind == "float":
            return cpython.call(b, "PyFloat_FromDouble", value.value)
        return _new_ref(em, b.select(value.value, em.object(True), em.object(False)))
    if isinstance(kind, (Const, Undefined)):
        return _new_ref(em, em.object(kind.value if isinstance(kind, Const) else None))
    if isinstance(kind, NumpyScalar):
        return _box_numpy_scalar(em, kind.dtype, value.value)
    if isinstance(kind, (Array, PyList)):
        return _new_ref(em, value.parts[0])
    if isinstance(kind, OptionalScalar):
        return _box_optional(em, value)
    if isinstance(kind, Tagged):
        return _box_tagged(em, value)
    if isinstance(kind, (Tuple, Shape)):
        elems = kind.elems if isinstance(kind, Tuple) else (PyScalar("int"),) * kind.rank
        return _box_tuple(em, elems, value.parts)
    raise AssertionError(f"cannot box {kind}")


def _python_number(em: FunctionEmitter, dtype: np.dtype, v: ir.Value) -> ir.Value:
    """The Python int/float/bool equal to an element value (a new reference)."""
    b = em.b
    if dtype.kind == "b":
        return _new_ref(em, b.select(v, em.object(True), em.object(False)))
    if dtype.kind == "f":
        return cpython.call(b, "PyFloat_FromDouble",
                            b.fpext(v, DOUBLE) if v.type != DOUBLE else v)
    if dtype.kind == "u":
        return cpython.call(b, "PyLong_FromUnsignedLongLong", b.zext(v, I64)
                            if v.type.width < 64 else v)
    return cpython.call(b, "PyLong_FromLongLong", b.sext(v, I64) if v.type.width < 64 else v)


def _box_numpy_scalar(em: FunctionEmitter, dtype: np.dtype, v: ir.Value) -> ir.Value:
    number = em.check_object(_python_number(em, dtype, v))
    result = cpython.call(em.b, "PyObject_CallOneArg", em.object(dtype.type), number)
    cpython.call(em.b, "Py_DecRef", number)
    return result


def _box_optional(em: FunctionEmitter, value: NValue) -> ir.Value:
    b = em.b
    is_none, *parts = value.parts
    with b.if_else(is_none) as (then, otherwise):
        with then:
            none_obj = _new_ref(em, em.object(None))
            none_end = b.block
        with otherwise:
            obj = box(em, NValue(value.kind.elem, tuple(parts)))
            obj_end = b.block
    phi = b.phi(PTR)
    phi.add_incoming(none_obj, none_end)
    phi.add_incoming(obj, obj_end)
    return phi


def _box_tagged(em: FunctionEmitter, value: NValue) -> ir.Value:
    b = em.b
    python, numpy = value.kind.alternatives(value.parts)
    with b.if_else(value.parts[0]) as (then, otherwise):
        with then:
            numpy_obj = box(em, numpy)
            numpy_end = b.block
        with otherwise:
            python_obj = box(em, python)
            python_end = b.block
    phi = b.phi(PTR)
    phi.add_incoming(numpy_obj, numpy_end)
    phi.add_incoming(python_obj, python_end)
    return phi


def _box_tuple(em: FunctionEmitter, elems: tuple[NType, ...], parts: tuple) -> ir.Value:
    b = em.b
    tup = em.check_object(cpython.call(b, "PyTuple_New", ir.Constant(I64, len(elems))))
    offset = 0
    for k, kind in enumerate(elems):
        n = len(kind.components())
        item = em.check_object(box(em, NValue(kind, parts[offset:offset + n])))
        cpython.call(b, "PyTuple_SetItem", tup, ir.Constant(I64, k), item)  # steals item
        offset += n
    return tup


# ---------------------------------------------------------------------------- unboxing


def unbox(em: FunctionEmitter, obj: ir.Value, kind: NType, miss: ir.Block | None = None
          ) -> NValue:
    b = em.b

    def require(ok: ir.Value) -> None:
        if miss is not None:
            em._branch_unless(ok, miss)

    def exact_type(cls: type) -> None:
        if miss is not None:
            require(b.icmp_unsigned("==", cpython.type_of(b, obj), em.object(cls)))

    if isinstance(kind, PyScalar):
        if kind.kind == "bool":
            is_true = b.icmp_unsigned("==", obj, em.object(True))
            require(b.or_(is_true, b.icmp_unsigned("==", obj, em.object(False))))
            return NValue(kind, (is_true,))
        exact_type(int if kind.kind == "int" else float)
        if kind.kind == "float":
            return NValue(kind, (cpython.field(b, obj, cpython.FLOAT_VALUE, DOUBLE),))
        overflow = em.alloca(I32)
        v = cpython.call(b, "PyLong_AsLongLongAndOverflow", obj, overflow)
        require(b.icmp_signed("==", b.load(overflow, typ=I32), ir.Constant(I32, 0)))
        return NValue(kind, (v,))
    if isinstance(kind, Const):
        require(b.icmp_unsigned("==", obj, em.object(kind.value)))
        return NValue(kind, ())
    if isinstance(kind, NumpyScalar):
        exact_type(kind.dtype.type)
        at = b.gep(obj, [ir.Constant(I64, cpython.NUMPY_SCALAR_VALUE)], source_etype=ir.IntType(8))
        return NValue(kind, (load_value(b, at, kind.dtype),))
    if isinstance(kind, Array):
        return _unbox_array(em, obj, kind, require, exact_type)
    if isinstance(kind, OptionalScalar):
        return _unbox_optional(em, obj, kind, miss)
    if isinstance(kind, PyList):
        exact_type(list)
        if miss is not None:
            _check_items(em, obj, kind.elem, miss)
        return NValue(kind, (obj,))
    if isinstance(kind, Tuple):
        exact_type(tuple)
        size = cpython.field(b, obj, cpython.VAR_SIZE, I64)
        require(b.icmp_signed("==", size, ir.Constant(I64, len(kind.elems))))
        parts = []
        for k, elem in enumerate(kind.elems):
            parts += unbox(em, cpython.tuple_item(b, obj, k), elem, miss).parts
        return NValue(kind, tuple(parts))
    raise AssertionError(f"cannot unbox {kind}")


def _unbox_array(em: FunctionEmitter, obj: ir.Value, kind: Array, require, exact_type
                 ) -> NValue:
    b = em.b
    exact_type(np.ndarray)
    descr = cpython.field(b, obj, cpython.ARRAY_DESCR, PTR)
    require(b.icmp_unsigned("==", descr, em.object(kind.dtype)))
    ndim = cpython.field(b, obj, cpython.ARRAY_NDIM, I32)
    require(b.icmp_signed("==", ndim, ir.Constant(I32, kind.rank)))
    if kind.writeable:
        flags = cpython.field(b, obj, cpython.ARRAY_FLAGS, I32)
        writeable = b.and_(flags, ir.Constant(I32, cpython.NPY_ARRAY_WRITEABLE))
        require(b.icmp_unsigned("!=", writeable, ir.Constant(I32, 0)))
    data = cpython.field(b, obj, cpython.ARRAY_DATA, PTR)
    dims = cpython.field(b, obj, cpython.ARRAY_DIMS, PTR)
    strides = cpython.field(b, obj, cpython.ARRAY_STRIDES, PTR)
    sizes = [b.load(b.gep(dims, [ir.Constant(I64, k)], source_etype=I64), typ=I64)
             for k in range(kind.rank)]
    steps = [b.load(b.gep(strides, [ir.Constant(I64, k)], source_etype=I64), typ=I64)
             for k in range(kind.rank)]
    return NValue(kind, (obj, data, *sizes, *steps))


def list_items(em: FunctionEmitter, obj: ir.Value) -> tuple[ir.Value, ir.Value]:
    """A list's length and its array of item pointers (PyListObject: ob_size, ob_item)."""
    return (cpython.field(em.b, obj, cpython.VAR_SIZE, I64),
            cpython.field(em.b, obj, cpython.LIST_ITEMS, PTR))


def _check_items(em: FunctionEmitter, obj: ir.Value, elem: PyScalar, miss: ir.Block) -> None:
    """Jump to `miss` unless every item of the list is exactly of kind `elem`."""
    b = em.b
    size, items = list_items(em, obj)
    entry = b.block
    loop, done = em.fn.append_basic_block("check_items"), em.fn.append_basic_block("checked")
    b.cbranch(b.icmp_signed(">", size, ir.Constant(I64, 0)), loop, done)
    b.position_at_end(loop)
    index = b.phi(I64)
    index.add_incoming(ir.Constant(I64, 0), entry)
    item = b.load(b.gep(items, [index], source_etype=PTR), typ=PTR)
    unbox(em, item, elem, miss)
    following = b.add(index, ir.Constant(I64, 1))
    index.add_incoming(following, b.block)
    b.cbranch(b.icmp_signed("<", following, size), loop, done)
    b.position_at_end(done)


def _unbox_optional(em: FunctionEmitter, obj: ir.Value, kind: OptionalScalar,
                    miss: ir.Block | None) -> NValue:
    b = em.b
    is_none = b.icmp_unsigned("==", obj, em.object(None))
    entry_end = b.block
    value_bb, join_bb = em.fn.append_basic_block("unbox"), em.fn.append_basic_block("unboxed")
    b.cbranch(is_none, join_bb, value_bb)
    b.position_at_end(value_bb)
    inner = unbox(em, obj, kind.elem, miss)
    value_end = b.block
    b.branch(join_bb)
    b.position_at_end(join_bb)
    parts = []
    for typ, part in zip(kind.elem.components(), inner.parts):
        phi = b.phi(typ)
        phi.add_incoming(ir.Constant(typ, ir.Undefined), entry_end)
        phi.add_incoming(part, value_end)
        parts.append(phi)
    return NValue(kind, (is_none, *parts))

