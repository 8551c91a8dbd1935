"""The native runtime: tsjit_parallel_for, thread-count control, and the library loader."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from _subprocess import child_environment

from tsjit import runtime

HEADER = Path(__file__).resolve().parents[1] / "runtime" / "include" / "tsjit_runtime.h"


@pytest.fixture
def threads() -> Iterator[None]:
    """Let a test change the thread count; restore it afterwards."""
    before = runtime.get_num_threads()
    yield
    runtime.set_num_threads(before)


def count_indices(n: int, grain: int) -> tuple[np.ndarray, int]:
    """How often each index of [0, n) was handed to a task, and how many chunks ran."""
    counts = np.zeros(n, dtype=np.int64)
    chunks = runtime.lib.tsjit_testing_count_indices(
        runtime.ffi.from_buffer("int64_t[]", counts), n, grain
    )
    return counts, chunks


def expected_chunks(n: int, grain: int, num_threads: int) -> int:
    """The chunks of a job with the whole budget free: one on a single thread, else
    ``n // grain``, at most TSJIT_CHUNKS_PER_THREAD per thread."""
    if n == 0:
        return 0
    if num_threads == 1:
        return 1
    per_thread = runtime.lib.tsjit_testing_chunks_per_thread()
    return max(1, min(num_threads * per_thread, n // grain))


def record_chunks(n: int, grain: int) -> list[tuple[int, int, int]]:
    """(begin, end, thread id) of every task call of a parallel_for over a Python callback."""
    chunks: list[tuple[int, int, int]] = []
    errors: list[BaseException] = []

    def on_error(exc_type, exc, tb):
        errors.append(exc)

    @runtime.ffi.callback("void(void *, int64_t, int64_t)", onerror=on_error)
    def task(ctx, begin, end):
        chunks.append((begin, end, threading.get_ident()))

    runtime.lib.tsjit_parallel_for(task, runtime.ffi.NULL, n, grain)
    assert not errors
    return chunks


def run_python(code: str, env_update: dict[str, str] | None = None,
               script_dir: Path | None = None) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter without the thread count variables of this one
    (from a file in `script_dir` if given, so that it may script its own functions)."""
    env = child_environment({k: v for k, v in os.environ.items()
                             if k not in (runtime.NUM_THREADS_ENV, runtime.OMP_NUM_THREADS_ENV)},
                            **(env_update or {}))
    command = ["-c", textwrap.dedent(code)]
    if script_dir is not None:
        (script_dir / "program.py").write_text(textwrap.dedent(code))
        command = [str(script_dir / "program.py")]
    return subprocess.run(
        [sys.executable, *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("num_threads", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 64, 1000, 4097, 100_003])
@pytest.mark.parametrize("grain", [1, 2, 3, 64, 1000, 5000])
def test_every_index_runs_exactly_once(threads, num_threads, n, grain):
    runtime.set_num_threads(num_threads)
    counts, chunks = count_indices(n, grain)
    assert np.array_equal(counts, np.ones(n, dtype=np.int64))
    assert chunks == expected_chunks(n, grain, num_threads)


@pytest.mark.parametrize("n, grain", [(10, 1), (10, 3), (1000, 7), (999, 333), (5, 5), (4, 5)])
def test_chunks_are_contiguous_and_at_least_grain(threads, n, grain):
    runtime.set_num_threads(4)
    chunks = sorted(record_chunks(n, grain))
    bounds = [(begin, end) for begin, end, _ in chunks]
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(prev[1] == nxt[0] for prev, nxt in zip(bounds, bounds[1:]))
    if len(bounds) > 1:
        assert min(end - begin for begin, end in bounds) >= grain
    assert len(bounds) == expected_chunks(n, grain, 4)


def test_nested_parallel_for_runs_inline_on_the_outer_tasks_thread(threads):
    runtime.set_num_threads(4)
    inner_calls: list[tuple[int, list[tuple[int, int, int]]]] = []

    @runtime.ffi.callback("void(void *, int64_t, int64_t)")
    def outer(ctx, begin, end):
        inner_calls.append((threading.get_ident(), record_chunks(1000, 1)))

    runtime.lib.tsjit_parallel_for(outer, runtime.ffi.NULL, 8, 1)
    assert len(inner_calls) == expected_chunks(8, 1, 4)
    for outer_thread, inner in inner_calls:
        assert inner == [(0, 1000, outer_thread)]


def test_nested_native_tasks_cover_every_index(threads):
    runtime.set_num_threads(2)
    results: list[tuple[bool, int]] = []

    @runtime.ffi.callback("void(void *, int64_t, int64_t)")
    def outer(ctx, begin, end):
        for _ in range(begin, end):
            counts, chunks = count_indices(5000, 10)
            results.append((bool((counts == 1).all()), chunks))

    runtime.lib.tsjit_parallel_for(outer, runtime.ffi.NULL, 6, 1)
    assert results == [(True, 1)] * 6


def test_concurrent_callers_from_python_threads(threads):
    runtime.set_num_threads(3)
    failures: list[str] = []

    def caller(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(300):
            n, grain = int(rng.integers(0, 20_000)), int(rng.integers(1, 3000))
            counts, _ = count_indices(n, grain)
            if not (counts == 1).all():
                failures.append(f"n={n} grain={grain}: counts {np.unique(counts)}")

    callers = [threading.Thread(target=caller, args=(seed,)) for seed in range(4)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join()
    assert failures == []


@pytest.mark.parametrize("num_threads", [2, 3])
def test_caller_and_every_worker_take_a_chunk(threads, num_threads):
    # The timing aid's chunks wait until all have started, so no thread can run two of them:
    # one chunk per call must run on the caller and the rest on distinct workers.
    runtime.set_num_threads(num_threads)
    reps = 50
    ns = np.zeros(reps, dtype=np.int64)
    worker_chunks = runtime.lib.tsjit_testing_time_dispatch(
        reps, runtime.ffi.from_buffer("int64_t[]", ns)
    )
    assert worker_chunks == reps * (num_threads - 1)
    assert (ns > 0).all()


def test_a_stalled_thread_holds_up_a_job_only_for_its_own_chunk(threads):
    # The first chunk to start stalls until every other item is done, as a thread that
    # another process preempts does: the other thread claims and runs all the rest, and
    # what the stalled one holds is a small chunk, not a fixed half of the job.
    runtime.set_num_threads(2)
    n = 64
    lock, others_done = threading.Lock(), threading.Event()
    ran: list[tuple[int, int, int]] = []

    @runtime.ffi.callback("void(void *, int64_t, int64_t)")
    def task(ctx, begin, end):
        with lock:
            first = not ran
            ran.append((begin, end, threading.get_ident()))
        if first:
            others_done.wait(10)
            return
        with lock:
            if sum(e - b for b, e, _ in ran[1:]) == n - (ran[0][1] - ran[0][0]):
                others_done.set()

    runtime.lib.tsjit_parallel_for(task, runtime.ffi.NULL, n, 1)
    assert sorted((b, e) for b, e, _ in ran)[-1][1] == n
    stalled_begin, stalled_end, stalled = ran[0]
    assert stalled_end - stalled_begin <= n // 8
    assert others_done.is_set()
    assert all(thread != stalled for _, _, thread in ran[1:])


def threads_running_a_job(chunks: int, timeout: float = 1.0) -> set[int]:
    """The threads that ran a parallel_for of `chunks` chunks whose chunks wait (up to
    `timeout` seconds) until `chunks` threads are in the job: no thread runs two of them
    while another is free to join."""
    entered: set[int] = set()
    all_in = threading.Condition()

    @runtime.ffi.callback("void(void *, int64_t, int64_t)")
    def task(ctx, begin, end):
        with all_in:
            entered.add(threading.get_ident())
            all_in.notify_all()
            all_in.wait_for(lambda: len(entered) >= chunks, timeout=timeout)

    runtime.lib.tsjit_parallel_for(task, runtime.ffi.NULL, chunks, 1)
    return entered


def test_a_job_runs_only_on_the_threads_other_callers_leave_free(threads):
    # Another Python thread's kernel holds one of the 3 threads of the budget: a job
    # launched meanwhile runs on 2 (its caller and one worker), not on all 3.
    runtime.set_num_threads(3)
    assert len(threads_running_a_job(3)) == 3
    started, release = threading.Event(), threading.Event()

    @runtime.ffi.callback("void(void *, int64_t, int64_t)")
    def blocking(ctx, begin, end):
        started.set()
        release.wait(10)

    other = threading.Thread(target=runtime.lib.tsjit_parallel_for,
                             args=(blocking, runtime.ffi.NULL, 1, 1))
    other.start()
    try:
        assert started.wait(10)
        during = threads_running_a_job(3, timeout=0.3)
    finally:
        release.set()
        other.join()
    assert len(during) == 2, during
    assert len(threads_running_a_job(3)) == 3


def test_thread_count_changes_between_calls(threads):
    for num_threads in [2, 5, 1, 3, 2, 7, 4]:
        runtime.set_num_threads(num_threads)
        counts, chunks = count_indices(70_000, 1000)
        assert (counts == 1).all()
        assert chunks == expected_chunks(70_000, 1000, num_threads)


def test_set_and_get_num_threads(threads):
    runtime.set_num_threads(3)
    assert runtime.get_num_threads() == 3
    runtime.set_num_threads(1)
    assert runtime.get_num_threads() == 1
    assert count_indices(10_000, 1)[1] == 1


@pytest.mark.parametrize(
    "bad, error",
    [(0, ValueError), (-2, ValueError), (np.int64(0), ValueError), (2.0, TypeError),
     (np.float64(2), TypeError), (True, TypeError), ("2", TypeError), ("x", TypeError),
     (None, TypeError)],
)
def test_set_num_threads_rejects_bad_values(threads, bad, error):
    with pytest.raises(error):
        runtime.set_num_threads(bad)


def test_set_num_threads_takes_numpy_integers(threads):
    runtime.set_num_threads(np.int64(3))
    assert runtime.get_num_threads() == 3


def test_default_thread_count_is_the_usable_cpus():
    result = run_python("from tsjit import runtime; print(runtime.get_num_threads())")
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == len(os.sched_getaffinity(0))


def test_num_threads_env_var_sets_the_initial_count():
    result = run_python(
        "from tsjit import runtime; print(runtime.get_num_threads())",
        {runtime.NUM_THREADS_ENV: "3"},
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == 3


@pytest.mark.parametrize("env, expected", [
    ({"OMP_NUM_THREADS": "1"}, 1),                           # Dask's nanny sets this
    ({"OMP_NUM_THREADS": "3,2"}, 3),                         # per nesting level: the first
    ({runtime.NUM_THREADS_ENV: "4", "OMP_NUM_THREADS": "1"}, 4),  # tsjit's own wins
])
def test_omp_num_threads_is_the_default_after_tsjit_num_threads(env, expected):
    result = run_python("from tsjit import runtime; print(runtime.get_num_threads())", env)
    assert result.returncode == 0, result.stderr
    assert (int(result.stdout), result.stderr) == (expected, "")


def test_default_thread_count_follows_the_affinity_mask():
    result = run_python(
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "from tsjit import runtime; print(runtime.get_num_threads())"
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == 1


GELU_WITH_WARNINGS_RECORDED = """
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import numpy as np
        import tsjit
        from tsjit import runtime

        def eager_gelu(x):
            return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

        gelu = tsjit.script(eager_gelu)
        x = np.linspace(-3, 3, 100_000)
        results = [gelu(x) for _ in range(3)]
    assert all(np.allclose(r, eager_gelu(x), rtol=1e-12, atol=1e-300) for r in results)
    print(runtime.get_num_threads(), gelu.stats()["kernel_launches"])
    for w in caught:
        print(w.category.__name__, w.message)
"""


@pytest.mark.parametrize("env, ignored", [
    ({runtime.NUM_THREADS_ENV: "abc"}, "TSJIT_NUM_THREADS='abc' is not a thread count"),
    ({runtime.NUM_THREADS_ENV: "0"}, "TSJIT_NUM_THREADS='0' is not a thread count"),
    ({runtime.NUM_THREADS_ENV: "-2"}, "TSJIT_NUM_THREADS='-2' is not a thread count"),
    ({"OMP_NUM_THREADS": "many"}, "OMP_NUM_THREADS='many' is not a thread count"),
    ({runtime.NUM_THREADS_ENV: "0", "OMP_NUM_THREADS": "x"},
     "TSJIT_NUM_THREADS='0' and OMP_NUM_THREADS='x' are not thread counts"),
])
def test_a_bad_thread_count_variable_is_warned_about_once_and_kernels_still_run(
        tmp_path, env, ignored):
    # It used to raise from inside every kernel's compilation: each logged a traceback and
    # ran interpreted.
    result = run_python(GELU_WITH_WARNINGS_RECORDED, env, tmp_path)
    assert result.returncode == 0, result.stderr
    counts, *warned = result.stdout.splitlines()
    threads, launches = counts.split()
    assert int(threads) == len(os.sched_getaffinity(0)) and int(launches) > 0
    assert warned == [f"RuntimeWarning {ignored} (an integer >= 1): tsjit's kernels use "
                      f"{threads} threads"]
    assert "Traceback" not in result.stderr


def test_pool_works_in_a_forked_child():
    result = run_python(
        """
        import os
        import numpy as np
        from tsjit import runtime

        def covered(n):
            counts = np.zeros(n, dtype=np.int64)
            chunks = runtime.lib.tsjit_testing_count_indices(
                runtime.ffi.from_buffer("int64_t[]", counts), n, 100)
            per_thread = runtime.lib.tsjit_testing_chunks_per_thread()
            return bool((counts == 1).all()) and chunks == 3 * per_thread

        runtime.set_num_threads(3)
        assert covered(100_000)
        pid = os.fork()
        if pid == 0:
            os._exit(0 if covered(100_000) and covered(5_000) else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert covered(100_000)
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize("pause_before_exit", ["", "import time; time.sleep(0.05)"])
def test_interpreter_exits_with_a_live_pool(pause_before_exit):
    # Exit right after a job (workers spinning) and after they went to sleep.
    result = run_python(
        f"""
        import numpy as np
        from tsjit import runtime
        runtime.set_num_threads(4)
        counts = np.zeros(10_000, dtype=np.int64)
        runtime.lib.tsjit_testing_count_indices(
            runtime.ffi.from_buffer("int64_t[]", counts), 10_000, 10)
        {pause_before_exit}
        """
    )
    assert result.returncode == 0, result.stderr


def test_symbol_addresses_cover_the_header_and_are_callable():
    declared = set(re.findall(r"TSJIT_API\s+[\w\s*]+?\b(tsjit_\w+)\s*\(", HEADER.read_text()))
    assert declared == {"tsjit_parallel_for", "tsjit_set_num_threads", "tsjit_get_num_threads",
                        "tsjit_watch_interrupts", "tsjit_interrupt_pending",
                        "tsjit_clear_interrupt"}
    addresses = runtime.symbol_addresses()
    assert declared <= addresses.keys()
    assert len(set(addresses.values())) == len(addresses) and 0 not in addresses.values()
    get_threads = runtime.ffi.cast("int(*)(void)", addresses["tsjit_get_num_threads"])
    assert get_threads() == runtime.get_num_threads()


def test_missing_library_tells_how_to_rebuild(tmp_path):
    with pytest.raises(runtime.RuntimeLibraryNotFound, match=r"pip install -e \."):
        runtime.locate_library([tmp_path])
    (tmp_path / runtime.LIBRARY_FILE).write_bytes(b"")
    assert runtime.locate_library([tmp_path / "elsewhere", tmp_path]) == (
        tmp_path / runtime.LIBRARY_FILE
    )
