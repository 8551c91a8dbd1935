"""`tsjit.script`: compile a function, a script class or a Module instance."""
from __future__ import annotations

import inspect

from .. import environment
from ..environment import DISABLE_ENV
from ..frontend.compiler import Compiler
from ..frontend.errors import CompilationError
from .module import Module
from .script_function import ScriptFunction, ScriptMethod, ScriptModule

_compiler = Compiler()


def script(obj):
    """Compile a function, a class or a `tsjit.Module` instance to tsjit's typed IR, now.

    A scripted function is still the Python function: every call returns what the plain
    function returns (type, dtype, shape, values, effects, exceptions), while elementwise
    NumPy chains run as fused native kernels and scalar loops as native code once the
    first call showed the argument types.  A program outside the language (TorchScript's
    typed subset of Python, `numpy.ndarray` as `Tensor`) raises `tsjit.CompilationError`
    here, pointing at the source::

        import numpy as np
        import tsjit

        @tsjit.script
        def gelu(x: tsjit.Tensor) -> tsjit.Tensor:   # unannotated parameters are Tensors
            return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

        y = gelu(np.linspace(-3, 3, 1_000_000, dtype=np.float32))
        print(gelu.code, gelu.graph_for(np.ones(4, np.float32)), gelu.stats())

    A class becomes a script class (compiled methods, instances stay instances of it); a
    `tsjit.Module` instance becomes a `ScriptModule` running `forward` (and
    `@tsjit.export` methods) compiled.  With TSJIT_DISABLE=1 `obj` comes back unchanged
    (debug with pdb).  See also `tsjit.trace`, `tsjit.ignore`, `tsjit.save`/`load`."""
    if environment.flag(DISABLE_ENV, False):
        return obj
    if isinstance(obj, (ScriptFunction, ScriptModule)):
        return obj
    if isinstance(obj, Module):
        return _script_module(obj)
    if inspect.isclass(obj):
        return _script_class(obj)
    if inspect.ismethod(obj):
        return _script_bound_method(obj)
    if inspect.isfunction(obj):
        return ScriptFunction(_compiler.compile_function(obj), obj)
    raise TypeError(f"tsjit.script expects a function, a class or a tsjit.Module instance, "
                    f"not {type(obj).__name__}")


def _script_bound_method(method) -> ScriptMethod:
    """`obj.method`: compiled as a method of obj's type (a script class, or the module's
    type for a `tsjit.Module`), with `obj` bound as `self`, as the bound method calls it."""
    owner = method.__self__
    if isinstance(owner, type):
        raise CompilationError(f"tsjit.script cannot compile the classmethod "
                               f"{method.__qualname__} on its own: script its class "
                               f"(tsjit.script({owner.__name__})) and call the classmethod "
                               "from script code")
    t = _compiler.module_type(owner) if isinstance(owner, Module) else \
        _compiler.script_class(type(owner))
    return ScriptMethod(_compiler.method(t, method.__name__, None), method.__func__, owner)


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
