"""Type propagation: refined types flow from the graph's inputs through the type rules.

When the executor knows the types of a call's arguments, the types of many values follow:
an elementwise op's result from NumPy's promotion (as the fuser derives it), a NumPy
function's from its registry rule.  If they give every operand of every elementwise op,
the first call can be specialized before it runs, instead of after a profiling run in
the interpreter (which for gelu on a million floats spends 100 ms in NumPy's `x ** 3`).
Like profiled types these are speculative: the guards in front of native code check them.

Loop-carried values are left alone (their type may change from one iteration to the
next), and so is everything that depends on them.
"""
from __future__ import annotations

from ..ir.graph import Block, Graph, Node, Value
from ..ir.types import TensorType, is_subtype, unify
from ..ops import OPS
from ..ops.registry import OpTypeError, infer_types
from .elementwise_kernel import GroupError, ScalarResult, build_group, read_call


def propagate_types(graph: Graph, assume_loops_keep_types: bool = False) -> None:
    """Refine the types of values computed from values of refined types.

    assume_loops_keep_types: also give each loop-carried value its initial value's type,
    which holds for most loops (`peak = x[0]; for ...: peak = max(peak, x[i])`), so that
    the values computed from it are refined too.  Only a guess: the profiling executor
    uses it to choose what it need not profile, never to type code."""
    _propagate_block(graph.block, assume_loops_keep_types)


def unknown_operands(graph: Graph) -> list[Value]:
    """The Tensor operands of elementwise ops whose dtype, rank or kind is not known (a
    profiling run has to find them)."""
    unknown = []
    for node in graph.nodes():
        call = read_call(node)
        if call is None:
            continue
        for v in (*call.operands, *([call.target] if call.target is not None else [])):
            t = v.type
            if isinstance(t, TensorType) and None in (t.dtype, t.sizes, t.ndarray) and \
                    v.node.kind != "prim::Constant":
                unknown.append(v)
    return unknown


def _propagate_block(block: Block, assume_loops: bool) -> None:
    for node in block.nodes:
        if node.kind == "prim::If":
            for inner in node.blocks:
                _propagate_block(inner, assume_loops)
            for k, out in enumerate(node.outputs):
                branches = [inner.outputs[k].type for inner in node.blocks]
                if all(isinstance(t, TensorType) for t in branches):
                    _refine(out, unify(*branches))
        elif node.blocks:
            if assume_loops and node.kind == "prim::Loop":
                for initial, param in zip(node.inputs[2:], node.blocks[0].params[1:]):
                    _refine(param, initial.type)
            for inner in node.blocks:
                _propagate_block(inner, assume_loops)
        else:
            _propagate_node(node)


def _propagate_node(node: Node) -> None:
    if read_call(node) is not None:
        try:
            fused = build_group([node], lambda v: True)
        except ScalarResult as scalar:     # arithmetic of NumPy scalars (loop code)
            _refine(node.output, TensorType(scalar.dtype.name, (), None, False))
            return
        except GroupError:
            pass       # the registry's rule may still know
        else:
            for v in node.outputs:
                _refine(v, fused.value_types[v])
            return
    op = OPS.get(node.kind)
    if op is None or op.infer is None:
        return
    try:
        types = infer_types(op, [v.type for v in node.inputs], node.attrs)
    except OpTypeError:
        return
    for v, t in zip(node.outputs, types):
        _refine(v, t)


def _refine(value: Value, t) -> None:
    if isinstance(t, TensorType) and t.is_refined and is_subtype(t, value.type):
        value.type = t
