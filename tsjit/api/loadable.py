"""What saved code may contain: the trust boundary of `tsjit.load` and of unpickling.

A saved graph is data that becomes code: the interpreter generates Python from it and
binds the objects its attributes hold.  So a loaded graph may hold only
  - ops of the registry that saved code has (calls of Python functions and the
    executor's own ops are never saved), each with only the attributes that op takes, of
    the kinds it takes;
  - calls of Python functions only by name, of functions the loading program marked
    `@tsjit.ignore` (`ir/ignored_functions.py`: looked up when first called, in modules
    already imported);
  - Python objects of a small allow-list (`allowed_object`): NumPy scalar types and
    ufuncs, builtin exception classes and scalar types.  They are looked up in modules
    tsjit has already imported: loading imports nothing;
  - the classes the archive itself defines (`class_records.py`): objects are created
    (`prim::CreateObject`, `prim::TupleConstruct`) only of those;
  - attribute names (`prim::GetAttr` / `SetAttr`) that are Python identifiers and that
    name an attribute the archive's own records declare for the receiver's class, with
    its declared type;
  - casts (`prim::unchecked_cast`) that only narrow a value's type, as the front end's
    refinements do (the executor re-derives types from what it observes, but a graph
    whose types lie is corrupt), and constants of their declared types;
  - at most MAX_GRAPH_ELEMENTS nodes, values, types and attribute values in all.
`save` applies the same rules, so it refuses what load would refuse, naming the object.
"""
from __future__ import annotations

import builtins
import keyword
import string
from collections.abc import Callable, Mapping

import numpy as np

from ..ir.graph import Graph, Node
from ..ir.ignored_functions import IgnoredFunction
from ..ir.types import ClassType, EnumType, TupleType, Type, is_subtype
from ..ops.python_calls import KEYWORDS
from ..ops.registry import OPS
from .argument_check import value_has_type

# Ops that never appear in saved code: calls of compiled or Python functions (save
# inlines every script call; a call of a @tsjit.ignore'd function is a prim::PythonOp
# that names it, see ir/ignored_functions.py) and the ops the executor adds to optimized
# graphs.
NOT_SAVED = {
    "prim::CallFunction": "calls Python code",
    "prim::CallMethod": "calls Python code",
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
            "and ufuncs, builtin exceptions and scalar types): script classes, enums, "
            "named tuples and other objects of the program's own code or of other modules "
            "cannot be saved as objects (a call of a @tsjit.ignore function names it: "
            "Ignored(module, qualname))")
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


def _keyword_names(value: object) -> bool:
    """The names of the arguments a `**kwargs` parameter took (rendered as dict keys)."""
    return type(value) is tuple and all(type(n) is str for n in value)


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
    "prim::SetAttr": {"name": is_identifier, "direct": _flag},
    "prim::RaiseException": {"cls": _exception_class},
    "prim::isinstance": {"types": _types},
    "prim::FormatValue": {"conversion": _conversion},
    "prim::PythonOp": {"fn": lambda value: type(value) is IgnoredFunction},
    **{kind: {KEYWORDS: _keyword_names} for kind, op in OPS.items()
       if any(p.kwvariadic for p in op.params)},     # str.format(**kwargs), int(x, base=b)
    "aten::__getitem__": {"index": _tuple_index, "slice": _flag},
    "aten::__setitem__": {"index": _tuple_index, "slice": _flag},
    **{kind: {"ufunc": _ufunc} for kind in OPS if kind.startswith("ufunc::")},
}


# Nodes, values, types and attribute values of all the graphs of one archive.  A graph
# costs ~1 KB per node in memory and ~0.1 ms per node to load, and graph text compresses
# ~1000:1: the limit keeps a crafted archive of kilobytes under ~200 MB and tens of
# seconds.  A 10,000-term expression is ~70,000.
MAX_GRAPH_ELEMENTS = 400_000


# op kind -> the kind of archive class (`class_records.py`) its attribute `cls` names
_CLASS_ATTRIBUTES = {"prim::CreateObject": "class", "prim::TupleConstruct": "namedtuple"}


class SavedCodeRules:
    """The parser's node filter for saved code (see `ir.parser.NodeFilter`); one instance
    counts the elements of every graph of one archive.  `archive_classes`: the kind of
    each class the archive defines (what `cls` of CreateObject / TupleConstruct names)."""

    def __init__(self, archive_classes: Mapping[type, str]) -> None:
        self.elements_left = MAX_GRAPH_ELEMENTS
        self.archive_classes = archive_classes

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
        if key == "cls" and kind in _CLASS_ATTRIBUTES:
            if self.archive_classes.get(value) != _CLASS_ATTRIBUTES[kind]:
                raise ValueError(f"attribute 'cls' of {kind} must be a {_CLASS_ATTRIBUTES[kind]} "
                                 f"the archive defines, not {value!r:.80}")
            return
        check = _ATTRIBUTES.get(kind, {}).get(key)
        if check is None:
            raise ValueError(f"{kind} has no attribute '{key}'")
        if not check(value):
            raise ValueError(f"attribute '{key}' of {kind} cannot be {value!r:.80}")


def check_loaded_graph(graph: Graph, names: Mapping[ClassType, set[str]],
                       class_variables: Mapping[type, set[str]] | None = None) -> None:
    """What the parser's node filter cannot see, needing the graph's types:
      - every GetAttr / SetAttr names an attribute that the archive's records give the
        receiver's class (`names`), an enum member's `name` / `value`, or a NamedTuple's
        field, or (a GetAttr of an archive class itself or of an instance of it) one of the
        class variables its record gives it (`class_variables`), so no other attribute of a
        loaded object is reachable from saved code; and its type is the attribute's
        declared type where the class declares one;
      - an object made by CreateObject / TupleConstruct is of the class its node names;
      - every unchecked_cast narrows;
      - a `with` body's Enter / Exit mark an object whose class defines __exit__;
      - every constant holds a value of its type (the passes and native code take a
        constant's type as given)."""
    for node in graph.block.walk():
        if node.kind in ("prim::GetAttr", "prim::SetAttr"):
            _check_attribute(node, names, class_variables or {})
        elif node.kind in _CLASS_ATTRIBUTES and "cls" in node.attrs:
            made = node.outputs[0].type if len(node.outputs) == 1 else None
            if getattr(made, "py_class", None) is not node.attrs["cls"] or (
                    isinstance(made, TupleType) and made.names != node.attrs["cls"]._fields):
                raise ValueError(f"{node.kind} of {node.attrs['cls'].__qualname__} gives a "
                                 f"{made}")
        elif node.kind == "prim::unchecked_cast" and node.outputs and not is_subtype(
                node.outputs[0].type, node.inputs[0].type):
            raise ValueError(f"prim::unchecked_cast from {node.inputs[0].type} to "
                             f"{node.outputs[0].type} does not narrow")
        elif node.kind in ("prim::Enter", "prim::Exit") and not _manages_context(
                node.inputs[0].type):
            raise ValueError(f"{node.kind} of a {node.inputs[0].type}: not a program class "
                             "with __exit__ (the interpreter calls it)")
        elif node.kind == "aten::format":
            _check_format_string(node)
        elif node.kind == "prim::Constant" and not value_has_type(
                node.attrs.get("value"), node.outputs[0].type):
            raise ValueError(f"a constant of type {node.outputs[0].type} holds "
                             f"{node.attrs.get('value')!r:.80}")


def _manages_context(t: Type) -> bool:
    return isinstance(t, ClassType) and "__exit__" in vars(t.py_class)


def _check_format_string(node: Node) -> None:
    """`str.format` follows `{0.attr}` and `{0[key]}` in its fields: a format string of
    the archive would read any attribute of what it formats (`{0.__class__.__init__.
    __globals__[os].environ}` of a loaded module: the process's environment), which
    GetAttr may not.  So the format string is a constant whose fields name arguments only."""
    source = node.inputs[0].node
    text = source.attrs.get("value") if source.kind == "prim::Constant" else None
    if type(text) is not str or not _plain_fields(text):
        raise ValueError("aten::format of a format string that is not a constant, or whose "
                         "fields read attributes or items ({0.name}, {0[key]})")


def _plain_fields(text: str, depth: int = 0) -> bool:
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return True         # str.format raises the same error when the code runs
    return depth < 2 and all(
        field is None or ("." not in field and "[" not in field)
        and (not spec or _plain_fields(spec, depth + 1)) for _, field, spec, _ in parsed)


def _check_attribute(node: Node, names: Mapping[ClassType, set[str]],
                     class_variables: Mapping[type, set[str]]) -> None:
    receiver, name = node.inputs[0].type, node.attrs.get("name")
    source = node.inputs[0].node
    if node.kind == "prim::GetAttr" and source.kind == "prim::Constant" and isinstance(
            source.attrs.get("value"), type):       # `Cls.count`: a class variable
        if name not in class_variables.get(source.attrs["value"], ()):
            raise ValueError(f"prim::GetAttr of {name!r} of class "
                             f"{source.attrs['value'].__qualname__}: the archive declares no "
                             "such class variable")
        return
    if node.kind == "prim::GetAttr" and isinstance(receiver, ClassType) and \
            name in class_variables.get(receiver.py_class, ()):
        return      # `self.count` of a class variable: read as Python reads it
    if isinstance(receiver, EnumType):
        declared = {"name", "value"}
    elif isinstance(receiver, TupleType) and receiver.py_class is not None and \
            receiver.names == getattr(receiver.py_class, "_fields", None):
        declared = set(receiver.names)
    else:
        declared = names.get(receiver, ())
    if name not in declared or node.kind == "prim::SetAttr" and not isinstance(receiver,
                                                                               ClassType):
        what = "attribute or class variable" if node.kind == "prim::GetAttr" and isinstance(
            receiver, ClassType) else "attribute"
        raise ValueError(f"{node.kind} of attribute {name!r} of a {receiver}: the archive "
                         f"declares no such {what}")
    attribute_type = receiver.attributes.get(name) if isinstance(receiver, ClassType) else None
    if attribute_type is None:
        return
    if node.kind == "prim::GetAttr" and not (
            len(node.outputs) == 1 and is_subtype(attribute_type, node.outputs[0].type)):
        raise ValueError(f"prim::GetAttr of '{name}', a {attribute_type}, gives a "
                         f"{[str(v.type) for v in node.outputs]}")
    if node.kind == "prim::SetAttr" and not is_subtype(node.inputs[1].type, attribute_type):
        raise ValueError(f"prim::SetAttr of '{name}', a {attribute_type}, to a "
                         f"{node.inputs[1].type}")
