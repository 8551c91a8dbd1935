"""Lowering one region variant to one LLVM function: the entry point, values and control flow.

The function is a METH_FASTCALL | METH_KEYWORDS builtin (see cpython.py):

    entry:   check the argument count (and that there are no keyword arguments), unbox each
             argument (a failed check jumps to `miss`)
    body:    the region's nodes; prim::If / prim::Loop become branches and loops whose
             joins are phi nodes, one per component of each value (see ntypes.py); a
             small If of branch-free operations runs both arms and selects instead
    exit:    box the results (a tuple when there are several) and return them
    miss:    a guard failed: return `miss_handler(*args, **kwargs)` (the Python dispatcher)
    rerun:   native code cannot go on (Python's result is of another type than the IR's):
             return `rerun_handler(*args)`, the whole region in the interpreter, if no
             effect has been performed yet, else raise (bailout.py)
    fail:    an exception is set: return NULL

Rare cases are not reproduced in LLVM: a rule emits a test for them and `python_fallback`
runs the node's reference implementation through the interpreter instead (the node's
results then come back from Python).  Raising is such a case: division by zero, an index
out of bounds or a `raise` statement call the reference, which raises the eager exception
with the interpreter's message and source location, and the native function returns NULL.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from llvmlite import ir

from ...ir.graph import Block, Graph, Node, Value
from ...passes.analysis import has_effects
from ...passes.int_ranges import IntRanges, int_ranges
from ..self_products import plain_self_products
from . import cpython
from .arith import any_of
from .bailout import Bailouts, int_beyond_64_bits
from .boundary import box, unbox
from .inference import RegionKinds, infer_node
from .loops import LoopEmitter
from .ntypes import (
    I1,
    I64,
    PTR,
    PY_BOOL,
    PY_FLOAT,
    PY_INT,
    NType,
    NumpyScalar,
    NValue,
    PyScalar,
    Tagged,
    Tuple,
    coerce,
)
from .rules import RULES, SPECULATION_LIMIT

FUNCTION_ATTRIBUTES = ("nounwind",)
MISS_HANDLER, CALL_COUNTER = 0, 1     # indices in FunctionEmitter.objects


class SiteTable:
    """The Python callables that run single nodes of the region in the interpreter
    (`sites.py` makes them); the emitter asks for one per node it falls back on."""

    def site_for(self, node: Node, out_kinds: Sequence[NType]) -> object:
        raise NotImplementedError


class FunctionEmitter(LoopEmitter):
    def __init__(self, region: Graph, kinds: RegionKinds, name: str,
                 sites: SiteTable, module: ir.Module):
        self.region = region
        self.kinds = kinds
        self.name = name
        self.sites = sites
        self.module = module
        fnty = ir.FunctionType(PTR, (PTR, PTR, I64, PTR))
        self.fn = ir.Function(module, fnty, name=name)
        for attr in FUNCTION_ATTRIBUTES:
            self.fn.attributes.add(attr)
        self.context, self.args, self.nargs, self.kwnames = self.fn.args
        for arg, name in zip(self.fn.args, ("context", "args", "nargs", "kwnames")):
            arg.name = name
        self._allocas = self.fn.append_basic_block("allocas")
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.objects: list[object] = []
        self._object_index: dict[int, int] = {}
        self.values: dict[Value, NValue] = {}
        self._fail: ir.Block | None = None
        self._miss: ir.Block | None = None
        self.bailouts: Bailouts | None = None
        self.int_ranges: IntRanges | None = None        # which ints need no overflow test
        self._out_kinds: dict[Node, list[NType]] = {}   # of the node a rule is emitting
        self._deferred: list[ir.Value] | None = None    # tests of a checked speculation
        self._int_tests: list[tuple[ir.Value, Node]] = []  # waiting (see test_int)
        self._defer_int_tests = False
        self._speculating = 0           # the depth of _select_if's arms being emitted
        # array accesses shown within bounds by the chunk being emitted (see
        # element_access.py): node -> whether its last stride is the item size
        self.fast_accesses: dict[Node, bool] = {}
        # accesses whose array's last axis the chunk being emitted has shown contiguous
        self.contiguous_accesses: frozenset[Node] = frozenset()
        # int sums s += x a chunk leaves untested (chunk_sums.py)
        self.chunk_sums: frozenset[Node] = frozenset()
        # float sums whose event test the chunk makes at its end (chunk_sums.float_sums)
        self.tested_at_chunk_end: frozenset[Node] = frozenset()

    # ------------------------------------------------------------------ the function
    def build(self, miss_handler: object, rerun_handler: object, counters: object) -> None:
        """Emit the whole function; the objects it reads are `self.objects` afterwards,
        the miss handler and the call counter first (MISS_HANDLER, CALL_COUNTER), so that
        the same code can serve with others (see NativeFunction.direct_entry)."""
        self.object(miss_handler)
        self.object(counters)
        self.bailouts = Bailouts(self, rerun_handler)
        self.int_ranges = int_ranges(self.region, self._python_int)
        b = self.b
        inputs = self.region.inputs
        arity_ok = b.and_(b.icmp_signed("==", self.nargs, ir.Constant(I64, len(inputs))),
                          b.icmp_unsigned("==", self.kwnames, ir.Constant(PTR, None)))
        self._branch_unless(arity_ok, self.miss_block(miss_handler))
        for k, param in enumerate(inputs):
            item = b.load(b.gep(self.args, [ir.Constant(I64, k)], source_etype=PTR), typ=PTR)
            self.values[param] = unbox(self, item, self.kinds[param], self._miss)
        self._count_call(counters)
        self.emit_block(self.region.block)
        results = [self.values[v] for v in self.region.outputs]
        b.ret(self._box_results(results))
        with self.b.goto_block(self._allocas):
            self.b.branch(self.fn.blocks[1])
        plain_self_products(self.fn)

    def _python_int(self, value: Value) -> bool:
        """Whether `value` holds a Python int or bool in every pass (for int_ranges)."""
        return all(kinds.get(value, PY_INT) in (PY_INT, PY_BOOL)
                   for kinds in (self.kinds, *self.kinds.peeled.values())) and \
            value in self.kinds

    def _count_call(self, counters: object) -> None:
        """counters[0] += 1: native calls are counted by the native code itself."""
        b = self.b
        data = cpython.field(b, self.object(counters), cpython.ARRAY_DATA, PTR)
        b.store(b.add(b.load(data, typ=I64), ir.Constant(I64, 1)), data)

    def _box_results(self, results: list[NValue]) -> ir.Value:
        if len(results) == 1:
            return self.check_object(box(self, results[0]))
        return self.check_object(box(self, NValue(Tuple(tuple(r.kind for r in results)),
                                                  tuple(p for r in results for p in r.parts))))

    def miss_block(self, miss_handler: object) -> ir.Block:
        if self._miss is None:
            self._miss = self.fn.append_basic_block("miss")
            with self.b.goto_block(self._miss):
                self.b.ret(cpython.call(self.b, "PyObject_Vectorcall", self.object(miss_handler),
                                        self.args, self.nargs, self.kwnames))
        return self._miss

    @property
    def fail_block(self) -> ir.Block:
        """Return NULL: the exception set by the C API or by a fallback propagates."""
        if self._fail is None:
            self._fail = self.fn.append_basic_block("fail")
            with self.b.goto_block(self._fail):
                self.b.ret(ir.Constant(PTR, None))
        return self._fail

    # ------------------------------------------------------------------ helpers for rules
    def object(self, obj: object) -> ir.Value:
        """A borrowed reference to `obj`, read from the function's context tuple."""
        index = self._object_index.get(id(obj))
        if index is None:
            index = self._object_index[id(obj)] = len(self.objects)
            self.objects.append(obj)
        return cpython.tuple_item(self.b, self.context, cpython.FIRST_OBJECT + index)

    def alloca(self, typ: ir.Type, count: int = 1, initial: ir.Constant | None = None
               ) -> ir.Value:
        """Stack memory allocated once per call (in the entry block, so mem2reg sees it),
        holding `initial` at the function's entry if given."""
        with self.b.goto_block(self._allocas):
            memory = self.b.alloca(typ, size=count)
            if initial is not None:
                self.b.store(initial, memory)
            return memory

    def check_object(self, obj: ir.Value) -> ir.Value:
        """`obj`, after jumping to `fail` if the C API returned NULL."""
        self._branch_unless(self.b.icmp_unsigned("!=", obj, ir.Constant(PTR, None)),
                            self.fail_block)
        return obj

    def _branch_unless(self, ok: ir.Value, target: ir.Block) -> None:
        """Continue in a new block when `ok`, else go to `target` (a rare exit)."""
        cont = self.fn.append_basic_block()
        self.b.cbranch(ok, cont, target).set_weights([1000, 1])
        self.b.position_at_end(cont)

    def python_fallback(self, node: Node, args: Sequence[NValue], when: ir.Value | None = None,
                        fast: Sequence[NValue] | Callable[[], Sequence[NValue]] = (),
                        recheck: Callable[[], ir.Value] | None = None) -> list[NValue]:
        """The node's results: from its reference implementation in Python when `when` is
        true (always when it is None), else `fast` (values, or a function emitting them on
        the fast branch only).  With `recheck`, `when` may be a cheap superset of the rare
        case: where it holds, `recheck()` (emitted off the hot path) decides, and the
        precomputed `fast` values serve where it is false.  Called by the node's rule,
        while it emits the node."""
        out_kinds = self._out_kinds[node]
        if when is None:
            return self._call_site(node, args, out_kinds)
        if self._deferred is not None:      # a checked speculation (see _checked_select_if)
            assert not callable(fast), "a deferred test needs precomputed fast values"
            if node in self.tested_at_chunk_end:
                return list(fast)
            # a chunk's flag may hold on the cheap superset: the chunk then runs again as
            # written, whose branches make the exact test (see loops.LoopEmitter._chunk)
            cheap = recheck is None or self._speculating_chunk
            self._deferred.append(when if cheap else self.b.and_(when, recheck()))
            return list(fast)
        b = self.b
        slow_bb, fast_bb, join_bb = (self.fn.append_basic_block(n)
                                     for n in ("slow", "fast", "join"))
        b.cbranch(when, slow_bb, fast_bb).set_weights([1, 1000])
        b.position_at_end(fast_bb)
        fast_values = list(fast() if callable(fast) else fast)
        arrivals = [(fast_values, b.block)]
        b.branch(join_bb)
        b.position_at_end(slow_bb)
        if recheck is not None:
            assert not callable(fast), "a recheck needs the fast values on both branches"
            site_bb = self.fn.append_basic_block("site")
            arrivals.append((fast_values, b.block))
            b.cbranch(recheck(), site_bb, join_bb)
            b.position_at_end(site_bb)
        slow_values = self._call_site(node, args, out_kinds)
        arrivals.append((slow_values, b.block))
        b.branch(join_bb)
        b.position_at_end(join_bb)
        return [self.merge([(values[k], block) for values, block in arrivals], kind)
                for k, kind in enumerate(out_kinds)]

    def raise_at_site(self, node: Node, args: Sequence[NValue], when: ir.Value) -> None:
        """Where `when` holds, the node's reference implementation raises (NumPy's
        IndexError for an index out of bounds, Python's ZeroDivisionError): call it and
        fail.  The path never rejoins
        the code after the node, so that code may take `when` as false, and values live
        across the call need no saving in the loop around it."""
        assert self._deferred is None, "a raising path in a checked speculation"
        b = self.b
        raise_bb, cont = self.fn.append_basic_block("raise"), self.fn.append_basic_block()
        b.cbranch(when, raise_bb, cont).set_weights([1, 1000])
        b.position_at_end(raise_bb)
        result = self._boxed_site_call(node, args, self._out_kinds[node])
        self.check_object(result)       # NULL: the expected exception is set
        cpython.call(b, "Py_DecRef", result)
        unexpected = cpython.call(b, "PyObject_Vectorcall", self.object(_did_not_raise),
                                  ir.Constant(PTR, None), ir.Constant(I64, 0),
                                  ir.Constant(PTR, None))
        cpython.call(b, "Py_DecRef", unexpected)     # NULL (it raises); Py_DecRef takes NULL
        b.branch(self.fail_block)
        b.position_at_end(cont)

    def _boxed_site_call(self, node: Node, args: Sequence[NValue], out_kinds: list[NType]
                         ) -> ir.Value:
        """Call the node's Python site with its distinct non-constant inputs (boxed), the
        parameters of `sites.single_node_graph`; its result (a new reference or NULL)."""
        b = self.b
        distinct = {v: a for v, a in zip(node.inputs, args) if v.node.kind != "prim::Constant"}
        passed = list(distinct.values())
        site = self.sites.site_for(node, out_kinds)
        if _may_warn([a.kind for a in args] + list(out_kinds)):
            self.bailouts.mark_effect()
        argv = self.alloca(PTR, max(1, len(passed)))
        boxed = []
        for k, arg in enumerate(passed):
            obj = self.check_object(box(self, arg))
            boxed.append(obj)
            b.store(obj, b.gep(argv, [ir.Constant(I64, k)], source_etype=PTR))
        result = cpython.call(b, "PyObject_Vectorcall", self.object(site), argv,
                              ir.Constant(I64, len(passed)), ir.Constant(PTR, None))
        for obj in boxed:
            cpython.call(b, "Py_DecRef", obj)
        return result

    def _call_site(self, node: Node, args: Sequence[NValue], out_kinds: list[NType]
                   ) -> list[NValue]:
        """Call the node's Python site with its distinct non-constant inputs (boxed), the
        parameters of `sites.single_node_graph`."""
        b = self.b
        result = self.check_object(self._boxed_site_call(node, args, out_kinds))
        if out_kinds:
            self.bailouts.check_site_result(result)
        if len(out_kinds) == 1:
            values = [unbox(self, result, out_kinds[0])]
        else:
            values = [unbox(self, cpython.tuple_item(b, result, k), kind)
                      for k, kind in enumerate(out_kinds)]
        cpython.call(b, "Py_DecRef", result)
        return values

    # ------------------------------------------------------------------ joins
    def merge(self, incoming: list[tuple[NValue, ir.Block]], kind: NType) -> NValue:
        """One value of `kind` from the values arriving from several predecessors."""
        parts = [[coerce(v, kind)[i] for v, _ in incoming]
                 for i in range(len(kind.components()))]
        phis = []
        for typ, values in zip(kind.components(), parts):
            if all(v is values[0] for v in values):
                phis.append(values[0])
                continue
            phi = self.b.phi(typ)
            for v, (_, block) in zip(values, incoming):
                phi.add_incoming(v, block)
            phis.append(phi)
        return NValue(kind, tuple(phis))

    # ------------------------------------------------------------------ blocks
    def emit_block(self, block: Block) -> None:
        for node in block.nodes:
            branch_free = self._branch_free(node)
            if not branch_free:
                self._flush_int_tests()
            if node.kind == "prim::If":
                self._if(node)
            elif node.kind == "prim::Loop":
                self._loop(node)
            else:
                if has_effects(node) and not self._updates_a_number(node):
                    self.bailouts.mark_effect()
                self._defer_int_tests = branch_free
                outs = self.emit_node(node, [self.values[v] for v in node.inputs])
                self._defer_int_tests = False
                for v, nv in zip(node.outputs, outs):
                    self.values[v] = nv
        if not self._speculating:
            self._flush_int_tests()

    def _updates_a_number(self, node: Node) -> bool:
        """`s += x` of numbers: the registry declares in-place operators as effects (on
        an array they are), but on numbers they only compute, and a region that ran one
        may still run again (a later int beyond 64 bits re-runs, as without it)."""
        return node.kind.startswith("aten::i") and node.kind[6:] in _IN_PLACE_NUMBER_OPS \
            and all(isinstance(self.kinds[v], (PyScalar, NumpyScalar, Tagged))
                    for v in node.inputs)

    def _branch_free(self, node: Node) -> bool:
        """Whether the node's code is only computation, without branches: an operation
        that may be speculated (rules.Rule.speculate), or an `if` of such operations
        that _if emits with selects."""
        if node.kind == "prim::If":
            size = self._speculation_size(node.blocks)
            return size is not None and size <= SPECULATION_LIMIT
        kinds = [self.kinds[v] for v in node.inputs]
        return node.kind != "prim::Loop" and not any(isinstance(k, Tagged) for k in kinds) \
            and RULES[node.kind].speculate(node, kinds)

    def test_int(self, beyond: ir.Value, node: Node) -> None:
        """Give up where `beyond` holds: `node`'s int result needs more than 64 bits (the
        region runs again in the interpreter).  Within a run of branch-free nodes (a loop
        body's arithmetic, the arms of a small `if`) the test waits for the run's end,
        where only arithmetic has seen the wrapped value: placed after the arithmetic of
        a loop's recurrence, it does not delay it (collatz 1.09 -> 1.03 x Numba)."""
        if self._speculating_chunk:
            self._deferred.append(beyond)
        elif self._defer_int_tests:
            self._int_tests.append((beyond, node))
        else:
            self.bailouts.give_up_if(beyond, int_beyond_64_bits(node))

    def _flush_int_tests(self) -> None:
        tests, self._int_tests = self._int_tests, []
        for beyond, node in tests:
            self.bailouts.give_up_if(beyond, int_beyond_64_bits(node))

    def emit_node(self, node: Node, args: list[NValue]) -> list[NValue]:
        """The node's rule applied to `args`; a Tagged argument is split: each of its
        alternatives gets its own branch, and the results are joined."""
        for k, arg in enumerate(args):
            if isinstance(arg.kind, Tagged):
                if not _reads_as_numpy(node, args, k):
                    return self._split(node, args, k)
                args = [*args[:k], self._as_numpy(arg), *args[k + 1:]]
        out_kinds = self._out_kinds[node] = infer_node(node, [a.kind for a in args])
        return list(RULES[node.kind].emit(self, node, args, out_kinds))

    def _as_numpy(self, tagged: NValue) -> NValue:
        """A Tagged value whose Python number is exactly its NumPy scalar's value, as that
        NumPy scalar (see _reads_as_numpy)."""
        python, numpy = tagged.kind.alternatives(tagged.parts)
        return NValue(numpy.kind, (self.b.select(tagged.parts[0], numpy.value, python.value),))

    def _split(self, node: Node, args: list[NValue], k: int) -> list[NValue]:
        b, tagged = self.b, args[k]
        python_bb, numpy_bb, join_bb = (self.fn.append_basic_block(n)
                                        for n in ("python", "numpy", "joined"))
        b.cbranch(tagged.parts[0], numpy_bb, python_bb)
        arrivals = []
        for alternative, bb in zip(tagged.kind.alternatives(tagged.parts), (python_bb, numpy_bb)):
            b.position_at_end(bb)
            outs = self.emit_node(node, [*args[:k], alternative, *args[k + 1:]])
            arrivals.append((outs, b.block))
            b.branch(join_bb)
        b.position_at_end(join_bb)
        joined = infer_node(node, [a.kind for a in args])
        return [self.merge([(outs[i], bb) for outs, bb in arrivals], kind)
                for i, kind in enumerate(joined)]

    def _if(self, node: Node) -> None:
        size = self._speculation_size(node.blocks)
        if size is not None and size <= SPECULATION_LIMIT:
            self._select_if(node)
            return
        size = self._speculation_size(node.blocks, checked=True)
        if size is not None and size <= SPECULATION_LIMIT and self._deferred is None:
            self._checked_select_if(node)
            return
        self._branch_if(node)

    def _branch_if(self, node: Node) -> None:
        b = self.b
        cond = self.values[node.inputs[0]].value
        then_bb, else_bb, join_bb = (self.fn.append_basic_block(n)
                                     for n in ("then", "else", "endif"))
        b.cbranch(cond, then_bb, else_bb)
        arrivals = []
        for block, bb in zip(node.blocks, (then_bb, else_bb)):
            b.position_at_end(bb)
            self.emit_block(block)
            arrivals.append(([self.values[v] for v in block.outputs], b.block))
            b.branch(join_bb)
        b.position_at_end(join_bb)
        for k, out in enumerate(node.outputs):
            self.values[out] = self.merge([(vals[k], bb) for vals, bb in arrivals],
                                          self.kinds[out])

    def _speculation_size(self, blocks: Sequence[Block], checked: bool = False) -> int | None:
        """How many operations `blocks` have (nested ifs included), if every one of them
        may run when its arm is not taken (rules.Rule.speculate, or with `checked` also
        Rule.checked, then without nested ifs); else None."""
        size = 0
        for inner in (n for block in blocks for n in block.nodes):
            if inner.kind == "prim::If":
                inner_size = None if checked else self._speculation_size(inner.blocks)
                if inner_size is None:
                    return None
                size += 1 + inner_size
                continue
            kinds = [self.kinds[v] for v in inner.inputs]
            if inner.kind == "prim::Loop" or any(isinstance(k, Tagged) for k in kinds):
                return None
            rule = RULES[inner.kind]
            if not (rule.speculate(inner, kinds) or (checked and rule.checked(inner, kinds))):
                return None
            size += inner.kind != "prim::Constant"
        return size

    def _checked_select_if(self, node: Node) -> None:
        """An `if` of a few operations whose rare cases are tests (rules.Rule.checked):
        both arms run with their tests collected, not branched on, and selects pick the
        results; where a test of the taken arm holds, the `if` runs again as branches,
        whose operations then take their rare paths as usual.  Running an arm that is not
        taken, or one that runs again, is not observable: without their rare paths these
        operations only compute.  `if t[i-1, j] + 1 < best: best = t[i-1, j] + 1` (NumPy
        ints: overflow tests) then costs no branch the processor could mispredict."""
        b = self.b
        cond = self.values[node.inputs[0]].value
        tests = []
        for block in node.blocks:
            self._deferred = []
            self.emit_block(block)
            tests.append(any_of(b, [ir.Constant(I1, 0), *self._deferred]))
        self._deferred = None
        rare = b.select(cond, tests[0], tests[1])
        fast = self._select_results(node, cond)
        fast_end = b.block
        slow_bb, join_bb = self.fn.append_basic_block("recheck"), self.fn.append_basic_block()
        b.cbranch(rare, slow_bb, join_bb).set_weights([1, 1000])
        b.position_at_end(slow_bb)
        self._branch_if(node)
        slow_end = b.block
        b.branch(join_bb)
        b.position_at_end(join_bb)
        for out, value in zip(node.outputs, fast):
            self.values[out] = self.merge([(value, fast_end), (self.values[out], slow_end)],
                                          self.kinds[out])

    def _select_if(self, node: Node) -> None:
        """An `if` of a few operations without branches: both arms run and selects pick
        the results, so that a loop around it has no branch the processor could
        mispredict."""
        cond = self.values[node.inputs[0]].value
        self._speculating += 1
        for block in node.blocks:
            self.emit_block(block)
        self._speculating -= 1
        for out, value in zip(node.outputs, self._select_results(node, cond)):
            self.values[out] = value

    def _select_results(self, node: Node, cond: ir.Value) -> list[NValue]:
        """The If's results, selected from its arms' values (both arms emitted)."""
        b = self.b
        arms = [[self.values[v] for v in block.outputs] for block in node.blocks]
        results = []
        for k, out in enumerate(node.outputs):
            kind = self.kinds[out]
            parts = zip(coerce(arms[0][k], kind), coerce(arms[1][k], kind))
            results.append(NValue(kind, tuple(
                then if then is otherwise else b.select(cond, then, otherwise)
                for then, otherwise in parts)))
        return results


_IN_PLACE_NUMBER_OPS = frozenset(("iadd", "isub", "imul", "itruediv", "ifloordiv", "imod",
                                  "ipow", "ilshift", "irshift", "iand", "ior", "ixor"))
# A Python number held in a NumPy scalar's register type with the same value.
_SAME_VALUE = {(PY_FLOAT, np.dtype(np.float64)), (PY_INT, np.dtype(np.int64)),
               (PY_BOOL, np.dtype(np.bool_))}


def _reads_as_numpy(node: Node, args: Sequence[NValue], k: int) -> bool:
    """Whether the Tagged args[k] may be read as its NumPy scalar: for an op whose result
    depends on its operands' values only (rules.Rule.by_value), whose other operands are
    NumPy scalars of that very dtype, NumPy computes the same in that dtype whether the
    operand is the Python number or the NumPy scalar of the same value (NEP 50).  The
    loop of `worst = 0.0; ...; if drawdown > worst: worst = drawdown` then compares
    without branching on which one `worst` holds."""
    kind = args[k].kind
    others = [a.kind for j, a in enumerate(args) if j != k]
    return RULES[node.kind].by_value and (kind.python, kind.numpy.dtype) in _SAME_VALUE \
        and bool(others) and all(o == kind.numpy for o in others)



def _did_not_raise() -> None:
    raise SystemError("tsjit: native code expected the interpreter to raise here (an "
                      "index out of bounds, a division by zero), but it did not raise")


def _may_warn(kinds: Sequence[NType]) -> bool:
    """Whether a fallback on values of these kinds may emit a NumPy warning (an effect: a
    re-run would emit it again); Python's own number operations raise instead."""
    return any(isinstance(k, (NumpyScalar, Tagged))
               or (isinstance(k, Tuple) and _may_warn(k.elems)) for k in kinds)


def constant_bool(value: bool) -> NValue:
    return NValue(PY_BOOL, (ir.Constant(I1, int(value)),))
