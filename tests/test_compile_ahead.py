"""The elementwise driver is compiled ahead of the first kernel (JitEngine.start_compile_keyed):
its IR is made on the compiling thread, LLVM's part runs on a helper thread while the
kernel's IR is made, and the kernel is linked only once the driver is. Each check runs in a
fresh process (this one has its driver already)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from _subprocess import child_environment

from tsjit.codegen.engine import JitEngine

FUNCTIONS = textwrap.dedent("""
    import numpy as np
    import tsjit

    def cubic(x: tsjit.Tensor) -> tsjit.Tensor:
        return 0.5 * x * (1.0 + 0.79788456 * (x + 0.044715 * x * x * x))
""")

PROGRAM = textwrap.dedent("""
    import threading
    import numpy as np
    import tsjit
    from tsjit.codegen import llvm_jit
    from program import cubic
    emit = llvm_jit.optimize_and_emit
    compiles = []

    def recorded(text, pipeline):
        compiles.append(("driver" if pipeline == "quick" else "kernel",
                         threading.current_thread().name))
        return emit(text, pipeline)
    llvm_jit.optimize_and_emit = recorded
    x = np.linspace(-3, 3, 3000, dtype=np.float32)
    scripted = tsjit.script(cubic)
    scripted.executor.specialize_for(x)
    got = scripted(x)
    assert scripted.stats()["kernel_launches"] >= 1, scripted.stats()
    assert got.tobytes() == cubic(x).tobytes()
    print(" ".join(f"{what}:{thread}" for what, thread in compiles))
""")


def _compiles(tmp_path, cache: str) -> list[str]:
    (tmp_path / "program.py").write_text(FUNCTIONS)
    (tmp_path / "main.py").write_text(PROGRAM)
    done = subprocess.run(
        [sys.executable, "main.py"], cwd=tmp_path, capture_output=True, text=True,
        timeout=300, check=False,
        env=child_environment(TSJIT_DISK_CACHE=cache, TSJIT_CACHE_DIR=str(tmp_path / "cache"),
                              TSJIT_BACKGROUND_COMPILE="0"))
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_driver_is_compiled_on_a_helper_thread_beside_the_kernel(tmp_path):
    assert _compiles(tmp_path, "0") == ["driver:tsjit-compile-ahead", "kernel:MainThread"]


def test_a_kernel_from_the_disk_cache_waits_for_a_driver_compiled_ahead(tmp_path):
    """The kernel's entry is found but the driver's is gone: the kernel is linked only
    after the driver (compiled again) is, and computes what it computed before."""
    assert _compiles(tmp_path, "1") == ["driver:tsjit-compile-ahead", "kernel:MainThread"]
    entries = list((tmp_path / "cache").glob("*.entry"))
    drivers = [e for e in entries if b"|driver|" in e.read_bytes()]
    assert len(drivers) == 1 and len(entries) == 2
    drivers[0].unlink()
    assert _compiles(tmp_path, "1") == ["driver:tsjit-compile-ahead"]
    assert _compiles(tmp_path, "1") == []


def test_a_failed_compile_ahead_raises_where_it_is_finished(tmp_path):
    engine = JitEngine(cache_dir=tmp_path / "cache")
    finish = engine.start_compile_keyed("test|not ir", lambda: "this is not LLVM IR",
                                        ["tsjit_test_nothing"], "quick")
    with pytest.raises(RuntimeError):
        finish()
