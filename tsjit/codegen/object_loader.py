"""Linking object code without LLVM, through the runtime's loader (runtime/object_loader.c).

Why not LLVM's JIT: a process whose kernels all come from the disk cache would import
llvmlite and initialize LLVM (~60-100 ms, most of its time to the first optimized result)
only to link a few kilobytes of verified object code. Why not a shared library linked by
the system's ``cc -shared`` when the entry is written, and dlopen: that needs a linker
where tsjit runs (and a fallback without one), a subprocess per compile, and a file that
is dlopen'd by path after its check (the check and the load see the file at two different
moments); and dlopen resolves undefined symbols from the global scope only, where neither
the runtime (loaded RTLD_LOCAL) nor a driver the JIT linked is found. The loader takes the
bytes the cache verified, in memory, and resolves the kernels' externals from the same
table the JIT gets (the runtime's functions, the driver), then from the process (libm,
CPython), as the JIT does. Objects it does not handle it refuses, saying why
(``LoaderRefused``): the engine then links them with the JIT.
"""

from __future__ import annotations

import os
import sys

import _cffi_backend as backend

from tsjit import runtime

__all__ = ["LoadedObject", "LoaderRefused", "load", "supported"]

_ERROR_BYTES = 256
_VOID_P = backend.new_pointer_type(backend.new_void_type())
_CHAR_P = backend.new_pointer_type(backend.new_primitive_type("char"))
_UINT64 = backend.new_primitive_type("uint64_t")
_SIZE = backend.new_primitive_type("size_t")
_INT64 = backend.new_primitive_type("int64_t")
_UINT64_ARRAY = backend.new_array_type(backend.new_pointer_type(_UINT64), None)
_CHAR_ARRAY = backend.new_array_type(_CHAR_P, None)
_LOAD = backend.new_function_type(
    (_CHAR_P, _SIZE, _CHAR_P, backend.new_pointer_type(_UINT64), _INT64, _CHAR_P, _SIZE),
    _VOID_P, 0)
_ADDRESS = backend.new_function_type((_VOID_P, _CHAR_P), _UINT64, 0)
_UNLOAD = backend.new_function_type((_VOID_P,), backend.new_void_type(), 0)


class LoaderRefused(Exception):  # noqa: N818  (not an error: the JIT links the object)
    """The loader does not handle this object (or there is no runtime); the reason."""


class LoadedObject:
    """An object mapped by the loader. Its code stays mapped while this lives: the
    ``CompiledModule`` holding it is held by whatever calls into the code."""

    def __init__(self, handle, unload) -> None:
        self._handle, self._unload = handle, unload
        self._address = runtime.load_function(_ADDRESS, "tsjit_object_address")
        # unload is called at the latest when the interpreter shuts down, which may close
        # the runtime's library first (a segfault) unless this holds it
        self._library = runtime.library()

    def address(self, name: str) -> int:
        """The address of the global symbol ``name``, which the object must define."""
        address = int(self._address(self._handle, name.encode()))
        if address == 0:
            raise LoaderRefused(f"the object does not define {name}")
        return address

    def __del__(self) -> None:
        self._unload(self._handle)


def supported() -> bool:
    """Whether objects are linked by the loader here: ELF x86-64 (Linux) with the runtime."""
    try:
        runtime.load_function(_UNLOAD, "tsjit_object_unload")
    except (runtime.RuntimeLibraryNotFound, AttributeError):
        return False
    return sys.platform.startswith("linux") and os.uname().machine == "x86_64"


def load(obj: bytes, imports: dict[str, int]) -> LoadedObject:
    """Map and relocate ``obj``, its undefined symbols taken from ``imports`` (name ->
    address) first, then from the process; raises LoaderRefused."""
    try:
        load_object = runtime.load_function(_LOAD, "tsjit_object_load")
        unload = runtime.load_function(_UNLOAD, "tsjit_object_unload")
    except (runtime.RuntimeLibraryNotFound, AttributeError) as e:  # (an older runtime)
        raise LoaderRefused(f"no runtime loader ({e})") from None
    names = b"".join(name.encode() + b"\0" for name in imports)
    addresses = backend.newp(_UINT64_ARRAY, list(imports.values()) or [0])
    error = backend.newp(_CHAR_ARRAY, _ERROR_BYTES)
    handle = load_object(obj, len(obj), names, addresses, len(imports), error, _ERROR_BYTES)
    if handle == backend.cast(_VOID_P, 0):
        raise LoaderRefused(backend.string(error).decode(errors="replace"))
    return LoadedObject(handle, unload)
