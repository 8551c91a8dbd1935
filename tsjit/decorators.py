"""The helpers script code may call or be marked with; in eager Python they are no-ops.

The front end recognises these objects by identity and gives them their script
meaning (an `ignore`d function is called back in Python, `is_scripting()` is
the constant True, ...).
"""
from __future__ import annotations

import builtins
import typing

Final = typing.Final


def ignore(fn):
    """Leave `fn` in Python: script code calls it back through the interpreter."""
    fn._tsjit_ignore = True
    return fn


def unused(fn):
    """Do not compile `fn`; calling it from script code raises at run time."""
    fn._tsjit_unused = True
    return fn


def export(fn):
    """Compile this method of a Module too (forward is compiled anyway)."""
    fn._tsjit_export = True
    return fn


def is_scripting() -> bool:
    """True inside script code, False when the same function runs eagerly."""
    return False


def annotate(type_, value):
    """Give `value` the static type `type_` in script code (e.g. an empty list)."""
    return value


def isinstance(value, type_) -> bool:  # noqa: A001  (the point is to mirror the builtin)
    """isinstance() that also understands typing forms such as List[int]; of a class
    (a script class too), the builtin's answer."""
    if builtins.isinstance(type_, type):
        return builtins.isinstance(value, type_)
    from .api.argument_check import value_has_type
    from .frontend.annotations import to_type
    return value_has_type(value, to_type(type_))
