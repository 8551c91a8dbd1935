"""A function's source is found without tokenize (``source_lines``): the lines must be
inspect's, for every layout, or inspect must be asked."""
from __future__ import annotations

import importlib
import inspect
import sys
import textwrap

import pytest

from tsjit.frontend.source import source_lines

LAYOUTS = textwrap.dedent('''
    import functools


    def plain(x):
        return x + 1
    # a comment after the body, then blank lines


    def one_liner(x): return x * 2


    @functools.lru_cache(maxsize=None)
    def decorated(x):
        return x


    @functools.lru_cache(
        maxsize=None,
    )
    def decorator_over_lines(x):
        return x


    def signature_over_lines(
        x,
        y,
    ):
        return x + y


    def string_at_column_zero(x):
        text = """
    inside
    """
        return text


    def bracket_at_column_zero(x):
        total = sum([1,
    2])
        return total + x


    def comment_at_column_zero(x):
        y = x
    # between two statements of the body
        return y


    def continued_line(x):
        y = x + \\
    1
        return y


    class Holder:
        def method(self, x):
            if x:
                return 1
            return 2

        @staticmethod
        def static(x):
            return x

    def outer(x):
        def inner(y):
            return y
        return inner(x)


    async def coroutine(x):
        return x


    def last_in_file(x):
        return x''')


@pytest.fixture
def layouts(tmp_path, monkeypatch):
    (tmp_path / "source_layouts.py").write_text(LAYOUTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("source_layouts")
    yield module
    sys.modules.pop("source_layouts", None)


def _functions(module) -> list:
    found = []
    for value in vars(module).values():
        if inspect.isclass(value) and value.__module__ == module.__name__:
            found += [v for v in vars(value).values() if inspect.isfunction(v)]
            found += [v.__func__ for v in vars(value).values() if isinstance(v, staticmethod)]
        elif inspect.isfunction(inspect.unwrap(value)) and \
                inspect.unwrap(value).__module__ == module.__name__:
            found.append(value)
    return found


def _lines(fn) -> tuple[list[str], int]:
    return source_lines(fn, inspect.getsourcefile(inspect.unwrap(fn)))


def _same_as_inspect(fn) -> None:
    """The same lines, or the same error (generated code, such as a dataclass's __init__,
    has no source)."""
    try:
        want = inspect.getsourcelines(fn)
    except OSError:
        with pytest.raises(OSError):
            _lines(fn)
        return
    assert _lines(fn) == want, fn


# where the cut by indentation falls inside a string, bracket or continuation line
ASKS_INSPECT = {"decorator_over_lines", "signature_over_lines", "string_at_column_zero",
                "bracket_at_column_zero", "continued_line"}


def test_every_layout_gives_inspects_lines(layouts, monkeypatch):
    functions = _functions(layouts)
    assert len(functions) == 14
    want = {fn: inspect.getsourcelines(fn) for fn in functions}
    asked = []
    getsourcelines = inspect.getsourcelines
    monkeypatch.setattr(inspect, "getsourcelines", lambda fn: asked.append(fn) or
                        getsourcelines(fn))
    for fn in functions:
        assert _lines(fn) == want[fn], fn
    assert {inspect.unwrap(fn).__name__ for fn in asked} == ASKS_INSPECT


@pytest.mark.parametrize("package", ["tsjit.passes.elementwise_kernel", "tsjit.frontend.emitter",
                                     "textwrap", "inspect", "argparse", "dataclasses",
                                     "logging", "tokenize", "json.decoder"])
def test_the_functions_of_real_modules_give_inspects_lines(package):
    module = importlib.import_module(package)
    functions = _functions(module)
    assert functions
    for fn in functions:
        _same_as_inspect(fn)
