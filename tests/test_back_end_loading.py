"""What a process loads: `import tsjit` loads the back end's Python side (so that a first
call whose kernels come from the disk cache does not wait for it) but neither llvmlite nor
a code generator, and leaves saving and loading to their first use; a compile loads only
the code generators it uses (each check runs in a fresh process, since this one has
loaded everything)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from _subprocess import child_environment

PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import tsjit
    from program import gelu, histogram
    loaded = {name for name in sys.modules if name.startswith("tsjit.")}
    assert "llvmlite" not in sys.modules and "tsjit.codegen.elementwise" not in loaded
    if sys.argv[1] == "array":
        f, args = tsjit.script(gelu), (np.linspace(-3, 3, 1000, dtype=np.float32),)
    else:
        f, args = tsjit.script(histogram), (np.linspace(-1, 1, 100), np.zeros(8, np.int64))
    f.executor.specialize_for(*args)
    f(*args)
    assert f.stats()["kernel_launches"] >= 1, f.stats()
    print(" ".join(sorted(name for name in sys.modules if name.startswith("tsjit.codegen"))))
""")

FUNCTIONS = textwrap.dedent("""
    import numpy as np
    import tsjit

    def gelu(x: tsjit.Tensor) -> tsjit.Tensor:
        return 0.5 * x * (1.0 + np.tanh(0.79788456 * (x + 0.044715 * x * x * x)))

    def cubic(x: tsjit.Tensor) -> tsjit.Tensor:
        return 0.5 * x * (1.0 + 0.79788456 * (x + 0.044715 * x * x * x))

    def row_sums(x: tsjit.Tensor) -> tsjit.Tensor:
        return np.sum(x * x - 0.5, axis=1)

    def histogram(values: tsjit.Tensor, counts: tsjit.Tensor) -> tsjit.Tensor:
        for i in range(values.shape[0]):
            counts[int((values[i] + 1.0) * 3.5)] += 1
        return counts
""")

GENERATORS = {"tsjit.codegen.elementwise", "tsjit.codegen.elementwise_driver",
              "tsjit.codegen.reduction", "tsjit.codegen.vmath"}


def _run(tmp_path, program: str, kind: str, cache: str) -> str:
    """What ``program`` prints, run in a fresh process with the argument ``kind``."""
    (tmp_path / "program.py").write_text(FUNCTIONS)
    (tmp_path / "main.py").write_text(program)
    done = subprocess.run(
        [sys.executable, "main.py", kind], cwd=tmp_path, capture_output=True, text=True,
        timeout=300, check=False,
        env=child_environment(TSJIT_DISK_CACHE=cache, TSJIT_CACHE_DIR=str(tmp_path / "cache"),
                              TSJIT_BACKGROUND_COMPILE="0"))
    assert done.returncode == 0, done.stderr
    return done.stdout


def _codegen_modules(tmp_path, kind: str, cache: str) -> set[str]:
    return set(_run(tmp_path, PROGRAM, kind, cache).split())


def test_array_code_does_not_load_the_scalar_code_generator(tmp_path):
    loaded = _codegen_modules(tmp_path, "array", "0")
    assert "tsjit.codegen.elementwise" in loaded
    assert not any(name.startswith("tsjit.codegen.scalar") for name in loaded), loaded


def test_loop_code_loads_the_scalar_code_generator(tmp_path):
    loaded = _codegen_modules(tmp_path, "loop", "0")
    assert "tsjit.codegen.scalar.emitter" in loaded


def test_kernels_from_the_disk_cache_load_no_code_generator(tmp_path):
    first = _codegen_modules(tmp_path, "array", "1")
    assert GENERATORS - {"tsjit.codegen.reduction"} <= first
    again = _codegen_modules(tmp_path, "array", "1")
    assert "tsjit.codegen.launch" in again
    assert not GENERATORS & again, GENERATORS & again


OPTIMIZED_RESULTS = textwrap.dedent("""
    import hashlib
    import sys
    import numpy as np
    import tsjit
    from program import cubic, row_sums
    x = np.linspace(-3, 3, 3000, dtype=np.float32).reshape(30, 100)
    digests = []
    for fn in (cubic, row_sums):
        scripted = tsjit.script(fn)
        scripted.executor.specialize_for(x)
        got, want = scripted(x), fn(x)
        assert scripted.stats()["kernel_launches"] >= 1, scripted.stats()
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), fn.__name__   # + - * / and sums: bitwise
        digests.append(hashlib.sha256(got.tobytes()).hexdigest())
    print(" ".join(sorted(name for name in sys.modules if name.startswith("llvmlite"))))
    print(" ".join(digests))
""")


def test_kernels_from_the_disk_cache_run_without_llvmlite(tmp_path):
    """A process whose kernels (elementwise, row reduction, their driver) all come from
    the disk cache links them with the runtime's loader: llvmlite is never imported, and
    the results are those of the process that compiled them, bit for bit."""
    compiled_modules, compiled_results = _run(tmp_path, OPTIMIZED_RESULTS, "", "1").split("\n")[:2]
    assert "llvmlite.binding" in compiled_modules.split()    # it compiled
    modules, results = _run(tmp_path, OPTIMIZED_RESULTS, "", "1").split("\n")[:2]
    assert not modules, modules
    assert results == compiled_results


NATIVE_LOOP = textwrap.dedent("""
    import sys
    import numpy as np
    import tsjit
    from program import histogram
    scripted = tsjit.script(histogram)
    args = (np.linspace(-1, 1, 100), np.zeros(8, np.int64))
    scripted.executor.specialize_for(*args)
    counts = scripted(*args)
    assert scripted.stats()["kernel_launches"] >= 1, scripted.stats()
    print(" ".join(sorted(name for name in sys.modules if name.startswith("llvmlite"))))
    print(" ".join(map(str, counts)))
""")


def test_native_loops_from_the_disk_cache_do_not_load_llvm(tmp_path):
    """A native loop still builds its IR (llvmlite.ir, pure Python) to find its entry, but
    one from the disk cache is linked by the runtime's loader: LLVM itself
    (llvmlite.binding, ~80 ms to import and load) stays out of the process."""
    compiled_modules, compiled_counts = _run(tmp_path, NATIVE_LOOP, "", "1").split("\n")[:2]
    assert "llvmlite.binding" in compiled_modules.split()    # it compiled
    modules, counts = _run(tmp_path, NATIVE_LOOP, "", "1").split("\n")[:2]
    assert "llvmlite.binding" not in modules.split(), modules
    assert counts == compiled_counts


IMPORT_ONLY = textwrap.dedent("""
    import sys
    import tsjit
    print(" ".join(sorted(sys.modules)))
    tsjit.load, tsjit.SerializationError       # loaded on first use
    print(" ".join(sorted(sys.modules)))
""")
ON_FIRST_USE = {"tsjit.api.serialization", "tsjit.api.archive", "tsjit.api.class_records",
                "tsjit.ir.parser"}


def _imported(tmp_path, **environment: str) -> tuple[set[str], set[str]]:
    """The modules loaded after `import tsjit`, and after saving and loading are used."""
    done = subprocess.run([sys.executable, "-c", IMPORT_ONLY], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, check=False,
                          env=child_environment(**environment))
    assert done.returncode == 0, done.stderr
    after_import, after_use = (set(line.split()) for line in done.stdout.splitlines())
    return after_import, after_use


def test_import_leaves_saving_and_loading_to_their_first_use(tmp_path):
    after_import, after_use = _imported(tmp_path)
    assert not ON_FIRST_USE & after_import, ON_FIRST_USE & after_import
    assert ON_FIRST_USE <= after_use


def test_import_loads_the_back_end_but_not_llvmlite_or_a_code_generator(tmp_path):
    after_import, _ = _imported(tmp_path)
    assert {"tsjit.executor.pipeline", "tsjit.codegen.launch",
            "tsjit.codegen.object_loader"} <= after_import
    assert "llvmlite" not in after_import and not GENERATORS & after_import
    disabled, _ = _imported(tmp_path, TSJIT_DISABLE="1")
    assert "tsjit.executor.pipeline" not in disabled
