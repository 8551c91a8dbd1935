"""The profiling executor's passes on IR text: profile insertion, type specialization,
elementwise fusion (groups, promotion casts, effects and aliasing, in-place outputs) and
guard insertion; and the IR text form of subgraphs (`with prim::FusionGroup_0 = ...`).
The verifier runs after every pass."""
from __future__ import annotations

import numpy as np
import pytest

from tsjit.ir.graph import Graph
from tsjit.ir.parser import IRParseError, parse_ir
from tsjit.ir.printer import print_graph
from tsjit.ir.types import TENSOR, TensorType
from tsjit.ir.verifier import verify
from tsjit.passes import (
    fuse_elementwise,
    insert_guards,
    insert_profiles,
    propagate_types,
    specialize_types,
)
from tsjit.passes.elementwise_kernel import build_group, extend_group, read_call
from tsjit.passes.fuse_elementwise import MAX_GROUP_SIZE
from tsjit.testing.filecheck import FileCheck

F32 = "Tensor(dtype=float32, sizes=[*], ndarray=1)"
F64 = "Tensor(dtype=float64, sizes=[*], ndarray=1)"
I32 = "Tensor(dtype=int32, sizes=[*], ndarray=1)"
F32_2D = "Tensor(dtype=float32, sizes=[*, *], ndarray=1)"


def run(text: str, *passes) -> Graph:
    graph = parse_ir(text)
    verify(graph)
    for apply in passes:
        apply(graph)
        verify(graph)
    return graph


def groups(graph: Graph) -> list:
    return [n for n in graph.nodes() if n.kind == "prim::FusionGroup"]


def kernel_of(group) -> object:
    """The KernelSpec the executor would compile for a FusionGroup node."""
    subgraph = group.attrs["subgraph"]
    outputs = set(subgraph.outputs)
    return build_group([n for n in subgraph.nodes() if read_call(n)], outputs.__contains__).spec


def round_trips(graph: Graph) -> None:
    text = print_graph(graph)
    assert print_graph(parse_ir(text)) == text


TRIAD = f"""graph(%a : float, %x : {F32}, %y : {F32}):
  %0 : Tensor = aten::mul(%a, %x)
  %1 : Tensor = aten::add(%0, %y)
  return (%1)
"""


def test_a_chain_becomes_one_group_over_typed_parameters():
    graph = run(TRIAD, fuse_elementwise)
    FileCheck().check("prim::FusionGroup_0(%a, %x, %y)").check_not("aten::") \
        .check("with prim::FusionGroup_0 = graph(%a : float,") \
        .check(f"%x : {F32}").check(f"{F32} = aten::mul(%a, %x)") \
        .check(f"{F32} = aten::add").run(graph)
    spec = kernel_of(groups(graph)[0])
    assert [op.op for op in spec.ops] == ["mul", "add"]
    assert [(i.dtype, i.rank, i.is_scalar) for i in spec.inputs] == [
        (np.dtype("float32"), 0, True), (np.dtype("float32"), 1, False),
        (np.dtype("float32"), 1, False)]
    round_trips(graph)


def _chain(ops: int) -> str:
    """%v0 = %x * 1.5, then each op reading the two values before it (int32 promotes)."""
    lines = [f"graph(%x : {F32}, %y : Tensor(dtype=int32, sizes=[*], ndarray=1)):",
             "  %c : float = prim::Constant[value=1.5]()",
             "  %v0 : Tensor = aten::mul(%x, %c)", "  %v1 : Tensor = aten::add(%v0, %y)"]
    for k in range(2, ops):
        op = ("aten::sub", "aten::mul", "aten::add")[k % 3]
        lines.append(f"  %v{k} : Tensor = {op}(%v{k - 1}, %v{k - 2})")
    return "\n".join([*lines, f"  return (%v{ops - 1})", ""])


def test_a_group_extended_by_a_node_is_the_group_built_with_it():
    graph = run(_chain(12))
    nodes = [n for n in graph.nodes() if read_call(n) is not None]
    kernel = build_group(nodes[:1], lambda v: True)
    for k in range(1, len(nodes)):
        outside = {nodes[k].outputs[0]}.__contains__
        kernel = extend_group(kernel, nodes[:k], nodes[k], outside)
        whole = build_group(nodes[:k + 1], outside)
        assert (kernel.spec, kernel.value_types, kernel.input_types, kernel.raising) == \
            (whole.spec, whole.value_types, whole.input_types, whole.raising)
        assert len(kernel.spec.ops) > len(kernel.builder.ops) - 1


def test_kernels_take_at_most_max_group_size_ops():
    ops = 2 * MAX_GROUP_SIZE + 10
    graph = run(_chain(ops), propagate_types, fuse_elementwise)
    sizes = [sum(1 for n in g.attrs["subgraph"].nodes() if read_call(n) is not None)
             for g in groups(graph)]
    assert sum(sizes) == ops
    assert max(sizes) == MAX_GROUP_SIZE and len(sizes) == 3, sizes


def test_promotion_inserts_casts_as_numpy_would():
    graph = run(f"""graph(%x : {I32}, %y : {F32}):
  %c : float = prim::Constant[value=0.5]()
  %0 : Tensor = aten::mul(%x, %c)
  %1 : Tensor = aten::add(%0, %y)
  return (%1)
""", fuse_elementwise)
    FileCheck().check(f"{F64} = aten::mul").check(f"{F64} = aten::add").run(graph)
    spec = kernel_of(groups(graph)[0])
    casts = [op for op in spec.ops if op.op == "cast"]
    # int32 * weak float is float64; float32 + float64 is float64: x and y are cast
    assert sorted(op.dtype.name for op in casts) == ["float64", "float64"]
    assert spec.value_dtype(spec.outputs[0]) == np.dtype("float64")


def test_one_op_or_unknown_types_are_left_alone():
    single = run(f"graph(%x : {F32}):\n  %0 : Tensor = aten::neg(%x)\n  return (%0)\n",
                 fuse_elementwise)
    assert not groups(single)
    unknown = run(TRIAD.replace(F32, "Tensor"), fuse_elementwise)
    assert not groups(unknown)


def test_a_scalar_result_is_numpys_business():
    graph = run("""graph(%x : Tensor(dtype=float64, sizes=[], ndarray=1)):
  %c : float = prim::Constant[value=2.0]()
  %0 : Tensor = aten::mul(%x, %c)
  %1 : Tensor = aten::add(%0, %c)
  return (%1)
""", fuse_elementwise)
    assert not groups(graph)


PRINT_BETWEEN = f"""graph(%x : {F32}):
  %c : float = prim::Constant[value=2.0]()
  %0 : Tensor = aten::mul(%x, %c)
  prim::Print(%x)
  %1 : Tensor = aten::add(%0, %c)
  return (%1)
"""


def test_no_member_moves_past_an_effect():
    graph = run(PRINT_BETWEEN, fuse_elementwise)
    assert not groups(graph)
    FileCheck().check("aten::mul").check("prim::Print").check("aten::add").run(graph)


def test_pure_nodes_in_between_are_passed():
    graph = run(f"""graph(%g : {F32_2D}, %i : int):
  %c : float = prim::Constant[value=1.0]()
  %n : NoneType = prim::Constant[value=None]()
  %0 : Tensor = aten::neg(%g)
  %1 : Tensor = numpy::exp(%0, %n, %n)
  %2 : int = aten::mul(%i, %i)
  %3 : Tensor = aten::add(%c, %1)
  return (%3, %2)
""", fuse_elementwise)
    assert len(groups(graph)) == 1
    FileCheck().check("aten::mul(%i, %i)").check("prim::FusionGroup_0(%g)").run(graph)


RAISING = f"""graph(%x : {F32}, %y : {F32}, %l : List[int]):
  %c : float = prim::Constant[value=2.0]()
  %k : int = prim::Constant[value=3]()
  %0 : Tensor = aten::add(%x, %y)
  %1 : int = aten::__getitem__(%l, %k)
  %2 : Tensor = aten::mul(%0, %c)
  return (%2, %1)
"""


def test_two_ops_that_may_raise_keep_their_order():
    # x + y may raise ValueError (shapes), l[3] IndexError: the first must stay first
    assert not groups(run(RAISING, fuse_elementwise))
    # a member passes an op that raises nothing but ValueError too
    graph = run(RAISING.replace("%l : List[int]", f"%z : {F32}")
                .replace("%1 : int = aten::__getitem__(%l, %k)", "%1 : Tensor = aten::eq(%z, %y)"),
                fuse_elementwise)
    assert len(groups(graph)) == 1
    # but not one that may report a floating-point error (z - y may overflow, as x + y):
    # eager code warns in program order
    graph = run(RAISING.replace("%l : List[int]", f"%z : {F32}")
                .replace("%1 : int = aten::__getitem__(%l, %k)", "%1 : Tensor = aten::sub(%z, %y)"),
                fuse_elementwise)
    assert not groups(graph)


INPLACE = f"""graph(%x : {F64}):
  %a : float = prim::Constant[value=2.0]()
  %b : float = prim::Constant[value=1.0]()
  %x.1 : Tensor = aten::imul(%x, %a)
  %x.2 : Tensor = aten::iadd(%x.1, %b)
  return (%x.2)
"""


def test_an_in_place_chain_writes_its_array():
    integer_chain = INPLACE.replace(F64, I32).replace("float", "int").replace(".0]", "]")
    graph = run(integer_chain, fuse_elementwise)
    (group,) = groups(graph)
    spec = kernel_of(group)
    assert spec.inplace == (0,) and [op.op for op in spec.ops] == ["mul", "add"]
    # the subgraph returns the written array itself: the object the program returns
    subgraph = group.attrs["subgraph"]
    assert subgraph.outputs == subgraph.inputs
    assert graph.outputs[0] is group.output


def test_a_float_in_place_chain_stays_numpys():
    """Both float ops may report an error and read x's old values: after one kernel
    neither could run again to tell which raised (fp_errors.reports_are_ambiguous)."""
    assert not groups(run(INPLACE, fuse_elementwise))


def test_int_array_cannot_take_a_float_in_place():
    graph = run(INPLACE.replace(F64, I32), fuse_elementwise)
    assert not groups(graph)   # NumPy raises (same_kind casting); the interpreter does too


def test_no_array_is_read_after_a_write():
    graph = run(f"""graph(%x : {F64}, %y : {F64}):
  %a : float = prim::Constant[value=2.0]()
  %x.1 : Tensor = aten::iadd(%x, %y)
  %0 : Tensor = aten::mul(%y, %a)
  return (%0)
""", fuse_elementwise)
    assert not groups(graph)   # y may be x: after the write it holds other values


def test_assignment_into_a_whole_array():
    graph = run(f"""graph(%a : float, %x : {F32}, %y : {F32}, %out : {F64}):
  %n : NoneType = prim::Constant[value=None]()
  %0 : Tensor = aten::mul(%a, %x)
  %1 : Tensor = aten::add(%0, %y)
  %s : Any = prim::Slice(%n, %n, %n)
  aten::__setitem__[slice=True](%out, %s, %1)
  return (%out)
""", fuse_elementwise)
    (group,) = groups(graph)
    spec = kernel_of(group)
    assert spec.inplace == (3,) and spec.ops[-1].op == "cast"   # float32 into float64
    FileCheck().check_not("aten::__setitem__").check("with prim::FusionGroup_0").run(graph)


def test_values_read_later_are_outputs():
    graph = run(f"""graph(%x : {F32}):
  %c : float = prim::Constant[value=1.0]()
  %0 : Tensor = aten::add(%x, %c)
  %1 : Tensor = numpy::tanh(%0, %c, %c)
  %2 : Tensor = aten::neg(%0)
  %3 : Tensor = aten::mul(%2, %0)
  %t : Tuple[Tensor, Tensor] = prim::TupleConstruct(%3, %0)
  return (%t)
""".replace("numpy::tanh(%0, %c, %c)", "aten::neg(%0)"), fuse_elementwise)
    (group,) = groups(graph)
    # %0 and %3 are read later; %1, which nothing reads, too: its node may warn, so the
    # kernel must compute it
    assert len(group.outputs) == 3
    FileCheck().check("prim::TupleConstruct").run(graph)


def test_a_smaller_result_read_later_splits_nothing_into_a_wrong_shape():
    graph = run(f"""graph(%x : {F32_2D}, %b : {F32}):
  %c : float = prim::Constant[value=2.0]()
  %0 : Tensor = aten::mul(%b, %c)
  %1 : Tensor = aten::add(%x, %0)
  %t : Tuple[Tensor, Tensor] = prim::TupleConstruct(%1, %0)
  return (%t)
""", fuse_elementwise)
    assert not groups(graph)    # b * 2 has b's shape in NumPy, not the group's


def test_guards_select_the_kernel_or_an_unspecialized_fallback():
    graph = run(TRIAD, fuse_elementwise, insert_guards)
    FileCheck() \
        .check(f"prim::TypeCheck[types=(Type(float), Type({F32}), Type({F32}))](%a, %x, %y)") \
        .check("prim::If").check("prim::FusionGroup_0(%a, %x, %y)") \
        .check("prim::FallbackGraph_1(%a, %x, %y)") \
        .check("with prim::FusionGroup_0").check("with prim::FallbackGraph_1 = graph(%a : float,")\
        .check_next("%x : Tensor,").run(graph)
    fallback = next(n for n in graph.nodes() if n.kind == "prim::FallbackGraph")
    verify(fallback.attrs["subgraph"])
    assert all(v.type == TENSOR for n in fallback.attrs["subgraph"].nodes() for v in n.outputs)
    round_trips(graph)


def test_profiles_follow_every_tensor_definition():
    graph = run("""graph(%x : Tensor, %n : int):
  %t : bool = prim::Constant[value=True]()
  %y : Tensor = prim::Loop(%n, %t, %x)
    block0(%i : int, %v : Tensor):
      %w : Tensor = aten::mul(%v, %v)
      -> (%t, %w)
  return (%y)
""", insert_profiles)
    FileCheck().check("prim::profile[slot=0](%x)").check("prim::Loop") \
        .check("prim::profile[slot=1](%v)").check("aten::mul") \
        .check("prim::profile[slot=2](%w)").check("prim::profile[slot=3](%y)").run(graph)


def test_specialization_applies_profiles_and_widens_joins():
    graph = parse_ir("""graph(%x : Tensor, %c : bool, %z : Tensor):
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::neg(%x)
      -> (%a)
    block1():
      %b : Tensor = aten::pos(%z)
      -> (%b)
  return (%y)
""")
    insert_profiles(graph)
    seen = TensorType("float32", (4,), "C", True)
    for node in graph.nodes():
        if node.kind == "prim::profile" and node.inputs[0].name not in ("b", "z"):  # not taken
            node.attrs["profiled_type"] = seen
    specialize_types(graph)
    verify(graph)
    assert not any(n.kind == "prim::profile" for n in graph.nodes())
    assert graph.inputs[0].type == seen
    # the If's result holds the untaken branch's value too: it stays a plain Tensor
    assert graph.outputs[0].type == TENSOR


def test_values_derived_from_profiled_ones_are_typed_without_a_profile():
    graph = parse_ir("""graph(%x : Tensor, %i : int):
  %e : Tensor = aten::__getitem__(%x, %i)
  %y : Tensor = aten::mul(%e, %e)
  return (%y)
""")
    derived = {v for n in graph.nodes() for v in n.outputs}
    insert_profiles(graph, known=derived)
    FileCheck().check("prim::profile[slot=0](%x)").check_not("prim::profile[slot=1]") \
        .run(graph)
    seen = TensorType("float32", (4,), "C", True)
    next(n for n in graph.nodes() if n.kind == "prim::profile").attrs["profiled_type"] = seen
    specialize_types(graph)
    verify(graph)
    assert graph.outputs[0].type == TensorType("float32", (), None, False)


def test_subgraph_labels_must_name_a_node():
    with pytest.raises(IRParseError, match="no node is labelled prim::FusionGroup_7"):
        parse_ir("graph(%x : Tensor):\n  return (%x)\n"
                 "with prim::FusionGroup_7 = graph(%y : Tensor):\n  return (%y)\n")
