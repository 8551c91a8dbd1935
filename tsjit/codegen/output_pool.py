"""Fresh kernel outputs, with buffers recycled once their previous result is dead.

Why: a fresh output whose pages the process does not already have costs more than many
kernels: the kernel faults in (and the OS zeroes) every page on first touch. At 64 MB that
is ~6 ms with the transparent huge pages NumPy asks for and ~30 ms with 4 KiB pages,
against ~5 ms for a*x+y at 16M float32 (measured here): glibc returns allocations above
its 32 MB mmap ceiling to the OS on free, so NumPy pays it on every call. Smaller outputs
fare little better: glibc maps blocks above its (adaptive) mmap threshold afresh, or trims
the heap after they are freed, so that Black-Scholes on 256k..1M float64 in a fresh
process took a page fault per 4 KiB of its two outputs on every call, up to half of its
time (8 to 13 against 5 ns per element).

The pool keeps a few buffers and hands one out again only when no array refers to it any
more: every result is a view of a pooled base array, and a view (or a view of a view, a
memoryview, ...) holds a reference to its base, so the base's reference count says
exactly whether any result is still alive. Outputs below POOL_MIN_BYTES come from
np.empty: there the bookkeeping would cost more than glibc's misses save on average. A
pooled result is a view (``.base`` is the buffer).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import numpy as np

from tsjit import forking

__all__ = ["Allocator", "OutputPool"]

Allocator = Callable[[tuple, "np.ndarray | None"], np.ndarray]
# Below this, a pooled output's bookkeeping (~2 us, against 0.2 us for np.empty) is a
# large part of a cheap kernel (a*x+y on 64k float32: 9 -> 11.5 us) when glibc would have
# reused the block; from here on it is ~5% of the cheapest (a*x+y, 256k: 35 -> 37 us).
POOL_MIN_BYTES = 1 << 20
POOL_MAX_BUFFERS = 8
# Results start in the middle of a page, which is a cache line boundary: rows of whole
# lines are then written as whole lines (elementwise_driver streams). Not at a page's first
# line: NumPy's large arrays start 16 bytes past a page, and an output whose offset in its
# page is a little above an input's makes each load wait for the stores just made to the
# same offset (4K aliasing): bias+relu [1024,1024] into a result 64 bytes into its page
# took 74.9 us, 66.6-69.7 into one at 2048 (input at 16 or at 2048).
PAGE_BYTES = 4096
RESULT_PAGE_OFFSET = 2048


class OutputPool:
    """A small LRU of byte buffers; see the module docstring for the invariant. The offset
    of each buffer's result start is computed once (reading an array's address costs
    ~1 us)."""

    _shared: OutputPool | None = None

    def __init__(self, max_buffers: int = POOL_MAX_BUFFERS, min_bytes: int = POOL_MIN_BYTES):
        self._buffers: list[np.ndarray] = []  # most recently used last
        self._starts: dict[int, int] = {}  # id(buffer) -> where its results start
        self._max_buffers = max_buffers
        self._min_bytes = min_bytes
        self._lock = forking.lock()
        # References to a free buffer: its entry's and getrefcount's argument.
        self._free_refcount = self._measure_free_refcount()

    @classmethod
    def shared(cls) -> OutputPool:
        if cls._shared is None:
            cls._shared = OutputPool()
        return cls._shared

    def _measure_free_refcount(self) -> int:
        probe = [np.empty(1, np.uint8)]
        return sys.getrefcount(probe[0])

    def _is_free(self, position: int) -> bool:
        # Same expression as in _measure_free_refcount: the list's reference + the argument.
        return sys.getrefcount(self._buffers[position]) == self._free_refcount

    def min_elements(self, dtype: np.dtype) -> int:
        """Outputs with fewer elements are plain np.empty arrays (not pooled)."""
        return -(-self._min_bytes // np.dtype(dtype).itemsize)

    def allocator(self, dtype: np.dtype, rank: int) -> Allocator:
        """The cheapest allocation function for outputs of this dtype and rank:
        ``alloc(shape, like)`` returns an uninitialized array laid out as NumPy would lay
        out a ufunc result computed from ``like`` (C order when ``like`` is None)."""
        dtype = np.dtype(dtype)
        min_elements = self.min_elements(dtype)
        empty, empty_like = np.empty, np.empty_like

        if rank <= 1:  # one layout only: no need to look at ``like``

            def alloc_vector(shape: tuple, like: np.ndarray | None) -> np.ndarray:
                if rank == 0 or shape[0] < min_elements:
                    return empty(shape, dtype)
                return self._pooled(shape, dtype, "C")

            return alloc_vector

        def alloc(shape: tuple, like: np.ndarray | None) -> np.ndarray:
            order = "C"
            if like is not None and not like.flags.c_contiguous:
                if not like.flags.f_contiguous:  # a permuted layout: NumPy's K order
                    return empty_like(like, dtype, subok=False, shape=shape)
                order = "F"
            if math.prod(shape) < min_elements:
                return empty(shape, dtype, order=order)
            return self._pooled(shape, dtype, order)

        return alloc

    def _pooled(self, shape: tuple, dtype: np.dtype, order: str) -> np.ndarray:
        buffer, offset = self._reuse(math.prod(shape) * dtype.itemsize + PAGE_BYTES)
        return np.ndarray(shape, dtype, buffer=buffer, offset=offset, order=order)

    def _reuse(self, nbytes: int) -> tuple[np.ndarray, int]:
        with self._lock:
            buffers = self._buffers
            for position in range(len(buffers) - 1, -1, -1):  # the most recent first
                if buffers[position].nbytes == nbytes and self._is_free(position):
                    if position != len(buffers) - 1:
                        buffers.append(buffers.pop(position))
                    return buffers[-1], self._starts[id(buffers[-1])]
            buffer = np.empty(nbytes, np.uint8)
            start = (RESULT_PAGE_OFFSET - buffer.ctypes.data) % PAGE_BYTES
            offset = self._starts[id(buffer)] = start
            buffers.append(buffer)
            if len(buffers) > self._max_buffers:
                self._drop_oldest()
            return buffer, offset

    def _drop_oldest(self) -> None:
        """Forget the least recently used free buffer, or the oldest one when all are in
        use (its results keep it alive; it is just no longer recycled)."""
        position = next((p for p in range(len(self._buffers)) if self._is_free(p)), 0)
        del self._starts[id(self._buffers.pop(position))]
