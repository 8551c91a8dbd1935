"""Background compilation: the worker thread that builds specializations while calls run
in the interpreter ("compiling is a tier, not a pause", ARCHITECTURE.md).

One daemon thread takes jobs in order: LLVM serializes every compile behind one global
lock anyway, and the thread releases the GIL while LLVM works, so a second worker would
only compete with the calls for the GIL.  A job is a function of no arguments; what it
compiles and where the result goes is the executor's business (it holds a weak reference
to its executor, so a dropped function's job compiles nothing and keeps nothing alive).

`import tsjit` loads the native back end's Python side and the C runtime
(`load_back_end`), not llvmlite and the code generators: the first compile does, on the
worker thread.

A forked child gets a worker of its own, which restarts the parent's unfinished jobs.

Exiting while a job runs: at exit (`atexit`) no queued job starts any more, a running one
that a first call stopped waiting for is finished (EXIT_FINISH_SECONDS), and the
exiting thread waits for a load of the back end in progress (llvmlite's import with it),
then takes llvmlite's global lock, which waits for the LLVM call in progress and keeps the
worker out of LLVM from then on, while the process tears LLVM down.  The worker
is a daemon: the interpreter does not wait for it.

A compile that takes longer than LONG_COMPILE_SECONDS says so once, while it runs, on the
`tsjit.compile` logger (TSJIT_LOG=compile), with what it compiles and why.
"""
from __future__ import annotations

import _thread
import atexit
import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator

from .. import forking

LONG_COMPILE_SECONDS = 1.0
# How much CPU time the thread holding a held job may use before the job starts anyway.
# Past it the compile shares the GIL with the call that holds it (the first compile of a
# process loads the back end: ~60 ms of Python on a quiet Zen 3), which then costs a call
# that ran this long at most ~1.1x.  CPU time, not wall time: on a loaded machine a call
# that waits for a core would otherwise have a compile start beside it for no reason.
HELD_JOB_START_SECONDS = 0.5
# And at the latest after this long (wall time): a holder that stopped using CPU without
# releasing its job (blocked, or gone through a path that forgot it) must not hold up
# every later compile.
HELD_JOB_MAX_SECONDS = 10.0
_HOLD_POLL_SECONDS = 0.02
# A compile that a first call stopped waiting for (`CompileJob.wait_for_load`) and that is
# running at exit is finished first, for at most this long: its kernels then reach the disk
# cache. A process that calls a function once and ends (a script run again and again)
# used to finish it inside that call; without this it would never fill the cache, and
# every later process would start cold.
EXIT_FINISH_SECONDS = 10.0

log = logging.getLogger("tsjit.compile")


class CompileJob:
    """One queued compile; `wait()` blocks until it has run (or was dropped at exit).

    A held job (`submit(work, held=True)`) starts when `release()` is called, or after
    HELD_JOB_START_SECONDS at the latest: an interpreted first call of large straight-line
    code holds its own compile until it returns, so that the compile (whose result only the
    next call can use) does not take the GIL from it; a long call lets it start after that
    while."""

    def __init__(self, work: Callable[[], None], held: bool = False):
        self.work = work
        self._done = threading.Event()
        self._settled = threading.Event()     # done, or LLVM compiles (see wait_for_load)
        self.finish_before_exit = False       # see EXIT_FINISH_SECONDS
        self._released = threading.Event()
        self._holder_clock: int | None = None     # the CPU clock of the holding thread
        if not held:
            self._released.set()
        elif hasattr(time, "pthread_getcpuclockid"):
            self._holder_clock = time.pthread_getcpuclockid(threading.get_ident())

    def release(self) -> None:
        self._released.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def wait_for_load(self, timeout: float) -> bool:
        """Wait while the job only loads code (from the memory or disk cache: a few ms),
        until it is done (True), or until it has to compile with LLVM (hundreds of ms,
        seconds on a loaded machine) or ``timeout`` passes (False): a first call that would
        wait for LLVM runs in the interpreter instead (gelu 1M cold: 1.9 s -> ~40 ms)."""
        self._settled.wait(timeout)
        if not self.done:
            self.finish_before_exit = True
        return self.done

    def wait_for_compile(self, timeout: float) -> bool:
        """Wait until the job is done (True) or ``timeout`` has passed (False: the caller
        goes on without it, and the compile finishes before the process exits)."""
        if not self.wait(timeout):
            self.finish_before_exit = True
        return self.done

    def wait_for_release(self) -> None:
        """Until released, or until the holder has used HELD_JOB_START_SECONDS of CPU (or
        HELD_JOB_MAX_SECONDS have passed)."""
        if self._holder_clock is None:
            self._released.wait(HELD_JOB_START_SECONDS)
            return
        deadline = time.monotonic() + HELD_JOB_MAX_SECONDS
        try:
            start = time.clock_gettime(self._holder_clock)
            while not self._released.wait(_HOLD_POLL_SECONDS):
                if time.clock_gettime(self._holder_clock) - start >= HELD_JOB_START_SECONDS \
                        or time.monotonic() >= deadline:
                    return
        except OSError:     # the holding thread has ended
            return

    def run(self) -> None:
        _running_here.job = self
        try:
            self.work()
        finally:
            _running_here.job = None
            self._done.set()
            self._settled.set()

    def drop(self) -> None:
        self._done.set()
        self._settled.set()


# The job the current thread runs (the worker's), told by the engine when LLVM compiles.
_running_here = threading.local()


def _llvm_compile_started() -> None:
    job = getattr(_running_here, "job", None)
    if job is not None:
        job._settled.set()


@contextlib.contextmanager
def long_compile_notice(description: Callable[[], str]) -> Iterator[None]:
    """Around a compile: if it is still running after LONG_COMPILE_SECONDS, log that once
    (from a watching thread, while it runs), and how long it took in the end. The watcher
    is a bare thread: ``threading.Thread.start`` (a Timer's) waits until the new thread has
    run, which on a loaded machine took 2-9 ms of every compile, a kernel from the disk
    cache included (load ~5). The watcher reaches ``description`` (and through it the
    function compiled) only while the compile runs: a watcher that the scheduler has not
    yet let finish must not keep a dropped function alive."""
    start = time.perf_counter()
    done = threading.Event()
    timeout = LONG_COMPILE_SECONDS
    watched = [description]

    def watch() -> None:
        if not done.wait(timeout) and (what := watched[0]) is not None:
            log.info("compiling %s: still running after %.1f s", what(), timeout)
    _thread.start_new_thread(watch, ())
    try:
        yield
    finally:
        watched[0] = None
        done.set()
        seconds = time.perf_counter() - start
        if seconds > LONG_COMPILE_SECONDS:
            log.info("compiled %s in %.1f s", description(), seconds)


class _Worker:
    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[CompileJob] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._running: CompileJob | None = None
        self._exiting = False

    def submit(self, job: CompileJob) -> None:
        with self._lock:
            if self._exiting:
                job.drop()
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="tsjit-compile",
                                                daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            self._running = job      # (a held one too: a forked child restarts it)
            try:
                job.wait_for_release()
                if self._exiting:
                    job.drop()
                    continue
                job.run()
            except BaseException:   # the job logs its own failures; never kill the worker
                log.exception("background compile job failed")
            finally:
                self._running = None

    def unfinished(self) -> list[CompileJob]:
        """The job running (or waiting for its release) and those queued (in a forked
        child: its parent's, which no thread of the child will finish)."""
        jobs = [self._running] if self._running is not None else []
        while True:
            try:
                jobs.append(self._jobs.get_nowait())
            except queue.Empty:
                return jobs

    def exit(self) -> None:
        """At interpreter exit: start no job, finish the running one if a first call
        stopped waiting for it (EXIT_FINISH_SECONDS), and hold LLVM's lock (waiting for the
        call in progress) so that the worker cannot be inside LLVM while it is torn down."""
        with self._lock:
            self._exiting = True
            started = self._thread is not None
        if not started:
            return
        running = self._running
        if running is not None and running.finish_before_exit:
            running.wait(EXIT_FINISH_SECONDS)
        for job in self.unfinished():
            job.drop()
        with _importing:    # a load of the back end (llvmlite's with it) finishes first
            llvm_lock = forking.llvmlite_lock()
        if llvm_lock is not None:
            llvm_lock.acquire()    # never released: the process is ending


_worker = _Worker()


def _exit() -> None:
    _worker.exit()


def _restart_in_child() -> None:
    """After fork(): the worker thread did not come along, so a new worker takes over the
    parent's unfinished jobs (a job cut short there starts again: an executor installs
    only a finished compile)."""
    global _worker
    unfinished, _worker = _worker.unfinished(), _Worker()
    for job in unfinished:
        _worker.submit(job)


atexit.register(_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_restart_in_child)


# Held while the back end's modules are imported, and taken by fork() (forking.py): a
# child forked mid-import would inherit half-initialized modules it can never finish.
_importing = threading.RLock()
forking.hold_across_fork(_importing)
_loaded = False


def load_back_end() -> None:
    """Import the optimization pipeline and the kernel launchers, and load what linking a
    kernel from the disk cache needs (the runtime, this host's key), once: `import tsjit`
    does (neither llvmlite nor the code generators, which the first compile loads on the
    worker thread)."""
    global _loaded
    if _loaded:
        return
    with _importing:
        from ..codegen import launch, reduction_launch  # noqa: F401  (kernel launchers)
        from ..codegen.engine import on_llvm_compile, prepare
        from . import pipeline  # noqa: F401  (passes, native regions)
        prepare()
        on_llvm_compile(_llvm_compile_started)
        _loaded = True


def submit(work: Callable[[], None], held: bool = False) -> CompileJob:
    """Queue `work` for the worker thread; the returned job tells when it has run (a held
    job starts when released, see CompileJob)."""
    job = CompileJob(work, held)
    _worker.submit(job)
    return job
