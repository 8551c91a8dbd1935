"""LLVM itself: host target machines, the O3 pipeline, object emission, ORC LLJIT.

The engine (``engine``) imports this module when it must compile, or link an object the
runtime's loader refused: a process whose kernels all come from the disk cache never
loads llvmlite (its import and LLVM's initialization were most of such a process's time
to its first optimized result). See shared/design/LLVM_NOTES.md for the measurements
behind the choices here.
"""

from __future__ import annotations

import itertools

import llvmlite
import llvmlite.binding as llvm

from tsjit import forking
from tsjit.codegen import vmath_table

__all__ = ["emit_assembly", "host_description", "link", "optimize_and_emit"]


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
        self.pass_builders = {level: self._pass_builder(level) for level in (2, 3)}
        # Quick mode (bookkeeping code, not hot loops): scalar cleanups and FastISel.
        self.quick_tm = self.new_target_machine(opt=0)
        self._lljit = None
        # Every linked module gets its own JITDylib, named uniquely within the LLJIT.
        self.library_names = (f"tsjit_module_{i}" for i in itertools.count())

    @property
    def lljit(self) -> llvm.LLJIT:
        """The JIT, for objects the runtime's loader does not link (created on first use;
        with its own target machine: never share one the JIT may own)."""
        if self._lljit is None:
            self._lljit = llvm.create_lljit_compiler(self.new_target_machine())
        return self._lljit

    def _pass_builder(self, speed_level: int) -> llvm.PassBuilder:
        options = llvm.create_pipeline_tuning_options(speed_level=speed_level)
        options.loop_vectorization = True
        options.slp_vectorization = False  # costs compile time, gains nothing
        return llvm.create_pass_builder(self.tm, options)

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


def host_description() -> dict[str, str]:
    """The LLVM build and the CPU it compiles for, as LLVM sees them."""
    state = _Llvm.get()
    return {"llvm": ".".join(map(str, llvm.llvm_version_info)),
            "llvmlite": llvmlite.__version__, "cpu": state.cpu, "features": state.features}


def optimize_and_emit(text: str, pipeline: str) -> tuple[bytes, str]:
    """(object code, optimized IR) of the module ``text`` after ``pipeline``: "O3" or "O2"
    (LLVM's; O2 unrolls less: elementwise kernels compile 1.6-2.2x faster and run as
    fast, see ``launch``), or "quick": a few scalar cleanups and FastISel (~10x faster to
    compile, for code that is not a hot loop)."""
    state = _Llvm.get()
    mod = llvm.parse_assembly(text)
    mod.triple = state.triple
    mod.data_layout = state.data_layout
    mod.verify()
    if pipeline == "quick":
        passes = llvm.create_new_module_pass_manager()
        passes.add_sroa_pass()
        passes.add_instruction_combine_pass()
        passes.add_simplify_cfg_pass()
        passes.run(mod, state.pass_builders[3])
        return state.quick_tm.emit_object(mod), str(mod)
    builder = state.pass_builders[{"O2": 2, "O3": 3}[pipeline]]
    builder.getModulePassManager().run(mod, builder)
    if vmath_table.MARKER in text:  # (the vectorizer's calls of vmath's table lookups)
        vmath_table.inline_variants(mod, builder)
    return state.tm.emit_object(mod), str(mod)


def link(obj: bytes, imports: dict[str, int], wanted: tuple[str, ...]
         ) -> tuple[dict[str, int], object]:
    """Link ``obj`` in the JIT, its undefined symbols ``imports`` (name -> address) or the
    process's: the addresses of ``wanted`` and the resource tracker that keeps the code
    loaded. LLJIT resolves every undefined symbol here and raises if one is missing, so a
    kernel can never call through an unresolved address."""
    state = _Llvm.get()
    builder = llvm.JITLibraryBuilder().add_object_img(obj)
    for name, address in imports.items():
        builder.import_symbol(name, address)
    for name in wanted:
        builder.export_symbol(name)
    tracker = builder.link(state.lljit, next(state.library_names))
    return {name: tracker[name] for name in wanted}, tracker


def emit_assembly(optimized_ir: str) -> str:
    state = _Llvm.get()
    return state.tm.emit_assembly(llvm.parse_assembly(optimized_ir))
