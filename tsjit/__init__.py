"""tsjit: TorchScript's design for NumPy — a typed SSA IR, a reference interpreter,
and native code from LLVM for the hot paths.

    @tsjit.script
    def gelu(x: tsjit.Tensor) -> tsjit.Tensor:
        return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
"""
import os as _os

import numpy as _np

from . import config as _config

# The first script needs the front end's emitter: imported here, not on first use, because
# where Python writes no bytecode caches (PYTHONDONTWRITEBYTECODE) it compiles from source
# on import.  The native back end (code generators, llvmlite, the C runtime) is left to
# the first compile, which runs on the compile worker thread (executor/background.py).
from .api.archive import SerializationError
from .api.module import Module, ModuleDict, ModuleList
from .api.script import script
from .api.script_function import ScriptFunction, ScriptModule
from .api.serialization import load
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

# TSJIT_LOG is read once every module tsjit imports has made its loggers (channels).
_config.configure_logging(_os.environ.get(_config.LOG_ENV))

__all__ = [
    "CompilationError", "Final", "Module", "ModuleDict", "ModuleList", "ScriptFunction",
    "ScriptModule", "SerializationError", "Tensor", "annotate", "export", "ignore",
    "is_scripting", "isinstance", "load", "script", "set_background_compilation",
    "set_fusion_enabled",
    "set_native_enabled", "set_num_threads", "set_profiling_runs", "trace", "unused",
]
