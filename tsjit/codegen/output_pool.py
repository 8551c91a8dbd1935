"""Fresh kernel outputs: ordinary arrays that own their memory, on recycled pages.

Why: a fresh output whose pages the process does not already have costs more than many
kernels: the kernel faults in (and the OS zeroes) every page on first touch. At 64 MB that
is ~6 ms with the transparent huge pages NumPy asks for and ~30 ms with 4 KiB pages,
against ~5 ms for a*x+y at 16M float32 (measured here): glibc returns allocations above
its 32 MB mmap ceiling to the OS on free, so NumPy pays it on every call. Smaller outputs
fare little better: glibc maps blocks above its (adaptive) mmap threshold afresh, or trims
the heap after they are freed, so that Black-Scholes on 256k..1M float64 in a fresh
process took a page fault per 4 KiB of its two outputs on every call, up to half of its
time (8 to 13 against 5 ns per element).

The runtime's NumPy memory handler (runtime/output_memory.c) keeps the pages of freed
outputs for the next ones. It is NumPy's current handler (``PyDataMem_SetHandler`` from
NumPy's C-API table, the ``_ARRAY_API`` capsule) only while ``np.empty`` allocates an
output of ``POOL_MIN_BYTES`` or more, so a result is an ordinary array, as eager NumPy's:
``base`` is None, it owns its data, it resizes and pickles as any; NumPy frees it through
the handler it was made with when its last view goes. Smaller outputs come from np.empty
directly: there the handler switch (~1 us) costs more than glibc's misses save. Without
the runtime library every output comes from np.empty.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable

import numpy as np
from numpy._core import _multiarray_umath  # its _ARRAY_API capsule: NumPy's C-API table

from tsjit.codegen.output_layout import Layout

__all__ = ["Allocator", "OutputPool", "memory_stats", "trim"]

Allocator = Callable[[tuple, Layout], np.ndarray]
# Below this, switching the handler (~1 us, against 0.2 us for np.empty) is a large part
# of a cheap kernel (a*x+y on 64k float32: ~9 us) when glibc would have reused the block;
# from here on a kernel takes 35 us or more.
POOL_MIN_BYTES = 1 << 20
# Where results start in their first page (see runtime/output_memory.c).
PAGE_BYTES = 4096
RESULT_PAGE_OFFSET = 2048
# Index of PyDataMem_SetHandler in NumPy's C-API table (numpy/__multiarray_api.h).
_SET_HANDLER_INDEX = 304
_CAPSULE_NAME = b"mem_handler"  # the capsule keeps a pointer to these bytes


def _handler_switch() -> tuple[Callable, object] | None:
    """(set_handler, the runtime handler's capsule); None without the runtime library."""
    from tsjit import runtime

    try:
        address = runtime.output_memory_handler()
    except runtime.RuntimeLibraryNotFound:
        return None
    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_New.restype = ctypes.py_object
    api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    table = api.PyCapsule_GetPointer(_multiarray_umath._ARRAY_API, None)
    entry = (ctypes.c_void_p * (_SET_HANDLER_INDEX + 1)).from_address(table)[-1]
    set_handler = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(entry)
    return set_handler, api.PyCapsule_New(address, _CAPSULE_NAME, None)


class OutputPool:
    """Allocation functions for kernel outputs; see the module docstring."""

    _shared: OutputPool | None = None

    def __init__(self, min_bytes: int = POOL_MIN_BYTES):
        self._min_bytes = min_bytes
        self._switch = _handler_switch()

    @classmethod
    def shared(cls) -> OutputPool:
        if cls._shared is None:
            cls._shared = OutputPool()
        return cls._shared

    def min_elements(self, dtype: np.dtype) -> int:
        """Outputs with fewer elements come from np.empty with NumPy's own handler."""
        return -(-self._min_bytes // np.dtype(dtype).itemsize)

    def allocator(self, dtype: np.dtype, rank: int) -> Allocator:
        """The cheapest allocation function for outputs of this dtype and rank:
        ``alloc(shape, layout)`` returns an uninitialized array in ``layout``
        (``output_layout.Layout``: None for C order, "F", or the axes outermost first)."""
        dtype = np.dtype(dtype)
        min_elements = self.min_elements(dtype)
        empty, ndarray = np.empty, np.ndarray
        if self._switch is None:
            min_elements = math.inf
        else:
            set_handler, handler = self._switch

        def pooled(shape: tuple, order: str) -> np.ndarray:
            previous = set_handler(handler)
            try:
                return empty(shape, dtype, order=order)
            finally:
                set_handler(previous)

        if rank <= 1:  # one layout only: no need to look at ``layout``

            def alloc_vector(shape: tuple, layout: Layout) -> np.ndarray:
                if rank == 0 or shape[0] < min_elements:
                    return empty(shape, dtype)
                return pooled(shape, "C")

            return alloc_vector

        def alloc(shape: tuple, layout: Layout) -> np.ndarray:
            order = "C"
            if layout is not None:
                if layout != "F":  # a permuted layout, axes of length 1 in their place
                    return ndarray(shape, dtype, strides=_strides(shape, layout, dtype))
                order = "F"
            if math.prod(shape) < min_elements:
                return empty(shape, dtype, order=order)
            return pooled(shape, order)

        return alloc


def _strides(shape: tuple, layout: tuple[int, ...], dtype: np.dtype) -> tuple[int, ...]:
    """The strides (in bytes) of a fresh array whose axes lie in ``layout``'s order."""
    strides, step = [0] * len(shape), dtype.itemsize
    for axis in reversed(layout):
        strides[axis], step = step, step * shape[axis]
    return tuple(strides)


def memory_stats() -> dict[str, int]:
    """The runtime handler's mappings: held by live arrays, and kept free for reuse."""
    from tsjit import runtime

    live, live_bytes, free, free_bytes = runtime.output_memory_stats()
    return {"live_blocks": live, "live_bytes": live_bytes, "free_blocks": free,
            "free_bytes": free_bytes}


def trim() -> None:
    """Return the mappings kept for reuse to the OS."""
    from tsjit import runtime

    runtime.output_memory_trim()
