"""Compiling Python functions, script classes and module instances to graphs.

The compiler owns what spans several functions: the cache of compiled
functions, the stack that detects recursion, class types and their methods,
and the compile-time view of module instances (submodules, ModuleLists,
constants).
"""
from __future__ import annotations

import ast
import functools
import inspect
import os
import sys
import sysconfig
import typing
import weakref
from contextlib import contextmanager

from ..ir.graph import SourceRange, Value
from ..ir.types import (
    TENSOR,
    AnyType,
    BoolType,
    ClassType,
    NoneType,
    TupleType,
    Type,
    VarTupleType,
    is_subtype,
    unify,
)
from ..ops.registry import NO_DEFAULT, Param
from .annotations import (
    AnnotationError,
    class_annotations,
    evaluate,
    is_final,
    parse_type_comment,
    to_type,
)
from .dataclass_methods import is_init_variable, is_synthesized, synthesized_method
from .emitter import constant_type
from .errors import CompilationError
from .module_types import ModuleTypes
from .resolution import is_constant
from .source import ParsedSource
from .sugared import ModuleListValue, PythonObject, Sugared, UnboundMethod


class CompiledCallable:
    """A compiled function or method: what prim::CallFunction/CallMethod refer to."""

    def __init__(self, name: str, params: tuple[Param, ...], param_types, return_type, graph):
        self.name = name
        self.params = params
        self.param_types = param_types
        self.return_type = return_type
        self.graph = graph
        # parameters without an annotation (taken as Tensor): errors about them say so
        self.unannotated: frozenset[str] = frozenset()
        self._executor: weakref.ref | None = None
        self._own_executor = None

    @property
    def executor(self):
        """The GraphExecutor that runs the graph: the scripted function's while it lives
        (calls from other script code then show in its stats), held weakly so that
        dropping the ScriptFunction frees its compiled code; else one of this callable's
        own, made on the first call from script code (a helper that was never inlined)."""
        executor = self._executor() if self._executor is not None else None
        if executor is None:
            if self._own_executor is None:
                from ..executor import GraphExecutor
                self._own_executor = GraphExecutor(self.graph, self.name)
            executor = self._own_executor
        return executor

    @executor.setter
    def executor(self, executor) -> None:
        self._executor = weakref.ref(executor)

    def __call__(self, *args):
        return self.executor(*args)

    @property
    def schema(self) -> str:
        parts = []
        for p, (name, t) in zip(self.params, self.param_types):
            text = f"{t.annotation} {name}"
            if p.default is not inspect.Parameter.empty and p.default is not NO_DEFAULT:
                text += f"={p.default!r}"
            parts.append(text)
        return f"{self.name}({', '.join(parts)}) -> {self.return_type.annotation}"




class ScriptFunctionRef(Sugared):
    def __init__(self, compiled: CompiledCallable):
        self.compiled = compiled

    def describe(self) -> str:
        return f"function '{self.compiled.name}'"

    def call(self, em, args, kwargs, src):
        return em.call_compiled(self.compiled, "prim::CallFunction", args, kwargs, src)

    def argument_type(self, position, keyword):
        return parameter_type(self.compiled.param_types, position, keyword)


def parameter_type(types: list[tuple[str, Type]], position: int | None,
                   keyword: str | None) -> Type | None:
    """The type of the parameter an argument (by position or keyword) binds to."""
    if keyword is not None:
        return dict(types).get(keyword)
    return types[position][1] if position < len(types) else None


class PythonCallback(Sugared):
    """A @tsjit.ignore function: called back in Python with declared result type."""

    def __init__(self, fn, params, return_type: Type):
        self.fn, self.params, self.return_type = fn, params, return_type

    def call(self, em, args, kwargs, src):
        inputs = em.bind_arguments(self.params, args, kwargs, src, self.fn.__name__)
        return em.insert("prim::PythonOp", inputs, [self.return_type], {"fn": self.fn},
                         src).output


class UnusedFunction(Sugared):
    """A @tsjit.unused function: calling it raises at run time."""

    def __init__(self, fn, return_type: Type):
        self.fn, self.return_type = fn, return_type

    def call(self, em, args, kwargs, src):
        message = em.const(f"function '{self.fn.__name__}' is marked @tsjit.unused and was "
                           "not compiled", src)
        em.insert("prim::RaiseException", [message], [], {"cls": RuntimeError}, src)
        return em.insert("prim::Uninitialized", [], [self.return_type], src=src).output


class ClassConstructor(Sugared):
    def __init__(self, class_type: ClassType, compiler: Compiler):
        self.class_type = class_type
        self.compiler = compiler
        self.obj = class_type.py_class          # the class itself (isinstance targets)

    def argument_type(self, position, keyword):
        """The __init__ parameter's type: `Node(1, [])` makes a List[Node] of the []."""
        init = self.class_type.methods.get("__init__")
        if init is None:
            return None
        return parameter_type(init.param_types[1:], position, keyword)

    def describe(self) -> str:
        return f"class '{self.class_type.py_class.__qualname__}'"

    def attr(self, em, name, src):
        found = em.compiler.class_level(em, self.class_type, name, src)
        if found is not None:
            return found
        cls = self.class_type.py_class
        fn = synthesized_method(cls, name) or inspect.getattr_static(cls, name, None)
        if inspect.isfunction(fn):              # `Cls.method(obj, ...)`
            return UnboundMethod(cls, fn)
        return super().attr(em, name, src)

    def call(self, em, args, kwargs, src):
        t = self.class_type
        obj = em.insert("prim::CreateObject", [], [t], {"cls": t.py_class}, src).output
        if has_own_init(t.py_class):
            em.call_method(obj, "__init__", args, kwargs, src)
        elif args or kwargs:            # object.__init__ takes no arguments
            message = em.const(f"{t.py_class.__name__}() takes no arguments", src)
            em.insert("prim::RaiseException", [message], [], {"cls": TypeError}, src)
        return obj


class Compiler(ModuleTypes):
    """Caches are weak where they are keyed by what the user's program owns: a function
    dropped by the program (and its ScriptFunction) frees its graph and compiled code.
    A class's compiled methods live in its ClassType (`ClassType.methods`), and a module
    instance is remembered only while it lives."""

    def __init__(self) -> None:
        self.functions: weakref.WeakKeyDictionary[object, CompiledCallable] = \
            weakref.WeakKeyDictionary()
        # (function, self type) being compiled: a module's submodule of the same class has a
        # type of its own, so a tree of modules is not recursion (the same pair again is)
        self.stack: list[tuple[object, ClassType | None]] = []
        self.module_instances: weakref.WeakKeyDictionary[ClassType, object] = \
            weakref.WeakKeyDictionary()
        self.compiling_init: list[ClassType] = []
        # a module type's attributes that are class variables: checked where read (see
        # class_variable); weak, as module_instances
        self.class_variables: weakref.WeakKeyDictionary[ClassType, set[str]] = \
            weakref.WeakKeyDictionary()

    # ---- functions
    def function_value(self, fn, src: SourceRange, name: str) -> Sugared:
        fn = getattr(fn, "__func__", fn)
        if not inspect.isfunction(fn):
            raise CompilationError(f"'{name}' is not supported in script code: it is not a "
                                   "Python function, and no op is registered for it; call it "
                                   "from a `@tsjit.ignore` function", src)
        if getattr(fn, "_tsjit_ignore", False):
            params, types, ret = self.signature(fn, None)
            return PythonCallback(fn, params, ret or AnyType)
        if getattr(fn, "_tsjit_unused", False):
            return UnusedFunction(fn, self.signature(fn, None)[2] or NoneType)
        if (fn, None) in self.stack:
            raise CompilationError(f"'{name}' is called recursively. Recursive calls are not "
                                   "supported", src)
        with self.library_boundary(fn, name, src), self.called_from(name, src):
            return ScriptFunctionRef(self.compile_function(fn))

    @contextmanager
    def called_from(self, name: str, src: SourceRange | None):
        """An error inside a callee also shows the call that had it compiled."""
        caller = getattr(self.stack[-1][0], "__qualname__", None) if self.stack else None
        try:
            yield
        except CompilationError as e:
            if src is not None and caller is not None:
                e.add_context(f"'{name}' is being compiled since it was called from "
                              f"'{caller}' here:", src)
            raise

    @contextmanager
    def library_boundary(self, obj, name: str | None, src: SourceRange | None):
        """Library code (NumPy's, the standard library's) that script code cannot compile
        is reported at the user's call, not as a complaint about the library's source."""
        try:
            yield
        except CompilationError as e:
            if src is None or not is_library_code(obj):
                raise
            if name is None or "." not in name:     # as the user wrote it, if qualified
                name = f"{obj.__module__}.{obj.__qualname__}"
            reason = str(e).split("\n", 1)[0]
            raise CompilationError(
                f"`{name}` is not supported in script code; call it from a `@tsjit.ignore` "
                f"function (compiling its source failed: {reason})", src) from None

    def compile_function(self, fn, self_type: ClassType | None = None,
                         name: str | None = None, is_classmethod: bool = False
                         ) -> CompiledCallable:
        """Compile `fn`; a method's first parameter is `self_type`, or with
        `is_classmethod` the class itself, bound when compiling (not a graph input).
        Compiled once: a function is cached while it lives, a method in its class's type
        (`ClassType.methods`), so that both are freed with what the program drops."""
        cache = self.functions if self_type is None else self_type.methods
        key = fn if self_type is None else (fn, is_classmethod)
        found = cache.get(key)
        if found is not None:
            return found
        from ..passes import run_canonical_passes
        from .emitter import FunctionEmitter
        source = ParsedSource(fn)
        if not isinstance(source.definition, ast.FunctionDef):
            kind = "an async def" if isinstance(source.definition, ast.AsyncFunctionDef) \
                else "not a def statement (a lambda?)"
            raise CompilationError(f"{getattr(fn, '__qualname__', fn)!r} is {kind}: only "
                                   "'def' functions are supported",
                                   source.range(source.definition))
        if hasattr(fn, "__wrapped__"):
            # the source found is the innermost function's (inspect follows __wrapped__, as
            # functools.wraps sets it): compiling it would silently drop what the wrapper does
            raise CompilationError(f"{fn.__qualname__!r} is a wrapper made by a decorator (it "
                                   "has __wrapped__, as functools.wraps sets): script code "
                                   "cannot compile the wrapper; script the undecorated "
                                   "function, or mark the wrapper @tsjit.ignore",
                                   source.header())
        self.stack.append((fn, self_type))
        try:
            emitter = FunctionEmitter(self, fn, source, self_type)
            params, types, ret = self.signature(fn, emitter, self_type)
            if is_classmethod:
                emitter.frame.assign(types[0][0], ClassConstructor(self_type, self),
                                     source.range(source.definition))
                params, types = params[1:], types[1:]
            graph = emitter.emit_function(types, ret)
            if emitter.bare_tuple_return is not None and not isinstance(
                    emitter.return_type, (TupleType, VarTupleType)):
                raise CompilationError(f"the return annotation is 'tuple', but the function "
                                       f"returns {emitter.return_type.annotation}",
                                       emitter.bare_tuple_return)
            run_canonical_passes(graph)
        finally:
            self.stack.pop()
        compiled = CompiledCallable(name or fn.__name__, params, types, emitter.return_type,
                                    graph)
        compiled.unannotated = frozenset(emitter.unannotated)
        cache[key] = compiled
        return compiled

    def signature(self, fn, emitter, self_type: ClassType | None = None):
        """(params, [(name, type)], return type or None) from annotations or a type comment."""
        source = emitter.source if emitter else ParsedSource(fn)
        definition = source.definition
        args = definition.args
        if args.vararg or args.kwarg or args.posonlyargs:
            raise CompilationError("*args, **kwargs and positional-only parameters are not "
                                   "supported", source.range(definition))
        if any(d is not None for d in args.kw_defaults) and not is_synthesized(fn):
            raise CompilationError("keyword-only parameters with defaults are not supported "
                                   "(as in TorchScript)", source.range(definition))
        sig = inspect.signature(fn)
        params = tuple(Param(p.name, p.default if p.default is not inspect.Parameter.empty
                             else NO_DEFAULT, kwonly=p.kind is p.KEYWORD_ONLY)
                       for p in sig.parameters.values())
        names = [a.arg for a in args.args + args.kwonlyargs]
        annotations: list[ast.expr | None] = [a.annotation for a in args.args + args.kwonlyargs]
        returns = definition.returns
        comment = definition.type_comment
        if comment:
            try:
                arg_anns, returns = parse_type_comment(comment)
            except AnnotationError as e:
                raise CompilationError(str(e), source.range(definition)) from None
            if self_type is not None and len(arg_anns) == len(names) - 1:
                arg_anns = [None, *arg_anns]
            if len(arg_anns) != len(names):
                raise CompilationError(f"the type comment gives {len(arg_anns)} parameter "
                                       f"types, but '{fn.__name__}' has {len(names)} "
                                       "parameters", source.range(definition))
            annotations = arg_anns
        globals_ = getattr(fn, "__globals__", {})
        scope = emitter.resolver.closure if emitter is not None else None
        types = []
        for i, (pname, ann) in enumerate(zip(names, annotations)):
            if i == 0 and self_type is not None:
                types.append((pname, self_type))
            elif ann is None:
                types.append((pname, TENSOR))
                if emitter is not None:
                    emitter.unannotated.add(pname)
            else:
                types.append((pname, self._annotation(ann, globals_, source, scope)))
        if returns is not None and _is_bare_tuple(returns, globals_, scope):
            # `-> tuple`, which TorchScript takes as a tuple of the inferred element types
            returns = None
            if emitter is not None:
                emitter.bare_tuple_return = source.range(definition.returns)
        ret = None if returns is None else self._annotation(returns, globals_, source, scope)
        self._check_defaults(params, types, annotations, source)
        return params, types, ret

    @staticmethod
    def _check_defaults(params, types, annotations, source: ParsedSource) -> None:
        """A default the call-time argument check would reject fails every call that
        omits the argument: reject it when compiling, at the default."""
        from ..api.argument_check import value_has_type
        defaults = source.definition.args.defaults
        first = sum(not p.kwonly for p in params) - len(defaults)
        for i, (param, (name, t), ann) in enumerate(zip(params, types, annotations)):
            if i < first or param.kwonly or value_has_type(param.default, t):
                continue
            hint = (f"'{name}' is not annotated, so it is assumed to be a Tensor; annotate it"
                    if ann is None else
                    "annotate it Optional[...] to allow None" if param.default is None else
                    "change the annotation or the default")
            raise CompilationError(
                f"parameter '{name}' has type {t.annotation}, but its default value "
                f"{param.default!r} has type {type(param.default).__name__} ({hint})",
                source.range(defaults[i - first]))

    def _annotation(self, node: ast.expr, globals_: dict, source: ParsedSource,
                    scope: dict | None = None) -> Type:
        try:
            return to_type(evaluate(node, globals_, scope), self.class_type_of)
        except AnnotationError as e:
            raise CompilationError(str(e), source.range(node)) from None

    # ---- script classes
    def class_type_of(self, cls: type) -> ClassType | None:
        from ..api.module import Module
        if isinstance(cls, type) and issubclass(cls, Module):
            return None
        if not isinstance(cls, type) or cls.__module__ == "builtins":
            return None
        return self.script_class(cls)

    def class_value(self, cls: type, src: SourceRange, name: str | None = None) -> Sugared:
        with self.library_boundary(cls, name, src), self.called_from(cls.__qualname__, src):
            t = self.class_type_of(cls)
        if t is None:
            raise CompilationError(f"class {cls.__qualname__} cannot be used in script code",
                                   src)
        return ClassConstructor(t, self)

    def script_class(self, cls: type) -> ClassType:
        t = ClassType.for_class(cls)
        if t.methods.get("$compiled") or t in self.compiling_init:
            return t
        self.compiling_init.append(t)
        try:
            hints = class_annotations(cls)
            for name, ann in hints.items():
                if typing.get_origin(ann) is typing.ClassVar or ann is typing.ClassVar \
                        or is_init_variable(ann):
                    continue        # a class variable (read from the class), no attribute
                t.attributes[name] = to_type(ann, self.class_type_of)
            if has_own_init(cls):
                self.method(t, "__init__", None)
        except AnnotationError as e:
            raise CompilationError(f"in class {cls.__qualname__}: {e}") from None
        finally:
            self.compiling_init.remove(t)
        t.methods["$compiled"] = True
        return t

    def method(self, t: ClassType, name: str, src: SourceRange | None) -> CompiledCallable:
        found = t.methods.get(name)
        if found is not None:
            return found
        fn = synthesized_method(t.py_class, name) or inspect.getattr_static(t.py_class, name,
                                                                             None)
        if isinstance(fn, property):            # compiled as a method: its getter
            fn = fn.fget
        if not inspect.isfunction(fn):          # missing, or inherited from object
            raise CompilationError(f"'{t.annotation}' object has no method '{name}'", src)
        if (fn, t) in self.stack:
            raise CompilationError(f"method '{name}' is called recursively. Recursive calls "
                                   "are not supported", src)
        if name == "__init__":
            self.compiling_init.append(t)
        try:
            with self.called_from(f"{t.py_class.__qualname__}.{name}", src):
                compiled = self.compile_function(fn, t, f"{t.py_class.__qualname__}.{name}")
        finally:
            if name == "__init__":
                self.compiling_init.remove(t)
        t.methods[name] = compiled
        return compiled

    def base_method(self, t: ClassType, fn, src: SourceRange) -> CompiledCallable:
        """A base class's method `fn` compiled for instances of `t` (`super().f()`)."""
        if (fn, t) in self.stack:
            raise CompilationError(f"method '{fn.__name__}' is called recursively. Recursive "
                                   "calls are not supported", src)
        with self.called_from(fn.__qualname__, src):
            return self.compile_function(fn, t, fn.__qualname__)

    def class_attribute(self, em, base: Value, name: str, src: SourceRange):
        t: ClassType = base.type
        if name in t.constants:
            return em.const_python(t.constants[name], src)
        instance = self.module_instances.get(t)
        if name in ("items", "keys", "values") and isinstance(
                container := self.module_container(em, base, src), ModuleListValue):
            return container.attr(em, name, src)
        if instance is not None:
            found = self.module_member(em, base, instance, name, src)
            if found is not None:
                return found
        if name in self.class_variables.get(t, ()):
            return self.class_variable(em, base, t, name, t.attributes[name], src)
        if name in t.attributes:
            return em.insert("prim::GetAttr", [base], [t.attributes[name]], {"name": name},
                             src).output
        found = self.class_level(em, t, name, src, instance=base)
        if found is not None:
            return found
        if isinstance(inspect.getattr_static(t.py_class, name, None), property):
            return em.call_method(base, name, [], {}, src)
        if callable(getattr(t.py_class, name, None)):
            return BoundScriptMethod(base, name)
        if instance is not None and name in vars(instance):
            value = vars(instance)[name]
            raise CompilationError(
                f"module attribute '{name}' (a {type(value).__name__}) has no type script code "
                f"can infer: annotate it in the class body ({name}: ...)", src)
        raise CompilationError(f"'{t.annotation}' object has no attribute '{name}'", src)

    def class_level(self, em, t: ClassType, name: str, src: SourceRange,
                    instance: Value | None = None):
        """A name defined on the class itself: a staticmethod or classmethod (compiled
        like a function), or a class variable: a Final one is a constant, any other is
        read when the code runs, so that a later `Cls.attr = ...` is seen as in Python;
        read through an `instance` (`self.attr`), as Python reads it: an attribute the
        instance itself was given shadows the class's."""
        member = inspect.getattr_static(t.py_class, name, None)
        if isinstance(member, staticmethod):
            return self.function_value(member.__func__, src,
                                       f"{t.py_class.__qualname__}.{name}")
        if isinstance(member, classmethod):
            qualname = f"{t.py_class.__qualname__}.{name}"
            if (member.__func__, t) in self.stack:
                raise CompilationError(f"'{qualname}' is called recursively. Recursive calls "
                                       "are not supported", src)
            with self.called_from(qualname, src):
                return ScriptFunctionRef(self.compile_function(member.__func__, t, qualname,
                                                               is_classmethod=True))
        if member is not None and not callable(member) and is_constant(member):
            if is_final(class_annotations(t.py_class).get(name)):
                return em.const_python(member, src)
            owner = instance if instance is not None else em.const_python(t.py_class, src)
            return self.class_variable(em, owner, t, name, constant_type(member), src)
        return None

    def class_variable(self, em, owner: Value, t: ClassType, name: str, type_: Type,
                       src: SourceRange) -> Value:
        """Read a class variable when the code runs (through the class or an instance).
        The code was compiled for the type it had: a value of another type raises
        TypeError where it is used, rather than run typed code on it.

        The read itself is made once, when the function starts (its owner, the class or
        `self`, is known there): a loop that uses the variable stays native code."""
        constant = owner.node.kind == "prim::Constant"
        key = (owner.node.attrs["value"] if constant else owner, name)
        found = em.class_reads.get(key)
        if found is None and (constant or owner in em.graph.inputs):
            found = em.class_reads[key] = em.at_entry(lambda: self._read_class_variable(
                em, em.const_python(key[0], src) if constant else owner, name, type_, src))
        elif found is None:         # through a submodule: read where it is used
            found = self._read_class_variable(em, owner, name, type_, src)
        matches, value = found
        message = em.const(f"class variable {t.py_class.__qualname__}.{name} was "
                           f"{type_.annotation} when the script code was compiled, and script "
                           "code is typed: keep its type, or script the code again", src)
        em.emit_if(matches, lambda: None,
                   lambda: em.emit_raise(TypeError, [message], src), src)
        return value

    @staticmethod
    def _read_class_variable(em, owner: Value, name: str, type_: Type,
                             src: SourceRange) -> tuple[Value, Value]:
        """(whether the value has the type compiled for, the value cast to that type)."""
        value = em.insert("prim::GetAttr", [owner], [AnyType], {"name": name}, src).output
        matches = em.insert("prim::isinstance", [value], [BoolType], {"types": (type_,)},
                            src).output
        return matches, em.insert("prim::unchecked_cast", [value], [type_], src=src).output

    def set_class_attribute(self, em, base: Value, name: str, value: Value,
                            src: SourceRange, direct: bool = False) -> None:
        t: ClassType = base.type
        member = inspect.getattr_static(t.py_class, name, None)
        if isinstance(member, property) and name not in t.attributes:
            qualname = f"{t.py_class.__qualname__}.{name}"
            if member.fset is None:
                raise CompilationError(f"property '{qualname}' has no setter", src)
            if (member.fset, t) in self.stack:
                raise CompilationError(f"the setter of '{qualname}' assigns itself "
                                       "recursively", src)
            with self.called_from(f"{qualname} (setter)", src):
                setter = self.compile_function(member.fset, t, qualname)
            em.call_compiled(setter, "prim::CallMethod", [base, value], {}, src)
            return
        declared = t.attributes.get(name)
        if name in t.constants:
            raise CompilationError(f"cannot assign to constant (Final) attribute '{name}'", src)
        if declared is None:
            if t not in self.compiling_init or t.is_module:
                raise CompilationError(
                    f"tried to set nonexistent attribute '{name}' of {t.annotation}: "
                    "attributes must be declared in __init__ (or as class annotations)", src)
            t.attributes[name] = declared = value.type
        if not is_subtype(value.type, declared):
            joined = unify(declared, value.type) if t in self.compiling_init else None
            if joined is None:
                raise CompilationError(f"attribute '{name}' has type {declared.annotation}; "
                                       f"cannot assign a {value.type.annotation}", src)
            t.attributes[name] = joined
        em.insert("prim::SetAttr", [base, value], [],
                  {"name": name, "direct": True} if direct else {"name": name}, src)

@functools.cache
def _library_dirs() -> tuple[str, ...]:
    """Where installed packages and the standard library live (asked of sysconfig when
    first needed: only an error message needs it, and it cost every `import tsjit`)."""
    return tuple(os.path.realpath(d) + os.sep for d in {
        *sysconfig.get_paths().values(), sys.prefix, sys.base_prefix, sys.exec_prefix}
        if d and os.path.isdir(d))


def is_library_code(obj: object) -> bool:
    """Whether `obj` comes from an installed package or the standard library."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    return path is not None and os.path.realpath(path).startswith(_library_dirs())


def has_own_init(cls: type) -> bool:
    """Whether the class or a base other than `object` defines __init__."""
    return inspect.getattr_static(cls, "__init__") is not object.__init__


class BoundScriptMethod(Sugared):
    def __init__(self, obj: Value, name: str):
        self.obj, self.name = obj, name

    def describe(self) -> str:
        return f"method '{self.name}'"

    def call(self, em, args, kwargs, src):
        return em.call_method(self.obj, self.name, args, kwargs, src)


__all__ = ["Compiler", "PythonObject"]


def _is_bare_tuple(node: ast.expr, globals_: dict, scope: dict | None) -> bool:
    """Whether an annotation is the builtin `tuple` itself (not `tuple[...]`)."""
    try:
        return evaluate(node, globals_, scope) is tuple
    except AnnotationError:
        return False
