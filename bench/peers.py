"""How tsjit and each peer turn a workload into something the harness can time.

Peers are optional: each builder is used only when `installed(peer)` says its package
imports, and `report_missing()` prints the ones left out. JAX and torch.compile run the
NumPy function itself with `np` rebound to their array module (`rebind`), so every peer
computes the same formula as NumPy and tsjit; Numba runs the workload's loop form.
"""

from __future__ import annotations

import importlib
import inspect
import types
from collections.abc import Callable

import numpy as np
from harness import Implementation

import tsjit

PEER_PACKAGES = {"numexpr": "numexpr", "numba": "numba", "jax": "jax", "torch": "torch"}


def installed(peer: str) -> bool:
    try:
        importlib.import_module(PEER_PACKAGES[peer])
    except ImportError:
        return False
    return True


def report_missing() -> None:
    missing = [peer for peer in PEER_PACKAGES if not installed(peer)]
    if missing:
        print(f"peers not installed (skipped): {', '.join(missing)}; "
              "pip install -e '.[bench]' and torch==2.13.0 (CPU wheel) add them")


def rebind(fn: Callable, overrides: dict[str, object],
           wrap_helper: Callable[[Callable], Callable] = lambda helper: helper) -> Callable:
    """`fn` running in a copy of its module's globals with `overrides` applied.

    The other functions of that module are rebuilt in the same copy (and passed through
    `wrap_helper`), so helpers that `fn` calls see the overrides too.
    """
    namespace = dict(fn.__globals__)
    namespace.update(overrides)
    for name, value in list(namespace.items()):
        if inspect.isfunction(value) and value.__module__ == fn.__module__:
            clone = types.FunctionType(value.__code__, namespace, name, value.__defaults__,
                                       value.__closure__)
            namespace[name] = clone if name == fn.__name__ else wrap_helper(clone)
    return namespace[fn.__name__]


def tsjit_script(fn: Callable) -> Implementation:
    """tsjit compiling in the calls that decide a specialization: with the default
    background compilation, warmup calls that end before the worker has compiled (a
    loaded machine) leave the interpreter to be timed (LSTM: 122 ms instead of 2.6)."""
    def script() -> Callable:
        tsjit.set_background_compilation(False)
        return tsjit.script(fn)
    return Implementation("tsjit", script, ours=True)


def plain(name: str, fn: Callable) -> Implementation:
    """NumPy (or CPython, or numexpr inside `fn`): the function as written, nothing to build."""
    return Implementation(name, lambda: fn)


def numba_loops(loop: Callable) -> list[Implementation]:
    """The loop compiled twice: serial (`prange` acts as `range`) and with parallel=True."""
    import numba

    def compile_loop(parallel: bool) -> Callable:
        return numba.njit(fastmath=False, parallel=parallel)(
            rebind(loop, {}, wrap_helper=numba.njit))

    return [Implementation("numba njit", lambda: compile_loop(False)),
            Implementation("numba prange", lambda: compile_loop(True))]


def jax_jit(fn: Callable) -> Implementation:
    """jax.jit of the NumPy function over jax.numpy; the call waits for the result.

    64-bit types are enabled so float64 workloads stay float64 (float32 inputs stay float32:
    Python scalars are weakly typed); inputs are put on the device once, outside timing.
    """
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)

    def compile_jax() -> Callable:
        jitted = jax.jit(rebind(fn, {"np": jnp}))
        return lambda *args: jax.block_until_ready(jitted(*args))

    def to_device(args: tuple) -> tuple:
        return tuple(jax.device_put(a) if isinstance(a, np.ndarray) else a for a in args)

    return Implementation("jax.jit", compile_jax, convert=to_device)


def _torch_as_numpy() -> types.ModuleType:
    """The `np.` spellings the workloads use, in torch (`maximum` with a Python scalar
    is torch's clamp_min)."""
    import torch
    module = types.ModuleType("torch_as_numpy")
    for name in ("abs", "exp", "log", "log1p", "sqrt", "tanh", "where"):
        setattr(module, name, getattr(torch, name))
    module.maximum = lambda a, b: (torch.maximum(a, b) if isinstance(b, torch.Tensor)
                                   else torch.clamp_min(a, b))
    return module


def _from_numpy(args: tuple) -> tuple:
    import torch
    return tuple(torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args)


def torch_compile(fn: Callable) -> Implementation:
    """torch.compile (Inductor, CPU) of the NumPy function over torch; inputs shared with
    NumPy through torch.from_numpy. dynamic=False: one static graph per input shape, as
    for the other peers, with room for every size a suite uses."""
    import torch
    torch._dynamo.config.recompile_limit = 64
    namespace = _torch_as_numpy()
    return Implementation(
        "torch.compile",
        lambda: torch.compile(rebind(fn, {"np": namespace}), dynamic=False, fullgraph=True),
        convert=_from_numpy)


def torch_jit_script(fn: Callable) -> Implementation:
    import torch
    return Implementation("torch.jit.script", lambda: torch.jit.script(fn))
