"""The ops the optimizing executor puts into graphs: profiling, guards and native code.

Their Python implementation is a call of a runtime object that the executor attaches to
each node as `attrs["runtime"]` when it lowers a graph (a profile recorder, a generated
guard, a kernel launcher, a fallback executor); the interpreter binds that object into the
generated function like any other attribute, so a native kernel runs as one call in the
middle of ordinary generated Python.  `attrs["subgraph"]` holds the Graph a native node
computes (printed after the graph as `with prim::FusionGroup_0 = graph(...)`).

- `prim::profile[profiled_type=T](%x)`: records the NumPy type of %x (dtype, sizes, layout,
  ndarray or NumPy scalar); after profiling, T is what was seen.
- `%ok = prim::TypeCheck[types=(T, ...)](%x, ...)`: whether each input has exactly the type
  the native code after it was compiled for (True) or not (a guard failure).
- `prim::FusionGroup(...)`: a fused elementwise kernel over its inputs; it may write an
  input in place (`x += y`), so it is treated as having effects.
- `prim::FallbackGraph(...)`: the unoptimized subgraph run when a guard fails; it has its
  own executor, which profiles and specializes again (a bounded chain of specializations).

Ops marked `guarded` hold native code that assumes its subgraph's input types;
`insert_guards` protects each with a TypeCheck and a FallbackGraph.
"""
from __future__ import annotations

from ..ir.types import BoolType
from .registry import register


def _call_runtime(args: list[str], attrs: dict) -> str:
    return f"{attrs['runtime']}({', '.join(args)})"


def _record(args: list[str], attrs: dict) -> str:
    slot = attrs["slot"]
    # once the site's budget is spent, a profiled value costs one index and test
    return f"{attrs['budget']}[{slot}] and {attrs['runtime']}({args[0]}, {slot})"


register("prim::profile", "x", lambda types, attrs: None, _record, side_effect=True,
         may_raise=False, attrs={"shared": ("budget",)})
register("prim::TypeCheck", "*inputs", lambda types, attrs: BoolType, _call_runtime,
         may_raise=False)
register("prim::FusionGroup", "*inputs", None, _call_runtime, side_effect=True, views=True,
         attrs={"guarded": True})
register("prim::FallbackGraph", "*inputs", None, _call_runtime, side_effect=True, views=True)
