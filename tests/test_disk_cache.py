"""The disk cache of object code trusts nothing it finds: corrupted, truncated, swapped or
foreign entries and directories others may write to are rejected before anything is
linked, a bad entry is removed and rewritten, and processes sharing the cache only ever
see whole entries."""
from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import cffi
import pytest

from tsjit.codegen import engine as engine_module
from tsjit.codegen import host_key, llvm_jit, object_loader
from tsjit.codegen.engine import JitEngine
from tsjit.codegen.llvm_jit import host_description, optimize_and_emit

_ffi = cffi.FFI()


def _source(symbol: str, addend: int) -> str:
    return f"""
define i64 @{symbol}(i64 %x) {{
  %r = add i64 %x, {addend}
  ret i64 %r
}}
"""


def _compile(directory: Path, symbol: str, addend: int):
    """Compile x + addend with a fresh engine (as a new process would) and return the
    compiled module and its function."""
    compiled = JitEngine(cache_dir=directory).compile(_source(symbol, addend), [symbol])
    function = _ffi.cast("int64_t(*)(int64_t)", compiled.addresses[symbol])
    return compiled, function


def _entries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if not p.name.startswith("."))


def _cache_warnings(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "tsjit.cache"]


@pytest.fixture
def cache(tmp_path) -> Path:
    return tmp_path / "cache"


def _assert_rejected_then_rewritten(cache: Path, caplog, symbol: str, addend: int) -> None:
    """A new engine must compile afresh (not link the bad entry), give the right result,
    log one line without a traceback, and leave a valid entry that the next engine loads."""
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tsjit.cache"):
        compiled, function = _compile(cache, symbol, addend)
    assert not compiled.from_disk_cache
    assert function(100) == 100 + addend
    warnings = _cache_warnings(caplog)
    assert len(warnings) == 1 and warnings[0].exc_info is None
    assert "removed" in warnings[0].getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tsjit.cache"):
        again, function = _compile(cache, symbol, addend)
    assert again.from_disk_cache and function(1) == 1 + addend
    assert not _cache_warnings(caplog)


def test_a_new_directory_and_its_entries_are_private(cache):
    compiled, function = _compile(cache, "tsjit_test_cache_private", 3)
    assert function(39) == 42
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    (entry,) = _entries(cache)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert _compile(cache, "tsjit_test_cache_private", 3)[0].from_disk_cache


def test_flipped_bytes_are_rejected(cache, caplog):
    _compile(cache, "tsjit_test_cache_flip", 3)
    (entry,) = _entries(cache)
    data = bytearray(entry.read_bytes())
    middle = len(data) - len(data) // 3   # inside the object code, the entry's tail
    data[middle:middle + 16] = bytes(b ^ 0x5A for b in data[middle:middle + 16])
    entry.write_bytes(bytes(data))
    _assert_rejected_then_rewritten(cache, caplog, "tsjit_test_cache_flip", 3)


@pytest.mark.parametrize("keep", [0, 7, 60, 0.5, -1])
def test_truncated_entries_are_rejected(cache, caplog, keep):
    _compile(cache, "tsjit_test_cache_truncated", 3)
    (entry,) = _entries(cache)
    data = entry.read_bytes()
    length = int(len(data) * keep) if isinstance(keep, float) else keep % len(data)
    entry.write_bytes(data[:length])
    _assert_rejected_then_rewritten(cache, caplog, "tsjit_test_cache_truncated", 3)


def test_entries_swapped_between_two_kernels_are_rejected(cache, caplog):
    _compile(cache, "tsjit_test_cache_three", 3)
    (three,) = _entries(cache)
    _compile(cache, "tsjit_test_cache_five", 5)
    (five,) = [e for e in _entries(cache) if e != three]
    three_bytes, five_bytes = three.read_bytes(), five.read_bytes()
    three.write_bytes(five_bytes)
    five.write_bytes(three_bytes)
    _assert_rejected_then_rewritten(cache, caplog, "tsjit_test_cache_three", 3)
    _assert_rejected_then_rewritten(cache, caplog, "tsjit_test_cache_five", 5)


@pytest.mark.parametrize("damage", ["flipped", "swapped"])
def test_a_bad_entrys_object_never_reaches_the_loader(cache, caplog, monkeypatch, damage):
    """The runtime's loader maps cached objects without LLVM: the entry's digest and key
    are checked before, so the loader is only ever given the object a compile emits."""
    _compile(cache, "tsjit_test_cache_loader_three", 3)
    (three,) = _entries(cache)
    if damage == "flipped":
        data = bytearray(three.read_bytes())
        data[-200:-184] = bytes(b ^ 0x5A for b in data[-200:-184])   # in the object code
    else:
        _compile(cache, "tsjit_test_cache_loader_five", 5)
        (five,) = [e for e in _entries(cache) if e != three]
        data = five.read_bytes()
    three.write_bytes(bytes(data))
    given = []
    load = object_loader.load
    monkeypatch.setattr(object_loader, "load", lambda obj, imports: load(given.append(obj) or obj,
                                                                          imports))
    _assert_rejected_then_rewritten(cache, caplog, "tsjit_test_cache_loader_three", 3)
    emitted = optimize_and_emit(_source("tsjit_test_cache_loader_three", 3), "O3")[0]
    assert given == [emitted, emitted]     # the fresh compile's, then the rewritten entry's


@pytest.mark.parametrize("part", ["_cpu_identity", "_llvm_build"])
def test_entries_are_keyed_by_the_cpu_and_the_llvm_build(cache, monkeypatch, part):
    """Without loading LLVM, the key names the CPU by the CPUID words LLVM chooses from
    and the LLVM build by llvmlite's library: another CPU or build misses the entry. Where
    they cannot be had, the key holds LLVM's own answers (and LLVM is loaded for them)."""
    symbol = f"tsjit_test_cache_host{part}"
    _compile(cache, symbol, 3)
    real = getattr(host_key, part)
    assert real() is not None
    for other in (lambda: real() + " other", lambda: None):
        monkeypatch.setattr(host_key, part, other)
        compiled, function = _compile(cache, symbol, 3)
        assert not compiled.from_disk_cache and function(1) == 4
        assert _compile(cache, symbol, 3)[0].from_disk_cache
    described = host_description()
    llvms_answer = {"_cpu_identity": f"{described['cpu']} {described['features']}",
                    "_llvm_build": f"llvm={described['llvm']}"}[part]
    assert llvms_answer in JitEngine(cache_dir=cache).host_key


def test_entries_are_keyed_by_the_optimization_pipeline(cache):
    """The same key compiled with another pipeline (elementwise kernels take O2) is another
    entry: an object optimized otherwise is never linked in its place."""
    symbol = "tsjit_test_cache_pipeline"
    for pipeline in ("O3", "O2", "quick"):
        compiled = JitEngine(cache_dir=cache).compile_keyed(
            "test|pipelines", lambda: _source(symbol, 3), [symbol], pipeline)
        assert not compiled.from_disk_cache
        again = JitEngine(cache_dir=cache).compile_keyed(
            "test|pipelines", lambda: _source(symbol, 3), [symbol], pipeline)
        assert again.from_disk_cache
        assert _ffi.cast("int64_t(*)(int64_t)", again.addresses[symbol])(1) == 4
    assert len(_entries(cache)) == 3


def test_import_prepares_no_key_that_needs_llvm(monkeypatch):
    """`import tsjit` prepares this host's key (engine.prepare) only where it needs no
    LLVM: without the runtime's CPUID words the key holds LLVM's answers, and the import
    must not load llvmlite for them."""
    monkeypatch.setattr(host_key, "_cpu_identity", lambda: None)

    def no_llvm():
        raise AssertionError("LLVM was asked for this host's key")
    monkeypatch.setattr(llvm_jit, "host_description", no_llvm)
    engine_module.prepare()


def test_an_entry_of_another_generator_fingerprint_is_rejected(cache, tmp_path, caplog,
                                                               monkeypatch):
    _compile(cache, "tsjit_test_cache_generator", 3)
    (entry,) = _entries(cache)
    other = tmp_path / "other-generator"
    host_key = engine_module.host_key
    monkeypatch.setattr(engine_module, "host_key", lambda generator: host_key("x" + generator))
    _compile(other, "tsjit_test_cache_generator", 3)
    monkeypatch.undo()
    (foreign,) = _entries(other)
    entry.write_bytes(foreign.read_bytes())
    _assert_rejected_then_rewritten(cache, caplog, "tsjit_test_cache_generator", 3)


def test_an_entry_other_users_may_write_is_rejected(cache, caplog):
    _compile(cache, "tsjit_test_cache_entry_mode", 3)
    (entry,) = _entries(cache)
    entry.chmod(0o666)
    _assert_rejected_then_rewritten(cache, caplog, "tsjit_test_cache_entry_mode", 3)
    (entry,) = _entries(cache)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_a_symlinked_entry_is_rejected(cache, tmp_path, caplog):
    _compile(cache, "tsjit_test_cache_symlink", 3)
    (entry,) = _entries(cache)
    target = tmp_path / "elsewhere"
    target.write_bytes(entry.read_bytes())
    entry.unlink()
    entry.symlink_to(target)
    _assert_rejected_then_rewritten(cache, caplog, "tsjit_test_cache_symlink", 3)
    assert not _entries(cache)[0].is_symlink()


def _refused(cache: Path, caplog, symbol: str) -> None:
    """The engine neither loads the (valid) entry in ``cache`` nor writes there."""
    before = {p: p.read_bytes() for p in _entries(cache)}
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tsjit.cache"):
        compiled, function = _compile(cache, symbol, 3)
    assert not compiled.from_disk_cache and function(39) == 42
    assert {p: p.read_bytes() for p in _entries(cache)} == before
    warnings = _cache_warnings(caplog)
    assert len(warnings) == 1 and "not used" in warnings[0].getMessage()


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_directory_others_may_write_is_not_used(cache, caplog, mode):
    _compile(cache, "tsjit_test_cache_dir_mode", 3)
    cache.chmod(mode)
    _refused(cache, caplog, "tsjit_test_cache_dir_mode")


def test_a_directory_of_another_user_is_not_used(cache, caplog, monkeypatch):
    _compile(cache, "tsjit_test_cache_dir_owner", 3)
    uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: uid + 1)
    _refused(cache, caplog, "tsjit_test_cache_dir_owner")


# ------------------------------------------------------------------ across processes

_PROGRAM = textwrap.dedent("""
    import numpy as np
    from _differential import assert_same

    import tsjit
    from tsjit.codegen.engine import get_engine

    def cubic(x):
        return 0.5 * x * (1.0 + 0.7978845608 * (x + 0.044715 * x * x * x))

    def affine(x, y):
        return np.sqrt(np.abs(x * 2.0 - y)) / (1.0 + y * y)

    def count(n: int) -> int:
        total = 0
        for i in range(n):
            total += i * i % 7
        return total

    rng = np.random.default_rng(0)
    for fn, args in [(cubic, (rng.standard_normal(1000),)),
                     (affine, (rng.standard_normal(513), rng.standard_normal(513))),
                     (cubic, (rng.standard_normal(64).astype(np.float32),)),
                     (count, (1000,))]:
        scripted = tsjit.script(fn)
        for _ in range(3):
            assert_same(scripted(*args), fn(*args))
        assert scripted.stats()["specializations"] >= 1
    modules = list(get_engine()._modules.values())
    print("loaded", sum(m.from_disk_cache for m in modules), "of", len(modules))
""")


def _run(cache: Path) -> subprocess.Popen:
    """Run _PROGRAM in a new process with ``cache`` as its disk cache."""
    program = cache.parent / "program.py"
    if not program.exists():
        program.write_text(_PROGRAM)
    tests = Path(__file__).resolve().parent
    path = [str(tests.parent), str(tests), os.environ.get("PYTHONPATH")]
    env = {**os.environ, "TSJIT_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join(filter(None, path))}
    return subprocess.Popen([sys.executable, str(program)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(process: subprocess.Popen) -> tuple[int, int, str]:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    assert "Traceback" not in err, err
    loaded, total = (int(word) for word in out.split()[1::2])
    return loaded, total, err


def test_processes_sharing_a_cache_see_whole_entries_and_recover_from_bad_ones(cache):
    first, second = _run(cache), _run(cache)   # two writers of the same kernels at once
    for process in (first, second):
        _, total, err = _finish(process)
        assert total > 0 and "tsjit.cache" not in err and "disk cache" not in err
    entries = _entries(cache)
    assert entries and not [p for p in cache.iterdir() if p.name.endswith(".tmp")]
    loaded, total, err = _finish(_run(cache))
    assert loaded == total and not err

    for i, entry in enumerate(entries):      # now every entry is bad, in one of two ways
        data = entry.read_bytes()
        if i % 2:
            entry.write_bytes(data[: len(data) // 2])
        else:
            entry.write_bytes(data[:-40] + bytes(b ^ 0xFF for b in data[-40:-24]) + data[-24:])
    loaded, total, err = _finish(_run(cache))
    assert loaded == 0 and err.count("removed, the kernel is compiled again") == len(entries)
    loaded, total, err = _finish(_run(cache))
    assert loaded == total and not err
