"""Scripted functions as Dask array kernels, with their output type read from the graph.

A scripted function already works as a `map_blocks` / `blockwise` kernel: it pickles
through its saved form, each worker compiles it once, and the kernels of a worker that
Dask's nanny started use one thread (it sets OMP_NUM_THREADS=1). What this module adds
is the block's meta (the dtype and rank of what each block returns) without Dask's trial
call: Dask calls the function on empty arrays in the client to learn it, which profiles
and compiles there for nothing, and which fails outright for a function that reduces an
empty axis (`x.max(axis=-1)` has no identity), after which Dask guesses. Here type
propagation over the graph, from the inputs' dtypes and ranks, gives the output's dtype
and rank; where it cannot (the result depends on a value), Dask's own inference runs.

    import dask.array as da
    import tsjit.dask
    y = tsjit.dask.map_blocks(scripted_softmax, x)      # x: a dask array
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .api.script_function import ScriptFunction
from .ir.types import TensorType
from .passes.propagate_types import propagate_types


def output_meta(fn: ScriptFunction, *inputs: Any) -> np.ndarray | None:
    """An empty array of the dtype and rank `fn` returns for arrays like `inputs` (arrays
    or dask arrays: only their dtype and ndim are read; other arguments are passed as
    the call passes them), read from the typed graph without running `fn`; None when
    the graph does not determine them or the result is not one array."""
    graph = fn.graph.copy()
    if len(inputs) != len(graph.inputs):
        return None
    for value, arg in zip(graph.inputs, inputs):
        if isinstance(value.type, TensorType):
            if not hasattr(arg, "dtype") or not hasattr(arg, "ndim"):
                return None
            value.type = TensorType(np.dtype(arg.dtype).name, (None,) * arg.ndim, None, True)
    propagate_types(graph)
    if len(graph.outputs) != 1:
        return None
    out = graph.outputs[0].type
    if not isinstance(out, TensorType) or None in (out.dtype, out.sizes) or not out.ndarray:
        return None
    return np.empty((0,) * len(out.sizes), dtype=out.dtype)


def map_blocks(fn: ScriptFunction, *args: Any, **kwargs: Any):
    """`dask.array.map_blocks(fn, *args, **kwargs)` with `meta` (and `dtype`) from
    `output_meta` unless given; the function is not called in the client."""
    import dask.array as da

    if "meta" not in kwargs and "dtype" not in kwargs:
        meta = output_meta(fn, *args)
        if meta is not None:
            kwargs["meta"] = meta
    return da.map_blocks(fn, *args, **kwargs)


def blockwise(fn: ScriptFunction, out_ind: str, *args: Any, **kwargs: Any):
    """`dask.array.blockwise(fn, out_ind, *args, **kwargs)` (`args` alternate arrays and
    index strings) with `meta` from `output_meta` unless given."""
    import dask.array as da

    if "meta" not in kwargs and "dtype" not in kwargs:
        meta = output_meta(fn, *args[::2])
        if meta is not None:
            kwargs["meta"] = meta
    return da.blockwise(fn, out_ind, *args, **kwargs)
