"""Ops the front end uses to lower `for` loops onto prim::Loop trip counts, and the
objects range(), zip() and enumerate() make when a program uses them as values."""
from __future__ import annotations

from ..ir.types import IntType, IterableType, TupleType
from .python_calls import INDEX, check_args, iterated_type
from .registry import OpTypeError, register

# len(range(start, stop, step)); raises ValueError for a zero step, as range() does.
register("aten::__range_length", "start, stop, step", lambda types, attrs: IntType,
         "len(range({0}, {1}, {2}))")
# the value of the loop variable in iteration i
register("aten::__derive_index", "i, start, step", lambda types, attrs: IntType,
         "{1} + {0} * {2}", may_raise=False)


def _range_rule(types, attrs):
    check_args("range", types, [INDEX] * 3)
    return IterableType("range", IntType)


def _zip_rule(types, attrs):
    return IterableType("zip", TupleType(tuple(iterated_type(t) for t in types)))


def _enumerate_rule(types, attrs):
    iterable, start = types
    check_args("enumerate", [start], [INDEX])
    return IterableType("enumerate", TupleType((IntType, iterated_type(iterable))))


def _range_attribute_rule(types, attrs):
    (r,) = types
    if r.kind != "range":
        raise OpTypeError(f"'{r.annotation}' object has no attribute start, stop or step")
    return IntType


register("prim::range", "start, stop, step", _range_rule, "range({0}, {1}, {2})")
register("prim::zip", "*iterables", _zip_rule, lambda args, attrs: f"zip({', '.join(args)})",
         views=True)
register("prim::enumerate", "iterable, start", _enumerate_rule, "enumerate({0}, {1})",
         views=True)
for _name in ("start", "stop", "step"):
    register(f"range::{_name}", "self", _range_attribute_rule, f"{{0}}.{_name}",
             attributes=((IterableType, _name),), may_raise=False)
