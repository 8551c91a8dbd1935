"""`import tsjit` does not load LLVM (llvmlite): the first compilation does."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def run_fresh(code: str, directory: Path) -> str:
    """The output of `code` run as a script (tsjit.script reads source files) in a fresh
    process."""
    script = directory / "program.py"
    script.write_text(textwrap.dedent(code))
    completed = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                               timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_llvm_loads_on_the_first_compilation_not_on_import(tmp_path):
    out = run_fresh("""
        import sys
        import numpy as np
        import tsjit

        print("llvmlite" in sys.modules)

        def triad(a: float, x: tsjit.Tensor, y: tsjit.Tensor):
            return a * x + y

        def total(n: int):
            s = 0
            for i in range(n):
                s += i * i
            return s

        scripted, summed = tsjit.script(triad), tsjit.script(total)
        x = np.arange(5.0)
        print(all(np.array_equal(scripted(2.0, x, x), triad(2.0, x, x)) for _ in range(3)))
        print(all(summed(10) == total(10) for _ in range(3)))
        print(scripted.stats()["kernel_launches"], summed.stats()["kernel_launches"],
              "llvmlite" in sys.modules)
    """, tmp_path)
    assert out.split() == ["False", "True", "True", "3", "3", "True"]
