"""The process-wide engine: compiles LLVM IR to native code once, caches it in memory and
on disk, and links it.

Why these choices (see shared/design/LLVM_NOTES.md for the measurements):
- We run the optimizer and ``emit_object`` ourselves (``llvm_jit``), then link the object:
  the same bytes go to the on-disk cache, so a fresh process skips parse, O3 and codegen
  (~10-30 ms per kernel). Entries are verified before they are linked (``disk_cache``):
  the key material includes everything that shapes the object code (``host_key``).
- Objects are linked by the runtime's loader (``object_loader``), not by LLVM: a process
  whose kernels all come from the disk cache then never loads llvmlite, whose import and
  initialization cost more than all the rest of its first optimized call. An object the
  loader refuses (another platform, no runtime) is linked by ORC LLJIT, which, like the
  loader, raises on an unresolved external symbol where MCJIT would jump to address 0.
- LLVM is loaded and initialized lazily, by the first compile (or JIT link).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tsjit import environment, forking

from . import object_loader
from .disk_cache import DiskCache
from .host_key import host_key, known_without_llvm, numpy_build

if TYPE_CHECKING:
    from llvmlite import ir

__all__ = [
    "CompiledModule",
    "JitEngine",
    "generator_fingerprint",
    "get_engine",
    "on_llvm_compile",
    "remembered",
]

CACHE_DIR_ENV = "TSJIT_CACHE_DIR"
DISK_CACHE_ENV = "TSJIT_DISK_CACHE"
# Modules kept loaded after their last user is gone, most recently used first: a program
# that scripts the same function again and again does not relink (or, without the disk
# cache, recompile) its code each time, and the memory this holds stays bounded.
_RECENT_MODULES = 32

log = logging.getLogger("tsjit.compile")

# Told, on the compiling thread, that a module missed both caches and LLVM compiles it,
# before its IR is generated: a first call that waits for its compile while the code only
# loads (a few ms) stops waiting once LLVM is needed (hundreds of ms), see
# executor/background.py.
_llvm_compile_listeners: list[Callable[[], None]] = []


def on_llvm_compile(listener: Callable[[], None]) -> None:
    """Call ``listener()`` whenever a module is about to be compiled by LLVM (not loaded
    from the memory or disk cache), on the thread that asked for it."""
    _llvm_compile_listeners.append(listener)


def _announce_llvm_compile() -> None:
    for listener in _llvm_compile_listeners:
        listener()


@dataclass
class CompiledModule:
    """Function addresses of one linked module. The code stays mapped while this object
    lives (it owns the loaded object or the JIT resource tracker): whatever calls the
    addresses holds it, and when the last holder goes the code is unloaded."""

    addresses: dict[str, int]
    optimized_ir: str
    from_disk_cache: bool
    _tracker: object = field(repr=False)
    _asm: str | None = field(default=None, repr=False)

    @property
    def asm(self) -> str:
        """Assembly of the optimized IR, produced on first request: most kernels are never
        inspected, and codegen twice per compile would double the latency."""
        if self._asm is None:
            self._asm = get_engine().emit_assembly(self.optimized_ir)
        return self._asm


def _default_cache_dir() -> Path | None:
    """TSJIT_CACHE_DIR, else $XDG_CACHE_HOME/tsjit or ~/.cache/tsjit; None (no disk cache)
    with TSJIT_DISK_CACHE=0 or when there is no home directory."""
    if not environment.flag(DISK_CACHE_ENV, True):
        return None
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "tsjit"
    try:
        return Path.home() / ".cache" / "tsjit"
    except RuntimeError:
        return None


def _runtime_symbols() -> dict[str, int]:
    """Addresses of the C runtime's functions; empty when the runtime is not built (kernels
    then run on the calling thread, see ``elementwise_driver``)."""
    try:
        from tsjit import runtime
    except ImportError:
        return {}
    try:
        return runtime.symbol_addresses()
    except runtime.RuntimeLibraryNotFound:
        return {}


class JitEngine:
    """Compiles LLVM IR to native code once per distinct IR text, in memory and on disk.

    The in-memory cache is weak: a module is shared while something holds it (kernels of
    equal specs in several functions) and unloaded when its last holder is dropped (and
    it is not among the ``_RECENT_MODULES`` used last), so a process that scripts and
    drops functions does not grow."""

    def __init__(self, cache_dir: Path | None = None, use_disk_cache: bool = True) -> None:
        directory = (cache_dir or _default_cache_dir()) if use_disk_cache else None
        self._disk = DiskCache(directory) if directory is not None else None
        self._modules: weakref.WeakValueDictionary[str, CompiledModule] = \
            weakref.WeakValueDictionary()
        self._recent: deque[CompiledModule] = deque(maxlen=_RECENT_MODULES)
        self._symbol_owners: dict[str, CompiledModule] = {}
        self._lock = threading.RLock()
        forking.hold_across_fork(self._lock)
        self._symbols: dict[str, int] | None = None
        self._host_key: str | None = None

    @property
    def symbols(self) -> dict[str, int]:
        """External functions that compiled modules may call: the C runtime's and those
        registered with ``register_symbol`` (libc/libm resolve from the process)."""
        if self._symbols is None:
            self._symbols = _runtime_symbols()
        return self._symbols

    def register_symbol(self, name: str, compiled: CompiledModule) -> None:
        """Make the function ``name`` of ``compiled`` callable from later modules (which
        keeps ``compiled`` loaded for the engine's lifetime)."""
        self.symbols[name] = compiled.addresses[name]
        self._symbol_owners[name] = compiled

    def compile(
        self, module: str | ir.Module, symbols: Iterable[str], pipeline: str = "O3"
    ) -> CompiledModule:
        """Optimize and link ``module`` (IR text or an llvmlite.ir Module) and return the
        addresses of ``symbols``. Identical IR text compiles once per process; with the disk
        cache, once per machine. ``pipeline``: "O3", "O2" or "quick" (a few scalar cleanups
        and FastISel, ~10x faster to compile, for code that is not a hot loop; see
        ``llvm_jit.optimize_and_emit``)."""
        text = module if isinstance(module, str) else str(module)
        key = "ir:" + hashlib.sha256(text.encode()).hexdigest()
        return self.compile_keyed(key, lambda: text, symbols, pipeline)

    def compile_keyed(
        self,
        key: str,
        build: Callable[[], str | ir.Module],
        symbols: Iterable[str],
        pipeline: str = "O3",
        before_link: Callable[[], None] | None = None,
    ) -> CompiledModule:
        """``compile`` for generated code, cached under ``key`` instead of the IR text: a
        hit skips generating the IR (a few ms of Python per kernel). ``key`` must determine
        the IR completely; include ``generator_fingerprint()`` in it. ``before_link`` runs
        before the module is linked (it finishes what the module calls: the driver)."""
        return self._compile_keyed(key, build, tuple(symbols), pipeline, None, before_link)

    def start_compile_keyed(
        self,
        key: str,
        build: Callable[[], str | ir.Module],
        symbols: Iterable[str],
        pipeline: str = "O3",
    ) -> Callable[[], CompiledModule]:
        """``compile_keyed`` in two steps, for a module that the next one links against
        (the elementwise driver): on a miss of both caches the IR is generated here and
        LLVM optimizes and emits it on a helper thread, which holds llvmlite's lock but not
        the GIL, while the caller generates the next module's IR. The returned function
        waits for it, then links and caches the module like ``compile_keyed``."""
        wanted = tuple(symbols)
        with self._lock:
            known = self._cached(f"{pipeline}|{key}", wanted) is not None or (
                self._disk is not None and self._disk.load(self._key_material(
                    f"{pipeline}|{key}")) is not None)
        if known:
            return lambda: self.compile_keyed(key, build, wanted, pipeline)
        _announce_llvm_compile()
        from .llvm_jit import optimize_and_emit
        module = build()
        text = module if isinstance(module, str) else str(module)
        emitted: list = []

        def emit() -> None:
            try:
                emitted.append(optimize_and_emit(text, pipeline))
            except BaseException as error:  # raised by the caller's finish
                emitted.append(error)
        helper = threading.Thread(target=emit, name="tsjit-compile-ahead", daemon=True)
        helper.start()

        def finish() -> CompiledModule:
            helper.join()
            if isinstance(emitted[0], BaseException):
                raise emitted[0]
            return self._compile_keyed(key, build, wanted, pipeline, lambda: emitted[0],
                                       None)
        return finish

    def _compile_keyed(self, key: str, build, wanted: tuple[str, ...], pipeline: str,
                       emitted: Callable[[], tuple[bytes, str]] | None,
                       before_link: Callable[[], None] | None) -> CompiledModule:
        memory_key = f"{pipeline}|{key}"
        with self._lock:
            compiled = self._cached(memory_key, wanted)
            if compiled is None:
                compiled = self._build(memory_key, build, wanted, pipeline, emitted,
                                       before_link)
                self._modules[memory_key] = compiled
            if not self._recent or self._recent[-1] is not compiled:
                self._recent.append(compiled)
        return compiled

    def _cached(self, memory_key: str, wanted: tuple[str, ...]) -> CompiledModule | None:
        compiled = self._modules.get(memory_key)
        if compiled is None or not all(s in compiled.addresses for s in wanted):
            return None
        return compiled

    @property
    def host_key(self) -> str:
        """What the key material of each of this engine's entries starts with."""
        if self._host_key is None:
            self._host_key = host_key(generator_fingerprint())
        return self._host_key

    def remembered(self, question: str, measure: Callable[[], str]) -> str:
        """``measure()``: the answer to ``question`` about how this host's NumPy behaves,
        measured once per machine. With the disk cache, the answer is an entry like a
        kernel's (verified, private, written atomically) keyed by this host's key, NumPy's
        build and ``question``: a probe that runs NumPy for tens of milliseconds (the
        max/min order of its SIMD loops) then costs a later process one file read."""
        if self._disk is None:
            return measure()
        key_material = f"{self.host_key}\nnumpy_build={numpy_build()}\nprobe={question}"
        cached = self._disk.load(key_material)
        if cached is not None:
            try:
                return cached[0].decode()
            except UnicodeDecodeError:
                pass            # (written by no tsjit: measured and rewritten below)
        answer = measure()
        self._disk.store(key_material, answer.encode(), "")
        return answer

    def _key_material(self, key: str) -> str:
        return f"{self.host_key}\nkernel={key}"

    def _build(self, key: str, build, wanted: tuple[str, ...], pipeline: str,
               emitted: Callable[[], tuple[bytes, str]] | None,
               before_link: Callable[[], None] | None) -> CompiledModule:
        """Load (from disk) or compile (``emitted()``: the object already emitted), link."""
        key_material = self._key_material(key) if self._disk is not None else ""
        cached = self._disk.load(key_material) if self._disk is not None else None
        if cached is not None:
            obj, optimized_ir = cached
        else:
            _announce_llvm_compile()
            if emitted is not None:
                obj, optimized_ir = emitted()
            else:
                from .llvm_jit import optimize_and_emit
                module = build()
                obj, optimized_ir = optimize_and_emit(
                    module if isinstance(module, str) else str(module), pipeline)
            if self._disk is not None:
                self._disk.store(key_material, obj, optimized_ir)
        if before_link is not None:
            before_link()
        try:
            loaded = object_loader.load(obj, self.symbols)
            addresses = {name: loaded.address(name) for name in wanted}
            tracker: object = loaded
        except object_loader.LoaderRefused as refused:
            log.debug("linking with LLVM's JIT: the object loader refused (%s)", refused)
            from .llvm_jit import link
            imports = {name: self.symbols[name] for name in self._externals(optimized_ir)}
            addresses, tracker = link(obj, imports, wanted)
        return CompiledModule(addresses, optimized_ir, cached is not None, tracker)

    def _externals(self, optimized_ir: str) -> list[str]:
        """Known external functions the module declares."""
        return [name for name in self.symbols if f"@{name}(" in optimized_ir]

    def emit_assembly(self, optimized_ir: str) -> str:
        from .llvm_jit import emit_assembly
        with self._lock:
            return emit_assembly(optimized_ir)


def _hash_sources() -> str:
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.name.encode() + source.read_bytes())
    return digest.hexdigest()[:16]


# Read with the generators themselves (`import tsjit` imports them all), not at the first
# compile: a process whose sources were edited in between would store objects of its old
# code under the new sources' key, for later processes to load (a crash when the kernels'
# job layout changed, seen here after swapping driver versions under running processes).
_FINGERPRINT = _hash_sources()


def generator_fingerprint() -> str:
    """Hash of the code generator's sources (this package): part of every generated-code
    cache key, so editing a generator never loads stale objects."""
    return _FINGERPRINT


_engine: JitEngine | None = None


def prepare() -> None:
    """Load what linking a kernel from the disk cache needs (the C runtime; this host's
    key, whose parts are computed once per process, unless it needs LLVM) ahead of the
    first compile. The engine itself, which reads TSJIT_DISK_CACHE and TSJIT_CACHE_DIR,
    is made on first use."""
    _runtime_symbols()
    if _default_cache_dir() is not None and known_without_llvm():
        host_key(generator_fingerprint())


def remembered(question: str, measure: Callable[[], str]) -> str:
    """The process-wide engine's ``JitEngine.remembered``."""
    return get_engine().remembered(question, measure)


def get_engine() -> JitEngine:
    """The process-wide engine (created on first use)."""
    global _engine
    if _engine is None:
        _engine = JitEngine()
    return _engine
