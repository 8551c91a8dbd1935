"""The compile-time view of module instances: a type per instance (attribute types from
the values, class annotations and `self.x: T = ...` in __init__; constants from Final
and `__constants__`), submodules, ModuleList / ModuleDict containers unrolled at compile
time, and functions a module holds.  A mixin of the Compiler."""
from __future__ import annotations

import ast
import inspect

import numpy as np

from ..ir.graph import SourceRange, Value
from ..ir.types import TENSOR, AnyType, ClassType, DictType, ListType, NoneType, Type
from .annotations import (
    AnnotationError,
    class_annotations,
    evaluate,
    is_final,
    to_type,
)
from .emitter import constant_type
from .errors import CompilationError
from .resolution import is_constant
from .source import ParsedSource
from .sugared import ModuleListValue


def is_plain_container(value: object) -> bool:
    """A ModuleList / ModuleDict without a forward of its own: a compile-time list of
    submodules.  A subclass with forward is a submodule (callable) that also unrolls."""
    from ..api.module import ModuleDict, ModuleList
    return isinstance(value, (ModuleList, ModuleDict)) and not callable(
        getattr(type(value), "forward", None))


def holds_function(value: object) -> bool:
    """Whether a module attribute is a function (Python, builtin, ufunc or scripted)
    rather than data."""
    from ..api.script_function import ScriptFunction
    return inspect.isfunction(value) or inspect.isbuiltin(value) or isinstance(
        value, (np.ufunc, ScriptFunction))


class ModuleTypes:
    """Module instances as the compiler sees them (Compiler's methods for modules)."""

    def module_type(self, module) -> ClassType:
        """A fresh type per module instance: attribute types and constants come from
        the instance's values and the class's annotations."""
        from ..api.module import Module
        cls = type(module)
        t = ClassType(cls, is_module=True)
        self.module_instances[t] = module
        class_hints = class_annotations(cls)
        init_hints = _init_annotations(cls, Module)
        constants = set(getattr(cls, "__constants__", ()))
        for name, ann in {**init_hints, **class_hints}.items():
            if is_final(ann):
                constants.add(name)
        for name in _class_variables(cls, Module) - vars(module).keys():
            value = inspect.getattr_static(cls, name)
            if name in constants:                       # `k: Final[int] = 3` in the body
                t.constants[name] = value
            else:       # read through the instance when the code runs, and saved with it
                t.attributes[name] = constant_type(value)
                self.class_variables.setdefault(t, set()).add(name)
        for name, value in vars(module).items():
            if name.startswith("_") or is_plain_container(value):
                continue
            if name in constants:
                t.constants[name] = tuple(value) if isinstance(value, list) else value
            elif isinstance(value, Module):
                t.attributes[name] = self.module_type(value)
            elif name in class_hints:
                try:
                    t.attributes[name] = to_type(class_hints[name], self.class_type_of)
                except AnnotationError as e:
                    raise CompilationError(f"attribute '{name}' of {cls.__qualname__}: "
                                           f"{e}") from None
            else:
                inferred = self.value_type(value)
                try:
                    if name in init_hints:
                        inferred = to_type(init_hints[name], self.class_type_of)
                except AnnotationError:     # not a script type: the value decides
                    pass
                if inferred is not None:
                    t.attributes[name] = inferred
        return t

    def value_type(self, value) -> Type | None:
        """The static type of an attribute's Python value (None: not visible to script)."""
        if isinstance(value, (np.ndarray, np.generic)):
            return TENSOR
        if isinstance(value, list):
            elems = [self.value_type(v) for v in value]
            if not elems or None in elems or any(e != elems[0] for e in elems):
                return ListType(TENSOR) if not elems else None
            return ListType(elems[0])
        if isinstance(value, dict):
            keys = {self.value_type(k) for k in value}
            vals = {self.value_type(v) for v in value.values()}
            if len(keys) == 1 and len(vals) == 1:
                return DictType(keys.pop(), vals.pop())
            return DictType(AnyType, AnyType) if not value else None
        if value is None:       # as TorchScript infers it; annotate Optional[T] to assign later
            return NoneType
        t = constant_type(value)
        if t != AnyType:
            return t
        if type(value).__module__ != "builtins" and not callable(value):
            return self.class_type_of(type(value))
        return None

    def module_member(self, em, base: Value, instance, name: str, src: SourceRange):
        value = vars(instance).get(name)
        if is_plain_container(value):
            container = em.insert("prim::GetAttr", [base], [AnyType], {"name": name},
                                  src).output
            return self.container_items(em, container, value, src)
        if holds_function(value):
            # a function held by the module (`self.fn = relu`, `self.act = np.tanh`):
            # called as stored, without `self`; compiled in, so the scripted module
            # refuses a new one
            return em.resolver.python_value(value, src, f"self.{name}")
        if name in base.type.attributes and isinstance(base.type.attributes[name], ClassType):
            sub_type = base.type.attributes[name]
            return em.insert("prim::GetAttr", [base], [sub_type], {"name": name}, src).output
        return None

    def container_items(self, em, container: Value, modules, src: SourceRange
                        ) -> ModuleListValue:
        """A ModuleList / ModuleDict as the compile-time list of its submodules, each read
        from `container` (the container at run time) by its constant index or key."""
        from ..api.module import ModuleDict
        items = []
        pairs = modules.items() if isinstance(modules, ModuleDict) else enumerate(modules)
        for key, sub in pairs:
            item = em.insert("aten::__getitem__", [container, em.const(key, src)],
                             [self.module_type_of(sub)], src=src).output
            items.append((key, item))
        return ModuleListValue(items, isinstance(modules, ModuleDict))

    def module_container(self, em, value, src: SourceRange):
        """`self` of a ModuleList / ModuleDict subclass as its compile-time list of
        submodules (`for layer in self`, `self.items()`, `self[0]`); else `value`."""
        from ..api.module import ModuleDict, ModuleList
        if not (isinstance(value, Value) and isinstance(value.type, ClassType)):
            return value
        instance = self.module_instances.get(value.type)
        if not isinstance(instance, (ModuleList, ModuleDict)):
            return value
        return self.container_items(em, value, instance, src)

    def module_type_of(self, module) -> ClassType:
        for t, instance in self.module_instances.items():
            if instance is module:
                return t
        return self.module_type(module)


def _class_variables(cls: type, base: type) -> set[str]:
    """The constant values (numbers, strings, tuples of them) set in the bodies of `cls`
    and its bases below `base`."""
    return {name for k in cls.__mro__[:cls.__mro__.index(base)] for name, value in
            vars(k).items() if not name.startswith("_") and not callable(value)
            and is_constant(value)}


def _init_annotations(cls: type, base: type) -> dict[str, object]:
    """The annotations of `self.name: T = value` statements in a module's __init__ and
    its bases' (down to `base`): an empty container's value alone cannot say its
    element type (`self.seen: List[int] = []`).  Class-body annotations take precedence
    over these, and a subclass's over its base's."""
    hints: dict[str, object] = {}
    for k in reversed(cls.__mro__[:cls.__mro__.index(base)]):
        hints.update(_own_init_annotations(vars(k).get("__init__")))
    return hints


def _own_init_annotations(init) -> dict[str, object]:
    if not inspect.isfunction(init):
        return {}
    try:
        source = ParsedSource(init)
    except CompilationError:            # no source: the values' own types will do
        return {}
    params = source.definition.args.args
    if not params:
        return {}
    closure = {}
    for name, cell in zip(init.__code__.co_freevars, init.__closure__ or ()):
        try:
            closure[name] = cell.cell_contents
        except ValueError:              # an unbound cell
            pass
    hints = {}
    for node in ast.walk(source.definition):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute) and \
                isinstance(node.target.value, ast.Name) and node.target.value.id == params[0].arg:
            try:
                hints[node.target.attr] = evaluate(node.annotation, init.__globals__, closure)
            except AnnotationError:     # a name Python never bound: the value decides
                pass
    return hints
