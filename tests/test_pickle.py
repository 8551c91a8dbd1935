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
import enum
from typing import List, NamedTuple

import numpy as np

import tsjit


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Point(NamedTuple):
    x: float
    y: float


@tsjit.script
class Pair:
    def __init__(self, a: int, b: float):
        self.a = a
        self.b = b

    def total(self) -> float:
        return self.a + self.b


def use_pair(p: Pair, c: Color, q: Point) -> Point:
    if c == Color.RED:
        return Point(p.total(), q.x)
    return Point(q.y, p.b)


def make_pair(a: int) -> Pair:
    return Pair(a, 0.5)


def pair_totals(ps: List[Pair], *, scale: float) -> float:
    return sum([p.total() for p in ps]) * scale


class Trap:
    """Runs code when an attribute is looked up on it (it has no __dict__)."""
    __slots__ = ()

    def __getattr__(self, name):
        raise AssertionError(f"code ran: Trap.__getattr__({name!r})")


trap = Trap()


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


class Stack(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.layers = tsjit.ModuleList([Layer(3, 1.0), Layer(3, -1.0)])
        self.named = tsjit.ModuleDict({"a": Layer(3, 0.25)})
        self.net = Net()

    def forward(self, x: np.ndarray) -> np.ndarray:
        for layer in self.layers:
            x = layer(x)
        return self.named["a"](x) + self.net(x)
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


def test_unpickled_in_its_own_process_a_function_is_itself(program):
    # as a Python function pickles by reference: the same profiles and compiled code
    function = tsjit.script(program.gelu)
    function(X)
    assert pickle.loads(pickle.dumps(function)) is function


def test_a_loaded_or_unpickled_module_pickles_again(program, tmp_path):
    # a Dask worker or a pool passes on what it unpickled; the submodules' types are
    # the ones the module was loaded with
    scripted = tsjit.script(program.Stack())
    scripted.save(tmp_path / "stack.pt")
    loaded = tsjit.load(tmp_path / "stack.pt")
    twice = pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(scripted))))
    for module in (pickle.loads(pickle.dumps(loaded)), twice,
                   pickle.loads(pickle.dumps(copy.deepcopy(twice)))):
        assert_same(module(X), program.Stack()(X))


def test_forked_workers_take_and_return_the_programs_classes(program):
    # A worker that has the program (forked, or spawned from a script that imports it)
    # gets instances of its classes as arguments: the unpickled function must take
    # them, and give back the program's classes, as the plain function does.
    args = [(program.Pair(2, 0.5), color, program.Point(1.0, -1.0))
            for color in program.Color]
    scripted = tsjit.script(program.use_pair), tsjit.script(program.make_pair)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        results = pool.starmap(scripted[0], args)
        pair = pool.apply(scripted[1], (3,))
    assert results == [program.use_pair(*a) for a in args]
    assert [type(r) for r in results] == [program.Point] * 2
    assert type(pair) is program.Pair and vars(pair) == vars(program.make_pair(3))


def test_a_class_pickled_by_value_keeps_its_compiled_type(program, tmp_path):
    # cloudpickle (Dask's pickler) pickles the classes of __main__ by value, with their
    # dict: a worker's result unpickled in the client must not replace the class's type
    cloudpickle = pytest.importorskip("cloudpickle", reason="cloudpickle (Dask's pickler) "
                                      "is not installed")
    t = vars(program.Pair)["__tsjit_class_type__"]
    cloudpickle.register_pickle_by_value(program)
    try:
        payload = cloudpickle.dumps(program.Pair(2, 0.5))
        back = pickle.loads(payload)
    finally:
        cloudpickle.unregister_pickle_by_value(program)
    assert type(back) is program.Pair and vars(program.Pair)["__tsjit_class_type__"] is t
    scripted = tsjit.script(program.use_pair)
    point = program.Point(1.0, 2.0)
    assert scripted(back, program.Color.RED, point) == program.use_pair(back,
                                                                       program.Color.RED, point)
    assert pickle.loads(pickle.dumps(scripted)) is scripted
    # a process without the program gets the class with its compiled type (no source
    # needed), whose methods' parameters save as the program's do
    (tmp_path / "uses_pair.py").write_text(USES_PAIR)
    report = programs.run_child(CHILD_WITHOUT_PROGRAM.format(program=PROGRAM) + """
import uses_pair
pickle.dump(uses_pair.report, open(sys.argv[2], "wb"))
""", tmp_path, payload, timeout=120)
    assert report == ("Pair", 5.0, 5.0)


USES_PAIR = '''
import pickle, sys
import tsjit

pair = pickle.loads(pickle.load(open(sys.argv[1], "rb")))
Pair = type(pair)


def doubled(p: Pair) -> float:
    return p.total() * 2.0


scripted = tsjit.script(doubled)
report = (Pair.__qualname__, scripted(pair), pickle.loads(pickle.dumps(scripted))(pair))
'''


def test_a_function_unpickled_before_its_program_takes_the_programs_instances(program,
                                                                             tmp_path):
    # A worker unpickles a task's function before the arguments whose unpickling imports
    # the program (a Dask worker, a pool spawned from a script that does not import the
    # program), and cloudpickle sends the classes of `__main__` by value, beside the ones
    # a spawned worker's re-imported `__main__` defines: the function takes what it is
    # given, as the plain function does.
    cloudpickle = pytest.importorskip("cloudpickle", reason="cloudpickle (Dask's pickler) "
                                      "is not installed")
    functions = [tsjit.script(program.use_pair), tsjit.script(program.pair_totals)]
    args = [[(program.Pair(2, 0.5), color, program.Point(1.0, -1.0))
             for color in program.Color], [([program.Pair(1, 0.25), program.Pair(3, 2.0)],)]]
    keywords = [{}, {"scale": 0.5}]     # (bound as Python binds them, on every call)
    cloudpickle.register_pickle_by_value(program)
    try:
        by_value = cloudpickle.dumps(args)
    finally:
        cloudpickle.unregister_pickle_by_value(program)
    payload = {"functions": pickle.dumps(functions), "args": pickle.dumps(args),
               "by_value": by_value, "path": str(Path(program.__file__).parent),
               "keywords": keywords}
    report = programs.run_child(CHILD_WITHOUT_PROGRAM.format(program=PROGRAM) + """
payload = pickle.load(open(sys.argv[1], "rb"))
functions = pickle.loads(payload["functions"])
sys.path.insert(0, payload["path"])
report = []
for all_args in (pickle.loads(payload["args"]), pickle.loads(payload["by_value"])):
    report.append([[(type(r).__qualname__, repr(r)) for r in (f(*a, **k) for a in args)]
                   for f, args, k in zip(functions, all_args, payload["keywords"])])
pickle.dump(report, open(sys.argv[2], "wb"))
""", tmp_path, payload, timeout=120)
    want = [[("Point", repr(program.use_pair(*a))) for a in args[0]],
            [("float", repr(program.pair_totals(*args[1][0], scale=0.5)))]]
    assert report == [want, want]


def test_an_instance_of_another_class_of_the_name_is_refused_clearly(program, tmp_path):
    # tsjit.load rebuilds the classes (class_records.py): the program's instance is
    # another class of the same name, which the message must say
    tsjit.script(program.make_pair).save(tmp_path / "make_pair.pt")
    loaded_pair = type(tsjit.load(tmp_path / "make_pair.pt")(1))
    scripted = tsjit.script(program.use_pair)
    args = (program.Color.RED, program.Point(1.0, 2.0))
    with pytest.raises(TypeError, match="another class of the name pickled_program_under_"
                                        "test.Pair; a loaded or unpickled function"):
        scripted(object.__new__(loaded_pair), *args)


def test_a_class_name_is_looked_up_without_running_code(program):
    # a pickle names the classes of its instances and its archive's classes: looking
    # them up in the program's modules reads modules' and classes' namespaces only
    from tsjit.api.class_records import restore_instance
    with pytest.raises(pickle.UnpicklingError, match="no class"):
        restore_instance((PROGRAM, "trap.Pair"), "class", {})
