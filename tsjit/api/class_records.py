"""The program's own classes in an archive: saved as data, rebuilt on load by tsjit itself.

Saved code may name four kinds of classes of the program that saved it:
  - script classes: their attribute types and their methods, as compiled graphs;
  - enums (`Enum`, `IntEnum`, `StrEnum`): their members' names and values;
  - NamedTuples: their field names, types and defaults;
  - exception classes that add nothing to their base (a builtin exception, or another
    exception class of the archive): only the name and the base.
Each is a record under its qualified name (`module.qualname`, as graphs print it) in the
manifest's "classes".  Loading rebuilds each class from its record alone: `type()`,
`collections.namedtuple` and the enum functional API, with names checked to be
identifiers (a record is data; nothing is imported and no code of the file runs: a
script class's methods are its compiled graphs, under the same rules as every graph).

A rebuilt class is a new class object: it has the saved class's `__module__`,
`__qualname__` and members, so graphs print as they did and values print, compare and
hash as they did, but it is not the class of the saving program.  In a process that
also imports that program, `isinstance(loaded_result, OriginalClass)` is False, and an
instance of the original passed where the loaded code takes the rebuilt class is refused
by the argument check (TypeError), as an instance of any other class is.  A process
rebuilds one class per distinct record (a weak cache keyed by the record's content), so
functions loaded or unpickled separately that use the same class share the rebuilt class.
"""
from __future__ import annotations

import collections
import dataclasses
import enum
import hashlib
import json
import pickle
import sys
import weakref
from collections.abc import Callable, Iterable
from types import ModuleType

from ..frontend.resolution import is_constant
from ..ir.graph import Graph
from ..ir.types import ClassType, EnumType, TupleType, Type, qualified_name
from .archive import SerializationError
from .loadable import ALLOWED_OBJECTS, allowed_object, is_identifier

ENUM_BASES: dict[str, type[enum.Enum]] = {"Enum": enum.Enum, "IntEnum": enum.IntEnum,
                                          "StrEnum": enum.StrEnum}
# The special methods a rebuilt script class may define (compiled graphs, as its other
# methods): the ones script classes implement.  Others (`__getattribute__`, `__del__`,
# `__reduce__`, `__init_subclass__`, ...) change how Python itself treats the class.
SPECIAL_METHODS = frozenset(
    f"__{name}__" for name in (
        "init len getitem setitem delitem contains iter eq ne lt le gt ge hash str repr "
        "bool int float index neg pos abs invert add sub mul truediv floordiv mod pow "
        "matmul and or xor lshift rshift radd rsub rmul rtruediv rfloordiv rmod rpow "
        "iadd isub imul itruediv ifloordiv imod ipow imatmul iand ior ixor ilshift irshift "
        "rand ror rxor rlshift rrshift rmatmul divmod rdivmod round floor ceil trunc "
        "call next reversed post_init enter exit").split())
# What an exception class may have of its own and still be rebuilt from its name and base.
_PLAIN_CLASS_MEMBERS = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                        "__firstlineno__", "__static_attributes__"}

ClassKind = str     # "class", "enum", "namedtuple", "exception"
# Classes one archive may define: making a class costs ~0.2 ms and ~1 KB, far more than a
# graph element (50,000 exception records of 6 MiB took 12 s to load under the element
# budget alone); a program with more classes than this is not one of tsjit's.
MAX_CLASSES = 10_000


def class_kind(cls: type) -> ClassKind | None:
    """What kind of program class `cls` is, None for a class an archive cannot define."""
    if not isinstance(cls, type) or qualified_name(cls) in ALLOWED_OBJECTS:
        return None
    if issubclass(cls, enum.Enum):
        return "enum"
    if issubclass(cls, BaseException):
        return "exception"
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return "namedtuple"
    if isinstance(vars(cls).get("__tsjit_class_type__"), ClassType) and \
            not vars(cls)["__tsjit_class_type__"].is_module:
        return "class"
    return None


def classes_in_type(t: Type, found: list[type]) -> None:
    """Append the program classes type `t` names (at any depth) to `found`."""
    if isinstance(t, ClassType) and not t.is_module or isinstance(t, EnumType):
        found.append(t.py_class)
    elif isinstance(t, TupleType) and t.py_class is not None:
        found.append(t.py_class)
    for inner in t.contained():
        classes_in_type(inner, found)


def classes_in_value(value: object, found: list[type]) -> None:
    """Append the program classes an attribute value names (a class, an enum member, a
    type, in tuples and lists) to `found`."""
    if isinstance(value, Type):
        classes_in_type(value, found)
    elif isinstance(value, enum.Enum):
        found.append(type(value))
    elif isinstance(value, type):
        found.append(value)
    elif type(value) in (list, tuple):
        for item in value:
            classes_in_value(item, found)


def classes_in_graph(graph: Graph, types: Iterable[Type]) -> list[type]:
    """The program classes a graph (its values' types and its nodes' attributes) and a
    signature's `types` name; the allow-list's classes are filtered out by the caller."""
    found: list[type] = []
    for t in types:
        classes_in_type(t, found)
    blocks = [graph.block]
    while blocks:
        block = blocks.pop()
        for v in block.params:
            classes_in_type(v.type, found)
        for node in block.nodes:
            for v in node.outputs:
                classes_in_type(v.type, found)
            for value in node.attrs.values():
                classes_in_value(value, found)
            blocks.extend(node.blocks)
    return found


class ClassNames:
    """The program classes of one archive by qualified name (the saving program's own
    classes when saving, the rebuilt ones when loading), and the resolver graph text is
    read with: these classes, their enum members (`pkg.Color.RED`), else the allow-list."""

    def __init__(self) -> None:
        self.objects: dict[str, type] = {}
        self.kinds: dict[type, ClassKind] = {}
        self.class_types: dict[str, ClassType] = {}   # script classes' types

    def add(self, name: str, cls: type, kind: ClassKind) -> None:
        self.objects[name] = cls
        self.kinds[cls] = kind
        if kind == "class":
            self.class_types[name] = ClassType.for_class(cls)

    def resolve(self, name: str) -> object:
        found = self.objects.get(name)
        if found is not None:
            return found
        owner, _, member = name.rpartition(".")
        enum_class = self.objects.get(owner)
        if self.kinds.get(enum_class) == "enum" and member in enum_class.__members__:
            return enum_class.__members__[member]
        return allowed_object(name)


def data_class_problem(cls: type, kind: ClassKind) -> str | None:
    """Why `cls` (of `kind`) is more than its record would rebuild, None if it is not: an
    enum or NamedTuple with methods of its own, an exception class with members of its
    own or several bases (or a base that is such), a class that is not a script class."""
    if kind == "enum":
        base = next((b for b in ENUM_BASES.values() if cls.__bases__ == (b,)), None)
        own = [n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")]
        if base is None or own:
            return ("an enum is saved as its members, so it must derive from Enum, IntEnum or "
                    f"StrEnum only and define no methods ({', '.join(own) or cls.__bases__})")
    elif kind == "namedtuple":
        generated = set(vars(collections.namedtuple("T", cls._fields)))
        own = sorted(n for n, v in vars(cls).items() if n not in generated and (
            callable(v) or isinstance(v, (property, classmethod, staticmethod))))
        if own:
            return f"a NamedTuple is saved as its fields, so it must define no methods ({own})"
    elif kind == "exception":
        for c in cls.__mro__:
            if qualified_name(c) in ALLOWED_OBJECTS:
                break
            extra = set(vars(c)) - _PLAIN_CLASS_MEMBERS
            if len(c.__bases__) != 1 or extra:
                return ("an exception class is saved as its name and base, so it must have one "
                        f"base and add nothing to it ({c.__qualname__} has {sorted(extra)})")
    elif class_kind(cls) != "class":
        return "it is not a script class"
    return None


# ---- saving

def class_record(cls: type, kind: ClassKind, encode: Callable[[object, str], list],
                 methods: Callable[[ClassType], dict]) -> dict:
    """The record of program class `cls` of `kind`.  `encode(value, where)` writes a value;
    `methods(class_type)` the records of a script class's compiled methods."""
    where = f"class '{cls.__qualname__}'"
    problem = data_class_problem(cls, kind)
    if problem is not None:
        raise SerializationError(f"cannot save {where}: {problem}")
    record = {"kind": kind, "module": cls.__module__, "qualname": cls.__qualname__}
    if kind == "enum":
        record["base"] = next(name for name, b in ENUM_BASES.items() if cls.__bases__ == (b,))
        record["members"] = [[m.name, encode(m.value, f"{where}.{m.name}")] for m in cls]
    elif kind == "namedtuple":
        annotations = getattr(cls, "__annotations__", {})
        record["fields"] = list(cls._fields)
        record["defaults"] = [encode(cls._field_defaults[f], f"the default of {where}.{f}")
                              for f in cls._fields if f in cls._field_defaults]
        record["annotations"] = {f: str(annotations[f]) for f in cls._fields
                                 if isinstance(annotations.get(f), str)}
    elif kind == "exception":
        record["base"] = qualified_name(cls.__bases__[0])
    else:
        t = ClassType.for_class(cls)
        record["attributes"] = {name: str(attr) for name, attr in t.attributes.items()}
        record["class_variables"] = {name: encode(value, f"{where}.{name}")
                                     for name, value in class_variables(cls).items()}
        if dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen:
            record["frozen"] = True     # its fields are set once, by __init__
        record["methods"] = methods(t)
        record["properties"] = [name for name in record["methods"]
                                if isinstance(vars(cls).get(name), property)]
    return record


# ---- loading

# (qualified name, digest of the record) -> the class rebuilt from it, while it lives
_rebuilt: weakref.WeakValueDictionary[tuple[str, str], type] = weakref.WeakValueDictionary()


def class_variables(cls: type) -> dict[str, object]:
    """The class variables script code reads when it runs (`Cls.count`): the class's own
    constant values (numbers, strings, enum members, tuples of them) that are not also
    instance attributes (a dataclass field's default)."""
    attributes = ClassType.for_class(cls).attributes
    return {name: value for name, value in vars(cls).items()
            if is_identifier(name) and not name.startswith("__") and is_constant(value)
            and name not in attributes}


def set_class_variables(cls: type, record: dict, decode: Callable[[object], object]) -> set[str]:
    """Set a rebuilt script class's recorded class variables; their names."""
    names = set()
    for name, encoded in record.get("class_variables", {}).items():
        value = decode(encoded)
        if not is_identifier(name) or name.startswith("__") or name in vars(cls) or \
                not is_constant(value):
            raise SerializationError(f"corrupt archive: class variable {name!r:.80} of "
                                     f"{cls.__qualname__} is not an identifier, is given twice "
                                     "or is not a constant")
        setattr(cls, name, value)
        names.add(name)
    return names


def record_digest(record: dict, graphs: dict[str, str]) -> str:
    """What makes two records the same class: the record and its methods' graph text."""
    content = json.dumps([record, sorted(graphs.items())], sort_keys=True)
    return hashlib.sha256(content.encode()).hexdigest()


def cached_class(name: str, digest: str) -> type | None:
    return _rebuilt.get((name, digest))


def remember_class(name: str, digest: str, cls: type, kind: ClassKind) -> None:
    """Keep `cls` for later loads of the same records; its instances pickle by name (a
    rebuilt class cannot be pickled by reference: no module of that name holds it)."""
    _rebuilt[(name, digest)] = cls
    cls.__reduce_ex__ = _REDUCERS[kind]


# Pickling instances of rebuilt classes: by the class's name and the instance's data.  They
# unpickle as the class of that name where the process has it (the saving program, such as
# the process that sent a task to a Dask worker and gets its result back), else as a class
# this process rebuilt under that name.  Nothing is imported.
_REDUCERS = {
    "enum": lambda obj, protocol: (restore_instance, (_name(obj), "enum", obj.name)),
    "namedtuple": lambda obj, protocol: (restore_instance, (_name(obj), "namedtuple",
                                                            tuple(obj))),
    "exception": lambda obj, protocol: (restore_instance, (_name(obj), "exception", obj.args)),
    "class": lambda obj, protocol: (restore_instance, (_name(obj), "class", dict(vars(obj)))),
}


def _name(obj: object) -> tuple[str, str]:
    return type(obj).__module__, type(obj).__qualname__


def restore_instance(name: tuple[str, str], kind: ClassKind, state: object) -> object:
    """An instance pickled by `_REDUCERS`: only of a class this process rebuilt, or of a
    class of the program that its record would rebuild whole (`data_class_problem`), so
    that even an unpickler allowing only tsjit's reconstructors cannot make it build
    another object (such as a `subprocess.Popen` whose `__del__` then runs on the state)."""
    cls = _class_named(*name, kind)
    if kind == "enum":
        return cls[state]
    if kind in ("namedtuple", "exception"):
        return cls(*state)
    instance = object.__new__(cls)
    vars(instance).update(state)
    return instance


def _class_named(module: str, qualname: str, kind: ClassKind) -> type:
    """The program's class `module.qualname` of `kind`, else the one this process
    rebuilt."""
    found = program_class(module, qualname, kind)
    if found is not None:
        return found
    rebuilt = [cls for (name, _), cls in list(_rebuilt.items())
               if name == f"{module}.{qualname}" and vars(cls).get("__reduce_ex__")
               is _REDUCERS.get(kind)]
    if not rebuilt:
        raise pickle.UnpicklingError(f"no class {module}.{qualname} of kind {kind!r} in this "
                                     "process: neither the program's own nor one tsjit.load "
                                     "rebuilt")
    return rebuilt[-1]


def program_class(module: object, qualname: object, kind: object) -> type | None:
    """The program's class `module.qualname` of `kind` that a record would rebuild whole,
    if this process has it: looked up in the namespaces of modules already imported (no
    import, no module `__getattr__`)."""
    found: object = sys.modules.get(str(module))
    for part in str(qualname).split(".") if found is not None else ():
        found = vars(found).get(part) if isinstance(found, (ModuleType, type)) else None
    if isinstance(found, type) and class_kind(found) == kind and \
            data_class_problem(found, kind) is None:
        return found
    return None


def check_name(name: object, what: str) -> str:
    if not is_identifier(name) or name.startswith("_"):
        raise SerializationError(f"corrupt archive: {what} {name!r:.80} is not a public "
                                 "identifier")
    return name


def new_enum(name: str, record: dict, decode: Callable[[object], object]) -> type:
    base = ENUM_BASES.get(record["base"])
    if base is None:
        raise SerializationError(f"corrupt archive: enum base {record['base']!r:.40}")
    members = []
    for member, value in record["members"]:
        value = decode(value)
        if type(value) not in (int, float, str, bool):
            raise SerializationError(f"corrupt archive: enum member {member!r:.40} has a "
                                     f"value of type {type(value).__name__}")
        members.append((check_name(member, "enum member"), value))
    if len({m for m, _ in members}) != len(members):
        raise SerializationError(f"corrupt archive: enum {name} repeats a member")
    try:
        return base(record["qualname"].rpartition(".")[2], members, module=record["module"],
                    qualname=record["qualname"])
    except (TypeError, ValueError) as e:
        raise SerializationError(f"corrupt archive: enum {name}: {e}") from None


def new_namedtuple(name: str, record: dict, decode: Callable[[object], object]) -> type:
    fields = [check_name(f, "field") for f in record["fields"]]
    defaults = [decode(d) for d in record["defaults"]]
    if len(defaults) > len(fields) or not all(
            type(a) is str and a in fields and type(b) is str
            for a, b in record["annotations"].items()):
        raise SerializationError(f"corrupt archive: NamedTuple {name} is malformed")
    try:
        cls = collections.namedtuple(record["qualname"].rpartition(".")[2], fields,
                                     defaults=defaults, module=record["module"])
    except (TypeError, ValueError) as e:
        raise SerializationError(f"corrupt archive: NamedTuple {name}: {e}") from None
    cls.__qualname__ = record["qualname"]
    cls.__annotations__ = dict(record["annotations"])
    return cls


def new_class(record: dict, base: type = object, doc: str = "") -> type:
    """An empty class with the record's names (script classes and exceptions); a frozen
    dataclass's refuses assignments as @dataclass(frozen=True) makes it do (its __init__
    sets the fields past them, through object.__setattr__)."""
    members = {"__module__": record["module"], "__qualname__": record["qualname"],
               "__doc__": doc}
    if record.get("frozen") is True:
        members.update(__setattr__=_frozen_assignment, __delattr__=_frozen_assignment)
    return type(record["qualname"].rpartition(".")[2], (base,), members)


def _frozen_assignment(self, name: str, *value) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def check_method_name(name: object, attributes: dict) -> str:
    if not (is_identifier(name) or name in SPECIAL_METHODS) or name in attributes:
        raise SerializationError(f"corrupt archive: method name {name!r:.80} is not an "
                                 "identifier, a special method a script class may define, or "
                                 "is an attribute's name")
    return name
