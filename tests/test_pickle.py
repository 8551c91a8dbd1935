"""Pickling and copying scripted functions and modules (through the saved form).

The program is a module file in a temporary directory; the child processes run with
that directory off their path, so they unpickle without the program's source.
"""
from __future__ import annotations

import copy
import gc
import io
import multiprocessing
import pickle
import pickletools
import weakref
import zipfile
from pathlib import Path

import _programs as programs
import numpy as np
import pytest
from _differential import assert_same
from _programs import CHILD_WITHOUT_PROGRAM, imported_program

import tsjit
from tsjit.api import pickling

PROGRAM = "pickled_program_under_test"

SOURCE = '''
from typing import List

import numpy as np

import tsjit


def gelu(x: np.ndarray) -> np.ndarray:
    """The tanh approximation of GELU."""
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def running(xs: List[float], k: int = 2) -> float:
    total = 0.0
    for x in xs:
        total = total * 0.5 + x * k
    return total


class Layer(tsjit.Module):
    def __init__(self, n: int, shift: float):
        super().__init__()
        self.weight = np.linspace(-1.0, 1.0, n * n).reshape(n, n)
        self.shift = shift

    def forward(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(x @ self.weight + self.shift, 0.0)


class Net(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.layer = Layer(3, 0.5)
        self.scale = np.array([1.0, 2.0, 3.0])
        self.calls = 0

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.calls += 1
        return self.layer(x) * self.scale

    @tsjit.export
    def count(self) -> int:
        return self.calls
'''

CHILD = CHILD_WITHOUT_PROGRAM + '''
payloads = pickle.load(open(sys.argv[1], "rb"))
report = {{}}
for name, (payload, args) in payloads.items():
    obj = pickle.loads(payload)
    again = pickle.loads(payload)
    report[name] = {{"results": [obj(*a) for a in args], "same_object": obj is again,
                    "type": type(obj).__name__, "source_module": {program!r} in sys.modules}}
pickle.dump(report, open(sys.argv[2], "wb"))
'''

X = np.linspace(-2.0, 2.0, 12).reshape(4, 3)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    yield from imported_program(tmp_path_factory, PROGRAM, SOURCE)


def run_child(tmp_path: Path, payloads: dict) -> dict:
    """Unpickle each payload twice in a fresh process that cannot import the program."""
    return programs.run_child(CHILD.format(program=PROGRAM), tmp_path, payloads, timeout=120)


def test_fresh_process_unpickles_without_the_source(program, tmp_path):
    xs = [1.0, -2.5, 4.0]
    net = program.Net()
    payloads = {
        "gelu": (pickle.dumps(tsjit.script(program.gelu)), [(X,), (X * 3,)]),
        "running": (pickle.dumps(tsjit.script(program.running)), [(xs,), (xs, 3)]),
        "net": (pickle.dumps(tsjit.script(net)), [(X,), (X * -1,)]),
        "count": (pickle.dumps(tsjit.script(program.Net()).count), [()]),
    }
    report = run_child(tmp_path, payloads)
    gelu = tsjit.script(program.gelu)     # the same kernel: gelu's tanh is not eager's, bitwise
    expected = {"gelu": [gelu(X), gelu(X * 3)],
                "running": [program.running(xs), program.running(xs, 3)],
                "net": [net(X), net(X * -1)], "count": [0]}
    for name, want in expected.items():
        assert not report[name]["source_module"]
        for got, value in zip(report[name]["results"], want):
            assert_same(got, value, name)
    assert report["gelu"]["type"] == "ScriptFunction" and report["gelu"]["same_object"]
    assert report["net"]["type"] == "ScriptModule" and not report["net"]["same_object"]


def test_pickle_holds_the_saved_form_and_names_only_the_reconstructor(program):
    function = tsjit.script(program.gelu)
    payload = pickle.dumps(function)
    assert pickling.saved_form(function) in payload
    assert b"0.044715 * x * x * x" not in payload and PROGRAM.encode() not in payload
    globals_ = [op_arg for op, op_arg, _ in pickletools.genops(payload)
                if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE")]
    assert globals_ == ["tsjit.api.pickling", "restore_function"]


def test_unpickling_twice_shares_one_function_and_its_compiled_code(program):
    payload = pickle.dumps(tsjit.script(program.gelu))
    first = pickle.loads(payload)
    first(X)
    first(X)
    second = pickle.loads(payload)
    assert second is first
    assert second.stats()["specializations"] == first.stats()["specializations"] >= 1
    assert pickle.dumps(second) == payload      # pickling it again gives the same bytes


def test_unpickled_functions_can_be_freed(program):
    payload = pickle.dumps(tsjit.script(program.running))
    function = pickle.loads(payload)
    assert function([1.0]) == 2.0
    freed = weakref.ref(function)
    del function
    gc.collect()
    assert freed() is None
    assert pickle.loads(payload)([1.0]) == 2.0


def test_unpickled_module_is_a_new_instance_each_time(program):
    scripted = tsjit.script(program.Net())
    scripted(X)
    payload = pickle.dumps(scripted)
    first, second = pickle.loads(payload), pickle.loads(payload)
    assert first.count() == second.count() == 1
    first(X)
    assert (first.count(), second.count(), scripted.count()) == (2, 1, 1)
    first.layer.weight[0, 0] = 9.0
    assert second.layer.weight[0, 0] == scripted.layer.weight[0, 0] == -1.0
    assert_same(second(X), program.Net()(X))


def test_method_pickles_with_its_module(program):
    scripted = tsjit.script(program.Net())
    scripted(X)
    count = pickle.loads(pickle.dumps(scripted.count))
    assert count() == 1
    assert pickle.loads(pickle.dumps(scripted.forward))(X).shape == (4, 3)


def test_deepcopy_of_a_module_is_independent(program):
    net = program.Net()
    scripted = tsjit.script(net)
    scripted(X)
    clone = copy.deepcopy(scripted)
    assert isinstance(clone, tsjit.ScriptModule)
    assert clone.layer.weight is not scripted.layer.weight
    assert_same(clone.layer.weight, scripted.layer.weight)
    clone.layer.weight[:] = 0.0
    clone(X)
    assert (clone.count(), scripted.count()) == (2, 1)
    assert_same(scripted(X), program.Net()(X))
    assert_same(clone(X), np.zeros((4, 3)) + 0.5 * net.scale)


def test_copy_of_a_module_shares_values_as_torch_jit(program):
    scripted = tsjit.script(program.Net())
    shallow = copy.copy(scripted)
    assert shallow is not scripted and shallow.layer is scripted.layer
    shallow(X)
    assert (shallow.count(), scripted.count()) == (1, 0)
    deep_method = copy.deepcopy(scripted.count)
    assert deep_method() == 0


def test_copy_of_a_function_is_the_function(program):
    function = tsjit.script(program.gelu)
    assert copy.copy(function) is function and copy.deepcopy(function) is function


def test_tampered_payload_raises_serialization_error(program):
    payload = pickle.dumps(tsjit.script(program.gelu))
    form = pickling.saved_form(tsjit.script(program.gelu))
    with zipfile.ZipFile(io.BytesIO(form)) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members["code/function.ir"] = members["code/function.ir"].replace(
        b"aten::mul", b"prim::PythonOp[fn=Py(os.system)]", 1)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    tampered = pickle.dumps(_Reduced(pickling.restore_function, buffer.getvalue()))
    with pytest.raises(tsjit.SerializationError):
        pickle.loads(tampered)
    not_bytes = pickle.dumps(_Reduced(pickling.restore_function, "text"))
    with pytest.raises(tsjit.SerializationError, match="bytes"):
        pickle.loads(not_bytes)
    assert pickle.loads(payload)(X).shape == (4, 3)


class _Reduced:
    """Pickles as a call of `restore(payload)`, as a tampered tsjit pickle would."""

    def __init__(self, restore, payload):
        self.restore, self.payload = restore, payload

    def __reduce__(self):
        return self.restore, (self.payload,)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_pool_maps_a_scripted_function(program, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method on this platform")
    function = tsjit.script(program.gelu)
    inputs = [X * k for k in range(4)]
    with multiprocessing.get_context(method).Pool(2) as pool:
        results = pool.map(function, inputs)
    for got, x in zip(results, inputs):
        assert_same(got, function(x))     # the workers compiled the same kernel
