"""The disk cache's checks against the work they guard: a verified load of each entry
(open, fstat, read, SHA-256 over key material, IR and object, key compare) beside linking
its object, by the runtime's loader (what tsjit does) and by LLVM's JIT (its fallback),
medians of repeated runs.

    python bench/disk_cache.py

It scripts gelu, runs it until its kernels are compiled (or loaded from the cache in
TSJIT_CACHE_DIR, or a temporary one), then times each entry it loaded.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import numpy as np

from tsjit.codegen import disk_cache

_requested: list[str] = []
_load = disk_cache.DiskCache.load


def _recording_load(self, key_material: str):
    _requested.append(key_material)
    return _load(self, key_material)


def _median_us(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    os.environ.setdefault("TSJIT_CACHE_DIR", tempfile.mkdtemp(prefix="tsjit-bench-cache-"))
    disk_cache.DiskCache.load = _recording_load
    import tsjit
    from tsjit.codegen import object_loader
    from tsjit.codegen.engine import get_engine
    from tsjit.codegen.llvm_jit import link as jit_link

    @tsjit.script
    def gelu(x):
        return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    for _ in range(2):
        gelu(np.ones(1000))
    engine = get_engine()
    cache = engine._disk
    for key in _requested:
        obj, ir = _load(cache, key)
        load_us = _median_us(lambda key=key: _load(cache, key), 300)
        loader_us = _median_us(lambda obj=obj: object_loader.load(obj, engine.symbols), 300)
        imports = {name: engine.symbols[name] for name in engine._externals(ir)}
        try:
            jit_us = _median_us(lambda obj=obj, imports=imports: jit_link(obj, imports, ()), 30)
            jit_us = f"{jit_us:.0f} us"
        except RuntimeError:   # the driver exports a process-wide symbol: linked once only
            jit_us = "n/a (linked once per process)"
        print(f"entry of {len(obj) + len(ir)} bytes: verified load {load_us:.0f} us, "
              f"link: loader {loader_us:.0f} us, LLVM's JIT {jit_us}")


if __name__ == "__main__":
    main()
