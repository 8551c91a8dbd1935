"""Resolving Python names and objects seen by script code.

Order of lookup is Python's: locals (the emitter's environment), the closure,
the function's globals, builtins.  Python objects turn into constants
(captured at compile time), ops from the registry, functions to compile
recursively, classes, or compile-time-only values.
"""
from __future__ import annotations

import builtins
import enum
import inspect
import math
import types
from typing import TYPE_CHECKING

import numpy as np

from .. import decorators
from ..ir.graph import SourceRange
from ..ops.registry import lookup_python
from .annotations import is_namedtuple_class, is_typing_form, namedtuple_type
from .errors import CompilationError
from .sugared import (
    EnumClass,
    NamedTupleClass,
    OpFunction,
    PythonModule,
    PythonObject,
    SpecialForm,
    Sugared,
)
from .ufuncs import ufunc_value

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

SPECIAL_FORMS = {
    builtins.range: "range", builtins.enumerate: "enumerate", builtins.zip: "zip",
    builtins.reversed: "reversed", builtins.slice: "slice",
    builtins.isinstance: "isinstance", builtins.print: "print", builtins.super: "super",
    builtins.getattr: "getattr", builtins.hasattr: "hasattr", builtins.object: "object",
    decorators.annotate: "annotate", decorators.is_scripting: "is_scripting",
    decorators.isinstance: "isinstance",
}
CONSTANT_TYPES = (bool, int, float, str, type(None), complex, np.generic, enum.Enum, np.dtype)


def is_constant(obj: object) -> bool:
    if isinstance(obj, tuple):
        return all(is_constant(o) for o in obj)
    return isinstance(obj, CONSTANT_TYPES)


class Resolver:
    def __init__(self, emitter: FunctionEmitter, fn: object, own_class: type | None = None):
        self.emitter = emitter
        self.globals = getattr(fn, "__globals__", {})
        closure = getattr(fn, "__closure__", None) or ()
        names = getattr(getattr(fn, "__code__", None), "co_freevars", ())
        self.closure = {}
        for name, cell in zip(names, closure):
            try:
                self.closure[name] = cell.cell_contents
            except ValueError:       # an unbound cell (defined later in the outer function)
                pass
        if own_class is not None:
            # a method names its own class before that name is bound: `@tsjit.script` on a
            # class compiles its methods while the class statement runs, where the name
            # (global or a cell of the enclosing function) is bound only once it returns
            # the class, which is what the name means whenever a method runs
            self.closure.setdefault(own_class.__name__, own_class)

    def python_name(self, name: str, src: SourceRange):
        for scope in (self.closure, self.globals):
            if name in scope:
                return self.python_value(scope[name], src, name)
        if hasattr(builtins, name):
            return self.python_value(getattr(builtins, name), src, name)
        raise CompilationError(f"undefined value {name}: '{name}' is not defined", src)

    def python_value(self, obj: object, src: SourceRange, name: str):
        """What a Python object found by name means in script code."""
        em = self.emitter
        if is_constant(obj):
            return em.const_python(obj, src)
        if isinstance(obj, types.ModuleType):
            return PythonModule(obj)
        special = SPECIAL_FORMS.get(obj) if _hashable(obj) else None
        if special is not None:
            return SpecialForm(special, obj)
        op = lookup_python(obj)
        ufunc = ufunc_value(op, obj, name)
        if ufunc is not None:
            return ufunc
        if op is not None:
            return OpFunction(op, obj, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            return PythonObject(obj, name)
        if isinstance(obj, type) and issubclass(obj, np.generic):
            return em.const_python(obj, src)
        if isinstance(obj, np.ndarray):
            return em.const_python(obj, src)
        if inspect.isfunction(obj) or inspect.ismethod(obj):
            return em.compiler.function_value(obj, src, name)
        if obj in (math.inf, math.nan):
            return em.const_python(obj, src)
        if isinstance(obj, type):
            if issubclass(obj, enum.Enum):
                return EnumClass(obj, name)
            if is_namedtuple_class(obj):
                return NamedTupleClass(obj, name, namedtuple_type(obj))
            return em.compiler.class_value(obj, src, name)
        if is_typing_form(obj):
            return PythonObject(obj, name)
        from ..api.script_function import ScriptFunction
        if isinstance(obj, ScriptFunction):
            return em.compiler.function_value(obj.python_function, src, name)
        if isinstance(obj, (list, dict, set)):
            raise CompilationError(
                f"'{name}' is a global {type(obj).__name__}: only immutable globals (int, "
                "float, bool, str, tuples of them) are captured; pass it as an argument", src)
        raise CompilationError(
            f"'{name}' (a Python {type(obj).__name__}) is not supported in script code; call "
            "it from a `@tsjit.ignore` function", src)


def _hashable(obj: object) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


__all__ = ["Resolver", "Sugared"]
