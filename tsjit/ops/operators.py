"""Python's operators (`+`, `<`, `x[i]`, `x += y`, ...) over every type of the language.

One op per operator: its type rule covers ints, floats, bools, strings,
containers and NumPy values exactly as Python and NumPy combine them, and its
implementation is the operator itself, so the interpreter inherits Python's
semantics (floor division of negatives, ZeroDivisionError, NumPy promotion).
"""
from __future__ import annotations

import itertools
import operator

import numpy as np

from ..ir.types import TENSOR as T
from ..ir.types import (
    AnyType,
    BoolType,
    ComplexType,
    DictType,
    FloatType,
    IntType,
    IterableType,
    ListType,
    NoneType,
    StrType,
    TensorType,
    TupleType,
    Type,
    UnionType,
    VarTupleType,
    is_number,
    is_subtype,
    make_union,
    union_options,
)
from .python_calls import storable
from .registry import OpTypeError, register

SYMBOLS = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "lshift": "<<", "rshift": ">>", "and_": "&", "or_": "|", "xor": "^",
    "matmul": "@",
}


# The fuser's view of each operator on arrays: (kernel op name, the NumPy ufunc).
KERNELS = {
    "add": ("add", np.add), "sub": ("sub", np.subtract), "mul": ("mul", np.multiply),
    "truediv": ("truediv", np.true_divide), "floordiv": ("floordiv", np.floor_divide),
    "mod": ("mod", np.remainder), "pow": ("pow", np.power),
    "lshift": ("left_shift", np.left_shift), "rshift": ("right_shift", np.right_shift),
    "and_": ("bitwise_and", np.bitwise_and), "or_": ("bitwise_or", np.bitwise_or),
    "xor": ("bitwise_xor", np.bitwise_xor), "eq": ("eq", np.equal),
    "ne": ("ne", np.not_equal), "lt": ("lt", np.less), "le": ("le", np.less_equal),
    "gt": ("gt", np.greater), "ge": ("ge", np.greater_equal), "neg": ("neg", np.negative),
    "pos": ("pos", np.positive), "invert": ("invert", np.invert),
}


# Operators that are total on Python numbers: `a + b` of ints/floats/bools never raises
# (division, modulo, power and shifts can: ZeroDivisionError, OverflowError, ValueError).
_TOTAL_ON_NUMBERS = {"add", "sub", "mul", "and_", "or_", "xor", "lt", "le", "gt", "ge",
                     "neg", "pos", "invert"}


def raises_unless_numbers(types) -> bool:
    return not all(is_number(t) for t in types)


def _elementwise(name: str) -> dict:
    if name not in KERNELS:
        return {}
    kernel, ufunc = KERNELS[name]
    traits = {"elementwise": True, "attrs": {"kernel": kernel, "ufunc": ufunc}}
    if name in _TOTAL_ON_NUMBERS:
        traits["may_raise"] = raises_unless_numbers
    return traits


def _type_name(t: Type) -> str:
    return t.annotation


def _unsupported(symbol: str, a: Type, b: Type) -> OpTypeError:
    return OpTypeError(f"unsupported operand types for {symbol}: "
                       f"'{_type_name(a)}' and '{_type_name(b)}'")


def numeric_result(name: str, a: Type, b: Type) -> Type | None:
    """Python's result type for int/float/bool/complex operands, or None if not both
    numbers (or Python has no such operator for them)."""
    if ComplexType in (a, b):
        other = b if a == ComplexType else a
        if (is_number(other) or other == ComplexType) and name in _COMPLEX_OPERATORS:
            return ComplexType
        return None
    if not (is_number(a) and is_number(b)):
        return None
    if name == "truediv":
        return FloatType
    if name in ("and_", "or_", "xor") and a == b == BoolType:
        return BoolType
    if FloatType in (a, b):
        if name in ("and_", "or_", "xor", "lshift", "rshift"):
            return None
        return FloatType
    return IntType


# the operators Python defines on complex numbers (no //, %, bitwise or shifts)
_COMPLEX_OPERATORS = ("add", "sub", "mul", "truediv", "pow")


def _sequence_result(name: str, a: Type, b: Type) -> Type | None:
    """str/list/tuple concatenation and repetition."""
    if name == "add":
        if a == b == StrType:
            return StrType
        if isinstance(a, ListType) and isinstance(b, ListType) and a.elem == b.elem:
            return a
        if isinstance(a, TupleType) and isinstance(b, TupleType):
            return TupleType(a.elems + b.elems)
        if isinstance(a, (TupleType, VarTupleType)) and isinstance(b, (TupleType, VarTupleType)):
            elems = {e for t in (a, b) for e in (t.elems if isinstance(t, TupleType) else
                                                 (t.elem,))}
            if len(elems) == 1:             # x.shape + (1,): a Tuple[int, ...]
                return VarTupleType(elems.pop())
    if name == "mul":
        seq, n = (a, b) if b in (IntType, BoolType) else (b, a)
        if n in (IntType, BoolType) and (seq == StrType or isinstance(seq, (ListType,
                                                                              VarTupleType))):
            return seq
        if n in (IntType, BoolType) and isinstance(seq, TupleType) and seq.py_class is None:
            if not seq.elems:
                return seq
            if all(e == seq.elems[0] for e in seq.elems):    # (0,) * n: a length known
                return VarTupleType(seq.elems[0])           # when it runs
            raise OpTypeError(f"a {seq.annotation} repeated a number of times known only "
                              "when it runs mixes element types")
    if name == "mod" and a == StrType:
        return StrType
    if name == "or_" and isinstance(a, DictType) and a == b:     # d | e: a merged copy
        return a
    return None


def binary_rule(name: str):
    symbol = SYMBOLS[name]

    def infer(types, attrs):
        a, b = types
        if isinstance(a, UnionType) or isinstance(b, UnionType):
            return _per_option(infer, types, attrs)
        if name == "mod" and a == StrType:          # "%s" % value: any value formats
            return StrType
        if isinstance(a, TensorType) or isinstance(b, TensorType):
            other = b if isinstance(a, TensorType) else a
            if isinstance(other, TensorType) or is_number(other) or other in (AnyType,
                                                                                ComplexType):
                return T
            raise _unsupported(symbol, a, b)
        if AnyType in (a, b):
            return AnyType
        result = numeric_result(name, a, b) or _sequence_result(name, a, b)
        if result is None:
            raise _unsupported(symbol, a, b)
        return result
    return infer


for _name, _sym in SYMBOLS.items():
    register(f"aten::{_name.rstrip('_')}", "a, b", binary_rule(_name), f"{{0}} {_sym} {{1}}",
             python=(getattr(operator, _name),), **_elementwise(_name))

# x op= y: in place for arrays and lists (the caller's object changes), a rebinding
# for immutable values, exactly as Python's operator.i<op> does it.
for _name, _sym in SYMBOLS.items():
    register(f"aten::i{_name.rstrip('_')}", "a, b", binary_rule(_name),
             f"_operator.i{_name.rstrip('_')}({{0}}, {{1}})", writes=(0,),
             attrs={**_elementwise(_name).get("attrs", {}), "augmented": f"{_sym}="})


def compare_rule(types, attrs):
    a, b = types
    if isinstance(a, TensorType) or isinstance(b, TensorType):
        return T
    return BoolType


def ordering_rule(symbol: str):
    def infer(types, attrs):
        a, b = types
        if isinstance(a, TensorType) or isinstance(b, TensorType):
            return T
        comparable = (is_number(a) and is_number(b)) or (a == b != ComplexType) or AnyType in (
            a, b) or (isinstance(a, (TupleType, ListType)) and isinstance(b, (TupleType,
                                                                             ListType)))
        if not comparable:
            raise OpTypeError(f"'{symbol}' not supported between '{_type_name(a)}' "
                              f"and '{_type_name(b)}'")
        return BoolType
    return infer


def equality_may_raise(types) -> bool:
    """`==` of plain values never raises; arrays (shape mismatch), class instances (their
    __eq__) and Any may."""
    return any(_holds_arbitrary(t) for t in types)


def _holds_arbitrary(t: Type) -> bool:
    if isinstance(t, TensorType) or t == AnyType or hasattr(t, "py_class"):
        return True
    return any(_holds_arbitrary(c) for c in t.contained())


for _name, _sym in {"eq": "==", "ne": "!="}.items():
    register(f"aten::{_name}", "a, b", compare_rule, f"{{0}} {_sym} {{1}}",
             python=(getattr(operator, _name),), may_raise=equality_may_raise,
             **_elementwise(_name))
for _name, _sym in {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}.items():
    register(f"aten::{_name}", "a, b", ordering_rule(_sym), f"{{0}} {_sym} {{1}}",
             python=(getattr(operator, _name),), **_elementwise(_name))


def _per_option(infer, types, attrs) -> Type:
    """An operator on a Union (`isinstance(x, (int, float))` narrows x to one): each
    alternative must take it, and the result is the union of their results."""
    return make_union([infer(list(combination), attrs)
                       for combination in itertools.product(*map(union_options, types))])


def unary_rule(symbol: str):
    def infer(types, attrs):
        (a,) = types
        if isinstance(a, UnionType):
            return _per_option(infer, types, attrs)
        if isinstance(a, TensorType) or a == AnyType:
            return a
        if a in (FloatType, ComplexType) and symbol != "~":
            return a
        if a in (IntType, BoolType):
            return IntType
        raise OpTypeError(f"bad operand type for unary {symbol}: '{_type_name(a)}'")
    return infer


register("aten::neg", "a", unary_rule("-"), "-{0}", python=(operator.neg,), **_elementwise("neg"))
register("aten::pos", "a", unary_rule("+"), "+{0}", python=(operator.pos,), **_elementwise("pos"))
register("aten::invert", "a", unary_rule("~"), "~{0}", python=(operator.invert,),
         **_elementwise("invert"))


def contains_rule(types, attrs):
    container, item = types
    if isinstance(container, TensorType):
        return BoolType
    if container == StrType and item != StrType:
        raise OpTypeError(f"'in <string>' requires string as left operand, not "
                          f"{_type_name(item)}")
    if isinstance(container, (ListType, DictType, TupleType, VarTupleType, IterableType)) or \
            container in (StrType, AnyType) or hasattr(container, "py_class"):
        return BoolType
    raise OpTypeError(f"argument of type '{_type_name(container)}' is not iterable")


register("aten::__contains__", "container, item", contains_rule, "{1} in {0}")


def getitem_rule(types, attrs):
    """x[i] and x[a:b]: element or slice types of each container."""
    seq, index = types
    is_slice = attrs.get("slice", False)
    if isinstance(seq, TensorType):
        return _element_type(seq, index) or T
    if seq == AnyType:
        return AnyType
    if isinstance(seq, DictType):
        if not is_subtype(index, seq.key) and not (is_number(index) and is_number(seq.key)):
            raise OpTypeError(f"dict key must be {_type_name(seq.key)}, "
                              f"found {_type_name(index)}")
        return seq.value
    if index not in (IntType, BoolType, NoneType) and not isinstance(index, TensorType) and not (
            is_slice or isinstance(index, TupleType)):
        raise OpTypeError(f"{_type_name(seq)} indices must be integers or slices, "
                          f"not {_type_name(index)}")
    if seq == StrType:
        return StrType
    if isinstance(seq, ListType):
        return seq if is_slice else seq.elem
    if isinstance(seq, IterableType) and seq.kind == "range":
        return seq if is_slice else IntType
    if isinstance(seq, VarTupleType):
        return seq if is_slice else seq.elem
    if isinstance(seq, TupleType):
        const = attrs.get("index")
        if is_slice:
            if const is not None:
                return TupleType(seq.elems[slice(*const)])
            if _common(seq.elems) is None:
                raise OpTypeError("a tuple of mixed types can only be sliced by constants")
            return VarTupleType(_common(seq.elems))
        if const is None:
            common = _common(seq.elems)
            if common is None:
                raise OpTypeError("a tuple of mixed types can only be indexed by a constant")
            return common
        try:
            return seq.elems[const]
        except IndexError:
            raise OpTypeError(f"tuple index {const} out of range for {seq}") from None
    raise OpTypeError(f"'{_type_name(seq)}' object is not subscriptable")


def _element_type(array: TensorType, index: Type) -> TensorType | None:
    """The type of `x[i]`, `x[i, j]` (one int per dimension) when the array's dtype and
    rank are known: a NumPy scalar of its dtype, for numbers and bools (an object array's
    elements are anything; a datetime's unit and a string's length are not in the type)."""
    indices = index.elems if isinstance(index, TupleType) else (index,)
    if not (array.ndarray and array.dtype is not None and array.sizes is not None
            and len(array.sizes) == len(indices) and all(t == IntType for t in indices)):
        return None
    if np.dtype(array.dtype).kind not in "biufc":
        return None
    return TensorType(array.dtype, (), None, False)


def _common(elems: tuple[Type, ...]) -> Type | None:
    return elems[0] if elems and all(e == elems[0] for e in elems) else (
        None if elems else AnyType)


register("aten::__getitem__", "seq, index", getitem_rule, "{0}[{1}]", views=True)


def setitem_rule(types, attrs):
    seq, index, value = types
    if isinstance(seq, TensorType) or seq == AnyType:
        return None
    if isinstance(seq, ListType):
        if index not in (IntType, BoolType) and not attrs.get("slice"):
            raise OpTypeError(f"list indices must be integers, not {_type_name(index)}")
        expected = seq if attrs.get("slice") else seq.elem
    elif isinstance(seq, DictType):
        if not is_subtype(index, seq.key):
            raise OpTypeError(f"dict key must be {_type_name(seq.key)}, "
                              f"found {_type_name(index)}")
        expected = seq.value
    else:
        raise OpTypeError(f"'{_type_name(seq)}' object does not support item assignment")
    if not storable(value, expected):
        raise OpTypeError(f"cannot assign a value of type {_type_name(value)} to an element "
                          f"of {_type_name(seq)}")
    return None


register("aten::__setitem__", "seq, index, value", setitem_rule, "{0}[{1}] = {2}", writes=(0,))
register("aten::__delitem__", "seq, index", lambda types, attrs: None, "del {0}[{1}]",
         writes=(0,))


def slice_rule(types, attrs):
    for t in types:
        if t not in (IntType, BoolType, NoneType) and not isinstance(t, TensorType) \
                and t != AnyType and not (hasattr(t, "elem") and t.elem == IntType):
            raise OpTypeError(f"slice indices must be integers or None, not {_type_name(t)}")
    return AnyType


# A slice object (a:b:c) as an index value; its static type is never observed.
register("prim::Slice", "start, stop, step", slice_rule, "slice({0}, {1}, {2})",
         may_raise=False)
