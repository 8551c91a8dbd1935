"""Compiled kernels by spec: each compiled once, kept while something uses it.

The elementwise and the row (reduction) launchers share this. Entries are weak, so a
kernel's code is unloaded with the last executor that runs it; the lock is one a forked
child gets back unlocked, so a fork taken mid-compile does not leave the cache locked.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from tsjit import forking

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class KernelCache(Generic[K, V]):
    def __init__(self, supports: Callable[[K], tuple[bool, str]], what: str) -> None:
        self._supports, self._what = supports, what
        self._kernels: weakref.WeakValueDictionary[K, V] = weakref.WeakValueDictionary()
        self._lock = forking.lock()

    def get(self, spec: K, build: Callable[[K], V]) -> V:
        """The kernel for ``spec``, built by ``build(spec)`` on the first request; a
        ``ValueError`` says why when ``spec`` is not supported."""
        kernel = self._kernels.get(spec)
        if kernel is not None:
            return kernel
        ok, reason = self._supports(spec)
        if not ok:
            raise ValueError(f"cannot compile this {self._what}: {reason}")
        with self._lock:
            kernel = self._kernels.get(spec)
            if kernel is None:
                kernel = self._kernels[spec] = build(spec)
        return kernel
