"""tsjit: TorchScript's design for NumPy — a typed SSA IR, a reference interpreter,
and native code from LLVM for the hot paths.

    @tsjit.script
    def gelu(x: tsjit.Tensor) -> tsjit.Tensor:
        return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
"""
import importlib as _importlib
import os as _os

import numpy as _np

from . import config as _config
from . import environment as _environment

# The first script needs the front end's emitter: imported here, not on first use, because
# where Python writes no bytecode caches (PYTHONDONTWRITEBYTECODE) it compiles from source
# on import.
from .api.module import Module, ModuleDict, ModuleList
from .api.script import script
from .api.script_function import ScriptFunction, ScriptModule
from .api.trace import trace
from .config import (
    set_background_compilation,
    set_fusion_enabled,
    set_native_enabled,
    set_num_threads,
    set_profiling_runs,
)
from .decorators import Final, annotate, export, ignore, is_scripting, isinstance, unused
from .frontend import emitter as _emitter  # noqa: F401
from .frontend.errors import CompilationError

Tensor = _np.ndarray

# Loading archives (their format, zipfile and json, the class records, the graph parser)
# is imported with the first use of `tsjit.load` or `tsjit.SerializationError` (PEP 562),
# not by every program that only scripts functions: it was a tenth of `import tsjit`.
_ON_FIRST_USE = {"load": ".api.serialization", "SerializationError": ".api.archive"}


def __getattr__(name: str):
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'tsjit' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_FIRST_USE})


# The native back end's Python side (the optimization pipeline, the kernel launchers, the
# disk cache and the runtime's object loader) is imported here, without llvmlite: a process
# whose kernels all come from the disk cache then never loads llvmlite, and its first
# optimized result does not wait for these imports (~10-15 ms). llvmlite and the code
# generators load with the first compile, on the compile worker (executor/background.py).
if not _environment.flag(_environment.DISABLE_ENV, False) and _config.native_enabled():
    from .executor import background as _background

    _background.load_back_end()

# TSJIT_LOG is read once every module tsjit imports has made its loggers (channels).
_config.configure_logging(_os.environ.get(_config.LOG_ENV))

__all__ = [
    "CompilationError", "Final", "Module", "ModuleDict", "ModuleList", "ScriptFunction",
    "ScriptModule", "SerializationError", "Tensor", "annotate", "export", "ignore",
    "is_scripting", "isinstance", "load", "script", "set_background_compilation",
    "set_fusion_enabled",
    "set_native_enabled", "set_num_threads", "set_profiling_runs", "trace", "unused",
]
