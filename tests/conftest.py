"""Fixtures shared by test modules."""
from __future__ import annotations

import pytest

import tsjit


@pytest.fixture
def default_settings():
    """Restore the executor settings a test may change (fusion, native code, profiling)."""
    yield
    tsjit.set_fusion_enabled(True)
    tsjit.set_native_enabled(True)
    tsjit.set_profiling_runs(1)
