"""The CPython boundary of native scalar code: C-API declarations, object layouts, and
the conversion of a JIT-compiled function into a Python builtin.

Why a builtin (a `PyCFunction` with METH_FASTCALL | METH_KEYWORDS) instead of a cffi
call: a region's entry point takes the argument objects themselves, checks their types (the
guards), unboxes them, runs, and boxes its results, all under the GIL.  A call then costs
~20-40 ns, where a cffi call of the same function costs ~400 ns on this machine (argument
conversion, GIL release, errno handling), more than the whole 1 µs budget of a small
scripted function.  Holding the GIL also lets native code call back into Python on its
rare paths (raising an exception, a NumPy warning) with the interpreter's exact semantics.

Only stable parts of CPython are relied on: the exported C-API functions below (part of the
stable ABI), the object header (`ob_type` at offset 8, a tuple's or list's `ob_size` at 16),
tuple items and a list's item pointer at offset 24 and a float's value at offset 16
(unchanged since Python 3.0), and NumPy's public `PyArrayObject_fields` layout, which
NumPy's own inline accessors use.
"""
from __future__ import annotations

import ctypes

from llvmlite import ir

from .ntypes import DOUBLE, I32, I64, PTR

OB_TYPE = 8                 # PyObject.ob_type
VAR_SIZE = 16               # PyVarObject.ob_size (tuples, lists)
TUPLE_ITEMS = 24            # PyTupleObject.ob_item
LIST_ITEMS = 24             # PyListObject.ob_item (a pointer to the items)
FLOAT_VALUE = 16            # PyFloatObject.ob_fval
NUMPY_SCALAR_VALUE = 16     # PyXxxScalarObject.obval (right after PyObject_HEAD)
# PyArrayObject_fields on 64-bit platforms
ARRAY_DATA, ARRAY_NDIM, ARRAY_DIMS, ARRAY_STRIDES, ARRAY_DESCR, ARRAY_FLAGS = (
    16, 24, 32, 40, 56, 64)
NPY_ARRAY_WRITEABLE = 0x0400
METH_FASTCALL, METH_KEYWORDS = 0x0080, 0x0002

# name -> (return type, parameter types, variadic)
_SIGNATURES: dict[str, tuple[ir.Type, tuple[ir.Type, ...]]] = {
    "PyLong_AsLongLongAndOverflow": (I64, (PTR, PTR)),
    "PyLong_FromLongLong": (PTR, (I64,)),
    "PyLong_FromUnsignedLongLong": (PTR, (I64,)),
    "PyFloat_FromDouble": (PTR, (DOUBLE,)),
    "PyTuple_New": (PTR, (I64,)),
    "PyTuple_SetItem": (I32, (PTR, I64, PTR)),
    "PyObject_Vectorcall": (PTR, (PTR, PTR, I64, PTR)),
    "PyObject_CallOneArg": (PTR, (PTR, PTR)),
    "Py_IncRef": (ir.VoidType(), (PTR,)),
    "Py_DecRef": (ir.VoidType(), (PTR,)),
    "PyErr_CheckSignals": (I32, ()),
}


def declare(module: ir.Module, name: str) -> ir.Function:
    """The module's declaration of C-API function `name` (added on first use)."""
    fn = module.globals.get(name)
    if fn is None:
        ret, params = _SIGNATURES[name]
        fn = ir.Function(module, ir.FunctionType(ret, params), name=name)
    return fn


def call(b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    return b.call(declare(b.module, name), list(args))


def field(b: ir.IRBuilder, obj: ir.Value, offset: int, typ: ir.Type) -> ir.Value:
    """The `typ` at byte `offset` of the object at `obj`."""
    return b.load(b.gep(obj, [ir.Constant(I64, offset)], source_etype=ir.IntType(8)), typ=typ)


def type_of(b: ir.IRBuilder, obj: ir.Value) -> ir.Value:
    return field(b, obj, OB_TYPE, PTR)


def tuple_item(b: ir.IRBuilder, tup: ir.Value, index: int) -> ir.Value:
    return field(b, tup, TUPLE_ITEMS + 8 * index, PTR)


class _PyMethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_new_cfunction = ctypes.pythonapi.PyCFunction_NewEx
_new_cfunction.restype = ctypes.py_object
_new_cfunction.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]


class BuiltinKeepAlive:
    """What a native builtin's code and method table need to outlive: stored in the
    builtin's `self` tuple, so they live exactly as long as the builtin."""

    __slots__ = ("method_def", "name", "compiled")

    def __init__(self, method_def: _PyMethodDef, name: bytes, compiled: object):
        self.method_def, self.name, self.compiled = method_def, name, compiled


def make_builtin(name: str, address: int, objects: list, compiled: object):
    """A Python builtin calling the METH_FASTCALL | METH_KEYWORDS function at `address`
    (`PyObject *f(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject
    *kwnames)`); its `self` is the tuple `(keep_alive, *objects)`, which the native code
    reads its objects from (so the code itself holds no addresses and can be cached on
    disk)."""
    encoded = name.encode()
    method_def = _PyMethodDef(encoded, address, METH_FASTCALL | METH_KEYWORDS, None)
    context = (BuiltinKeepAlive(method_def, encoded, compiled), *objects)
    return _new_cfunction(ctypes.addressof(method_def), context, None)


# Index of the first object a native function reads from its `self` tuple.
FIRST_OBJECT = 1
