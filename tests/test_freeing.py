"""Scripted functions, classes and modules are freed when the program drops them, with
their graphs and compiled code: a long-lived process that scripts functions in a loop
stays bounded.  Measured in a fresh subprocess (RSS of this process depends on every test
that ran before)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from _subprocess import child_environment

PROGRAM = '''
from typing import Dict, List

import numpy as np

import tsjit


def interpreted(d: Dict[str, int], k: str) -> int:
    return d[k] + len(k)


def fused(x, y):
    return x * 2.0 + y * y - 1.0


def native(n: int) -> float:
    s = 0.0
    for i in range(n):
        s += i * 0.5
    return s


def make_class():
    class Point:
        def __init__(self, x: float, y: float):
            self.x = x
            self.y = y

        def moved(self, d: float):
            return Point(self.x + d, self.y)

    return Point


def use_point(p: "Point", d: float) -> float:
    return p.moved(d).x


class Scale(tsjit.Module):
    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor
'''

# Distinct kernels: each function has an operator sequence of its own (odd ones reduce).
DISTINCT = '''
def fused_{i}(x, y):
    return {expression}{reduction}


def native_{i}(n: int) -> int:
    s = 0
    for i in range(n):
        s = s {op} i + {i}
    return s
'''

DRIVER = '''
import gc, json, sys, types, weakref
sys.path.insert(0, sys.argv[1])
import numpy as np
import tsjit
from tsjit.codegen.engine import CompiledModule
import program, distinct

CYCLES, MEASURED_FROM = int(sys.argv[2]), int(sys.argv[3])


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def collect():
    """Twice: what a weak dictionary drops when its key dies in one collection (a
    function's compiled graph) is freed by the next one."""
    gc.collect()
    gc.collect()


def fresh(fn, globals_=None):
    """A new function object with fn's code (its source is fn's): scripted anew."""
    copy = types.FunctionType(fn.__code__, globals_ or fn.__globals__, fn.__name__)
    copy.__annotations__ = dict(fn.__annotations__)
    return copy


x, y = np.linspace(0, 1, 1000), np.linspace(1, 2, 1000)
kinds = {"interpreted": (program.interpreted, ({"ab": 1}, "ab")),
         "fused": (program.fused, (x, y)),
         "native": (program.native, (100,))}
report = {}
for kind, (function, args) in kinds.items():
    functions, scripted, stats = [], [], {}
    for cycle in range(CYCLES):
        fn = fresh(function)
        s = tsjit.script(fn)
        for _ in range(3):
            assert s(*args) == function(*args) if kind != "fused" else \\
                np.array_equal(s(*args), function(*args))
        stats = s.stats()
        functions.append(weakref.ref(fn))
        scripted.append(weakref.ref(s))
        del fn, s
        if cycle + 1 == MEASURED_FROM:
            collect()
            start = rss()
    collect()
    report[kind] = {"growth": rss() - start, "stats": stats,
                    "functions_alive": sum(r() is not None for r in functions),
                    "scripted_alive": sum(r() is not None for r in scripted)}

classes = []
for cycle in range(100):
    cls = program.make_class()
    fn = fresh(program.use_point, {**vars(program), "Point": cls})
    assert tsjit.script(fn)(cls(1.0, 2.0), 0.5) == 1.5
    classes.append(weakref.ref(cls))
    del cls, fn
modules = []
for cycle in range(100):
    module = program.Scale(2.0)
    assert np.array_equal(tsjit.script(module)(x), x * 2.0)
    modules.append(weakref.ref(module))
    del module
collect()
report["classes_alive"] = sum(r() is not None for r in classes)
report["modules_alive"] = sum(r() is not None for r in modules)


def loaded_modules():
    return sum(isinstance(o, CompiledModule) for o in gc.get_objects())


before = loaded_modules()
for i in range(distinct.COUNT):
    f = tsjit.script(getattr(distinct, f"fused_{i}"))
    n = tsjit.script(getattr(distinct, f"native_{i}"))
    for _ in range(2):
        f(x, y), n(10)
    assert f.stats()["kernel_launches"] > 0, f.stats()
    assert n.stats()["kernel_launches"] > 0, n.stats()
    delattr(distinct, f"fused_{i}"), delattr(distinct, f"native_{i}")
    del f, n
collect()
report["distinct_modules_loaded"] = loaded_modules() - before
print(json.dumps(report))
'''

OPERATORS = ["+", "-", "*"]


def _distinct_source(count: int) -> str:
    parts = [f"COUNT = {count}\n"]
    for i in range(count):
        ops = [OPERATORS[(i // 3 ** k) % 3] for k in range(4)]
        expression = "x " + " ".join(f"{op} {'y' if k % 2 else 'x'}" for k, op in
                                     enumerate(ops))
        parts.append(DISTINCT.format(i=i, expression=expression, op=ops[0],
                                     reduction=".sum(axis=-1)" if i % 2 else ""))
    return "".join(parts)


def _run(tmp_path: Path, cycles: int, measured_from: int, distinct: int) -> dict:
    (tmp_path / "program.py").write_text(PROGRAM)
    (tmp_path / "distinct.py").write_text(_distinct_source(distinct))
    env = child_environment(TSJIT_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(DRIVER), str(tmp_path),
                           str(cycles), str(measured_from)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_scripting_and_dropping_functions_stays_bounded(tmp_path):
    """1,000 script-and-drop cycles of each kind of function: the functions die, and RSS
    grows by less than 4 MiB from cycle 200 to cycle 1,000 (it grew by 24-37 MiB, 30 to
    47 KiB a function, when the compiler and the engine kept everything); distinct
    kernels are unloaded once their functions are gone, but for the engine's few most
    recent modules (32)."""
    report = _run(tmp_path, cycles=1000, measured_from=200, distinct=40)
    for kind in ("interpreted", "fused", "native"):
        assert report[kind]["functions_alive"] == 0, (kind, report[kind])
        assert report[kind]["scripted_alive"] == 0, (kind, report[kind])
        assert report[kind]["growth"] < 4 << 20, (kind, report[kind])
    # each kind ran as named
    assert report["interpreted"]["stats"]["kernel_launches"] == 0
    assert report["fused"]["stats"]["kernel_launches"] > 0
    assert report["native"]["stats"]["kernel_launches"] > 0
    assert report["classes_alive"] == 0
    assert report["modules_alive"] == 0
    assert report["distinct_modules_loaded"] <= 32, report
