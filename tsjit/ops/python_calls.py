"""The calling conventions that the tables of Python functions and methods share
(builtin_ops, math_ops, str_ops, container_ops): argument classes, type-rule builders,
templates that call the Python function or method itself, and element-type helpers.
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..ir.types import (
    TENSOR,
    AnyType,
    BoolType,
    ClassType,
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
    VarTupleType,
    is_number,
    is_subtype,
    union_options,
)
from .registry import OpTypeError, TypeRule, parse_params, register


@dataclass(frozen=True)
class Accepts:
    """The types a parameter of a Python function takes, described as Python's errors say."""

    description: str
    types: tuple[Type, ...]

    def __call__(self, t: Type) -> bool:
        """A Union is accepted when each of its alternatives is."""
        return t == AnyType or all(any(is_subtype(o, s) for s in self.types)
                                   for o in union_options(t))


OBJECT = Accepts("object", (AnyType,))
# NumPy values (TENSOR) pass wherever Python takes them through __index__ / __float__.
INDEX = Accepts("int", (IntType, BoolType, TENSOR))
OPTIONAL_INDEX = Accepts("int or None", (IntType, BoolType, NoneType, TENSOR))
REAL = Accepts("real number", (IntType, BoolType, FloatType, TENSOR))
STR = Accepts("str", (StrType,))
OPTIONAL_STR = Accepts("str or None", (StrType, NoneType))


def storable(value: Type, slot: Type) -> bool:
    """Whether a container may store `value` where it holds `slot` values.  An Any value
    (`x[i].item()`, an Any parameter) is taken at its word, as an assignment or a return
    takes it: `out.append(x[i].item())` into a List[float] is what Python runs."""
    return value == AnyType or is_subtype(value, slot)


def check_args(callee: str, types: Sequence[Type], accepts: Sequence[Accepts],
               rest: Accepts | None = None) -> None:
    """Reject an argument whose type the Python function would reject with a TypeError.

    `accepts` covers the leading parameters; `rest` every argument after them (`*args`).
    """
    for i, t in enumerate(types):
        want = accepts[i] if i < len(accepts) else rest
        if want is not None and not want(t):
            raise OpTypeError(f"{callee}() argument {i + 1} must be {want.description}, "
                              f"not {t.annotation}")


def signature_rule(callee: str, accepts: Sequence[Accepts], result: Type, *,
                   rest: Accepts | None = None, receiver: bool = False) -> TypeRule:
    """A rule for functions whose result type does not depend on the argument types.

    receiver: the first input is a method's receiver, which its binding already typed.
    """
    def infer(types, attrs):
        check_args(callee, types[1:] if receiver else types, accepts, rest)
        return result
    return infer


# The node attribute naming the arguments an op's `**kwargs` parameter took, in order
# (str.format(x, width=3)): data, rendered into the call as the keys of a dict literal.
KEYWORDS = "keywords"


def call_template(callee: str, signature: str, *, method: bool = False
                  ) -> Callable[[list[str], dict], str]:
    """The Python call for an op: `callee(a, b, key=c)`, or `a.callee(b, key=c)` for a method.

    Inputs arrive in signature order; keyword-only parameters are passed by keyword, the rest
    positionally (also the elements of a `*args` parameter); the arguments a `**kwargs`
    parameter took come last, named by the node attribute KEYWORDS.
    """
    params = parse_params(signature)
    keywords = [p.name for p in params if p.kwonly]
    extra_keywords = any(p.kwvariadic for p in params)

    def emit(args: list[str], attrs: dict) -> str:
        extra = []
        if extra_keywords:      # **kwargs: the last inputs, named by the node's `keywords`
            names = ast.literal_eval(attrs.get(KEYWORDS, "()"))
            args, values = args[:len(args) - len(names)], args[len(args) - len(names):]
            extra = [f"**{{{', '.join(f'{n!r}: {v}' for n, v in zip(names, values))}}}"]
        split = len(args) - len(keywords)
        parts = [*args[:split], *(f"{k}={v}" for k, v in zip(keywords, args[split:])), *extra]
        if method:
            return f"{parts[0]}.{callee}({', '.join(parts[1:])})"
        return f"{callee}({', '.join(parts)})"
    return emit


def register_function(name: str, obj: Callable, signature: str, infer: TypeRule | None,
                      **traits) -> None:
    """An op that is a call of the Python function `obj` (a builtin or a `math` function)."""
    module = getattr(obj, "__module__", "builtins")
    callee = obj.__name__ if module == "builtins" else f"{module}.{obj.__name__}"
    register(name, signature, infer, call_template(callee, signature), python=(obj,), **traits)


def register_method(name: str, receivers: Sequence[object], method: str, signature: str,
                    infer: TypeRule | None, **traits) -> None:
    """An op that is a call of method `method` on values of the `receivers` types."""
    register(name, signature, infer, call_template(method, signature, method=True),
             methods=[(r, method) for r in receivers], **traits)


def number_join(types: Sequence[Type]) -> Type:
    """The type of a value that is one of several Python numbers: the widest of them."""
    return FloatType if FloatType in types else IntType if IntType in types else BoolType


def iterated_type(t: Type) -> Type:
    """The type of the elements that iterating over a value of type `t` yields."""
    if isinstance(t, (ListType, VarTupleType, IterableType)):
        return t.elem
    if t == StrType:
        return StrType
    if isinstance(t, DictType):
        return t.key
    if isinstance(t, TensorType):
        return TENSOR    # rows of an array, or raises for a NumPy scalar
    if t == AnyType:
        return AnyType
    if isinstance(t, TupleType):
        if not t.elems:
            return AnyType
        if all(e == t.elems[0] for e in t.elems):
            return t.elems[0]
        if all(map(is_number, t.elems)):
            return number_join(t.elems)
        raise OpTypeError(f"the elements of a {t.annotation} have different types; "
                          "only a loop over it (unrolled) may mix them")
    raise OpTypeError(f"'{t.annotation}' object is not iterable")


def is_orderable(t: Type) -> bool:
    """Whether Python's `<` orders two values of type `t` (sort, min, max)."""
    if is_number(t) or t in (StrType, AnyType) or isinstance(t, TensorType):
        return True
    if isinstance(t, (ListType, VarTupleType)):
        return is_orderable(t.elem)
    if isinstance(t, TupleType):
        return all(map(is_orderable, t.elems))
    if isinstance(t, ClassType):
        return getattr(t.py_class, "__lt__", object.__lt__) is not object.__lt__
    return False


def require_orderable(t: Type) -> Type:
    if not is_orderable(t):
        raise OpTypeError(f"'<' not supported between instances of '{t.annotation}' "
                          f"and '{t.annotation}'")
    return t
