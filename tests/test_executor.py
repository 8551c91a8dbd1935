"""The profiling executor through `tsjit.script`: results indistinguishable from NumPy on
profiling, optimized and bailed-out calls; guards that re-specialize within a budget;
the switches; graph_for / inspect_llvm / inspect_asm / stats; logging."""
from __future__ import annotations

import logging

import numpy as np
import pytest
from _differential import assert_same

import tsjit
from tsjit.executor.graph_executor import MAX_SPECIALIZATION_DEPTH
from tsjit.testing.filecheck import FileCheck

RNG = np.random.default_rng(7)
F32 = "Tensor(dtype=float32, sizes=[*], ndarray=1)"


def ulps(got: np.ndarray, want: np.ndarray) -> int:
    """The largest distance in units in the last place (NaN must match NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    ints = {4: np.int32, 8: np.int64}[want.dtype.itemsize]
    a, b = (v[finite].view(ints).astype(np.int64) for v in (got, want))
    a = np.where(a < 0, np.iinfo(ints).min - a, a)
    b = np.where(b < 0, np.iinfo(ints).min - b, b)
    return int(np.abs(a - b).max(initial=0))


def triad(a: float, x: tsjit.Tensor, y: tsjit.Tensor):
    return a * x + y


def gelu(x: tsjit.Tensor):
    return 0.5 * x * (1.0 + np.tanh(0.79788456 * (x + 0.044715 * x**3)))


def lstm_cell(gates: tsjit.Tensor, cx: tsjit.Tensor):
    h = cx.shape[1]
    i = 1.0 / (1.0 + np.exp(-gates[:, :h]))
    f = 1.0 / (1.0 + np.exp(-gates[:, h:2 * h]))
    g = np.tanh(gates[:, 2 * h:3 * h])
    o = 1.0 / (1.0 + np.exp(-gates[:, 3 * h:]))
    cy = f * cx + i * g
    hy = o * np.tanh(cy)
    return hy, cy


def scale_in_place(x: tsjit.Tensor, y: tsjit.Tensor):
    x += np.abs(y) * 2.0   # one op that may report an error reads x (fp_errors)
    return x


def triad_into(a: float, x: tsjit.Tensor, y: tsjit.Tensor, out: tsjit.Tensor):
    out[:] = a * x + y
    return out


def calls(fn, *args, n: int = 3):
    scripted = tsjit.script(fn)
    results = [scripted(*args) for _ in range(n)]
    return scripted, results


pytestmark = pytest.mark.usefixtures("default_settings")


def test_the_first_call_is_specialized_from_its_arguments():
    x, y = RNG.standard_normal((2, 1000)).astype(np.float32)
    scripted, results = calls(triad, 2.5, x, y)
    for result in results:
        assert_same(result, triad(2.5, x, y))
    assert scripted.stats() == {"calls": 3, "profiled_runs": 1, "interpreted_runs": 0,
                                "background_compiles": 0, "specializations": 1,
                                "guard_failures": 0, "bailouts": 0, "kernel_launches": 3,
                                "kernels_compiled": 1}


def shifted(x: tsjit.Tensor):
    return x[1:] * 2.0 + 1.0      # x[1:]'s type is only known from a profiling run


def test_a_profiling_run_finds_what_the_arguments_do_not_tell():
    x = np.arange(10, dtype=np.float32)
    scripted, results = calls(shifted, x)
    for result in results:
        assert_same(result, shifted(x))
    stats = scripted.stats()
    assert stats["profiled_runs"] == 1 and stats["kernel_launches"] == 2


def transcendentals(x: tsjit.Tensor):
    return np.exp(x * 0.5), np.tanh(x * 2.0), np.log1p(np.abs(x) * 4.0), np.sqrt(x * x)


def test_transcendentals_stay_within_four_ulps_and_the_rest_is_exact():
    x = np.concatenate([RNG.standard_normal(5000) * 8, [0.0, -0.0, np.inf, -np.inf, np.nan,
                                                        1e-40, 60.0, -60.0, 100.0, -100.0]])
    for dtype in (np.float32, np.float64):
        xd = x.astype(dtype)
        scripted, results = calls(transcendentals, xd)
        assert scripted.stats()["kernel_launches"] == 3
        for result in results:
            exp, tanh, log1p, sqrt = result
            want = transcendentals(xd)
            assert max(ulps(exp, want[0]), ulps(tanh, want[1]), ulps(log1p, want[2])) <= 4
            assert_same(sqrt, want[3])


def test_gelu_matches_numpy():
    x = np.linspace(-4, 4, 1001)
    for dtype in (np.float32, np.float64):
        scripted, results = calls(gelu, x.astype(dtype))
        for result in results:
            # 1 + tanh(z) cancels for negative x: compare as the conformance suite does
            np.testing.assert_allclose(result, gelu(x.astype(dtype)), rtol=1e-5, atol=1e-6)
            assert result.dtype == dtype


def test_several_outputs_from_strided_views():
    gates = RNG.standard_normal((8, 4 * 33)).astype(np.float32)
    cx = RNG.standard_normal((8, 33)).astype(np.float32)
    scripted, results = calls(lstm_cell, gates, cx)
    hy, cy = lstm_cell(gates, cx)
    for got_hy, got_cy in results:
        for got, want in ((got_hy, hy), (got_cy, cy)):   # sums of rounded terms: not in ulps
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert scripted.stats()["kernel_launches"] == 2
    FileCheck().check_count("prim::FusionGroup_", 1, exactly=True).check("with") \
        .run(str(scripted.graph_for(gates, cx)).split("\nwith ")[0] + "\nwith")


def test_in_place_writes_the_callers_array_and_returns_it():
    scripted = tsjit.script(scale_in_place)
    for layout in (lambda a: a, np.asfortranarray, lambda a: a.T, lambda a: a[:, ::2]):
        for _ in range(2):
            mine, theirs, y = (layout(np.arange(24.0).reshape(4, 6)) for _ in range(3))
            result = scripted(mine, y)
            assert result is mine
            assert_same(mine, scale_in_place(theirs, y))
    assert scripted.stats()["kernel_launches"] >= 6


def test_assignment_into_an_existing_array():
    x, y = RNG.standard_normal((2, 100)).astype(np.float32)
    scripted = tsjit.script(triad_into)
    for _ in range(3):
        out, expected = np.empty(100), np.empty(100)
        assert scripted(1.5, x, y, out) is out
        assert_same(out, triad_into(1.5, x, y, expected))
    assert scripted.stats()["kernel_launches"] == 3


def test_read_only_target_raises_like_numpy_and_later_calls_work():
    scripted = tsjit.script(scale_in_place)
    scripted(np.ones(5), np.ones(5))
    frozen = np.ones(5)
    frozen.setflags(write=False)
    with pytest.raises(ValueError):
        scripted(frozen, np.ones(5))
    assert_same(scripted(np.ones(5), np.ones(5)), scale_in_place(np.ones(5), np.ones(5)))
    assert scripted.stats()["bailouts"] == 1 and scripted.stats()["calls"] == 3


def test_overlapping_in_place_operands_read_the_old_values():
    def add_into(x: tsjit.Tensor, y: tsjit.Tensor):
        x += y * 2.0
        return x

    scripted = tsjit.script(add_into)
    for _ in range(3):
        mine, theirs = np.arange(9.0), np.arange(9.0)
        scripted(mine[1:], mine[:-1])
        add_into(theirs[1:], theirs[:-1])
        assert_same(mine, theirs)
    assert scripted.stats()["kernel_launches"] == 3


def test_shapes_numpy_broadcasts_but_one_iteration_space_cannot_bail_out():
    def two(x: tsjit.Tensor, y: tsjit.Tensor, z: tsjit.Tensor):
        return x * y, np.exp(x) * z     # one kernel: x read once

    scripted = tsjit.script(two)
    args = np.ones(4), np.ones(4), np.ones(4)
    scripted(*args)
    scripted(*args)
    assert "prim::FusionGroup_1" not in str(scripted.graph_for(*args))
    odd = np.full(1, 0.5), np.ones(3), np.ones(5)     # NumPy: shapes (3,) and (5,)
    assert_same(scripted(*odd), two(*odd))
    smaller = np.full(1, 0.5), np.ones(3), np.ones(1)   # (3,) and (1,), not (3,) twice
    assert_same(scripted(*smaller), two(*smaller))
    with pytest.raises(ValueError):
        scripted(np.ones(3), np.ones(3), np.ones(2))
    stats = scripted.stats()
    assert stats["kernel_launches"] == 2 and stats["bailouts"] == 3


def affine(x: tsjit.Tensor):
    return np.sqrt(np.abs(x)) * 0.5 - 1.0


def test_alternating_types_keep_one_kernel_each():
    scripted = tsjit.script(affine)
    inputs = [np.linspace(-3, 3, 11, dtype=np.float32), np.linspace(-3, 3, 11),
              np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)]
    for _ in range(4):
        for x in inputs:
            assert_same(scripted(x), affine(x))
    stats = scripted.stats()
    assert stats["specializations"] == 3 and stats["kernels_compiled"] == 3
    assert stats["profiled_runs"] == 3 and stats["bailouts"] == 0   # types seen: 3
    assert stats["kernel_launches"] == 12
    for _ in range(3):
        for x in inputs:
            scripted(x)
    assert scripted.stats()["specializations"] == 3


def test_ever_new_types_stop_compiling_at_the_budget():
    def scale(x: tsjit.Tensor):
        return x * 3 + 1

    scripted = tsjit.script(scale)
    dtypes = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64, np.float16, np.float32, np.float64]
    for _ in range(2):
        for dtype in dtypes:
            x = np.arange(5, dtype=dtype)
            assert_same(scripted(x), scale(x))
    assert scripted.stats()["specializations"] == MAX_SPECIALIZATION_DEPTH
    assert scripted.stats()["bailouts"] > 0


def test_guards_check_a_python_scalars_exact_type():
    x = np.arange(4, dtype=np.int32)
    scripted = tsjit.script(triad)
    assert_same(scripted(2.5, x, x), triad(2.5, x, x))
    assert_same(scripted(2.5, x, x), triad(2.5, x, x))
    assert_same(scripted(2, x, x), triad(2, x, x))     # int32 * 2 stays int32; * 2.5 is float64
    assert scripted.stats()["guard_failures"] == 1


def test_guards_accept_equal_dtypes_that_are_not_numpys_singletons():
    """Unpickled arrays (multiprocessing) carry dtype objects equal to NumPy's builtin ones
    but distinct from them; a byte-swapped dtype is not equal and takes the fallback."""
    import pickle
    x, y = (pickle.loads(pickle.dumps(np.arange(6.0) * k)) for k in (1.0, 0.5))
    assert x.dtype is not np.dtype(np.float64) and x.dtype == np.float64
    scripted = tsjit.script(triad)
    for _ in range(3):
        assert_same(scripted(2.5, x, y), triad(2.5, x, y))
    assert scripted.stats()["guard_failures"] == 0
    assert scripted.stats()["kernel_launches"] == 3
    swapped = x.astype(">f8")
    assert_same(scripted(2.5, swapped, y), triad(2.5, swapped, y))
    assert scripted.stats()["guard_failures"] >= 1
    assert scripted.stats()["kernel_launches"] == 3


def test_zero_d_inputs_give_numpy_scalars():
    def relu2(x: tsjit.Tensor):
        return np.maximum(x, 0.0) * 2

    scripted = tsjit.script(relu2)
    for x in (np.array([-1.0, 2.0]), np.array([3.0]), np.array(-1.5), np.array(7.0),
              np.array(2.5, dtype=np.float32)):
        assert_same(scripted(x), relu2(x))


def test_switches_leave_the_interpreter():
    x, y = np.ones((2, 10))
    for switch in (tsjit.set_fusion_enabled, tsjit.set_native_enabled):
        scripted = tsjit.script(triad)
        scripted(1.0, x, y)
        switch(False)
        for _ in range(3):
            assert_same(scripted(1.0, x, y), triad(1.0, x, y))
        assert scripted.stats()["kernel_launches"] == 1
        switch(True)
        for _ in range(2):
            scripted(1.0, x, y)
        assert scripted.stats()["kernel_launches"] == 3


def test_profiling_runs_setting():
    tsjit.set_profiling_runs(3)
    scripted, _ = calls(triad, 1.0, np.ones(3), np.ones(3), n=4)
    assert scripted.stats()["profiled_runs"] == 3 and scripted.stats()["kernel_launches"] == 1
    with pytest.raises(ValueError):
        tsjit.set_profiling_runs(0)


def test_graph_for_shows_guards_groups_and_fallbacks():
    x = np.ones(8, dtype=np.float32)
    scripted = tsjit.script(gelu)
    graph = scripted.graph_for(x)
    FileCheck().check(f"prim::TypeCheck[types=(Type({F32}),)]") \
        .check("prim::If").check("prim::FusionGroup_0").check("prim::FallbackGraph_1") \
        .check("with prim::FusionGroup_0 = graph").check("numpy::tanh") \
        .check("with prim::FallbackGraph_1 = graph").run(graph)
    scripted(np.ones(8))    # float64: the fallback specializes too, and graph_for shows it
    FileCheck().check("with prim::FallbackGraph_1 = graph") \
        .check("prim::TypeCheck[types=(Type(Tensor(dtype=float64").run(scripted.graph_for(x))


def test_inspect_llvm_shows_vectorized_float32_code():
    x = np.ones(64, dtype=np.float32)
    scripted = tsjit.script(gelu)
    ir = scripted.inspect_llvm(x)
    assert "<16 x float>" in ir or "<8 x float>" in ir
    assert scripted.inspect_asm(x).strip()


def test_fuser_logs_what_it_fused_and_what_not(caplog):
    def mixed(x: tsjit.Tensor):
        y = -x
        print(y)
        return y * 2.0 + 1.0

    with caplog.at_level(logging.DEBUG, logger="tsjit"):
        scripted = tsjit.script(mixed)
        scripted(np.ones(3))
        scripted(np.ones(3))
        scripted(np.ones(3, dtype=np.float32))
    text = caplog.text
    assert "fused 2 ops (aten::mul, aten::add)" in text
    assert "not fused: aten::neg" in text and "alone" in text
    assert "guard of mixed" in text and "found (ndarray(float32, rank 1))" in text


def test_direct_entry_keeps_the_call_semantics():
    x, y = RNG.standard_normal((2, 16)).astype(np.float32)
    scripted = tsjit.script(triad)
    for _ in range(3):
        assert_same(scripted(2.5, x, y), triad(2.5, x, y))
    assert_same(scripted(a=2.5, x=x, y=y), triad(2.5, x, y))       # keywords: the normal path
    assert_same(scripted(2.5, x.astype(np.float64), y), triad(2.5, x.astype(np.float64), y))
    with pytest.raises(TypeError, match="'x'"):
        scripted(2.5, [1.0], y)
    with pytest.raises(TypeError, match="missing a required argument: 'y'"):
        scripted(2.5, x)
    assert scripted.stats()["calls"] == 5 and scripted.stats()["kernel_launches"] == 5


def test_a_python_int_out_of_the_loops_range_raises_like_numpy():
    def shift(x: tsjit.Tensor, k: int):
        return x * k + 1

    scripted = tsjit.script(shift)
    x = np.arange(5, dtype=np.int8)
    for k in (3, 3, 300, -2):
        want = None
        try:
            want = shift(x, k)
        except OverflowError:
            with pytest.raises(OverflowError):
                scripted(x, k)
        if want is not None:
            assert_same(scripted(x, k), want)
    assert scripted.stats()["kernel_launches"] == 3 and scripted.stats()["bailouts"] == 1
