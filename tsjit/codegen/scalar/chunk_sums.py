"""Int sums `s += x` in a chunk (loops.py) without an overflow test per pass.

A Python int is exact, so a sum's overflow test only asks whether the value needs more
than 64 bits; a test on every add (`sadd.with.overflow` and a branch, or a gathered
flag) makes each pass depend on the previous one's test and stops LLVM's vectorization
(`s += int(a[i])` was 3x Numba's time).  Two ways out, both per chunk of at most
INTERRUPT_CHECK_INTERVAL passes:

- bounded terms (`s += i & 255`: int_ranges bounds x): a chunk whose entry value of s
  lies 2**16 times x's extreme inside int64 cannot leave it (`bounded_sums`, one compare
  per sum at the chunk's entry);
- any int64 terms, where nothing in the pass but the sum reads s and the chunk has no
  effects (its rare cases gathered, see loops.LoopEmitter._chunk): the chunk adds in
  wrapping arithmetic, which is exact modulo 2**64, beside a second sum of the terms' high
  halves (x >> 32); at the chunk's end those give the exact total in 128 bits, and where
  it lies outside int64 the chunk runs again as written, which takes the rare path at
  eager's pass (`WideSums`).  A value that leaves int64 within a chunk and comes back is
  then no event: nothing observes it, as nothing would in Python.
"""
from __future__ import annotations

from llvmlite import ir

from ...interpreter.control import LoopParts
from ...ir.graph import Node
from .arith import any_of, is_finite
from .ntypes import I1, I64, PY_INT, NumpyScalar

# sum nodes and the sign each gives its second operand
SUM_STEPS = {"aten::add": 1, "aten::iadd": 1, "aten::sub": -1, "aten::isub": -1}
_LARGEST_TERM = 2 ** 40
_I128 = ir.IntType(128)
_HALF = ir.Constant(I64, 32)


def carried_sums(em, loop: LoopParts, numbers=lambda kind: kind == PY_INT) -> dict[Node, int]:
    """The sums `s = s + x` (or `-`) of two numbers of one kind that `numbers` accepts
    (Python ints unless given) run once per pass on a carried s (in the loop's own block,
    not under an `if`): node -> s's carried index."""
    sums = {}
    block = loop.node.blocks[0]
    for k, (param, following) in enumerate(zip(loop.params, loop.carried_next)):
        node = following.node
        if node.block is block and node.kind in SUM_STEPS and node.inputs[0] is param \
                and numbers(em.kinds.get(param)) \
                and em.kinds.get(node.inputs[1]) == em.kinds.get(param):
            sums[node] = k
    return sums


def only_summed(loop: LoopParts, node: Node, k: int) -> bool:
    """Whether nothing in the loop but the sum `node` reads s (carried index k), and the
    sum's value only goes to the next pass."""
    ret = loop.node.blocks[0].return_node
    return loop.params[k].uses == [(node, 0)] and node.outputs[0].uses == [(ret, k + 1)]


def float_sums(em, loop: LoopParts) -> dict[Node, int]:
    """The sums s += x of NumPy floats of one dtype whose s nothing else in the loop reads:
    node -> s's carried index.  Their event test (NumPy warns where the sum is not finite:
    overflow, inf - inf) may wait for the chunk's end, since a sum that is not finite
    stays so: inf or nan plus anything is inf or nan.  A chunk whose final s is not
    finite then runs again as written, and the test comes at eager's pass."""
    return {node: k for node, k in carried_sums(em, loop, _is_numpy_float).items()
            if only_summed(loop, node, k)}


def not_finite(em, sums: dict[Node, int], final: list) -> ir.Value:
    """Whether one of the float `sums` ends a chunk with `final` carried values not
    finite."""
    b = em.b
    return any_of(b, [ir.Constant(I1, 0)] + [b.not_(is_finite(b, final[k].parts[0]))
                                              for k in sums.values()])


def _is_numpy_float(kind) -> bool:
    return isinstance(kind, NumpyScalar) and kind.dtype.kind == "f"


def bounded_sums(em, loop: LoopParts, pass_limit: int) -> dict[Node, tuple[int, tuple[int, int]]]:
    """The carried sums whose term x lies within [-2**40, 2**40] (int_ranges): node -> (s's
    carried index, the most `pass_limit` passes can move s down and up).  A chunk whose
    entry value of s lies that far inside int64 leaves out their overflow tests."""
    sums = {}
    for node, k in carried_sums(em, loop).items():
        term = em.int_ranges.interval(node.inputs[1])
        if term is None or max(abs(term[0]), abs(term[1])) > _LARGEST_TERM:
            continue
        low, high = sorted(SUM_STEPS[node.kind] * t for t in term)
        sums[node] = (k, (min(low, 0) * pass_limit, max(high, 0) * pass_limit))
    return sums


class WideSums:
    """The carried sums of a chunk (not bounded ones) whose s nothing else in the loop
    reads (the sum's only operand use, its result only carried to the next pass): their
    adds wrap, and `beyond` tells at the chunk's end whether an exact total left int64
    (see the module docstring).  Valid for chunks of at most 2**16 passes: the low
    halves' sum then stays below 2**48."""

    def __init__(self, em, loop: LoopParts, bounded: dict[Node, object]):
        self.em = em
        self.sums = {node: k for node, k in carried_sums(em, loop).items()
                     if node not in bounded and only_summed(loop, node, k)}
        self._highs: dict[Node, ir.PhiInstr] = {}

    def start(self, pred: ir.Block) -> None:
        """At the chunk's inner header (entered from `pred`): a sum of the terms' high
        halves per sum, from 0."""
        b = self.em.b
        self._highs = {node: b.phi(I64, name="high_halves") for node in self.sums}
        for phi in self._highs.values():
            phi.add_incoming(ir.Constant(I64, 0), pred)

    def add_pass(self) -> None:
        """After a pass's body: each sum's term's high half joins its sum."""
        b = self.em.b
        for node, phi in self._highs.items():
            term = self.em.values[node.inputs[1]].parts[0]
            phi.add_incoming(b.add(phi, b.ashr(term, _HALF)), b.block)

    def beyond(self, entry: list, final: list) -> ir.Value:
        """At the chunk's exit (from its header): whether some sum's exact value left
        int64, given the carried values at the chunk's entry and at its exit."""
        b = self.em.b
        out = ir.Constant(I1, 0)
        for node, phi in self._highs.items():
            k, sign = self.sums[node], SUM_STEPS[node.kind]
            start, wrapped = entry[k].parts[0], final[k].parts[0]
            terms = b.sub(wrapped, start) if sign > 0 else b.sub(start, wrapped)
            lows = b.sub(terms, b.shl(phi, _HALF))       # in [0, 2**48): exact as unsigned
            total = b.add(b.shl(b.sext(phi, _I128), ir.Constant(_I128, 32)),
                          b.zext(lows, _I128))
            start128 = b.sext(start, _I128)
            exact = b.add(start128, total) if sign > 0 else b.sub(start128, total)
            out = b.or_(out, b.icmp_signed("!=", exact, b.sext(wrapped, _I128)))
        return out
