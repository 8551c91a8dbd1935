"""Lowering prim::Loop: loops whose hot part LLVM can unroll and vectorize, and the
interrupt check that keeps them stoppable with Ctrl-C.

Every INTERRUPT_CHECK_INTERVAL back-edges (of all the function's loops together) native
code lets Python handle pending signals (PyErr_CheckSignals): a handler that raises
(Ctrl-C: KeyboardInterrupt) makes the function fail with that exception at an iteration
boundary, with the array writes of the iterations before it done, as eager Python would
have done had the signal arrived there.  The back-edges left before the next check are a
budget, one per function, which mem2reg keeps in a register.

A loop with a trip count (a `for` loop) holding no other loop (the hot one of a nest)
runs in *chunks*: an inner loop of at most `budget` passes with nothing but the loop's
own test on its back-edge, then the budget is charged with the passes run and, where it
is spent, the signals are checked before the next chunk.  The inner loop is then a plain
counted loop (its end, `min(trip count, counter + budget)`, is fixed when the chunk
starts), which LLVM unrolls and vectorizes where the body allows: a check in every pass
(a call on a second exit) stopped both, and summing `i & 255` was 8x slower than Numba's.
Other loops keep the check on each back-edge (one decrement and a predictable branch):
a `while` loop cannot vectorize, and the chunks' own cost on entry made collatz's short
inner loops ~20% slower; loops around loops run their body's loops on each pass anyway.
The budget is the same for all, so checks still come every INTERRUPT_CHECK_INTERVAL
back-edges of any mix of loops.  A chunk never outruns the budget, so the count of checks
bounds the back-edges run, as int_ranges' counters need (BACK_EDGE_LIMIT).
"""
from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from ...interpreter.control import INT64_MAX, LoopParts, is_constant
from ...ir.graph import Node
from ...passes.int_ranges import BACK_EDGE_LIMIT
from . import cpython
from .arith import any_of
from .bailout import Rerun
from .chunk_sums import WideSums, bounded_sums, float_sums, not_finite
from .element_access import ElementAccesses
from .ntypes import I1, I32, I64, PY_BOOL, PY_INT, NumpyScalar, NValue, Tagged, coerce
from .rules import RULES, SPECULATION_LIMIT

# Loop back-edges between two checks for pending signals (Ctrl-C): PyErr_CheckSignals costs
# a few ns, so a check per 2**16 iterations is free, and 2**16 iterations of any loop body
# take well under a second.
INTERRUPT_CHECK_INTERVAL = 1 << 16


class LoopEmitter:
    """FunctionEmitter's lowering of prim::Loop (a mixin: it uses the emitter's builder,
    values, kinds, bailouts and blocks)."""

    _interrupt_budget: ir.Value | None = None
    _superset_held: ir.Value | None = None
    _speculating_chunk = False      # tests of rare cases go to _deferred (see _chunk)

    def _loop(self, node: Node) -> None:
        """`i = 0; c = cond; v = init; while i < n and c: v = body(i, v); i += 1`, with the
        counter left out of `while` loops (trip count INT64_MAX, counter unused) and the
        condition left out of `for` loops (always True).  A peeled loop (inference.py)
        runs its first pass before the loop proper, with the kinds of that pass.  A `for`
        loop without loops inside runs in chunks (see the module docstring)."""
        b = self.b
        loop = LoopParts(node)
        bounded = not is_constant(loop.max_trip_count, INT64_MAX)
        chunked = bounded and not any(inner.kind == "prim::Loop"
                                      for inner in node.blocks[0].walk())
        counted = bounded or bool(loop.counter.uses)
        conditional = not (is_constant(loop.initial_cond, True)
                           and is_constant(loop.next_cond, True))
        kinds = [self.kinds[p] for p in loop.params]
        start, values = 0, [self.values[v] for v in loop.initial]
        cond_value = self.values[loop.initial_cond]
        skipped = None          # (block, values) reaching the exit without the loop proper
        exit_bb = self.fn.append_basic_block("endloop")
        first_pass = self.kinds.peeled.get(node)
        if first_pass is not None:
            peel_bb = self.fn.append_basic_block("peel")
            skipped = (b.block, values)
            b.cbranch(self._loop_test(loop, counted, conditional, cond_value.value,
                                      ir.Constant(I64, 0)), peel_bb, exit_bb)
            b.position_at_end(peel_bb)
            steady_kinds, self.kinds = self.kinds, first_pass
            self._emit_pass(loop, counted, ir.Constant(I64, 0), values)
            self.kinds = steady_kinds
            start, values = 1, [self.values[v] for v in loop.carried_next]
            cond_value = self.values[loop.next_cond]
        entry = _LoopState(ir.Constant(I64, start), cond_value.value, values)
        state = self._loop_header(kinds, conditional, entry, "loop")
        body_bb = self.fn.append_basic_block("body")
        b.cbranch(self._loop_test(loop, counted, conditional, state.cond, state.counter),
                  body_bb, exit_bb)
        b.position_at_end(body_bb)
        if chunked:
            self._chunk(loop, conditional, kinds, state)
        else:
            self._emit_pass(loop, counted, state.counter, state.carried)
            self._charge_back_edges(ir.Constant(I64, 1), node)
            state.add_incoming(b.block, self._next_state(loop, state.counter), kinds)
        b.branch(state.header)
        b.position_at_end(exit_bb)
        for k, (out, value) in enumerate(zip(node.outputs, state.carried)):
            if skipped is not None:
                value = self.merge([(value, state.header), (skipped[1][k], skipped[0])],
                                   self.kinds[out])
            self.values[out] = value

    def _chunk(self, loop: LoopParts, conditional: bool, kinds: Sequence,
               outer: _LoopState) -> None:
        """From the chunk loop's body: at most `budget` passes as an inner loop whose only
        exits are its end and the loop's condition, then the charge for them; continues
        into the chunk loop's back-edge (the outer state gets its incoming values).  Where
        the body reads or writes array elements at indices affine in the counter, the
        chunk runs in one of two versions (see `ElementAccesses`): one without their
        bounds checks where every such index lies within its array at both ends of the
        chunk, the other as written.  Where the first has no effects and its rare cases
        are tests (NumPy scalars' floating-point events, ints beyond 64 bits), it
        gathers them in a flag instead of branching, and a chunk whose flag is set runs
        again from its start as written (its passes only computed: nothing observable
        happened), which then takes the rare paths at eager's pass.  The gathered tests
        are the cheap ones (a product's: not normal), a superset of the events, whose
        exact part (a zero operand makes a zero product no underflow) the run as
        written makes; sums wait for the chunk's end (chunk_sums.py).  A dot product's
        pass is then a multiply, an add and a compare, without a branch.  Where such a
        superset held, this chunk and the call's later ones run with branches (and
        without the bounds checks the entry test left out): zeros in every chunk would
        otherwise run each twice (`_supersets_held`)."""
        b = self.b
        trips = self.values[loop.max_trip_count].value
        budget = b.load(self._budget(), typ=I64)
        left = b.sub(trips, outer.counter)
        end = b.add(outer.counter, b.select(b.icmp_signed("<", left, budget), left, budget))
        accesses = ElementAccesses(self, loop)
        sums = bounded_sums(self, loop, INTERRUPT_CHECK_INTERVAL)
        tested = accesses.affine_tests()
        self.fast_accesses = accesses.fast
        wide = WideSums(self, loop, sums)
        speculates = self._speculates(loop)
        if not speculates:
            wide.sums = {}
        entry = _LoopState(outer.counter, outer.cond, outer.carried)
        done_bb = self.fn.append_basic_block("chunk_done")
        # (accesses without bounds checks, nodes without overflow tests, first block,
        # where a gathered test holds)
        versions, checked_bb = [(accesses.fast, frozenset(), None, None)], None
        if accesses.fast or accesses.contiguous or sums or tested or wide.sums:
            checked_bb, fast_bb = (self.fn.append_basic_block(n) for n in ("checked", "fast"))
            last = b.sub(end, ir.Constant(I64, 1))
            ok = accesses.hold(outer.counter, last)
            for k, (low, high) in sums.values():
                start = outer.carried[k].value
                ok = b.and_(ok, b.and_(
                    b.icmp_signed(">=", start, ir.Constant(I64, -2 ** 63 - low)),
                    b.icmp_signed("<=", start, ir.Constant(I64, 2 ** 63 - 1 - high))))
            ok = b.and_(ok, accesses.tests_hold(tested, outer.counter, last))
            untested = frozenset(sums) | frozenset(tested)
            versions = [(accesses.fast, untested, fast_bb, None),
                        ({}, frozenset(), checked_bb, None)]
            if not speculates:
                b.cbranch(ok, fast_bb, checked_bb)
            elif not self._gathers_supersets(loop):
                versions[0] = (accesses.fast, untested | frozenset(wide.sums), fast_bb, checked_bb)
                b.cbranch(ok, fast_bb, checked_bb)
            else:       # a chunk whose superset held runs as written, and so do the next
                gathered_bb, choose_bb = (self.fn.append_basic_block(n)
                                          for n in ("gathered", "choose"))
                versions.insert(0, (accesses.fast, untested | frozenset(wide.sums), gathered_bb,
                                    fast_bb))
                b.cbranch(ok, choose_bb, checked_bb)
                b.position_at_end(choose_bb)
                b.cbranch(b.load(self._supersets_held(), typ=I1), fast_bb, gathered_bb)
        exits = []
        for fast, untested, start_bb, retry in versions:
            if start_bb is not None:
                b.position_at_end(start_bb)
            self.fast_accesses, self.chunk_sums = fast, untested
            self.contiguous_accesses = accesses.contiguous if start_bb not in (
                None, checked_bb) else frozenset()
            exits.append(self._chunk_passes(loop, conditional, kinds, entry, end, done_bb,
                                            retry, wide if retry is not None else None))
        self.fast_accesses, self.chunk_sums = {}, frozenset()
        self.contiguous_accesses = frozenset()
        b.position_at_end(done_bb)

        def joined(part, kind) -> NValue:
            return self.merge([(part(state), block) for block, state in exits], kind)
        state = _LoopState(
            joined(lambda s: NValue(PY_INT, (s.counter,)), PY_INT).value,
            joined(lambda s: NValue(PY_BOOL, (s.cond,)), PY_BOOL).value if conditional
            else None,
            [joined(lambda s, k=k: s.carried[k], kind) for k, kind in enumerate(kinds)])
        self._charge_back_edges(b.sub(state.counter, outer.counter), loop.node)
        outer.add_incoming(b.block, state, kinds)

    def _chunk_passes(self, loop: LoopParts, conditional: bool, kinds: Sequence,
                      entry: _LoopState, end: ir.Value, done_bb: ir.Block,
                      retry: ir.Block | None, wide: WideSums | None
                      ) -> tuple[ir.Block, _LoopState]:
        """The inner loop of a chunk from the current block, its passes up to `end` (or
        the condition's turning false); it exits to `done_bb`, or with `retry`, where a
        test of its rare cases held (gathered, see _chunk) or one of the `wide` sums left
        int64, to `retry`: the exit's block and state."""
        b = self.b
        pred = b.block
        inner = self._loop_header(kinds, conditional, entry, "chunk")
        unusual, ends = None, float_sums(self, loop) if retry is not None else {}
        if retry is not None:
            unusual = b.phi(I1, name="unusual")
            unusual.add_incoming(ir.Constant(I1, 0), pred)
            wide.start(pred)
        go = b.icmp_signed("<", inner.counter, end)
        if conditional:
            go = b.and_(inner.cond, go)
        body_bb = self.fn.append_basic_block("pass")
        exit_bb = done_bb if retry is None else self.fn.append_basic_block("speculated")
        b.cbranch(go, body_bb, exit_bb)
        b.position_at_end(body_bb)
        if retry is not None:
            self._deferred, self._speculating_chunk = [], True
            self.tested_at_chunk_end = frozenset(ends)
        self._emit_pass(loop, True, inner.counter, inner.carried)
        self.tested_at_chunk_end = frozenset()
        if retry is not None:
            unusual.add_incoming(any_of(b, [unusual, *self._deferred]), b.block)
            self._deferred, self._speculating_chunk = None, False
            wide.add_pass()
        inner.add_incoming(b.block, self._next_state(loop, inner.counter), kinds)
        b.branch(inner.header)
        if retry is None:
            return inner.header, inner.as_values()
        b.position_at_end(exit_bb)
        rare = any_of(b, [unusual, wide.beyond(entry.carried, inner.carried),
                          not_finite(self, ends, inner.carried)])
        rare_bb = self.fn.append_basic_block("rare")
        b.cbranch(rare, rare_bb, done_bb).set_weights([1, 1000])
        b.position_at_end(rare_bb)
        b.store(ir.Constant(I1, 1), self._supersets_held())
        b.branch(retry)
        return exit_bb, inner.as_values()

    def _speculates(self, loop: LoopParts) -> bool:
        """Whether the pass of `loop` may run with its rare cases gathered (see _chunk):
        no branches (ifs small enough to select), and operations that are plain
        computation (rules.Rule.speculate), computation but for tests of rare cases
        (Rule.checked) or array reads shown within bounds: none has effects (`s += x`
        of numbers is computation, whatever in-place ops declare for arrays)."""
        for node in loop.node.blocks[0].nodes:
            if node.kind == "prim::If":
                size = self._speculation_size(node.blocks)
                if size is None or size > SPECULATION_LIMIT:
                    return False
                continue
            kinds = [self.kinds[v] for v in node.inputs]
            if node.kind == "prim::Loop" or any(isinstance(k, Tagged) for k in kinds):
                return False
            rule = RULES[node.kind]
            read = node.kind == "aten::__getitem__" and node in self.fast_accesses
            if not (read or rule.speculate(node, kinds)
                    or rule.checked(node, kinds)):
                return False
        return True

    def _gathers_supersets(self, loop: LoopParts) -> bool:
        """Whether the pass of `loop` computes a NumPy float product, quotient or power,
        whose gathered event test is a superset that common data meets: a zero operand
        makes a zero product, which is no underflow (numpy_ops._float_events)."""
        return any(node.kind in _SUPERSET_EVENT_OPS and node.outputs
                   and isinstance(kind := self.kinds.get(node.outputs[0]), NumpyScalar)
                   and kind.dtype.kind == "f" for node in loop.node.blocks[0].nodes)

    def _supersets_held(self) -> ir.Value:
        """Whether a gathered test of this call held (see _chunk): the chunks after it
        that gather supersets branch on their rare cases instead (an array with a zero
        in every chunk would otherwise run each chunk twice: a dot product of such
        arrays took 2.8-3.2x Numba's time, 1.4x with branches)."""
        if self._superset_held is None:
            self._superset_held = self.alloca(I1, initial=ir.Constant(I1, 0))
        return self._superset_held

    def _loop_header(self, kinds: Sequence, conditional: bool, entry: _LoopState,
                     name: str) -> _LoopState:
        """A loop header reached from the current block with `entry`: phis of the
        counter, the condition (if `conditional`) and the carried values."""
        b = self.b
        pred = b.block
        header = self.fn.append_basic_block(name)
        b.branch(header)
        b.position_at_end(header)
        state = _LoopState(b.phi(I64, name="i"), b.phi(I1) if conditional else None,
                           [NValue(k, tuple(b.phi(t) for t in k.components())) for k in kinds],
                           header)
        state.add_incoming(pred, entry, kinds)
        return state

    def _next_state(self, loop: LoopParts, counter: ir.Value) -> _LoopState:
        """The state at the back-edge, after a pass."""
        return _LoopState(self.b.add(counter, ir.Constant(I64, 1)),
                          self.values[loop.next_cond].value,
                          [self.values[v] for v in loop.carried_next])

    def _loop_test(self, loop: LoopParts, counted: bool, conditional: bool,
                   cond: ir.Value | None, counter: ir.Value | None) -> ir.Value:
        """Whether a pass of the loop runs: its condition, and the counter below the trip
        count."""
        go = cond if conditional else ir.Constant(I1, 1)
        if counted:
            below = self.b.icmp_signed("<", counter, self.values[loop.max_trip_count].value)
            go = self.b.and_(go, below)
        return go

    def _emit_pass(self, loop: LoopParts, counted: bool, counter: ir.Value,
                   carried: Sequence[NValue]) -> None:
        """The body once, for this counter and these carried values."""
        self.values[loop.counter] = NValue(PY_INT, (counter,) if counted else
                                           (ir.Constant(I64, ir.Undefined),))
        for param, value in zip(loop.params, carried):
            self.values[param] = value
        self.emit_block(loop.node.blocks[0])

    def _budget(self) -> ir.Value:
        """The function's budget of back-edges before the next interrupt check (always
        at least 1 where a loop reads it: a charge that spends it checks and refills)."""
        if self._interrupt_budget is None:
            self._interrupt_budget = self.alloca(
                I64, initial=ir.Constant(I64, INTERRUPT_CHECK_INTERVAL))
        return self._interrupt_budget

    def _charge_back_edges(self, count: ir.Value, loop_node: Node) -> None:
        """`count` back-edges ran (no more than the budget): where they spend it, let
        Python handle pending signals (see the module docstring), and refill it."""
        b = self.b
        left = b.sub(b.load(self._budget(), typ=I64), count)
        b.store(left, self._budget())
        check_bb, go_on = (self.fn.append_basic_block(n) for n in ("signals", "no_signal"))
        b.cbranch(b.icmp_signed("<=", left, ir.Constant(I64, 0)), check_bb, go_on
                  ).set_weights([1, INTERRUPT_CHECK_INTERVAL])
        b.position_at_end(check_bb)
        if self.int_ranges.counts_back_edges:      # counters are bounded by back-edges
            self.bailouts.give_up_at_call(BACK_EDGE_LIMIT // INTERRUPT_CHECK_INTERVAL, Rerun(
                f"after {BACK_EDGE_LIMIT} loop iterations, a counter might need more than "
                "64 bits", loop_node, OverflowError))
        b.store(ir.Constant(I64, INTERRUPT_CHECK_INTERVAL), self._budget())
        check = cpython.declare(self.module, "PyErr_CheckSignals")
        check.attributes.add("cold")  # keeps the loop's values out of its way (registers)
        raised = b.icmp_signed("!=", b.call(check, []), ir.Constant(I32, 0))
        b.cbranch(raised, self.fail_block, go_on).set_weights([1, 1000])
        b.position_at_end(go_on)


_SUPERSET_EVENT_OPS = frozenset({"prim::pow"} | {f"aten::{prefix}{op}" for prefix in ("", "i")
                                                  for op in ("mul", "truediv", "div", "pow")})


class _LoopState:
    """A loop's counter, condition (None: always true) and carried values at one point;
    at a header, phis (and the header block)."""

    def __init__(self, counter: ir.Value, cond: ir.Value | None, carried: list[NValue],
                 header: ir.Block | None = None):
        self.counter, self.cond, self.carried, self.header = counter, cond, carried, header

    def as_values(self) -> _LoopState:
        return _LoopState(self.counter, self.cond, self.carried)

    def add_incoming(self, block: ir.Block, arriving: _LoopState, kinds: Sequence) -> None:
        """The header's phis take `arriving`'s values from `block`."""
        self.counter.add_incoming(arriving.counter, block)
        if self.cond is not None:
            self.cond.add_incoming(arriving.cond, block)
        for phi_value, value, kind in zip(self.carried, arriving.carried, kinds):
            for phi, part in zip(phi_value.parts, coerce(value, kind)):
                phi.add_incoming(part, block)
