"""The objects `tsjit.script` returns: ScriptFunction, and ScriptModule for modules."""
from __future__ import annotations

import copy
import inspect
import types
import weakref

from .. import config
from ..executor import GraphExecutor
from ..frontend.compiler import CompiledCallable
from ..frontend.module_types import holds_function
from ..interpreter import python_source
from ..ir.graph import Graph
from ..ops.registry import NO_DEFAULT
from .argument_check import make_argument_checker, value_has_type
from .tracer import TracingError, caller_source, tracing_recorder


class ScriptFunction:
    """A compiled function: call it like the Python function; inspect every stage.

    It carries what functools.update_wrapper gives a wrapper (`__wrapped__`, `__name__`,
    `__qualname__`, `__doc__`, `__module__`) and the Python function's signature, and it
    is a method descriptor as a function is: help(), IDEs and Sphinx show the user's
    function, and one stored on a class binds to instances as the function would. A
    loaded or unpickled function has no Python function: its name, docstring and a
    signature from the compiled parameters."""

    def __init__(self, compiled: CompiledCallable, python_function):
        self.compiled = compiled
        self.python_function = python_function
        self.name = compiled.name
        self._signature = self._compiled_signature()
        self._describe(python_function)
        filename = python_function.__code__.co_filename if hasattr(
            python_function, "__code__") else "<script>"
        self.executor = GraphExecutor(compiled.graph, compiled.name, filename)
        compiled.executor = self.executor
        self._check = make_argument_checker(compiled.name, compiled.param_types,
                                            compiled.unannotated)
        # calls with just this many positional arguments skip binding and may take a
        # direct entry; with keyword-only parameters every call binds (a positional value
        # for one raises TypeError), so neither applies
        self._keyword_only = any(p.kwonly for p in compiled.params)
        self._arity = -1 if self._keyword_only else len(compiled.param_types)
        self._plain_class = type(self)
        self._drop_direct()
        _functions.add(self)

    def _call(self, *args, **kwargs):
        if kwargs or len(args) != self._arity:
            args = self._bind(args, kwargs)
        try:
            self._check(*args)
        except TypeError:
            if not self._take_classes_of(args):
                recorder = tracing_recorder(args, {})
                if recorder is None:
                    raise
                return recorder.record_script_call(self, args, {})
            self._check(*args)      # (the arguments are bound already)
        result = self.executor(*args)
        if self.executor.optimized is not self._direct_graph and not self._keyword_only:
            from ..executor.pipeline import direct_entry  # native code exists: loaded
            self._direct_graph = self.executor.optimized
            entry = direct_entry(self._direct_graph, self._call)
            if entry is not None:
                self._keep_direct_calls()
                builtin, self._direct_calls = entry
                self.__class__ = type(self._plain_class.__name__, (self._plain_class,),
                                      {"__call__": staticmethod(builtin),
                                       "__module__": __name__})
        return result

    __call__ = _call    # one frame on the hot path (a direct entry class overrides it)

    def _take_classes_of(self, args: tuple) -> bool:
        """Whether this unpickled function now runs on the classes of `args` where they
        are the program's, of the names it uses but other objects than the classes it
        unpickled with (see `pickling.with_classes_of`): it takes what it is given."""
        if "_archive_classes" not in vars(self):
            return False
        from .pickling import with_classes_of
        loaded = with_classes_of(self, args)
        if loaded is None:
            return False
        doc = self.__doc__
        ScriptFunction.__init__(self, loaded.compiled, None)
        self.__doc__, self._archive_classes = doc, loaded._archive_classes
        return True

    def _drop_direct(self) -> None:
        """Forget the direct entry.  A function whose optimized graph is one native region
        is called straight into its native code: the instance gets a class of its own
        whose `__call__` is the region's builtin (no Python frame at all).  The builtin's
        guards check at least what the argument checks do, and any other call (keyword
        arguments, other types, a miss) takes `_call`, the normal path."""
        self.__class__ = self._plain_class
        self._direct_graph = None
        self._keep_direct_calls()

    def _keep_direct_calls(self) -> None:
        """Move the calls a direct entry counted into the executor's counters, before the
        entry is dropped or replaced (they would vanish from `stats()`)."""
        if getattr(self, "_direct_calls", None) is not None:
            self.executor.counters.calls += int(self._direct_calls[0])
        self._direct_calls = None

    def _describe(self, python_function) -> None:
        """The wrapper metadata (see the class docstring)."""
        self.__name__ = self.__qualname__ = self.name
        self.__doc__ = None
        self.__signature__ = self._signature
        if python_function is None:
            return
        for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
            if hasattr(python_function, attribute):
                setattr(self, attribute, getattr(python_function, attribute))
        self.__wrapped__ = python_function
        self.__signature__ = inspect.signature(python_function)

    def take_exception_details(self) -> None:
        """A loaded class's `__exit__`: Python's with statement passes it an exception's
        type, value and traceback whatever its annotations say (the in-process class's
        Python method takes them unchecked), so its parameters after `self` are not
        checked."""
        check = self._check
        self._check = lambda manager, *details: check(manager, None, None, None)

    def _compiled_signature(self) -> inspect.Signature:
        """The parameters as compiled: names, defaults and types (as annotation text)."""
        return inspect.Signature([
            inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY if p.kwonly
                              else inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              default=p.default if p.default is not NO_DEFAULT
                              else inspect.Parameter.empty,
                              annotation=t.annotation)
            for p, (_, t) in zip(self.compiled.params, self.compiled.param_types)],
            return_annotation=self.compiled.return_type.annotation)

    def __get__(self, instance, owner=None):
        """Bound to `instance` when stored on a class, as a Python function is."""
        return self if instance is None else types.MethodType(self, instance)

    def _bind(self, args: tuple, kwargs: dict) -> tuple:
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}() {e}") from None
        bound.apply_defaults()
        return tuple(bound.arguments.values())

    @property
    def graph(self) -> Graph:
        return self.compiled.graph

    @property
    def schema(self) -> str:
        return self.compiled.schema

    @property
    def code(self) -> str:
        """The graph printed back as Python: valid (it compiles) and meant for reading."""
        params = self.compiled.params
        first_default = next((i for i, p in enumerate(params) if p.default is not NO_DEFAULT),
                             len(params))
        defaults = [p.default for p in params[first_default:]]
        keyword_only = sum(p.kwonly for p in params)
        if len(params) != len(self.compiled.graph.inputs):   # no way to line them up
            defaults, keyword_only = [], 0
        return python_source(self.compiled.graph, self.name, defaults, keyword_only)

    def _executor_args(self, args: tuple, kwargs: dict) -> tuple:
        """The executor's arguments for a call with `args` and `kwargs` (checked)."""
        if kwargs or len(args) != self._arity:
            args = self._bind(args, kwargs)
        self._check(*args)
        return args

    def graph_for(self, *args, **kwargs) -> Graph:
        """The optimized graph calls like this one run (guards, fusion groups, fallbacks).
        The function runs with these arguments only if it has not specialized yet (its
        profiling calls, with their effects); once it has, nothing runs."""
        return self.executor.graph_for(*self._executor_args(args, kwargs))

    def inspect_llvm(self, *args, **kwargs) -> str:
        """LLVM IR of the native code compiled for calls like this one.  Nothing runs
        when a specialization for such arguments (dtypes, ranks, layouts, number types)
        exists; else the function runs with them, with their effects, until it has one
        (its profiling calls), or once when they take a fallback that has not."""
        kernels = self.executor.kernels_for(*self._executor_args(args, kwargs))
        return "".join(f"; {k.label}\n{k.kernel.llvm_ir}\n" for k in kernels)

    def inspect_asm(self, *args, **kwargs) -> str:
        """Machine assembly of that native code (when the function runs: see
        inspect_llvm)."""
        kernels = self.executor.kernels_for(*self._executor_args(args, kwargs))
        return "".join(f"# {k.label}\n{k.kernel.asm}\n" for k in kernels)

    def stats(self) -> dict[str, int]:
        stats = self.executor.stats()
        if self._direct_calls is not None:
            stats["calls"] += int(self._direct_calls[0])
        return stats

    def save(self, path) -> None:
        """Write the compiled function to `path` (a path or binary file) for `tsjit.load`."""
        from .serialization import save  # it builds script objects: imported on use
        save(self, path)

    def __reduce__(self):
        """Pickled as its saved form (graphs, no source): see `pickling.py`."""
        from .pickling import restore_function, saved_form
        return restore_function, (saved_form(self),)

    def __copy__(self) -> ScriptFunction:
        return self     # a compiled function is immutable, as a Python function is

    def __deepcopy__(self, memo: dict) -> ScriptFunction:
        return self

    def __repr__(self) -> str:
        return f"<tsjit.ScriptFunction {self.schema}>"


_functions: weakref.WeakSet[ScriptFunction] = weakref.WeakSet()


def _drop_direct_entries() -> None:
    for function in list(_functions):
        function._drop_direct()


config.on_change(_drop_direct_entries)


class ScriptMethod(ScriptFunction):
    """A compiled method bound to one module instance (`self` is passed for you)."""

    def __init__(self, compiled: CompiledCallable, python_function, instance):
        super().__init__(compiled, python_function)
        self.instance = instance
        if python_function is not None:     # the bound method's metadata
            self.__wrapped__ = types.MethodType(python_function, instance)
        self.__signature__ = self.__signature__.replace(
            parameters=list(self.__signature__.parameters.values())[1:])
        self._arity -= 1
        self._check_all = self._check
        self._check = None
        self._module_methods: tuple[str, dict[str, ScriptMethod]] | None = None  # ScriptModule

    def _module(self) -> ScriptModule:
        """The scripted module this method belongs to."""
        if self._module_methods is None:
            raise TypeError(f"'{self.name}' is not a method of a scripted module")
        return ScriptModule(self.instance, self._module_methods[1])

    def __reduce__(self):
        """Pickled as its module's method: the module goes through its saved form."""
        return getattr, (self._module(), self._module_methods[0])

    def __deepcopy__(self, memo: dict) -> ScriptMethod:
        """The same method of a deep copy of its module (as for a bound method)."""
        return getattr(copy.deepcopy(self._module(), memo), self._module_methods[0])

    def __get__(self, instance, owner=None):
        return self     # already bound, as a bound method

    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != self._arity:
            args = self._bind((self.instance, *args), kwargs)[1:]
        try:
            self._check_all(self.instance, *args)
        except TypeError:
            if tracing_recorder(args, {}) is None:
                raise
            raise TracingError(
                f"{self.name}() is a method of a scripted module: tsjit.trace records calls "
                "of scripted functions, not of scripted modules; trace the module's Python "
                "class instead, or script the whole model", caller_source()) from None
        return self.executor(self.instance, *args)

    def _executor_args(self, args: tuple, kwargs: dict) -> tuple:
        if kwargs or len(args) != self._arity:
            args = self._bind((self.instance, *args), kwargs)[1:]
        self._check_all(self.instance, *args)
        return (self.instance, *args)


class ScriptModule:
    """A scripted module instance: `forward` and exported methods run compiled code;
    other attributes are the instance's own."""

    def __init__(self, instance, methods: dict[str, ScriptMethod]):
        object.__setattr__(self, "_instance", instance)
        object.__setattr__(self, "_methods", methods)
        # help() and inspect show the module's class and how to call it (forward).
        object.__setattr__(self, "__doc__", type(instance).__doc__)
        object.__setattr__(self, "__signature__", methods["forward"].__signature__)
        for name, method in methods.items():
            method._module_methods = (name, methods)

    def __call__(self, *args, **kwargs):
        return self._methods["forward"](*args, **kwargs)

    def __getattr__(self, name: str):
        methods = object.__getattribute__(self, "_methods")
        if name in methods:
            return methods[name]
        return getattr(object.__getattribute__(self, "_instance"), name)

    def __setattr__(self, name: str, value) -> None:
        """Set an attribute of the instance, if the compiled code can still hold it: its
        type was fixed when the module was scripted, and constants were compiled in."""
        module_type = self._methods["forward"].compiled.param_types[0][1]
        if name in module_type.constants:
            raise AttributeError(f"cannot set constant (Final) attribute '{name}' of a "
                                 "scripted module: its value is compiled into the code")
        if holds_function(vars(self._instance).get(name)):
            raise AttributeError(f"cannot set attribute '{name}' of a scripted module: the "
                                 "function it holds is compiled into the code; script the "
                                 "module again after changing it")
        declared = module_type.attributes.get(name)
        if declared is not None and not value_has_type(value, declared):
            raise TypeError(f"attribute '{name}' of the scripted module has type "
                            f"'{declared.annotation}'; cannot set it to a value of type "
                            f"'{type(value).__name__}'")
        setattr(self._instance, name, value)

    def train(self, mode: bool = True) -> ScriptModule:
        """The instance's `train(mode)`; returns this scripted module (not the instance,
        whose `forward` is the Python one), so `tsjit.script(m).eval()` stays compiled."""
        self._instance.train(mode)
        return self

    def eval(self) -> ScriptModule:
        return self.train(False)

    def __reduce__(self):
        """Pickled as its saved form (graphs and attribute values, no source): see
        `pickling.py`.  Each unpickling makes a new instance."""
        from .pickling import restore_module, saved_form
        return restore_module, (saved_form(self),)

    def __copy__(self) -> ScriptModule:
        """A new module instance holding the same attribute values (as `torch.jit`'s)."""
        return self._with_instance(copy.copy(self._instance))

    def __deepcopy__(self, memo: dict) -> ScriptModule:
        """An independent module: attribute values (arrays too) and submodules copied."""
        return self._with_instance(copy.deepcopy(self._instance, memo))

    def _with_instance(self, instance) -> ScriptModule:
        """The same compiled methods, bound to `instance` (each with its own executor)."""
        methods = {}
        for name, method in self._methods.items():
            methods[name] = ScriptMethod(method.compiled, method.python_function, instance)
            methods[name].__doc__ = method.__doc__
        return ScriptModule(instance, methods)

    @property
    def graph(self) -> Graph:
        return self._methods["forward"].graph

    @property
    def code(self) -> str:
        return self._methods["forward"].code

    def save(self, path) -> None:
        """Write the module (compiled methods, attributes, submodules) to `path` (a path
        or binary file) for `tsjit.load`."""
        from .serialization import save  # it builds script objects: imported on use
        save(self, path)
