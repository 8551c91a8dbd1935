"""The methods of `list`, `dict` and `tuple` as ops (`list::append`, `dict::get`, ...).

Each op calls the method itself on the real container, so mutation is visible to every
alias, as in Python.  Mutating methods declare `writes=(0,)`; methods whose result is or
holds an element of the container (`pop`, `get`, `copy`, `values`) declare `views=True`,
since a write through that result changes the container's contents.  Type rules check
what a method stores against the container's element type (no implicit conversions, as
for `xs[i] = v`), while lookups (`index`, `count`, `remove`) compare with `==` and so
accept any value, as `in` does.

`dict.keys()`, `values()` and `items()` return the dict's views (`IterableType`), not
lists as in TorchScript: a scripted function must return what eager Python returns, and a
view follows later changes of its dict, compares as a set and prints as a view.  Loops over
a view (or any `IterableType`) step a Python iterator (`prim::IterStart`, `prim::IterNext`,
`prim::IterItem`), so they see what Python's iterator sees, errors included.
"""
from __future__ import annotations

from ..ir.types import (
    BoolType,
    DictType,
    IntType,
    IterableType,
    ListType,
    TupleType,
    Type,
    VarTupleType,
    is_number,
    is_subtype,
    make_union,
    unify,
)
from .python_calls import (
    INDEX,
    check_args,
    iterated_type,
    register_method,
    storable,
)
from .registry import OpTypeError, register

MAXSIZE = 9223372036854775807   # sys.maxsize: the default end of list.index / tuple.index


def _expect_element(method: str, container: ListType, value: Type) -> None:
    if not storable(value, container.elem):
        raise OpTypeError(f"{method}() expected {container.elem.annotation}, "
                          f"found {value.annotation}")


def _statement(types, attrs):
    return None


def _append_rule(types, attrs):
    lst, value = types
    _expect_element("list.append", lst, value)


def _extend_rule(types, attrs):
    lst, iterable = types
    _expect_element("list.extend", lst, iterated_type(iterable))


def _insert_rule(types, attrs):
    lst, index, value = types
    check_args("insert", [index], [INDEX])
    _expect_element("list.insert", lst, value)


def _pop_rule(types, attrs):
    lst, index = types
    check_args("pop", [index], [INDEX])
    return lst.elem


def _search_rule(types, attrs):
    """index(x, start, stop) of a list or tuple: the position of a value."""
    check_args("index", types[2:], [INDEX, INDEX])
    return IntType


def _sort_rule(types, attrs):
    """Whether the elements can be ordered is decided when the sort runs, as in Python
    and TorchScript: a list of one element, or a sort on a path never taken, is fine."""
    lst, reverse = types
    check_args("sort", [reverse], [INDEX])


def _check_key(d: DictType, key: Type) -> None:
    if not (is_subtype(key, d.key) or (is_number(key) and is_number(d.key))):
        raise OpTypeError(f"dict key must be {d.key.annotation}, found {key.annotation}")


def _value_or_default(d: DictType, default: Type) -> Type:
    """The type of `d.get(k, default)`: a value or the default."""
    return unify(d.value, default) or make_union([d.value, default])


def _get_rule(types, attrs):
    d, key, default = types
    _check_key(d, key)
    return _value_or_default(d, default)


def _dict_pop_rule(types, attrs):
    d, key, *default = types
    _check_key(d, key)
    if len(default) > 1:
        raise OpTypeError(f"pop expected at most 2 arguments, got {1 + len(default)}")
    return _value_or_default(d, default[0]) if default else d.value


def _setdefault_rule(types, attrs):
    d, key, default = types
    _check_key(d, key)
    if not storable(default, d.value):
        raise OpTypeError(f"dict.setdefault() would store a {default.annotation} in a "
                          f"{d.annotation}; pass a default of type {d.value.annotation}")
    return d.value


def _update_rule(types, attrs):
    d, other = types
    if isinstance(other, DictType):
        pair = TupleType((other.key, other.value))
    else:
        pair = iterated_type(other)
    if not (isinstance(pair, TupleType) and len(pair.elems) == 2):
        raise OpTypeError(f"dict.update() needs a dict or (key, value) pairs, not "
                          f"{other.annotation}")
    if not is_subtype(pair, TupleType((d.key, d.value))):
        raise OpTypeError(f"dict.update() cannot store {pair.annotation} items in a "
                          f"{d.annotation}")


def _same_type(types, attrs):
    return types[0]


def _count_rule(types, attrs):
    return IntType


# list
register_method("list::append", (ListType,), "append", "self, value", _append_rule,
                writes=(0,))
register_method("list::extend", (ListType,), "extend", "self, iterable", _extend_rule,
                writes=(0,))
register_method("list::insert", (ListType,), "insert", "self, index, value", _insert_rule,
                writes=(0,))
register_method("list::pop", (ListType,), "pop", "self, index=-1", _pop_rule, writes=(0,),
                views=True)
register_method("list::remove", (ListType,), "remove", "self, value", _statement, writes=(0,))
register_method("list::reverse", (ListType,), "reverse", "self", _statement, writes=(0,),
                may_raise=False)
register_method("list::sort", (ListType,), "sort", "self, *, reverse=False", _sort_rule,
                writes=(0,))

# list and tuple: the same searches (tuple methods also serve x.shape)
for _kind, _receivers in (("list", (ListType,)), ("tuple", (TupleType, VarTupleType))):
    register_method(f"{_kind}::index", _receivers, "index",
                    f"self, value, start=0, stop={MAXSIZE}", _search_rule)
    register_method(f"{_kind}::count", _receivers, "count", "self, value", _count_rule)

# list and dict
for _kind, _receiver in (("list", ListType), ("dict", DictType)):
    register_method(f"{_kind}::clear", (_receiver,), "clear", "self", _statement,
                    writes=(0,), may_raise=False)
    register_method(f"{_kind}::copy", (_receiver,), "copy", "self", _same_type,
                    may_raise=False, views=True)

# dict; a view aliases its dict (a write to the dict changes what the view holds)
_VIEWS = {"keys": lambda d: d.key, "values": lambda d: d.value,
          "items": lambda d: TupleType((d.key, d.value))}
for _name, _elem in _VIEWS.items():
    register(f"dict::{_name}", "self",
             lambda types, attrs, name=_name, elem=_elem: IterableType(
                 f"dict_{name}", elem(types[0])),
             f"{{0}}.{_name}()", methods=((DictType, _name),), may_raise=False, views=True)
register_method("dict::get", (DictType,), "get", "self, key, default=None", _get_rule,
                views=True)
# d.pop(k) raises KeyError where d.pop(k, None) returns None: the default stays optional
register_method("dict::pop", (DictType,), "pop", "self, key, *default", _dict_pop_rule,
                writes=(0,), views=True)
register_method("dict::popitem", (DictType,), "popitem", "self",
                lambda types, attrs: TupleType((types[0].key, types[0].value)), writes=(0,),
                views=True)
register_method("dict::setdefault", (DictType,), "setdefault", "self, key, default=None",
                _setdefault_rule, writes=(0,), views=True)
register_method("dict::update", (DictType,), "update", "self, other", _update_rule,
                writes=(0,))


# A loop over an iterable object: a stepper (the interpreter's `_Stepper`) holds Python's
# iterator; IterNext advances it (False at the end), IterItem is the element it reached.
def _stepper_rule(types, attrs):
    return IterableType("iterator", iterated_type(types[0]))


def _stepped_rule(types, attrs):
    (stepper,) = types
    if not (isinstance(stepper, IterableType) and stepper.kind == "iterator"):
        raise OpTypeError(f"expected an iterator, found {stepper.annotation}")
    return stepper.elem


register("prim::IterStart", "iterable", _stepper_rule, "_Stepper({0})", views=True)
def _advance_rule(types, attrs):
    _stepped_rule(types, attrs)
    return BoolType


register("prim::IterNext", "stepper", _advance_rule, "{0}.advance()", writes=(0,))
register("prim::IterItem", "stepper", _stepped_rule, "{0}.item", views=True, may_raise=False)
