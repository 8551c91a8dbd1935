"""The reference interpreter against Python on generated programs: random straight-line
code, loops and branches over ints and floats, compiled from IR and run beside the same
program written in Python."""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tsjit
import tsjit.ops  # noqa: F401  (registers the ops)
from tsjit.interpreter import compile_graph
from tsjit.ir import Graph
from tsjit.ir.types import (
    AnyType,
    BoolType,
    FloatType,
    IntType,
)

INT64_MAX = 9223372036854775807  # an endless loop's trip count, as the front end emits it

BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
          "floordiv": operator.floordiv, "mod": operator.mod, "truediv": operator.truediv}


def result_type(name: str, a, b):
    return FloatType if name == "truediv" or FloatType in (a, b) else IntType


@dataclass
class Op:
    name: str
    a: int
    b: int


@dataclass
class Loop:
    """`for i in range(trips)` over carried values, stopping early when a test fails:
    carried[0] < bound (when bound is set).  endless: INT64_MAX trips, a counter carried
    value bounds it instead."""
    trips: int
    carried: list[int]
    body: list = field(default_factory=list)
    results: list[int] = field(default_factory=list)
    bound: float | None = None
    endless: bool = False


@dataclass
class If:
    a: int
    b: int
    then: list
    else_: list
    results: list[tuple[int, int]]


def eval_program(stmts, env: list):
    """Run a program the plain Python way (the reference)."""
    for s in stmts:
        if isinstance(s, Op):
            env.append(BINARY[s.name](env[s.a % len(env)], env[s.b % len(env)]))
        elif isinstance(s, If):
            taken = env[s.a % len(env)] < env[s.b % len(env)]
            branch_env = list(env)
            eval_program(s.then if taken else s.else_, branch_env)
            env.extend(branch_env[r[0 if taken else 1]] for r in s.results)
        else:
            values = [env[c % len(env)] for c in s.carried]
            cond = s.bound is None or values[0] < s.bound
            i = 0
            while (s.endless or i < s.trips) and cond:
                body_env = [*env, i, *values]
                eval_program(s.body, body_env)
                values = [body_env[r] for r in s.results]
                cond = s.bound is None or values[0] < s.bound
                i += 1
            env.extend(values)
    return env


class ProgramBuilder:
    """Builds the same program as a graph, tracking each env slot's value."""

    def __init__(self, types):
        self.graph = Graph()
        self.env = [self.graph.add_input(t, f"v{k}") for k, t in enumerate(types)]
        self.block = self.graph.block

    def node(self, kind, inputs, types, attrs=None):
        node = self.graph.create(kind, inputs, types, attrs)
        self.block.append(node)
        return node

    def const(self, value, t):
        return self.node("prim::Constant", [], [t], {"value": value}).output

    def build(self, stmts, env):
        for s in stmts:
            if isinstance(s, Op):
                a, b = env[s.a % len(env)], env[s.b % len(env)]
                env.append(self.node(f"aten::{s.name}", [a, b],
                                     [result_type(s.name, a.type, b.type)]).output)
            elif isinstance(s, If):
                cond = self.node("aten::lt", [env[s.a % len(env)], env[s.b % len(env)]],
                                 [BoolType]).output
                node = self.node("prim::If", [cond], [])
                for branch, pick in ((s.then, 0), (s.else_, 1)):
                    block_env = self.nested(node.add_block(), branch, list(env))
                    for r in s.results:
                        node.blocks[-1].add_output(block_env[r[pick]])
                for v in node.blocks[0].outputs:
                    node.add_output(v.type)
                env.extend(node.outputs)
            else:
                self.loop(s, env)
        return env

    def bound_test(self, bound, value):
        if bound is None:
            return self.const(True, BoolType)
        limit = self.const(bound, IntType if type(bound) is int else FloatType)
        return self.node("aten::lt", [value, limit], [BoolType]).output

    def nested(self, block, stmts, env):
        saved, self.block = self.block, block
        try:
            return self.build(stmts, env)
        finally:
            self.block = saved

    def loop(self, s: Loop, env):
        initial = [env[c % len(env)] for c in s.carried]
        trips = self.const(INT64_MAX if s.endless else s.trips, IntType)
        cond = self.bound_test(s.bound, initial[0])
        node = self.node("prim::Loop", [trips, cond, *initial], [])
        body = node.add_block()
        counter = body.add_param(IntType, "i")
        params = [body.add_param(v.type, v.name) for v in initial]
        body_env = self.nested(body, s.body, [*env, counter, *params])
        results = [body_env[r] for r in s.results]
        saved, self.block = self.block, body
        next_cond = self.bound_test(s.bound, results[0])
        self.block = saved
        body.add_output(next_cond)
        for v in results:
            body.add_output(v)
            node.add_output(v.type)
        env.extend(node.outputs)


NUMBERS = st.one_of(st.integers(-20, 20), st.floats(-8, 8, allow_nan=False).map(
    lambda f: round(f, 2)))


@st.composite
def programs(draw, env_types, depth=0):
    """Statements over an env whose slot types are env_types (extended in place)."""
    stmts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["op", "op", "op", "loop", "if"] if depth < 2 else ["op"]))
        if kind == "op":
            s = Op(draw(st.sampled_from(sorted(BINARY))), draw(st.integers(0, 99)),
                   draw(st.integers(0, 99)))
            env_types.append(result_type(s.name, env_types[s.a % len(env_types)],
                                         env_types[s.b % len(env_types)]))
        elif kind == "if":
            s = If(draw(st.integers(0, 99)), draw(st.integers(0, 99)), [], [], [])
            then_types, else_types = list(env_types), list(env_types)
            s.then = draw(programs(then_types, depth + 1))
            s.else_ = draw(programs(else_types, depth + 1))
            for _ in range(draw(st.integers(0, 2))):
                t = draw(st.integers(0, len(then_types) - 1))
                same = [k for k, ty in enumerate(else_types) if ty == then_types[t]]
                if same:
                    s.results.append((t, draw(st.sampled_from(same))))
                    env_types.append(then_types[t])
        else:
            s = draw(loops(env_types, depth))
        stmts.append(s)
    return stmts


ZERO_SLOT, ONE_SLOT = 0, 1      # every program's first two inputs are 0 and 1


@st.composite
def loops(draw, env_types, depth):
    carried = draw(st.lists(st.integers(0, len(env_types) - 1), min_size=1, max_size=3))
    endless = draw(st.booleans())
    if endless:        # a counter bounds the loop: carried[0] starts at 0, grows by 1
        carried = [ZERO_SLOT, *carried]
    carried_types = [env_types[c] for c in carried]
    s = Loop(draw(st.integers(0, 4)), carried, endless=endless,
             bound=draw(st.integers(0, 4)) if endless else draw(st.none() | NUMBERS))
    body_types = [*env_types, IntType, *carried_types]
    s.body = draw(programs(body_types, depth + 1))
    s.results = [draw(st.sampled_from([k for k, t in enumerate(body_types) if t == ct]))
                 for ct in carried_types]
    if endless:
        s.body.append(Op("add", len(env_types) + 1, ONE_SLOT))   # counter + 1
        body_types.append(IntType)
        s.results[0] = len(body_types) - 1
    env_types.extend(carried_types)
    return s


@st.composite
def program_and_inputs(draw):
    inputs = [0, 1, *draw(st.lists(NUMBERS, min_size=1, max_size=3))]
    types = [IntType if type(v) is int else FloatType for v in inputs]
    return draw(programs(list(types))), inputs, types


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    return (math.isnan(a) and math.isnan(b)) or a == b


@settings(max_examples=300, deadline=None, derandomize=True)  # the same programs every run
@given(program_and_inputs())
def test_generated_programs_match_python(case):
    stmts, inputs, types = case
    builder = ProgramBuilder(types)
    env = builder.build(stmts, list(builder.env))
    for v in env[len(types):]:
        builder.graph.block.add_output(v)
    numbers = compile_graph(builder.graph)
    # typed Any, every value may hold a large object: the same code with `del`s everywhere
    for node in [builder.graph.block.param_node, *builder.graph.nodes()]:
        for v in [*node.outputs, *(p for b in node.blocks for p in b.params)]:
            v.type = AnyType
    anything = compile_graph(builder.graph)
    try:
        want = tuple(eval_program(stmts, list(inputs))[len(inputs):])
    except ZeroDivisionError as e:
        for compiled in (numbers, anything):
            with pytest.raises(type(e)):
                compiled(*inputs)
        return
    for compiled in (numbers, anything):
        got = compiled(*inputs)
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(want) and all(map(_same, got, want)), compiled.source
