"""The one timing harness every suite uses, so that every figure in bench/ means the same thing.

A suite is a list of cases; a case is one workload on one input with several
implementations (tsjit and its peers). For each case the harness:

1. computes NumPy's result (the reference) and, for each implementation, converts the
   inputs to its own array type (untimed), compiles or wraps it and makes the first call
   (timed together: the *first call* figure, compile time included);
2. makes a few warmup calls (untimed: profiling runs, specialization, caches) and checks
   the outputs of all these calls against the reference: same structure,
   dtype and shape, values within the tolerance (`Tolerance`). An implementation that
   fails is reported and never timed;
3. times all implementations in interleaved rounds in this one process, each round
   visiting every implementation once in a rotating order, so that machine drift
   (other tenants, frequency, memory) lands on all of them alike. A sample is a batch
   of calls long enough for the clock, taken once the process's other threads are idle
   (`settle`); the figure is the median sample per call.

Ratios are to the best *peer* (the fastest implementation that is not tsjit): below 1
means faster than every peer.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import platform
import statistics
import sys
import time
import timeit
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Settings:
    """How hard to measure; `--quick` trades precision for a smoke run of every path."""

    quick: bool = False
    samples: int = 15
    min_samples: int = 5          # what a very slow implementation gets instead
    budget_seconds: float = 10.0  # timed seconds per implementation before samples shrink
    sample_seconds: float = 0.02  # a sample batches calls until it lasts about this long
    warmup_calls: int = 3
    # Longest wait before each sample for the process's other threads to go idle: OpenMP
    # pools (torch, Numba's omp layer) spin ~10 ms after a parallel region (measured here:
    # 10 ms of CPU after a Numba prange call) and would take a core from the next sample.
    settle_seconds: float = 0.05

    @classmethod
    def for_mode(cls, quick: bool) -> Settings:
        if quick:
            return cls(quick=True, samples=3, min_samples=2, budget_seconds=1.0,
                       sample_seconds=0.002, warmup_calls=2, settle_seconds=0.0)
        return cls()


@dataclass(frozen=True)
class Tolerance:
    """Values agree when |got - ref| <= rtol * |ref| + atol.

    The contract allows 4 ulp for transcendental functions; peers evaluate them with
    other algorithms, and where a formula cancels (1 + tanh(z) near z = -4) an ulp of
    an intermediate is many ulps of the result. So the absolute part is 4 ulp of the
    output's own scale (its largest magnitude), the relative part 4 ulp.
    """

    rtol: float
    atol: float

    @classmethod
    def ulps_of(cls, reference: np.ndarray, ulps: float = 4.0) -> Tolerance:
        if not np.issubdtype(reference.dtype, np.inexact):
            return cls(0.0, 0.0)
        eps = float(np.finfo(reference.dtype).eps)
        finite = np.abs(reference[np.isfinite(reference)])
        scale = float(finite.max()) if finite.size else 1.0
        return cls(ulps * eps, ulps * eps * scale)


@dataclass(frozen=True)
class Implementation:
    """One way to run a case: `compile()` gives the callable (its cost counts as first
    call), `convert` turns the case's NumPy inputs into this implementation's arrays."""

    name: str
    compile: Callable[[], Callable[..., object]]
    convert: Callable[[tuple], tuple] = tuple
    ours: bool = False


@dataclass(frozen=True)
class Case:
    name: str
    reference: Callable[..., object]   # NumPy's function: its result is the reference
    args: tuple
    implementations: Sequence[Implementation]
    overwritten_args: tuple[int, ...] = ()   # outputs passed in: poisoned before each check
    notes: tuple[str, ...] = ()              # why a peer is absent, printed with the table


@dataclass
class Record:
    suite: str
    case: str
    implementation: str
    ours: bool
    status: str = "ok"                       # or why it was not timed
    seconds_per_call: float | None = None
    ratio_to_best_peer: float | None = None
    samples: int = 0
    calls_per_sample: int = 0
    first_call_seconds: float | None = None
    sample_seconds: list[float] = field(default_factory=list)


def parse_settings(description: str, argv: Sequence[str] | None = None) -> Settings:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true",
                        help="smaller inputs, 3 samples: a smoke run of every path")
    return Settings.for_mode(parser.parse_args(argv).quick)


def parse_selection(description: str, argv: Sequence[str] | None = None
                    ) -> tuple[Settings, list[str] | None]:
    """--quick and --only WORD ...: the settings, and the words a case's name must
    contain one of (None: every case)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true",
                        help="smaller inputs, 3 samples: a smoke run of every path")
    parser.add_argument("--only", nargs="+", metavar="WORD",
                        help="run only the cases whose name contains one of these words")
    args = parser.parse_args(argv)
    return Settings.for_mode(args.quick), args.only


def as_numpy(result: object) -> object:
    """Peers return their own arrays (jax.Array, torch.Tensor): view them as NumPy's."""
    if isinstance(result, tuple | list):
        return type(result)(as_numpy(item) for item in result)
    if isinstance(result, np.ndarray | np.generic) or not hasattr(result, "__array__"):
        return result
    if hasattr(result, "detach"):   # torch.Tensor: zero-copy view
        return result.detach().numpy()
    return np.asarray(result)


def mismatch(got: object, expected: object) -> str | None:
    """Why `got` is not NumPy's result `expected`, or None when it is."""
    got = as_numpy(got)
    if isinstance(expected, tuple | list):
        if not isinstance(got, tuple | list) or len(got) != len(expected):
            return f"expected {len(expected)} results, got {type(got).__name__}"
        for index, (g, e) in enumerate(zip(got, expected)):
            if (reason := mismatch(g, e)) is not None:
                return f"result {index}: {reason}"
        return None
    if isinstance(expected, np.floating) and type(got) is type(expected):
        return mismatch(np.asarray(got), np.asarray(expected))   # a float: tolerance
    if not isinstance(expected, np.ndarray):
        if type(got) is not type(expected) or got != expected:
            return f"expected {expected!r} ({type(expected).__name__}), got {got!r}"
        return None
    if not isinstance(got, np.ndarray):
        return f"expected an ndarray, got {type(got).__name__}"
    if got.dtype != expected.dtype or got.shape != expected.shape:
        return f"expected {expected.dtype}{list(expected.shape)}, got {got.dtype}{list(got.shape)}"
    tolerance = Tolerance.ulps_of(expected)
    if np.allclose(got, expected, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True):
        return None
    error = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    worst = int(np.nanargmax(error))
    return (f"max |error| {error.flat[worst]:.3g} at {expected.flat[worst]!r} (allowed "
            f"{tolerance.rtol:.2g} * |ref| + {tolerance.atol:.2g})")


class _Timed:
    """One implementation while a case runs: its timer, samples and outcome."""

    def __init__(self, implementation: Implementation):
        self.implementation = implementation
        self.args: tuple = ()
        self.fn: Callable[..., object] | None = None
        self.status = "ok"
        self.first_call_seconds: float | None = None
        self.timer: timeit.Timer | None = None
        self.calls_per_sample = 0
        self.samples_wanted = 0
        self.samples: list[float] = []

    def call(self) -> object:
        return self.fn(*self.args)

    def make_timer(self) -> None:
        """A timeit loop calling fn with the arguments spelled out: no *args in the loop."""
        names = [f"a{i}" for i in range(len(self.args))]
        self.timer = timeit.Timer(f"fn({', '.join(names)})",
                                  globals={"fn": self.fn, **dict(zip(names, self.args))})


def _poison(args: tuple, indices: Iterable[int]) -> None:
    """Fill output arguments with NaN so that an implementation that did not write them
    cannot pass the check with the values the previous one left there."""
    for index in indices:
        as_numpy(args[index])[...] = np.nan


def _checked_call(timed: _Timed, case: Case, expected: object) -> float:
    """One call, its output verified; returns its duration (raises on a wrong result)."""
    _poison(timed.args, case.overwritten_args)
    start = time.perf_counter()
    result = timed.call()
    elapsed = time.perf_counter() - start
    if (reason := mismatch(result, expected)) is not None:
        raise ValueError(f"wrong result: {reason}")
    return elapsed


def _prepare(timed: _Timed, case: Case, expected: object, settings: Settings) -> None:
    """Inputs, compile, first call, warmup, checks, and the batch size; sets status on
    failure."""
    try:
        timed.args = timed.implementation.convert(case.args)
        start = time.perf_counter()
        timed.fn = timed.implementation.compile()
        compile_seconds = time.perf_counter() - start
        timed.first_call_seconds = compile_seconds + _checked_call(timed, case, expected)
        warmup = [_checked_call(timed, case, expected) for _ in range(settings.warmup_calls)]
    except Exception as error:  # a peer that cannot run this case is reported, not fatal
        timed.status = f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"
        return
    timed.make_timer()
    timed.calls_per_sample, sample_time = _calibrate(timed.timer, min(warmup), settings)
    timed.samples_wanted = max(settings.min_samples,
                               min(settings.samples, int(settings.budget_seconds / sample_time)))


def _calibrate(timer: timeit.Timer, call_seconds: float, settings: Settings) -> tuple[int, float]:
    """Calls per sample such that a batch lasts `sample_seconds`, found by timing batches
    (like timeit's autorange): a runtime whose first call after a pause is slow (sleeping
    worker threads) is not judged by that call alone. Returns the count and its time."""
    calls = 1
    while True:
        seconds = timer.timeit(calls)
        if seconds >= settings.sample_seconds or calls * call_seconds > settings.budget_seconds:
            return calls, seconds
        calls = max(calls + 1, min(10 * calls, round(1.2 * calls * settings.sample_seconds
                                                     / max(seconds, 1e-9))))


def settle(longest: float, window: float = 0.005) -> None:
    """Busy-wait until the process's other threads used under a tenth of a core over the
    last ``window`` (or ``longest`` passed). The window spans a scheduler tick: Linux adds
    other threads' running time to the process's CPU clock at ticks (4 ms here). Busy, not
    asleep: after a sleep the cores run slower for ~10 ms (here: the first calls after a
    20 ms pause took twice as long), which would land on whichever implementation comes
    next."""
    start = time.perf_counter()
    while True:
        wall, cpu, own = time.perf_counter(), time.process_time(), time.thread_time()
        while (now := time.perf_counter()) - wall < window:
            pass
        others = (time.process_time() - cpu) - (time.thread_time() - own)
        if others < 0.1 * (now - wall) or now - start > longest:
            return


def run_case(suite: str, case: Case, settings: Settings) -> list[Record]:
    expected = copy.deepcopy(case.reference(*case.args))
    entries = [_Timed(impl) for impl in case.implementations]
    for timed in entries:
        _prepare(timed, case, expected, settings)
    ready = [timed for timed in entries if timed.status == "ok"]
    rounds = max((timed.samples_wanted for timed in ready), default=0)
    for round_index in range(rounds):
        shift = round_index % max(len(ready), 1)
        for timed in ready[shift:] + ready[:shift]:
            if len(timed.samples) < timed.samples_wanted:
                settle(settings.settle_seconds)
                seconds = timed.timer.timeit(timed.calls_per_sample)
                timed.samples.append(seconds / timed.calls_per_sample)
    return _records(suite, case, entries)


def _records(suite: str, case: Case, entries: list[_Timed]) -> list[Record]:
    records = []
    for timed in entries:
        record = Record(suite, case.name, timed.implementation.name, timed.implementation.ours,
                        timed.status, first_call_seconds=timed.first_call_seconds)
        if timed.samples:
            record.seconds_per_call = statistics.median(timed.samples)
            record.samples = len(timed.samples)
            record.calls_per_sample = timed.calls_per_sample
            record.sample_seconds = timed.samples
        records.append(record)
    peer_times = [r.seconds_per_call for r in records if not r.ours and r.seconds_per_call]
    if peer_times:
        for record in records:
            if record.seconds_per_call:
                record.ratio_to_best_peer = record.seconds_per_call / min(peer_times)
    return records


def format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def print_case(case: Case, records: list[Record], settings: Settings) -> None:
    print(f"\n{case.name}")
    print(f"  {'implementation':<22} {'per call':>10} {'vs best peer':>12} "
          f"{'samples':>13} {'first call':>11}")
    for record in records:
        if record.status != "ok":
            print(f"  {record.implementation:<22} not timed: {record.status}")
            continue
        ratio = f"{record.ratio_to_best_peer:.2f}x" if record.ratio_to_best_peer else "-"
        fewer = " (slow)" if record.samples < settings.samples else ""
        print(f"  {record.implementation:<22} {format_seconds(record.seconds_per_call):>10} "
              f"{ratio:>12} {record.samples:>3} x {record.calls_per_sample:<5}{fewer:<7}"
              f"{format_seconds(record.first_call_seconds):>9}")
    for note in case.notes:
        print(f"  note: {note}")


def machine_description() -> dict[str, object]:
    cpu = next((line.split(":", 1)[1].strip() for line in _cpuinfo_lines()
                if line.startswith("model name")), platform.processor())
    return {"cpu": cpu, "cores": os.cpu_count(), "python": sys.version.split()[0],
            "numpy": np.__version__, "platform": platform.platform(),
            "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None}


def _cpuinfo_lines() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def run_suite(suite: str, cases: Iterable[Case], settings: Settings) -> list[Record]:
    """Runs the cases one at a time (only one case's inputs are alive), prints each table,
    then writes bench/results/<suite>.json and, when matplotlib is there, <suite>.png."""
    print(f"suite {suite}: median of {settings.samples} interleaved samples per implementation"
          f" (at least {settings.min_samples} for calls slower than the "
          f"{settings.budget_seconds:g} s budget allows), outputs verified against NumPy")
    records: list[Record] = []
    for case in cases:
        case_records = run_case(suite, case, settings)
        print_case(case, case_records, settings)
        records.extend(case_records)
    write_results(suite, records, asdict(settings))
    return records


def write_results(suite: str, records: list[Record], settings: dict[str, object]) -> None:
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{suite}.json"
    payload = {"suite": suite, "settings": settings, "machine": machine_description(),
               "records": [asdict(record) for record in records]}
    path.write_text(json.dumps(payload, indent=1))
    print(f"\nwrote {path}")
    plot_ratios(suite, records)


def plot_ratios(suite: str, records: list[Record]) -> None:
    """One panel per case: each implementation's time over the best peer's (log scale)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return
    cases = list(dict.fromkeys(r.case for r in records if r.ratio_to_best_peer))
    if not cases:
        return
    columns = min(3, len(cases))
    rows = math.ceil(len(cases) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(5 * columns, 3.2 * rows), squeeze=False)
    for axis, case in zip(axes.flat, cases):
        timed = [r for r in records if r.case == case and r.ratio_to_best_peer]
        colors = ["tab:red" if r.ours else "tab:blue" for r in timed]
        bars = axis.bar(range(len(timed)), [r.ratio_to_best_peer for r in timed], color=colors)
        axis.bar_label(bars, fmt="%.2g", fontsize=6)
        axis.set_xticks(range(len(timed)), [r.implementation for r in timed],
                        rotation=40, ha="right", fontsize=7)
        axis.axhline(1.0, color="black", linewidth=0.8)
        axis.set_yscale("log")
        axis.set_title(case, fontsize=8)
        axis.set_ylabel("time / best peer", fontsize=7)
    for axis in list(axes.flat)[len(cases):]:
        axis.set_visible(False)
    figure.tight_layout()
    path = RESULTS_DIR / f"{suite}.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    print(f"wrote {path}")
