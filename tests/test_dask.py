"""Scripted functions as Dask array kernels on a real distributed.LocalCluster (worker
processes, which unpickle the functions without their source), compared with the same
NumPy functions run the same way; and the empty arrays of Dask's meta calls."""

from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np
import pytest
from _differential import check

import tsjit
from tsjit import runtime

da = pytest.importorskip("dask.array", reason="Dask is an optional extra: pip install "
                         '"dask[array,distributed]" (or tsjit[dask])')
distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
tsjit_dask = pytest.importorskip("tsjit.dask")


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def squared_error(x, y):
    d = x - y
    return (d * d).mean(axis=-1)


SCRIPTED = {fn: tsjit.script(fn) for fn in (gelu, softmax, squared_error)}


class Unit(enum.Enum):
    METRE = 1
    FOOT = 2


class Reading(NamedTuple):
    value: float
    unit: Unit


class OutOfRange(ValueError):
    pass


@tsjit.script
class Calibration:
    def __init__(self, scale: float, limit: float):
        self.scale = scale
        self.limit = limit

    def apply(self, r: Reading) -> Reading:
        v = r.value * self.scale if r.unit == Unit.METRE else r.value * self.scale * 0.3048
        if v > self.limit:
            raise OutOfRange("reading over the limit")
        return Reading(v, Unit.METRE)


def calibrate(c: Calibration, r: Reading) -> Calibration:
    return Calibration(c.apply(r).value, c.limit)


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    """Same type, dtype and shape, values within a few units of the dtype's precision:
    gelu's 1 + tanh(...) cancels for negative x, magnifying tanh's 4 ulp (API.md)."""
    assert (type(got), got.dtype, got.shape) == (type(want), want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=50 * np.finfo(want.dtype).eps,
                               atol=50 * np.finfo(want.dtype).eps)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def blocks(dtype) -> tuple:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 96)).astype(dtype)
    y = rng.standard_normal((64, 96)).astype(dtype)
    return da.from_array(x, chunks=(16, 96)), da.from_array(y, chunks=(16, 96))


def test_map_blocks_and_blockwise_on_worker_processes_match_numpy(client):
    x, y = blocks(np.float32)
    for fn in (gelu, softmax):
        got, want = x.map_blocks(SCRIPTED[fn]), x.map_blocks(fn)
        assert got.dtype == want.dtype
        assert_close(got.compute(), want.compute())
    loss = {f: da.blockwise(f, "i", x, "ij", y, "ij", concatenate=True)
            for f in (squared_error, SCRIPTED[squared_error])}
    assert_close(loss[SCRIPTED[squared_error]].compute(), loss[squared_error].compute())
    # reduced on the workers: only the sums come back
    assert_close(x.map_blocks(SCRIPTED[gelu]).sum(axis=1).compute(),
                 x.map_blocks(gelu).sum(axis=1).compute())


def test_worker_kernels_use_one_thread_each(client):
    # Dask's nanny sets OMP_NUM_THREADS=1: two workers on two cores must not each start
    # a pool of two spinning threads.
    assert set(client.run(runtime.get_num_threads).values()) == {1}


@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning")
@pytest.mark.parametrize("fn", [gelu, softmax, squared_error], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_empty_arrays_of_meta_calls_give_eagers_dtype(fn, dtype):
    # Dask calls each function on empty arrays (the first call of a scripted function,
    # its profiling run) and then on blocks: both through guards and kernels.
    arity = fn.__code__.co_argcount
    shapes = [(0, 0), (0, 5), (3, 0), (4, 5), (0, 5), (0,)]
    with np.errstate(all="ignore"):
        check(fn, *[(np.ones(shape, dtype),) * arity for shape in shapes],
              scripted=tsjit.script(fn), ulps=4)


def test_map_blocks_meta_from_the_typed_graph_without_a_call_in_the_client(client):
    x, _ = blocks(np.float32)
    scripted = tsjit.script(gelu)
    lazy = tsjit_dask.map_blocks(scripted, x)
    assert scripted.stats()["calls"] == 0
    assert (lazy.dtype, lazy._meta.ndim) == (np.float32, 2)
    assert_close(lazy.compute(), x.map_blocks(gelu).compute())


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_output_meta_has_eagers_dtype_and_rank(dtype):
    x, _ = blocks(dtype)
    meta = tsjit_dask.output_meta(SCRIPTED[gelu], x)
    want = gelu(np.ones((1, 1), dtype))
    assert (meta.dtype, meta.ndim, meta.size) == (want.dtype, want.ndim, 0)


def test_output_meta_is_none_where_the_graph_does_not_tell():
    # The reductions' rank is not propagated (yet): Dask's own inference runs instead.
    x, _ = blocks(np.float32)
    assert tsjit_dask.output_meta(SCRIPTED[softmax], x) is None
    lazy = tsjit_dask.map_blocks(SCRIPTED[softmax], x)
    assert lazy.dtype == np.float32


def test_delayed_tasks_take_and_return_the_programs_classes(client):
    # The worker imports this module when it unpickles the arguments (after the
    # function, whose classes were then rebuilt): the function takes the module's
    # instances, and the results and exceptions come back as this module's classes.
    dask = pytest.importorskip("dask")
    scripted = tsjit.script(calibrate)
    c = Calibration(2.0, 10.0)
    readings = [Reading(1.5, Unit.METRE), Reading(3.0, Unit.FOOT)]
    got = dask.compute(*[dask.delayed(scripted)(c, r) for r in readings])
    want = [calibrate(c, r) for r in readings]
    assert [type(g) for g in got] == [Calibration] * 2
    assert [vars(g) for g in got] == [vars(w) for w in want]
    with pytest.raises(OutOfRange, match="over the limit"):
        client.submit(scripted, c, Reading(6.0, Unit.METRE)).result()
