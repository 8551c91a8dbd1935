"""Loader for tsjit's native runtime, ``libtsjit_runtime`` (C sources in ``runtime/``).

CMake builds the library during ``pip install`` and installs it into the ``tsjit`` package
directory. It is looked up in every directory of ``tsjit.__path__``: a normal install has
one (site-packages/tsjit); an editable install also lists the CMake install tree next to
the source tree. It is loaded once, on first use, through cffi's backend directly: the
function addresses the LLVM JIT links kernels against, and the thread-count calls, need no
C declarations parsed, so the first kernel of a process does not pay for pycparser
(~15 ms). The declared interface (``ffi`` and ``lib``, for tests and callbacks) is built
lazily on first access.
"""

from __future__ import annotations

import operator
import os
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import _cffi_backend as backend
import numpy as np

import tsjit
from tsjit import forking

# Mirrors runtime/include/tsjit_runtime.h (the kernel ABI) and tsjit_runtime_testing.h.
_CDEF = """
typedef void (*tsjit_task_fn)(void *ctx, int64_t begin, int64_t end);
void tsjit_parallel_for(tsjit_task_fn fn, void *ctx, int64_t n, int64_t grain);
void tsjit_set_num_threads(int n);
int tsjit_get_num_threads(void);
void tsjit_watch_interrupts(void);
int tsjit_interrupt_pending(void);
void tsjit_clear_interrupt(void);

int64_t tsjit_testing_count_indices(int64_t *counts, int64_t n, int64_t grain);
int64_t tsjit_testing_time_dispatch(int64_t reps, int64_t *ns_out);
int tsjit_testing_chunks_per_thread(void);
"""

LIBRARY_FILE = {"darwin": "libtsjit_runtime.dylib", "win32": "tsjit_runtime.dll"}.get(
    sys.platform, "libtsjit_runtime.so"
)
NUM_THREADS_ENV = "TSJIT_NUM_THREADS"
OMP_NUM_THREADS_ENV = "OMP_NUM_THREADS"
_MAX_THREADS = 2**31 - 1  # the C int the runtime takes (it clamps further)

EXPORTED = ("tsjit_parallel_for", "tsjit_set_num_threads", "tsjit_get_num_threads",
            "tsjit_watch_interrupts", "tsjit_interrupt_pending", "tsjit_clear_interrupt",
            "tsjit_testing_count_indices", "tsjit_testing_time_dispatch",
            "tsjit_testing_chunks_per_thread")

_handle: Any = None            # the backend's library handle
_declared: dict[str, Any] = {}  # ffi and lib, once asked for
_load_lock = forking.lock()
_INT = backend.new_primitive_type("int")
_ADDRESS = backend.new_primitive_type("uintptr_t")
_GET_THREADS = backend.new_function_type((), _INT, 0)
_SET_THREADS = backend.new_function_type((_INT,), backend.new_void_type(), 0)


class RuntimeLibraryNotFound(ImportError):
    """The native runtime was not built or not installed next to the tsjit package."""


def locate_library(search_dirs: Iterable[str | os.PathLike[str]]) -> Path:
    """Return the runtime library's path in the first of ``search_dirs`` that has it."""
    searched = [Path(d) for d in search_dirs]
    for directory in searched:
        candidate = directory / LIBRARY_FILE
        if candidate.is_file():
            return candidate
    raise RuntimeLibraryNotFound(
        f"tsjit's native runtime {LIBRARY_FILE} is missing (looked in: "
        f"{', '.join(map(str, searched)) or 'nowhere'}). It is built by CMake during "
        f'installation: reinstall with pip install -e . (or pip install -e ".[test]").'
    )


def _threads_from_env(name: str) -> int | str | None:
    """The thread count environment variable `name` asks for: None when it is unset, the
    text itself when it is not a count >= 1. OMP_NUM_THREADS may list counts per nesting
    level ("4,2"): the first is tsjit's."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    first = value.split(",")[0] if name == OMP_NUM_THREADS_ENV else value
    try:
        threads = int(first)
    except ValueError:
        return value
    return threads if threads >= 1 else value


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, which taskset and container
    CPU sets narrow), else every online CPU."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_num_threads() -> int:
    """TSJIT_NUM_THREADS, else OMP_NUM_THREADS (Dask's nanny sets it to 1 for its worker
    processes, so each worker's kernels stay on its own core), else the usable CPUs.
    A variable that is set but is no thread count is skipped with a RuntimeWarning."""
    ignored = []
    for name in (NUM_THREADS_ENV, OMP_NUM_THREADS_ENV):
        threads = _threads_from_env(name)
        if isinstance(threads, int):
            break
        if threads is not None:
            ignored.append(f"{name}={threads!r}")
    else:
        threads = usable_cpus()
    if ignored:
        what = "is not a thread count" if len(ignored) == 1 else "are not thread counts"
        warnings.warn(f"{' and '.join(ignored)} {what} (an integer >= 1): tsjit's kernels "
                      f"use {threads} threads", RuntimeWarning, stacklevel=2)
    return threads


def _load() -> Any:
    global _handle
    with _load_lock:
        if _handle is None:
            handle = backend.load_library(str(locate_library(tsjit.__path__)), 0)
            handle.load_function(_SET_THREADS, "tsjit_set_num_threads")(
                min(_DEFAULT_THREADS, _MAX_THREADS))
            _handle = handle
    return _handle


def __getattr__(name: str) -> Any:
    # ``ffi`` and ``lib`` (the declared interface) are lazy module attributes.
    if name in ("ffi", "lib"):
        with _load_lock:
            if not _declared:
                import cffi
                ffi = cffi.FFI()
                ffi.cdef(_CDEF)
                _declared["ffi"] = ffi
                _declared["lib"] = ffi.dlopen(str(locate_library(tsjit.__path__)))
        _load()
        return _declared[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def set_num_threads(n: int) -> None:
    """Set the number of threads native kernels use (the calling thread included). Any
    integer >= 1 (a NumPy integer too) is taken; another type is a TypeError and a count
    below 1 a ValueError, raised here rather than at the next kernel."""
    if isinstance(n, (bool, np.bool_)) or not hasattr(type(n), "__index__"):
        raise TypeError(f"set_num_threads() expects an int, got {type(n).__name__}")
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"set_num_threads() expects n >= 1, got {n}")
    _load().load_function(_SET_THREADS, "tsjit_set_num_threads")(min(n, _MAX_THREADS))


def get_num_threads() -> int:
    """Threads native kernels use; by default `default_num_threads()`."""
    return int(_load().load_function(_GET_THREADS, "tsjit_get_num_threads")())


_CLEAR_INTERRUPT = backend.new_function_type((), backend.new_void_type(), 0)


def clear_interrupt() -> None:
    """Lower the flag that stops long kernels for Ctrl-C (runtime/interrupts.c), before
    Python's own handlers run for the signal that raised it."""
    _load().load_function(_CLEAR_INTERRUPT, "tsjit_clear_interrupt")()


def library() -> Any:
    """The runtime's library handle (cffi's backend; raises RuntimeLibraryNotFound when
    the runtime is not built). Functions taken from it with ``load_function`` do not keep
    the library loaded: whatever may call one while the interpreter shuts down (and
    clears this module) holds this handle too."""
    return _load()


def load_function(signature: Any, name: str) -> Any:
    """The runtime's C function ``name``, of the cffi backend's function type ``signature``
    (raises RuntimeLibraryNotFound when the runtime is not built)."""
    return _load().load_function(signature, name)


def symbol_addresses() -> dict[str, int]:
    """Name -> address of every runtime function, for ``llvmlite.binding.add_symbol``."""
    handle = _load()
    return {name: int(backend.cast(_ADDRESS, handle.load_function(_GET_THREADS, name)))
            for name in EXPORTED}


# Read once, when tsjit is imported (tsjit.config imports this module), so a bad value is
# reported once, at the start, and not from inside the first kernel's compilation.
_DEFAULT_THREADS = default_num_threads()


# ---- the memory handler of kernel outputs (runtime/output_memory.c, see output_pool.py)
_VOID_POINTER = backend.new_pointer_type(backend.new_void_type())
_INT64_ARRAY = backend.new_array_type(backend.new_pointer_type(
    backend.new_primitive_type("int64_t")), 4)
_GET_HANDLER = backend.new_function_type((), _VOID_POINTER, 0)
_GET_STATS = backend.new_function_type((backend.new_pointer_type(
    backend.new_primitive_type("int64_t")),), backend.new_void_type(), 0)
_TRIM = backend.new_function_type((), backend.new_void_type(), 0)


def output_memory_handler() -> int:
    """Address of the runtime's PyDataMem_Handler struct."""
    handler = _load().load_function(_GET_HANDLER, "tsjit_output_memory_handler")()
    return int(backend.cast(_ADDRESS, handler))


def output_memory_stats() -> tuple[int, int, int, int]:
    """(mappings held by arrays, their bytes, mappings kept free, their bytes)."""
    out = backend.newp(_INT64_ARRAY, None)
    _load().load_function(_GET_STATS, "tsjit_output_memory_stats")(out)
    return tuple(int(v) for v in out)


def output_memory_trim() -> None:
    """Unmap the mappings kept free for reuse."""
    _load().load_function(_TRIM, "tsjit_output_memory_trim")()
