"""The int range analysis (passes/int_ranges.py) and the tests native code leaves out with
it: which int operations of a loop need no overflow test, which are tested on one operand,
and that native code still gives Python's ints on every call where a result does leave
int64 (the profiling call, the optimized calls, after a re-run).
"""
from __future__ import annotations

import itertools

import pytest
from _differential import assert_same
from _native import INT64_MAX, INT64_MIN, check_native, native
from test_native_fuzz import INDEX_USES, RANGES, WIDE_CONSTANTS, load
from test_native_scalar import collatz

import tsjit
from tsjit.codegen.scalar import loops
from tsjit.ir.types import BoolType, IntType
from tsjit.passes.int_ranges import RangeTest, int_ranges


def _tests_by_source(fn) -> dict[str, RangeTest | None]:
    """The test each int operation of fn's graph gets, by the operation's source text."""
    graph = tsjit.script(fn).graph
    ranges = int_ranges(graph, lambda v: v.type in (IntType, BoolType))
    return {node.source.text(): ranges.test_for(node) for node in graph.nodes()
            if node.source and node.kind.startswith("aten::") and len(node.outputs) == 1
            and node.outputs[0].type is IntType}


def test_a_counter_and_an_index_need_no_test_and_an_affine_result_one_compare():
    """total starts at 0 and grows by 1 per iteration: it cannot leave int64 within the
    back-edges native code runs (BACK_EDGE_LIMIT); i lies in [1, n]; x // 2 and x % 2
    cannot overflow; 3 * x + 1 is tested once, on x (x >= 0: the upper bound only), and
    3 * x, which only that addition uses, not at all."""
    tests = _tests_by_source(collatz)
    assert tests["total += 1"] is None
    assert tests["for i in range(1, n + 1):"] is None
    assert tests["x // 2"] is None and tests["x % 2"] is None and tests["3 * x"] is None
    bound = tests["3 * x + 1"]
    assert (bound.root.name, bound.low, bound.high) == ("x", None, (INT64_MAX - 1) // 3)
    assert tests["n + 1"].high == INT64_MAX - 1 and tests["n + 1"].low is None


def ranged(a: int, b: int) -> int:
    s = 0
    for i in range(a, b):
        s = (i + 1) + ((i % 7) * 3 - 1) + (b - i)
    for j in range(b, a, -1):
        s += (j - 1) * 2
    return s


def masked(a: int, n: int) -> int:
    s = 0
    for i in range(n):
        s = (a & 1023) * 4096 + (a % 100) * i - (i >> 3)
    return s


def test_range_indices_masks_and_remainders_are_bounded():
    tests = _tests_by_source(ranged)
    assert tests["i + 1"] is None                   # i < b <= INT64_MAX
    assert tests["(i % 7) * 3 - 1"] is None
    assert tests["b - i"] is not None               # b - a may exceed int64
    assert tests["j - 1"] is None                   # j > a >= INT64_MIN
    assert tests["(j - 1) * 2"] is not None
    tests = _tests_by_source(masked)
    assert tests["(a & 1023) * 4096"] is None and tests["(a % 100) * i"] is not None


def counted_from(start: int, n: int) -> int:
    c = start
    for _ in range(n):
        c += 1
    return c


def big_steps(n: int) -> int:
    c = 0
    for _ in range(n):
        c += 2 ** 60
    return c


def test_a_counter_is_bounded_only_from_a_bounded_start_by_small_steps():
    assert _tests_by_source(counted_from)["c += 1"] is not None
    assert _tests_by_source(big_steps)["c += 2 ** 60"] is not None


# ---------------------------------------------------------------------------- differential


def near_the_top(a: int, b: int, step: int):
    s, t = 0, 0
    for i in range(a, b):
        s = i + 1
        t = i + 2
    for j in range(b, a, -step):
        s = s + (j - b)
    return s, t


def affine_chain(x: int) -> int:
    return (x + INT64_MAX) - INT64_MAX + (x * -3 - 7) * 2


def test_range_loops_at_the_ends_of_int64_give_pythons_ints():
    """i + 1 fits for every i of range(a, b) (no test), i + 2 not at i = INT64_MAX - 1
    (tested: the region runs again)."""
    (region,) = check_native(near_the_top, (INT64_MAX - 3, INT64_MAX, 1), (0, 5, 2),
                             (INT64_MIN, INT64_MIN + 3, 1), (INT64_MAX - 2, INT64_MAX - 1, 3))
    assert region.stats()["reruns"] == 1


def test_an_affine_chain_is_tested_once_on_its_operand():
    """Operations that only feed an affine chain need no test of their own: wrapped
    arithmetic is exact modulo 2**64, so x + INT64_MAX (beyond int64 for x > 0) still
    gives x after - INT64_MAX; only the chain's result is tested, on x."""
    edge = (INT64_MAX - 9) // 6                  # (x * -3 - 7) * 2 == -6 * x - 14
    (region,) = check_native(affine_chain, (5,), (edge,), (-edge - 1,), (edge + 1,),
                             (INT64_MIN,), (INT64_MAX,))
    assert region.stats()["reruns"] == 3
    run, _ = native(affine_chain)
    assert run(edge + 1) == affine_chain(edge + 1)


def always_beyond(x: int) -> int:
    return INT64_MAX * (3 * x + 1) + 1      # 3 * INT64_MAX * x + 2**63: never in int64


def test_an_affine_chain_beyond_int64_at_every_operand_is_tested():
    """The chain's operand range is empty (low 0 > high -1): its one unsigned compare
    must fail everywhere, not wrap to hold everywhere (it gave -2**63 for 2**63 at 0,
    as found by test_native_fuzz)."""
    (region,) = check_native(always_beyond, (0,), (-1,), (1,), (INT64_MIN,))
    assert region.stats()["reruns"] == 4


def loop_with_counter(n: int, a: int) -> tuple[int, int]:
    c, d = 0, a
    for i in range(n):
        c += 3
        d = d * 3 + 1 if i % 2 == 0 else d - 5
    return c, d


def test_every_call_gives_pythons_int_where_a_tested_value_leaves_int64():
    """The profiling call (interpreter), the optimized calls (native) and the calls after
    a re-run all give eager Python's ints."""
    scripted = tsjit.script(loop_with_counter)
    for args in [(50, 1), (50, 1), (80, 1), (60, 2 ** 40), (5, -(2 ** 62)), (50, 1),
                 (1000, 0)]:
        assert_same(scripted(*args), loop_with_counter(*args))
    assert scripted.stats()["kernel_launches"] >= 5


def test_native_code_gives_up_after_the_back_edges_that_bound_a_counter(monkeypatch):
    """A counter is bounded by the number of loop back-edges native code may run; past
    that number (here made small) it gives up, and the interpreter finishes the call."""
    monkeypatch.setattr(loops, "BACK_EDGE_LIMIT", 3 * loops.INTERRUPT_CHECK_INTERVAL)
    (region,) = check_native(counted_from_zero, (10,), (3 * 65536 - 1,), (3 * 65536 + 5,))
    assert region.stats()["reruns"] == 1
    (region,) = check_native(no_counter, (3 * 65536 + 5, 7))        # no counter, no limit
    assert region.stats()["reruns"] == 0


def counted_from_zero(n: int) -> int:
    c = 0
    for _ in range(n):
        c += 1
    return c


def no_counter(n: int, a: int) -> int:
    x = a
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x


@pytest.mark.parametrize("args", [(INT64_MAX,), (INT64_MAX - 1,), (INT64_MIN,), (0,)])
def test_a_range_to_the_largest_int(args):
    check_native(range_to, args)


def range_to(n: int) -> int:
    s = 0
    for i in range(n - 2, n):
        s = i + 1
    return s


# ---------------------------------------------------------------------------- sweeps
# Where the analysis leaves a test out, a wrong interval gives a wrapped int: each sweep
# runs every form at arguments by the ends of int64 against eager Python.
EDGES = [INT64_MIN, INT64_MIN + 1, INT64_MIN + 2, INT64_MIN + 5, -7, -1, 0, 3,
         INT64_MAX - 5, INT64_MAX - 2, INT64_MAX - 1, INT64_MAX]


@pytest.mark.parametrize("loop", RANGES)
def test_every_use_of_a_range_index_at_the_ends_of_int64(loop):
    """Each use's values of every pass, xor-ed (a wrapped one changes the result)."""
    names = [f"h{n}" for n in range(len(INDEX_USES))]
    uses = "".join(f"        {h} ^= k {use}\n" for h, use in zip(names, INDEX_USES))
    fn = load(f"def fuzzed(a: int, b: int, c: int):\n    {' = '.join(names)} = 0\n"
              f"    for k in {loop}:\n{uses}    return {', '.join(names)}\n")
    check_native(fn, *itertools.product(EDGES, EDGES, (-3, 4)))


AFFINE_EDGES = EDGES + [(INT64_MAX - 1) // 3, (INT64_MAX - 1) // 3 + 1, -(2 ** 62) - 1,
                        2 ** 62, 3 ** 39, -(3 ** 39)]


def test_every_affine_form_at_the_ends_of_its_operands_range():
    """c1 * x + c2 and c1 * (x + c2) - c1 of every pair of constants: each is tested once,
    on x, against the exact bounds that keep its result in int64."""
    forms = [f"{c1} * x {sign} {c2}" for c1, c2 in itertools.product(WIDE_CONSTANTS, repeat=2)
             for sign in "+-"] + [f"{c1} * (x + {c2}) - {c1}" for c1, c2 in
                                  itertools.product(WIDE_CONSTANTS, repeat=2)]
    edges = AFFINE_EDGES + [bound for c1, c2 in itertools.product(WIDE_CONSTANTS, repeat=2)
                            for bound in _affine_bounds(int(c1), int(c2))]
    fn = load("def fuzzed(x: int):\n    return (" + ", ".join(forms) + ",)\n")
    check_native(fn, *[(x,) for x in edges])


def _affine_bounds(a: int, b: int) -> list[int]:
    """The x at which a * x + b leaves int64, and their neighbours."""
    low, high = sorted((-((b - INT64_MIN) // a), (INT64_MAX - b) // a) if a > 0 else
                       (-((INT64_MAX - b) // -a), (b - INT64_MIN) // -a))
    return [v for v in (low - 1, low, high, high + 1) if INT64_MIN <= v <= INT64_MAX]


def counters(n: int, a: int):
    up, down, both, steps = 0, 0, 0, a % 5
    for i in range(n):
        up += 1
        down -= 3
        if i % 3 == 0:
            both += 2
        else:
            both -= 1
        j = 0
        while j < steps:
            up += 2
            j += 1
    return up, down, both, up - down, (up + 1) * 3


def test_counters_from_bounded_starts():
    check_native(counters, *itertools.product([0, 1, 7, 1000], [0, 3, INT64_MAX, INT64_MIN]))
    tests = _tests_by_source(counters)
    assert tests["up += 1"] is None and tests["down -= 3"] is None
    assert tests["both += 2"] is None and tests["up += 2"] is None


def sum_of_remainders(n: int, seed: int) -> int:
    x = seed
    s = 0
    for _ in range(n):
        x = (x * 5 + 1) % 1152921504606846976
        s += x
    return s


def test_a_sum_of_bounded_terms_is_tested():
    """s += x with x in [0, 2**60): s is an entry of its web computed from the web
    itself; bounded by its previous pass's interval it stopped growing, the sum went
    untested and wrapped (its 17th term leaves int64)."""
    ranges = _tests_by_source(sum_of_remainders)
    assert ranges["s += x"] is not None
    check_native(sum_of_remainders, (40, 12345), (3, 7), (0, 1))
