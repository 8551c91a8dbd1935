"""Ranges of a native region's Python ints: which int operations cannot leave int64.

Native code computes Python's ints in 64 bits and tests every result that may need more
(codegen/scalar: the region then runs again in the interpreter).  Most ints of a hot loop
cannot: a `range()` index lies between its start and stop, `i % 7` between 0 and 6, and
a counter that starts at 0 and grows by 1 per iteration needs 2**63 iterations to
overflow.  This analysis gives each int an interval that holds on every run in which no
test has failed yet (values computed after a failed test may be anything; native code
gives up before anything observable sees them), and so tells the code generator which
tests it may leave out, and how to make the others (`IntRanges.test_for`).

Intervals are those of abstract interpretation: an operation's result interval from its
operands' (exact, Python's unbounded ints; a tested result is clamped to int64, since a
result beyond makes the region give up), loops iterated to a fixed point with widening
to int64.  An affine chain (`3 * x + 1`: additions, subtractions and products with
constants, negations) is tested once, at its end, as a bound on x: its inner results,
which only the chain uses, need no test, since wrapped arithmetic is exact modulo 2**64
(only the end's value must lie in int64), and that bound is one compare where x's own
interval already satisfies the other.

Counters need one more argument, since their interval grows with every iteration.  A
*web* is a set of ints tied by loop-carried values (initial, carried, next, result), the
arms and results of `if`s, and additions of constants (`n += 1`).  A web whose every value
is either made that way from another of its values or is an *entry* (anything else: a
constant, an operation's result) can only move away from its entries by its constant
steps, each taken at most once between two loop back-edges (a stretch without a
back-edge runs each node at most once; a node inside d loops may be emitted 2**d times,
peeled passes being copies).  So, after at most BACK_EDGE_LIMIT back-edges, every value of
the web lies within its entries' interval widened by (BACK_EDGE_LIMIT + 1) times its steps.
Native code that relies on such a bound counts back-edges and gives up beyond the limit
(the emitter's interrupt check: 2**56 back-edges take years).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..interpreter.control import LoopParts
from ..ir.graph import Block, Graph, Node, Value

Interval = tuple[int, int]
INT64: Interval = (-2 ** 63, 2 ** 63 - 1)
BACK_EDGE_LIMIT = 2 ** 56
# A result's bounds are clamped here (powers get large): an operand's interval lies in
# int64 (a tested result is clamped to it), so only the test of the result looks at them.
_BIG = 2 ** 130
_GROWTHS_BEFORE_WIDENING = 3
_MAX_PASSES = 64            # a safety bound: the widening makes the passes settle long before
_COPIES = ("aten::annotate", "prim::unchecked_cast")
_STEPS = {"aten::add": 1, "aten::iadd": 1, "aten::sub": -1, "aten::isub": -1}
_AUGMENTED = {f"aten::i{op}": f"aten::{op}" for op in (
    "add", "sub", "mul", "floordiv", "mod", "pow", "lshift", "rshift", "and", "or", "xor")}


@dataclass(frozen=True)
class RangeTest:
    """The test that an int operation's Python result lies in int64: `root` (an int the
    operation's result is an affine function of) within [low, high], a None bound being
    one that needs no test; or, where `root` is None, the operation's own test."""

    root: Value | None = None
    low: int | None = None
    high: int | None = None


class IntRanges:
    """The result of `int_ranges`: which int operations need a test, and which."""

    def __init__(self, tests: dict[Node, RangeTest | None], counts_back_edges: bool,
                 ranges: dict[Value, Interval] | None = None):
        self._tests = tests
        self._ranges = ranges or {}
        # whether a result relies on the region running at most BACK_EDGE_LIMIT loop
        # back-edges: native code must then give up past that many
        self.counts_back_edges = counts_back_edges

    def interval(self, value: Value) -> Interval | None:
        """The int `value`'s interval (as non_negative's), or None where unknown."""
        return self._ranges.get(value)

    def non_negative(self, value: Value) -> bool:
        """Whether the int `value` is >= 0 (in every run in which no test has failed yet:
        a value computed after a failed test is never seen, native code gives up)."""
        interval = self.interval(value)
        return interval is not None and interval[0] >= 0

    def test_for(self, node: Node) -> RangeTest | None:
        """How to test that `node`'s int result stays in int64; None: it needs no test
        (it always does, or it is only an operand of a later affine operation, whose
        test covers it: wrapped arithmetic is exact modulo 2**64)."""
        return self._tests.get(node, RangeTest())


def int_ranges(graph: Graph, python_int: Callable[[Value], bool]) -> IntRanges:
    """The tests `graph`'s int operations need (a native region's; `python_int(v)`:
    whether v always holds a Python int or bool, and not a NumPy integer)."""
    return _Analysis(graph, python_int).run()


def _within(inner: Interval, outer: Interval) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def _hull(a: Interval | None, b: Interval | None) -> Interval | None:
    if a is None or b is None:
        return a if b is None else b
    return min(a[0], b[0]), max(a[1], b[1])


def _clamp(interval: Interval, bounds: Interval) -> Interval:
    return max(interval[0], bounds[0]), min(interval[1], bounds[1])


def _span(values: list[int]) -> Interval:
    return max(min(values), -_BIG), min(max(values), _BIG)


class _Web:
    """Values tied by carried values, if arms and constant steps (the module docstring)."""

    __slots__ = ("up", "down", "entries", "bounds")

    def __init__(self) -> None:
        self.up = self.down = 0           # the steps' sums, weighted by their copies
        self.entries: list[Value] = []
        self.bounds: Interval | None = None   # every value's, when the web is bounded


class _Analysis:
    def __init__(self, graph: Graph, python_int: Callable[[Value], bool]):
        self.graph = graph
        self.python_int = python_int
        self.ranges: dict[Value, Interval] = {}     # what a value holds (Python's int)
        self.exact: dict[Node, Interval] = {}       # an operation's Python result
        self.growths: dict[Value, int] = {}
        self.changed = False
        self.parent: dict[Value, Value] = {}
        self.webs: dict[Value, _Web] = {}
        self.affine: dict[Value, tuple[int, int, Value]] = {}  # v = a * root + b
        self.inner: set[Value] = set()        # affine results only an affine op uses
        self.entries: set[Value] = set()      # the webs' entries

    # ------------------------------------------------------------------ driver
    def run(self) -> IntRanges:
        self._find_affine()
        self._find_webs()
        for v in self.graph.inputs:
            self.put(v, INT64)
        for _ in range(_MAX_PASSES):
            self._bound_webs()
            self.changed = False
            self._block(self.graph.block)
            if not self.changed:
                counts = any(w.bounds is not None and (w.up or w.down)
                             for w in self.webs.values())
                return IntRanges(self._tests(), counts, self.ranges)
        return IntRanges({}, False)

    def _tests(self) -> dict[Node, RangeTest | None]:
        tests: dict[Node, RangeTest | None] = {}
        for node in self.graph.nodes():
            out = node.outputs[0] if len(node.outputs) == 1 else None
            if out is None or not self.python_int(out):
                continue
            if out in self.inner:
                tests[node] = None
            elif node in self.exact and _within(self.exact[node], INT64):
                tests[node] = None
            elif out in self.affine:
                tests[node] = self._affine_test(*self.affine[out])
        return tests

    def _affine_test(self, a: int, b: int, root: Value) -> RangeTest | None:
        """a * root + b lies in int64 where root lies in [low, high]: test the bounds that
        root's own interval does not already satisfy."""
        low, high = (-((b - INT64[0]) // a), (INT64[1] - b) // a) if a > 0 else \
            (-((INT64[1] - b) // -a), (b - INT64[0]) // -a)
        known = self.ranges.get(root, INT64)
        return RangeTest(root, low if known[0] < low else None,
                         high if known[1] > high else None)

    # ------------------------------------------------------------------ affine chains
    def _affine_step(self, node: Node) -> tuple[Value, int, int] | None:
        """(x, a, b) where `node` computes a * x + b of an int x and constants."""
        kind = _AUGMENTED.get(node.kind, node.kind)
        if len(node.outputs) != 1 or not self.python_int(node.outputs[0]):
            return None
        if kind == "aten::neg":
            x = node.inputs[0]
            return (x, -1, 0) if self.python_int(x) else None
        if kind not in ("aten::add", "aten::sub", "aten::mul") or len(node.inputs) != 2:
            return None
        (x, y), (cx, cy) = node.inputs, (_int_constant(v) for v in node.inputs)
        if cy is None and cx is None or not self.python_int(x if cy is not None else y) \
                or kind == "aten::mul" and 0 in (cx, cy):
            return None
        if cy is not None:
            return x, *{"aten::add": (1, cy), "aten::sub": (1, -cy), "aten::mul": (cy, 0)}[kind]
        return y, *{"aten::add": (1, cx), "aten::sub": (-1, cx), "aten::mul": (cx, 0)}[kind]

    def _find_affine(self) -> None:
        """Each affine operation's result as a * root + b, through the operands that only
        it uses (which then need no test of their own)."""
        steps = {}
        for node in self.graph.nodes():
            step = self._affine_step(node)
            if step is not None:
                steps[node.outputs[0]] = step
        for x, _, _ in steps.values():
            if len(x.uses) == 1 and x in steps:
                self.inner.add(x)
        for node in self.graph.nodes():          # program order: operands come first
            out = node.outputs[0] if len(node.outputs) == 1 else None
            if out in steps:
                x, a, b = steps[out]
                xa, xb, root = self.affine[x] if x in self.inner else (1, 0, x)
                self.affine[out] = (a * xa, a * xb + b, root)

    # ------------------------------------------------------------------ webs
    def _root(self, v: Value) -> Value:
        while self.parent.get(v, v) is not v:
            v = self.parent[v]
        return v

    def _tie(self, made: Value, sources: list[Value], internal: set[Value]) -> None:
        """`made` takes its value from one of `sources`: one web, `made` not an entry."""
        if all(self.python_int(v) for v in (made, *sources)):
            for v in sources:
                ra, rb = self._root(made), self._root(v)
                if ra is not rb:
                    self.parent[ra] = rb
            self.parent.setdefault(made, made)
            internal.add(made)

    def _step_of(self, node: Node) -> tuple[Value, int] | None:
        """(x, c) where `node` is x + c (or x - c) of a constant c; else None."""
        sign = _STEPS.get(node.kind)
        if sign is None or len(node.inputs) != 2:
            return None
        a, b = node.inputs
        if _int_constant(b) is not None:
            return a, sign * _int_constant(b)
        if sign > 0 and _int_constant(a) is not None:
            return b, _int_constant(a)
        return None

    def _find_webs(self) -> None:
        internal: set[Value] = set()
        steps: list[tuple[Value, int, int]] = []      # (member, step, copies)
        for node, depth in _walk(self.graph.block, 0):
            if node.kind == "prim::Loop":
                loop = LoopParts(node)
                for first, param, following, out in zip(loop.initial, loop.params,
                                                         loop.carried_next, node.outputs):
                    self._tie(param, [first, following], internal)
                    self._tie(out, [param, first], internal)
            elif node.kind == "prim::If":
                for k, out in enumerate(node.outputs):
                    self._tie(out, [block.outputs[k] for block in node.blocks], internal)
            elif node.kind in _COPIES:
                self._tie(node.outputs[0], [node.inputs[0]], internal)
            elif _unpacked(node) is not None:
                for out, item in zip(node.outputs, _unpacked(node)):
                    self._tie(out, [item], internal)
            elif self._step_of(node) is not None and not self.inner & {
                    node.outputs[0], self._step_of(node)[0]}:
                source, step = self._step_of(node)
                self._tie(node.outputs[0], [source], internal)
                if node.outputs[0] in internal:
                    steps.append((node.outputs[0], step, 2 ** depth))
        members = set(self.parent) | set(self.parent.values())
        for v in members:
            root = self._root(v)
            web = self.webs.setdefault(root, _Web())
            if v not in internal:
                web.entries.append(v)
                self.entries.add(v)
        for v, step, copies in steps:
            web = self.webs[self._root(v)]
            if step > 0:
                web.up += step * copies
            else:
                web.down -= step * copies

    def _bound_webs(self) -> None:
        """Each web's bounds from its entries' current intervals (None: unbounded)."""
        for web in self.webs.values():
            entries = [self.ranges.get(v) for v in web.entries]
            if not entries or any(e is None for e in entries):
                web.bounds = None
                continue
            low = min(e[0] for e in entries) - web.down * (BACK_EDGE_LIMIT + 1)
            high = max(e[1] for e in entries) + web.up * (BACK_EDGE_LIMIT + 1)
            web.bounds = (low, high) if _within((low, high), INT64) else None

    def _web_bounds(self, v: Value) -> Interval | None:
        web = self.webs.get(self._root(v))
        return None if web is None else web.bounds

    # ------------------------------------------------------------------ values
    def get(self, v: Value) -> Interval | None:
        """v's interval; INT64 for an int that may be a NumPy one, None while unknown."""
        if not self.python_int(v):
            return INT64
        return self.ranges.get(v)

    def put(self, v: Value, interval: Interval | None) -> None:
        if interval is None or not self.python_int(v):
            return
        interval = _clamp(interval, INT64)
        # an entry's interval is its operation's: bounding it by its web's bounds, which
        # come from the entries' own intervals, would let an entry computed from the web
        # (s = s + x) stop growing at its last pass's value
        bounds = None if v in self.entries else self._web_bounds(v)
        if bounds is not None:
            interval = _clamp(interval, bounds)
        old = self.ranges.get(v)
        new = _hull(old, interval)
        if new == old:
            return
        if old is not None:
            self.growths[v] = self.growths.get(v, 0) + 1
            if self.growths[v] > _GROWTHS_BEFORE_WIDENING:
                new = bounds if bounds is not None and _within(new, bounds) else INT64
                if new == old:
                    return
        self.ranges[v] = new
        self.changed = True

    def _result(self, node: Node, interval: Interval | None) -> None:
        """An operation's Python result: kept for the code generator, then stored."""
        if interval is None:
            return
        self.exact[node] = _hull(self.exact.get(node), interval)
        self.put(node.outputs[0], interval)

    # ------------------------------------------------------------------ blocks
    def _block(self, block: Block) -> None:
        for node in block.nodes:
            if node.kind == "prim::If":
                for inner in node.blocks:
                    self._block(inner)
                for k, out in enumerate(node.outputs):
                    self.put(out, _hull(self.get(node.blocks[0].outputs[k]),
                                        self.get(node.blocks[1].outputs[k])))
            elif node.kind == "prim::Loop":
                self._loop(node)
            else:
                self._node(node)

    def _loop(self, node: Node) -> None:
        loop = LoopParts(node)
        trips = self.get(loop.max_trip_count)
        if trips is not None:
            self.put(loop.counter, (0, max(trips[1] - 1, 0)))
        for first, param, following in zip(loop.initial, loop.params, loop.carried_next):
            self.put(param, _hull(self.get(first), self.get(following)))
        self._block(node.blocks[0])
        for param, out in zip(loop.params, node.outputs):
            self.put(out, self.get(param))

    def _node(self, node: Node) -> None:
        ints = [v for v in node.outputs if self.python_int(v)]
        if not ints:
            return
        if node.kind == "prim::Constant":
            value = node.attrs.get("value")
            if type(value) in (int, bool):
                self.put(node.outputs[0], (int(value), int(value)))
            return
        if node.kind in _COPIES:
            self.put(node.outputs[0], self.get(node.inputs[0]))
            return
        if _unpacked(node) is not None:
            for out, item in zip(node.outputs, _unpacked(node)):
                self.put(out, self.get(item))
            return
        if node.outputs[0] in self.affine:
            if node.outputs[0] not in self.inner:     # an inner value has no test of its own
                a, b, root = self.affine[node.outputs[0]]
                known = self.get(root)
                if known is not None:
                    self._result(node, _span([a * known[0] + b, a * known[1] + b]))
            return
        operands = [self.get(v) for v in node.inputs]
        rule = _RULES.get(_AUGMENTED.get(node.kind, node.kind))
        if rule is None or len(ints) != 1 or len(node.outputs) != 1:
            for v in ints:
                self.put(v, INT64)
            return
        if any(o is None for o in operands):
            return                          # an operand not reached yet (a loop's first pass)
        self._result(node, rule(self, node, operands))


def _walk(block: Block, depth: int) -> Iterator[tuple[Node, int]]:
    """Every node with the number of loops around it."""
    for node in block.nodes:
        yield node, depth
        for inner in node.blocks:
            yield from _walk(inner, depth + (node.kind == "prim::Loop"))


def _unpacked(node: Node) -> list[Value] | None:
    """The items a TupleUnpack takes from a TupleConstruct (`a, b = 0, n`), else None."""
    if node.kind != "prim::TupleUnpack" or node.inputs[0].node.kind != "prim::TupleConstruct":
        return None
    return node.inputs[0].node.inputs


def _int_constant(v: Value) -> int | None:
    node = v.node
    if node.kind == "prim::Constant" and type(node.attrs.get("value")) is int:
        return node.attrs["value"]
    return None


# ---------------------------------------------------------------------------- transfer

def _add(an, node, ops):
    (a, b), (c, d) = ops[:2]
    return _span([a + c, b + d])


def _sub(an, node, ops):
    (a, b), (c, d) = ops[:2]
    return _span([a - d, b - c])


def _mul(an, node, ops):
    (a, b), (c, d) = ops[:2]
    return _span([a * c, a * d, b * c, b * d])


def _nonzero_parts(d: Interval) -> list[Interval]:
    """A divisor's interval without 0 (a zero divisor raises), as one or two intervals."""
    parts = []
    if d[0] < 0:
        parts.append((d[0], min(d[1], -1)))
    if d[1] > 0:
        parts.append((max(d[0], 1), d[1]))
    return parts


def _floordiv(an, node, ops):
    x, y = ops[:2]
    quotients = [q for part in _nonzero_parts(y) for q in
                 (x[0] // part[0], x[0] // part[1], x[1] // part[0], x[1] // part[1])]
    return _span(quotients) if quotients else None


def _mod(an, node, ops):
    x, y = ops[:2]
    if y[0] > 0:
        return (x[0], x[1]) if x[0] >= 0 and x[1] < y[0] else (0, y[1] - 1)
    if y[1] < 0:
        return (x[0], x[1]) if x[1] <= 0 and x[0] > y[1] else (y[0] + 1, 0)
    return _span([y[0] + 1, y[1] - 1, 0])


def _lshift(an, node, ops):
    x, k = ops[:2]
    if k[1] < 0:
        return None                          # a negative count raises
    low, high = min(max(k[0], 0), 140), min(k[1], 140)
    return _span([x[0] << low, x[0] << high, x[1] << low, x[1] << high])


def _rshift(an, node, ops):
    x, k = ops[:2]
    if k[1] < 0:
        return None
    low, high = min(max(k[0], 0), 64), min(k[1], 64)
    return _span([x[0] >> low, x[0] >> high, x[1] >> low, x[1] >> high])


def _and(an, node, ops):
    (a, b), (c, d) = ops[:2]
    if a >= 0 or c >= 0:                    # a non-negative operand bounds the result
        return 0, min(hi for lo, hi in ((a, b), (c, d)) if lo >= 0)
    return INT64


def _or_xor(an, node, ops):
    (a, b), (c, d) = ops[:2]
    if a >= 0 and c >= 0:
        return 0, (1 << max(b, d).bit_length()) - 1
    return INT64


def _pow(an, node, ops):
    (a, b), (c, d) = ops[:2]                 # prim::pow's modulus is None here
    if d < 0:
        return None                          # a float: the region runs again
    c = max(c, 0)
    if max(abs(a), abs(b)) <= 1:
        return (-1 if a < 0 else 0), 1
    if d > 140:
        return -_BIG, _BIG
    if a >= 0:
        return _span([a ** c, a ** d, b ** c, b ** d])
    biggest = max(abs(a), abs(b)) ** d
    return _span([-biggest, biggest])


def _neg(an, node, ops):
    ((a, b),) = ops
    return -b, -a


def _pos(an, node, ops):
    return ops[0]


def _abs(an, node, ops):
    ((a, b),) = ops
    if a >= 0:
        return a, b
    if b <= 0:
        return -b, -a
    return 0, max(-a, b)


def _invert(an, node, ops):
    ((a, b),) = ops
    return -b - 1, -a - 1


def _extremum(an, node, ops):
    pick = min if node.kind == "prim::min" else max
    return pick(o[0] for o in ops), pick(o[1] for o in ops)


def _bool(an, node, ops):
    return 0, 1


def _non_negative(an, node, ops):
    return 0, INT64[1]


def _range_length(an, node, ops):
    start, stop, step = ops
    if step[0] > 0:
        return 0, max(0, -(-(stop[1] - start[0]) // step[0]))
    if step[1] < 0:
        return 0, max(0, -(-(start[1] - stop[0]) // -step[1]))
    return 0, INT64[1]


def _derive_index(an, node, ops):
    """start + k * step: between start and the range's stop, when k counts a loop over
    that very range (its trip count is __range_length of the same start and step)."""
    index, start, step = node.inputs
    loop_node = index.node.block.owner if index.node.kind == "prim::Param" else None
    if loop_node is not None and loop_node.kind == "prim::Loop" and \
            index is LoopParts(loop_node).counter:
        trips = loop_node.inputs[0].node
        if trips.kind == "aten::__range_length" and trips.inputs[0] is start and \
                trips.inputs[2] is step:
            stop = an.get(trips.inputs[1])
            s, st = ops[1], ops[2]
            if stop is not None:
                if st[0] > 0:
                    return s[0], max(s[0], stop[1] - 1)
                if st[1] < 0:
                    return min(s[1], stop[0] + 1), s[1]
                return min(s[0], stop[0] + 1), max(s[1], stop[1] - 1)
    k, s, st = ops
    return _span([s[0] + k[0] * st[0], s[0] + k[0] * st[1], s[0] + k[1] * st[0],
                  s[0] + k[1] * st[1], s[1] + k[0] * st[0], s[1] + k[0] * st[1],
                  s[1] + k[1] * st[0], s[1] + k[1] * st[1]])


_RULES: dict[str, Callable[[_Analysis, Node, list[Interval]], Interval | None]] = {
    "aten::add": _add, "aten::sub": _sub, "aten::mul": _mul, "aten::floordiv": _floordiv,
    "aten::mod": _mod, "aten::lshift": _lshift, "aten::rshift": _rshift, "aten::and": _and,
    "aten::or": _or_xor, "aten::xor": _or_xor, "aten::pow": _pow, "prim::pow": _pow,
    "aten::neg": _neg, "aten::pos": _pos, "prim::abs": _abs, "aten::invert": _invert,
    "prim::min": _extremum, "prim::max": _extremum,
    "aten::__range_length": _range_length, "aten::__derive_index": _derive_index,
    "aten::len": _non_negative,
    **{f"aten::{op}": _bool for op in ("eq", "ne", "lt", "le", "gt", "ge", "__not__", "Bool",
                                        "__is__", "__isnot__")},
}
