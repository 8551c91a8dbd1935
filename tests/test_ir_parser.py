"""The IR text parser: print -> parse -> print is the identity, and bad text is
reported with its line and column."""
from __future__ import annotations

import enum
import math
import typing

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsjit.ir import Graph, print_graph
from tsjit.ir.parser import IRParseError, parse_ir, parse_type
from tsjit.ir.printer import format_attr
from tsjit.ir.types import (
    TENSOR,
    AnyType,
    BoolType,
    ClassType,
    DictType,
    DTypeType,
    EnumType,
    FloatType,
    IntType,
    ListType,
    NoneType,
    NoReturnType,
    OptionalType,
    StrType,
    TensorType,
    TupleType,
    UninitializedType,
    UnionType,
    VarTupleType,
    qualified_name,
)


class Point:
    def __init__(self, x: int, y: float):
        self.x = x
        self.y = y


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Pair(typing.NamedTuple):
    x: int
    y: float


class Nothing(typing.NamedTuple):
    pass


class Unregistered:
    pass


def helper(a: int) -> int:
    return a


POINT = ClassType.for_class(Point)
PAIR = TupleType((IntType, FloatType), ("x", "y"), Pair)
MOD = __name__


def round_trip(text: str) -> Graph:
    graph = parse_ir(text)
    assert print_graph(graph) == text
    return graph


def constant_graph(*attrs: str) -> str:
    lines = [f"  %{i} : Any = prim::Constant[value={a}]()" for i, a in enumerate(attrs)]
    return "graph():\n" + "\n".join(lines) + f"\n  return (%{len(attrs) - 1})\n"


def constant_values(graph: Graph) -> list[object]:
    return [n.attrs["value"] for n in graph.nodes()]


# ---- whole graphs

def test_straight_line_graph_with_names_and_numbers():
    g = round_trip(
        "graph(%x : Tensor,\n"
        "      %n : int):\n"
        "  %0 : int = prim::Constant[value=1]()\n"
        "  %y : Tensor = aten::add(%x, %0)\n"
        "  %y.1 : Tensor = aten::mul(%y, %n)\n"
        "  %y.2 : Tensor = aten::mul(%y.1, %y)\n"
        "  return (%y.2)\n")
    assert [v.name for v in g.inputs] == ["x", "n"]
    add, mul, mul2 = list(g.nodes())[1:]
    assert add.outputs[0].name == mul.outputs[0].name == mul2.outputs[0].name == "y"
    assert list(g.nodes())[0].outputs[0].name is None
    assert mul2.inputs == [mul.output, add.output]
    assert [u for u, _ in add.output.uses] == [mul, mul2]
    assert g.outputs == [mul2.output]


def test_nested_if_and_loop_with_multi_output_and_no_output_nodes():
    g = round_trip(
        "graph(%x : Tensor,\n"
        "      %c : bool):\n"
        "  %0 : int = prim::Constant[value=9223372036854775807]()\n"
        "  %1 : bool = prim::Constant[value=True]()\n"
        "  %total : int, %x.1 : Tensor = prim::Loop(%0, %c, %0, %x)\n"
        "    block0(%i : int, %acc : int, %x.2 : Tensor):\n"
        "      %2 : int = aten::add(%acc, %i)\n"
        "      %x.3 : Tensor = prim::If(%c)\n"
        "        block0():\n"
        "          %x.4 : Tensor = aten::mul(%x.2, %x.2)\n"
        "          prim::Print(%x.4, %2)\n"
        "          -> (%x.4)\n"
        "        block1():\n"
        "          -> (%x.2)\n"
        "      -> (%1, %2, %x.3)\n"
        "  %3 : Tuple[int, Tensor] = prim::TupleConstruct(%total, %x.1)\n"
        "  return (%3)\n")
    loop = next(n for n in g.nodes() if n.kind == "prim::Loop")
    body = loop.blocks[0]
    assert [p.name for p in body.params] == ["i", "acc", "x"]
    assert len(loop.outputs) == 2 and body.owner is loop and body.graph is g
    if_node = next(n for n in body.nodes if n.kind == "prim::If")
    assert if_node.block is body and len(if_node.blocks) == 2
    then_print = if_node.blocks[0].nodes[1]
    assert then_print.kind == "prim::Print" and then_print.outputs == []
    assert if_node.blocks[1].outputs == [body.params[2]]


def test_graph_without_inputs_or_outputs_and_empty_blocks():
    g = round_trip(
        "graph():\n"
        "  %0 : bool = prim::Constant[value=False]()\n"
        "  prim::If(%0)\n"
        "    block0():\n"
        "      -> ()\n"
        "    block1():\n"
        "      -> ()\n"
        "  return ()\n")
    assert g.inputs == [] and g.outputs == []


def test_source_comments_are_ignored():
    text = ("graph(%x : Tensor):\n"
            "  %y : Tensor = aten::neg(%x)  # /src/model.py:3:8\n"
            "  return (%y)  # trailing\n")
    assert print_graph(parse_ir(text)) == text.replace("  # /src/model.py:3:8", "").replace(
        "  # trailing", "")


def test_graph_built_with_the_api_round_trips():
    """Printing names repeated source names x, x.1, x.2 and unnamed values 0, 1."""
    g = Graph()
    x = g.add_input(TENSOR, "x")
    v = x
    for _ in range(3):
        n = g.block.append(g.create("aten::mul", [v, v], [TENSOR]))
        n.output.name = "x"
        v = n.output
    const = g.block.append(g.create("prim::Constant", [], [IntType], {"value": 2}))
    tup = g.block.append(g.create("prim::TupleConstruct", [v, const.output],
                                  [TupleType((TENSOR, IntType))]))
    g.block.add_output(tup.output)
    text = print_graph(g)
    assert "%x.2 : Tensor = aten::mul(%x.1, %x.1)" in text
    assert print_graph(parse_ir(text)) == text
    assert print_graph(parse_ir(print_graph(g.copy()))) == text


# ---- attribute values

def test_scalar_constants():
    text = constant_graph("0", "-7", "123456789012345678901234567890", "2.5", "-0.0", "1e-07",
                          "1e+300", "inf", "-inf", "nan", "True", "False", "None")
    values = constant_values(round_trip(text))
    assert values[:9] == [0, -7, 123456789012345678901234567890, 2.5, -0.0, 1e-07, 1e300,
                          math.inf, -math.inf]
    assert [type(v) for v in values[:4]] == [int, int, int, float]
    assert math.copysign(1.0, values[4]) == -1.0
    assert math.isnan(values[9])
    assert values[10:] == [True, False, None]


def test_string_constants_with_escapes():
    strings = ['plain', 'quote " and \\ backslash', 'tab\tnewline\n', 'héllo ☃', '# not a comment']
    text = constant_graph(*map(format_attr, strings))
    assert constant_values(round_trip(text)) == strings


def test_bytes_constants():
    # bytes constants printed as Py(builtins.bytes(...)), which no archive could hold:
    # a function using b"..." could not be saved or pickled
    values = [b"", b"ab", bytes(range(256))]
    parsed = constant_values(round_trip(constant_graph(*map(format_attr, values))))
    assert parsed == values and all(type(v) is bytes for v in parsed)
    with pytest.raises(IRParseError, match="cannot hold"):
        parse_ir(constant_graph('bytes("0g")'))


def test_container_constants():
    values = [(1,), (), (1, "a", (2.5, None)), [1, [2, 3]], [], ((),)]
    text = constant_graph(*map(format_attr, values))
    parsed = constant_values(round_trip(text))
    assert parsed == values
    assert [type(v) for v in parsed] == [type(v) for v in values]


def test_numpy_constants():
    values = [np.float32(2.5), np.int64(-3), np.bool_(True), np.float16(0.1)]
    text = constant_graph(*map(format_attr, values), "dtype(float32)", "dtype(int8)",
                          "Array(int16, [[1, 2], [3, 4]])", "Array(float64, 3.0)")
    parsed = constant_values(round_trip(text))
    for got, want in zip(parsed, values):
        assert type(got) is type(want) and got == want
    assert parsed[4] == np.dtype(np.float32) and parsed[5] == np.dtype(np.int8)
    assert parsed[6].dtype == np.int16 and parsed[6].tolist() == [[1, 2], [3, 4]]
    assert parsed[7].shape == () and parsed[7].dtype == np.float64 and parsed[7] == 3.0


def test_python_object_constants_resolve_by_import():
    values = [np.sum, math.sqrt, len, helper, Point, Color.GREEN, np.add]
    text = constant_graph(*map(format_attr, values))
    assert all(got is want for got, want in zip(constant_values(round_trip(text)), values))


def test_python_objects_resolve_through_the_callback():
    def local_fn():
        pass

    seen = []

    def resolve(name: str) -> object:
        seen.append(name)
        return {qualified_name(local_fn): local_fn}[name]

    text = constant_graph(format_attr(local_fn))
    assert "<locals>" in text
    graph = parse_ir(text, resolve)
    assert constant_values(graph) == [local_fn] and seen == [qualified_name(local_fn)]
    assert print_graph(graph) == text


def test_type_attributes():
    types = (IntType, ListType(OptionalType(TENSOR)), POINT, PAIR)
    text = ("graph(%x : Any):\n"
            f"  %0 : bool = prim::isinstance[types={format_attr(types)}](%x)\n"
            "  return (%0)\n")
    node = next(round_trip(text).nodes())
    assert node.attrs["types"] == types


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple),
    max_leaves=8))
def test_any_constant_round_trips(value):
    text = constant_graph(format_attr(value))
    parsed = constant_values(round_trip(text))[0]
    assert parsed == value and format_attr(parsed) == format_attr(value)


# ---- types

TYPES = [TENSOR, IntType, FloatType, BoolType, StrType, NoneType, AnyType, DTypeType,
         NoReturnType, UninitializedType,
         TensorType("float32", (None, 3), "C", True), TensorType(sizes=()),
         TensorType(layout="strided", ndarray=False), ListType(IntType),
         DictType(StrType, ListType(TENSOR)), TupleType((IntType, TENSOR)), TupleType(()),
         TupleType((IntType,)), VarTupleType(IntType), OptionalType(IntType),
         OptionalType(ListType(OptionalType(IntType))), OptionalType(OptionalType(StrType)),
         UnionType((IntType, StrType, TENSOR)), OptionalType(UnionType((IntType, StrType))),
         POINT, ListType(POINT), EnumType(Color), PAIR, OptionalType(PAIR),
         TupleType((), (), Nothing)]


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_parse_type_inverts_str(t):
    parsed = parse_type(str(t))
    assert parsed == t and str(parsed) == str(t)


def test_class_types_are_the_registered_instance():
    assert parse_type(str(POINT)) is POINT

    class Local:
        pass

    local_type = ClassType.for_class(Local)
    assert "<locals>" in str(local_type)
    assert parse_type(f"List[{local_type}]") == ListType(local_type)


def test_unregistered_class_is_imported_and_registered():
    class_type = parse_type(f"__tsjit__.{MOD}.Unregistered")
    assert isinstance(class_type, ClassType) and class_type.py_class is Unregistered
    assert ClassType.for_class(Unregistered) is class_type


def test_annotation_spelling_of_empty_tuple():
    assert parse_type("Tuple[()]") == TupleType(())


_dims = st.lists(st.none() | st.integers(0, 9), max_size=3).map(tuple)
_tensor = st.builds(TensorType, st.none() | st.sampled_from(["float32", "int64", "bool"]),
                    st.none() | _dims, st.none() | st.sampled_from(["C", "F", "strided"]),
                    st.none() | st.booleans())
_leaf = st.sampled_from([IntType, FloatType, BoolType, StrType, NoneType, AnyType, DTypeType,
                         POINT, EnumType(Color), PAIR]) | _tensor


@given(st.recursive(_leaf, lambda inner: st.one_of(
    inner.map(ListType), inner.map(OptionalType), inner.map(VarTupleType),
    st.builds(DictType, inner, inner),
    st.lists(inner, max_size=3).map(lambda ts: TupleType(tuple(ts))),
    st.lists(inner, min_size=2, max_size=3).map(lambda ts: UnionType(tuple(ts)))),
    max_leaves=6))
def test_any_type_round_trips(t):
    assert parse_type(str(t)) == t


# ---- errors

@pytest.mark.parametrize("text, message, line, column", [
    ("graph(%x : Tensr):\n  return (%x)\n", "unknown type 'Tensr'", 1, 12),
    ("graph(%x : int):\n  %y : int = aten::neg(%z)\n  return (%y)\n",
     "undefined value %z", 2, 24),
    ("graph(%x : int):\n  %x : int = aten::neg(%x)\n  return (%x)\n",
     "value %x is defined twice", 2, 3),
    ("graph(%x : int):\n  %y : int = aten::neg(%y)\n  return (%y)\n",
     "undefined value %y", 2, 24),
    ("graph(%x : int):\n  %y : int = aten::neg(%x\n  return (%y)\n", "expected ')'", 3, 3),
    ("graph():\n  %0 : Any = prim::Constant[value=(1)]()\n  return (%0)\n",
     "a 1-tuple is written (x,)", 2, 37),
    ("graph():\n  %0 : Any = prim::Constant[value=Py(builtins.object(...))]()\n"
     "  return (%0)\n", "cannot be rebuilt from text", 2, 38),
    ("graph():\n  %0 : Any = prim::Constant[value=Py(no_such_module.f)]()\n"
     "  return (%0)\n", "cannot resolve 'no_such_module.f'", 2, 38),
    ("graph():\n  %0 : Any = prim::Constant[value=Py(math.no_such_fn)]()\n"
     "  return (%0)\n", "has no attribute path 'no_such_fn'", 2, 38),
    ("graph():\n  %0 : Any = prim::Constant[value=float33(1.0)]()\n"
     "  return (%0)\n", "unknown NumPy dtype or attribute form 'float33'", 2, 35),
    ("graph(%c : bool):\n  prim::If(%c)\n    block1():\n      -> ()\n  return (%c)\n",
     "expected block0, found block1", 3, 5),
    ("graph(%x : int):\n  return (%x)\n  %y : int = aten::neg(%x)\n",
     "unexpected '%y' after the end", 3, 3),
    ("graph(%x : int):\n  %y : int = aten::neg(%x) $\n  return (%y)\n",
     "unexpected character '$'", 2, 28),
    ("graph(%x : Tensor(rank=2)):\n  return (%x)\n", "unknown tensor refinement 'rank'", 1, 19),
    ("graph(%x : Tuple[int, str, ...]):\n  return (%x)\n",
     "'...' follows exactly one element type", 1, 28),
])
def test_errors_name_the_problem_and_the_place(text, message, line, column):
    with pytest.raises(IRParseError) as info:
        parse_ir(text)
    assert message in str(info.value)
    assert (info.value.line, info.value.column) == (line, column)


def test_error_shows_the_line_with_a_caret():
    with pytest.raises(IRParseError) as info:
        parse_type("List[int")
    assert str(info.value).endswith("  List[int\n          ^")
