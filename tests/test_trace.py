"""tsjit.trace: traced functions and modules against eager NumPy, on new inputs of the
example's shapes over several calls (profiling, then optimized calls)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from _differential import assert_same

import tsjit
from tsjit.api.tracer import TracerWarning, TracingError
from tsjit.testing.filecheck import FileCheck

CALLS = 4       # profiling run(s), then the specialized graph


def check_calls(traced, eager, make_args) -> None:
    """Traced and eager agree on results and on mutations of the arguments, call after
    call, for fresh arguments of the example's shapes."""
    for call in range(CALLS):
        args = make_args()
        mine = [a.copy() for a in args]
        assert_same(traced(*mine), eager(*args), f"call {call}")
        assert_same(mine, list(args), f"arguments after call {call}")


RNG = np.random.default_rng(0)


def rand(*shape: int, dtype=np.float64) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def bias_relu(x, b):
    return np.maximum(x + b, 0.0)


def test_gelu_matches_eager_and_fuses():
    traced = tsjit.trace(gelu, rand(1000, dtype=np.float32))
    FileCheck().check("graph(%x : Tensor)").check_count("aten::mul", 5).check(
        "numpy::tanh").check_count("aten::mul", 1, exactly=True).run(traced.graph)
    scripted = tsjit.script(gelu)
    for _ in range(CALLS):
        x = rand(1000, dtype=np.float32)
        got = traced(x)
        # the fused tanh is within the contract's 4 ulp; 1 + tanh cancels for x << 0,
        # so eager is matched as test_executor matches scripted gelu, and the traced
        # graph runs the very code the scripted function runs
        np.testing.assert_allclose(got, gelu(x), rtol=1e-5, atol=1e-6)
        assert_same(got, scripted(x))
    assert traced.stats()["kernel_launches"] > 0
    FileCheck().check("prim::FusionGroup").run(traced.graph_for(rand(1000, dtype=np.float32)))


def test_bias_relu_single_array_example_and_tuple_example():
    traced = tsjit.trace(bias_relu, (rand(64, 32), rand(32)))
    FileCheck().check("aten::add(%x, %b)").check("numpy::maximum").run(traced.graph)
    check_calls(traced, bias_relu, lambda: (rand(64, 32), rand(32)))
    assert traced.stats()["kernel_launches"] > 0


def mlp(x, w1, b1, w2):
    h = np.maximum(x @ w1 + b1, 0.0)
    out = h @ w2
    return out - out.max(axis=1, keepdims=True)


def test_mlp_with_matmul_and_methods():
    shapes = ((8, 16), (16, 32), (32,), (32, 4))
    traced = tsjit.trace(mlp, tuple(rand(*s) for s in shapes))
    FileCheck().check_count("aten::matmul", 2).check("ndarray::max").run(traced.graph)
    check_calls(traced, mlp, lambda: tuple(rand(*s) for s in shapes))


def branchy(x):
    if x.sum() > 0:
        return x * 2.0
    return x - 1.0


def test_python_control_flow_is_frozen_at_the_example_path():
    """As torch.jit.trace: the branch taken on the example is the only path recorded,
    with a TracerWarning; an input that would take the other branch still takes it."""
    positive = np.abs(rand(10)) + 1.0
    with pytest.warns(TracerWarning, match="branch"):
        traced = tsjit.trace(branchy, positive)
    FileCheck().check("aten::mul").check_not("aten::sub").check_not("prim::If").run(
        traced.graph)
    negative = -positive
    for _ in range(CALLS):
        assert_same(traced(negative.copy()), negative * 2.0)
    assert not np.array_equal(branchy(negative), negative * 2.0)


@tsjit.script
def scripted_softsign(x: tsjit.Tensor) -> tsjit.Tensor:
    return x / (1.0 + np.abs(x))


def calls_scripted(x):
    return scripted_softsign(x) * 2.0 + 1.0


def test_calls_of_scripted_functions_are_recorded():
    """As torch.jit.trace: a scripted function called on traced arrays is recorded (its
    graph, inlined), not rejected by its argument check."""
    traced = tsjit.trace(calls_scripted, rand(8))
    FileCheck().check("numpy::absolute").check("aten::truediv").check("aten::mul").run(
        traced.graph)
    for _ in range(CALLS):
        x = rand(5)
        assert_same(traced(x), calls_scripted(x))
    assert traced.stats()["kernel_launches"] > 0
    with pytest.raises(TypeError, match="argument 'x'"):
        scripted_softsign("not an array")


def test_shapes_are_constants_and_python_floats_are_frozen_with_a_warning():
    def f(x):
        rows = x.shape[0]
        return x / rows, float(x.sum())

    example = rand(4, 3)
    with pytest.warns(TracerWarning, match="float"):
        traced = tsjit.trace(f, example)
    FileCheck().check("prim::Constant[value=4]").check("aten::truediv").run(traced.graph)
    x = rand(4, 3)
    scaled, total = traced(x)
    assert_same(scaled, x / 4)
    assert total == float(example.sum())      # frozen at the example's value


def in_place(x, y):
    x[0] = y[1]
    x[1:, :2] *= 2.0
    x += y
    np.add(x, 1.0, out=y)
    return y.sum(axis=0)


def test_in_place_writes_are_recorded():
    traced = tsjit.trace(in_place, (rand(3, 4), rand(3, 4)))
    FileCheck().check("aten::__setitem__").check("aten::imul").check("aten::iadd").check(
        "ufunc::out_check").run(traced.graph)
    check_calls(traced, in_place, lambda: (rand(3, 4), rand(3, 4)))


def several(x, y):
    halves = np.split(x, 2)
    quotient, remainder = np.divmod(x, 3.0)
    rows = [row * 2 for row in np.stack([x, y])]
    return halves, (quotient, remainder), rows[1], x.mean(), np.zeros_like(x)


def test_tuples_lists_and_numpy_scalars_are_returned():
    traced = tsjit.trace(several, (rand(6), rand(6)))
    FileCheck().check("prim::ListUnpack").check("prim::TupleUnpack").run(traced.graph)
    check_calls(traced, several, lambda: (rand(6), rand(6)))


class Linear(tsjit.Module):
    def __init__(self, n: int, m: int):
        super().__init__()
        self.weight = rand(n, m, dtype=np.float32)
        self.bias = rand(m, dtype=np.float32)

    def forward(self, x):
        return np.maximum(x @ self.weight + self.bias, 0.0)


class TwoLayers(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.first = Linear(4, 8)
        self.rest = tsjit.ModuleList([Linear(8, 3)])
        self.scale = 0.5

    def forward(self, x):
        h = self.first(x)
        for layer in self.rest:
            h = layer(h)
        return h * self.scale


def test_module_parameters_are_read_at_run_time():
    module = TwoLayers()
    traced = tsjit.trace(module, rand(5, 4, dtype=np.float32))
    assert isinstance(traced, tsjit.ScriptModule)
    FileCheck().check('prim::GetAttr[name="first"](%self)').check(
        'prim::GetAttr[name="weight"]').check_count("aten::matmul", 2).run(traced.graph)
    assert isinstance(module.first.weight, np.ndarray)      # attributes are put back
    check_calls(traced, module, lambda: (rand(5, 4, dtype=np.float32),))
    assert traced.forward.stats()["kernel_launches"] > 0
    module.first.weight = rand(4, 8, dtype=np.float32)     # seen by the next call
    x = rand(5, 4, dtype=np.float32)
    assert_same(traced(x), module(x))


@pytest.mark.parametrize("fn, name", [
    (lambda x: np.lexsort(x), "numpy.lexsort"),
    (lambda x: np.add.reduceat(x, [0, 2]), "numpy.add.reduceat"),
    (lambda x: np.asarray(x) + 1.0, "converted to a NumPy array"),
    (lambda x: x.not_a_method(), "ndarray.not_a_method"),
])
def test_untraceable_operations_raise_a_clear_error(fn, name):
    with pytest.raises(TracingError, match=name) as info:
        tsjit.trace(fn, rand(4))
    assert "test_trace.py" in str(info.value)       # points at the user's line


def test_module_attribute_assignment_is_rejected_and_attributes_restored():
    class Counter(tsjit.Module):
        def __init__(self):
            super().__init__()
            self.total = np.zeros(3)

        def forward(self, x):
            self.total = self.total + x
            return self.total

    module = Counter()
    original = module.total
    with pytest.raises(TracingError, match="attribute 'total'"):
        tsjit.trace(module, rand(3))
    assert module.total is original


def test_non_array_example_inputs_are_rejected():
    with pytest.raises(TypeError, match="example input 1 is a int"):
        tsjit.trace(bias_relu, (rand(3), 2))


def test_tracer_escaping_the_trace_cannot_record():
    kept = []

    def leak(x):
        kept.append(x)
        return x + 1.0

    tsjit.trace(leak, rand(3))
    with pytest.raises(TracingError, match="after tsjit.trace returned"), \
            warnings.catch_warnings():
        kept[0] * 2.0


class ScriptedInside(tsjit.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = tsjit.script(Linear(3, 2))

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self.inner(x) * 2.0


def test_a_scripted_submodule_called_in_a_trace_is_a_clear_error():
    with pytest.raises(TracingError, match="method of a scripted module"):
        tsjit.trace(ScriptedInside(), rand(2, 3, dtype=np.float32))
