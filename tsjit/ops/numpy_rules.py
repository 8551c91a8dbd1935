"""What every NumPy op table shares: argument kinds, result refinement and call templates.

A NumPy op is declared with NumPy's own parameter list (`define`), so a call binds in
script code exactly as it binds in NumPy.  From that list come:
  - the argument check: each parameter name has a kind (array, axis, dtype, ...) that
    rejects a type NumPy would reject whatever the value (a str where an array goes, a
    float axis), so the error is a compile-time one pointing at the source;
  - the call template: the same call NumPy would receive, each argument at its position
    or keyword, arguments equal to the default left out when they are literals;
  - the result type: plain TENSOR at compile time, refined (dtype, sizes, NumPy scalar vs
    ndarray) when the argument types are refined, and sharper still when the caller of
    the type rule passes the values of constant inputs in `attrs[CONSTANTS]`
    ({input index: value}): `keepdims=True`, `dtype=np.float32`, `axis=-1`.
Refinements are only ever claimed when NumPy's rules make them certain.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from math import prod

import numpy as np

from ..ir.types import (
    TENSOR,
    AnyType,
    BoolType,
    ComplexType,
    DTypeType,
    IntType,
    ListType,
    NoneType,
    StrType,
    TensorType,
    TupleType,
    Type,
    VarTupleType,
    is_number,
)
from .registry import OpDef, OpTypeError, Param, parse_params, parse_signature, register

CONSTANTS = "constants"   # attrs key: {input index: Python value} of the constant inputs
UNKNOWN = object()        # a value the type rule cannot see


# -- argument kinds --

@dataclass(frozen=True)
class Kind:
    """A class of argument types NumPy accepts for a parameter; `what` names it in errors."""

    what: str
    accepts: Callable[[Type], bool]


def _is_array_like(t: Type) -> bool:
    if isinstance(t, TensorType) or t in (AnyType, ComplexType) or is_number(t):
        return True
    if isinstance(t, (ListType, VarTupleType)):
        return _is_array_like(t.elem)
    return isinstance(t, TupleType) and t.py_class is None and all(map(_is_array_like, t.elems))


def _is_index(t: Type) -> bool:
    """An int NumPy takes as a size or an axis: Python int or a NumPy integer (Tensor).
    NumPy rejects bools there."""
    return t in (IntType, AnyType) or isinstance(t, TensorType)


def _is_index_sequence(t: Type) -> bool:
    if isinstance(t, (ListType, VarTupleType)):
        return _is_index(t.elem)
    return isinstance(t, TupleType) and all(map(_is_index, t.elems))


def _either(*kinds: Kind) -> Callable[[Type], bool]:
    return lambda t: any(k.accepts(t) for k in kinds)


NONE = Kind("None", lambda t: t in (NoneType, AnyType))
ARRAY = Kind("an array or a number", _is_array_like)
OPTIONAL_ARRAY = Kind("an array, a number or None", _either(ARRAY, NONE))
ARRAYS = Kind("a sequence of arrays", lambda t: isinstance(t, TensorType) or t == AnyType or (
    isinstance(t, (ListType, VarTupleType, TupleType)) and _is_array_like(t)))
INDEX = Kind("an int", _is_index)
AXIS = Kind("an int, a tuple of ints or None",
            lambda t: _is_index(t) or t == NoneType or (
                isinstance(t, (TupleType, VarTupleType)) and _is_index_sequence(t)))
AXES = Kind("an int or a tuple of ints", lambda t: AXIS.accepts(t) and t != NoneType)
SHAPE = Kind("an int or a sequence of ints", lambda t: _is_index(t) or _is_index_sequence(t))
OPTIONAL_SHAPE = Kind("a sequence of ints or None", _either(SHAPE, NONE))
DTYPE = Kind("a dtype (np.float32, 'float32', float) or None",
             lambda t: t in (DTypeType, StrType, NoneType, AnyType))
FLAG = Kind("a bool", lambda t: t in (BoolType, IntType, AnyType) or isinstance(t, TensorType))
OPTIONAL_FLAG = Kind("a bool or None", _either(FLAG, NONE))
NUMBER = Kind("a number", lambda t: is_number(t) or t == AnyType or isinstance(t, TensorType))
OPTIONAL_NUMBER = Kind("a number or None", _either(NUMBER, NONE))
STRING = Kind("a str", lambda t: t in (StrType, AnyType))
OPTIONAL_STRING = Kind("a str or None", lambda t: t in (StrType, NoneType, AnyType))
ANYTHING = Kind("anything", lambda t: True)
# `out=` would make every call a write to an argument; script code assigns results instead.
OUT = Kind("None (out= is not supported in script code: assign the result instead)",
           lambda t: t == NoneType or (isinstance(t, TupleType) and all(
               e == NoneType for e in t.elems)))

# NumPy names its parameters consistently; a name's kind holds across its functions.
KIND_BY_NAME: dict[str, Kind] = {
    **dict.fromkeys(("a", "x", "x1", "x2", "b", "m", "v", "y", "ar", "arr", "ary", "array",
                     "object", "condition", "values", "indices", "fill_value", "value", "a1", "a2",
                     "other", "A", "reps", "repeats", "q", "val", "prototype", "dst", "src"),
                    ARRAY),
    **dict.fromkeys(("arrays", "tup", "operands", "arys", "xi", "args"), ARRAYS),
    **dict.fromkeys(("axis",), AXIS),
    **dict.fromkeys(("source", "destination", "shift"), AXES),
    **dict.fromkeys(("axes",), OPTIONAL_SHAPE),
    **dict.fromkeys(("axis1", "axis2", "k", "offset", "n", "num", "N", "ndmin",
                     "minlength"), INDEX),
    **dict.fromkeys(("shape", "indices_or_sections"), SHAPE),
    **dict.fromkeys(("keepdims", "endpoint", "retstep", "return_index", "return_inverse",
                     "return_counts", "equal_nan", "subok", "sparse", "returned",
                     "overwrite_input", "wrap", "sorted", "align"), FLAG),
    **dict.fromkeys(("copy", "stable"), OPTIONAL_FLAG),
    **dict.fromkeys(("order", "kind", "casting", "side", "mode", "indexing", "method"),
                    OPTIONAL_STRING),
    **dict.fromkeys(("dtype", "arg1", "arg2", "type1", "type2"), DTYPE),
    **dict.fromkeys(("out", "out1", "out2"), OUT),
    **dict.fromkeys(("ddof", "rtol", "atol", "decimals", "step", "start_or_stop"), NUMBER),
    **dict.fromkeys(("start", "stop"), OPTIONAL_ARRAY),
    **dict.fromkeys(("initial", "ord"), OPTIONAL_NUMBER),
    **dict.fromkeys(("where",), ARRAY),
}


# -- the call as the type rule sees it --

class CallTypes:
    """The argument types of one call by parameter name, and the constant values known.

    A variadic parameter (`*shape`) maps to the tuple of its arguments' types.
    """

    def __init__(self, params: Sequence[Param], types: Sequence[Type], attrs: dict):
        self.types = tuple(types)
        self.slots = _slots(params, len(types))
        self.constants: dict[int, object] = attrs.get(CONSTANTS, {})
        self.attrs = attrs    # the node's attributes (ufunc::reduce: which ufunc)

    def __getitem__(self, name: str) -> Type:
        return self.types[self.slots[name]]

    def all_of(self, name: str) -> tuple[Type, ...]:
        slot = self.slots[name]
        return self.types[slot] if isinstance(slot, slice) else (self.types[slot],)

    def const(self, name: str) -> object:
        """The argument's value when it is a constant (None is always known), else UNKNOWN."""
        slot = self.slots[name]
        if isinstance(slot, slice):
            values = tuple(self._value(i) for i in range(slot.start, slot.stop))
            return UNKNOWN if any(v is UNKNOWN for v in values) else values
        return self._value(slot)

    def _value(self, i: int) -> object:
        if self.types[i] == NoneType:
            return None
        return self.constants.get(i, UNKNOWN)


def _slots(params: Sequence[Param], n_args: int) -> dict[str, int | slice]:
    """Where each parameter's argument(s) sit among a call's n_args inputs."""
    slots: dict[str, int | slice] = {}
    n_variadic = n_args - (len(params) - 1)
    i = 0
    for p in params:
        if p.variadic:
            slots[p.name] = slice(i, i + n_variadic)
            i += n_variadic
        else:
            slots[p.name] = i
            i += 1
    return slots


# -- refinement helpers --

Sizes = tuple[int | None, ...] | None


def tensor(dtype: np.dtype | None = None, sizes: Sizes = None,
           ndarray: bool | None = None) -> TensorType:
    """A result type from what a rule knows (None: unknown)."""
    return TensorType(None if dtype is None else np.dtype(dtype).name,
                      None if sizes is None else tuple(sizes), None, ndarray)


def dtype_of(t: Type) -> np.dtype | None:
    return np.dtype(t.dtype) if isinstance(t, TensorType) and t.dtype is not None else None


def sizes_of(t: Type) -> Sizes:
    """Sizes NumPy gives `np.asarray(value)` for a value of type t, where the type says."""
    if isinstance(t, TensorType):
        return t.sizes
    if is_number(t):
        return ()
    if isinstance(t, TupleType) and t.py_class is None and t.elems:
        inner = {sizes_of(e) for e in t.elems}
        return (len(t.elems), *inner.pop()) if len(inner) == 1 and None not in inner else None
    if isinstance(t, (ListType, VarTupleType)):
        inner = sizes_of(t.elem)
        return None if inner is None else (None, *inner)
    return None


def rank_of(t: Type) -> int | None:
    sizes = sizes_of(t)
    return None if sizes is None else len(sizes)


def broadcast(*all_sizes: Sizes) -> Sizes:
    """The broadcast shape, with None for an extent the sizes do not determine."""
    if any(s is None for s in all_sizes):
        return None
    rank = max((len(s) for s in all_sizes), default=0)
    out: list[int | None] = []
    for dim in range(rank):
        extents = [s[len(s) - rank + dim] for s in all_sizes if len(s) - rank + dim >= 0]
        known = {e for e in extents if e is not None and e != 1}
        if len(known) > 1:
            return None   # the call raises
        if known:
            out.append(known.pop())
        else:
            out.append(1 if all(e == 1 for e in extents) else None)
    return tuple(out)


def normalize_axes(axis: object, rank: int) -> tuple[int, ...] | None:
    """Axis argument value -> sorted non-negative axes; None when unknown or invalid."""
    if axis is None:
        return tuple(range(rank))
    axes = axis if isinstance(axis, tuple) else (axis,)
    if not all(isinstance(a, int) and not isinstance(a, bool) and -rank <= a < rank
               for a in axes):
        return None
    out = tuple(sorted(a % rank for a in axes))
    return out if len(set(out)) == len(out) else None


def shape_sizes(shape: Type, value: object) -> Sizes:
    """The sizes a shape argument names: an int or a tuple of ints (`value` when it is a
    constant); None for other shape types (a sequence of unknown length)."""
    if shape == IntType:
        return (value if type(value) is int else None,)
    if isinstance(shape, TupleType):
        return (None,) * len(shape.elems) if value is UNKNOWN else tuple(value)
    return None


def reduced_sizes(sizes: Sizes, axis: object, keepdims: object) -> Sizes:
    if sizes is None or keepdims is UNKNOWN or axis is UNKNOWN:
        return None
    axes = normalize_axes(axis, len(sizes))
    if axes is None:
        return None
    if keepdims:
        return tuple(1 if d in axes else s for d, s in enumerate(sizes))
    return tuple(s for d, s in enumerate(sizes) if d not in axes)


def element_count(sizes: Sizes) -> int | None:
    return None if sizes is None or None in sizes else prod(sizes)


def dtype_constant(value: object) -> np.dtype | None:
    """np.dtype of a dtype argument's constant value (np.float32, 'float32', float)."""
    if value is UNKNOWN or value is None:
        return None
    try:
        return np.dtype(value)
    except TypeError:
        return None


def requested_dtype(call: CallTypes, name: str = "dtype") -> np.dtype | None | object:
    """The `dtype=` argument: None when not given, a dtype when constant, else UNKNOWN."""
    value = call.const(name)
    if value is None or value is UNKNOWN:
        return value
    dtype = dtype_constant(value)
    return UNKNOWN if dtype is None else dtype


def dtype_or(call: CallTypes, default: np.dtype | None, name: str = "dtype"
             ) -> np.dtype | None:
    """The dtype= argument when given (None when it is not a constant), else `default`."""
    requested = requested_dtype(call, name)
    if requested is None:
        return default
    return None if requested is UNKNOWN else requested


@lru_cache(maxsize=2048)
def probe_dtype(fn: Callable, *dtypes: np.dtype, **kwargs: object) -> np.dtype | None:
    """The result dtype of `fn` on one-element arrays of `dtypes`: for reductions and other
    functions whose result dtype depends on the input dtypes only.  None if fn raises."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*(np.ones(1, d) for d in dtypes), **kwargs)).dtype
    except (TypeError, ValueError):
        return None


def flags(call: CallTypes, *names: str) -> tuple[bool, ...] | None:
    """The constant values of boolean flags that decide a result's structure, if known."""
    values = tuple(call.const(n) for n in names)
    return None if any(v is UNKNOWN for v in values) else tuple(bool(v) for v in values)


def same_as(param: str, *, ndarray: bool | None = None) -> Callable[[CallTypes], TensorType]:
    """Result rule: the dtype and sizes of argument `param` (a copy or a view of it)."""
    def result(call: CallTypes) -> TensorType:
        t = call[param]
        keep = t.ndarray if ndarray is None and isinstance(t, TensorType) else ndarray
        return tensor(dtype_of(t), sizes_of(t), keep)
    return result


def _is_refined(t: Type) -> bool:
    return (isinstance(t, TensorType) and t.is_refined) or any(map(_is_refined, t.contained()))


def _unrefined(t: Type | None) -> Type | None:
    """The front end types every NumPy result plain Tensor: refinements are what profiling
    learns, so a result is refined only when an argument is."""
    if t is None:
        return None
    if isinstance(t, TensorType):
        return TENSOR
    if isinstance(t, TupleType):
        return TupleType(tuple(map(_unrefined, t.elems)), t.names, t.py_class)
    if isinstance(t, (ListType, VarTupleType)):
        return type(t)(_unrefined(t.elem))
    return t


# -- call templates --

_NOT_LITERAL = object()


def _literal_value(arg: str) -> object:
    """The value of an argument rendered as a literal ("-1", "(-1)", "'C'"), if it is one."""
    try:
        return ast.literal_eval(arg)
    except (ValueError, SyntaxError):
        return _NOT_LITERAL


def is_literal(arg: str) -> bool:
    """Whether a rendered argument is a literal constant (its value known in the text)."""
    return _literal_value(arg) is not _NOT_LITERAL


def _is_default(arg: str, default: object) -> bool:
    value = _literal_value(arg)
    return type(value) is type(default) and value == default


def call_template(callee: str, signature: str, *, omit: Sequence[str] = (),
                  no_value: Sequence[str] = (), method: bool = False
                  ) -> Callable[[list[str], dict], str]:
    """The Python call `callee(...)` with the arguments bound as NumPy binds them.

    Arguments go by position up to the first one left out (equal to the default's literal),
    then by keyword; positional-only and variadic ones always by position.  `omit` names
    parameters never passed (out=, always None).  `no_value` names parameters whose NumPy
    default is "no value" (np._NoValue), which an explicit None does not mean: None stands
    for it.  `method`: `callee` is ".name" called on the first argument.
    """
    params, positional_only = parse_signature(signature)
    # arguments always passed by position: positional-only ones, or all before a *args
    n_positional = next((k for k, p in enumerate(params) if p.variadic), positional_only)

    def emit(args: list[str], attrs: dict) -> str:
        slots = _slots(params, len(args))
        parts: list[str] = []
        by_position = True   # until an argument is left out
        for i, p in enumerate(params):
            arg = args[slots[p.name]]
            if p.variadic:
                parts.extend(arg)
            elif i < n_positional:
                parts.append(arg)
            elif p.name in omit or _is_default(arg, p.default) or (
                    p.name in no_value and arg == "None"):
                by_position = False
            elif p.name in no_value and not is_literal(arg):
                parts.append(f"{p.name}=(np._NoValue if {arg} is None else {arg})")
                by_position = False
            else:
                parts.append(arg if by_position and not p.kwonly else f"{p.name}={arg}")
        if method:
            return f"{parts[0]}{callee}({', '.join(parts[1:])})"
        return f"{callee}({', '.join(parts)})"
    return emit


# -- definition --

ResultRule = Callable[[CallTypes], Type | None]   # None: the op has no result


def define(name: str, signature: str, result: ResultRule, call: str | Callable, *,
           kinds: dict[str, Kind] | None = None, no_value: Sequence[str] = (),
           method: str | None = None, **binding: object) -> OpDef:
    """Register NumPy op `name` with NumPy's parameter list `signature`.

    `call`: "np.fn" (a function call), ".name" (ndarray method `name`, bound as such), a
    registry template string, or a template callable.  `kinds` overrides KIND_BY_NAME for
    this op.  `method`: the ndarray method taking the same parameters (x.sum for np.sum);
    it becomes op `ndarray::<method>` calling the method itself, which skips the
    function's Python wrapper (np.sum(x) costs 2.5x x.sum() on a small array).  Other
    keywords (python=, attributes=, traits) go to `register`.
    """
    if method is not None:
        traits = {k: v for k, v in binding.items() if k != "python"}
        define(f"ndarray::{method}", signature, result, f".{method}", kinds=kinds,
               no_value=no_value, **traits)
    params = parse_params(signature)
    kinds = {p.name: (kinds or {}).get(p.name) or KIND_BY_NAME[p.name] for p in params}

    def infer(types: Sequence[Type], attrs: dict):
        typed = CallTypes(params, types, attrs)
        for p in params:
            for t in typed.all_of(p.name):
                if not kinds[p.name].accepts(t):
                    raise OpTypeError(f"expected {kinds[p.name].what} for argument "
                                      f"'{p.name}', found {t.annotation}")
        out = result(typed)
        return out if any(map(_is_refined, types)) else _unrefined(out)

    if isinstance(call, str) and re.fullmatch(r"np(\.\w+)+|\.\w+", call):
        omit = [p.name for p in params if kinds[p.name] is OUT]
        py = call_template(call, signature, omit=omit, no_value=no_value,
                           method=call.startswith("."))
    else:
        py = call
    if isinstance(call, str) and call.startswith("."):
        binding["methods"] = ((TensorType, call[1:]),)
    return register(name, signature, infer, py, **binding)
