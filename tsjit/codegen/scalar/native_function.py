"""NativeFunction: what a prim::NativeCall node calls — a region compiled per argument kinds.

The executor's pipeline gives each NativeCall node its NativeFunction as `runtime`
(`lower_native_call`), and the interpreter runs the node as `runtime.call(*args)`.
`call` starts as the Python dispatcher and becomes, after the first successful
compilation, the compiled variant's builtin itself, so a call costs the builtin's guards
and nothing in Python.  When a guard fails the builtin calls back `miss`, which picks (or
compiles, within MAX_VARIANTS) the variant for the new argument kinds, or runs the region
in the interpreter: a variant the native lowering does not support, arguments native code
cannot take (a bignum, a list), or a full budget.  Native code that cannot go on (a result
of another type than the IR's, an int beyond 64 bits) calls back `rerun`, which runs the
region again from the same arguments in the interpreter (see bailout.py for when it
may).  Every way through gives the interpreter's results.

Counters: native calls are counted by the native code itself (`counters[0]`), guard
failures, interpreted runs (re-runs included, also counted apart) and compilations here;
guard failures and interpreted runs are also reported to the executor's stats
(`on_guard_failure`, `on_bailout`).  For the executor's inspection a NativeFunction looks
like a fused kernel: `label`, `launches` and `kernel.llvm_ir` / `kernel.asm` (every
compiled variant).
"""
from __future__ import annotations

import functools
import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from ... import forking
from ...interpreter import compile_graph
from ...ir.graph import Graph, Node, SourceRange
from ...ir.printer import print_graph
from ...ir.types import BoolType, FloatType, IntType, ListType, OptionalType, Type
from ..engine import CompiledModule, get_engine
from .cpython import make_builtin
from .emitter import CALL_COUNTER, MISS_HANDLER, FunctionEmitter
from .inference import infer_kinds
from .ntypes import (
    NONE,
    NType,
    OptionalScalar,
    PyScalar,
    Unsupported,
    kind_of_type,
    kind_of_value,
    list_kind,
)
from .sites import Sites

log = logging.getLogger("tsjit.native")

MAX_VARIANTS = 4
_MISSING = object()
_SCALAR_KINDS = {IntType: PyScalar("int"), FloatType: PyScalar("float"),
                 BoolType: PyScalar("bool")}


@dataclass(frozen=True)
class Variant:
    """One compilation of a region for one tuple of argument kinds."""

    kinds: tuple[NType, ...]
    builtin: Callable
    compiled: CompiledModule
    symbol: str
    objects: tuple[object, ...]      # what the builtin reads (see FunctionEmitter.build)


def argument_kind(value: object, static: Type) -> NType | None:
    """The kind a variant takes `value` as: its run-time kind, widened to Optional where the
    IR type is Optional (one variant serves both None and numbers); a list of numbers by
    its IR type's element kind (which an empty list does not tell)."""
    if type(value) is list and isinstance(static, ListType) and static.elem in _SCALAR_KINDS:
        return list_kind(value, _SCALAR_KINDS[static.elem])
    kind = kind_of_value(value)
    if isinstance(static, OptionalType) and static.elem in _SCALAR_KINDS:
        elem = _SCALAR_KINDS[static.elem]
        if kind == NONE or kind == elem:
            return OptionalScalar(elem)
    return kind


def _nothing() -> None:
    return None


class NativeFunction:
    """A region (a Graph with the NativeCall's inputs and outputs) and its compiled
    variants; see the module docstring."""

    def __init__(self, region: Graph, name: str, source: SourceRange | None = None,
                 on_guard_failure: Callable[[], None] = _nothing,
                 on_bailout: Callable[[], None] = _nothing):
        self.region = region
        self.name = name
        self.label = name if source is None else f"{name} (line {source.line})"
        self.source = source
        self.on_guard_failure = on_guard_failure
        self.on_bailout = on_bailout
        self.kernel = CompiledCode(self)
        self.static_types = tuple(v.type for v in region.inputs)
        self.variants: dict[tuple[NType, ...], Variant | None] = {}
        self.unsupported: dict[tuple[NType, ...], str] = {}
        self.counters = np.zeros(1, dtype=np.int64)
        self.direct_counters: list[np.ndarray] = []
        self.counts: Counter = Counter()
        self.call: Callable = self._dispatch
        self._interpreted: Callable | None = None
        self._sites = Sites(name)
        self._lock = forking.lock()

    # ------------------------------------------------------------------ calling
    def _dispatch(self, *args: object) -> object:
        key = self._key(args)
        variant = self.variants.get(key, _MISSING) if key is not None else None
        if variant is _MISSING:
            variant = self._specialize(key)
        if variant is None:
            return self.interpret(*args)
        return variant.builtin(*args)

    def _miss(self, missed: tuple[NType, ...], *args: object) -> object:
        """A guard of the variant for `missed` failed on these arguments."""
        self.counts["guard_failures"] += 1
        self.on_guard_failure()
        key = self._key(args)
        if key == missed:       # kinds and guards disagree: never loop, interpret instead
            return self.interpret(*args)
        return self._dispatch(*args)

    def rerun(self, *args: object) -> object:
        """A native run of these arguments gave up before any effect: run the region in the
        interpreter instead."""
        self.counts["reruns"] += 1
        return self.interpret(*args)

    def interpret(self, *args: object) -> object:
        """Run the region in the reference interpreter."""
        self.counts["interpreted_runs"] += 1
        self.on_bailout()
        if self._interpreted is None:
            self._interpreted = compile_graph(self.region, self.name).fn
        return self._interpreted(*args)

    def _key(self, args: Sequence[object]) -> tuple[NType, ...] | None:
        if len(args) != len(self.static_types):
            return None
        kinds = tuple(map(argument_kind, args, self.static_types))
        return None if None in kinds else kinds

    # ------------------------------------------------------------------ compiling
    def compile_expected(self) -> None:
        """Compile the variant for the kinds the region's input types say its arguments
        will have, now: lowering runs on the compile worker, and the call that reaches the
        region first would otherwise compile it on the caller's thread."""
        key = tuple(map(kind_of_type, self.static_types))
        if None not in key:
            self._specialize(key)

    def _specialize(self, key: tuple[NType, ...]) -> Variant | None:
        with self._lock:
            if key in self.variants:
                return self.variants[key]
            compiled = sum(v is not None for v in self.variants.values())
            variant = None
            if compiled >= MAX_VARIANTS:
                self.unsupported[key] = f"the budget of {MAX_VARIANTS} variants is used up"
            else:
                try:
                    variant = self._compile(key)
                except Unsupported as reason:
                    self.unsupported[key] = str(reason)
                except Exception as error:  # a bug here must cost speed, never a result
                    log.warning("%s: compiling for (%s) failed", self.name,
                                ", ".join(map(str, key)), exc_info=True)
                    self.unsupported[key] = f"compilation failed: {error!r}"
            if variant is None:
                log.info("%s runs in the interpreter for (%s): %s", self.name,
                         ", ".join(map(str, key)), self.unsupported[key])
            else:
                self.counts["specializations"] += 1
                if self.call == self._dispatch:
                    self.call = variant.builtin
            self.variants[key] = variant
            return variant

    def _compile(self, key: tuple[NType, ...]) -> Variant:
        kinds = infer_kinds(self.region, key)
        text = print_graph(self.region) + "|" + "|".join(map(str, key))
        symbol = "tsjit_native_" + hashlib.sha256(text.encode()).hexdigest()[:16]
        module = ir.Module(name=symbol)
        emitter = FunctionEmitter(self.region, kinds, symbol, self._sites, module)
        emitter.build(functools.partial(self._miss, key), self.rerun, self.counters)
        compiled = get_engine().compile(module, [symbol])
        builtin = make_builtin(symbol, compiled.addresses[symbol], emitter.objects, compiled)
        log.info("%s compiled for (%s)", self.name, ", ".join(map(str, key)))
        return Variant(key, builtin, compiled, symbol, tuple(emitter.objects))

    # ------------------------------------------------------------------ inspecting
    def compiled_variants(self) -> list[Variant]:
        return [v for v in self.variants.values() if v is not None]

    @property
    def launches(self) -> int:
        """Native calls (what the executor counts as kernel launches)."""
        return int(self.counters[0]) + sum(int(c[0]) for c in self.direct_counters)

    def direct_entry(self, fallback: Callable) -> tuple[Callable, np.ndarray] | None:
        """The first compiled variant's code as a builtin of its own, for a caller that
        runs this region as its whole function: a guard miss calls `fallback(*args)`
        instead of this region's dispatcher, and calls are counted in a counter of its
        own (returned with the builtin).  None when nothing is compiled."""
        variant = next(iter(self.compiled_variants()), None)
        if variant is None:
            return None
        counter = np.zeros(1, dtype=np.int64)
        objects = list(variant.objects)
        objects[MISS_HANDLER], objects[CALL_COUNTER] = fallback, counter
        self.direct_counters.append(counter)
        builtin = make_builtin(variant.symbol, variant.compiled.addresses[variant.symbol],
                               objects, variant.compiled)
        return builtin, counter

    def stats(self) -> dict[str, int]:
        return {"native_calls": self.launches,
                "guard_failures": self.counts["guard_failures"],
                "interpreted_runs": self.counts["interpreted_runs"],
                "reruns": self.counts["reruns"],
                "specializations": self.counts["specializations"]}

    def __repr__(self) -> str:
        where = f" at {self.source}" if self.source is not None else ""
        return f"<tsjit native region {self.name}{where}>"


class CompiledCode:
    """The LLVM IR and assembly of every compiled variant of a NativeFunction, each headed
    by the argument kinds it was compiled for."""

    def __init__(self, function: NativeFunction):
        self.function = function

    def _text(self, comment: str, text: Callable[[Variant], str]) -> str:
        return "".join(f"{comment} {self.function.label}: ({', '.join(map(str, v.kinds))})\n"
                       f"{text(v)}\n" for v in self.function.compiled_variants())

    @property
    def llvm_ir(self) -> str:
        return self._text(";", lambda v: v.compiled.optimized_ir)

    @property
    def asm(self) -> str:
        return self._text("#", lambda v: v.compiled.asm)


def direct_entry(graph: Graph | None, fallback: Callable) -> tuple[Callable, np.ndarray] | None:
    """When `graph` is nothing but one NativeCall of its parameters (in order) giving its
    result, the region's native code as a builtin taking the function's own arguments
    (`NativeFunction.direct_entry`: a guard miss calls `fallback`); else None."""
    if graph is None or len(graph.block.nodes) != 1:
        return None
    (call,) = graph.block.nodes
    if call.kind != "prim::NativeCall" or call.inputs != graph.inputs \
            or call.outputs != graph.outputs:
        return None
    return call.attrs["runtime"].direct_entry(fallback)


def lower_native_call(node: Node, context) -> NativeFunction:
    """The executor's lowering of a prim::NativeCall node (see executor/pipeline.py): its
    NativeFunction, reporting to the executor's stats and shown by its inspection."""
    first = next(iter(node.attrs["subgraph"].block.nodes), None)
    source = node.source or (first.source if first is not None else None)
    runtime = NativeFunction(node.attrs["subgraph"],
                             f"{context.name}_native{context.next_label()}", source,
                             context.count_guard_failure, context.count_bailout)
    context.add_kernel(runtime)
    runtime.compile_expected()
    return runtime
