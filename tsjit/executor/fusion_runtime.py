"""The run-time side of `prim::FusionGroup`: a compiled kernel behind a generated launcher.

The group's guard has already checked dtypes and ranks.  What only the call can tell is
checked here, and on the rare path only: when the array inputs' shapes differ, each
output must have exactly their broadcast shape, as NumPy would give it; a Python int must
fit the integer dtype it is converted to (NumPy raises OverflowError).  The kernel itself
checks that the shapes broadcast and that an array written in place has that shape and is
writeable, raising ValueError before it runs.  When a check fails the launcher runs the
group's ops in the interpreter instead (a bailout), which computes NumPy's result or raises
NumPy's error.  Otherwise it is one call of the kernel (see `codegen.launch`), with
constants passed as literals.
"""
from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable

import numpy as np

from ..interpreter import compile_graph
from ..interpreter.rendering import literal
from ..ir.graph import Graph, Node
from ..passes.elementwise_kernel import FusedKernel, read_call
from ..passes.insert_guards import unspecialized
from ..passes.reduction_kernel import build_fused_group, read_reduction

log = logging.getLogger("tsjit.fuser")


def signalling_nan(value) -> bool:
    """Whether a float scalar (Python float, NumPy scalar or 0-d array) that is NaN is a
    signalling one: its quiet bit (the significand's highest) clear."""
    array = np.asarray(value)
    if array.dtype.kind != "f":
        return False
    bits = int(array.view(f"u{array.dtype.itemsize}"))
    return not bits >> (np.finfo(array.dtype).nmant - 1) & 1


class InterpretedGroup:
    """A group's ops run by the interpreter (compiled on first use): the bailout."""

    def __init__(self, graph: Graph, name: str, filename: str, on_run: Callable[[], None]):
        self.graph = graph
        self.name = name
        self.filename = filename
        self.on_run = on_run
        self.fn: Callable | None = None

    def __call__(self, *args):
        if self.fn is None:
            self.fn = compile_graph(self.graph, self.name, self.filename).fn
        self.on_run()
        return self.fn(*args)


class FusionRuntime:
    """One FusionGroup: its kernel, its launcher (`launch`) and its launch count."""

    def __init__(self, label: str, subgraph: Graph, fused: FusedKernel, kernel,
                 bailout: Callable):
        self.label = label
        self.subgraph = subgraph
        self.fused = fused
        self.kernel = kernel
        self.counter = [0]
        params = [f"a{i}" for i in range(len(subgraph.inputs))]
        namespace = {"_bailout": bailout}
        body, results = self.launch_code(params, namespace,
                                         f"return _bailout({', '.join(params)})")
        result = results[0] if len(results) == 1 else f"({', '.join(results)},)"
        source = "\n".join([f"def launch({', '.join(params)}):", *body,
                             f"    return {result}"]) + "\n"
        exec(compile(source, f"<tsjit launcher {label}>", "exec"), namespace)
        self.launch = namespace["launch"]
        self.launch.fusion = self     # the FusionGroup node holds the launcher only

    @property
    def launches(self) -> int:
        return self.counter[0]

    def launch_code(self, params: list[str], namespace: dict, bail: str,
                    indent: str = "    ") -> tuple[list[str], list[str]]:
        """Statements that launch the kernel on the group inputs named `params` (adding
        the objects they use to `namespace`), running `bail` when a run-time check fails;
        and the expressions of the subgraph's outputs afterwards."""
        fused = self.fused
        name_of = dict(zip(self.subgraph.inputs, params))
        namespace.update(_call=self.kernel.call, _launches=self.counter)
        args = []
        for k, feed in enumerate(fused.feeds):
            if feed.value is not None:
                args.append(name_of[feed.value])
                continue
            text = literal(feed.constant)
            if text is None or (type(feed.constant) is float and not math.isfinite(feed.constant)):
                namespace[f"_c{k}"] = feed.constant
                text = f"_c{k}"
            args.append(text)
        array = {k: name_of[f.value] for k, f in enumerate(fused.feeds)
                 if not fused.spec.inputs[k].is_scalar}
        # The kernel checks that each array written in place has the iteration shape.
        checks = [sorted(c) for c in fused.shape_checks
                  if not (len(c) == 1 and next(iter(c)) in fused.written)]
        arrays = list(array.values())
        lines = []
        if fused.written:   # see codegen.fp_errors: an error state that may raise
            from ..codegen.fp_errors import (
                MAY_RAISE_UNLESS_KNOWN,
                current_errstate,
                errstate_may_raise,
            )
            namespace.update(_errstate=current_errstate, _may_raise=errstate_may_raise,
                             _warnings=warnings, _len=len, _known=[None] * 6)
            unless_known = MAY_RAISE_UNLESS_KNOWN.format(errstate="_errstate", known="_known",
                                                         warnings="_warnings", len="_len")
            lines += [f"if ({unless_known}) and _may_raise(_known):", f"    {bail}"]
        for k, (lo, hi) in fused.range_checks.items():
            lines += [f"if not {lo} <= {args[k]} <= {hi}:", f"    {bail}"]
        for bounds, base in fused.size_one_checks:   # NumPy's stride-0 loops (clip, power)
            test = " and ".join(f"{array[k]}.size == 1" for k in sorted(bounds))
            if base is not None:
                test += f" and not ({' and '.join(f'{array[k]}.size == 1' for k in base)})"
            lines += [f"if {test}:", f"    {bail}"]
        # a float scalar reaches the kernel as a double, which quiets a signalling NaN:
        # NumPy's loop would raise invalid on it (and warn), the kernel not
        for k, feed in enumerate(fused.feeds):
            if feed.value is not None and fused.spec.inputs[k].is_scalar \
                    and fused.spec.inputs[k].dtype.kind == "f":
                namespace["_signalling"] = signalling_nan
                lines += [f"if {args[k]} != {args[k]} and _signalling({args[k]}):",
                          f"    {bail}"]
        if len(arrays) > 1 and checks:
            from ..codegen.launch import broadcast_shape  # loaded: the kernel is compiled
            namespace["_broadcast"] = broadcast_shape
            lines += [f"shape = {arrays[0]}.shape",
                      f"if {' or '.join(f'{a}.shape != shape' for a in arrays[1:])}:",
                      "    try:",
                      f"        shape = _broadcast({', '.join(f'{a}.shape' for a in arrays)})",
                      "    except ValueError:",
                      f"        {bail}"]
            for check in checks:
                names = [array[k] for k in check]
                actual = f"{names[0]}.shape" if len(names) == 1 else \
                    f"_broadcast({', '.join(f'{a}.shape' for a in names)})"
                lines += [f"    if {actual} != shape:", f"        {bail}"]
            args.append("shape=shape")   # computed once per call
        # the kernel raises ValueError for shapes that do not broadcast, before it runs:
        # the ops then raise NumPy's own error in the interpreter, at their own line; and
        # FloatingPointFlags when NumPy would report a floating-point error (the kernel
        # ran): the ops then warn, raise or call the errstate's handler in the interpreter
        from ..codegen.launch import FloatingPointFlags
        namespace["_FloatingPointFlags"] = FloatingPointFlags
        lines += ["try:", f"    results = _call({', '.join(args)})", "except ValueError:",
                  f"    {bail}", "except _FloatingPointFlags:", "    _launches[0] += 1",
                  f"    {bail}", "_launches[0] += 1"]
        results = [f"results[{next(j for j, out in enumerate(fused.outputs) if out.root is v)}]"
                   for v in self.subgraph.outputs]
        return [indent + line for line in lines], results


def lower_fusion_group(node: Node, context) -> Callable:
    """The launcher of a FusionGroup node; its ops in the interpreter if compiling fails."""
    subgraph = node.attrs["subgraph"]
    label = f"{context.name} #{context.next_label()}"
    bailout = InterpretedGroup(unspecialized(subgraph), f"{context.name}_group",
                               context.filename, context.count_bailout)
    from ..codegen.launch import compile_kernel
    from ..codegen.reduction_launch import compile_row_kernel
    from ..codegen.reduction_spec import RowKernelSpec

    outputs = set(subgraph.outputs)
    try:
        fused = build_fused_group([n for n in subgraph.nodes() if read_call(n) is not None
                                   or read_reduction(n) is not None], outputs.__contains__)
        compile_spec = compile_row_kernel if isinstance(fused.spec, RowKernelSpec) else \
            compile_kernel
        kernel = compile_spec(fused.spec)
    except Exception:   # a bug in code generation must cost speed, never a wrong result
        log.warning("%s: kernel compilation failed; the group runs in the interpreter",
                    label, exc_info=True)
        return bailout
    runtime = FusionRuntime(label, subgraph, fused, kernel, bailout)
    context.add_kernel(runtime)
    return runtime.launch
