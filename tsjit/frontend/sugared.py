"""Compile-time values: what a name or expression means before it becomes IR.

As in TorchScript's `SugaredValue`, an expression may denote something that is
not a runtime value — the NumPy module, a function to compile, a ModuleList to
unroll, `range(...)` in a for loop.  Each kind answers attribute access, calls
and iteration; `Value` results are ordinary SSA values.
"""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import numpy as np

from ..ir.graph import SourceRange, Value
from ..ir.types import (
    ClassType,
    DictType,
    ListType,
    NoneType,
    StrType,
    Type,
    UninitializedType,
)
from ..ops.registry import OpDef
from .errors import CompilationError

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

Result = "Value | Sugared"


class Sugared:
    def describe(self) -> str:
        return type(self).__name__

    def attr(self, em: FunctionEmitter, name: str, src: SourceRange) -> Result:
        raise CompilationError(f"{self.describe()} has no attribute '{name}'", src)

    def call(self, em: FunctionEmitter, args: list, kwargs: dict, src: SourceRange) -> Result:
        raise CompilationError(f"{self.describe()} is not callable", src)

    def as_value(self, em: FunctionEmitter, src: SourceRange) -> Value:
        raise CompilationError(f"{self.describe()} cannot be used as a value", src)

    def unroll(self, em: FunctionEmitter, src: SourceRange) -> list | None:
        """The elements of a compile-time sequence (for loops unroll over them)."""
        return None

    def argument_type(self, position: int | None, keyword: str | None) -> Type | None:
        """The type of the parameter an argument binds to, when the callee declares one:
        a list or dict literal passed there takes it (`[]` is then no List[Tensor])."""
        return None

    def makes_array_of(self, position: int | None, keyword: str | None) -> bool:
        """Whether the argument is the data of a new array (np.array([i, 0.5])): a list
        literal there may mix Python numbers, which NumPy promotes."""
        return False


class PythonModule(Sugared):
    """`np`, `math`, `tsjit`, ...: attributes resolve to the module's Python values."""

    def __init__(self, module):
        self.module = module

    def describe(self) -> str:
        return f"module '{self.module.__name__}'"

    def attr(self, em, name, src):
        if not hasattr(self.module, name):
            raise CompilationError(f"module '{self.module.__name__}' has no attribute '{name}'",
                                   src)
        return em.resolver.python_value(getattr(self.module, name), src,
                                        f"{self.module.__name__}.{name}")


class OpFunction(Sugared):
    """A Python callable bound to a registered op (`np.exp`, `len`, `math.sqrt`).

    Some are also values: `np.float32` is a constructor and a dtype argument.
    """

    def __init__(self, op: OpDef, obj: object, name: str):
        self.op, self.obj, self.name = op, obj, name

    def describe(self) -> str:
        return f"'{self.name}'"

    def call(self, em, args, kwargs, src):
        if self.obj is len and len(args) == 1 and isinstance(args[0], Sugared):
            items = args[0].unroll(em, src)         # len(self.layers): known when compiled
            if items is not None:
                return em.const(len(items), src)
        if len(args) == 1 and not kwargs and isinstance(args[0], Value) and isinstance(
                args[0].type, ClassType) and self.obj in _CONVERSION_METHODS:
            return em.converted_object(self.obj, args[0], _CONVERSION_METHODS[self.obj], src)
        if _is_numpy(self.obj):     # NumPy reads a range as its ints: the list of them
            args = [em.call_builtin(list, [a.as_value(em, src)], src) if isinstance(
                a, IterableForm) and a.kind == "range" else a for a in args]
        return em.call_op(self.op, args, kwargs, src, self.name)

    def as_value(self, em, src):
        if isinstance(self.obj, type):
            return em.const_python(self.obj, src)
        return super().as_value(em, src)

    def makes_array_of(self, position, keyword):
        return self.obj in _ARRAY_CONSTRUCTORS and (position == 0 or keyword in ("object", "a"))


def _is_numpy(obj: object) -> bool:
    return isinstance(obj, np.ufunc) or getattr(obj, "__module__", "").partition(".")[0] \
        == "numpy"


# int(obj), float(obj), ... of a script-class instance: the methods Python tries, in order
_CONVERSION_METHODS = {int: ("__int__", "__index__"), float: ("__float__", "__index__")}

_ARRAY_CONSTRUCTORS = (np.array, np.asarray, np.ascontiguousarray, np.asfortranarray)


class BoundMethod(Sugared):
    """`x.sum` before the call: an op whose first parameter is the receiver."""

    def __init__(self, receiver: Value, op: OpDef, name: str):
        self.receiver, self.op, self.name = receiver, op, name

    def describe(self) -> str:
        return f"method '{self.name}' of {self.receiver.type.annotation}"

    def call(self, em, args, kwargs, src):
        if self.name in ("append", "insert", "extend") and isinstance(self.receiver.type,
                                                                      ListType):
            args = list(args)
            em.type_empty_list(self.receiver, self.name, args, src)
        if isinstance(self.receiver.type, DictType) and \
                self.receiver.type.key == UninitializedType:      # `d = {}`, not yet used
            args = [em.as_value(a, src) for a in args]
            if self.name in ("get", "setdefault") and len(args) == 2 and \
                    args[1].type != NoneType:
                # d.get(k, 0) first: the dict maps k's type to the default's
                em.type_empty_dict(self.receiver, args[0], args[1], src)
            em.settle([self.receiver])
        return em.call_op(self.op, [self.receiver, *args], kwargs, src, self.name)

    def argument_type(self, position, keyword):
        """What a container method stores takes the container's element type:
        `d.setdefault(k, []).append(v)`, `rows.append([])`."""
        stored = _STORED_ARGUMENTS.get((type(self.receiver.type), self.name))
        if stored is None or (position, keyword) not in ((stored[0], None), (None, stored[1])):
            return None
        return stored[2](self.receiver.type)


# (container type, method): the position and name of the argument stored, and its type.
_STORED_ARGUMENTS = {
    (DictType, "get"): (1, "default", lambda d: d.value),
    (DictType, "setdefault"): (1, "default", lambda d: d.value),
    (DictType, "pop"): (1, "default", lambda d: d.value),
    (ListType, "append"): (0, "value", lambda xs: xs.elem),
    (ListType, "insert"): (1, "value", lambda xs: xs.elem),
    (ListType, "extend"): (0, "iterable", lambda xs: xs),
    (type(StrType), "join"): (0, "iterable", lambda s: ListType(StrType)),   # "".join([])
}


class PythonObject(Sugared):
    """A Python value usable only at compile time (a class, a typing form, a dtype)."""

    def __init__(self, obj: object, name: str):
        self.obj, self.name = obj, name

    def describe(self) -> str:
        return f"'{self.name}'"


class SpecialForm(Sugared):
    """Builtins the front end handles itself (range, isinstance, print, tsjit.annotate)."""

    def __init__(self, name: str, obj: object = None):
        self.name, self.obj = name, obj

    def describe(self) -> str:
        return f"'{self.name}'"

    def call(self, em, args, kwargs, src):
        return em.special_form(self.name, args, kwargs, src)

    def attr(self, em, name, src):
        if self.name == "object" and name == "__setattr__":
            return SpecialForm("object.__setattr__", object.__setattr__)
        return super().attr(em, name, src)


class IterableForm(Sugared):
    """range(...), enumerate(...), zip(...), reversed(...): a loop steps an index through
    them; as values they are the Python objects."""

    def __init__(self, kind: str, parts: list):
        self.kind, self.parts = kind, parts

    def describe(self) -> str:
        return f"{self.kind}(...)"

    def as_value(self, em, src):
        return em.iterable_value(self, src)

    def attr(self, em, name, src):
        if self.kind == "range" and name in ("start", "stop", "step"):
            return self.parts[("start", "stop", "step").index(name)]
        return super().attr(em, name, src)

    def is_iterator(self) -> bool:
        """Whether this is an iterator made of runtime values (not a range, nor a form
        over compile-time sequences, which loops unroll)."""
        return self.kind != "range" and all(
            isinstance(p, Value) or (isinstance(p, IterableForm) and p.kind == "range")
            or (isinstance(p, IterableForm) and p.is_iterator()) for p in self.parts)

    def unroll(self, em, src):
        """enumerate/zip/reversed of compile-time sequences (a ModuleList, a tuple)
        unroll too."""
        if self.kind == "range":
            return None
        if self.kind == "reversed":
            items = em.unrolled_items(self.parts[0], src)
            return None if items is None else items[::-1]
        if self.kind == "enumerate":
            inner, start = self.parts
            items = em.unrolled_items(inner, src)
            if items is None:
                return None
            indices = [em.emit_op("aten::add", [start, em.const(i, src)], src=src)
                       for i in range(len(items))]
            return [_pair(em, [index, item], src) for index, item in zip(indices, items)]
        parts = [em.unrolled_items(p, src) for p in self.parts]
        if any(p is None for p in parts):
            return None
        return [_pair(em, list(group), src) for group in zip(*parts)]


class ModuleListValue(Sugared):
    """A ModuleList / Sequential / ModuleDict attribute: unrolled at compile time."""

    def __init__(self, items: list[tuple[str, Result]], is_dict: bool):
        self.items, self.is_dict = items, is_dict

    def describe(self) -> str:
        return "ModuleDict" if self.is_dict else "ModuleList"

    def unroll(self, em, src):
        if self.is_dict:
            return [em.const(k, src) for k, _ in self.items]
        return [v for _, v in self.items]

    def attr(self, em, name, src):
        if self.is_dict and name in ("items", "keys", "values"):
            return _DictView(self, name)
        return super().attr(em, name, src)

    def lookup(self, key: object, src: SourceRange) -> Result:
        if isinstance(key, slice) and not self.is_dict:      # self.layers[1:]
            return ModuleListValue(self.items[key], False)
        try:
            return dict(self.items)[key] if self.is_dict else self.items[key][1]
        except (KeyError, IndexError, TypeError):
            raise CompilationError(f"{self.describe()} has no entry {key!r}", src) from None


class _DictView(Sugared):
    def __init__(self, owner: ModuleListValue, kind: str):
        self.owner, self.kind = owner, kind

    def call(self, em, args, kwargs, src):
        return self

    def unroll(self, em, src):
        if self.kind == "keys":
            return [em.const(k, src) for k, _ in self.owner.items]
        if self.kind == "values":
            return [v for _, v in self.owner.items]
        return [CompileTimeTuple([em.const(k, src), v]) for k, v in self.owner.items]


class CompileTimeTuple(Sugared):
    """A tuple some of whose items are compile-time values (unrolled loop targets)."""

    def __init__(self, items: list):
        self.items = items

    def unroll(self, em, src):
        return self.items

    def as_value(self, em, src):
        """A tuple value when every item has a value (a tuple of NumPy types, as in
        `x.dtype in (np.float32, np.float64)`); an item that has none says so."""
        values = [item if isinstance(item, Value) else item.as_value(em, src)
                  for item in self.items]
        return em.emit_op("prim::TupleConstruct", values, src=src)


class EnumClass(Sugared):
    """An Enum class: members are constants, iteration unrolls over them."""

    def __init__(self, obj: type, name: str):
        self.obj, self.name = obj, name

    def describe(self) -> str:
        return f"enum '{self.name}'"

    def attr(self, em, name, src):
        if name in self.obj.__members__:
            return em.const(self.obj.__members__[name], src)
        return super().attr(em, name, src)

    def unroll(self, em, src):
        return [em.const(member, src) for member in self.obj]


class NamedTupleClass(Sugared):
    """A NamedTuple class (typing or collections): calling it builds the tuple."""

    def __init__(self, obj: type, name: str, tuple_type):
        self.obj, self.name, self.tuple_type = obj, name, tuple_type

    def describe(self) -> str:
        return f"NamedTuple '{self.name}'"

    def call(self, em, args, kwargs, src):
        from ..ops.registry import NO_DEFAULT, Param
        defaults = getattr(self.obj, "_field_defaults", {})
        params = tuple(Param(f, defaults.get(f, NO_DEFAULT)) for f in self.obj._fields)
        values = em.bind_arguments(params, args, kwargs, src, self.name)
        values = [em.coerce(v, t, src, f"field '{f}'") for v, t, f in
                  zip(values, self.tuple_type.elems, self.obj._fields)]
        return em.insert("prim::TupleConstruct", values, [self.tuple_type], {"cls": self.obj},
                         src).output


def _pair(em, items: list, src: SourceRange) -> Result:
    """An element of an unrolled enumerate/zip: a runtime tuple when it can be one."""
    if all(isinstance(i, Value) for i in items):
        return em.emit_op("prim::TupleConstruct", items, src=src)
    return CompileTimeTuple(items)


class SuperObject(Sugared):
    """`super()` in a method of a script class: the methods of the classes after the one
    defining the method (`following`, the instance's MRO), called on `self`."""

    def __init__(self, receiver: Value, following: tuple[type, ...]):
        self.receiver, self.following = receiver, following

    def describe(self) -> str:
        return "super()"

    def attr(self, em, name, src):
        owner = next((k for k in self.following if name in vars(k)), None)
        if owner is object and name == "__init__":
            return _ObjectInit()
        fn = vars(owner).get(name) if owner is not None and owner is not object else None
        if not inspect.isfunction(fn):
            raise CompilationError(f"super().{name}: script code calls only methods (def "
                                   "statements) of the base classes", src)
        return MethodOf(self.receiver, fn)


class MethodOf(Sugared):
    """The function of a given class called on `receiver`, whatever its class overrides
    (`super().name`, `Cls.name(obj)`): compiled for the receiver's class."""

    def __init__(self, receiver: Value, fn):
        self.receiver, self.fn = receiver, fn

    def describe(self) -> str:
        return self.fn.__qualname__

    def call(self, em, args, kwargs, src):
        method = em.compiler.base_method(self.receiver.type, self.fn, src)
        return em.call_compiled(method, "prim::CallMethod", [self.receiver, *args], kwargs,
                                src)


class UnboundMethod(Sugared):
    """`Cls.name` of a method: called with the instance first (`Cls.name(obj, ...)`)."""

    def __init__(self, cls: type, fn):
        self.cls, self.fn = cls, fn

    def describe(self) -> str:
        return self.fn.__qualname__

    def call(self, em, args, kwargs, src):
        receiver = em.as_value(args[0], src) if args else None
        t = getattr(receiver, "type", None)
        if not (isinstance(t, ClassType) and not t.is_module and issubclass(t.py_class,
                                                                            self.cls)):
            found = t.annotation if t is not None else "no argument"
            raise CompilationError(f"{self.fn.__qualname__}() takes an instance of "
                                   f"{self.cls.__qualname__} first, not {found}", src)
        return MethodOf(receiver, self.fn).call(em, args[1:], kwargs, src)


class _ObjectInit(Sugared):
    """`super().__init__()` reaching object: does nothing (object takes no arguments)."""

    def describe(self) -> str:
        return "object.__init__"

    def call(self, em, args, kwargs, src):
        if args or kwargs:
            raise CompilationError("object.__init__() takes exactly one argument (the "
                                   "instance to initialize)", src)
        return em.const(None, src)
