"""Dispatch latency of tsjit_parallel_for: what a parallel kernel launch costs before any work.

Times, in C (tsjit_testing_time_dispatch, so without the cffi call), a job of one chunk per
thread whose chunks only wait for each other to start: the caller cannot take every chunk
itself, so the figure is a real hand-off to the workers and back. Three cases:
  - inline: one thread, the floor (a function-pointer call);
  - workers awake: back-to-back launches, as from a loop of kernels;
  - workers asleep: launches far enough apart that the workers went to sleep on the condvar.
"chunks on workers" confirms the hand-off: with 2 threads it should be 50%.

    python bench/runtime_dispatch.py [--reps N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tsjit import runtime


def time_dispatch(threads: int, reps: int) -> tuple[np.ndarray, float]:
    """Per-call latencies (ns) of `reps` back-to-back launches, and the workers' share of chunks."""
    runtime.set_num_threads(threads)
    ns = np.empty(reps, dtype=np.int64)
    worker_chunks = runtime.lib.tsjit_testing_time_dispatch(
        reps, runtime.ffi.from_buffer("int64_t[]", ns)
    )
    return ns, worker_chunks / (reps * threads)


def time_dispatch_after_idle(threads: int, reps: int, idle_s: float) -> tuple[np.ndarray, float]:
    """Like time_dispatch, but each launch follows `idle_s` seconds without work."""
    runtime.set_num_threads(threads)
    ns = np.empty(reps, dtype=np.int64)
    worker_chunks = 0
    for i in range(reps):
        time.sleep(idle_s)
        worker_chunks += runtime.lib.tsjit_testing_time_dispatch(
            1, runtime.ffi.from_buffer("int64_t[]", ns[i:])
        )
    return ns, worker_chunks / (reps * threads)


def report(label: str, ns: np.ndarray, worker_share: float) -> None:
    p50, p90, p99 = np.percentile(ns, [50, 90, 99]) / 1000
    print(
        f"{label:<34} median {p50:6.2f} us   p90 {p90:6.2f} us   p99 {p99:6.2f} us"
        f"   chunks on workers {worker_share:6.1%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200_000, help="launches per case")
    args = parser.parse_args()
    initial_threads = runtime.get_num_threads()
    time_dispatch(2, 1000)  # start the pool's workers
    report("1 thread (inline)", *time_dispatch(1, args.reps))
    report("2 threads, workers awake", *time_dispatch(2, args.reps))
    report("2 threads, workers asleep (1 ms idle)", *time_dispatch_after_idle(2, 300, 1e-3))
    runtime.set_num_threads(initial_threads)


if __name__ == "__main__":
    main()
