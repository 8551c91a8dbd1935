"""Fresh kernel outputs, with large buffers recycled once their previous result is dead.

Why: a freshly mmap'd 64 MB output costs more than a memory-bound kernel itself: the
kernel faults in (and the OS zeroes) every page on first touch, ~6 ms with the transparent
huge pages NumPy asks for and ~30 ms with 4 KiB pages, against ~5 ms for a*x+y at 16M
float32 (measured here). glibc returns allocations above its 32 MB mmap ceiling to the OS
on free, so NumPy pays that cost on every call. (Kernels that large run on all threads,
so the first touch of a fresh output is at least spread over the cores.)

The pool keeps a few such buffers and hands one out again only when no array refers to
it any more: every result is a view of a pooled base array, and a view (or a view of a
view, a memoryview, ...) holds a reference to its base, so the base's reference count
says exactly whether any result is still alive. Small outputs bypass the pool (np.empty
is cheaper than the bookkeeping). A pooled result is a view (``.base`` is the buffer).
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable

import numpy as np

__all__ = ["Allocator", "OutputPool"]

Allocator = Callable[[tuple, "np.ndarray | None"], np.ndarray]
# Below this, np.empty's own reuse (glibc's heap) makes pooling pointless.
POOL_MIN_BYTES = 16 << 20
POOL_MAX_BUFFERS = 4
# Results start on a cache line of their buffer (NumPy's large arrays start 16 bytes past a
# page): rows of whole lines are then written as whole lines (elementwise_driver streams).
LINE_BYTES = 64


class OutputPool:
    """A small LRU of large byte buffers; see the module docstring for the invariant."""

    _shared: OutputPool | None = None

    def __init__(self, max_buffers: int = POOL_MAX_BUFFERS, min_bytes: int = POOL_MIN_BYTES):
        self._buffers: list[np.ndarray] = []  # most recently used last
        self._max_buffers = max_buffers
        self._min_bytes = min_bytes
        self._lock = threading.Lock()
        # References to a free buffer: the list's and getrefcount's argument.
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
        buffer = self._reuse(math.prod(shape) * dtype.itemsize + LINE_BYTES)
        start = -buffer.ctypes.data % LINE_BYTES
        return np.ndarray(shape, dtype, buffer=buffer, offset=start, order=order)

    def _reuse(self, nbytes: int) -> np.ndarray:
        with self._lock:
            for position in range(len(self._buffers)):
                if self._buffers[position].nbytes == nbytes and self._is_free(position):
                    buffer = self._buffers.pop(position)
                    self._buffers.append(buffer)
                    return buffer
            buffer = np.empty(nbytes, np.uint8)
            self._buffers.append(buffer)
            if len(self._buffers) > self._max_buffers:
                self._drop_oldest()
            return buffer

    def _drop_oldest(self) -> None:
        """Forget the least recently used free buffer, or the oldest one when all are in
        use (its results keep it alive; it is just no longer recycled)."""
        for position in range(len(self._buffers)):
            if self._is_free(position):
                del self._buffers[position]
                return
        del self._buffers[0]
