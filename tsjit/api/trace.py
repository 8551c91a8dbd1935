"""`tsjit.trace`: a ScriptFunction from one run of a Python function on example arrays.

As torch.jit.trace: the function runs once with tracers (tsjit/api/tracer.py) standing
in for its array arguments; the NumPy operations applied to them become a straight-line
graph, which then goes through the same pipeline as a scripted function (canonical
passes, the verifier, the profiling executor with guards, fusion and native kernels).
Python control flow follows the example's path and is not recorded; Python values read
from arrays are frozen (see tracer.py).

For a `tsjit.Module`, `forward` is traced with the module as the graph's first input
and its array attributes read with `prim::GetAttr` at run time, as TorchScript reads
parameters: assigning a new array to `module.weight` after tracing is seen by the
traced module.  Other attributes (numbers, strings) are frozen at their traced values.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable

from .. import environment
from ..environment import DISABLE_ENV
from ..frontend.compiler import CompiledCallable, Compiler
from ..frontend.sugared import ModuleListValue
from ..ir.graph import Graph, Value
from ..ir.types import TENSOR, Type
from ..ir.verifier import verify
from ..ops.registry import Param
from ..passes import run_canonical_passes
from .module import Module
from .script_function import ScriptFunction, ScriptMethod, ScriptModule
from .tracer import ARRAY_TYPES, GraphRecorder, Tracer, TracerWarning, TracingError


def trace(fn_or_module: Callable | Module, example_inputs) -> ScriptFunction | ScriptModule:
    """Run `fn_or_module` once on `example_inputs` (a tuple of arrays, or one array) and
    compile the NumPy operations it performed, as `torch.jit.trace` does.

    Tracing records operations, not source: control flow is frozen to the path the
    example took, and Python values computed from arrays become constants. Use it for
    code `tsjit.script` cannot compile (any Python around NumPy calls); use
    `tsjit.script` where the path depends on the data::

        import numpy as np
        import tsjit

        def normalize(x):
            return (x - x.mean()) / (x.std() + 1e-6)

        traced = tsjit.trace(normalize, np.ones((4, 8)))
        z = traced(np.random.rand(4, 8))     # runs the recorded NumPy operations
        print(traced.graph)

    A `tsjit.Module` instance is traced through its `forward`, giving a ScriptModule.
    With TSJIT_DISABLE=1 (as for `tsjit.script`) and for what is already compiled, the
    object comes back as is."""
    if environment.flag(DISABLE_ENV, False) or isinstance(
            fn_or_module, (ScriptFunction, ScriptModule)):
        return fn_or_module
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    for i, arg in enumerate(args):
        if not isinstance(arg, ARRAY_TYPES):
            raise TypeError(f"tsjit.trace: example input {i} is a {type(arg).__name__}; "
                            "trace takes arrays (close over other values, e.g. with "
                            "functools.partial)")
    if isinstance(fn_or_module, Module):
        return _trace_module(fn_or_module, args)
    if not callable(fn_or_module):
        raise TypeError("tsjit.trace expects a function or a tsjit.Module instance, not "
                        f"{type(fn_or_module).__name__}")
    fn = fn_or_module
    name = getattr(fn, "__name__", "traced")
    names = _parameter_names(fn, len(args))
    graph = Graph()
    recorder = GraphRecorder(graph)
    tracers = [Tracer(a, graph.add_input(TENSOR, n), recorder) for a, n in zip(args, names)]
    compiled = _compile(name, graph, recorder, lambda: fn(*tracers),
                        [(n, TENSOR) for n in names])
    return ScriptFunction(compiled, fn)


def _trace_module(module: Module, args: tuple) -> ScriptModule:
    forward = type(module).forward
    compiler = Compiler()
    module_type = compiler.module_type(module)
    names = _parameter_names(forward, len(args) + 1)
    graph = Graph()
    recorder = GraphRecorder(graph)
    self_value = graph.add_input(module_type, names[0])
    tracers = [Tracer(a, graph.add_input(TENSOR, n), recorder) for a, n in zip(args, names[1:])]
    swapped: list[tuple[Module, str, object, Tracer]] = []
    _swap_attributes(module, self_value, recorder, compiler, swapped)
    try:
        compiled = _compile(forward.__name__, graph, recorder,
                            lambda: _run_forward(module, tracers, swapped),
                            [(names[0], module_type), *((n, TENSOR) for n in names[1:])])
    finally:
        for owner, attr, original, _ in swapped:
            vars(owner)[attr] = original
    method = ScriptMethod(compiled, forward, module)
    return ScriptModule(module, {"forward": method})


def _compile(name: str, graph: Graph, recorder: GraphRecorder, run: Callable[[], object],
             param_types: list[tuple[str, Type]]) -> CompiledCallable:
    """Run the traced code and turn its graph into a compiled callable."""
    try:
        output = recorder.output(run())
    finally:
        recorder.finished = True
    graph.block.add_output(output)
    run_canonical_passes(graph)
    verify(graph)
    return CompiledCallable(name, tuple(Param(n) for n, _ in param_types), param_types,
                            output.type, graph)


def _run_forward(module: Module, tracers: list[Tracer], swapped: list) -> object:
    result = module.forward(*tracers)
    for owner, attr, _, tracer in swapped:
        if vars(owner).get(attr) is not tracer:
            raise TracingError(f"forward assigned attribute '{attr}' of "
                               f"{type(owner).__qualname__}: tsjit.trace does not record "
                               "attribute assignments (tsjit.script compiles them)")
    return result


def _swap_attributes(module: Module, base: Value, recorder: GraphRecorder, compiler: Compiler,
                     swapped: list) -> None:
    """Replace the module tree's array attributes by tracers whose values read them from
    the module at run time (`prim::GetAttr`); `swapped` records what to put back."""
    module_type = compiler.module_type_of(module)
    for attr, value in list(vars(module).items()):
        if attr.startswith("_") or attr in module_type.constants:
            continue
        if isinstance(value, ARRAY_TYPES) and attr in module_type.attributes:
            read = recorder.insert("prim::GetAttr", [base], [TENSOR], {"name": attr}).output
            tracer = Tracer(value, read, recorder)
            swapped.append((module, attr, value, tracer))
            vars(module)[attr] = tracer
            continue
        member = compiler.module_member(recorder, base, module, attr, None)
        if isinstance(member, ModuleListValue):
            for key, item in member.items:
                _swap_attributes(value[key], item, recorder, compiler, swapped)
        elif isinstance(member, Value):
            _swap_attributes(value, member, recorder, compiler, swapped)


def _parameter_names(fn: Callable, count: int) -> list[str]:
    """The function's positional parameter names, or input0, input1, ... if it has none
    that fit (a builtin, *args)."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    if len(params) >= count:
        return [p.name for p in params[:count]]
    return [f"input{i}" for i in range(count)]


__all__ = ["TracerWarning", "TracingError", "trace"]
