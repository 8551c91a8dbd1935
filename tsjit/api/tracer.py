"""Recording NumPy operations: the tracer objects `tsjit.trace` passes for arrays.

A `Tracer` stands in for an array while the user's function runs once.  Every
operation on it runs eagerly on the real array (so Python control flow sees real
values) and is also appended to the graph as the op the front end would emit for
the same source: NumPy functions and ufuncs reach the tracer through NumPy's own
dispatch protocols (`__array_function__`, `__array_ufunc__`), Python operators,
indexing and ndarray methods through its special methods.  Nodes are created by
the front end's own call binding (`CallMixin.call_op`) and call objects
(`OpFunction`, `UfuncFunction`, `BoundMethod`), so a traced `np.add(a, b, out=c)`
is the same IR as a scripted one.

What cannot be recorded is frozen, as torch.jit.trace freezes it: shapes and other
metadata read as Python values (`x.shape[0]`, `len(x)`, `x.dtype`) become
constants silently; Python numbers computed from array data (`float(x.sum())`,
`if x.max() > 0:`, `x.item()`) become constants with a `TracerWarning`.
"""
from __future__ import annotations

import linecache
import operator
import os
import sys
import warnings

import numpy as np

from ..frontend.calls import CallMixin
from ..frontend.compiler import ScriptFunctionRef
from ..frontend.emitter import constant_type
from ..frontend.errors import CompilationError
from ..frontend.resolution import is_constant
from ..frontend.sugared import BoundMethod, OpFunction, Sugared
from ..frontend.ufuncs import UfuncMethod, ufunc_value
from ..ir.graph import Graph, Node, SourceRange, Value
from ..ir.types import TENSOR, ListType, TensorType, TupleType, Type
from ..ops.numpy_ufuncs import method_op
from ..ops.registry import OpTypeError, infer_types, lookup_attribute, lookup_method, op
from ..ops.registry import lookup_python as lookup_op

ARRAY_TYPES = (np.ndarray, np.generic)
# Metadata read as Python values: frozen silently, as torch.jit.trace freezes sizes.
METADATA_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype", "itemsize", "nbytes"})
METADATA_FUNCTIONS = frozenset({"numpy.shape", "numpy.ndim", "numpy.size"})
_INTERNAL_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (np, sys.modules["tsjit"]))


class TracingError(CompilationError):
    """An operation the trace cannot record; the message names it and the source line."""


class TracerWarning(UserWarning):
    """A value computed from array data was frozen into the trace as a constant."""


class GraphRecorder:
    """Appends nodes to a graph for tracers: the subset of the front end's emitter
    interface that its call objects use (insert, const, emit_op, call_op, ...)."""

    call_op = CallMixin.call_op
    call_compiled = CallMixin.call_compiled
    bind_arguments = CallMixin.bind_arguments

    def __init__(self, graph: Graph):
        self.graph = graph
        self.finished = False

    # ---- the emitter interface
    def insert(self, kind: str, inputs: list[Value], types: list[Type] | None = None,
               attrs: dict | None = None, src: SourceRange | None = None) -> Node:
        if self.finished:
            raise TracingError("a traced array was used after tsjit.trace returned", src)
        node = self.graph.create(kind, inputs, types or [], attrs, src or caller_source())
        return self.graph.block.append(node)

    def const(self, value: object, src: SourceRange | None, type_: Type | None = None) -> Value:
        return self.insert("prim::Constant", [], [type_ or constant_type(value)],
                           {"value": value}, src).output

    const_python = const

    def emit_op(self, kind: str, inputs: list[Value], attrs: dict | None = None,
                src: SourceRange | None = None) -> Value | None:
        try:
            types = infer_types(op(kind), [v.type for v in inputs], attrs or {})
        except OpTypeError as e:
            raise TracingError(f"{kind}: {e}", src or caller_source()) from None
        node = self.insert(kind, inputs, types, attrs, src)
        return node.outputs[0] if node.outputs else None

    @staticmethod
    def as_value(value, src: SourceRange | None) -> Value:
        return value.as_value(None, src) if isinstance(value, Sugared) else value

    # ---- Python values as IR values
    def value_of(self, obj: object) -> Value:
        """The IR value for an argument of a recorded operation."""
        if isinstance(obj, Tracer):
            return obj.value
        if is_constant(obj) or obj is Ellipsis or isinstance(obj, (type, np.ndarray)):
            return self.const(obj, None)            # an untraced array is captured as is
        if isinstance(obj, slice):
            parts = [self.value_of(p) for p in (obj.start, obj.stop, obj.step)]
            return self.emit_op("prim::Slice", parts)
        if type(obj) is tuple:
            return self.emit_op("prim::TupleConstruct", [self.value_of(o) for o in obj])
        if type(obj) is list:
            items = [self.value_of(o) for o in obj]
            types = {v.type for v in items}
            if len(types) > 1:
                raise TracingError(f"cannot record a list mixing {', '.join(map(str, types))}",
                                   caller_source())
            elem = types.pop() if types else TENSOR
            return self.insert("prim::ListConstruct", items, [ListType(elem)]).output
        raise TracingError(f"cannot record an argument of type {type(obj).__name__}",
                           caller_source())

    def record(self, call: Sugared, name: str, args: tuple, kwargs: dict) -> Value:
        """The node(s) of `call(*args, **kwargs)`; an op NumPy accepted but the op
        table rejects is a TracingError naming the function."""
        values = [self.value_of(a) for a in args]
        keywords = {k: self.value_of(v) for k, v in kwargs.items()}
        try:
            return self.as_value(call.call(self, values, keywords, None), None)
        except CompilationError as e:
            if isinstance(e, TracingError):
                raise
            raise TracingError(f"cannot record {name}: {e.reason}", caller_source()) from None

    def record_script_call(self, function, args: tuple, kwargs: dict) -> object:
        """A scripted function called by the traced code (see `tracing_recorder`): it runs
        on the real arrays and is recorded as a call of its graph, as torch.jit.trace
        records calls of scripted functions."""
        result = function(*concrete(args), **concrete(kwargs))
        value = self.record(ScriptFunctionRef(function.compiled), function.name, args, kwargs)
        return self.wrap(result, value, function.name)

    def wrap(self, concrete: object, value: Value, name: str) -> object:
        """What the traced function sees for a recorded result: tracers for arrays (in
        the tuple or list the op returned), the Python value itself (frozen) else."""
        if isinstance(concrete, ARRAY_TYPES):
            if not isinstance(value.type, TensorType):
                value = self.insert("aten::annotate", [value], [TENSOR]).output
            return Tracer(concrete, value, self)
        if isinstance(concrete, (tuple, list)) and _holds_arrays(concrete):
            if isinstance(value.type, TupleType):
                kind, elems = "prim::TupleUnpack", list(value.type.elems)
            elif isinstance(value.type, ListType):
                kind, elems = "prim::ListUnpack", [value.type.elem] * len(concrete)
            else:
                raise TracingError(f"{name} returned a {type(concrete).__name__} the op "
                                   f"table types as {value.type}", caller_source())
            parts = self.insert(kind, [value], elems).outputs
            return type(concrete)(self.wrap(c, v, name) for c, v in zip(concrete, parts))
        if concrete is None:            # an in-place method's result: nothing to freeze
            return None
        if name not in METADATA_FUNCTIONS:
            freeze_warning(f"the result of {name}")
        return concrete

    def output(self, result: object) -> Value:
        """The graph output for what the traced function returned."""
        if isinstance(result, Tracer):
            if result.recorder is not self:
                raise TracingError("the traced function returned an array of another trace")
            return result.value
        if isinstance(result, np.ndarray):      # built without traced inputs: a fresh copy
            return self.record(OpFunction(lookup_op(np.copy), np.copy, "numpy.copy"),
                               "numpy.copy", (result,), {})
        if type(result) in (tuple, list):
            items = [self.output(r) for r in result]
            if type(result) is tuple:
                return self.emit_op("prim::TupleConstruct", items)
            types = {v.type for v in items}
            if len(types) > 1:
                raise TracingError("the traced function returned a list mixing "
                                   f"{', '.join(map(str, types))}")
            return self.insert("prim::ListConstruct", items,
                               [ListType(types.pop() if types else TENSOR)]).output
        if is_constant(result):
            return self.const(result, None)
        raise TracingError(f"the traced function returned a {type(result).__name__}: "
                           "trace returns arrays, numbers, and tuples or lists of them")


def tracing_recorder(args: tuple, kwargs: dict) -> GraphRecorder | None:
    """The recorder of the first tracer among a call's arguments, if any: a scripted
    function's argument check rejects tracers, and then asks this."""
    for arg in (*args, *kwargs.values()):
        if isinstance(arg, Tracer):
            return arg.recorder
    return None


def _holds_arrays(items: tuple | list) -> bool:
    return any(isinstance(i, ARRAY_TYPES) or (isinstance(i, (tuple, list)) and _holds_arrays(i))
               for i in items)


def concrete(obj: object) -> object:
    """`obj` with every tracer replaced by its real array (in tuples, lists and dicts)."""
    if isinstance(obj, Tracer):
        return obj.concrete
    if type(obj) in (tuple, list):
        return type(obj)(concrete(o) for o in obj)
    if type(obj) is dict:
        return {k: concrete(v) for k, v in obj.items()}
    return obj


def caller_source() -> SourceRange | None:
    """The line of user code that performed the operation being recorded (the first
    frame outside NumPy and tsjit), for node source ranges and error messages."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL_DIRS):
        frame = frame.f_back
    if frame is None:
        return None
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    line = linecache.getline(filename, lineno).rstrip("\n")
    if not line.strip():
        return None
    return SourceRange(line, filename, len(line) - len(line.lstrip()), len(line), lineno)


def freeze_warning(what: str) -> None:
    where = caller_source()
    warnings.warn(f"{what}: a Python value computed from traced arrays is frozen into "
                  "the trace as a constant, so the trace may be wrong for other inputs"
                  + (f" ({where})" if where else ""), TracerWarning, stacklevel=3)


def _call_name(func: object) -> str:
    module = getattr(func, "__module__", None) or "numpy"
    return f"{module.split('.')[0]}.{getattr(func, '__name__', func)}"


class Tracer:
    """An array under trace: the real array (`concrete`) and its IR value."""

    __slots__ = ("concrete", "value", "recorder")
    __hash__ = None         # as ndarray: == is elementwise

    def __init__(self, concrete_value: object, value: Value, recorder: GraphRecorder):
        self.concrete = concrete_value
        self.value = value
        self.recorder = recorder

    def _apply(self, call: Sugared, name: str, run, args: tuple, kwargs: dict | None = None):
        """Run `run` on the real arrays, then record `call` with the same arguments."""
        kwargs = kwargs or {}
        result = run(*concrete(args), **concrete(kwargs))
        value = self.recorder.record(call, name, args, kwargs)
        return self.recorder.wrap(result, value, name)

    # ---- NumPy's dispatch protocols
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs, **kwargs):
        name = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        if method == "__call__":
            found = lookup_op(ufunc)
            call = ufunc_value(found, ufunc, name)
            if call is None and found is not None:  # a gufunc (np.matmul): an op, as in script
                call = OpFunction(found, ufunc, name)
        else:
            found = method_op(ufunc, method)
            call = None if found is None else UfuncMethod(found, ufunc, name)
        if call is None:
            raise TracingError(f"{name} is not supported by tsjit: the trace cannot record it",
                               caller_source())
        return self._apply(call, name, getattr(ufunc, method), inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        name = _call_name(func)
        found = lookup_op(func)
        if found is None:
            raise TracingError(f"{name} is not supported by tsjit: the trace cannot record it",
                               caller_source())
        kwargs = {k: v for k, v in kwargs.items() if k != "like"}   # like= only dispatches
        return self._apply(OpFunction(found, func, name), name, func, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        raise TracingError(
            "a traced array was converted to a NumPy array (np.asarray, np.array, or stored "
            "into an array that was not created from traced ones, such as np.zeros(n)): "
            "that would freeze it; create such arrays from traced ones "
            "(np.zeros_like(x), np.zeros(n, like=x))", caller_source())

    # ---- attributes and methods
    def __getattr__(self, name: str):
        if name.startswith("__"):       # protocol probes (__array_struct__, __deepcopy__)
            raise AttributeError(name)
        found = lookup_attribute(TENSOR, name)
        if found is not None:
            return self._apply(OpFunction(found, None, name), f"ndarray.{name}",
                               lambda x: getattr(x, name), (self,))
        found = lookup_method(TENSOR, name)
        if found is None:
            raise TracingError(f"ndarray.{name} is not supported by tsjit: the trace cannot "
                               "record it", caller_source())

        def method(*args, **kwargs):
            return self._apply(BoundMethod(self.value, found, name), f"ndarray.{name}",
                               lambda *a, **k: getattr(self.concrete, name)(*a, **k),
                               args, kwargs)
        return method

    def __getitem__(self, index):
        result = self.concrete[concrete(index)]
        rec = self.recorder
        attrs = {"slice": True} if isinstance(index, slice) else None
        value = rec.emit_op("aten::__getitem__", [self.value, rec.value_of(index)], attrs)
        return rec.wrap(result, value, "indexing")

    def __setitem__(self, index, item) -> None:
        self.concrete[concrete(index)] = concrete(item)
        rec = self.recorder
        attrs = {"slice": True} if isinstance(index, slice) else None
        rec.emit_op("aten::__setitem__", [self.value, rec.value_of(index), rec.value_of(item)],
                    attrs)

    def __len__(self) -> int:
        return len(self.concrete)

    def __iter__(self):
        return (self[i] for i in range(len(self.concrete)))

    # ---- conversions to Python values: frozen
    def _frozen(self, convert, what: str):
        result = convert(self.concrete)
        freeze_warning(what)
        return result

    def __bool__(self) -> bool:
        return self._frozen(bool, "a branch on (or bool() of) a traced array")

    def __float__(self) -> float:
        return self._frozen(float, "float() of a traced array")

    def __int__(self) -> int:
        return self._frozen(int, "int() of a traced array")

    def __complex__(self) -> complex:
        return self._frozen(complex, "complex() of a traced array")

    def __index__(self) -> int:
        return self._frozen(operator.index, "a traced array used as an index")

    def __round__(self, ndigits: int | None = None):
        return self._apply(OpFunction(lookup_op(round), round, "round"), "round", round,
                           (self, ndigits))

    def __repr__(self) -> str:
        return f"Tracer({self.concrete!r})"


def _operator(kind: str, run, reflected: bool = False):
    """A special method recording `kind` (an aten operator) on the tracer and `other`."""
    def special(self: Tracer, *other):
        operands = (other[0], self) if reflected else (self, *other)
        result = run(*concrete(operands))
        rec = self.recorder
        value = rec.emit_op(kind, [rec.value_of(o) for o in operands])
        return rec.wrap(result, value, kind)
    return special


def _metadata(name: str) -> property:
    return property(lambda self: getattr(self.concrete, name))


def _install_special_methods() -> None:
    for name in METADATA_ATTRIBUTES:
        setattr(Tracer, name, _metadata(name))
    binary = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift",
              "rshift", "and_", "or_", "xor")
    for name in binary:
        base = name.rstrip("_")
        kind = lookup_op(getattr(operator, name)).name
        setattr(Tracer, f"__{base}__", _operator(kind, getattr(operator, name)))
        setattr(Tracer, f"__r{base}__", _operator(kind, getattr(operator, name), reflected=True))
        setattr(Tracer, f"__i{base}__", _operator(f"aten::i{base}", getattr(operator, f"i{base}")))
    for name in ("eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "invert"):
        setattr(Tracer, f"__{name}__", _operator(lookup_op(getattr(operator, name)).name,
                                                 getattr(operator, name)))
    for builtin in (abs, divmod):
        setattr(Tracer, f"__{builtin.__name__}__", _operator(lookup_op(builtin).name, builtin))
    Tracer.__rdivmod__ = _operator(lookup_op(divmod).name, divmod, reflected=True)


_install_special_methods()

__all__ = ["GraphRecorder", "Tracer", "TracerWarning", "TracingError"]
