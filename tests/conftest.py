"""Fixtures shared by test modules.

The suite compiles synchronously (TSJIT_BACKGROUND_COMPILE=0, also in the fresh processes
tests start): a test that checks what the second call runs must not depend on how fast
the worker thread was.  test_tiers.py turns background compilation on where it tests it.
"""
from __future__ import annotations

import os

os.environ.setdefault("TSJIT_BACKGROUND_COMPILE", "0")

import pytest  # noqa: E402

import tsjit  # noqa: E402


@pytest.fixture
def default_settings():
    """Restore the executor settings a test may change (fusion, native code, profiling)."""
    yield
    tsjit.set_fusion_enabled(True)
    tsjit.set_native_enabled(True)
    tsjit.set_profiling_runs(1)
    tsjit.set_background_compilation(False)
