"""Counters of one scripted function's executor (shared by its fallback executors)."""
from __future__ import annotations


class ExecutorStats:
    """What `stats()` reports.

    calls: calls of the scripted function.  profiled_runs: runs of a profiling graph (the
    function's first calls, and the first calls of each fallback after a guard failure).
    interpreted_runs: runs served by the interpreter while their specialization compiled
    in the background (fallbacks' included).  The tiers: a call of the function is a
    profiled run, an interpreted run, or else served by its specialization (native code,
    or the interpreter where nothing compiled).  background_compiles: compiles queued
    for the worker thread.
    specializations: optimized graphs built.  guard_failures: TypeChecks that found other
    types than their code was compiled for.  bailouts: runs of unoptimized code after a
    guard failure or a kernel's runtime check (a shape NumPy broadcasts differently, a
    read-only output).  kernel_launches: fused kernels run.
    """

    __slots__ = ("calls", "profiled_runs", "interpreted_runs", "background_compiles",
                 "specializations", "guard_failures", "bailouts", "kernels")

    def __init__(self) -> None:
        self.calls = 0
        self.profiled_runs = 0
        self.interpreted_runs = 0
        self.background_compiles = 0
        self.specializations = 0
        self.guard_failures = 0
        self.bailouts = 0
        self.kernels: list = []      # every FusionRuntime compiled (each counts its launches)

    def as_dict(self) -> dict[str, int]:
        return {"calls": self.calls, "profiled_runs": self.profiled_runs,
                "interpreted_runs": self.interpreted_runs,
                "background_compiles": self.background_compiles,
                "specializations": self.specializations, "guard_failures": self.guard_failures,
                "bailouts": self.bailouts,
                "kernel_launches": sum(k.launches for k in self.kernels),
                "kernels_compiled": len(self.kernels)}
