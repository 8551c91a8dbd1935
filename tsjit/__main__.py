"""`python -m tsjit demo` shows the pipeline on a few functions; `python -m tsjit bench`
runs the benchmarks in bench/."""
from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "demo"
    if command == "demo":
        from .demo import run_demo
        run_demo()
        return 0
    if command == "bench":
        import runpy
        from pathlib import Path
        script = Path(__file__).resolve().parent.parent / "bench" / "run_all.py"
        if not script.exists():
            print("bench/ is not available in this installation (use a source checkout)")
            return 1
        sys.argv = [str(script), *argv[1:]]
        runpy.run_path(str(script), run_name="__main__")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
