"""Python source text for the values a graph holds: constants and node attributes.

Literals (ints, finite floats, bools, None, str and tuples or lists of them) are written
inline, so CPython loads them as code constants.  Any other object — a class, a function,
a dtype, an enum member, a NumPy scalar or array, an IR Type — is bound in the generated
function's globals under a name `_k<N>`, one per distinct object.  For `.code`, which is
read and never run, the same objects are written by what they are (`np.float32`,
`Color.RED`).
"""
from __future__ import annotations

import enum
import keyword
import math
import re
import sys
from collections.abc import Sequence

import numpy as np

from ..ir.types import Type

_LITERAL_ATOMS = (int, bool, type(None), str)
BOUND_NAME = re.compile(r"_k\d+")


def literal(value: object) -> str | None:
    """The Python literal that evaluates to `value` (same type), if there is one.

    A list constant becomes a list display, which makes a fresh list each time it runs,
    so no call can see another call's mutation of it.
    """
    kind = type(value)
    if kind in _LITERAL_ATOMS or (kind is float and math.isfinite(value)):
        return repr(value)
    if kind is complex:
        return repr(value) if _reads_back(value) else None
    if kind is tuple or kind is list:
        parts = [literal(v) for v in value]
        if None in parts:
            return None
        if kind is list:
            return f"[{', '.join(parts)}]"
        return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
    return None


def _reads_back(z: complex) -> bool:
    """Whether the complex literal repr(z) is z bit for bit (not so for `(-0-1j)`: the real
    part reads back as +0.0, nor for infinite or NaN parts)."""
    back = complex(repr(z))
    return all(math.isfinite(p) and math.copysign(1.0, p) == math.copysign(1.0, q) and p == q
               for p, q in ((z.real, back.real), (z.imag, back.imag)))


def _describe(value: object) -> str | None:
    """What `value` is called in readable source, or None for an anonymous constant."""
    if isinstance(value, float):
        return {"inf": "math.inf", "-inf": "-math.inf"}.get(repr(value), "math.nan")
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    if isinstance(value, np.dtype):
        return f"np.dtype({str(value)!r})"
    if isinstance(value, type) and issubclass(value, np.generic):
        return f"np.{value.__name__}"
    if isinstance(value, np.generic):
        return f"np.{type(value).__name__}({value.item()!r})"
    if isinstance(value, Type):
        return value.annotation
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if name is None or module is None:
        return None
    prefix = {"builtins": "", "math": "math.", "cmath": "cmath."}.get(module)
    if prefix is None and module.split(".")[0] == "numpy":
        prefix = "np."
    if not all(part.isidentifier() for part in name.split(".")):
        name = name.rpartition(".")[2]      # defined in a function: `make.<locals>.Point`
    return f"{prefix or ''}{name}"


class Renderer:
    """Turns values into expressions, remembering the objects generated code must bind.

    readable: write objects by name for `.code` instead of binding them.
    """

    def __init__(self, readable: bool = False):
        self.readable = readable
        self.bound: dict[str, object] = {}
        self._name_of_id: dict[int, str] = {}

    def expression(self, value: object) -> str:
        if self.readable and type(value) is int and value == sys.maxsize:
            return "sys.maxsize"        # what list.index's `stop` defaults to, as help() says
        text = literal(value)
        if text is not None:
            return text
        if self.readable:
            if type(value) is tuple:
                inner = ", ".join(map(self.expression, value))
                return f"({inner},)" if len(value) == 1 else f"({inner})"
            return _describe(value) or self._bind(value, "CONSTANTS.c")
        return self._bind(value, "_k")

    def bind(self, value: object) -> str:
        """A name for the object itself, even where a literal would make a copy."""
        return self._bind(value, "CONSTANTS.c" if self.readable else "_k")

    def operand(self, value: object) -> str:
        """An expression that stays one operand wherever a template puts it (`x ** -1`)."""
        text = self.expression(value)
        return f"({text})" if text.startswith("-") else text

    def attributes(self, attrs: dict, names: Sequence[str],
                   shared: Sequence[str] = ()) -> dict[str, str]:
        """A node's attributes for its op's template; `names`: those the op declares as
        names (its trait `names`); `shared`: those passed as the objects themselves (its
        trait `shared`: state the op's runtime changes, such as a profile's budget)."""
        return {key: self.bind(value) if key in shared else self.attribute(value, key in names)
                for key, value in attrs.items()}

    def attribute(self, value: object, is_name: bool = False) -> str:
        """An attribute for a template: an expression (a str is a str literal: data), or,
        for the attributes an op declares as names (`{0}.{name}`), the name itself once it
        is checked to be a Python identifier: no other text reaches generated source."""
        if not is_name:
            return self.expression(value)
        if type(value) is not str or not value.isidentifier() or keyword.iskeyword(value):
            raise ValueError(f"attribute name {value!r:.80} is not a Python identifier")
        return value

    def _bind(self, value: object, prefix: str) -> str:
        name = self._name_of_id.get(id(value))
        if name is None:
            name = f"{prefix}{len(self.bound)}"
            self._name_of_id[id(value)] = name
            self.bound[name] = value
        return name
