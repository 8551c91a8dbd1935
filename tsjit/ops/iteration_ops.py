"""Ops the front end uses to lower `for` loops onto prim::Loop trip counts."""
from __future__ import annotations

from ..ir.types import IntType
from .registry import register

# len(range(start, stop, step)); raises ValueError for a zero step, as range() does.
register("aten::__range_length", "start, stop, step", lambda types, attrs: IntType,
         "len(range({0}, {1}, {2}))")
# the value of the loop variable in iteration i
register("aten::__derive_index", "i, start, step", lambda types, attrs: IntType,
         "{1} + {0} * {2}", may_raise=False)
