"""The process-wide LLVM JIT: host target machines, the O3 pipeline, one ORC LLJIT, caches.

Why these choices (see shared/design/LLVM_NOTES.md for the measurements):
- ORC LLJIT rather than MCJIT: it raises on an unresolved external symbol where MCJIT
  silently jumps to address 0, it needs no TargetMachine of its own after creation, and it
  links a relocatable object in ~0.2 ms (MCJIT ~0.6 ms).
- We run the optimizer and ``emit_object`` ourselves, then hand the object to the JIT: the
  same bytes go to the on-disk cache, so a fresh process skips parse, O3 and codegen
  (~10-30 ms) and reloads a kernel in well under a millisecond. Entries are verified
  before they are linked (``disk_cache``): the key material includes everything that
  shapes the object code.
- LLVM is initialized lazily, on the first compile.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import llvmlite
import llvmlite.binding as llvm

from tsjit import environment, forking

from . import numpy_flags, numpy_nans
from .disk_cache import DiskCache

if TYPE_CHECKING:
    from llvmlite import ir

__all__ = [
    "CompiledModule",
    "JitEngine",
    "generator_fingerprint",
    "get_engine",
]

# Bump when the pipeline or code-generation options change, so stale objects are not loaded.
_CACHE_FORMAT = "2"
CACHE_DIR_ENV = "TSJIT_CACHE_DIR"
DISK_CACHE_ENV = "TSJIT_DISK_CACHE"
# Modules kept loaded after their last user is gone, most recently used first: a program
# that scripts the same function again and again does not relink (or, without the disk
# cache, recompile) its code each time, and the memory this holds stays bounded.
_RECENT_MODULES = 32


@dataclass
class CompiledModule:
    """Function addresses of one linked module. The code stays mapped while this object
    lives (it owns the JIT resource tracker): whatever calls the addresses holds it, and
    when the last holder goes the code is unloaded."""

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


class _Llvm:
    """The initialized LLVM state shared by every engine: created once, on first use."""

    _instance: _Llvm | None = None
    _lock = forking.lock()

    def __init__(self) -> None:
        # A vectorized remainder loop after the main vector loop saves nothing measurable
        # here (remainders are < 32 elements) and costs ~20% of a kernel's compile time.
        llvm.set_option("", "-enable-epilogue-vectorization=false")
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.target = llvm.Target.from_default_triple()
        self.tm = self.new_target_machine()
        self.triple = self.tm.triple
        self.data_layout = str(self.tm.target_data)
        self.pipeline_options = llvm.create_pipeline_tuning_options(speed_level=3)
        self.pipeline_options.loop_vectorization = True
        self.pipeline_options.slp_vectorization = False  # costs compile time, gains nothing
        self.pass_builder = llvm.create_pass_builder(self.tm, self.pipeline_options)
        # The JIT gets its own target machine: never share one the JIT may own.
        self.lljit = llvm.create_lljit_compiler(self.new_target_machine())
        # What, besides the kernel itself, determines the object code: part of every
        # disk-cache entry's key material.
        self.host_id = "\n".join((
            f"format={_CACHE_FORMAT}",
            f"generator={generator_fingerprint()}",
            f"llvm={'.'.join(map(str, llvm.llvm_version_info))}",
            f"llvmlite={llvmlite.__version__}",
            f"cpu={self.cpu}",
            f"features={self.features}",
            f"numpy_nans={numpy_nans.fingerprint()}",  # NumPy's NaNs, which kernels copy
            f"numpy_flags={numpy_flags.fingerprint()}",  # and its flags at denormals
        ))
        # Every linked module gets its own JITDylib, named uniquely within the LLJIT.
        self.library_names = (f"tsjit_module_{i}" for i in itertools.count())
        # Quick mode (bookkeeping code, not hot loops): scalar cleanups and FastISel.
        self.quick_tm = self.new_target_machine(opt=0)

    def new_target_machine(self, opt: int = 3) -> llvm.TargetMachine:
        return self.target.create_target_machine(
            cpu=self.cpu, features=self.features, opt=opt, reloc="pic", codemodel="default"
        )

    @classmethod
    def get(cls) -> _Llvm:
        if cls._instance is None:
            with cls._lock:
                if cls._instance is None:
                    cls._instance = _Llvm()
        return cls._instance


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
        self, module: str | ir.Module, symbols: Iterable[str], quick: bool = False
    ) -> CompiledModule:
        """Optimize and link ``module`` (IR text or an llvmlite.ir Module) and return the
        addresses of ``symbols``. Identical IR text compiles once per process; with the disk
        cache, once per machine. ``quick``: a few scalar cleanups and FastISel instead of O3
        (~10x faster to compile), for code that is not a hot loop."""
        text = module if isinstance(module, str) else str(module)
        key = "ir:" + hashlib.sha256(text.encode()).hexdigest()
        return self.compile_keyed(key, lambda: text, symbols, quick)

    def compile_keyed(
        self,
        key: str,
        build: Callable[[], str | ir.Module],
        symbols: Iterable[str],
        quick: bool = False,
    ) -> CompiledModule:
        """``compile`` for generated code, cached under ``key`` instead of the IR text: a
        hit skips generating the IR (a few ms of Python per kernel). ``key`` must determine
        the IR completely; include ``generator_fingerprint()`` in it."""
        wanted = tuple(symbols)
        memory_key = f"{quick}|{key}"
        with self._lock:
            compiled = self._modules.get(memory_key)
            if compiled is None or not all(s in compiled.addresses for s in wanted):
                compiled = self._build(memory_key, build, wanted, quick)
                self._modules[memory_key] = compiled
            if not self._recent or self._recent[-1] is not compiled:
                self._recent.append(compiled)
        return compiled

    def _build(self, key: str, build, wanted: tuple[str, ...], quick: bool) -> CompiledModule:
        state = _Llvm.get()
        key_material = f"{state.host_id}\nkernel={key}"
        cached = self._disk.load(key_material) if self._disk is not None else None
        if cached is not None:
            obj, optimized_ir = cached
        else:
            module = build()
            text = module if isinstance(module, str) else str(module)
            obj, optimized_ir = self._optimize_and_emit(state, text, quick)
            if self._disk is not None:
                self._disk.store(key_material, obj, optimized_ir)
        builder = llvm.JITLibraryBuilder().add_object_img(obj)
        for name in self._externals(optimized_ir):
            builder.import_symbol(name, self.symbols[name])
        for name in wanted:
            builder.export_symbol(name)
        # LLJIT resolves every undefined symbol here and raises if one is missing, so a
        # kernel can never call through an unresolved address.
        tracker = builder.link(state.lljit, next(state.library_names))
        addresses = {name: tracker[name] for name in wanted}
        return CompiledModule(addresses, optimized_ir, cached is not None, tracker)

    def _externals(self, optimized_ir: str) -> list[str]:
        """Known external functions the module declares."""
        return [name for name in self.symbols if f"@{name}(" in optimized_ir]

    @staticmethod
    def _optimize_and_emit(state: _Llvm, text: str, quick: bool) -> tuple[bytes, str]:
        mod = llvm.parse_assembly(text)
        mod.triple = state.triple
        mod.data_layout = state.data_layout
        mod.verify()
        if quick:
            passes = llvm.create_new_module_pass_manager()
            passes.add_sroa_pass()
            passes.add_instruction_combine_pass()
            passes.add_simplify_cfg_pass()
            passes.run(mod, state.pass_builder)
            return state.quick_tm.emit_object(mod), str(mod)
        state.pass_builder.getModulePassManager().run(mod, state.pass_builder)
        return state.tm.emit_object(mod), str(mod)

    def emit_assembly(self, optimized_ir: str) -> str:
        state = _Llvm.get()
        with self._lock:
            mod = llvm.parse_assembly(optimized_ir)
            return state.tm.emit_assembly(mod)


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


def get_engine() -> JitEngine:
    """The process-wide engine (created on first use)."""
    global _engine
    if _engine is None:
        _engine = JitEngine()
    return _engine
