"""Native regions: maximal runs of scalar code become `prim::NativeCall` nodes.

Each block is scanned in program order for runs of consecutive nodes that native code can
run (codegen/scalar's rules; an If or a Loop qualifies when everything in its blocks
does).  A run becomes one NativeCall when it contains a loop (straight-line code gains
nothing from a native call) or when it is the whole function (then the call is the
function, and ScriptFunction can call it directly).  Blocks of nodes that do not qualify
are scanned in turn, so the loop nest of `for i: for j: out[i, j] = ...` inside a
function that also allocates arrays still becomes native.

Native code computes with numbers, never with whole arrays: an array may only be indexed
(`x[i, j]`, `x[i] = v`) or measured (`x.shape`, `len(x)`, `x.size`), a list of numbers
only read (`xs[i]`, `len(xs)`, `for x in xs`).  A `Tensor` value counts as a number when
it is an element read by an int index, a NumPy scalar by its refined type, or computed
from such numbers (loops and branches included); any other `Tensor` is an array.  Where
the IR is vague (`x[i]` of an array of unknown rank, before profiling) the check is
optimistic: the NativeFunction compiles one variant per argument kinds seen at run time
and runs the region in the interpreter for kinds it cannot lower, so a wrong guess costs
speed, never correctness.

A NativeCall takes the values its region reads from outside (constants are copied in),
gives the values read after it, and holds the region as its `subgraph`; the executor's
lowering gives it the NativeFunction that runs it (`codegen.scalar.lower_native_call`).
"""
from __future__ import annotations

from ..ir.graph import Block, Graph, Node, Value, clone_node
from ..ir.types import (
    BoolType,
    DTypeType,
    FloatType,
    IntType,
    ListType,
    NoneType,
    NoReturnType,
    OptionalType,
    StrType,
    TensorType,
    TupleType,
    Type,
    UninitializedType,
    VarTupleType,
)

NATIVE_CALL = "prim::NativeCall"
_SCALARS = (IntType, FloatType, BoolType)
_MARKERS = (NoneType, UninitializedType, NoReturnType)


# Ops whose first input may be an array (indexed or measured); every other Tensor input of
# a native node must be a number.
_ARRAY_READERS = frozenset(("aten::__getitem__", "aten::__setitem__", "aten::len",
                            "ndarray::shape", "numpy::shape", "ndarray::size", "ndarray::ndim",
                            "numpy::ndim"))


def lower_native_regions(graph: Graph) -> None:
    """Replace the native regions of `graph` by prim::NativeCall nodes, in place."""
    if _may_hold_a_region(graph):
        _RegionFinder(graph).lower_block(graph.block, whole_function=True)


def _may_hold_a_region(graph: Graph) -> bool:
    """A quick test, before the scalar code generator is loaded (its rules decide what is
    native; array code such as gelu, or a loop filling a dict, has no use for it, and a
    first call waiting for its compile would wait ~50 ms for the import): a region holds a
    loop whose values native code can all hold by their types, or is the whole function,
    none of whose values can then be an array."""
    loops = [node for node in graph.nodes() if node.kind == "prim::Loop"]
    if loops:
        return any(_types_allow(loop) for loop in loops)
    return not any(isinstance(v.type, TensorType) and v.type.ndarray is True
                   for node in graph.block.nodes for v in node.outputs)


def _types_allow(loop: Node) -> bool:
    """Whether native code can hold every value `loop` reads, defines and gives, judging by
    their types alone (what `_RegionFinder.is_native` asks first of each)."""
    for node in _walk(loop):
        constant = node.kind == "prim::Constant"
        if not all(_carries(v.type, constant) for v in node.outputs) or not all(
                _carries(v.type, v.node.kind == "prim::Constant") for v in node.inputs) or \
                not all(_carries(p.type, False) for b in node.blocks for p in b.params):
            return False
    return True


def rule_for(node: Node):
    """codegen/scalar's rule for `node` (the code generator loads on the first look-up)."""
    from ..codegen.scalar import rule_for as scalar_rule_for
    return scalar_rule_for(node)


class _RegionFinder:
    """Finds and replaces the regions of one graph (see the module docstring)."""

    def __init__(self, graph: Graph):
        self.numbers = tensor_numbers(graph)

    def lower_block(self, block: Block, whole_function: bool) -> None:
        run: list[Node] = []
        for node in list(block.nodes):
            if self.is_native(node):
                run.append(node)
                continue
            _make_region(run, whole_function=False)
            run = []
            for inner in node.blocks:
                self.lower_block(inner, whole_function=False)
        _make_region(run, whole_function=whole_function and len(run) == len(block.nodes))

    def is_native(self, node: Node) -> bool:
        """Whether some variant of `node` may run natively, judging by the IR."""
        constant = node.kind == "prim::Constant"
        if not all(self._holds(v, constant) for v in node.outputs):
            return False
        if node.kind in ("prim::If", "prim::Loop"):
            return all(self._holds(p, False) for b in node.blocks for p in b.params) and all(
                self.is_native(inner) for b in node.blocks for inner in b.nodes)
        rule = rule_for(node)
        if rule is None or rule.check(node) is not None:
            return False
        return all(self._holds(v, v.node.kind == "prim::Constant",
                               array=k == 0 and node.kind in _ARRAY_READERS)
                   for k, v in enumerate(node.inputs))

    def _holds(self, value: Value, constant: bool, array: bool = False) -> bool:
        """Whether native code can hold `value` (where it is used as an array, if `array`)."""
        if isinstance(value.type, TensorType):
            return array or value in self.numbers
        return _carries(value.type, constant)


def tensor_numbers(graph: Graph) -> set[Value]:
    """The Tensor values that are numbers (see the module docstring): every Tensor value
    except those that may be arrays, found as a least fixed point (an array flows through
    arithmetic, loop-carried values and branch results)."""
    tensors = {v for v in graph.inputs if isinstance(v.type, TensorType)}
    arrays = {v for v in tensors if v.type.ndarray is not False}
    edges: list[tuple[Value, list[Value]]] = []     # value, the values it is computed from
    for node in graph.nodes():
        for block in node.blocks:
            tensors.update(p for p in block.params if isinstance(p.type, TensorType))
        outs = [v for v in node.outputs if isinstance(v.type, TensorType)]
        tensors.update(outs)
        if node.kind == "prim::If":
            edges += [(out, [b.outputs[out.index] for b in node.blocks]) for out in outs]
        elif node.kind == "prim::Loop":
            body = node.blocks[0]
            for k, out in enumerate(node.outputs):
                sources = [node.inputs[2 + k], body.outputs[1 + k]]
                edges += [(body.params[1 + k], sources), (out, sources)]
        elif _reads_element(node) or (rule_for(node) is not None
                                      and node.kind not in _ARRAY_READERS):
            edges += [(out, [] if _reads_element(node) else list(node.inputs)) for out in outs]
        else:
            arrays.update(outs)
    arrays.update(v for v in tensors if v.type.ndarray is True)
    changed = True
    while changed:
        changed = False
        for value, sources in edges:
            if value not in arrays and isinstance(value.type, TensorType) and any(
                    s in arrays for s in sources):
                arrays.add(value)
                changed = True
    return tensors - arrays


def _reads_element(node: Node) -> bool:
    """`x[i]` / `x[i, j]` with as many int indices as the array has dimensions (when the
    rank is known)."""
    if node.kind != "aten::__getitem__" or rule_for(node).check(node) is not None:
        return False
    seq, index = node.inputs
    arity = len(index.type.elems) if isinstance(index.type, TupleType) else 1
    return isinstance(seq.type, TensorType) and seq.type.rank in (None, arity)


def _carries(t: Type, constant: bool) -> bool:
    """Whether native code can hold a value of IR type `t` (strings and dtypes only as
    constants, such as an exception's message)."""
    if t in _SCALARS or t in _MARKERS or isinstance(t, TensorType):
        return True
    if t in (StrType, DTypeType):
        return constant
    if isinstance(t, OptionalType):
        return t.elem in _SCALARS
    if isinstance(t, TupleType):
        return t.py_class is None and all(_carries(e, constant) for e in t.elems)
    if isinstance(t, VarTupleType):
        return t.elem == IntType
    if isinstance(t, ListType):      # read only: no list op but `xs[i]` and `len` lowers
        return t.elem in _SCALARS
    return False


def _make_region(run: list[Node], whole_function: bool) -> None:
    has_loop = any(n.kind == "prim::Loop" for node in run for n in _walk(node))
    if not run or not (has_loop or whole_function):
        return
    region, inputs, outputs = _extract(run)
    first = next((n for n in run if n.kind != "prim::Constant"), run[0])
    call = Node(NATIVE_CALL, {"subgraph": region}, first.source)
    for v in inputs:
        call.add_input(v)
    call.insert_before(run[0])
    for v in outputs:
        v.replace_all_uses_with(call.add_output(v.type, v.name))
    for node in reversed(run):
        if node.kind != "prim::Constant" or not node.outputs[0].uses:
            node.destroy()


def _walk(node: Node):
    """`node` and every node in its blocks, in program order."""
    yield node
    for block in node.blocks:
        for inner in block.nodes:
            yield from _walk(inner)


def _extract(run: list[Node]) -> tuple[Graph, list[Value], list[Value]]:
    """The region's graph, the outside values it reads (the function's parameters in their
    order, then others in order of first use) and the values of the run read after it.
    Constants from before the run are copied into the region; constants of the run that
    are also read after it stay where they are too."""
    nodes = [n for node in run for n in _walk(node)]
    inside = set(nodes) | {b.return_node for n in nodes for b in n.blocks}
    defined = {v for n in nodes if n.kind != "prim::Constant" for v in n.outputs} | {
        p for n in nodes for b in n.blocks for p in b.params}
    reads = [v for n in nodes for v in n.inputs] + [
        v for n in nodes for b in n.blocks for v in b.outputs]
    inputs: list[Value] = []
    constants: list[Node] = []
    for v in reads:
        if v.node.kind == "prim::Constant":
            if v.node not in inside and v.node not in constants:
                constants.append(v.node)
        elif v not in defined and v not in inputs:
            inputs.append(v)
    top = run[0].block.graph.inputs
    inputs.sort(key=lambda v: top.index(v) if v in top else len(top))   # parameters first
    outputs = [v for node in run if node.kind != "prim::Constant" for v in node.outputs
               if any(user not in inside for user, _ in v.uses)]
    region = Graph()
    env: dict[Value, Value] = {v: region.add_input(v.type, v.name) for v in inputs}
    for node in constants:
        region.block.append(clone_node(node, env))
    for node in run:
        region.block.append(clone_node(node, env))
    for v in outputs:
        region.block.add_output(env[v])
    return region, inputs, outputs
