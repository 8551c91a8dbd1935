"""What the profiling run of loop code pays for (issue 10: it must cost about what the
plain interpreter costs): which values it profiles, how often a profile site records, and
the statements the interpreter runs for `x op= y` and `for k in range(a, b, c)`."""
from __future__ import annotations

import numpy as np
import pytest
from test_element_loops import max_drawdown

import tsjit
from tsjit.executor import profiling
from tsjit.executor.graph_executor import profiled_copy
from tsjit.interpreter import compile_graph


def prefix_sum(x: tsjit.Tensor, out: tsjit.Tensor) -> tsjit.Tensor:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
        out[i] = s
    return out


def row_norms(x: tsjit.Tensor, out: tsjit.Tensor) -> tsjit.Tensor:
    for i in range(x.shape[0]):
        s = 0
        for k in range(x.shape[1]):
            s += x[i, k] * x[i, k]
        out[i] = s ** 0.5
    return out


def extend_twice(a: list[int], b: list[int]) -> list[int]:
    c = a
    a += b
    a += b
    return c


PROGRAMS = {
    "prefix_sum": (prefix_sum, lambda: (np.linspace(0.5, 2.0, 300), np.zeros(300))),
    "max_drawdown": (max_drawdown, lambda: (100.0 + np.cumsum(np.sin(np.arange(300.0))),)),
    "row_norms": (row_norms, lambda: (np.arange(60, dtype=np.float32).reshape(6, 10),
                                      np.zeros(6, np.float32))),
}


def _loop_profiles(graph) -> list[tuple[str, bool]]:
    """(profiled value, whether the loop carries it) for each profile inside an innermost
    loop (once per iteration of an outer one is cheap)."""
    found = []
    for loop in (n for n in graph.nodes() if n.kind == "prim::Loop"):
        if any(n.kind == "prim::Loop" for n in loop.blocks[0].nodes):
            continue
        carried = set(loop.blocks[0].params[1:])
        for node in loop.blocks[0].nodes:
            if node.kind == "prim::profile":
                found.append((node.inputs[0].name, node.inputs[0] in carried))
    return found


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_inside_loops_only_loop_carried_values_are_profiled(name):
    """In an innermost loop, an element read of an array argument, and what is computed
    from it and from the loop-carried values (`s += x[i]`, `drawdown > worst`), follow
    from their types: a profile of theirs would only cost every iteration a test."""
    fn, inputs = PROGRAMS[name]
    found = _loop_profiles(profiled_copy(tsjit.script(fn).graph, inputs()))
    assert found and all(carried for _, carried in found), found


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_each_site_records_a_bounded_number_of_values(name, monkeypatch):
    """The generated code tests the recorder's own budget (bound as the object, not
    copied into the code as a literal), so a site records RECORDS_PER_RUN values per run
    whatever the trip count."""
    fn, inputs = PROGRAMS[name]
    calls = []
    original = profiling.ProfileRecorder.record
    monkeypatch.setattr(profiling.ProfileRecorder, "record",
                        lambda self, value, slot: calls.append(slot) or original(self, value, slot))
    scripted = tsjit.script(fn)
    want = fn(*inputs())
    got = scripted(*inputs())
    np.testing.assert_array_equal(got, want)
    assert scripted.stats()["profiled_runs"] == 1
    assert calls and max(calls.count(slot) for slot in set(calls)) <= profiling.RECORDS_PER_RUN


def test_number_updates_run_as_augmented_statements():
    """`s += x[i]` on a variable of its own is the statement (a third of the cost of the
    `s = _operator.iadd(s, x[i])` call it was); it means the same for every type."""
    source = compile_graph(tsjit.script(prefix_sum).graph).source
    assert "s += " in source and "_operator.iadd" not in source, source


def test_augmented_statements_still_extend_lists_in_place():
    scripted = tsjit.script(extend_twice)
    for call in (extend_twice, scripted, scripted):
        a = [1]
        assert call(a, [2, 3]) == [1, 2, 3, 2, 3] and a == [1, 2, 3, 2, 3]


def stepped_sums(n: int, start: int, step: int) -> list[int]:
    sums: list[int] = []
    for k in range(start, n, step):
        sums.append(k * 2)
    for j in range(n, start, -1):
        sums.append(j)
    return sums


def test_range_loops_bind_their_variable_in_the_for_statement():
    """`for k in range(a, b, c)` runs as that statement, not as a count plus
    `k = a + i * c` per iteration; its values, an empty range, a negative step and a zero
    step's ValueError are Python's."""
    scripted = tsjit.script(stepped_sums)
    source = compile_graph(scripted.graph).source
    assert "for k in range(" in source and "for j in range(" in source, source
    for args in [(10, 2, 3), (10, 10, 1), (3, 9, 2), (-5, 4, -2), (7, -3, 4)]:
        assert scripted(*args) == stepped_sums(*args)
    with pytest.raises(ValueError):
        scripted(5, 1, 0)
