"""Runs every benchmark suite in bench/, then prints one summary.

    python -m tsjit bench [--quick] [--only NAME [NAME ...]]
    python bench/run_all.py [--quick] [--only NAME [NAME ...]]

Each suite runs in a process of its own, so that one suite's thread pools, JIT caches
and memory do not weigh on the next. Suites whose script is not in bench/ (yet) are
listed as absent. The summary gives each suite's outcome and, for the suites built on
bench/harness.py, tsjit's time per call against the best peer in every case, read back
from the JSON the suite wrote in this run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
from harness import RESULTS_DIR, format_seconds  # noqa: E402


@dataclass(frozen=True)
class Suite:
    name: str
    quick_args: tuple[str, ...]         # the suite's own spelling of a smoke run
    result_files: tuple[str, ...] = ()  # bench/results/<name>.json written by the harness

    @property
    def script(self) -> Path:
        return BENCH_DIR / f"{self.name}.py"


SUITES = (
    Suite("elementwise", ("--quick",), ("elementwise", "first_result")),
    Suite("reductions", ("--quick",), ("reductions",)),
    Suite("call_overhead", ("--quick",), ("call_overhead",)),
    Suite("interpreter_overhead", ("--quick",)),
    Suite("scalar_loops", ("--quick",), ("scalar_loops",)),
    Suite("element_loops", ("--quick",), ("element_loops",)),
    Suite("runtime_dispatch", ("--reps", "20000")),
    Suite("vmath_speed", ("--size", str(1 << 20), "--samples", "3")),
)


def run(suite: Suite, quick: bool) -> str:
    """Runs one suite with its output shown as it comes; returns its outcome."""
    if not suite.script.exists():
        return "absent"
    print(f"\n{'=' * 20} {suite.name} {'=' * 20}", flush=True)
    start = time.perf_counter()
    command = [sys.executable, str(suite.script), *(suite.quick_args if quick else ())]
    returncode = subprocess.run(command, cwd=BENCH_DIR, check=False).returncode
    elapsed = time.perf_counter() - start
    return f"ok in {elapsed:.0f} s" if returncode == 0 else f"FAILED (exit {returncode})"


def _figure(record: dict) -> float | None:
    """Time per call, or for suites that time one event (first_result) that event."""
    return record["seconds_per_call"] or record["first_call_seconds"]


def tsjit_lines(result_file: str, since: float) -> list[str]:
    """One line per case: tsjit's time, the best peer's, and their ratio."""
    path = RESULTS_DIR / f"{result_file}.json"
    if not path.exists() or path.stat().st_mtime < since:
        return []
    records = json.loads(path.read_text())["records"]
    lines = []
    for case in dict.fromkeys(record["case"] for record in records):
        entries = [r for r in records if r["case"] == case]
        ours = next((r for r in entries if r["ours"]), None)
        if ours is None:
            continue
        if _figure(ours) is None:
            lines.append(f"  {case:<48} tsjit not timed: {ours['status']}")
            continue
        peers = [r for r in entries if not r["ours"] and r["status"] == "ok" and _figure(r)]
        best = min(peers, key=_figure, default=None)
        against = (f"best peer {best['implementation']} {format_seconds(_figure(best))}"
                   f"  ratio {_figure(ours) / _figure(best):.2f}x" if best else "no peer timed")
        caveat = "" if ours["status"] == "ok" else f"  [{ours['status']}]"
        lines.append(f"  {case:<48} tsjit {format_seconds(_figure(ours)):>9}  {against}{caveat}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every suite's smoke-run mode")
    parser.add_argument("--only", nargs="+", choices=[s.name for s in SUITES], metavar="NAME",
                        help=f"run only these suites: {', '.join(s.name for s in SUITES)}")
    args = parser.parse_args()
    chosen = [s for s in SUITES if not args.only or s.name in args.only]
    started = time.time()
    outcomes = {suite.name: run(suite, args.quick) for suite in chosen}

    print(f"\n{'=' * 20} summary {'=' * 20}")
    print("(time per call, tsjit against the fastest peer; ratio below 1: tsjit is faster)")
    for suite in chosen:
        print(f"{suite.name}: {outcomes[suite.name]}")
        for result_file in suite.result_files:
            for line in tsjit_lines(result_file, started):
                print(line)
    if any(outcome.startswith("FAILED") for outcome in outcomes.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
