"""Regressions from a sweep of invalid and borderline programs: each was accepted and gave
a different answer, escaped as an internal exception, or was rejected with a message that
named the wrong thing or pointed outside the user's code."""
from __future__ import annotations

import pytest

import tsjit


def underlined(message: str) -> str:
    """The source text above the first `<--- HERE` marker's tildes."""
    lines = message.split("\n")
    for above, line in zip(lines, lines[1:]):
        if line.endswith("<--- HERE"):
            start = len(line) - len(line.lstrip())
            return above[start:start + line.count("~")]
    raise AssertionError(f"no marker in {message!r}")


def compile_error(obj) -> str:
    with pytest.raises(tsjit.CompilationError) as info:
        tsjit.script(obj)
    return str(info.value)


# ---- assigning a module constant


class AssignsConstant(tsjit.Module):
    __constants__ = ["k"]

    def __init__(self):
        super().__init__()
        self.k = 3

    def forward(self, x: int) -> int:
        self.k = x
        return x


def test_assigning_a_module_constant_says_it_is_a_constant():
    message = compile_error(AssignsConstant())
    assert "constant" in message and "nonexistent" not in message
    assert underlined(message) == "self.k"
