"""prim::NativeCall: a region of the graph compiled to native code (codegen/scalar).

The node's `subgraph` attribute is the region (its inputs and outputs are the node's) and
its `runtime` the NativeFunction running it: the interpreter calls `runtime.call(*inputs)`,
which runs compiled code or, when its guards fail, the subgraph in the interpreter.  The region may
write arrays, raise and print: the node has every effect.
"""
from __future__ import annotations

from .registry import register

register("prim::NativeCall", "*args", None,
         lambda args, attrs: f"{attrs['runtime']}.call({', '.join(args)})", side_effect=True)
