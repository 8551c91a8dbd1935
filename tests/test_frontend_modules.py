"""tsjit.Module: the nn.Module story with NumPy arrays.  A scripted module runs forward
and exported methods compiled, against the same instance's attributes: arrays, numbers,
containers, submodules, ModuleList/ModuleDict (unrolled), constants and Final."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from _differential import assert_same

import tsjit


def check_module(make, method: str, *calls: tuple, rounds: int = 2):
    """Script one instance from `make()`, run the same calls on an eager twin, and compare
    results, exception classes and the instances' state after every call."""
    eager, scripted_instance = make(), make()
    scripted = tsjit.script(scripted_instance)
    for _ in range(rounds):
        for args in calls:
            eager_args, script_args = copy.deepcopy(args), copy.deepcopy(args)
            try:
                want = ("value", getattr(eager, method)(*eager_args))
            except Exception as e:  # noqa: BLE001
                want = ("raise", type(e))
            try:
                got = ("value", getattr(scripted, method)(*script_args))
            except Exception as e:  # noqa: BLE001
                got = ("raise", type(e))
            assert got[0] == want[0] and (got[0] == "value" or got[1] is want[1]), (got, want)
            if got[0] == "value":
                assert_same(got[1], want[1])
            assert_same(list(script_args), list(eager_args), "arguments")
            assert_same(_state(scripted_instance), _state(eager), "module state")
    return scripted


def _state(module) -> dict:
    return {k: _state(v) if isinstance(v, tsjit.Module) else v for k, v in vars(module).items()
            if not k.startswith("_")}


class Linear(tsjit.Module):
    def __init__(self, n_in: int, n_out: int, seed: int):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.weight = rng.standard_normal((n_in, n_out)).astype(np.float32)
        self.bias = np.zeros(n_out, dtype=np.float32)
        self.calls = 0

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.calls += 1
        return x @ self.weight + self.bias


def test_array_and_scalar_attributes_and_state_across_calls():
    x = np.ones((2, 3), np.float32)
    check_module(lambda: Linear(3, 4, 0), "forward", (x,), (x * 2,))


class MLP(tsjit.Module):
    __constants__ = ["activation"]

    def __init__(self):
        super().__init__()
        self.layers = tsjit.ModuleList([Linear(3, 5, 1), Linear(5, 5, 2), Linear(5, 2, 3)])
        self.activation = "relu"
        self.head = Linear(2, 1, 4)

    def forward(self, x: np.ndarray) -> np.ndarray:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if self.activation == "relu" and i < 2:
                x = np.maximum(x, 0.0)
        return self.head.forward(x) + self.layers[0].bias.sum()


def test_submodules_and_module_list_unrolled():
    check_module(MLP, "forward", (np.ones((4, 3), np.float32),))


class Slices(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.layers = tsjit.ModuleList([Linear(2, 2, i) for i in range(4)])

    def forward(self, x: np.ndarray) -> np.ndarray:
        for layer in self.layers[1:]:
            x = layer(x)
        for layer in self.layers[::-2]:
            x = layer(x) - self.layers[-1].bias
        return x


def test_module_list_slices_and_negative_indices():
    check_module(Slices, "forward", (np.ones((1, 2), np.float32),))


class Branches(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.heads = tsjit.ModuleDict({"a": Linear(2, 2, 5), "b": Linear(2, 2, 6)})

    def forward(self, x: np.ndarray) -> list[np.ndarray]:
        outs: list[np.ndarray] = []
        for name, head in self.heads.items():
            outs.append(head(x) * (1.0 if name == "a" else -1.0))
        for key in self.heads:
            outs.append(self.heads[key].bias)
        for head in self.heads.values():
            outs.append(head.weight[0])
        return outs


def test_module_dict_items_keys_values_unrolled():
    check_module(Branches, "forward", (np.ones((1, 2), np.float32),))


class Config(tsjit.Module):
    scale: tsjit.Final[float]
    names: list[str]
    table: dict[str, int]
    maybe: np.ndarray | None

    def __init__(self, with_array: bool):
        super().__init__()
        self.scale = 2.5
        self.names = []
        self.table = {"a": 1}
        self.maybe = np.arange(3.0) if with_array else None
        self.pair = (1, "x")

    def forward(self, key: str) -> tuple[float, int, list[str], float]:
        self.names.append(key)
        self.table[key] = self.table.get(key, 0) + len(self.names)
        m = self.maybe
        extra = float(m.sum()) if m is not None else 0.0
        return self.scale * self.pair[0], self.table[key], self.names, extra

    @tsjit.export
    def describe(self, n: int) -> str:
        return f"{self.pair[1]}{n}{len(self.names)}"


@pytest.mark.parametrize("with_array", [True, False])
def test_final_container_and_optional_attributes_with_exported_method(with_array):
    check_module(lambda: Config(with_array), "forward", ("a",), ("b",))
    check_module(lambda: Config(with_array), "describe", (3,))


def test_setting_attributes_of_a_scripted_module_keeps_their_types():
    scripted = tsjit.script(Config(True))
    scripted.maybe = None                       # Optional[ndarray]
    scripted.names = ["x"]
    assert scripted("k")[2] == ["x", "k"]
    with pytest.raises(TypeError, match="names"):
        scripted.names = [1, 2]
    with pytest.raises(AttributeError, match="scale"):
        scripted.scale = 1.0
    with pytest.raises(TypeError, match="bias"):
        tsjit.script(Pipeline(False)).bias = np.ones(3)     # compiled as always None


def test_final_attributes_are_constants_in_the_graph():
    scripted = tsjit.script(Config(True))
    assert "2.5" in str(scripted.graph)
    assert "GetAttr[name=\"scale\"]" not in str(scripted.graph)


class Helpers(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.offset = 1

    def forward(self, x: int) -> int:
        return self.double(x) + self.bump()

    def double(self, x: int) -> int:
        return self.add(x, x)

    def add(self, a: int, b: int) -> int:
        return a + b + self.offset

    def bump(self) -> int:
        self.offset += 1
        return self.offset

    @tsjit.export
    def reset(self, value: int = 0) -> None:
        self.offset = value


def test_methods_calling_methods_and_state_mutation():
    check_module(Helpers, "forward", (1,), (5,))


def test_exported_methods_with_keywords_and_defaults():
    eager, scripted = Helpers(), tsjit.script(Helpers())
    for reset in (lambda m: m.reset(), lambda m: m.reset(value=7), lambda m: m.reset(3)):
        reset(eager)
        reset(scripted)
        assert scripted.offset == eager.offset
        assert scripted(2) == eager(2)


def test_scripted_module_shares_the_instance_attributes():
    m = Helpers()
    scripted = tsjit.script(m)
    assert "def " in scripted.code and "graph(" in str(scripted.graph)
    assert scripted.offset == 1
    scripted.offset = 10
    twin = Helpers()
    twin.offset = 10
    assert m.offset == 10 and scripted(0) == twin(0)


class ArrayMutation(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.buffer = np.zeros(4)
        self.count = 0

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.buffer += x
        self.buffer[0] = self.count
        self.count += 1
        return self.buffer.copy()


def test_in_place_updates_of_array_attributes():
    check_module(ArrayMutation, "forward", (np.ones(4),), (np.arange(4.0),))


class Shape(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.dims = [2, 3]
        self.weights = {"a": np.ones(2), "b": np.zeros(2)}

    def forward(self, x: np.ndarray) -> np.ndarray:
        return x.reshape(self.dims[0], self.dims[1]) + self.weights["a"].sum()


def test_list_and_dict_attributes_inferred_from_values():
    check_module(Shape, "forward", (np.arange(6.0),), (np.arange(5.0),))


class Outer(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.inner = Helpers()

    def forward(self, x: int) -> int:
        return self.inner(x) + self.inner.offset


def test_submodule_state_mutated_through_the_parent():
    check_module(Outer, "forward", (2,), (3,))


class Ignored(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.seen: list[int] = []

    @tsjit.ignore
    def log(self, x: int) -> None:
        self.seen.append(x)
        self.seen = list(set(self.seen))

    def forward(self, x: int) -> int:
        self.log(x)
        return x * 2


def test_ignored_module_methods_run_in_python():
    check_module(Ignored, "forward", (1,), (1,))


class WithSequenceLoop(tsjit.Module):
    def __init__(self, n: int):
        super().__init__()
        self.blocks = tsjit.ModuleList([Linear(2, 2, i) for i in range(n)])

    def forward(self, x: np.ndarray) -> np.ndarray:
        for block in self.blocks:
            if x.sum() > 100.0:
                return x
            x = block(x)
        return x


@pytest.mark.parametrize("n", [0, 1, 3])
def test_return_inside_an_unrolled_module_list_loop(n):
    check_module(lambda: WithSequenceLoop(n), "forward", (np.ones((1, 2), np.float32),),
                 (np.full((1, 2), 60.0, np.float32),))


class Scale(tsjit.Module):
    def __init__(self, k: float):
        super().__init__()
        self.k = k

    def forward(self, x: np.ndarray) -> np.ndarray:
        return x * self.k


class Shift(tsjit.Module):
    def __init__(self, b: float):
        super().__init__()
        self.b = np.full(3, b)

    def forward(self, x: np.ndarray) -> np.ndarray:
        return x + self.b

    @tsjit.export
    def undo(self, x: np.ndarray) -> np.ndarray:
        return x - self.b


class Pipeline(tsjit.Module):
    def __init__(self, with_bias: bool):
        super().__init__()
        self.steps = tsjit.ModuleList([Scale(2.0), Shift(1.0), Scale(-1.0)])
        self.shift = Shift(5.0)
        self.extras = [np.ones(3), np.zeros(3)]
        self.pair = (2, 3.5)
        self.bias = np.full(3, 0.25) if with_bias else None

    def forward(self, x: np.ndarray, times: int = 1) -> np.ndarray:
        for _ in range(times):
            for step in self.steps:
                x = step(x)
        x = self.shift.undo(x)
        for extra in self.extras:
            x = x + extra
        if self.bias is not None:
            x = x + self.bias
        return x * self.pair[0] + self.pair[1] + len(self.steps)


@pytest.mark.parametrize("with_bias", [True, False])
def test_heterogeneous_module_list_none_attributes_and_submodule_methods(with_bias):
    x = np.arange(3.0)
    check_module(lambda: Pipeline(with_bias), "forward", (x,), (x, 2))


def test_a_none_attribute_is_known_to_be_none_when_compiled():
    graph = str(tsjit.script(Pipeline(False)).graph)
    assert "bias" not in graph


class WithoutSuperInit(tsjit.Module):
    def __init__(self):
        self.w = 3

    def forward(self, x: int) -> int:
        return x * self.w


def test_module_whose_init_does_not_call_super():
    check_module(WithoutSuperInit, "forward", (3,))


class NoisyLayer(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.shift = 0.5

    def forward(self, x):
        return x + self.shift if self.training else x


class Stack(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.layers = tsjit.ModuleList([NoisyLayer(), NoisyLayer()])
        self.by_name = tsjit.ModuleDict({"last": NoisyLayer()})

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.by_name["last"](x) * (2.0 if self.training else 1.0)


def test_training_flag_and_train_eval_reach_every_submodule():
    # nn.Module's `training` and train()/eval(); on a scripted module they return the
    # scripted module (so `tsjit.script(m).eval()` stays compiled), and the compiled
    # forward reads the flag on each call
    x = np.arange(3.0)
    scripted, eager = tsjit.script(Stack()), Stack()
    assert_same(scripted(x), eager(x))
    assert scripted.eval() is scripted and eager.eval() is eager
    assert not scripted.training and not scripted.layers[1].training
    assert_same(scripted(x), eager(x))
    assert_same(scripted(x), x)
    assert scripted.train() is scripted and scripted.by_name["last"].training
    assert_same(scripted(x), eager.train()(x))
