"""The methods of `str` as ops (`str::split`, ...), and `str.format` (`aten::format`).

Each op calls the str method itself, so the interpreter gets Python's exact text
semantics (Unicode case mapping, `split()` on runs of whitespace, `find` returning -1).
Defaults are spelled as values Python accepts in their place (`split(None, -1)`,
`find(sub, None, None)`), since the front end passes every parameter.

f-strings need no op of their own: the front end turns each `{x!r:>{w}}` field into
`prim::FormatValue` (builtin_ops) and concatenates the pieces.
"""
from __future__ import annotations

from ..ir.types import BoolType, IntType, ListType, StrType, TupleType, VarTupleType
from .python_calls import (
    INDEX,
    KEYWORDS,
    OPTIONAL_INDEX,
    OPTIONAL_STR,
    STR,
    Accepts,
    iterated_type,
    register_method,
    signature_rule,
)
from .registry import OpTypeError

STR_OR_TUPLE = Accepts("str or a tuple of str", (StrType, VarTupleType(StrType)))
RANGE = (OPTIONAL_INDEX, OPTIONAL_INDEX)   # the optional start, end of a search

# (method names, signature after self, what the arguments accept, result type)
METHODS = (
    (("upper", "lower", "capitalize", "title", "swapcase", "casefold"), "", (), StrType),
    (("isdigit", "isalpha", "isspace", "isupper", "islower", "isalnum", "isdecimal",
      "isnumeric", "istitle", "isidentifier", "isascii", "isprintable"), "", (), BoolType),
    (("strip", "lstrip", "rstrip"), "chars=None", (OPTIONAL_STR,), StrType),
    (("split", "rsplit"), "sep=None, maxsplit=-1", (OPTIONAL_STR, INDEX), ListType(StrType)),
    (("splitlines",), "keepends=False", (INDEX,), ListType(StrType)),
    (("replace",), "old, new, count=-1", (STR, STR, INDEX), StrType),
    (("startswith", "endswith"), "prefix, start=None, end=None", (STR_OR_TUPLE, *RANGE),
     BoolType),
    (("find", "rfind", "index", "rindex", "count"), "sub, start=None, end=None",
     (STR, *RANGE), IntType),
    (("center", "ljust", "rjust"), "width, fillchar=' '", (INDEX, STR), StrType),
    (("zfill",), "width", (INDEX,), StrType),
    (("expandtabs",), "tabsize=8", (INDEX,), StrType),
    (("partition", "rpartition"), "sep", (STR,), TupleType((StrType,) * 3)),
    (("removeprefix", "removesuffix"), "affix", (STR,), StrType),
)


def _join_rule(types, attrs):
    _, iterable = types
    elem = iterated_type(iterable)
    if not STR(elem):
        raise OpTypeError(f"sequence item 0: expected str instance, {elem.annotation} found")
    return StrType


def _format_rule(types, attrs):
    """Any value formats; the keyword names are data (a tuple of str, one per argument)."""
    names = attrs.get(KEYWORDS, ())
    if type(names) is not tuple or not all(type(n) is str for n in names) or \
            len(names) >= len(types):
        raise OpTypeError(f"format(): malformed keyword names {names!r:.80}")
    return StrType


# Methods without arguments return for every str: an unused call may be removed.
for _names, _params, _accepts, _result in METHODS:
    for _name in _names:
        register_method(f"str::{_name}", (StrType,), _name,
                        f"self, {_params}" if _params else "self",
                        signature_rule(_name, _accepts, _result, receiver=True),
                        may_raise=bool(_params))
register_method("str::join", (StrType,), "join", "self, iterable", _join_rule)
# "{} has {}".format(a, b, c=d); any value formats (through its __format__)
register_method("aten::format", (StrType,), "format", "self, *args, **kwargs", _format_rule)
