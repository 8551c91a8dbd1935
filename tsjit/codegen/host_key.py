"""What, besides a kernel's own key, determines its object code: the disk cache's key
material for this process, known without loading LLVM where possible.

Object code depends on tsjit's generators (their sources' fingerprint), on the NumPy
behaviours kernels copy (its NaNs, its flags at denormals), on the LLVM build that
compiles, and on the CPU LLVM compiles for (it picks the CPU name and features from the
host). A process whose kernels all come from the cache must not load LLVM just to learn
the last two (it then runs without llvmlite, see ``object_loader``), so:

- the LLVM build is identified by llvmlite's version file and the path, size and
  modification time of its shared library (``libllvmlite``, where LLVM is linked in),
  found without importing llvmlite: an upgrade or a reinstall changes them;
- the CPU by the CPUID words LLVM reads to make its choice (runtime/cpu_identity.c), so
  that two hosts on which LLVM could choose differently never share a key.

Where either cannot be had (no runtime, no CPUID, no library file), LLVM's own answers
are used instead, and a cache hit loads LLVM as the first compile would.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import sys
from pathlib import Path

import _cffi_backend as backend

from tsjit import runtime

from . import numpy_flags, numpy_nans

__all__ = ["host_key", "known_without_llvm", "numpy_build"]

# Bump when the pipeline, code-generation options or this key's layout change.
CACHE_FORMAT = "3"
_CPU_WORDS = 64
_LLVMLITE_LIBRARY = {"darwin": "libllvmlite.dylib", "win32": "llvmlite.dll"}.get(
    sys.platform, "libllvmlite.so")
_UINT32_P = backend.new_pointer_type(backend.new_primitive_type("uint32_t"))
_CPU_IDENTITY = backend.new_function_type(
    (_UINT32_P, backend.new_primitive_type("int64_t")), backend.new_primitive_type("int64_t"),
    0)


@functools.cache
def _cpu_identity() -> str | None:
    """The CPUID words as hex, or None without the runtime or CPUID."""
    try:
        identify = runtime.load_function(_CPU_IDENTITY, "tsjit_cpu_identity")
    except (runtime.RuntimeLibraryNotFound, AttributeError):
        return None
    words = backend.newp(backend.new_array_type(_UINT32_P, _CPU_WORDS), None)
    count = identify(words, _CPU_WORDS)
    return " ".join(f"{words[i]:x}" for i in range(count)) or None


@functools.cache
def _llvm_build() -> str | None:
    """llvmlite's version file and its library's identity, or None if not found."""
    spec = importlib.util.find_spec("llvmlite")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    library = package / "binding" / _LLVMLITE_LIBRARY
    try:
        version = hashlib.sha256((package / "_version.py").read_bytes()).hexdigest()[:16]
        info = library.stat()
    except OSError:
        return None
    return f"{version} {library.resolve()} {info.st_size} {info.st_mtime_ns}"


@functools.cache
def numpy_build() -> str:
    """NumPy's version, its core library's identity (path, size, modification time) and
    the CPU features it dispatches to in this process (after NPY_DISABLE_CPU_FEATURES and
    the like): what decides which of its loops run here, and so the answers of probes of
    their behaviour (``JitEngine.remembered``)."""
    import numpy as np
    from numpy._core import _multiarray_umath as core
    library = Path(core.__file__)
    info = library.stat()
    enabled = " ".join(sorted(name for name, on in core.__cpu_features__.items() if on))
    return (f"{np.__version__} {library.resolve()} {info.st_size} {info.st_mtime_ns} "
            f"features={enabled}")


def known_without_llvm() -> bool:
    """Whether this host's key needs no LLVM (the runtime gives the CPUID words and
    llvmlite's library is found)."""
    return _llvm_build() is not None and _cpu_identity() is not None


def host_key(generator: str) -> str:
    """The key material every entry of this process starts with (``generator``: the
    code generators' fingerprint)."""
    build, cpu = _llvm_build(), _cpu_identity()
    if build is None or cpu is None:
        from .llvm_jit import host_description
        described = host_description()
        build = build or f"llvm={described['llvm']} llvmlite={described['llvmlite']}"
        cpu = cpu or f"{described['cpu']} {described['features']}"
    return "\n".join((
        f"format={CACHE_FORMAT}",
        f"generator={generator}",
        f"llvm_build={build}",
        f"cpu={cpu}",
        f"numpy_nans={numpy_nans.fingerprint()}",  # NumPy's NaNs, which kernels copy
        f"numpy_flags={numpy_flags.fingerprint()}",  # and its flags at denormals
    ))
