"""obj.save(path) / tsjit.load(path): a fresh process that never imports the program
loads the compiled code and gets what the plain Python code gives.

The program is a module file written to a temporary directory and imported here by
path; the child process runs with that directory off its path and checks that the
program's module cannot be imported.  All archives are loaded by one child process
(module fixture) so the suite pays for one interpreter start.
"""
from __future__ import annotations

import io
import json
import pickle
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
from _differential import assert_same
from _programs import imported_program
from _subprocess import child_environment

import tsjit
from tsjit.api import archive
from tsjit.api.archive import SerializationError
from tsjit.api.serialization import load

PROGRAM = "saved_program_under_test"

SOURCE = '''
import math
from typing import Dict, List, Optional, Tuple

import numpy as np

import tsjit


def scale(x: float, k: int = 2) -> float:
    return x * k


def buckets(xs: List[float], label: str = "bin", n: int = 5) -> Dict[str, float]:
    out: Dict[str, float] = {}
    i = 0
    while i < n:
        key = label + str(i % 3)
        if key in out:
            out[key] = out[key] + scale(xs[i % len(xs)])
        else:
            out[key] = math.sqrt(float(i)) + scale(1.5, k=3)
        i += 1
    return out


def words(text: str, sep: str = " ") -> Tuple[List[str], Optional[str]]:
    parts = text.split(sep)
    longest: Optional[str] = None
    for p in parts:
        if longest is None or len(p) > len(longest):
            longest = p.upper()
    return parts, longest


def slicing(x: np.ndarray) -> np.ndarray:
    y = x[..., 0:2].astype(np.float32)
    if y.sum() < 0:
        raise ValueError("negative")
    return np.maximum.reduce(y, axis=0)


def blend(x: np.ndarray) -> np.ndarray:
    return np.sqrt(x * x + 1.0) * 0.5 - x / 3.0


class Affine(tsjit.Module):
    def __init__(self, n: int, shift: float):
        super().__init__()
        self.weight = np.linspace(-1.0, 1.0, n * n).reshape(n, n)
        self.shift = shift
        self.calls = 0

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.calls += 1
        return x @ self.weight + self.shift


class Net(tsjit.Module):
    depth: tsjit.Final[int]

    def __init__(self):
        super().__init__()
        self.depth = 2
        self.layers = tsjit.ModuleList([Affine(3, 0.5), Affine(3, -0.25)])
        self.heads = tsjit.ModuleDict({"a": Affine(3, 1.0)})
        self.head = Affine(3, 2.0)
        self.scales = [1.0, 0.5]
        self.names = {"x": 1, "y": 2}
        self.offset = np.float32(0.125)
        self.title = "net"
        self.limits = (0, 10)

    def forward(self, x: np.ndarray, use_head: bool = True) -> np.ndarray:
        for layer in self.layers:
            x = np.maximum(layer(x), 0.0) * self.scales[0]
        if use_head:
            x = self.head(x)
        return self.heads["a"](x) + self.offset + self.depth

    @tsjit.export
    def summary(self, extra: int = 0) -> Tuple[str, int]:
        return self.title, self.names["x"] + self.names["y"] + self.limits[1] + extra

    @tsjit.export
    def total_calls(self) -> int:
        return self.layers[0].calls + self.head.calls


@tsjit.ignore
def python_log(x: float) -> float:
    return x


def uses_ignored(x: float) -> float:
    return python_log(x) + 1.0


class CallsIgnored(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.weight = np.ones(3)

    @tsjit.ignore
    def helper(self, x: np.ndarray) -> np.ndarray:
        return x * 2.0 + self.weight

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self.helper(x) - 1.0


class Point:
    def __init__(self, x: float):
        self.x = x


def uses_class(x: float) -> float:
    return Point(x).x


class Odd(Exception):
    pass


def raises_own_exception(x: int) -> int:
    if x % 2 == 1:
        raise Odd("odd")
    return x
'''

# Child process: load each archive, make the calls, report results and inspections.
CHILD = '''
import pickle, sys
assert {program!r} not in sys.modules
try:
    import {program}
except ModuleNotFoundError:
    pass
else:
    raise AssertionError("the program's module is importable in the child")
import numpy as np
import tsjit

def builtin_dtype(value):
    # unpickled arrays carry a dtype equal to but not the builtin one, which the
    # executor's guards (dtype identity) refuse, so they would never run native code
    return np.asarray(value, dtype=np.dtype(value.dtype.str)) \
        if isinstance(value, np.ndarray) else value

jobs = pickle.load(open(sys.argv[1], "rb"))
report = {{}}
for name, (path, calls) in jobs.items():
    obj = tsjit.load(path)
    results = []
    calls = [(method, tuple(map(builtin_dtype, args)), kwargs) for method, args, kwargs in calls]
    for method, args, kwargs in calls:
        target = obj if method is None else getattr(obj, method)
        try:
            results.append(("value", target(*args, **kwargs)))
        except Exception as e:
            results.append(("raised", type(e).__name__))
    function = obj if isinstance(obj, tsjit.ScriptFunction) else obj.forward
    report[name] = {{"results": results, "graph": str(obj.graph), "code": obj.code,
                    "schema": function.schema, "stats": function.stats(),
                    "graph_for": str(function.graph_for(*calls[0][1], **calls[0][2])),
                    "type": type(obj).__name__}}
pickle.dump(report, open(sys.argv[2], "wb"))
'''

RNG = np.random.default_rng(7)
ARRAYS = [RNG.standard_normal((4, 3)), RNG.standard_normal((2, 3)) * 10, -np.ones((1, 3))]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    yield from imported_program(tmp_path_factory, PROGRAM, SOURCE)


def eager_results(target, calls):
    """What the plain Python program gives for the calls (a fresh instance per job)."""
    results = []
    for method, args, kwargs in calls:
        fn = target if method is None else getattr(target, method)
        try:
            results.append(("value", fn(*args, **kwargs)))
        except Exception as e:
            results.append(("raised", type(e).__name__))
    return results


def function_jobs(program):
    xs = [0.5, -2.0, 3.25]
    return {
        "buckets": (program.buckets, [(None, (xs,), {}), (None, (xs, "b", 7), {}),
                                      (None, ([1.0],), {"n": 2}), (None, ([],), {})]),
        "words": (program.words, [(None, ("a bb ccc dd",), {}), (None, ("x,yy", ","), {}),
                                  (None, ("",), {})]),
        "slicing": (program.slicing, [(None, (a,), {}) for a in ARRAYS]),
        "blend": (program.blend, [(None, (ARRAYS[0] * k,), {}) for k in range(6)]),
    }


MODULE_CALLS = [(None, (ARRAYS[0],), {}), (None, (ARRAYS[1],), {"use_head": False}),
                ("forward", (ARRAYS[2], True), {}), ("summary", (), {}),
                ("summary", (5,), {}), ("total_calls", (), {})]


@pytest.fixture(scope="module")
def fresh_process(program, tmp_path_factory):
    """Save everything here; load and run it all in one fresh child process.
    Returns {name: (eager results, child report)}."""
    directory = tmp_path_factory.mktemp("archives")
    jobs, expected = {}, {}
    for name, (fn, calls) in function_jobs(program).items():
        tsjit.script(fn).save(directory / f"{name}.tsjit")
        jobs[name] = (str(directory / f"{name}.tsjit"), calls)
        expected[name] = eager_results(fn, calls)
    tsjit.script(program.Net()).save(directory / "net.tsjit")
    jobs["net"] = (str(directory / "net.tsjit"), MODULE_CALLS)
    expected["net"] = eager_results(program.Net(), MODULE_CALLS)
    jobs_file, report_file = directory / "jobs.pkl", directory / "report.pkl"
    jobs_file.write_bytes(pickle.dumps(jobs))
    env = child_environment()
    child = subprocess.run([sys.executable, "-c", CHILD.format(program=PROGRAM),
                            str(jobs_file), str(report_file)],
                           cwd=directory, env=env, capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    report = pickle.loads(report_file.read_bytes())
    return {name: (expected[name], report[name]) for name in jobs}


@pytest.mark.parametrize("name", ["buckets", "words", "slicing", "blend", "net"])
def test_fresh_process_results_match_eager(fresh_process, name):
    expected, report = fresh_process[name]
    assert len(report["results"]) == len(expected)
    for (kind, got), (want_kind, want) in zip(report["results"], expected):
        assert kind == want_kind
        assert_same(got, want, name)


def test_fresh_process_runs_the_same_native_code(program, fresh_process):
    """Loaded, the function computes what it computed before saving, bit for bit (the
    same graph, specialized the same way)."""
    _, report = fresh_process["blend"]
    _, calls = function_jobs(program)["blend"]
    original = eager_results(tsjit.script(program.blend), calls)
    for (_, got), (_, want) in zip(report["results"], original):
        assert_same(got, want, "blend")


def test_fresh_process_raises_what_python_raises(fresh_process):
    expected, report = fresh_process["slicing"]
    assert ("raised", "ValueError") in expected
    assert [r[0] for r in report["results"]] == [r[0] for r in expected]


@pytest.mark.parametrize("name", ["buckets", "words", "slicing", "blend"])
def test_fresh_process_inspects_like_the_original(program, fresh_process, name):
    original = tsjit.script(getattr(program, name))
    _, report = fresh_process[name]
    assert report["type"] == "ScriptFunction"
    assert report["graph"] == str(original.graph)
    assert report["code"] == original.code
    assert report["schema"] == original.schema


def test_defaults_survive(fresh_process):
    _, report = fresh_process["buckets"]
    assert report["schema"] == "buckets(List[float] xs, str label='bin', int n=5) -> " \
                               "Dict[str, float]"


def test_loaded_elementwise_function_runs_native_kernels(fresh_process):
    _, report = fresh_process["blend"]
    assert report["stats"]["calls"] == 6
    assert report["stats"]["kernel_launches"] > 0, (report["stats"], report["graph_for"])
    assert "prim::FusionGroup" in report["graph_for"]


def test_loaded_module_inspects_like_the_original(program, fresh_process):
    original = tsjit.script(program.Net())
    _, report = fresh_process["net"]
    assert report["type"] == "ScriptModule"
    assert report["graph"] == str(original.graph)
    assert report["schema"] == original.forward.schema


def test_loaded_module_attributes_and_constants(program, tmp_path):
    original = program.Net()
    path = tmp_path / "net.tsjit"
    tsjit.script(original).save(path)
    loaded = load(path)
    assert_same(loaded.layers[1].weight, original.layers[1].weight)
    assert_same(loaded.offset, original.offset)
    assert_same(loaded.limits, original.limits)
    assert_same(loaded.names, original.names)
    assert loaded.heads["a"].shift == 1.0
    assert type(loaded.layers).__name__ == "ModuleList"
    assert loaded.depth == 2
    with pytest.raises(AttributeError, match="constant"):
        loaded.depth = 3
    with pytest.raises(TypeError, match="title"):
        loaded.title = 5
    loaded.title = "renamed"            # an attribute set after loading is what code reads
    assert loaded.summary() == ("renamed", 13)


def test_module_state_written_by_code_is_saved(program, tmp_path):
    scripted = tsjit.script(program.Net())
    scripted(ARRAYS[0])
    scripted(ARRAYS[0])
    buffer = io.BytesIO()
    scripted.save(buffer)
    buffer.seek(0)
    loaded = load(buffer)
    assert loaded.total_calls() == 4
    loaded(ARRAYS[0])
    assert loaded.total_calls() == 6 and scripted.total_calls() == 4


def test_shared_array_stays_shared(program, tmp_path):
    net = program.Net()
    net.head.weight = net.layers[0].weight
    buffer = io.BytesIO()
    tsjit.script(net).save(buffer)
    buffer.seek(0)
    loaded = load(buffer)
    assert loaded.head.weight is loaded.layers[0].weight


def test_calls_of_ignored_functions_are_saved_by_name(program, tmp_path):
    """A function or module calling a @tsjit.ignore function saves (it was refused); the
    loaded code calls the function of that name, found in the modules already imported
    (see ir/ignored_functions.py and test_load_untrusted.py for what else it refuses)."""
    tsjit.script(program.uses_ignored).save(tmp_path / "f.tsjit")
    loaded = load(tmp_path / "f.tsjit")
    assert "Ignored(saved_program_under_test, python_log)" in str(loaded.graph)
    for x in (2.5, -1.0, 0.0):
        assert_same(loaded(x), program.uses_ignored(x))
    module = program.CallsIgnored()
    tsjit.script(module).save(tmp_path / "m.tsjit")
    x = np.arange(3.0)
    assert_same(load(tmp_path / "m.tsjit")(x), module(x))


def test_calls_of_ignored_functions_need_their_module_imported(program, tmp_path):
    path = tmp_path / "f.tsjit"
    tsjit.script(program.uses_ignored).save(path)
    child = subprocess.run(
        [sys.executable, "-c", "import sys, tsjit\nf = tsjit.load(sys.argv[1])\n"
         "try:\n    f(1.5)\nexcept LookupError as e:\n    print(e)\n", str(path)],
        env=child_environment(), capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    assert "module 'saved_program_under_test' is not imported" in child.stdout


def local_ignored_call():
    @tsjit.ignore
    def local(x: float) -> float:
        return x

    def calls_local(x: float) -> float:
        return local(x) + 1.0
    return calls_local


def test_calls_of_local_ignored_functions_cannot_be_saved(tmp_path):
    scripted = tsjit.script(local_ignored_call())
    with pytest.raises(SerializationError, match="'local_ignored_call.<locals>.local'.*top "
                                                 "level"):
        scripted.save(tmp_path / "f.tsjit")


def test_program_classes_are_saved_as_data(program, tmp_path):
    """A script class and an exception class of the program travel in the archive
    (test_save_classes.py has the whole story)."""
    for name in ("uses_class", "raises_own_exception"):
        tsjit.script(getattr(program, name)).save(tmp_path / f"{name}.tsjit")
    assert load(tmp_path / "uses_class.tsjit")(2.5) == program.uses_class(2.5)
    raises = load(tmp_path / "raises_own_exception.tsjit")
    assert raises(2) == 2
    with pytest.raises(Exception, match="odd") as raised:
        raises(3)
    assert type(raised.value).__qualname__ == "Odd" and type(raised.value) is not program.Odd


def test_unsaveable_attribute_value_is_named(program, tmp_path):
    net = program.Net()
    net.layers[1].shift = 0.5
    scripted = tsjit.script(net)
    net.layers[1].weight = np.array([object()], dtype=object)
    with pytest.raises(SerializationError, match=r"self\.layers\[1\]\.weight"):
        scripted.save(tmp_path / "net.tsjit")


def test_method_alone_cannot_be_saved(program, tmp_path):
    with pytest.raises(SerializationError, match="save the module"):
        tsjit.script(program.Net()).summary.save(tmp_path / "m.tsjit")


def _saved_blend(program, tmp_path) -> Path:
    path = tmp_path / "blend.tsjit"
    tsjit.script(program.blend).save(path)
    return path


def _rewrite_manifest(path: Path, change) -> None:
    with zipfile.ZipFile(path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    manifest = json.loads(members["manifest.json"])
    change(manifest)
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def test_newer_format_version_is_refused(program, tmp_path):
    path = _saved_blend(program, tmp_path)
    _rewrite_manifest(path, lambda m: m.update(version=archive.VERSION + 1))
    with pytest.raises(SerializationError, match=f"format version {archive.VERSION + 1}"):
        load(path)


def test_not_an_archive(tmp_path):
    path = tmp_path / "junk.tsjit"
    path.write_bytes(b"not a zip file at all")
    with pytest.raises(SerializationError, match="not a tsjit archive"):
        load(path)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(SerializationError, match="not a tsjit archive"):
        load(path)


def test_corrupt_graph_is_refused(program, tmp_path):
    path = _saved_blend(program, tmp_path)
    with zipfile.ZipFile(path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    members["code/function.ir"] = members["code/function.ir"].replace(b"return (",
                                                                      b"return (%undefined, ")
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(SerializationError, match="corrupt archive"):
        load(path)


def test_archive_naming_program_code_is_refused(program, tmp_path):
    """A crafted graph naming an object outside the standard library, NumPy and tsjit
    does not make load import the program."""
    path = _saved_blend(program, tmp_path)
    with zipfile.ZipFile(path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    text = members["code/function.ir"].decode()
    assert "prim::Constant[value=0.5]" in text
    text = text.replace("prim::Constant[value=0.5]", f"prim::Constant[value=Py({PROGRAM}.scale)]")
    members["code/function.ir"] = text.encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(SerializationError, match="program's own code"):
        load(path)


def test_save_load_in_memory_in_same_process(program):
    """Loading where the program is also loaded keeps the two apart."""
    scripted = tsjit.script(program.Net())
    buffer = io.BytesIO()
    scripted.save(buffer)
    buffer.seek(0)
    first = load(buffer)
    buffer.seek(0)
    second = load(buffer)
    for loaded in (first, second):
        assert_same(loaded(ARRAYS[0]), scripted(ARRAYS[0]))
    assert type(first.head) is not type(second.head)


def test_source_is_not_in_the_archive(program, tmp_path):
    path = _saved_blend(program, tmp_path)
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == ["code/function.ir", "data.npz", "manifest.json"]
        everything = b"".join(archive.read(n) for n in archive.namelist())
    assert textwrap.dedent(SOURCE).encode()[:200] not in everything
    assert PROGRAM.encode() not in everything
