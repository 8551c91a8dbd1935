"""Tiered execution: background compilation on and off gives the same results.

The worker thread is held up by a job that waits for an event (`held_worker`), so that a
test decides when a compile may run: calls made meanwhile are served by the interpreter
tier, the first call after the compile is served by the compiled code.
"""
from __future__ import annotations

import gc
import logging
import os
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import numpy as np
import pytest
from _differential import assert_same
from _subprocess import child_environment

import tsjit
from tsjit.executor import background, pipeline
from tsjit.executor import graph_executor as graph_executor_module

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def background_on(default_settings):
    tsjit.set_background_compilation(True)
    yield


@pytest.fixture
def held_worker(background_on):
    """The worker thread blocked until `release()` (at the latest when the test ends)."""
    gate = threading.Event()
    background.submit(gate.wait)
    yield gate.set
    gate.set()


def poly(x: tsjit.Tensor) -> tsjit.Tensor:     # + - * /: every tier agrees bit for bit
    return 0.5 * x * (1.0 + 0.7978845608 * (x + 0.044715 * x * x * x)) / 3.0


def drawdown(prices: tsjit.Tensor) -> float:
    peak = prices[0]
    worst = 0.0
    for i in range(prices.shape[0]):
        p = prices[i]
        if p > peak:
            peak = p
        d = (peak - p) / peak
        if d > worst:
            worst = d
    return float(worst)


def scaled_sum(x: tsjit.Tensor, k: int) -> tsjit.Tensor:
    s = x[0] * 0
    for i in range(x.shape[0]):
        s += x[i] * k
    return s


def histogram(values: tsjit.Tensor, counts: tsjit.Tensor, lo: float, hi: float) -> tsjit.Tensor:
    # typed by its arguments: its first call waits for its compile
    scale = counts.shape[0] / (hi - lo)
    for i in range(values.shape[0]):
        v = values[i]
        if v >= lo and v < hi:
            counts[int((v - lo) * scale)] += 1
    return counts


CASES = [
    (poly, [(np.linspace(-3, 3, 101, dtype=np.float32),), (np.linspace(-2, 2, 7),),
            (np.linspace(-3, 3, 101, dtype=np.float32),)]),
    (drawdown, [(100 + np.cumsum(np.random.default_rng(1).standard_normal(500)),),
                (np.array([3.0, 1.0, 2.0, 0.5], dtype=np.float32),),
                (100 + np.cumsum(np.random.default_rng(2).standard_normal(50)),)]),
    (scaled_sum, [(np.arange(20, dtype=np.int32), 3), (np.arange(5.0), 2),
                  (np.arange(20, dtype=np.int32), -1)]),
    (histogram, [(np.random.default_rng(4).standard_normal(300), np.zeros(8, np.int64), -2.0,
                  2.0),
                 (np.linspace(-1, 1, 9, dtype=np.float32), np.zeros(4, np.int32), -1.0, 1.5)]),
]


def _fresh(args: tuple) -> list:
    """The arguments, arrays copied (some functions write into theirs)."""
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _results(fn, calls, finish=lambda: None) -> list:
    scripted = tsjit.script(fn)
    out = []
    for k, args in enumerate(calls * 3):
        out.append(scripted(*_fresh(args)))
        if k == len(calls):
            finish()
    return out, scripted


@pytest.mark.parametrize("fn, calls", CASES, ids=[c[0].__name__ for c in CASES])
def test_background_and_synchronous_compilation_give_the_same_results(default_settings, fn,
                                                                       calls):
    want = [fn(*_fresh(args)) for args in calls * 3]
    synchronous, _ = _results(fn, calls)
    tsjit.set_background_compilation(True)
    gate = threading.Event()
    background.submit(gate.wait)
    try:
        tiered, scripted = _results(fn, calls, finish=gate.set)
    finally:
        gate.set()
    for k, (a, b, w) in enumerate(zip(synchronous, tiered, want)):
        assert_same(a, w, f"synchronous call {k}")
        assert_same(b, a, f"background call {k}")
    stats = scripted.stats()
    assert stats["background_compiles"] >= 1
    assert stats["interpreted_runs"] >= 1       # the worker was held: the interpreter served


def test_calls_switch_to_compiled_code_once_it_is_ready(held_worker):
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    f = tsjit.script(poly)
    for _ in range(3):
        assert_same(f(x), poly(x))
    assert f.stats()["kernel_launches"] == 0
    assert f.stats()["interpreted_runs"] == 3
    held_worker()
    f.executor._job.wait()
    assert_same(f(x), poly(x))
    stats = f.stats()
    assert (stats["kernel_launches"], stats["interpreted_runs"], stats["specializations"]) \
        == (1, 3, 1)


def test_a_first_call_of_loop_code_waits_for_its_compile(background_on, monkeypatch):
    """A first call of loop code typed by its arguments runs the native code compiled for
    it: the interpreter would run the loop at about plain Python's speed (histogram 200k:
    ~0.2 s), the compile takes ~0.1-0.3 s (it ran interpreted, its compile held)."""
    monkeypatch.setattr(graph_executor_module, "FIRST_CALL_WAIT_SECONDS", 120.0)
    values = np.random.default_rng(5).standard_normal(200_000)
    f = tsjit.script(histogram)
    got = f(values, np.zeros(16, np.int64), -3.0, 3.0)
    assert_same(got, histogram(values, np.zeros(16, np.int64), -3.0, 3.0))
    stats = f.stats()
    assert (stats["interpreted_runs"], stats["kernel_launches"], stats["specializations"]) \
        == (0, 1, 1)


def test_the_call_after_a_profiling_run_of_loop_code_waits_for_its_compile(
        background_on, monkeypatch):
    """drawdown's loop-carried numbers are profiled in its first call; the second waits
    for the compile that follows, as a first call typed by its arguments would."""
    monkeypatch.setattr(graph_executor_module, "FIRST_CALL_WAIT_SECONDS", 120.0)
    prices = 100 + np.cumsum(np.random.default_rng(7).standard_normal(3000))
    f = tsjit.script(drawdown)
    for _ in range(2):
        assert f(prices) == drawdown(prices)
    stats = f.stats()
    assert (stats["profiled_runs"], stats["interpreted_runs"], stats["kernel_launches"]) \
        == (1, 0, 1)


def test_a_loop_compile_that_outlasts_the_wait_goes_on_beside_the_interpreted_call(
        background_on, monkeypatch):
    """The first call waits FIRST_CALL_WAIT_SECONDS at most, then runs in the interpreter
    while the compile goes on (it is not held until the call returns)."""
    monkeypatch.setattr(graph_executor_module, "FIRST_CALL_WAIT_SECONDS", 0.05)
    gate, events = threading.Event(), []
    optimize = pipeline.optimize

    def gated(graph):
        events.append("compile")
        gate.wait(60)
        return optimize(graph)
    monkeypatch.setattr(pipeline, "optimize", gated)
    values = np.random.default_rng(6).standard_normal(1000)
    f = tsjit.script(histogram)
    try:
        got = f(values, np.zeros(16, np.int64), -3.0, 3.0)
        events.append("returned")
    finally:
        gate.set()
    assert events == ["compile", "returned"]
    assert_same(got, histogram(values, np.zeros(16, np.int64), -3.0, 3.0))
    assert f.stats()["interpreted_runs"] == 1
    f.executor.specialize_for(values, np.zeros(16, np.int64), -3.0, 3.0)
    assert_same(f(values, np.zeros(16, np.int64), -3.0, 3.0), got)
    assert f.stats()["kernel_launches"] == 1


def test_a_first_call_of_large_straight_line_code_holds_its_compile_until_it_returns(
        background_on, monkeypatch):
    """Large straight-line code (compiles for seconds; NumPy runs it in ms) runs its first
    call interpreted, and its compile starts after that call (it could only serve the next
    call, and would take the GIL from this one)."""
    monkeypatch.setattr(background, "HELD_JOB_START_SECONDS", 600.0)
    monkeypatch.setattr(graph_executor_module, "SMALL_GRAPH_NODES", 2)
    events = []
    optimize = pipeline.optimize

    def spy(graph):
        events.append("compile")
        return optimize(graph)
    monkeypatch.setattr(pipeline, "optimize", spy)
    x = np.linspace(-3, 3, 1000)
    f = tsjit.script(poly)
    got = f(x)
    events.append("returned")
    f.executor.specialize_for(x)
    assert events == ["returned", "compile"]
    assert_same(got, poly(x))
    assert f.stats()["interpreted_runs"] == 1
    assert_same(f(x), got)
    assert f.stats()["kernel_launches"] == 1


# A process whose LLVM waits until the first call of `shifted` has returned.
_GATED_FIRST_CALL = """
import threading

import numpy as np

import tsjit
from tsjit.codegen import llvm_jit
from tsjit.executor import graph_executor

graph_executor.FIRST_CALL_WAIT_SECONDS = 600.0
gate = threading.Event()
emit = llvm_jit.optimize_and_emit


def gated_emit(*args, **kwargs):
    gate.wait(30)
    return emit(*args, **kwargs)


llvm_jit.optimize_and_emit = gated_emit


def shifted(x: tsjit.Tensor) -> tsjit.Tensor:
    return x * 0.8125 + 3.0625


f = tsjit.script(shifted)
x = np.linspace(-1.0, 1.0, 1000)
assert np.array_equal(f(x), shifted(x))
first = f.stats()
gate.set()
"""


def _cold_then_warm(tmp_path, program: str) -> list[str]:
    """The outputs of `program` run twice with one disk cache (empty at first)."""
    path = tmp_path / "program.py"
    path.write_text(program)
    env = child_environment(TSJIT_BACKGROUND_COMPILE="1", TSJIT_DISK_CACHE="1",
                            TSJIT_CACHE_DIR=str(tmp_path / "cache"))
    outputs = []
    for _ in ("cold", "warm"):
        done = subprocess.run([sys.executable, str(path)], env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.strip())
    return outputs


def test_a_first_call_waits_for_code_that_loads_not_for_llvm(tmp_path):
    """A first call typed by its arguments waits for its compile while the kernels only
    load (here from a warm disk cache), and runs in the interpreter as soon as LLVM has
    to compile one (the cold cache: LLVM is held until that call has returned; the
    call used to wait for it)."""
    cold, warm = _cold_then_warm(tmp_path, _GATED_FIRST_CALL + """
f.executor.specialize_for(x)
assert np.array_equal(f(x), shifted(x))
print(first["kernel_launches"], first["interpreted_runs"], f.stats()["kernel_launches"])
""")
    assert cold == "0 1 1"      # interpreted first, compiled code next
    assert warm == "1 0 2"      # loaded from the disk cache within the first call


def test_the_call_after_a_profiling_run_waits_for_code_that_loads(tmp_path):
    """A function profiled in its first call (softmax's keepdims reductions): with a warm
    disk cache its second call waits for the kernel to load and runs it (it ran in the
    interpreter while the kernel loaded, ~10 calls); with a cold one it does not wait for
    LLVM."""
    cold, warm = _cold_then_warm(tmp_path, _GATED_FIRST_CALL + """

def softmax(x: tsjit.Tensor) -> tsjit.Tensor:
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


g = tsjit.script(softmax)
y = np.linspace(-3.0, 3.0, 64).reshape(4, 16)
np.testing.assert_allclose(g(y), softmax(y), rtol=1e-12)
np.testing.assert_allclose(g(y), softmax(y), rtol=1e-12)
print(g.stats()["profiled_runs"], g.stats()["interpreted_runs"], g.stats()["kernel_launches"])
g.executor.specialize_for(y)
""")
    assert cold.splitlines()[-1] == "1 1 0"     # the second call did not wait for LLVM
    assert warm.splitlines()[-1] == "1 0 1"     # it waited for the load and ran the kernel


def test_a_process_ending_after_one_call_leaves_its_kernels_in_the_disk_cache(tmp_path):
    """A first call that did not wait for LLVM, in a process that then ends: the compile
    finishes at exit, so that the next process loads the kernels within its first call."""
    launches = _cold_then_warm(tmp_path, _GATED_FIRST_CALL + """
print(first["kernel_launches"])
""")
    assert launches == ["0", "1"]


def test_a_held_compile_starts_once_its_caller_used_its_cpu_time(background_on, monkeypatch):
    monkeypatch.setattr(background, "HELD_JOB_START_SECONDS", 0.0)
    job = background.submit(lambda: None, held=True)
    assert job.wait(60)         # never released: the holder's CPU time let it start


def test_a_held_compile_whose_caller_stopped_starts_after_a_while(background_on,
                                                                  monkeypatch):
    monkeypatch.setattr(background, "HELD_JOB_START_SECONDS", 600.0)
    monkeypatch.setattr(background, "HELD_JOB_MAX_SECONDS", 0.0)
    job = background.submit(lambda: None, held=True)
    assert job.wait(60)         # never released, its holder idle: the wall-time bound


def test_graph_for_waits_for_the_background_compile(held_worker):
    f = tsjit.script(poly)
    x = np.ones(8, np.float32)
    f(x)
    held_worker()
    assert "prim::FusionGroup" in str(f.graph_for(x))


def test_threads_racing_for_a_compile_compile_it_once(held_worker):
    f = tsjit.script(drawdown)
    prices = 100 + np.cumsum(np.random.default_rng(3).standard_normal(2000))
    want = drawdown(prices)
    start = threading.Barrier(4)
    results: list = []

    def caller():
        start.wait()
        for _ in range(5):
            results.append(f(prices))

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for t in threads:
        t.start()
    held_worker()
    for t in threads:
        t.join()
    f.executor.specialize_for(prices)
    results.append(f(prices))
    assert len(results) == 21
    for r in results:
        assert_same(r, want)
    stats = f.stats()
    assert stats["background_compiles"] == 1
    assert stats["specializations"] == 1


def test_a_failing_background_compile_is_logged_and_the_function_runs_interpreted(
        background_on, monkeypatch, caplog):
    def broken(graph, context):
        raise RuntimeError("lowering exploded")
    monkeypatch.setattr(pipeline, "lower", broken)
    f = tsjit.script(poly)
    x = np.linspace(-1, 1, 50)
    with caplog.at_level(logging.WARNING, logger="tsjit.executor"):
        f(x)
        f.executor.specialize_for(x)
        results = [f(x) for _ in range(3)]
    for r in results:
        assert_same(r, poly(x))
    assert f.executor.state == "interpreted"
    assert f.stats()["kernel_launches"] == 0
    failures = [r for r in caplog.records if "optimization failed" in r.getMessage()]
    assert len(failures) == 1
    assert "lowering exploded" in str(failures[0].exc_info[1])


def test_a_dropped_executor_is_not_kept_alive_by_its_queued_compile(held_worker):
    executor = graph_executor_module.GraphExecutor(tsjit.script(poly).graph.copy(), "poly")
    executor(np.ones(4))
    job = executor._job
    assert job is not None and not job.done
    alive = weakref.ref(executor)
    del executor
    gc.collect()
    assert alive() is None
    held_worker()
    assert job.wait(60)


def test_a_reset_while_compiling_discards_the_stale_compile(held_worker):
    f = tsjit.script(poly)
    x = np.ones(4, np.float32)
    f(x)
    job = f.executor._job
    tsjit.set_fusion_enabled(False)          # resets every executor
    held_worker()
    job.wait()
    assert f.executor.state == "new"
    assert_same(f(x), poly(x))
    assert f.stats()["kernel_launches"] == 0


def test_a_long_compile_says_so_once(monkeypatch, caplog, default_settings):
    monkeypatch.setattr(background, "LONG_COMPILE_SECONDS", 0.0)
    f = tsjit.script(drawdown)
    with caplog.at_level(logging.INFO, logger="tsjit.compile"):
        f(np.arange(1.0, 9.0))
        f(np.arange(1.0, 9.0))
    messages = [r.getMessage() for r in caplog.records if r.name == "tsjit.compile"]
    assert any(m.startswith("compiled drawdown (depth 0) for ") for m in messages), messages


def test_a_process_exiting_during_a_background_compile_exits_cleanly(tmp_path):
    body = "\n".join(f"    y{k} = np.tanh(y{k - 1} * {k + 1}.5 + x) - y{k - 1} * 0.25"
                     for k in range(1, 60))
    program = tmp_path / "exit_mid_compile.py"
    program.write_text(f"""
import numpy as np
import tsjit
def big(x: tsjit.Tensor) -> tsjit.Tensor:
    y0 = x * 0.5
{body}
    return y59
f = tsjit.script(big)
x = np.linspace(-1, 1, 1000)
r = f(x)
assert np.allclose(r, big(x))
assert f.executor.state == "compiling", f.executor.state
print("exiting", flush=True)
""")
    env = {**os.environ, "TSJIT_BACKGROUND_COMPILE": "1", "TSJIT_DISK_CACHE": "0",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(program)], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exiting"
    assert done.stderr == ""


def test_a_process_exiting_while_the_back_end_loads_exits_cleanly(tmp_path):
    """The exit waits for the back end's import on the worker (seen: a loop program exiting
    right after its first call, whose compile had begun importing llvmlite, printed an
    AttributeError from the exit handler)."""
    program = tmp_path / "exit_mid_import.py"
    program.write_text("""
import sys, threading, time, types
import tsjit
from tsjit.executor import background
inside = threading.Event()
def load_back_end():     # as background.load_back_end, caught halfway through llvmlite's
    with background._importing:
        sys.modules["llvmlite.binding.ffi"] = types.ModuleType("llvmlite.binding.ffi")
        inside.set()
        time.sleep(0.5)
        del sys.modules["llvmlite.binding.ffi"]
        import llvmlite.binding
background.submit(load_back_end)
inside.wait()
print("exiting", flush=True)
""")
    done = subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                          timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exiting"
    assert done.stderr == ""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX only")
def test_a_child_forked_while_a_compile_waits_finishes_it(tmp_path):
    program = tmp_path / "fork_mid_compile.py"
    program.write_text("""
import os, threading
import numpy as np
import tsjit
from tsjit.executor import background
def poly(x: tsjit.Tensor) -> tsjit.Tensor:
    return x * x + 1.0
gate = threading.Event()
background.submit(gate.wait)
f = tsjit.script(poly)
x = np.arange(5.0)
f(x)
assert f.executor.state == "compiling"
pid = os.fork()
if pid == 0:
    gate.set()               # the child's copy of the held job may now finish
    f.executor._job.wait(120)
    ok = f.executor.state == "optimized" and np.array_equal(f(x), x * x + 1.0) \\
        and f.stats()["kernel_launches"] == 1
    os._exit(0 if ok else 3)
gate.set()
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
""")
    env = {**os.environ, "TSJIT_BACKGROUND_COMPILE": "1", "TSJIT_DISK_CACHE": "0",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(program)], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0", done.stderr


def test_a_first_call_whose_graph_does_not_compile_leaves_the_next_call_a_fresh_start(
        background_on, monkeypatch):
    """A first call that failed half-way into background compilation left the executor
    'compiling' with no code to run: every later call recursed into itself until
    RecursionError.  Now each call fails as the first did."""
    def refuse(*args, **kwargs):
        raise ValueError("no code for this graph")
    monkeypatch.setattr(graph_executor_module, "compile_graph", refuse)
    scripted = tsjit.script(poly)
    for _ in range(3):
        with pytest.raises(ValueError, match="no code for this graph"):
            scripted(np.ones(3))


def test_the_native_code_of_a_loop_compiles_with_its_specialization(background_on,
                                                                    monkeypatch):
    """A loop's native region compiles on the worker, for the argument kinds its
    specialization expects, so the next call runs it (it compiled on the caller's thread,
    in the call that reached it first)."""
    from tsjit.codegen.scalar import native_function
    compiled_on = []
    original = native_function.NativeFunction._compile

    def spy(self, key):
        compiled_on.append(threading.current_thread().name)
        return original(self, key)
    monkeypatch.setattr(native_function.NativeFunction, "_compile", spy)
    prices = 100 + np.cumsum(np.random.default_rng(3).standard_normal(2000))
    f = tsjit.script(drawdown)
    want = drawdown(prices)
    assert f(prices) == want
    job = f.executor._job
    if job is not None:
        job.wait()
    assert compiled_on == ["tsjit-compile"]
    launches = f.stats()["kernel_launches"]
    assert f(prices) == want
    assert f.stats()["kernel_launches"] == launches + 1 and compiled_on == ["tsjit-compile"]


def test_the_interpreter_tier_is_generated_by_the_first_call_that_needs_it(held_worker,
                                                                          monkeypatch):
    """The call that queues a specialization (a first call, often) does not also generate
    the interpreter that serves calls while it compiles: the next call does, if it comes."""
    generated = []
    compile_graph = graph_executor_module.compile_graph
    monkeypatch.setattr(graph_executor_module, "compile_graph",
                        lambda graph, *rest: generated.append(graph) or compile_graph(graph,
                                                                                      *rest))
    prices = 100 + np.cumsum(np.random.default_rng(4).standard_normal(300))
    f = tsjit.script(drawdown)
    assert f(prices) == drawdown(prices)
    assert len(generated) == 1           # the profiling graph
    assert f(prices) == drawdown(prices) and f(prices) == drawdown(prices)
    assert len(generated) == 2 and f.stats()["interpreted_runs"] == 2
