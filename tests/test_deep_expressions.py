"""Expressions 10,000 terms long compile and run as eager Python does: the front end walks
chains of operators, signs and attributes without recursion, the fuser bounds its groups,
and the printer, parser, interpreter and native code generators see only long blocks.
Where CPython's own parser gives up (its limit follows the recursion limit), script()
raises a located CompilationError instead of a raw RecursionError."""
from __future__ import annotations

import importlib.util
import sys
from contextlib import contextmanager

import numpy as np
import pytest
from _differential import assert_same

import tsjit

TERMS = 10_000
# CPython 3.11 parses and compiles nesting up to ~3x the recursion limit: the least limit
# at which Python itself accepts these sources (the program defining them needs it too).
PYTHON_LIMIT = TERMS // 2


@contextmanager
def recursion_limit(limit: int):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def define(tmp_path, name: str, source: str):
    """Import ``source`` from a file (script() reads it back) and return function ``name``."""
    path = tmp_path / f"deep_{name}.py"
    path.write_text("import numpy as np\n\n\n" + source)
    spec = importlib.util.spec_from_file_location(f"deep_{name}", path)
    module = importlib.util.module_from_spec(spec)
    with recursion_limit(PYTHON_LIMIT):
        spec.loader.exec_module(module)
    return getattr(module, name)


def test_a_ten_thousand_term_array_chain_fuses_prints_and_round_trips(tmp_path):
    chain = define(tmp_path, "chain", "def chain(a):\n    return a" + " + 1.5" * TERMS + "\n")
    x = np.linspace(-1.0, 1.0, 37)
    with recursion_limit(PYTHON_LIMIT):
        scripted = tsjit.script(chain)
        for _ in range(3):     # profiling, then optimized calls
            assert_same(scripted(x), chain(x))
        assert scripted.stats()["kernels_compiled"] > 0
        assert str(scripted.graph).count("aten::add") == TERMS
        assert scripted.code.count("+") >= TERMS
        path = tmp_path / "chain.tsjit"
        scripted.save(path)
        assert_same(tsjit.load(path)(x), chain(x))   # its profiling run (fusing is above)


def test_ten_thousand_term_scalar_chains_run_natively(tmp_path):
    source = ("def count(n: int) -> int:\n    return n" + " + 3 - 2" * (TERMS // 2) + "\n")
    count = define(tmp_path, "count", source)
    with recursion_limit(PYTHON_LIMIT):
        scripted = tsjit.script(count)
        for n in (0, 7, -3, 2**40):
            assert_same(scripted(n), count(n))
        assert scripted.stats()["kernels_compiled"] == 1


def test_long_sign_and_attribute_chains(tmp_path, default_settings):
    tsjit.set_fusion_enabled(False)   # the front end is under test: no 80 kernels to build
    # CPython's parser stops near 6,000 signs (a stack of its own, whatever the limit).
    signs = define(tmp_path, "signs", "def signs(a):\n    return " + "-" * 5_001 + "a\n")
    transposes = define(tmp_path, "transposes",
                        "def transposes(a):\n    return a" + ".T" * (TERMS + 1) + "\n")
    x = np.arange(6.0).reshape(2, 3)
    with recursion_limit(PYTHON_LIMIT):
        for fn in (signs, transposes):
            scripted = tsjit.script(fn)
            for _ in range(3):
                assert_same(scripted(x), fn(x))


def test_nesting_beyond_pythons_parser_is_a_located_compilation_error(tmp_path):
    chain = define(tmp_path, "too_deep",
                   "def too_deep(a):\n    return a" + " + 1.5" * TERMS + "\n")
    assert_same(chain(np.ones(2)), np.full(2, 1.0 + 1.5 * TERMS))
    with recursion_limit(1000), pytest.raises(tsjit.CompilationError) as info:
        tsjit.script(chain)
    message = str(info.value)
    assert "deep_too_deep.py" in message and "recursion limit" in message
    assert not isinstance(info.value.__cause__, RecursionError)


def test_other_deep_nesting_is_a_located_compilation_error(tmp_path):
    # conditional expressions are still emitted recursively: refused at the statement
    source = ("def choose(a, c: bool):\n    b = a\n    return " + "a if c else " * 3000
              + "b\n")
    choose = define(tmp_path, "choose", source)
    with recursion_limit(PYTHON_LIMIT), pytest.raises(tsjit.CompilationError) as info:
        tsjit.script(choose)
    message = str(info.value)
    assert "too deeply" in message and "deep_choose.py" in message and "return" in message
