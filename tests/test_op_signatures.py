"""Op signatures (the registry's parameter lists) read as Python reads a parameter list."""
from __future__ import annotations

import inspect

import pytest

from tsjit.ops.registry import NO_DEFAULT, parse_signature

SIGNATURES = [
    "a, b",
    "a, axis=None, dtype=None, out=None, *, keepdims=False, where=True",
    "x, /, y=-1, *, casting='same_kind', order='K'",
    "*arrays, axis=0, out=None",
    "a, /, *args, sep=' , ', fill=(None, None), eps=1e-05, big=9223372036854775807",
    "self, k=0.0, flag=True, pair=(0, 1), text=\"a, b\"",
    "",
]


@pytest.mark.parametrize("signature", SIGNATURES)
def test_signatures_read_as_python_reads_them(signature):
    want = inspect.signature(eval(f"lambda {signature}: None")).parameters.values()
    params, positional_only = parse_signature(signature)
    assert [p.name for p in params] == [q.name for q in want]
    for p, q in zip(params, want):
        default = NO_DEFAULT if q.default is inspect.Parameter.empty else q.default
        assert p.default == default and type(p.default) is type(default), (p, q)
        assert p.variadic == (q.kind is q.VAR_POSITIONAL)
        assert p.kwonly == (q.kind is q.KEYWORD_ONLY)
    assert positional_only == sum(q.kind is q.POSITIONAL_ONLY for q in want)


@pytest.mark.parametrize("signature", ["a, 1b", "a=", "a, b=undefined_name"])
def test_malformed_signatures_are_refused(signature):
    with pytest.raises((ValueError, SyntaxError)):
        parse_signature(signature)
