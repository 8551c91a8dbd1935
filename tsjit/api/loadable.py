"""What saved code may contain: the trust boundary of `tsjit.load` and of unpickling.

A saved graph is data that becomes code: the interpreter generates Python from it and
binds the objects its attributes hold.  So a loaded graph may hold only
  - ops of the registry that saved code has (calls of Python functions, object
    creation and the executor's own ops are never saved), each with only the attributes
    that op takes, of the kinds it takes;
  - Python objects of a small allow-list (`allowed_object`): NumPy scalar types and
    ufuncs, builtin exception classes and scalar types.  They are looked up in modules
    tsjit has already imported: loading imports nothing;
  - attribute names (`prim::GetAttr` / `SetAttr`) that are Python identifiers and that
    name an attribute the archive's own module records declare for the receiver's class;
  - casts (`prim::unchecked_cast`) that only narrow a value's type, as the front end's
    refinements do (the executor re-derives types from what it observes, but a graph
    whose types lie is corrupt).
`save` applies the same rules, so it refuses what load would refuse, naming the object.
"""
from __future__ import annotations

import builtins
import keyword
from collections.abc import Callable, Mapping

import numpy as np

from ..ir.graph import Graph, Node
from ..ir.types import ClassType, Type, is_subtype
from ..ops.registry import OPS
from .argument_check import value_has_type

# Ops that never appear in saved code: calls of compiled or Python functions (save
# inlines every script call and refuses @tsjit.ignore'd functions), object creation
# (script classes are not saved) and the ops the executor adds to optimized graphs.
NOT_SAVED = {
    "prim::CallFunction": "calls Python code",
    "prim::CallMethod": "calls Python code",
    "prim::PythonOp": "calls Python code",
    "prim::CreateObject": "creates an object of a script class",
    "prim::profile": "belongs to the executor's optimized graphs",
    "prim::TypeCheck": "belongs to the executor's optimized graphs",
    "prim::FusionGroup": "belongs to the executor's optimized graphs",
    "prim::FallbackGraph": "belongs to the executor's optimized graphs",
    "prim::NativeCall": "belongs to the executor's optimized graphs",
}

_BUILTIN_SCALARS = (int, float, bool, complex, str)


def _allowed_objects() -> dict[str, object]:
    """The objects saved code may name, by the qualified name the printer writes."""
    allowed: dict[str, object] = {}
    for name, obj in vars(np).items():
        if isinstance(obj, np.ufunc) or (isinstance(obj, type) and issubclass(obj, np.generic)):
            allowed.setdefault(f"{obj.__module__}.{getattr(obj, '__qualname__', name)}", obj)
    for name, obj in vars(builtins).items():
        if isinstance(obj, type) and (issubclass(obj, BaseException) or obj in _BUILTIN_SCALARS):
            allowed[f"builtins.{name}"] = obj
    return allowed


ALLOWED_OBJECTS = _allowed_objects()


def allowed_object(qualified_name: str) -> object:
    """The object saved code names as `module.qualname`, if it is on the allow-list."""
    obj = ALLOWED_OBJECTS.get(qualified_name)
    if obj is None:
        raise LookupError(
            f"'{qualified_name}' is not an object saved code may name (NumPy scalar types "
            "and ufuncs, builtin exceptions and scalar types): script classes, "
            "@tsjit.ignore'd functions, enums, named tuples and other objects of the "
            "program's own code or of other modules cannot be saved")
    return obj


def is_identifier(name: object) -> bool:
    """A name generated Python source may use as an attribute name."""
    return type(name) is str and name.isidentifier() and name.isascii() \
        and not keyword.iskeyword(name) and not (name.startswith("__") and name.endswith("__"))


def _exception_class(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)


def _ufunc(value: object) -> bool:
    return isinstance(value, np.ufunc)


def _flag(value: object) -> bool:
    return type(value) is bool


def _types(value: object) -> bool:
    return type(value) is tuple and all(isinstance(t, Type) for t in value)


def _tuple_index(value: object) -> bool:
    """An int, or the (start, stop, step) of a constant slice."""
    return type(value) is int or (type(value) is tuple and len(value) == 3 and all(
        v is None or type(v) is int for v in value))


def _conversion(value: object) -> bool:
    return value in ("", "s", "r", "a") and type(value) is str


def _constant(value: object) -> bool:
    """Plain data: the parser builds only literals, NumPy values, types and allowed
    objects, but not every NumPy value is harmless to hold (object arrays)."""
    if type(value) in (tuple, list):
        return all(map(_constant, value))
    if isinstance(value, (np.ndarray, np.generic, np.dtype)):
        return not (value if isinstance(value, np.dtype) else value.dtype).hasobject
    return True


# op kind -> attribute -> what its value must be
_ATTRIBUTES: dict[str, dict[str, Callable[[object], bool]]] = {
    "prim::Constant": {"value": _constant, "shared": _flag},
    "prim::GetAttr": {"name": is_identifier},
    "prim::SetAttr": {"name": is_identifier},
    "prim::RaiseException": {"cls": _exception_class},
    "prim::isinstance": {"types": _types},
    "prim::FormatValue": {"conversion": _conversion},
    "aten::__getitem__": {"index": _tuple_index, "slice": _flag},
    "aten::__setitem__": {"index": _tuple_index, "slice": _flag},
    **{kind: {"ufunc": _ufunc} for kind in OPS if kind.startswith("ufunc::")},
}


# Nodes, values, types and attribute values of all the graphs of one archive.  A graph
# costs ~1 KB per node in memory and ~0.1 ms per node to load, and graph text compresses
# ~1000:1: the limit keeps a crafted archive of kilobytes under ~200 MB and tens of
# seconds.  A 10,000-term expression is ~70,000.
MAX_GRAPH_ELEMENTS = 400_000


class SavedCodeRules:
    """The parser's node filter for saved code (see `ir.parser.NodeFilter`); one instance
    counts the elements of every graph of one archive."""

    def __init__(self) -> None:
        self.elements_left = MAX_GRAPH_ELEMENTS

    def element(self) -> None:
        self.elements_left -= 1
        if self.elements_left < 0:
            raise ValueError(f"the archive's graphs have more than {MAX_GRAPH_ELEMENTS} "
                             "nodes, values, types and attribute values")

    def kind(self, kind: str) -> None:
        if kind in NOT_SAVED:
            raise ValueError(f"{kind} {NOT_SAVED[kind]}, which saved code never does")
        if kind not in OPS:
            raise ValueError(f"unknown op {kind}")

    def attribute(self, kind: str, key: str, value: object) -> None:
        check = _ATTRIBUTES.get(kind, {}).get(key)
        if check is None:
            raise ValueError(f"{kind} has no attribute '{key}'")
        if not check(value):
            raise ValueError(f"attribute '{key}' of {kind} cannot be {value!r:.80}")


def check_loaded_graph(graph: Graph, names: Mapping[ClassType, set[str]]) -> None:
    """Every GetAttr / SetAttr reads or writes an attribute that the archive's records
    give the receiver's class (`names`), so no other attribute of a loaded object is
    reachable from saved code; every unchecked_cast narrows; every constant holds a
    value of its type (the passes and native code take a constant's type as given)."""
    for node in graph.block.walk():
        if node.kind in ("prim::GetAttr", "prim::SetAttr"):
            _check_attribute_name(node, names)
        elif node.kind == "prim::Constant" and not value_has_type(
                node.attrs.get("value"), node.outputs[0].type):
            raise ValueError(f"a constant of type {node.outputs[0].type} holds "
                             f"{node.attrs.get('value')!r:.80}")
        elif node.kind == "prim::unchecked_cast" and node.outputs and not is_subtype(
                node.outputs[0].type, node.inputs[0].type):
            raise ValueError(f"prim::unchecked_cast from {node.inputs[0].type} to "
                             f"{node.outputs[0].type} does not narrow")


def _check_attribute_name(node: Node, names: Mapping[ClassType, set[str]]) -> None:
    receiver, name = node.inputs[0].type, node.attrs.get("name")
    if name not in names.get(receiver, ()):
        raise ValueError(f"{node.kind} of attribute {name!r} of a {receiver}: the archive "
                         "declares no such attribute")
