"""`tsjit.script`: compile a function, a script class or a Module instance."""
from __future__ import annotations

import inspect
import os

from ..frontend.compiler import Compiler
from ..frontend.errors import CompilationError
from .module import Module
from .script_function import ScriptFunction, ScriptMethod, ScriptModule

_compiler = Compiler()


def script(obj):
    """Compile `obj` now; invalid programs raise CompilationError from here."""
    if os.environ.get("TSJIT_DISABLE") == "1":
        return obj
    if isinstance(obj, (ScriptFunction, ScriptModule)):
        return obj
    if isinstance(obj, Module):
        return _script_module(obj)
    if inspect.isclass(obj):
        return _script_class(obj)
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        fn = getattr(obj, "__func__", obj)
        return ScriptFunction(_compiler.compile_function(fn), fn)
    raise TypeError(f"tsjit.script expects a function, a class or a tsjit.Module instance, "
                    f"not {type(obj).__name__}")


def _script_class(cls: type) -> type:
    """Compile every method of a script class; instances stay instances of `cls`."""
    t = _compiler.script_class(cls)
    for name, member in vars(cls).items():
        if inspect.isfunction(member) and not getattr(member, "_tsjit_ignore", False):
            _compiler.method(t, name, None)
    return cls


def _script_module(module: Module) -> ScriptModule:
    if not callable(getattr(type(module), "forward", None)):
        raise CompilationError(f"'{type(module).__name__}' has no forward method: a scripted "
                               "module runs its forward (and @tsjit.export methods)")
    t = _compiler.module_type(module)
    names = ["forward"] + [n for n, m in inspect.getmembers(type(module))
                           if getattr(m, "_tsjit_export", False) and n != "forward"]
    methods = {}
    for name in names:
        fn = getattr(type(module), name)
        methods[name] = ScriptMethod(_compiler.method(t, name, None), fn, module)
    return ScriptModule(module, methods)
