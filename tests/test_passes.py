"""The canonical passes on IR text: every rewrite where it is sound, and none where it is
not (writes, prints and may-raise ops survive; no merging across mutation; no folding
into shared mutable values).  The verifier runs after every pass.
"""
from __future__ import annotations

import numpy as np
import pytest
from _pass_harness import F32, constants, count, run, run_original_and_optimized, same

from tsjit.interpreter import compile_graph
from tsjit.ir.graph import SourceRange
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

# ---------------------------------------------------------------- inlining

def script_function(text: str, resolve=None):
    """A stand-in for a compiled script function: its graph, callable through the interpreter."""
    graph = parse_ir(text, resolve)

    def compiled(*args):
        return compile_graph(graph)(*args)
    compiled.graph = graph
    return compiled


ADD_ONE = """graph(%a : int):
  %one : int = prim::Constant[value=1]()
  %r : int = aten::add(%a, %one)
  return (%r)
"""


def test_inline_replaces_each_call_by_a_copy_of_the_callee():
    add_one = script_function(ADD_ONE)
    source = SourceRange("return a + 1", "helpers.py", 7, 12, first_line=3)
    next(n for n in add_one.graph.nodes() if n.kind == "aten::add").source = source
    graph = run("""graph(%n : int):
  %x : int = prim::CallFunction[fn=Py(helpers.add_one)](%n)
  %y : int = prim::CallFunction[fn=Py(helpers.add_one)](%x)
  return (%y)
""", inline_calls, resolve={"helpers.add_one": add_one}.get)
    FileCheck().check_not("prim::CallFunction").check("aten::add(%n, ") \
        .check("aten::add(%r, ").check("return (%r.1)").run(graph)
    adds = [n for n in graph.nodes() if n.kind == "aten::add"]
    assert [n.source for n in adds] == [source, source]
    assert count(add_one.graph, "aten::add") == 1       # the callee itself is untouched


def test_inline_is_recursive_and_keeps_calls_without_a_graph():
    twice = script_function("""graph(%a : int):
  %b : int = prim::CallFunction[fn=Py(helpers.add_one)](%a)
  %c : int = prim::CallFunction[fn=Py(helpers.add_one)](%b)
  return (%c)
""", {"helpers.add_one": script_function(ADD_ONE)}.get)

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


# ---------------------------------------------------------------- dead code elimination

def test_dce_removes_unused_pure_nodes_and_keeps_effects():
    graph = run("""graph(%x : Tensor, %l : List[int], %n : int):
  %0 : int = prim::Constant[value=0]()
  %unused_eq : bool = aten::eq(%n, %0)
  %unused_tuple : Tuple[int, int] = prim::TupleConstruct(%n, %n)
  %unused_list : List[int] = prim::ListConstruct(%n)
  %may_raise : int = aten::floordiv(%n, %0)
  %get : Tensor = aten::__getitem__(%x, %n)
  aten::__setitem__(%l, %0, %n)
  list::append(%l, %n)
  %x2 : Tensor = aten::iadd(%x, %n)
  prim::Print(%n)
  return (%n)
""", eliminate_dead_code)
    FileCheck().check_not("aten::eq").check_not("prim::TupleConstruct") \
        .check_not("prim::ListConstruct").check("aten::floordiv").check("aten::__getitem__") \
        .check("aten::__setitem__").check("list::append").check("aten::iadd") \
        .check("prim::Print").run(graph)


def test_dce_keeps_nodes_of_unknown_kinds():
    graph = parse_ir("""graph(%n : int):
  %u : int = prim::Unregistered(%n)
  return (%n)
""")
    eliminate_dead_code(graph)
    verify(graph, allow_unknown=True)
    FileCheck().check("prim::Unregistered(%n)").run(graph)


def test_dce_prunes_if_outputs_and_removes_ifs_without_effects():
    graph = run("""graph(%c : bool, %n : int):
  %a : int, %b : bool = prim::If(%c)
    block0():
      %e1 : bool = aten::eq(%n, %n)
      prim::Print(%n)
      -> (%n, %e1)
    block1():
      %e2 : bool = aten::ne(%n, %n)
      -> (%n, %e2)
  %p : bool = prim::If(%c)
    block0():
      %e3 : bool = aten::eq(%n, %n)
      -> (%e3)
    block1():
      -> (%c)
  return (%a)
""", eliminate_dead_code)
    # the first If keeps its print and its used output; the second is gone
    FileCheck().check("%a : int = prim::If(%c)").check_next("block0():") \
        .check_next("prim::Print(%n)").check_next("-> (%n)").check_next("block1():") \
        .check_next("-> (%n)").check_next("return (%a)").run(graph)


LOOP = """graph(%n : int, %l : List[int]):
  %true : bool = prim::Constant[value=1]()
  %0 : int = prim::Constant[value=0]()
  %s : int, %t : int, %u : int = prim::Loop(%n, %true, %0, %0, %0)
    block0(%i : int, %s.1 : int, %t.1 : int, %u.1 : int):
      %s.2 : int = aten::add(%s.1, %i)
      %pair : Tuple[int, int] = prim::TupleConstruct(%t.1, %i)
      %t.2 : int = prim::unchecked_cast(%t.1)
      {use_u}
      -> (%true, %s.2, %t.2, %u.1)
  return ({result})
"""


def test_dce_removes_loop_carried_values_that_only_feed_themselves():
    graph = run(LOOP.format(use_u="", result="%s"), eliminate_dead_code)
    # %t only computes itself and %u only passes itself on: both carried values go
    FileCheck().check("%s : int = prim::Loop(%n, %true, %0)") \
        .check("block0(%i : int, %s.1 : int)").check("aten::add(%s.1, %i)") \
        .check_not("prim::TupleConstruct").check_not("unchecked_cast") \
        .check("-> (%true, %s.2)").run(graph)


def test_dce_keeps_loop_carried_values_used_after_or_by_effects():
    graph = run(LOOP.format(use_u="list::append(%l, %u.1)", result="%t"), eliminate_dead_code)
    # %t is used after the loop and %u by a write inside it; %s only feeds itself through
    # an int addition, which cannot raise, so it goes
    FileCheck().check("prim::Loop(%n, %true, %0, %0)").check_not("aten::add") \
        .check_not("prim::TupleConstruct").check("prim::unchecked_cast(%t.1)") \
        .check("list::append(%l, %u.1)").run(graph)


def test_dce_removes_whole_loops_without_effects():
    graph = run("""graph(%n : int):
  %true : bool = prim::Constant[value=1]()
  %0 : int = prim::Constant[value=0]()
  %s : int = prim::Loop(%n, %true, %0)
    block0(%i : int, %s.1 : int):
      %e : bool = aten::eq(%s.1, %i)
      %k : int = prim::unchecked_cast(%i)
      -> (%e, %k)
  return (%n)
""", eliminate_dead_code)
    assert [n.kind for n in graph.nodes()] == []


def test_dce_handles_long_dependency_chains():
    lines = ["graph(%n : int):", "  %v0 : bool = aten::eq(%n, %n)"]
    lines += [f"  %v{i} : bool = aten::eq(%v{i - 1}, %v{i - 1})" for i in range(1, 5000)]
    graph = run("\n".join(lines + ["  return (%v4999)", ""]), eliminate_dead_code)
    assert count(graph, "aten::eq") == 5000
    graph = run("\n".join(lines + ["  return (%n)", ""]), eliminate_dead_code)
    assert count(graph, "aten::eq") == 0


# ---------------------------------------------------------------- common subexpressions

def test_cse_merges_pure_and_may_raise_nodes_and_equal_constants():
    graph = run("""graph(%a : int, %b : int):
  %e1 : bool = aten::eq(%a, %b)
  %e2 : bool = aten::eq(%a, %b)
  %d1 : int = aten::floordiv(%a, %b)
  %d2 : int = aten::floordiv(%a, %b)
  %d3 : int = aten::floordiv(%b, %a)
  %k1 : int = prim::Constant[value=7]()
  %k2 : int = prim::Constant[value=7]()
  return (%e1, %e2, %d1, %d2, %d3, %k1, %k2)
""", eliminate_common_subexpressions)
    FileCheck().check_count("aten::eq", 1, exactly=True).check_count("aten::floordiv", 2) \
        .check_count("prim::Constant", 1, exactly=True) \
        .check("return (%e1, %e1, %d1, %d1, %d3, %k1, %k1)").run(graph)


def test_cse_tells_constants_apart_by_type_and_bits():
    graph = run("""graph():
  %a : int = prim::Constant[value=1]()
  %b : bool = prim::Constant[value=True]()
  %c : float = prim::Constant[value=0.0]()
  %d : float = prim::Constant[value=-0.0]()
  %e : float = prim::Constant[value=1.0]()
  %f : NoneType = prim::Constant[value=None]()
  %g : int? = prim::Constant[value=None]()
  return (%a, %b, %c, %d, %e, %f, %g)
""", eliminate_common_subexpressions)
    assert count(graph, "prim::Constant") == 7


def test_cse_reuses_a_dominating_node_but_not_a_sibling_branch():
    graph = run("""graph(%c : bool, %a : int):
  %e1 : bool = aten::eq(%a, %a)
  %r : bool, %s : bool = prim::If(%c)
    block0():
      %e2 : bool = aten::eq(%a, %a)
      %n1 : bool = aten::ne(%a, %a)
      -> (%e2, %n1)
    block1():
      %n2 : bool = aten::ne(%a, %a)
      -> (%e1, %n2)
  %t : Tuple[bool, bool] = prim::TupleConstruct(%r, %s)
  return (%t)
""", eliminate_common_subexpressions)
    FileCheck().check_count("aten::eq", 1, exactly=True).check("-> (%e1, %n1)") \
        .check("aten::ne").check("-> (%e1, %n2)").run(graph)


MUTATION = """graph(%x : Tensor, %l : List[int], %n : int):
  %one : int = prim::Constant[value=1]()
  %a : bool = aten::__contains__(%x, %n)
  %p : int = aten::len(%l)
  {write}
  %b : bool = aten::__contains__(%x, %n)
  %q : int = aten::len(%l)
  %s : int = aten::add(%n, %one)
  %u : int = aten::add(%n, %one)
  %t : Tuple[bool, bool, int, int, int, int] = prim::TupleConstruct(%a, %b, %p, %q, %s, %u)
  return (%t)
"""


@pytest.mark.parametrize("write", [
    "%x.1 : Tensor = aten::iadd(%x, %one)",
    "list::append(%l, %n)",
    "prim::Print(%n)",
    """%r : int = prim::If(%a)
    block0():
      aten::__setitem__(%l, %one, %n)
      -> (%n)
    block1():
      -> (%one)""",
])
def test_cse_does_not_merge_reads_of_mutable_values_across_a_write(write):
    graph = run(MUTATION.format(write=write), eliminate_common_subexpressions)
    # reads of the array and the list are repeated after the write; int arithmetic merges
    kinds = ("aten::__contains__", "aten::len", "aten::add")
    assert [count(graph, kind) for kind in kinds] == [2, 2, 1]
    graph = run(MUTATION.format(write=""), eliminate_common_subexpressions)
    assert [count(graph, kind) for kind in kinds] == [1, 1, 1]


def test_cse_does_not_merge_into_a_loop_body_that_writes():
    template = """graph(%n : int, %l : List[int]):
  %true : bool = prim::Constant[value=1]()
  %p : int = aten::len(%l)
  %r : int = prim::Loop(%n, %true, %p)
    block0(%i : int, %acc : int):
      %q : int = aten::len(%l)
      {write}
      -> (%true, %q)
  %t : Tuple[int, int] = prim::TupleConstruct(%p, %r)
  return (%t)
"""
    # the append of an earlier iteration runs between the len before the loop and this one
    graph = run(template.format(write="list::append(%l, %i)"), eliminate_common_subexpressions)
    assert count(graph, "aten::len") == 2
    graph = run(template.format(write=""), eliminate_common_subexpressions)
    assert count(graph, "aten::len") == 1


def test_cse_shares_fresh_arrays_only_when_no_one_can_tell():
    # of int64 arrays, whose products report no floating-point error
    template = """graph(%x : Tensor(dtype=int64, sizes=[*], ndarray=1)):
  %a : Tensor(dtype=int64, sizes=[*], ndarray=1) = aten::mul(%x, %x)
  %b : Tensor(dtype=int64, sizes=[*], ndarray=1) = aten::mul(%x, %x)
  {extra}
  %r : Tensor(dtype=int64, sizes=[*], ndarray=1) = aten::add(%a, %b)
  return ({result})
"""
    graph = run(template.format(extra="", result="%r"), eliminate_common_subexpressions)
    FileCheck().check_count("aten::mul", 1, exactly=True).check("aten::add(%a, %a)").run(graph)
    for extra, result in [
        ("", "%b"),                                              # returned: the caller sees it
        ("%one : int = prim::Constant[value=1]()\n  %c : Tensor = aten::iadd(%a, %one)", "%r"),
        ("%same : bool = aten::__is__(%a, %b)", "%r"),            # identity observed
        ("%l : List[Tensor] = prim::ListConstruct(%b)", "%r"),    # kept in a list
    ]:
        graph = run(template.format(extra=extra, result=result), eliminate_common_subexpressions)
        assert count(graph, "aten::mul") == 2, extra


def test_cse_keeps_each_op_that_may_report_a_floating_point_error():
    """np.sqrt(x) twice warns twice under np.errstate's "warn" (or calls its handler
    twice); of an array of unknown dtype, it may."""
    for dtype in ("float64", None):
        t = "Tensor" if dtype is None else f"Tensor(dtype={dtype}, sizes=[*], ndarray=1)"
        graph = run(f"""graph(%x : {t}):
  %n : NoneType = prim::Constant()
  %a : Tensor = numpy::sqrt(%x, %n, %n)
  %b : Tensor = numpy::sqrt(%x, %n, %n)
  %r : Tensor = aten::add(%a, %b)
  return (%r)
""", eliminate_common_subexpressions)
        assert count(graph, "numpy::sqrt") == 2, dtype


def test_cse_never_merges_effects():
    graph = run("""graph(%l : List[int], %n : int):
  prim::Print(%n)
  prim::Print(%n)
  list::append(%l, %n)
  list::append(%l, %n)
  %a : List[int] = prim::ListConstruct(%n)
  %b : List[int] = prim::ListConstruct(%n)
  %t : Tuple[List[int], List[int]] = prim::TupleConstruct(%a, %b)
  return (%t)
""", eliminate_common_subexpressions)
    FileCheck().check_count("prim::Print", 2).check_count("list::append", 2) \
        .check_count("prim::ListConstruct", 2).run(graph)


# ---------------------------------------------------------------- the pipeline

SQUARE = script_function(f"""graph(%a : {F32}):
  %two : int = prim::Constant[value=2]()
  %r : {F32} = aten::pow(%a, %two)
  return (%r)
""")

PIPELINE = f"""graph(%x : {F32}):
  %debug : bool = prim::Constant[value=False]()
  %unused : int = prim::If(%debug)
    block0():
      prim::Print(%x)
      %k : int = prim::Constant[value=1]()
      -> (%k)
    block1():
      %k.1 : int = prim::Constant[value=2]()
      -> (%k.1)
  %a : {F32} = prim::CallFunction[fn=Py(helpers.square)](%x)
  %b : {F32} = prim::CallFunction[fn=Py(helpers.square)](%x)
  %s : {F32} = aten::add(%a, %b)
  return (%s)
"""


def test_passes_are_named():
    canonical = {
        "inline_calls": inline_calls,
        "constant_propagation": propagate_constants,
        "peephole": peephole,
        "common_subexpression_elimination": eliminate_common_subexpressions,
        "dead_code_elimination": eliminate_dead_code,
    }
    assert {name: PASSES[name] for name in canonical} == canonical
    assert all(fn.__name__ != "<lambda>" and callable(fn) for fn in PASSES.values())


def test_canonical_passes_simplify_to_a_fixed_point():
    graph = run(PIPELINE, run_canonical_passes, resolve={"helpers.square": SQUARE}.get)
    # the two inlined squares stay two: each may warn (overflow), as the calls do eagerly
    assert str(graph) == f"""graph(%x : {F32}):
  %r : {F32} = aten::mul(%x, %x)
  %r.1 : {F32} = aten::mul(%x, %x)
  %s : {F32} = aten::add(%r, %r.1)
  return (%s)
"""
    run_canonical_passes(graph)                     # a fixed point: nothing left to do
    verify(graph)
    assert str(graph).count("\n") == 5


# ---------------------------------------------------------------- semantics


def mutation_inputs():
    return [np.array([0.0, 1.5, 3.0]), [4, 5], 1]


@pytest.mark.parametrize("text, make_inputs", [
    *[pytest.param(MUTATION.format(write=write), mutation_inputs, id=f"mutation-{name}")
      for name, write in [("iadd", "%x.1 : Tensor = aten::iadd(%x, %one)"),
                          ("append", "list::append(%l, %n)"), ("none", "")]],
    pytest.param(IF_ON_CONSTANT.replace("{cond}", "True"), lambda: [7], id="if-true"),
    pytest.param(IF_ON_CONSTANT.replace("{cond}", "False"), lambda: [7], id="if-false"),
    pytest.param(LOOP.format(use_u="list::append(%l, %u.1)", result="%t"), lambda: [5, [1]],
                 id="loop-carried-kept"),
    pytest.param(LOOP.format(use_u="", result="%s"), lambda: [5, [1]], id="loop-carried-dead"),
    pytest.param("""graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mul(%x, %x)
  %b : Tensor = aten::mul(%x, %x)
  %a.1 : Tensor = aten::iadd(%a, %one)
  %r : Tensor = aten::add(%a, %b)
  return (%r)
""", lambda: [np.array([1.0, 2.0])], id="fresh-array-written"),
    pytest.param(PIPELINE, lambda: [np.array([-2.5, 0.0, np.inf], dtype=np.float32)],
                 id="inline-fold-square"),
])
def test_optimized_graphs_behave_as_the_original(text, make_inputs):
    (expected, expected_inputs), (actual, actual_inputs) = run_original_and_optimized(
        text, make_inputs, {"helpers.square": SQUARE}.get)
    assert same(actual, expected)
    assert same(actual_inputs, expected_inputs)
