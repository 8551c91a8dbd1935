"""Python's builtin functions (`len`, `min`, `int()`, `sorted`, `format`, ...) as ops.

Every op is implemented by a call of the very Python builtin, so the interpreter inherits
Python's semantics (round half to even, `int()` toward zero, `ValueError` from `min([])`).
Type rules give the type of the value Python returns.  Where no single static type says
what Python returns — `min(1, 2.5)` and `max(x_np_scalar, 0.0)` return one of their
arguments unchanged, `sum([])` of a `List[float]` is the int 0 — the rule picks the wider
type (float; Tensor when a NumPy value takes part) and the interpreter still returns
Python's object, so results stay exactly eager's.

Ops whose result is, or holds, an object taken from an argument (`min` of arrays, the
elements `sorted` and `list()` copy into a new list) declare `views=True`: a write
through the result is a write to the argument's contents.

Names follow TorchScript (`aten::len`, `aten::Int`, `aten::str`, `aten::format`), with
`prim::` for builtins whose `aten::` name is a NumPy function (`prim::min`, `prim::sum`,
`prim::round`, `prim::any`) or a Python operator (`prim::pow`).
"""
from __future__ import annotations

import ast
import collections
from collections.abc import Sequence

import numpy as np

from ..ir.types import (
    TENSOR,
    AnyType,
    BoolType,
    ClassType,
    ComplexType,
    DictType,
    EnumType,
    FloatType,
    IntType,
    IterableType,
    ListType,
    NoneType,
    OptionalType,
    StrType,
    TensorType,
    TupleType,
    Type,
    UnionType,
    VarTupleType,
    is_number,
    make_union,
    unify,
    union_options,
)
from .operators import binary_rule, numeric_result
from .python_calls import (
    INDEX,
    KEYWORDS,
    OBJECT,
    REAL,
    STR,
    check_args,
    iterated_type,
    number_join,
    register_function,
    require_orderable,
    signature_rule,
)
from .registry import OpTypeError, TypeRule, register


def _len_rule(types, attrs):
    (t,) = types
    if isinstance(t, UnionType):    # (after isinstance(x, (list, dict))): each has a len
        for option in union_options(t):
            _len_rule([option], attrs)
        return IntType
    if isinstance(t, (ListType, DictType, TupleType, VarTupleType, TensorType)) or t in (
            StrType, AnyType) or (isinstance(t, ClassType) and hasattr(t.py_class, "__len__")) \
            or (isinstance(t, IterableType) and t.kind in IterableType.SIZED):
        return IntType
    raise OpTypeError(f"object of type '{t.annotation}' has no len()")


def _abs_rule(types, attrs):
    (t,) = types
    if t in (IntType, BoolType):
        return IntType
    if isinstance(t, TensorType):
        return TENSOR
    if t in (FloatType, AnyType):
        return t
    if t == ComplexType:
        return FloatType
    raise OpTypeError(f"bad operand type for abs(): '{t.annotation}'")


def ordered_join(types: Sequence[Type]) -> Type:
    """The type of `min(a, b, ...)`: the result is one of the arguments (see the module doc)."""
    if AnyType in types:
        return AnyType
    if all(is_number(t) or isinstance(t, TensorType) for t in types):
        return TENSOR if any(isinstance(t, TensorType) for t in types) else number_join(types)
    for t in types[1:]:
        if t != types[0]:
            raise OpTypeError(f"'<' not supported between instances of '{t.annotation}' "
                              f"and '{types[0].annotation}'")
    return require_orderable(types[0])


def _extremum_rule(callee: str) -> TypeRule:
    def infer(types, attrs):
        keywords = attrs.get(KEYWORDS, ())
        for name in keywords:
            if name != "default":
                raise OpTypeError(f"{callee}() got an unexpected keyword argument '{name}'"
                                  + (" (key= functions are not supported in script code)"
                                     if name == "key" else ""))
        if keywords:                    # max(iterable, default=d): d if it is empty
            *types, default = types
            if len(types) != 1:
                raise OpTypeError(f"Cannot specify a default for {callee}() with multiple "
                                  "positional arguments")
            elem = require_orderable(iterated_type(types[0]))
            return unify(elem, default) or make_union([elem, default])
        if not types:
            raise OpTypeError(f"{callee} expected at least 1 argument, got 0")
        if len(types) == 1:
            return require_orderable(iterated_type(types[0]))
        return ordered_join(types)
    return infer


_add_rule = binary_rule("add")


def _sum_rule(types, attrs):
    iterable, start = types
    if start == StrType:
        raise OpTypeError("sum() can't sum strings [use ''.join(seq) instead]")
    elem = iterated_type(iterable)
    total = _add_rule([start, elem], attrs)
    return _add_rule([total, elem], attrs)


def _round_rule(types, attrs):
    number, ndigits = types
    if ndigits != NoneType and not INDEX(ndigits):
        raise OpTypeError(f"'{ndigits.annotation}' object cannot be interpreted as an integer")
    if number in (IntType, BoolType):
        return IntType
    if number == FloatType or isinstance(number, TensorType):
        # round(np.float32(x)) is a Python int; with ndigits it keeps the NumPy type
        if ndigits == NoneType:
            return IntType
        return TENSOR if isinstance(number, TensorType) else FloatType
    if number == AnyType:
        return AnyType
    raise OpTypeError(f"type {number.annotation} doesn't define __round__ method")


def _divmod_rule(types, attrs):
    a, b = types
    if any(isinstance(t, TensorType) for t in types) and all(REAL(t) for t in types):
        return TupleType((TENSOR, TENSOR))
    result = numeric_result("floordiv", a, b)
    if result is None:
        raise OpTypeError(f"unsupported operand type(s) for divmod(): '{a.annotation}' "
                          f"and '{b.annotation}'")
    return TupleType((result, result))


_power_rule = binary_rule("pow")


def _pow_rule(types, attrs):
    base, exp, mod = types
    if mod == NoneType:
        return _power_rule([base, exp], attrs)
    if not all(map(INDEX, types)):
        raise OpTypeError("pow() 3rd argument not allowed unless all arguments are integers")
    return TENSOR if any(isinstance(t, TensorType) for t in types) else IntType


def _int_rule(types, attrs):
    x, *base = types
    if attrs.get(KEYWORDS, ()) not in ((), ("base",)):
        raise OpTypeError(f"int() got an unexpected keyword argument "
                          f"'{next(k for k in attrs[KEYWORDS] if k != 'base')}'")
    if len(base) > 1:
        raise OpTypeError("int() got multiple values for argument 'base'")
    if base:
        check_args("int", types, (STR, INDEX))
    elif not (REAL(x) or x == StrType):
        raise OpTypeError("int() argument must be a string, a bytes-like object or a real "
                          f"number, not '{x.annotation}'")
    return IntType


def _float_rule(types, attrs):
    (x,) = types
    if not (REAL(x) or x == StrType):
        raise OpTypeError(f"float() argument must be a string or a real number, "
                          f"not '{x.annotation}'")
    return FloatType


def _integer_text_rule(types, attrs):
    (x,) = types
    if not INDEX(x):
        raise OpTypeError(f"'{x.annotation}' object cannot be interpreted as an integer")
    return StrType


def _hashable(t: Type) -> bool:
    """Whether values of type `t` hash (lists, dicts and arrays do not; a script class
    instance hashes unless its class says otherwise, which Python reports when called)."""
    if isinstance(t, (TupleType, VarTupleType, OptionalType, UnionType)):
        return all(_hashable(e) for e in t.contained())
    return t in (IntType, FloatType, BoolType, ComplexType, StrType, NoneType, AnyType) or \
        isinstance(t, (ClassType, EnumType))


def _hash_rule(types, attrs):
    (t,) = types
    if not _hashable(t):
        raise OpTypeError(f"unhashable type: '{t.annotation}'")
    return IntType


def _ord_rule(types, attrs):
    (x,) = types
    if not STR(x):
        raise OpTypeError(f"ord() expected string of length 1, but {x.annotation} found")
    return IntType


def _sorted_rule(types, attrs):
    """As list.sort: the elements' order is checked when the call runs."""
    iterable, reverse = types
    check_args("sorted", [reverse], [INDEX])
    return ListType(iterated_type(iterable))


def _list_rule(types, attrs):
    return ListType(iterated_type(types[0]))


def _next_rule(types, attrs):
    """next(it) is an element; next(it, default) may be the default instead."""
    it, *default = types
    if not (isinstance(it, IterableType) and it.kind in IterableType.ITERATORS):
        raise OpTypeError(f"'{it.annotation}' object is not an iterator")
    if len(default) > 1:
        raise OpTypeError(f"next expected at most 2 arguments, got {len(types)}")
    return unify(it.elem, default[0]) or make_union([it.elem, default[0]]) if default \
        else it.elem


def _tuple_rule(types, attrs):
    (t,) = types
    return t if isinstance(t, (TupleType, VarTupleType)) else VarTupleType(iterated_type(t))


def _dict_rule(types, attrs):
    (t,) = types
    if isinstance(t, DictType):
        return t
    pair = iterated_type(t)
    if pair == AnyType:
        return DictType(AnyType, AnyType)
    if isinstance(pair, TupleType) and len(pair.elems) == 2:
        return DictType(*pair.elems)
    raise OpTypeError("dict() argument must be a dict or an iterable of (key, value) pairs, "
                      f"not {t.annotation}")


def _truth_of_elements_rule(types, attrs):
    iterated_type(types[0])
    return BoolType


def _to_str_rule(types, attrs):
    return StrType


_CONVERSIONS = {"s": "str", "r": "repr", "a": "ascii"}


def _format_value_rule(types, attrs):
    check_args("format", types, (OBJECT, STR))
    return StrType


def _format_value_template(args: list[str], attrs: dict) -> str:
    """f"{x!r:>10}" is `format(repr(x), '>10')`.  Attribute `conversion` ('', 's', 'r' or
    'a') arrives as a str literal, as str attributes do; the builtin `format` has none."""
    conversion = ast.literal_eval(attrs.get("conversion", "''"))
    value = f"{_CONVERSIONS[conversion]}({args[0]})" if conversion else args[0]
    return f"format({value}, {args[1]})"


register_function("aten::len", len, "obj", _len_rule)
# abs() of an array is np.absolute (ndarray.__abs__): the fuser may take it
register_function("prim::abs", abs, "x", _abs_rule, elementwise=True,
                  attrs={"kernel": "abs", "ufunc": np.absolute})
register_function("prim::min", min, "*args, **kwargs", _extremum_rule("min"), views=True)
register_function("prim::max", max, "*args, **kwargs", _extremum_rule("max"), views=True)
register_function("prim::sum", sum, "iterable, start=0", _sum_rule, views=True)
register_function("prim::round", round, "number, ndigits=None", _round_rule)
register_function("aten::divmod", divmod, "a, b", _divmod_rule)
register_function("prim::pow", pow, "base, exp, mod=None", _pow_rule)
register_function("prim::any", any, "iterable", _truth_of_elements_rule)
register_function("prim::all", all, "iterable", _truth_of_elements_rule)

# Casts and conversions to str; `int(x, *base)` because int(2.5, 10) is a TypeError (and
# `int(s, base=16)` passes base as its only keyword)
register_function("aten::Int", int, "x, *base, **kwargs", _int_rule)
register_function("aten::Float", float, "x", _float_rule)
register_function("aten::Bool", bool, "x", lambda types, attrs: BoolType)
register_function("aten::str", str, "x", _to_str_rule)
register_function("aten::repr", repr, "x", _to_str_rule)
register_function("aten::ascii", ascii, "x", _to_str_rule)
register("prim::FormatValue", "value, spec=''", _format_value_rule, _format_value_template,
         python=(format,))
for _fn in (bin, hex, oct):
    register_function(f"aten::{_fn.__name__}", _fn, "x", _integer_text_rule)
register_function("aten::ord", ord, "c", _ord_rule)
register_function("aten::hash", hash, "obj", _hash_rule)
register_function("aten::chr", chr, "i", signature_rule("chr", (INDEX,), StrType))

# Containers built from iterables, and reversed(), Python's reverse iterator (the front
# end's loops over reversed(...) index the sequence instead)
register_function("aten::sorted", sorted, "iterable, *, reverse=False", _sorted_rule,
                  views=True)
register("aten::reversed", "seq", lambda types, attrs: IterableType(
    "reversed", iterated_type(types[0])), "reversed({0})", python=(reversed,), views=True)
register_function("aten::list", list, "iterable", _list_rule, views=True)
register_function("aten::iter", iter, "iterable", lambda types, attrs: IterableType(
    "iter", iterated_type(types[0])), views=True)
register_function("aten::next", next, "iterator, *default", _next_rule, writes=(0,),
                  views=True)
register_function("aten::tuple", tuple, "iterable", _tuple_rule, views=True)
register_function("aten::dict", dict, "mapping", _dict_rule, views=True)
# OrderedDict(...): a Dict in script code, an OrderedDict object when it runs (its
# equality is order-sensitive, its copies are OrderedDicts); OrderedDict() is TorchScript's
# Dict[str, Tensor]
register("aten::OrderedDict", "*mapping", lambda types, attrs: _dict_rule(types, attrs)
         if types else DictType(StrType, TENSOR),
         lambda a, attrs: f"_OrderedDict({', '.join(a)})", python=(collections.OrderedDict,),
         views=True)
