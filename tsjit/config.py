"""Process-wide switches of the optimizing executor, and the logging of its decisions.

Every switch has an environment variable read once at import (so a program can be run
with the fuser off without editing it) and a setter for use in code:

    TSJIT_PROFILING_RUNS=n   set_profiling_runs(n)    calls profiled before specializing (1)
    TSJIT_FUSION=0           set_fusion_enabled(b)    fuse elementwise ops into kernels (1)
    TSJIT_NATIVE=0           set_native_enabled(b)    any LLVM code at all (1)
    TSJIT_NUM_THREADS=n      set_num_threads(n)       threads of native kernels (tsjit.runtime;
                                                      else OMP_NUM_THREADS, else usable CPUs)
    TSJIT_BACKGROUND_COMPILE=0  set_background_compilation(b)
                             compile on a worker thread while calls run interpreted (1)
    TSJIT_LOG=fuser,guards   logging of compile decisions ("all" for every tsjit logger)

A setter does not touch compiled code behind the caller's back mid-call: it tells every
executor (they subscribe with `on_change`) to drop its specializations, so the next call
of each scripted function profiles again under the new settings.
"""
from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable

from . import (
    environment,
    runtime,  # reads the thread count's environment variables once, at import
)

PROFILING_RUNS_ENV = "TSJIT_PROFILING_RUNS"
FUSION_ENV = "TSJIT_FUSION"
NATIVE_ENV = "TSJIT_NATIVE"
BACKGROUND_ENV = "TSJIT_BACKGROUND_COMPILE"
LOG_ENV = "TSJIT_LOG"


def _positive_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return number


_settings = {
    "profiling_runs": _positive_int(PROFILING_RUNS_ENV, 1),
    "fusion": environment.flag(FUSION_ENV, True),
    "native": environment.flag(NATIVE_ENV, True),
    "background": environment.flag(BACKGROUND_ENV, True),
}
_listeners: list[Callable[[], None]] = []


def on_change(listener: Callable[[], None]) -> None:
    """Call `listener()` after every change of a setting (executors reset themselves)."""
    _listeners.append(listener)


def _set(key: str, value: object) -> None:
    if _settings[key] != value:
        _settings[key] = value
        for listener in list(_listeners):
            listener()


def set_profiling_runs(n: int) -> None:
    """Profile `n` calls (each in the interpreter) before specializing a graph."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_profiling_runs() expects an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"set_profiling_runs() expects n >= 1, got {n!r}")
    _set("profiling_runs", n)


def profiling_runs() -> int:
    return _settings["profiling_runs"]


def set_fusion_enabled(enabled: bool) -> None:
    """Turn the elementwise fuser on or off (off: those ops stay in the interpreter)."""
    _set("fusion", bool(enabled))


def fusion_enabled() -> bool:
    return _settings["fusion"] and _settings["native"]


def set_native_enabled(enabled: bool) -> None:
    """Turn every kind of native code off (off: the reference interpreter runs everything)."""
    _set("native", bool(enabled))


def native_enabled() -> bool:
    return _settings["native"]


def set_background_compilation(enabled: bool) -> None:
    """Compile specializations on a background thread while calls run in the interpreter
    (True, the default), or in the call that decides them (False: deterministic, for
    tests and benchmarks of the compiled code)."""
    _set("background", bool(enabled))


def background_compilation() -> bool:
    return _settings["background"]


def set_num_threads(n: int) -> None:
    """Threads native kernels use, the calling thread included."""
    runtime.set_num_threads(n)


# The channels TSJIT_LOG names: loggers tsjit.<channel>.  Those of modules imported later
# than tsjit itself are listed here; the others are found among the loggers that exist.
LOG_CHANNELS = ("compile", "executor", "fuser", "guards", "native", "passes")


class _StderrUnlessConfigured(logging.StreamHandler):
    """stderr, unless the application configured logging (a handler on the root logger,
    as logging.basicConfig adds): then the records reach its handlers, and only those
    print them (they printed twice, once here and once there)."""

    def emit(self, record: logging.LogRecord) -> None:
        if not logging.getLogger().handlers:
            super().emit(record)


_handler = _StderrUnlessConfigured(sys.stderr)
_handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))


def log_channels() -> list[str]:
    """The channels TSJIT_LOG accepts (besides "all")."""
    found = {name.split(".")[1] for name in logging.root.manager.loggerDict
             if name.startswith("tsjit.")}
    return sorted(found | set(LOG_CHANNELS))


def configure_logging(spec: str | None) -> None:
    """Send the named tsjit loggers' DEBUG records to stderr: `spec` is a comma-separated
    list such as "fuser,guards" (channels: logger names under `tsjit.`), or "all".  An
    unknown channel is reported with one RuntimeWarning listing the known ones."""
    if not spec:
        return
    known, unknown = log_channels(), []
    for name in (part.strip() for part in spec.split(",")):
        if not name:
            continue
        if name != "all" and name not in known:
            unknown.append(name)
            continue
        logger = logging.getLogger("tsjit" if name == "all" else f"tsjit.{name}")
        logger.setLevel(logging.DEBUG)
        if _handler not in logger.handlers:
            logger.addHandler(_handler)
    if unknown:
        warnings.warn(f"{LOG_ENV}={spec!r}: unknown channel{'s' * (len(unknown) > 1)} "
                      f"{', '.join(map(repr, unknown))}; the channels are all, "
                      f"{', '.join(known)}", RuntimeWarning, stacklevel=2)



