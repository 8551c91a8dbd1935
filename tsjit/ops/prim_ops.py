"""Structural ops (`prim::`): constants, control flow, tuples, lists, dicts,
attributes, objects, calls and exceptions.

Ops whose rule is None get their output types from the node's creator (the
front end knows them: a constant's type, a call's declared return types).
Templates: `{0}`, `{1}` are the inputs' Python expressions; `{name}` is the
attribute `name` rendered as a Python expression (a literal, or a reference to
the object), except for the attributes an op lists in its trait `names`: those
are identifiers, spliced as names once checked (`{0}.{name}`).  Ops with several
outputs produce one expression that the interpreter unpacks (`a, b = <expr>`).
`prim::If` and `prim::Loop` have no template: the interpreter's code generator
lowers them to Python control flow.
"""
from __future__ import annotations

from ..ir.types import BoolType, TupleType
from .registry import register


def _join(args: list[str]) -> str:
    return ", ".join(args)


def _no_result(types, attrs):
    return None


register("prim::Constant", "", None, "{value}", may_raise=False)
register("prim::If", "cond", None, "", attrs={"control": True}, may_raise=False)
register("prim::Loop", "max_trip_count, cond, *carried", None, "",
         attrs={"control": True}, may_raise=False)
register("prim::Uninitialized", "", None, "None", may_raise=False)
register("prim::unchecked_cast", "x", None, "{0}", may_raise=False)

register("prim::TupleConstruct", "*elems",
         lambda types, attrs: TupleType(tuple(types)),
         lambda a, attrs: f"{attrs['cls']}({_join(a)})" if "cls" in attrs else
         f"({_join(a)},)" if len(a) == 1 else f"({_join(a)})", may_raise=False)
register("prim::TupleUnpack", "tup", None, "{0}", may_raise=False, attrs={"unpacks": True})
register("prim::ListUnpack", "seq", None, "{0}", attrs={"unpacks": True})
register("prim::ListConstruct", "*elems", None, lambda a, attrs: f"[{_join(a)}]",
         may_raise=False)
register("prim::DictConstruct", "*items", None,
         lambda a, attrs: "{" + _join(f"{k}: {v}" for k, v in zip(a[::2], a[1::2])) + "}",
         may_raise=False)


register("prim::GetAttr", "obj", None, "{0}.{name}", may_raise=False, attrs={"names": ("name",)})
# `direct`: object.__setattr__ (a frozen dataclass's __init__ sets its fields past the
# class's own __setattr__, which raises)
register("prim::SetAttr", "obj, value", _no_result,
         lambda a, attrs: f"object.__setattr__({a[0]}, {attrs['name']!r}, {a[1]})"
         if attrs.get("direct") else f"{a[0]}.{attrs['name']} = {a[1]}", writes=(0,),
         may_raise=False, attrs={"names": ("name",)})
register("prim::CreateObject", "", None, "{cls}.__new__({cls})", may_raise=False)
# The body of a `with` statement lies between these two (same block): an exception raised
# in it calls the manager's __exit__ before it propagates (interpreter/codegen.py writes a
# try statement around the nodes between them). They compute nothing.
register("prim::Enter", "manager", _no_result, "pass", side_effect=True, may_raise=False)
register("prim::Exit", "manager", _no_result, "pass", side_effect=True, may_raise=False)

# Calls: `fn` is the callable (a compiled script function or an ignored Python one).
register("prim::CallFunction", "*args", None,
         lambda a, attrs: f"{attrs['fn']}({_join(a)})", side_effect=True)
register("prim::CallMethod", "self, *args", None,
         lambda a, attrs: f"{attrs['fn']}({_join(a)})", side_effect=True)
register("prim::PythonOp", "*args", None,
         lambda a, attrs: f"{attrs['fn']}({_join(a)})", side_effect=True)

register("prim::RaiseException", "*args", _no_result,
         lambda a, attrs: f"raise {attrs['cls']}({_join(a)})", side_effect=True)
register("prim::Print", "*args", _no_result, lambda a, attrs: f"print({_join(a)})",
         side_effect=True)
register("prim::isinstance", "x", lambda types, attrs: BoolType,
         "_isinstance({0}, {types})", may_raise=False)
register("aten::__is__", "a, b", lambda types, attrs: BoolType, "{0} is {1}", may_raise=False)
register("aten::__isnot__", "a, b", lambda types, attrs: BoolType, "{0} is not {1}",
         may_raise=False)
register("aten::__not__", "x", lambda types, attrs: BoolType, "not {0}")

# Annotations give a value a static type without changing it.
register("aten::annotate", "x", None, "{0}", may_raise=False)
