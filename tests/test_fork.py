"""Processes forked (multiprocessing's "fork" start method) from a process whose other
threads are running kernels or compiling: the children run scripted functions, old and
new, with eager's results and without hanging on a lock a vanished thread held.

Each scenario runs in a fresh interpreter, so that the test process itself never forks
with threads running."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from _subprocess import child_environment

PROGRAM = """
import multiprocessing
import threading

import numpy as np

import tsjit


def eager_gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def eager_scaled(x, y):
    return x * 3 - y / 2


def eager_count(n: int) -> int:
    total = 0
    for i in range(n):
        if i % 3 == 0:
            total += i
    return total


gelu, count = tsjit.script(eager_gelu), tsjit.script(eager_count)


def same(result, expected):
    return (type(result) is type(expected) and result.dtype == expected.dtype
            and np.allclose(result, expected, rtol=1e-5, atol=1e-6))


def in_child(seed):
    y = np.random.default_rng(seed).standard_normal(300_000)
    launches = gelu.stats()["kernel_launches"]
    fresh = tsjit.script(eager_gelu)
    ok = (same(gelu(y), eager_gelu(y))                                  # compiled before
          and same(gelu(y.astype(np.float32)), eager_gelu(y.astype(np.float32)))  # new here
          and same(fresh(y), eager_gelu(y)) and same(fresh(y), eager_gelu(y))
          and count(10_000 + seed) == eager_count(10_000 + seed))
    return ok and gelu.stats()["kernel_launches"] > launches


def launch_until(stop):
    x = np.linspace(-3.0, 3.0, 300_000)
    while not stop.is_set():
        assert same(gelu(x), eager_gelu(x))


def compile_until(stop):
    # Distinct kernels (dtype x rank x function), each compiled for real: the cache
    # directory starts empty.
    dtypes = [np.float64, np.float32, np.int64, np.int32, np.int16, np.uint8]
    shapes = [(7,), (3, 5), (2, 3, 4)]
    for fn in (eager_gelu, eager_scaled):
        for shape in shapes:
            for dtype in dtypes:
                if stop.is_set():
                    return
                scripted = tsjit.script(fn)
                args = [np.ones(shape, dtype)] * (fn.__code__.co_argcount)
                for _ in range(2):
                    scripted(*args)


gelu(np.linspace(-3.0, 3.0, 300_000))  # the pool has run kernels before the forks
count(10)
stop = threading.Event()
busy = [threading.Thread(target=BUSY, args=(stop,)) for _ in range(THREADS)]
for thread in busy:
    thread.start()
try:
    fork = multiprocessing.get_context("fork")
    for _ in range(2):
        with fork.Pool(2) as pool:
            assert all(pool.map_async(in_child, range(2)).get(timeout=60))
finally:
    stop.set()
    for thread in busy:
        thread.join()
print("ok")
"""


@pytest.mark.parametrize("busy, threads", [
    ("launch_until", 2),    # threads launching compiled kernels while the parent forks
    ("compile_until", 1),   # a thread compiling kernels while the parent forks
])
def test_forked_children_run_scripted_functions(tmp_path, busy, threads):
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent(PROGRAM).replace("BUSY", busy)
                       .replace("THREADS", str(threads)))
    env = child_environment(TSJIT_CACHE_DIR=str(tmp_path / "cache"))
    result = subprocess.run([sys.executable, str(program)], env=env, capture_output=True,
                            text=True, timeout=400)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


def test_llvm_lock_is_held_across_fork_once_llvmlite_is_in_use():
    # forking read llvmlite's lock from an attribute that llvmlite 0.50 does not have, so
    # a fork could copy LLVM in the middle of another thread's call.
    import llvmlite.binding.ffi as ffi

    from tsjit import forking

    assert forking.llvmlite_lock() is ffi.lib._lock._lock
