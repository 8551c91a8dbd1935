"""Module-style programs as ML code writes them (trees of submodules, class-level Final
constants), each run eagerly and scripted with the results and module state compared."""
from __future__ import annotations

import numpy as np
import pytest
from test_frontend_modules import check_module

import tsjit


class TreeNode(tsjit.Module):
    """A module whose children are instances of its own class: each instance has a type
    of its own, so compiling the tree is not recursion."""

    def __init__(self, depth: int):
        super().__init__()
        self.w = np.full(2, float(depth))
        self.children = tsjit.ModuleList([TreeNode(depth - 1) for _ in range(2)]
                                         if depth > 0 else [])

    def forward(self, x):
        out = x * self.w
        for child in self.children:
            out = out + child(x)
        return out


def test_module_tree_of_same_class_compiles_per_instance():
    check_module(lambda: TreeNode(2), "forward", (np.ones(2),), (np.arange(4.0).reshape(2, 2),))


class SelfRecursive(tsjit.Module):
    def forward(self, n: int) -> int:
        if n <= 0:
            return 0
        return self.forward(n - 1) + 1


def test_module_method_calling_itself_is_still_recursion():
    with pytest.raises(tsjit.CompilationError, match="called recursively"):
        tsjit.script(SelfRecursive())


class ClassFinal(tsjit.Module):
    hidden: tsjit.Final[int] = 4

    def __init__(self):
        super().__init__()
        self.w = np.ones(3)

    def forward(self, x):
        return x * self.w * self.hidden


def test_class_level_final_is_a_constant_of_the_scripted_module():
    check_module(ClassFinal, "forward", (np.arange(3.0),))
    scripted = tsjit.script(ClassFinal())
    with pytest.raises(AttributeError, match="constant"):
        scripted.hidden = 5     # the compiled code holds 4: setting it would split eager/script


class WithProperty(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.w = np.array([1.0, -2.0])
        self.calls = 0

    @property
    def doubled(self):
        self.calls += 1
        return self.w * 2.0

    def forward(self, x):
        return x * self.doubled + self.doubled


def test_property_of_a_module_is_compiled_as_its_getter():
    check_module(WithProperty, "forward", (np.ones(2),), (np.arange(4.0).reshape(2, 2),))
