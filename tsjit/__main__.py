"""`python -m tsjit [demo]` shows the pipeline on a few functions; `python -m tsjit bench`
runs the benchmarks in bench/ (a source checkout); `--help` lists the commands."""
from __future__ import annotations

import argparse
import sys

COMMANDS = {
    "demo": "script a few functions, print each graph, run them next to eager "
            "Python (the default command)",
    "bench": "run the benchmarks in bench/ against NumPy and the installed peers (a source "
             "checkout); the arguments go to bench/run_all.py (bench --help lists them)",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tsjit",
        description="tsjit: TorchScript's design for NumPy, native code from LLVM.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND",
                                     title="commands")
    for name, text in COMMANDS.items():
        commands.add_parser(name, help=text, description=text)
    return parser


def _bench(arguments: list[str]) -> int:
    import runpy
    from pathlib import Path
    script = Path(__file__).resolve().parent.parent / "bench" / "run_all.py"
    if not script.exists():
        print("bench/ is not available in this installation (use a source checkout)",
              file=sys.stderr)
        return 1
    sys.argv = [str(script), *arguments]
    runpy.run_path(str(script), run_name="__main__")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["bench"]:        # its options are bench/run_all.py's own
        return _bench(argv[1:])
    _parser().parse_args(argv)       # --help, `demo --help` and errors exit here
    from .demo import run_demo
    run_demo()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
