"""Ctrl-C reaches long native code (issue 8, item 3).

Each test runs a child process that calls a long native scalar loop or a long fused
kernel, sends it SIGINT from the parent once it is inside, and checks that the child
raises KeyboardInterrupt promptly, with the effects so far at an iteration or block
boundary, and that it stays usable: the same function called again gives the eager
result. The signal comes from another process, as a terminal's Ctrl-C does: native code
holds the GIL (as Numba's does), so a timer thread inside the child could not run.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _subprocess import child_environment

SCALAR_CHILD = """
import time
import tsjit

def eager(n: int) -> int:
    acc = 0
{loop}
    return acc

spin = tsjit.script(eager)

for _ in range(3):
    assert spin(1000) == eager(1000)
assert spin.stats()["kernel_launches"] > 0, spin.stats()   # native code ran
{handler}
print("ready", flush=True)
start = time.perf_counter()
try:
    result = spin(10**12)
    print("finished", result, flush=True)
except KeyboardInterrupt:
    print("interrupted", time.perf_counter() - start, flush=True)
assert spin(12345) == eager(12345)
print("usable", flush=True)
"""

# The loops of SCALAR_CHILD (indented as its function body): a loop without loops inside
# (chunks of 2**16 passes), short inner loops inside a long one (they share the budget of
# back-edges between checks), a while loop.
SCALAR_LOOPS = {
    "chunked": """
    for i in range(n):
        acc = (acc * 31 + i) % 1000003""",
    "nested": """
    for i in range(n):
        for j in range(3):
            acc = (acc * 31 + i + j) % 1000003""",
    "while": """
    i = 0
    while i < n:
        acc = (acc * 31 + i) % 1000003
        i += 1""",
}

# Nested sines over 2**size elements: 20 over 2**24 are ~2 s of work, in blocks of ~10 ms.
KERNEL_CHILD = """
import time
import numpy as np
import tsjit
tsjit.set_num_threads({threads})

@tsjit.script
def heavy(x, out):
    out[:] = {expression}
    return out

def eager(x, out):
    out[:] = {expression}
    return out

small = np.linspace(0, 1, 5000)
for _ in range(3):   # sin is within 4 ulp of NumPy's
    before = heavy(small, np.zeros_like(small))
    assert np.allclose(before, eager(small, np.zeros_like(small)), rtol=1e-12, atol=0)
assert heavy.stats()["kernel_launches"] > 0, heavy.stats()
{handler}
x = np.linspace(0, 1, 1 << {size})
out = np.zeros_like(x)
print("ready", flush=True)
start = time.perf_counter()
try:
    heavy(x, out)
    print("finished", time.perf_counter() - start,
          np.allclose(out, eager(x, np.zeros_like(x)), rtol=1e-12, atol=0), flush=True)
except KeyboardInterrupt:
    written = np.count_nonzero(out[1:]) + 1
    # blocks are written whole, from the start of each thread's share
    print("interrupted", time.perf_counter() - start, 0 < written < x.size, flush=True)
assert np.array_equal(heavy(small, np.zeros_like(small)), before)
print("usable", flush=True)
print("handled", len(globals().get("caught", [])), flush=True)
"""

# One kernel (the fuser caps groups at MAX_GROUP_SIZE ops) long enough that the signal,
# sent 0.3 s in, finds it running: with 20 sines two threads finished 2**24 elements in
# ~0.3 s, and the interrupt came after the last block.
NESTED_SINES = "np.sin(" * 45 + "x" + ")" * 45

# A reduction (``reduction``: np.sum or np.max) of nested sines over an axis (one kernel:
# 45 sines and the reduction), on 2**size elements of ``shape``: a row kernel (axis -1,
# rows of 2**10), a column kernel (axis 0, 2**12 columns: 2 tiles) or one long row (cut
# into blocks inside the kernel).
REDUCTION_CHILD = """
import time
import numpy as np
import tsjit
tsjit.set_num_threads({threads})

@tsjit.script
def heavy(x):
    return {reduction}({expression}, axis={axis})

def eager(x):
    return {reduction}({expression}, axis={axis})

small = np.linspace(0, 1, 4096).reshape({small_shape})
for _ in range(3):
    before = heavy(small)
    assert np.allclose(before, eager(small), rtol=1e-12, atol=0)
assert heavy.stats()["kernel_launches"] > 0, heavy.stats()
{handler}
x = np.linspace(0, 1, 1 << {size}).reshape({shape})
print("ready", flush=True)
start = time.perf_counter()
try:
    result = heavy(x)
    print("finished", time.perf_counter() - start,
          np.allclose(result, eager(x), rtol=1e-12, atol=0), flush=True)
except KeyboardInterrupt:
    print("interrupted", time.perf_counter() - start, flush=True)
assert np.array_equal(heavy(small), before)
print("usable", flush=True)
print("handled", len(globals().get("caught", [])), flush=True)
"""

# A Python handler that does not raise: the kernel must resume and finish.
COUNTING_HANDLER = """
import signal
caught = []
signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
"""


def interrupt(tmp_path: Path, source: str, delay: float = 0.3) -> list[str]:
    """Run `source` in a child, SIGINT it `delay` s after it prints "ready"; return its
    output lines."""
    script = tmp_path / "child.py"   # tsjit.script reads the functions' source file
    script.write_text(source)
    # A runner started as a background job of a shell has SIGINT ignored (POSIX shells do
    # that for `&` jobs), and a child would inherit it: Python installs its Ctrl-C handler
    # only where SIGINT has its default action, so give the child that.
    child = subprocess.Popen([sys.executable, str(script)], env=child_environment(), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert child.stdout.readline().strip() == "ready", child.stderr.read()
        time.sleep(delay)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 0, err
    return out.split("\n")


@pytest.mark.parametrize("loop", SCALAR_LOOPS)
def test_ctrl_c_stops_a_native_scalar_loop_and_it_stays_usable(tmp_path, loop):
    lines = interrupt(tmp_path, SCALAR_CHILD.format(handler="", loop=SCALAR_LOOPS[loop]))
    assert lines[0].startswith("interrupted"), lines
    assert float(lines[0].split()[1]) < 2.3   # 0.3 s of running, then < 2 s to stop
    assert lines[1] == "usable"


@pytest.mark.parametrize("threads", [1, 2])
def test_ctrl_c_stops_a_long_fused_kernel_between_blocks(tmp_path, threads):
    lines = interrupt(tmp_path, KERNEL_CHILD.format(threads=threads, expression=NESTED_SINES,
                                                    size=24, handler=""))
    word, seconds, partial = lines[0].split()
    assert word == "interrupted", lines
    assert float(seconds) < 2.3 and partial == "True"
    assert lines[1] == "usable"


ROWS = {"reduction": "np.sum", "axis": -1, "small_shape": "4, -1", "shape": "-1, 1 << 10"}
COLUMNS = {**ROWS, "axis": 0, "shape": "-1, 1 << 12"}
LONG_ROW = {**ROWS, "small_shape": "1, -1", "shape": "1, -1"}


@pytest.mark.parametrize("child, layout", [(KERNEL_CHILD, {}), (REDUCTION_CHILD, ROWS),
                                           (REDUCTION_CHILD, COLUMNS),
                                           (REDUCTION_CHILD, LONG_ROW)],
                         ids=["elementwise", "rows", "columns", "long_row"])
def test_a_kernel_finishes_when_the_python_handler_does_not_raise(tmp_path, child, layout):
    """An elementwise kernel resumes where it stopped; a reduction kernel (fresh outputs
    only) runs again from the start."""
    lines = interrupt(tmp_path, child.format(threads=2, expression=NESTED_SINES, size=22,
                                             handler=textwrap.dedent(COUNTING_HANDLER),
                                             **layout),
                      delay=0.05)
    word, _, complete = lines[0].split()
    assert (word, complete) == ("finished", "True"), lines
    assert lines[1:3] == ["usable", "handled 1"]


@pytest.mark.parametrize("layout", [ROWS, COLUMNS], ids=["rows", "columns"])
@pytest.mark.parametrize("threads", [1, 2])
def test_ctrl_c_stops_a_long_reduction_kernel_between_rows(tmp_path, threads, layout):
    """A row kernel checks between rows; a column kernel between the reduced rows of a
    tile (a tile of 2048 columns spans the whole axis)."""
    lines = interrupt(tmp_path, REDUCTION_CHILD.format(threads=threads, expression=NESTED_SINES,
                                                       size=24, handler="", **layout))
    word, seconds = lines[0].split()
    assert word == "interrupted", lines
    assert float(seconds) < 2.3
    assert lines[1] == "usable"


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("reduction", ["np.sum", "np.max"])
def test_ctrl_c_stops_one_long_row_between_blocks(tmp_path, threads, reduction):
    """One row of 2**24 elements: a sum (its pairwise tree split across threads) or a max
    (one pass in order) checks between blocks of 4K elements."""
    lines = interrupt(tmp_path, REDUCTION_CHILD.format(
        threads=threads, expression=NESTED_SINES, size=24, handler="",
        **{**LONG_ROW, "reduction": reduction}))
    word, seconds = lines[0].split()
    assert word == "interrupted", lines
    assert float(seconds) < 2.3
    assert lines[1] == "usable"
