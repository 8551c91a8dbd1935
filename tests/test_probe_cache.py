"""Answers of probes of NumPy's behaviour (JitEngine.remembered) are measured once per
machine: a later engine on the same disk cache reads them from a verified entry keyed by
the host and NumPy's build; a bad entry, another NumPy build or no disk cache means
measuring again."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tsjit.codegen import engine as engine_module
from tsjit.codegen import numpy_minmax
from tsjit.codegen.engine import JitEngine


class _Probe:
    """A measurement that counts how often it ran."""

    def __init__(self, answer: str) -> None:
        self.answer, self.runs = answer, 0

    def __call__(self) -> str:
        self.runs += 1
        return self.answer


@pytest.fixture
def cache(tmp_path) -> Path:
    return tmp_path / "cache"


def test_a_probe_is_measured_once_per_machine(cache):
    probe = _Probe("8 0 4 2 6")
    assert JitEngine(cache_dir=cache).remembered("test probe", probe) == "8 0 4 2 6"
    assert JitEngine(cache_dir=cache).remembered("test probe", probe) == "8 0 4 2 6"
    assert probe.runs == 1
    other = _Probe("another answer")
    assert JitEngine(cache_dir=cache).remembered("another probe", other) == "another answer"
    assert other.runs == 1


def test_without_the_disk_cache_every_engine_measures(cache):
    probe = _Probe("answer")
    for _ in range(2):
        assert JitEngine(cache_dir=cache, use_disk_cache=False).remembered("q", probe) == \
            "answer"
    assert probe.runs == 2 and not cache.exists()


def test_a_bad_probe_entry_is_measured_again(cache, caplog):
    JitEngine(cache_dir=cache).remembered("test probe", _Probe("the answer"))
    (entry,) = [p for p in cache.iterdir() if not p.name.startswith(".")]
    data = bytearray(entry.read_bytes())
    data[-4:] = b"liar"                    # the answer is the entry's tail
    entry.write_bytes(bytes(data))
    probe = _Probe("the answer")
    with caplog.at_level(logging.WARNING, logger="tsjit.cache"):
        assert JitEngine(cache_dir=cache).remembered("test probe", probe) == "the answer"
    assert probe.runs == 1
    assert [r for r in caplog.records if r.name == "tsjit.cache"]
    assert JitEngine(cache_dir=cache).remembered("test probe", probe) == "the answer"
    assert probe.runs == 1                 # rewritten


def test_answers_are_keyed_by_numpy_build(cache, monkeypatch):
    """NumPy's version, library and the CPU features it dispatches to decide its loops:
    another build (or NPY_DISABLE_CPU_FEATURES) must not read this one's answers."""
    JitEngine(cache_dir=cache).remembered("test probe", _Probe("avx2 answer"))
    build = engine_module.numpy_build()
    assert "features=" in build
    monkeypatch.setattr(engine_module, "numpy_build", lambda: build + " AVX512F")
    probe = _Probe("avx-512 answer")
    assert JitEngine(cache_dir=cache).remembered("test probe", probe) == "avx-512 answer"
    assert probe.runs == 1


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_numpy_max_min_order_comes_from_the_disk_cache(cache, monkeypatch, dtype):
    """numpy_minmax.row_order probes NumPy for tens of milliseconds; a process on a warm
    cache gets the measured order without probing."""
    measured = numpy_minmax._measured_row_order(dtype)
    monkeypatch.setattr(engine_module, "_engine", JitEngine(cache_dir=cache))
    assert numpy_minmax.row_order.__wrapped__(dtype) == measured
    monkeypatch.setattr(engine_module, "_engine", JitEngine(cache_dir=cache))

    def no_probe(_dtype):
        raise AssertionError("probed NumPy again")
    monkeypatch.setattr(numpy_minmax, "_measured_row_order", no_probe)
    assert numpy_minmax.row_order.__wrapped__(dtype) == measured


def test_no_matching_max_min_model_is_remembered_too(cache, monkeypatch):
    monkeypatch.setattr(numpy_minmax, "_measured_row_order", lambda _dtype: None)
    for _ in range(2):
        monkeypatch.setattr(engine_module, "_engine", JitEngine(cache_dir=cache))
        assert numpy_minmax.row_order.__wrapped__("float32") is None
