"""Fresh outputs of fused kernels: the runtime's memory handler against plain np.empty.

    python bench/output_memory.py [--quick]

Fused results are ordinary arrays that own their memory; their pages come from the
runtime's NumPy memory handler (runtime/output_memory.c), which keeps freed outputs'
pages for the next ones. "tsjit, np.empty outputs" is the same kernel allocating its
outputs with NumPy's default handler instead, which at these sizes maps fresh pages on
every call: the difference is what the handler saves. --quick divides the sizes by 16.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable

import elementwise_workloads as w
import numpy as np
import peers
from harness import Case, Implementation, parse_settings, run_suite

import tsjit
from tsjit.codegen import launch
from tsjit.codegen.output_pool import OutputPool


def _plain_numpy_outputs() -> OutputPool:
    pool = OutputPool()
    pool._switch = None      # no handler: every output from np.empty
    return pool


def _tsjit_with(name: str, make_pool: Callable[[], OutputPool], fn: Callable
                ) -> Implementation:
    """tsjit on its own copy of `fn`, whose kernel allocates through `make_pool()`'s
    allocators (they are bound when the kernel is made, on the first call)."""

    def compile_() -> Callable:
        scripted = tsjit.script(types.FunctionType(fn.__code__, fn.__globals__, fn.__name__))
        state = {"ready": False}

        def call(*args):
            if not state["ready"]:
                saved, OutputPool._shared = OutputPool._shared, make_pool()
                launch._kernels.clear()     # a kernel of its own, with these allocators
                try:
                    scripted(*args)
                finally:
                    OutputPool._shared = saved
                state["ready"] = True
            return scripted(*args)

        return call

    return Implementation(name, compile_, ours=True)


def cases(quick: bool):
    rng = np.random.default_rng(0)
    n = (16 << 20) // (16 if quick else 1)
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    label = f"f32 {n >> 20}M" if n >= 1 << 20 else f"f32 {n >> 10}k"
    for fn, name, args in ((w.triad, f"triad {label} fresh output", (2.5, x, y)),
                           (w.gelu, f"gelu {label}", (x,))):
        yield Case(name, fn, args, [
            _tsjit_with("tsjit", OutputPool, fn),
            _tsjit_with("tsjit, np.empty outputs", _plain_numpy_outputs, fn),
            peers.plain("numpy", fn),
        ])


def main(argv: list[str] | None = None) -> None:
    settings = parse_settings(__doc__.splitlines()[0], argv)
    run_suite("output_memory", cases(settings.quick), settings)


if __name__ == "__main__":
    main(sys.argv[1:])
