"""Array element accesses of a chunked loop (loops.py) whose bounds checks a chunk can
leave out: an index that moves with the loop's counter in steps of a fixed size reaches
its extremes at the chunk's first and last pass, so one test of both ends before the
chunk covers every pass in between.

An access qualifies when its array comes from outside the loop and each index component
is an int that is either defined outside the loop or an affine function of the counter:
the counter, a range() index (`start + counter * step`), or such a value plus or minus a
value from outside (`i + 1`, `j - k`).  Where every qualifying access lies within its
array at both ends (and, for an index that moves along the last axis, that axis is
contiguous: its stride is the item size), the chunk runs a version of the body without
those checks, whose addresses use the item size as the last stride (a constant, which
LLVM can vectorize over); otherwise it runs the body as written, whose checks raise
NumPy's IndexError at the very pass eager Python raises it, after the same writes.  An
access under an `if` counts as if it ran: where it would be out of bounds at an end the
chunk merely runs as written.  The ends are computed in 128 bits, so an index
expression that would overflow int64 fails the test instead of wrapping.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...interpreter.control import LoopParts
from ...ir.graph import Node, Value
from .arith import any_of, const
from .ntypes import I1, I64, PY_INT, Array

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

I128 = ir.IntType(128)
_ACCESSES = ("aten::__getitem__", "aten::__setitem__")
# An affine form: (scale, terms) for scale * counter + sum(sign * term); scale 0 for a
# value that does not move with the counter, else 1 or the range's step (a Value).
Affine = tuple[int | Value, list[tuple[int, Value]]]


class ElementAccesses:
    """The qualifying accesses of one loop (see the module docstring)."""

    def __init__(self, em: FunctionEmitter, loop: LoopParts):
        self.em, self.loop = em, loop
        # node -> whether its last index component moves with the counter
        self.fast: dict[Node, bool] = {}
        # the other accesses of arrays from outside the loop (`counts[values[i]]`): they
        # keep their bounds checks, and where the chunk's test holds their array's last
        # axis is contiguous (a constant item size saves a multiply per access: a
        # bincount was 1.9-2.2x Numba's time with it, 1.2-1.5x without)
        self.contiguous: frozenset[Node] = frozenset()
        self._forms: dict[Node, list[Affine]] = {}
        for node in loop.node.blocks[0].walk():
            if node.kind not in _ACCESSES or not isinstance(em.kinds.get(node.inputs[0]), Array) \
                    or self._inside(node.inputs[0]):
                continue
            index = node.inputs[1]
            parts = index.node.inputs if index.node.kind == "prim::TupleConstruct" \
                else [index]
            forms = [self._affine(v) for v in parts]
            if all(f is not None for f in forms):
                self._forms[node] = forms
                self.fast[node] = forms[-1][0] != 0
            elif em.kinds[node.inputs[0]].rank > 0:
                self.contiguous |= {node}

    def hold(self, first: ir.Value, last: ir.Value) -> ir.Value:
        """Whether every qualifying access lies within its array at counters `first` and
        `last`, with a contiguous last axis where its index moves, and the `contiguous`
        ones' arrays have one (emitted where the chunk starts)."""
        b, tests = self.em.b, []
        for node, forms in self._forms.items():
            array = self.em.values[node.inputs[0]]
            rank = array.kind.rank
            for form, size in zip(forms, array.parts[2:2 + rank]):
                for counter in ((first, last) if form[0] != 0 else (first,)):
                    index = self._evaluate(form, counter)
                    tests.append(b.or_(b.icmp_signed("<", index, const(I128, 0)),
                                       b.icmp_signed(">=", index, b.sext(size, I128))))
            if self.fast[node]:
                tests.append(self._strided(node))
        tests += [self._strided(node) for node in self.contiguous]
        return b.not_(any_of(b, [const(I1, 0), *tests]))

    def _strided(self, node: Node) -> ir.Value:
        """Whether the last axis of the array `node` accesses is not contiguous."""
        array = self.em.values[node.inputs[0]]
        return self.em.b.icmp_signed("!=", array.parts[-1],
                                     const(I64, array.kind.dtype.itemsize))

    def affine_tests(self) -> dict[Node, tuple[Affine, int | None, int | None]]:
        """The int operations of the loop's body whose overflow test is a range of an
        int affine in the counter (int_ranges' RangeTest on a root: `i * k` tests i):
        node -> (the root's form, low, high).  The root moves monotonically, so where
        it lies within the range at both ends of a chunk the chunk needs no test."""
        found = {}
        for node in self.loop.node.blocks[0].walk():
            test = self.em.int_ranges.test_for(node) if len(node.outputs) == 1 else None
            if test is None or test.root is None:
                continue
            form = self._affine(test.root)
            if form is not None:
                found[node] = (form, test.low, test.high)
        return found

    def tests_hold(self, tests: dict[Node, tuple[Affine, int | None, int | None]],
                   first: ir.Value, last: ir.Value) -> ir.Value:
        """Whether the roots of `tests` lie within their ranges at counters `first` and
        `last` (emitted where the chunk starts)."""
        b, outside = self.em.b, [const(I1, 0)]
        for form, low, high in tests.values():
            for counter in ((first, last) if form[0] != 0 else (first,)):
                root = self._evaluate(form, counter)
                if low is not None:
                    outside.append(b.icmp_signed("<", root, const(I128, low)))
                if high is not None:
                    outside.append(b.icmp_signed(">", root, const(I128, high)))
        return b.not_(any_of(b, outside))

    def _evaluate(self, form: Affine, counter: ir.Value) -> ir.Value:
        b = self.em.b
        scale, terms = form
        total = const(I128, 0)
        if scale != 0:
            step = const(I128, 1) if scale == 1 else b.sext(self.em.values[scale].value, I128)
            total = b.mul(step, b.sext(counter, I128))
        for sign, term in terms:
            value = b.sext(self.em.values[term].value, I128)
            total = b.add(total, value) if sign > 0 else b.sub(total, value)
        return total

    def _inside(self, value: Value) -> bool:
        """Whether `value` is defined inside the loop (its body or deeper)."""
        block = value.node.block
        while block is not None and block.owner is not None:
            if block.owner is self.loop.node:
                return True
            block = block.owner.block
        return False

    def _affine(self, value: Value) -> Affine | None:
        """`value` as an affine form of the counter, or None."""
        if self.em.kinds.get(value) != PY_INT:
            return None
        if value is self.loop.counter:
            return 1, []
        if not self._inside(value):
            return 0, [(1, value)]
        node = value.node
        if node.kind == "aten::__derive_index" and node.inputs[0] is self.loop.counter \
                and not any(self._inside(v) or self.em.kinds.get(v) != PY_INT
                            for v in node.inputs[1:]):
            return node.inputs[2], [(1, node.inputs[1])]
        if node.kind in ("aten::add", "aten::sub") and len(node.inputs) == 2:
            x, y = (self._affine(v) for v in node.inputs)
            if x is None or y is None or (x[0] != 0 and y[0] != 0):
                return None
            if node.kind == "aten::add":
                return (x[0] if x[0] != 0 else y[0]), x[1] + y[1]
            if y[0] != 0:
                return None
            return x[0], x[1] + [(-sign, term) for sign, term in y[1]]
        return None
