"""Keeping tsjit usable in a child process made by fork() while other threads were in it.

fork() copies only the thread that calls it: a lock that another thread held at that
moment stays held in the child forever, so the child's first call that needs it hangs
(multiprocessing's "fork" start method, Dask's and pytest-xdist's fork workers). Two
measures, registered with os.register_at_fork:

- LLVM is never forked mid-compile: before fork, the forking thread takes the locks that
  `hold_across_fork` registered (the JIT engines'), then llvmlite's own lock, the order
  in which compiles take them, so a compile in flight on another thread finishes first;
  it releases them in both processes after. LLVM's state is then consistent in the child.
- Every other tsjit lock guards Python-level state only (executors, kernel tables, the
  output pool). Made with `lock()` / `rlock()`, it is re-created unlocked in the child;
  whatever its holder was doing is left undone there, as if that thread had not started.

The C thread pool has its own pthread_atfork handler (runtime/thread_pool.c).
"""
from __future__ import annotations

import os
import sys
import threading
import weakref
from typing import Any

_recreated_in_child: weakref.WeakSet[Any] = weakref.WeakSet()
_held_across_fork: weakref.WeakSet[Any] = weakref.WeakSet()
_registry_lock = threading.Lock()
_held: list[Any] = []  # what the forking thread took, while it forks


def lock() -> threading.Lock:
    """A threading.Lock that a forked child gets back unlocked."""
    made = threading.Lock()
    _recreated_in_child.add(made)
    return made


def rlock() -> threading.RLock:
    """A threading.RLock that a forked child gets back unlocked."""
    made = threading.RLock()
    _recreated_in_child.add(made)
    return made


def hold_across_fork(held: threading.RLock) -> None:
    """Take the lock `held` before every fork (while it lives) and release it after, in
    both processes. No code may hold two of these at once: they are taken in any order."""
    with _registry_lock:
        _held_across_fork.add(held)


def llvmlite_lock() -> Any:
    """llvmlite's lock around every LLVM call, once llvmlite.binding is in use."""
    ffi = sys.modules.get("llvmlite.binding.ffi")
    return getattr(getattr(getattr(ffi, "lib", None), "_lock", None), "_lock", None)


def _before_fork() -> None:
    _registry_lock.acquire()
    _held[:] = list(_held_across_fork)
    llvm_lock = llvmlite_lock()
    if llvm_lock is not None:
        _held.append(llvm_lock)
    for held in _held:
        held.acquire()


def _release_held() -> None:
    for held in reversed(_held):
        held.release()
    _held.clear()


def _after_fork_in_parent() -> None:
    _release_held()
    _registry_lock.release()


def _after_fork_in_child() -> None:
    _release_held()
    _registry_lock._at_fork_reinit()
    for made in list(_recreated_in_child):
        made._at_fork_reinit()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)
