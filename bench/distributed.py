"""Issue 11's distributed suite: scripted functions as Dask map_blocks / blockwise kernels
on a LocalCluster of 2 worker processes x 1 thread, against the same NumPy functions.

    python bench/distributed.py [--quick]

The arrays are made and persisted on the workers; each timed call builds the Dask graph,
runs the kernel on every block and reduces there (row sums), so only the reductions
travel to the client: the figure is the workers' kernel time plus Dask's overhead, which
both implementations pay alike. Cases: gelu, row softmax, a fused loss (mean squared
error per row, blockwise over two arrays), and gelu + softmax in one compute (the issue's
"done when" figure). Results are checked against the NumPy functions run eagerly in this
process (bench/harness.py: 4 ulp of the output's scale); timing is the harness's
interleaved medians. Writes bench/results/distributed.json and .png.
"""

from __future__ import annotations

import sys
from pathlib import Path

import dask
import dask.array as da
import numpy as np

# This file's name is the package's: import dask.distributed with bench/ off the path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
from distributed import Client, LocalCluster  # noqa: E402

sys.path.insert(0, str(_BENCH))
from harness import Case, Implementation, parse_settings, run_suite  # noqa: E402

import tsjit  # noqa: E402


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def squared_error(x, y):
    d = x - y
    return (d * d).mean(axis=-1)


# Each case: what runs per block (a function of the kernels given) and its eager form.
def gelu_rows(kernels, x):
    return x.map_blocks(kernels[gelu]).sum(axis=1)


def softmax_rows(kernels, x):
    return x.map_blocks(kernels[softmax]).sum(axis=1)


def loss_rows(kernels, x, y):
    return da.blockwise(kernels[squared_error], "i", x, "ij", y, "ij", dtype=x.dtype,
                        concatenate=True)


def gelu_and_softmax(kernels, x):
    return gelu_rows(kernels, x), softmax_rows(kernels, x)


EAGER = {gelu: gelu, softmax: softmax, squared_error: squared_error}
SCRIPTED = {fn: tsjit.script(fn) for fn in EAGER}


def eager_result(case, arrays: tuple[np.ndarray, ...]):
    """The case computed by NumPy in this process (chunking along rows only, so each row
    reduction is NumPy's own on the whole row)."""
    lazy = case(EAGER, *(da.from_array(a, chunks=a.shape) for a in arrays))
    return dask.compute(*lazy, scheduler="sync") if isinstance(lazy, tuple) else \
        lazy.compute(scheduler="sync")


def on_cluster(case, kernels, arrays):
    """An implementation: the case over the persisted arrays, computed on the cluster."""
    def call(*_ignored):
        lazy = case(kernels, *arrays)
        return dask.compute(*lazy) if isinstance(lazy, tuple) else lazy.compute()
    return call


def main() -> None:
    settings = parse_settings(__doc__)
    rows, columns, chunk_rows = (4096, 512, 512) if settings.quick else (16384, 1024, 1024)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        rng = da.random.default_rng(0)
        shape, chunks = (rows, columns), (chunk_rows, columns)
        x = rng.standard_normal(shape, chunks=chunks).astype(np.float32).persist()
        y = rng.standard_normal(shape, chunks=chunks).astype(np.float32).persist()
        local_x, local_y = x.compute(), y.compute()
        threads = set(client.run(tsjit.runtime.get_num_threads).values())
        print(f"{rows} x {columns} float32 in blocks of {chunk_rows} rows on "
              f"{len(client.scheduler_info()['workers'])} workers x 1 thread "
              f"(tsjit threads per worker: {threads})")
        cases = []
        for name, case, arrays, local in [
            ("gelu", gelu_rows, (x,), (local_x,)),
            ("softmax", softmax_rows, (x,), (local_x,)),
            ("squared_error", loss_rows, (x, y), (local_x, local_y)),
            ("gelu+softmax", gelu_and_softmax, (x,), (local_x,)),
        ]:
            reference = eager_result(case, local)
            cases.append(Case(
                f"{name} [{rows}x{columns}] map_blocks", lambda *_, r=reference: r, local,
                [Implementation("numpy", lambda c=case, a=arrays: on_cluster(c, EAGER, a)),
                 Implementation("tsjit", lambda c=case, a=arrays: on_cluster(c, SCRIPTED, a),
                                ours=True)],
                notes=("the machine was shared while measuring (see load_average)",)))
        run_suite("distributed", cases, settings)


if __name__ == "__main__":
    main()
