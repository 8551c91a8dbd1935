"""A scripted function shows the user's function (as functools.update_wrapper would):
name, qualified name, module, docstring, __wrapped__ and signature, for help(), IDEs and
Sphinx; scripted methods show the bound method, scripted modules their class and forward."""

from __future__ import annotations

import inspect
import io
import pydoc

import numpy as np

import tsjit


def scaled_gelu(x: tsjit.Tensor, scale: float = 1.0) -> tsjit.Tensor:
    """The GELU of x, times scale."""
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x))) * scale


class Affine(tsjit.Module):
    """y = x * w + b, with a step count."""

    def __init__(self):
        super().__init__()
        self.w = np.full(3, 2.0)
        self.b = np.ones(3)

    def forward(self, x: tsjit.Tensor, steps: int = 1) -> tsjit.Tensor:
        """Apply the map `steps` times."""
        for _ in range(steps):
            x = x * self.w + self.b
        return x


def test_a_scripted_function_carries_the_wrapped_functions_metadata():
    scripted = tsjit.script(scaled_gelu)
    assert scripted.__wrapped__ is scaled_gelu
    for attribute in ("__name__", "__qualname__", "__module__", "__doc__"):
        assert getattr(scripted, attribute) == getattr(scaled_gelu, attribute), attribute
    assert inspect.signature(scripted) == inspect.signature(scaled_gelu)


def test_help_shows_the_users_signature_and_docstring():
    text = pydoc.render_doc(tsjit.script(scaled_gelu), renderer=pydoc.plaintext)
    assert str(inspect.signature(scaled_gelu)) in text
    assert "The GELU of x, times scale." in text
    assert inspect.isroutine(tsjit.script(scaled_gelu))   # Sphinx's autofunction test


class PlainHolder:
    act = scaled_gelu


class ScriptedHolder:
    act = tsjit.script(scaled_gelu)


def test_stored_on_a_class_it_binds_to_instances_as_the_function_does():
    assert ScriptedHolder.act is vars(ScriptedHolder)["act"]
    bound, plain = ScriptedHolder().act, PlainHolder().act
    assert inspect.signature(bound) == inspect.signature(plain)
    assert bound.__self__.__class__ is ScriptedHolder


def test_a_scripted_method_shows_the_bound_method():
    module = Affine()
    scripted = tsjit.script(module)
    method = scripted.forward
    assert inspect.signature(method) == inspect.signature(module.forward)
    assert (method.__name__, method.__qualname__, method.__doc__, method.__module__) == (
        "forward", "Affine.forward", Affine.forward.__doc__, __name__)
    x = np.arange(3.0)
    assert np.array_equal(method.__wrapped__(x, 2), module.forward(x, 2))
    assert np.array_equal(method(x, 2), module.forward(x, 2))


def test_a_scripted_module_shows_its_class_docstring_and_forwards_signature():
    scripted = tsjit.script(Affine())
    assert scripted.__doc__ == Affine.__doc__
    assert inspect.signature(scripted) == inspect.signature(Affine().forward)


def test_a_loaded_function_has_its_name_docstring_and_compiled_signature():
    buffer = io.BytesIO()
    tsjit.script(scaled_gelu).save(buffer)
    buffer.seek(0)
    loaded = tsjit.load(buffer)
    assert (loaded.__name__, loaded.__doc__) == ("scaled_gelu", scaled_gelu.__doc__)
    assert not hasattr(loaded, "__wrapped__")   # no Python function in this process
    assert str(inspect.signature(loaded)) == \
        "(x: 'Tensor', scale: 'float' = 1.0) -> 'Tensor'"
