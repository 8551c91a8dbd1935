"""Counters of one scripted function's executor (shared by its fallback executors)."""
from __future__ import annotations


class ExecutorStats:
    """What `stats()` reports.

    calls: calls of the scripted function.  profiled_runs: runs of a profiling graph (the
    function's first calls, and the first calls of each fallback after a guard failure).
    specializations: optimized graphs built.  guard_failures: TypeChecks that found other
    types than their code was compiled for.  bailouts: runs of unoptimized code after a
    guard failure or a kernel's runtime check (a shape NumPy broadcasts differently, a
    read-only output).  kernel_launches: fused kernels run.
    """

    __slots__ = ("calls", "profiled_runs", "specializations", "guard_failures", "bailouts",
                 "kernels")

    def __init__(self) -> None:
        self.calls = 0
        self.profiled_runs = 0
        self.specializations = 0
        self.guard_failures = 0
        self.bailouts = 0
        self.kernels: list = []      # every FusionRuntime compiled (each counts its launches)

    def as_dict(self) -> dict[str, int]:
        return {"calls": self.calls, "profiled_runs": self.profiled_runs,
                "specializations": self.specializations, "guard_failures": self.guard_failures,
                "bailouts": self.bailouts,
                "kernel_launches": sum(k.launches for k in self.kernels),
                "kernels_compiled": len(self.kernels)}
