"""isinstance() targets: the IR types isinstance(x, T) tests, and whether a value's static
type decides the answer when compiling or only its run-time value can."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.graph import SourceRange, Value
from ..ir.types import (
    AnyType,
    BoolType,
    ClassType,
    ComplexType,
    DictType,
    FloatType,
    IntType,
    ListType,
    NoneType,
    StrType,
    TensorType,
    TupleType,
    Type,
    VarTupleType,
    is_subtype,
)
from .annotations import AnnotationError, to_type
from .errors import CompilationError

PY_TYPES = {int: IntType, float: FloatType, bool: BoolType, str: StrType,
            type(None): NoneType, np.ndarray: TensorType(ndarray=True)}
_PY_CONTAINERS = {list: ListType, dict: DictType, tuple: TupleType}
# `isinstance(x, list)` checked at run time: a list of anything
RUNTIME_CONTAINER = {ListType: ListType(AnyType), DictType: DictType(AnyType, AnyType),
                     TupleType: VarTupleType(AnyType)}


def isinstance_target(obj: object, src: SourceRange, class_type_of: Callable
                      ) -> list[Type | type]:
    """The types one class of isinstance's second argument names (a container class
    stands for every list, dict or tuple; an abstract NumPy class such as np.integer for
    the scalars of each of its dtypes)."""
    if obj in PY_TYPES:
        return [PY_TYPES[obj]]
    if obj in _PY_CONTAINERS:
        return [_PY_CONTAINERS[obj]]
    if isinstance(obj, ClassType):
        return [obj]
    if _numpy_class(obj) is not None:
        return _numpy_scalar_types(_numpy_class(obj), src)
    if isinstance(obj, Value):
        raise CompilationError("isinstance() arg 2 must be a type or a tuple of types, "
                               f"not a value of type {obj.type.annotation}", src)
    try:
        return [to_type(obj, class_type_of)]
    except AnnotationError as e:
        raise CompilationError(f"isinstance(): {e}", src) from None


def instance_of(option: Type, target: Type) -> bool:
    """Whether values of static type `option` pass isinstance(v, target), for narrowing
    (a Tensor narrows as any NumPy class's instance; see undecided_instance)."""
    if target in (ListType, DictType, TupleType):
        return isinstance(option, target)
    if target == IntType and option == BoolType:
        return True
    if isinstance(target, TensorType):
        return isinstance(option, TensorType)
    if isinstance(option, ClassType) and isinstance(target, ClassType):
        # a class-typed value holds an instance of exactly its class (script code has no
        # subtyping of classes), which is an instance of each of its Python bases
        return issubclass(option.py_class, target.py_class)
    return is_subtype(option, target)


def undecided_instance(option: Type, target: Type) -> bool:
    """Whether isinstance(v, target) of a Tensor-typed value is known only at run time: a
    Tensor holds an ndarray or a NumPy scalar of any dtype, so `np.ndarray` and
    `np.float32` targets depend on the value, and np.float64 / np.complex128 scalars are
    also Python floats / complex numbers.  (This was decided when compiling:
    isinstance(x[0], np.int64) was True for an int8 array, isinstance(x[0], float) False
    for a float64 one.)"""
    if not isinstance(option, TensorType):
        return False
    if isinstance(target, TensorType):
        return any(getattr(target, r) is not None and getattr(option, r) != getattr(target, r)
                   for r in ("dtype", "ndarray"))
    return target in (FloatType, ComplexType) and option.ndarray is not True


def _numpy_class(obj: object) -> type | None:
    """The NumPy scalar class `obj` names (np.float32, or a constant holding one)."""
    if isinstance(obj, Value) and obj.node.kind == "prim::Constant":
        obj = obj.node.attrs.get("value")
    return obj if isinstance(obj, type) and issubclass(obj, np.generic) else None


def _numpy_scalar_types(cls: type, src: SourceRange) -> list[TensorType]:
    """isinstance's targets for a NumPy scalar class: its scalars, of its dtype; for an
    abstract class (np.integer, np.floating, np.number, np.generic ...) the scalars of
    every numeric or bool dtype whose class derives from it."""
    if cls is np.generic:
        return [TensorType(ndarray=False)]
    dtypes = [name for c, name in _NUMERIC_DTYPES.items() if issubclass(c, cls)]
    if not dtypes:
        raise CompilationError(f"isinstance() with np.{cls.__name__} is not supported: test "
                               "the value's dtype (x.dtype == np.float32) or its kind "
                               "(x.dtype.kind == 'f')", src)
    return [TensorType(dtype=name, ndarray=False) for name in dict.fromkeys(dtypes)]


# the concrete NumPy scalar classes of numbers and bools, and their dtype names
_NUMERIC_DTYPES = {c: np.dtype(c).name for c in set(np.sctypeDict.values())
                   if np.dtype(c).kind in "biufc"}
