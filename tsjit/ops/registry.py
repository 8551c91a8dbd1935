"""The operator registry: every op is defined once, here or in a sibling table module.

An `OpDef` carries what every layer needs to know about an op, so that no pass
keeps a list of op names:
  - the signature (parameter names and defaults) the front end matches calls to,
  - the type rule (`infer`), which also rejects ill-typed uses,
  - the effects (pure / writes argument k / may raise / other side effects),
  - the reference implementation, as a Python expression template the
    interpreter's code generator splices in (`"{0} + {1}"`), so the interpreter
    runs the very Python operation the eager program runs,
  - traits for later layers (elementwise for the fuser, views for aliasing).

Python-facing names bind to ops by the identity of the Python object (`np.sum`,
`math.sqrt`, `len`) and by (receiver type class, method name) for methods, so
`np.sum(x)` and `x.sum()` are one op and resolution never compares strings of
module names.
"""
from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..ir.types import Type


class _NoDefault:
    """The marker of a parameter without a default: one object, also once unpickled (a
    pickled class carries its compiled methods' parameters)."""

    def __reduce__(self) -> str:
        return "NO_DEFAULT"

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT = _NoDefault()


class OpTypeError(Exception):
    """An op was applied to types it does not accept; the front end adds the source."""


@dataclass(frozen=True)
class Param:
    name: str
    default: Any = NO_DEFAULT
    kwonly: bool = False
    variadic: bool = False      # *args: takes every remaining positional argument
    kwvariadic: bool = False    # **kwargs: takes every keyword no other parameter names


TypeRule = Callable[[Sequence[Type], dict], "Type | Sequence[Type] | None"]
PyTemplate = "str | Callable[[list[str], dict], str]"


@dataclass
class OpDef:
    name: str
    params: tuple[Param, ...]
    infer: TypeRule | None           # None: the node's creator sets the output types
    py: str | Callable[[list[str], dict], str]
    writes: tuple[int, ...] = ()      # inputs whose contents the op mutates
    side_effect: bool = False         # observable effect besides writes (print, raise)
    may_raise: bool | Callable[[Sequence[Type]], bool] = True   # an unused call may not go:
    #   removing it could hide an exception (a callable decides from the input types)
    views: bool = False               # an output may share memory with an input
    elementwise: bool = False         # a per-element op the fuser may take
    attrs: dict = field(default_factory=dict)  # extra traits read by later layers

    @property
    def is_pure(self) -> bool:
        """Safe to remove when unused, and to merge with an identical call, whatever
        the inputs (see `is_pure_on` for a given call)."""
        return not (self.writes or self.side_effect or self.may_raise is not False)

    def may_raise_on(self, types: Sequence[Type]) -> bool:
        """Whether a call with these input types may raise."""
        return self.may_raise(types) if callable(self.may_raise) else self.may_raise

    def is_pure_on(self, types: Sequence[Type]) -> bool:
        """`is_pure` for a call with these input types."""
        return not (self.writes or self.side_effect or self.may_raise_on(types))

    @property
    def has_effects(self) -> bool:
        """Must stay in place relative to other effects (writes, prints, raises)."""
        return bool(self.writes or self.side_effect)

    def emit_python(self, args: list[str], attrs: dict) -> str:
        """The Python expression (or statement, for ops without outputs) for a call."""
        if callable(self.py):
            return self.py(args, attrs)
        return self.py.format(*args, **attrs)

    @property
    def schema(self) -> str:
        parts = []
        for p in self.params:
            if p.kwonly and not any(q.variadic or q.kwonly for q in self.params[:len(parts)]):
                parts.append("*")
            text = ("*" if p.variadic else "**" if p.kwvariadic else "") + p.name
            if p.default is not NO_DEFAULT:
                text += f"={p.default!r}"
            parts.append(text)
        return f"{self.name}({', '.join(parts)})"


OPS: dict[str, OpDef] = {}
BY_PYTHON_OBJECT: dict[int, tuple[object, OpDef]] = {}   # id(obj) -> (obj, op)
METHODS: dict[tuple[type, str], OpDef] = {}               # (Type class, name) -> op
ATTRIBUTES: dict[tuple[type, str], OpDef] = {}            # (Type class, name) -> op, x.shape


class Signature(NamedTuple):
    params: tuple[Param, ...]
    positional_only: int        # how many of them come before "/"


@functools.cache
def parse_signature(signature: str) -> Signature:
    """Parameters from Python syntax: `"a, /, axis=None, *, keepdims=False"`, `"*arrays"`,
    `"self, *args, **kwargs"`.
    Read by hand, not by `ast`: hundreds of ops share a few hundred signatures, and parsing
    them was a tenth of `import tsjit`."""
    params: list[Param] = []
    positional_only, kwonly = 0, False
    for item in _split_parameters(signature):
        name, equals, default = (part.strip() for part in item.partition("="))
        if item == "/":
            positional_only = len(params)
        elif item == "*":
            kwonly = True
        elif item.startswith("**"):
            params.append(Param(_identifier(name[2:].strip()), kwvariadic=True))
        elif item.startswith("*"):
            params.append(Param(_identifier(name[1:].strip()), variadic=True))
            kwonly = True
        else:
            params.append(Param(_identifier(name), _literal(default) if equals else NO_DEFAULT,
                                kwonly=kwonly))
    return Signature(tuple(params), positional_only)


def parse_params(signature: str) -> tuple[Param, ...]:
    """The parameters of `signature` (see `parse_signature`)."""
    return parse_signature(signature).params


def _split_parameters(signature: str) -> list[str]:
    """The comma-separated items of a parameter list, not split inside brackets or quotes."""
    items, depth, quote, start = [], 0, None, 0
    for k, c in enumerate(signature):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(signature[start:k].strip())
            start = k + 1
    last = signature[start:].strip()
    return [*items, last] if last else items


def _identifier(name: str) -> str:
    if not name.isidentifier():
        raise ValueError(f"bad parameter name {name!r} in an op signature")
    return name


_KEYWORD_LITERALS = {"None": None, "True": True, "False": False}


def _literal(text: str) -> Any:
    """A default's value: the common ones directly, the rest (tuples, strings) by
    ast.literal_eval."""
    if text in _KEYWORD_LITERALS:
        return _KEYWORD_LITERALS[text]
    if any(c.isdigit() for c in text) and not text.startswith(("(", "'", '"')):
        return float(text) if any(c in text for c in ".eE") else int(text)
    return ast.literal_eval(text)


def register(name: str, signature: str, infer: TypeRule | None, py: str | Callable, *,
             python: Sequence[object] = (), methods: Sequence[tuple[type, str]] = (),
             attributes: Sequence[tuple[type, str]] = (), **traits: Any) -> OpDef:
    """Define op `name` and bind it to Python objects, methods and attributes.

    `python`: the Python callables that mean this op (`np.sum`, `sum`).
    `methods`: (Type class, method name) pairs whose receiver is the first param.
    `attributes`: (Type class, attribute name) pairs read as `x.name` (one param).
    """
    assert name not in OPS, f"op {name} registered twice"
    op = OpDef(name, parse_params(signature), infer, py, **traits)
    OPS[name] = op
    for obj in python:
        BY_PYTHON_OBJECT[id(obj)] = (obj, op)
    for key in methods:
        METHODS[key] = op
    for key in attributes:
        ATTRIBUTES[key] = op
    return op


def op(name: str) -> OpDef:
    return OPS[name]


def lookup_python(obj: object) -> OpDef | None:
    """The op a Python callable (np.sum, math.sqrt, len) stands for, if any."""
    hit = BY_PYTHON_OBJECT.get(id(obj))
    return hit[1] if hit is not None and hit[0] is obj else None


def lookup_method(receiver: Type, name: str) -> OpDef | None:
    return _lookup_by_type(METHODS, receiver, name)


def lookup_attribute(receiver: Type, name: str) -> OpDef | None:
    return _lookup_by_type(ATTRIBUTES, receiver, name)


def _lookup_by_type(table: dict, receiver: Type, name: str) -> OpDef | None:
    """Bindings are keyed by a Type class (ListType) or, for the scalar singletons, by
    the type itself (StrType)."""
    for key in (receiver, *type(receiver).__mro__):
        found = table.get((key, name))
        if found is not None:
            return found
    return None


def infer_types(op_def: OpDef, types: Sequence[Type], attrs: dict) -> list[Type]:
    """Output types of a call, as a list (ops without a result give [])."""
    out = op_def.infer(types, attrs)
    if out is None:
        return []
    if isinstance(out, Type):
        return [out]
    return list(out)
