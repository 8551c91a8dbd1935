"""Direct entry into a fused kernel: one generated function from the call to the launch.

A scripted function whose optimized graph is only a guarded fusion group of its
parameters (`TypeCheck` of every parameter, `If` selecting the FusionGroup or its
fallback) returning results of the group, parameters (as `out[...] = expr; return out`
does, the group having written `out` in place) or constants, or a tuple of these, is called
through a function generated for it:

    def triad(*args, **kwargs):
        if not kwargs and len(args) == 3:
            a, x, y = args
            if type(a) is float and type(x) is _ndarray and x.dtype is _dtype1 ...:
                ... the group's launch (run-time checks, kernel call) ...
                _calls[0] += 1
                return results[0]
        return _fallback(*args, **kwargs)

Its guard is the TypeCheck's, and it checks every parameter, so it also implies the
argument checks; anything else (keywords, other types, a run-time check that fails) takes
the normal path, which counts and handles it.  A call then costs one Python frame and the
kernel's, instead of the argument check, the executor, the graph's function, the guard
and the launcher.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..interpreter.rendering import literal
from ..ir.graph import Graph, Value
from .guards import conditions


def fused_direct_entry(graph: Graph | None, fallback: Callable) -> tuple[Callable, list] | None:
    """The direct entry of `graph` (an executor's optimized graph) and its call counter,
    or None when the graph is not one guarded fusion group of its parameters."""
    if graph is None:
        return None
    nodes = [n for n in graph.block.nodes if n.kind != "prim::Constant"]
    if len(nodes) not in (2, 3) or nodes[0].kind != "prim::TypeCheck" or \
            nodes[1].kind != "prim::If" or nodes[1].inputs[0] is not nodes[0].output:
        return None
    check, branch = nodes[0], nodes[1]
    native = branch.blocks[0].nodes
    if len(native) != 1 or native[0].kind != "prim::FusionGroup" or \
            set(check.inputs) != set(graph.inputs) or len(check.inputs) != len(graph.inputs):
        return None
    group = native[0]
    runtime = getattr(group.attrs.get("runtime"), "fusion", None)
    results = _results(graph, nodes[2:], branch, group)
    if not set(group.inputs) <= set(graph.inputs) or runtime is None or results is None:
        return None
    return _generate(graph, check, group, runtime, results, fallback)


def _results(graph: Graph, rest: list, branch, group) -> tuple[list[Value | str], bool] | None:
    """What the graph returns when the group runs, and whether it is a (plain) tuple:
    per item, a parameter or an output of the group (a Value), or a constant's literal.
    (A parameter written in place by the group, as in `out[...] = expr; return out`, is
    returned as the object it is.)"""
    known = {*graph.inputs, *group.outputs}
    inner = dict(zip(branch.outputs, branch.blocks[0].outputs))   # what the If gives
    (result,) = graph.outputs
    items, packed = [result], False
    if rest:
        (pack,) = rest
        if pack.kind != "prim::TupleConstruct" or pack.attrs or result is not pack.output:
            return None
        items, packed = list(pack.inputs), True
    found: list[Value | str] = []
    for v in (inner.get(v, v) for v in items):
        if v in known:
            found.append(v)
        elif v.node.kind == "prim::Constant" and literal(v.node.attrs["value"]) is not None:
            found.append(literal(v.node.attrs["value"]))
        else:
            return None
    return found, packed


def _generate(graph: Graph, check, group, runtime, results: tuple[list[Value | str], bool],
              fallback: Callable) -> tuple[Callable, list]:
    params = [f"p{i}" for i in range(len(graph.inputs))]
    name_of: dict[Value, str] = dict(zip(graph.inputs, params))
    counter = [0]
    namespace: dict[str, object] = {"_ndarray": np.ndarray, "_generic": np.generic,
                                    "_fallback": fallback, "_calls": counter}
    guard = [c for v, t in zip(check.inputs, check.attrs["types"])
             for c in conditions(name_of[v], t, name_of[v], namespace)]
    launch, outputs = runtime.launch_code([name_of[v] for v in group.inputs], namespace,
                                          "return _fallback(*args)", indent=" " * 12)
    name_of.update(zip(group.outputs, outputs))
    items, packed = results
    values = [item if isinstance(item, str) else name_of[item] for item in items]
    result = f"({', '.join(values)},)" if packed else values[0]
    source = "\n".join([
        "def entry(*args, **kwargs):",
        f"    if not kwargs and len(args) == {len(params)}:",
        f"        {', '.join(params)}{',' if len(params) == 1 else ''} = args",
        f"        if {' and '.join(guard) or 'True'}:",
        *launch,
        "            _calls[0] += 1",       # after the launch: a miss is counted by _fallback
        f"            return {result}",
        "    return _fallback(*args, **kwargs)",
    ]) + "\n"
    exec(compile(source, f"<tsjit direct entry {runtime.label}>", "exec"), namespace)
    return namespace["entry"], counter
