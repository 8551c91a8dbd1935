"""The canonical passes on IR text: every rewrite where it is sound, and none where it is
not (writes, prints and may-raise ops survive; no merging across mutation; no folding
into shared mutable values).  The verifier runs after every pass.
"""
from __future__ import annotations

import numpy as np
import pytest

from tsjit.ir.graph import Graph, SourceRange
from tsjit.ir.parser import parse_ir
from tsjit.ir.verifier import verify
from tsjit.passes import (
    PASSES,
    eliminate_common_subexpressions,
    eliminate_dead_code,
    inline_calls,
    peephole,
    propagate_constants,
    run_canonical_passes,
)
from tsjit.testing.filecheck import FileCheck


def run(text: str, *passes, resolve=None) -> Graph:
    """Parse `text`, then apply `passes` in order, verifying the graph before and after each."""
    graph = parse_ir(text, resolve)
    verify(graph)
    for apply in passes:
        apply(graph)
        verify(graph)
    return graph


def constants(graph: Graph) -> list[object]:
    return [n.attrs["value"] for n in graph.nodes() if n.kind == "prim::Constant"]


def count(graph: Graph, kind: str) -> int:
    return sum(n.kind == kind for n in graph.nodes())


# ---------------------------------------------------------------- inlining

def script_function(text: str, resolve=None):
    """A stand-in for a compiled script function: inlining only needs its `.graph`."""
    def compiled(*args):
        raise AssertionError("an inlined function is never called")
    compiled.graph = parse_ir(text, resolve)
    return compiled


ADD_ONE = script_function("""graph(%a : int):
  %one : int = prim::Constant[value=1]()
  %r : int = aten::add(%a, %one)
  return (%r)
""")


def test_inline_replaces_each_call_by_a_copy_of_the_callee():
    source = SourceRange("return a + 1", "helpers.py", 7, 12, first_line=3)
    next(n for n in ADD_ONE.graph.nodes() if n.kind == "aten::add").source = source
    graph = run("""graph(%n : int):
  %x : int = prim::CallFunction[fn=Py(helpers.add_one)](%n)
  %y : int = prim::CallFunction[fn=Py(helpers.add_one)](%x)
  return (%y)
""", inline_calls, resolve={"helpers.add_one": ADD_ONE}.get)
    FileCheck().check_not("prim::CallFunction").check("aten::add(%n, ") \
        .check("aten::add(%r, ").check("return (%r.1)").run(graph)
    adds = [n for n in graph.nodes() if n.kind == "aten::add"]
    assert [n.source for n in adds] == [source, source]
    assert count(ADD_ONE.graph, "aten::add") == 1       # the callee itself is untouched


def test_inline_is_recursive_and_keeps_calls_without_a_graph():
    twice = script_function("""graph(%a : int):
  %b : int = prim::CallFunction[fn=Py(helpers.add_one)](%a)
  %c : int = prim::CallFunction[fn=Py(helpers.add_one)](%b)
  return (%c)
""", {"helpers.add_one": ADD_ONE}.get)

    def ignored(a):
        return a

    names = {"helpers.twice": twice, "helpers.ignored": ignored}
    graph = run("""graph(%n : int):
  %x : int = prim::CallFunction[fn=Py(helpers.twice)](%n)
  %y : int = prim::PythonOp[fn=Py(helpers.ignored)](%x)
  %z : int = prim::CallFunction[fn=Py(helpers.ignored)](%y)
  return (%z)
""", inline_calls, resolve=names.get)
    FileCheck().check_count("aten::add", 2, exactly=True).check("prim::PythonOp") \
        .check("prim::CallFunction").run(graph)


def test_inline_methods_and_calls_inside_blocks():
    class Counter:
        pass
    method = script_function("""graph(%self : __tsjit__.test_passes.Counter, %k : int):
  %v : int = prim::GetAttr[name="count"](%self)
  %r : int = aten::add(%v, %k)
  return (%r)
""", {"test_passes.Counter": Counter}.get)
    names = {"test_passes.Counter": Counter, "helpers.bump": method}
    graph = run("""graph(%c : __tsjit__.test_passes.Counter, %flag : bool):
  %one : int = prim::Constant[value=1]()
  %r : int = prim::If(%flag)
    block0():
      %x : int = prim::CallMethod[fn=Py(helpers.bump)](%c, %one)
      -> (%x)
    block1():
      -> (%one)
  return (%r)
""", inline_calls, resolve=names.get)
    FileCheck().check("block0").check('prim::GetAttr[name="count"](%c)') \
        .check("aten::add(%v, %one)").check("-> (%r.1)").check_not("prim::CallMethod") \
        .run(graph)


def test_inline_leaves_a_recursive_call_in_place():
    def f(a):
        raise AssertionError("an inlined function is never called")
    names = {"helpers.f": f}
    text = """graph(%a : int):
  %b : int = prim::CallFunction[fn=Py(helpers.f)](%a)
  %one : int = prim::Constant[value=1]()
  %c : int = aten::add(%b, %one)
  return (%c)
"""
    f.graph = parse_ir(text, names.get)
    graph = run(text, inline_calls, resolve=names.get)
    # the body was inlined once; inside it, the call of f itself stays a call
    assert count(graph, "prim::CallFunction") == 1
    assert count(graph, "aten::add") == 2


# ---------------------------------------------------------------- constant propagation

def test_fold_arithmetic_through_the_op_templates():
    graph = run("""graph(%n : int):
  %2 : int = prim::Constant[value=2]()
  %3 : int = prim::Constant[value=3]()
  %s : str = prim::Constant[value="ab"]()
  %a : int = aten::add(%2, %3)
  %b : int = aten::floordiv(%a, %2)
  %c : float = aten::truediv(%a, %2)
  %d : str = aten::mul(%s, %3)
  %e : bool = aten::lt(%b, %a)
  %t : Tuple[int, float, str, bool] = prim::TupleConstruct(%b, %c, %d, %e)
  %x : int, %y : float, %z : str, %w : bool = prim::TupleUnpack(%t)
  %r : int = aten::add(%x, %n)
  return (%r)
""", propagate_constants, eliminate_dead_code)
    assert constants(graph) == [2]
    FileCheck().check("prim::Constant[value=2]").check("aten::add(%x, %n)").run(graph)
    graph = run("""graph():
  %2 : int = prim::Constant[value=2]()
  %3 : int = prim::Constant[value=3]()
  %s : str = prim::Constant[value="ab"]()
  %c : float = aten::truediv(%3, %2)
  %d : str = aten::mul(%s, %3)
  %t : Tuple[float, str] = prim::TupleConstruct(%c, %d)
  return (%t)
""", propagate_constants, eliminate_dead_code)
    assert constants(graph) == [(1.5, "ababab")]


def test_fold_keeps_numpy_scalar_types_and_float_bits():
    graph = run("""graph():
  %h : Tensor = prim::Constant[value=float32(1.5)]()
  %two : float = prim::Constant[value=2.0]()
  %z : float = prim::Constant[value=-0.0]()
  %p : Tensor = aten::mul(%h, %two)
  %n : float = aten::neg(%z)
  %m : float = aten::mul(%z, %two)
  %t : Tuple[float, float] = prim::TupleConstruct(%n, %m)
  %r : Tuple[Tensor, Tuple[float, float]] = prim::TupleConstruct(%p, %t)
  return (%r)
""", propagate_constants, eliminate_dead_code)
    scalar, pair = constants(graph)
    assert type(scalar) is np.float32 and scalar == 3.0
    assert [np.copysign(1.0, v) for v in pair] == [1.0, -1.0]
    # a tuple typed as holding a Tensor is left alone: only elementwise ops are
    # evaluated on their way to a Tensor-typed value (np.zeros(n) would allocate)
    FileCheck().check("prim::TupleConstruct(%p, %t)").run(graph)


def test_no_fold_of_ops_that_raise_or_warn():
    graph = run("""graph():
  %0 : int = prim::Constant[value=0]()
  %1 : int = prim::Constant[value=1]()
  %big : Tensor = prim::Constant[value=float32(3e+38)]()
  %ten : float = prim::Constant[value=10.0]()
  %q : int = aten::floordiv(%1, %0)
  %o : Tensor = aten::mul(%big, %ten)
  %t : Tuple[int, Tensor] = prim::TupleConstruct(%q, %o)
  return (%t)
""", propagate_constants)
    # 1 // 0 raises ZeroDivisionError and float32 overflow warns: both are left to run time
    FileCheck().check("aten::floordiv").check("aten::mul").check("prim::TupleConstruct").run(graph)


def test_no_fold_of_mutable_or_huge_results_or_writes():
    graph = run("""graph():
  %1 : int = prim::Constant[value=1]()
  %2 : int = prim::Constant[value=2]()
  %big : int = prim::Constant[value=100000]()
  %s : str = prim::Constant[value="ab"]()
  %l : List[int] = prim::ListConstruct(%1, %2)
  %p : int = aten::pow(%2, %big)
  %r : str = aten::mul(%s, %big)
  %i : int = aten::iadd(%1, %2)
  %small : int = aten::pow(%2, %2)
  %t : Tuple[List[int], int, str, int, int] = prim::TupleConstruct(%l, %p, %r, %i, %small)
  return (%t)
""", propagate_constants)
    # a list is a fresh object each time; 2 ** 100000 and "ab" * 100000 are too big to
    # be worth a constant; an in-place op is a write even on ints
    FileCheck().check("prim::ListConstruct").check("aten::pow").check("aten::mul") \
        .check("aten::iadd").check_not("aten::pow").run(graph)
    assert 4 in constants(graph)


IF_ON_CONSTANT = """graph(%x : int):
  %c : bool = prim::Constant[value={cond}]()
  %r : int, %s : int = prim::If(%c)
    block0():
      %a : int = aten::mul(%x, %x)
      -> (%a, %x)
    block1():
      %b : int = aten::neg(%x)
      -> (%x, %b)
  %t : int = aten::sub(%r, %s)
  return (%t)
"""


@pytest.mark.parametrize("cond, check", [
    ("True", FileCheck().check("%a : int = aten::mul(%x, %x)").check("aten::sub(%a, %x)")),
    ("False", FileCheck().check("%b : int = aten::neg(%x)").check("aten::sub(%x, %b)")),
])
def test_if_on_a_constant_condition_is_replaced_by_the_taken_branch(cond, check):
    graph = run(IF_ON_CONSTANT.replace("{cond}", cond), propagate_constants)
    assert count(graph, "prim::If") == 0
    check.run(graph)


def test_loops_that_never_run_are_replaced_by_their_initial_values():
    template = """graph(%n : int):
  %zero : int = prim::Constant[value=0]()
  %trips : int = prim::Constant[value={trips}]()
  %go : bool = prim::Constant[value={go}]()
  %acc : int = prim::Loop(%trips, %go, %zero)
    block0(%i : int, %a : int):
      %next : int = aten::add(%a, %i)
      -> (%go, %next)
  return (%acc)
"""
    for trips, go, removed in [(0, True, True), (-3, True, True), (5, False, True),
                               (5, True, False)]:
        graph = run(template.replace("{trips}", str(trips)).replace("{go}", str(go)),
                    propagate_constants)
        assert (count(graph, "prim::Loop") == 0) == removed
        if removed:
            FileCheck().check("return (%zero)").run(graph)


@pytest.mark.parametrize("type_, op, folded", [
    ("int", "aten::__is__", False),
    ("int", "aten::__isnot__", True),
    ("Tensor", "aten::__is__", False),
    ("NoneType", "aten::__is__", True),
    ("NoneType", "aten::__isnot__", False),
    ("int?", "aten::__is__", None),
    ("Any", "aten::__is__", None),
    ("Union[int, str]", "aten::__is__", False),
])
def test_identity_tests_against_none_are_decided_by_type(type_, op, folded):
    graph = run(f"""graph(%x : {type_}):
  %none : NoneType = prim::Constant[value=None]()
  %r : bool = {op}(%x, %none)
  return (%r)
""", propagate_constants, eliminate_dead_code)
    if folded is None:
        FileCheck().check(op).run(graph)
    else:
        assert constants(graph) == [folded]
