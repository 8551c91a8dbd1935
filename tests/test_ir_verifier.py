"""The verifier: valid graphs pass, and each broken invariant is reported by name
with the offending node printed."""
from __future__ import annotations

import pytest

from tsjit.ir import Graph, SourceRange
from tsjit.ir.parser import parse_ir
from tsjit.ir.types import TENSOR, BoolType, IntType, StrType
from tsjit.ir.verifier import IRVerificationError, verify

LOOP_AND_IF = """\
graph(%x : Tensor,
      %n : int):
  %0 : bool = prim::Constant[value=True]()
  %1 : int = prim::Constant[value=0]()
  %acc : int, %y : Tensor = prim::Loop(%n, %0, %1, %x)
    block0(%i : int, %acc.1 : int, %y.1 : Tensor):
      %2 : int = aten::add(%acc.1, %i)
      %3 : bool = aten::lt(%2, %n)
      %y.2 : Tensor = prim::If(%3)
        block0():
          %y.3 : Tensor = aten::mul(%y.1, %x)
          -> (%y.3)
        block1():
          -> (%y.1)
      -> (%0, %2, %y.2)
  prim::Print(%acc)
  return (%y)
"""


def broken(graph: Graph, *needles: str, **options) -> str:
    with pytest.raises(IRVerificationError) as info:
        verify(graph, **options)
    message = str(info.value)
    for needle in needles:
        assert needle in message
    return message


def nodes(graph: Graph, kind: str) -> list:
    return [n for n in graph.nodes() if n.kind == kind]


def test_valid_graphs_pass():
    verify(parse_ir(LOOP_AND_IF))
    verify(parse_ir(LOOP_AND_IF).copy())


def test_refined_output_types_agree_with_the_type_rule():
    verify(parse_ir("graph(%x : Tensor(dtype=float32, sizes=[3], layout=C, ndarray=1)):\n"
                    "  %y : Tensor(dtype=float32, sizes=[3]) = aten::neg(%x)\n"
                    "  return (%y)\n"))


# ---- dominance

def test_use_before_definition_in_the_same_block():
    g = parse_ir(LOOP_AND_IF)
    add, lt = nodes(g, "aten::add")[0], nodes(g, "aten::lt")[0]
    lt.move_before(add)
    broken(g, "input 0 is used before its definition", "%2 : bool = aten::lt(%3, %n)")


def test_value_defined_inside_a_block_used_after_the_node():
    g = parse_ir(LOOP_AND_IF.replace("prim::Print(%acc)", "prim::Print(%2)"))
    broken(g, "input 0 is used before its definition or outside the blocks", "prim::Print(%2)")


def test_value_of_the_then_block_used_in_the_else_block():
    g = parse_ir(LOOP_AND_IF.replace("          -> (%y.1)", "          -> (%y.3)"))
    broken(g, "used before its definition or outside the blocks", "return (%y.3)")


def test_node_output_used_inside_its_own_block():
    g = parse_ir(LOOP_AND_IF.replace("-> (%0, %2, %y.2)", "-> (%0, %acc, %y.2)"))
    broken(g, "input 1 is used before its definition", "return (%0, %acc, %y.2)")


def test_value_from_another_graph():
    other = Graph()
    foreign = other.add_input(TENSOR, "z")
    g = parse_ir(LOOP_AND_IF)
    nodes(g, "aten::mul")[0].replace_input(1, foreign)
    broken(g, "input 1 is used before its definition", "aten::mul(%y.1, %z)")


def test_graph_outputs_must_be_defined_and_present():
    g = parse_ir(LOOP_AND_IF)
    g.block.return_node.replace_input(0, nodes(g, "aten::mul")[0].output)
    broken(g, "used before its definition", "return (%y.3)")
    g.block.return_node.drop_inputs()
    broken(g, "the graph has no outputs")


# ---- use lists and back-pointers

def test_use_list_missing_a_use():
    g = parse_ir(LOOP_AND_IF)
    add = nodes(g, "aten::add")[0]
    add.inputs[1].uses.remove((add, 1))
    broken(g, "the use list of %i lacks a use", "aten::add(%acc.1, %i)")


def test_use_list_with_a_stale_use():
    g = parse_ir(LOOP_AND_IF)
    mul = nodes(g, "aten::mul")[0]
    g.inputs[0].uses.append((mul, 0))
    broken(g, "the use list of %x records a use that is not an input", "aten::mul")


def test_use_by_a_removed_node():
    g = parse_ir(LOOP_AND_IF)
    orphan = g.create("aten::neg", [g.inputs[0]], [TENSOR])
    broken(g, "the use list of %x records a use that is not an input", "aten::neg(%x)")
    orphan.drop_inputs()
    verify(g)


def test_node_block_pointer():
    g = parse_ir(LOOP_AND_IF)
    mul = nodes(g, "aten::mul")[0]
    mul.block = g.block
    broken(g, "node.block does not point to the block that holds it", "aten::mul")


def test_node_listed_twice():
    g = parse_ir(LOOP_AND_IF)
    g.block.nodes.append(g.block.nodes[0])
    broken(g, "node appears twice", "prim::Constant[value=True]()")


def test_block_owner_pointer():
    g = parse_ir(LOOP_AND_IF)
    if_node, loop = nodes(g, "prim::If")[0], nodes(g, "prim::Loop")[0]
    if_node.blocks[0].owner = loop
    broken(g, "block.owner does not point to the node that holds it", "prim::If(%3)")


def test_block_graph_pointer():
    g = parse_ir(LOOP_AND_IF)
    nodes(g, "prim::If")[0].blocks[1].graph = Graph()
    broken(g, "a block's graph pointer is not this graph", "prim::If(%3)")


def test_top_block_graph_pointer():
    g = parse_ir(LOOP_AND_IF)
    g.block.graph = None
    broken(g, "the graph's top block does not point back to the graph")


def test_block_param_and_return_node_pointers():
    g = parse_ir(LOOP_AND_IF)
    if_node = nodes(g, "prim::If")[0]
    if_node.blocks[0].return_node.block = if_node.blocks[1]
    broken(g, "the prim::Return node of a block points to another block", "prim::If(%3)")


def test_block_params_take_no_inputs():
    g = parse_ir(LOOP_AND_IF)
    nodes(g, "prim::Loop")[0].blocks[0].param_node.add_input(g.inputs[1])
    broken(g, "block params take no inputs", "prim::Loop(%n, %0, %1, %x)")


def test_value_node_pointer():
    g = parse_ir(LOOP_AND_IF)
    add, lt = nodes(g, "aten::add")[0], nodes(g, "aten::lt")[0]
    add.output.node = lt
    broken(g, "output 0 does not point back to its node", "aten::add")


# ---- prim::If

def test_if_condition_must_be_bool():
    g = parse_ir(LOOP_AND_IF)
    nodes(g, "prim::If")[0].replace_input(0, nodes(g, "aten::add")[0].output)
    broken(g, "prim::If condition must be bool, found int", "prim::If(%2)")


def test_if_needs_two_blocks():
    g = parse_ir(LOOP_AND_IF)
    if_node = nodes(g, "prim::If")[0]
    if_node.blocks.pop().destroy()
    broken(g, "prim::If needs 2 blocks (then, else), found 1")


def test_if_blocks_take_no_params():
    g = parse_ir(LOOP_AND_IF)
    nodes(g, "prim::If")[0].blocks[1].add_param(IntType, "k")
    broken(g, "prim::If block1 must not have params")


def test_if_block_output_count():
    g = parse_ir(LOOP_AND_IF.replace("          -> (%y.1)", "          -> (%y.1, %x)"))
    broken(g, "prim::If block1 has 2 outputs, expected 1", "%y.2 : Tensor = prim::If(%3)")


def test_if_block_output_type():
    g = parse_ir(LOOP_AND_IF.replace("          -> (%y.1)", "          -> (%n)"))
    broken(g, "prim::If block1 output 0 is int, expected a subtype of Tensor")


# ---- prim::Loop

def test_loop_trip_count_and_condition_types():
    g = parse_ir(LOOP_AND_IF)
    nodes(g, "prim::Loop")[0].replace_input(0, g.inputs[0])
    broken(g, "prim::Loop takes (int max_trip_count, bool cond, ...), found (Tensor, bool")


def test_loop_block_params():
    g = parse_ir(LOOP_AND_IF.replace("block0(%i : int, %acc.1 : int, %y.1 : Tensor)",
                                     "block0(%i : bool, %acc.1 : int, %y.1 : Tensor)"))
    broken(g, "prim::Loop block0 params must be (int, <2 carried>), found (bool, int, Tensor)")


def test_loop_body_condition_must_be_bool():
    g = parse_ir(LOOP_AND_IF.replace("-> (%0, %2, %y.2)", "-> (%2, %2, %y.2)"))
    broken(g, "prim::Loop block0 output 0 is int, expected a subtype of bool")


def test_loop_outputs_match_carried_values():
    g = parse_ir(LOOP_AND_IF)
    loop = nodes(g, "prim::Loop")[0]
    loop.add_output(IntType, "extra")
    broken(g, "prim::Loop has 2 carried values but 3 outputs")


def test_loop_carried_types():
    g = parse_ir(LOOP_AND_IF.replace("prim::Loop(%n, %0, %1, %x)", "prim::Loop(%n, %0, %x, %x)"))
    broken(g, "prim::Loop carried value 0: initial Tensor is not a int")
    g = parse_ir(LOOP_AND_IF.replace("%acc : int, %y : Tensor = prim::Loop",
                                     "%acc : str, %y : Tensor = prim::Loop"))
    broken(g, "prim::Loop carried value 0: block param int is not a str")


# ---- registry agreement

def test_unknown_kind_is_an_error_unless_allowed():
    text = ("graph(%x : Tensor):\n"
            "  %y : Tensor = prim::NotAnOp(%x)\n"
            "  return (%y)\n")
    broken(parse_ir(text), "unknown op kind prim::NotAnOp", "prim::NotAnOp(%x)")
    verify(parse_ir(text), allowed_kinds={"prim::NotAnOp"})
    verify(parse_ir(text), allow_unknown=True)


def test_arity_follows_the_signature():
    g = parse_ir("graph(%x : int):\n  %y : int = aten::add(%x, %x, %x)\n  return (%y)\n")
    broken(g, "aten::add takes 2 inputs (aten::add(a, b)), found 3")
    g = parse_ir("graph(%x : int):\n  %y : Tensor = prim::Loop(%x)\n"
                 "    block0(%i : int):\n      -> (%x)\n  return (%y)\n")
    broken(g, "prim::Loop takes at least 2 inputs")


def test_type_rule_rejects_the_inputs():
    g = parse_ir("graph(%s : str, %n : float):\n"
                 "  %y : str = aten::sub(%s, %n)\n"
                 "  return (%y)\n")
    broken(g, "the type rule of aten::sub rejects its inputs: unsupported operand types for -: "
              "'str' and 'float'", "%y : str = aten::sub(%s, %n)")


def test_declared_type_contradicts_the_type_rule():
    g = parse_ir("graph(%a : int, %b : int):\n"
                 "  %c : str = aten::add(%a, %b)\n"
                 "  return (%c)\n")
    broken(g, "output 0 is declared str but the type rule of aten::add gives int")


def test_output_count_follows_the_type_rule():
    g = parse_ir("graph(%a : int):\n"
                 "  %b : int = prim::Print(%a)\n"
                 "  return (%b)\n")
    broken(g, "prim::Print has 1 outputs, its type rule gives 0")


def test_only_control_flow_ops_have_blocks():
    g = parse_ir(LOOP_AND_IF)
    nodes(g, "prim::Print")[0].add_block()
    broken(g, "prim::Print is not a control-flow op but has blocks")


def test_error_shows_the_source_location():
    g = Graph()
    a = g.add_input(StrType, "a")
    source = "def f(a: str):\n    return a - 1\n"
    node = g.block.append(g.create("aten::sub", [a, a], [BoolType],
                                   source=SourceRange(source, "f.py", 26, 31)))
    g.block.add_output(node.output)
    message = broken(g, "rejects its inputs", 'File "f.py", line 2', "~~~~~ <--- HERE")
    assert message.index("%0 : bool = aten::sub(%a, %a)") < message.index("f.py")
