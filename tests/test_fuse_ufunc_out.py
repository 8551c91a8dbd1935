"""`ufunc::out_check` in fusion groups: a chain of ufunc calls with out= is one kernel.

The check is proven when the group is built, for the group's guarded types; these tests
show the chain fused (IR text), the guard covering what the check reads, the checks NumPy
refuses kept out, Python ints checked by value at run time, and the scripted calls
matching NumPy over calls whose dtypes change or whose out= NumPy refuses.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tsjit
from tests._differential import check
from tsjit.ir.parser import parse_ir
from tsjit.ir.types import TensorType
from tsjit.passes.elementwise_kernel import GroupError, build_group, read_call
from tsjit.testing.filecheck import FileCheck

F64 = "Tensor(dtype=float64, sizes=[*], ndarray=1)"
F64_2D = "Tensor(dtype=float64, sizes=[*, *], ndarray=1)"
I64 = "Tensor(dtype=int64, sizes=[*], ndarray=1)"
U8 = "Tensor(dtype=uint8, sizes=[*], ndarray=1)"


def relu_of_sum(a: tsjit.Tensor, b: tsjit.Tensor, c: tsjit.Tensor):
    np.add(a, b, out=c)
    np.multiply(c, 2.0, out=c)
    np.maximum(c, 0.0, out=c)
    return c


def axpy_into(a: tsjit.Tensor, x: float, c: tsjit.Tensor):
    return np.add(a * x, 1.0, out=c)


def scale_into(c: tsjit.Tensor, n: int):
    np.add(c, 1, out=c)
    np.multiply(c, n, out=c)
    return c


def sum_then_into(a: tsjit.Tensor, b: tsjit.Tensor, c: tsjit.Tensor, k: tsjit.Tensor):
    np.add(a, b, out=c)
    np.multiply(c, 2.0, out=k)
    return k


def _group_and_subgraph(text: str) -> tuple[str, str]:
    main, _, subgraphs = text.partition("with prim::FusionGroup_0")
    return main, subgraphs


def test_a_chain_of_out_calls_is_one_kernel_writing_into_out():
    a, b, c = np.linspace(-1, 1, 64), np.linspace(1, -3, 64), np.zeros(64)
    scripted = check(relu_of_sum, *[(a, b, c)] * 3)
    text = str(scripted.graph_for(a, b, c))
    main, group = _group_and_subgraph(text)
    FileCheck().check_count("prim::FusionGroup_", 1, exactly=True) \
        .run(main.replace("prim::FallbackGraph_", ""))
    FileCheck().check("prim::FusionGroup_0(%a, %b, %c)").check_not("numpy::") \
        .check("return (%c)").run(main)
    FileCheck().check("ufunc::call_out[ufunc=Py(numpy.add)](%c, %0, %a, %b)") \
        .check("ufunc::out_check[ufunc=Py(numpy.multiply)](%c,") \
        .check("ufunc::call_out[ufunc=Py(numpy.multiply)](%c, %0, %c,") \
        .check("ufunc::out_check[ufunc=Py(numpy.maximum)](%c,") \
        .check("ufunc::call_out[ufunc=Py(numpy.maximum)](%c, %0, %c,").check("return (%c)") \
        .run(group)
    launches = scripted.stats()["kernel_launches"]
    assert scripted(a, b, c) is c
    assert scripted.stats()["kernel_launches"] == launches + 1
    assert np.array_equal(c, np.maximum((a + b) * 2.0, 0.0))


def test_an_operand_computed_in_the_group_joins_its_out_call():
    a, c = np.linspace(-1, 1, 32), np.zeros(32)
    scripted = check(axpy_into, *[(a, 2.5, c)] * 3)
    text = str(scripted.graph_for(a, 2.5, c))
    main, group = _group_and_subgraph(text)
    FileCheck().check("prim::FusionGroup_0(%a, %x, %c)").check_not("ufunc::out_check") \
        .check_not("aten::mul").run(main)
    FileCheck().check("aten::mul(%a, %x)").check("ufunc::out_check[ufunc=Py(numpy.add)]") \
        .check("ufunc::call_out[ufunc=Py(numpy.add)](%c,").run(group)


VECTOR = np.linspace(-2.0, 3.0, 7)
F32 = np.float32


@pytest.mark.parametrize("fn, calls", [
    (relu_of_sum, [(VECTOR, VECTOR[::-1].copy(), np.zeros(7))] * 3 + [
        (VECTOR.astype(F32), VECTOR.astype(F32), np.zeros(7, F32))] * 2 + [  # guard fails
        (VECTOR[:3], VECTOR[3:6], np.zeros((2, 3))),          # out broadcasts the result
        (VECTOR, VECTOR, np.zeros(7, F32)),                   # float64 -> float32 out
        (VECTOR, VECTOR[:3], np.zeros(7)),                    # operands do not broadcast
        (VECTOR, VECTOR, np.zeros(7))]),
    (relu_of_sum, [(np.arange(7), np.arange(7), np.zeros(7, np.int64))] * 3),  # 2.0 * int out
    (relu_of_sum, [(VECTOR, VECTOR, np.zeros(7, np.int64))] * 3),          # the first call
    (axpy_into, [(VECTOR, 2.5, np.zeros(7))] * 3 + [(VECTOR, 2.5, np.zeros(7, np.int64))] * 2
     + [(VECTOR.astype(F32), -1.0, np.zeros(7, F32))] * 2 + [(VECTOR, 0.5, np.zeros(7))]),
    (scale_into, [(np.arange(7, dtype=np.uint8), 3)] * 3 + [
        (np.arange(7, dtype=np.uint8), 300)] * 2 + [             # OverflowError, c written
        (np.arange(7, dtype=np.uint8), 255), (np.arange(7.0), 10 ** 400),
        (np.arange(7, dtype=np.uint8), -1)]),
    (sum_then_into, [(VECTOR, VECTOR, np.zeros(7), np.zeros(7, np.int64))] * 3 + [
        (VECTOR, VECTOR, np.zeros(7), np.zeros(7))] * 2),
])
def test_out_calls_match_numpy(fn, calls):
    check(fn, *calls)


# ---------------------------------------------------------------- the group's proof

def _members(text: str) -> list:
    return [n for n in parse_ir(text).nodes() if read_call(n) is not None]


def _build(text: str):
    return build_group(_members(text), lambda v: True)


def test_the_guard_covers_what_only_the_check_reads():
    """%d (rank 2) and %x (a float) are read by the check alone: both are group inputs
    with their types (what the guard tests) but not kernel inputs."""
    fused = _build(f"""graph(%a : {F64}, %x : float, %d : {F64_2D}):
  %0 : NoneType = prim::Constant[value=None]()
  %1 : Tensor = aten::mul(%a, %a)
  ufunc::out_check[ufunc=Py(numpy.add)](%1, %x, %d, %0)
  return (%1)
""")
    a, x, d = fused.group_inputs
    assert fused.input_types[d] == TensorType("float64", (None, None), None, True)
    assert str(fused.input_types[x]) == "float"
    assert [f.value for f in fused.feeds] == [a]


@pytest.mark.parametrize("text, error", [
    # same_kind casting refuses float64 into int64
    (f"""graph(%a : {F64}, %c : {F64}, %k : {I64}):
  %0 : NoneType = prim::Constant[value=None]()
  %1 : Tensor = numpy::add(%a, %a, %0, %0)
  %2 : Any = prim::Slice(%0, %0, %0)
  aten::__setitem__(%c, %2, %1)
  ufunc::out_check[ufunc=Py(numpy.multiply)](%c, %a, %k, %0)
  return (%c)
""", "UFuncTypeError"),
    # %c keeps its rank 2 when written from rank-1 values: %a is too low a rank for out
    (f"""graph(%a : {F64}, %c : {F64_2D}):
  %0 : NoneType = prim::Constant[value=None]()
  %1 : Tensor = numpy::add(%a, %a, %0, %0)
  %2 : Any = prim::Slice(%0, %0, %0)
  aten::__setitem__(%c, %2, %1)
  ufunc::out_check[ufunc=Py(numpy.multiply)](%c, %a, %a, %0)
  return (%c)
""", "ValueError"),
    # NEP 50: a constant int out of uint8's range
    (f"""graph(%c : {U8}):
  %0 : NoneType = prim::Constant[value=None]()
  %1 : int = prim::Constant[value=300]()
  ufunc::out_check[ufunc=Py(numpy.add)](%c, %1, %c, %0)
  %2 : Tensor = numpy::add(%c, %1, %0, %0)
  return (%2)
""", "OverflowError"),
    # an int variable the group does not convert: nothing would check its value
    (f"""graph(%c : {U8}, %n : int):
  %0 : NoneType = prim::Constant[value=None]()
  %1 : Tensor = numpy::negative(%c, %0, %0)
  ufunc::out_check[ufunc=Py(numpy.add)](%1, %n, %c, %0)
  return (%1)
""", "nothing checks its range"),
    # a dtype= known only at run time
    (f"""graph(%a : {F64}, %c : {F64}, %t : Any):
  %0 : NoneType = prim::Constant[value=None]()
  %1 : Tensor = numpy::add(%a, %a, %0, %0)
  ufunc::out_check[ufunc=Py(numpy.add)](%1, %1, %c, %t)
  return (%1)
""", "dtype= that is not a constant"),
])
def test_a_check_the_types_do_not_prove_keeps_the_group_from_forming(text, error):
    with pytest.raises(GroupError, match=error):
        _build(text)


def test_an_int_the_check_reads_is_range_checked_with_its_conversion():
    fused = _build(f"""graph(%c : {U8}, %n : int):
  %0 : NoneType = prim::Constant[value=None]()
  ufunc::out_check[ufunc=Py(numpy.add)](%c, %n, %c, %0)
  %1 : Tensor = numpy::add(%c, %n, %0, %0)
  return (%1)
""")
    assert list(fused.range_checks.values()) == [(0, 255)]


def test_a_python_int_beyond_a_float_loop_runs_as_numpy_does():
    """The int is range-checked for float loops too: out of float32's range NumPy warns
    (and gives inf); the group sends the call to the interpreter, which warns too."""
    def affine(x: tsjit.Tensor, n: int):
        return x * n + 1.0

    scripted = tsjit.script(affine)
    x = np.ones(4, F32)
    for _ in range(3):
        scripted(x, 2)
    with pytest.warns(RuntimeWarning, match="overflow"):
        want = affine(x, 10 ** 39)
    with pytest.warns(RuntimeWarning, match="overflow"):
        got = scripted(x, 10 ** 39)
    assert np.array_equal(got, want) and got.dtype == want.dtype
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(scripted(x, 3 * 10 ** 38), affine(x, 3 * 10 ** 38))
    assert scripted.stats()["bailouts"] == 1
