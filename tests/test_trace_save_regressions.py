"""Regressions found by a robustness sweep of tsjit.trace and save/load."""
from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pytest
from _archives import archive_of, zipped
from _differential import assert_same

import tsjit
from tsjit.api.tracer import TracerWarning

RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


# ---- trace

WEIGHT = rand(3, 3)


def closed_over_weight_times_input(x):
    return WEIGHT @ x + np.matmul(x, WEIGHT)


def test_matmul_with_an_untraced_left_operand_is_recorded():
    """ndarray @ tracer reaches the tracer as the gufunc np.matmul, which has an op but no
    elementwise ufunc form: it was refused as unsupported."""
    traced = tsjit.trace(closed_over_weight_times_input, rand(3, 3))
    for _ in range(3):
        x = rand(3, 3)
        assert_same(traced(x), closed_over_weight_times_input(x))


def divmod_both_ways(x):
    q, r = divmod(x, 2.0)
    q2, r2 = divmod(3.0, x)
    return q + r2, r * q2


def test_divmod_of_a_traced_array_is_recorded():
    traced = tsjit.trace(divmod_both_ways, rand(5))
    x = rand(5)
    assert_same(traced(x), divmod_both_ways(x))


def round_of_a_sum(x):
    return x * round(x.sum(), 1)


def test_round_of_a_traced_scalar_is_recorded():
    traced = tsjit.trace(round_of_a_sum, rand(4))
    x = rand(4)
    assert_same(traced(x), round_of_a_sum(x))


def fill_a_copy(x):
    y = x.copy()
    y.fill(2.0)
    return y + x


def test_in_place_method_returning_none_freezes_nothing():
    """x.fill() returns None: it warned that a value computed from arrays was frozen."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracerWarning)
        traced = tsjit.trace(fill_a_copy, rand(4))
    x = rand(4)
    assert_same(traced(x), fill_a_copy(x))


# ---- load: an edited or damaged archive raises SerializationError


class Scaled(tsjit.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 0.5
        self.weight = rand(3)

    def forward(self, x: np.ndarray) -> np.ndarray:
        return x * self.weight * self.scale


def double(x: np.ndarray) -> np.ndarray:
    return x * 2.0


DEEP = "deeply nested"     # replaced by a default nested beyond the JSON reader's stack
DEEP_TEXT = '["list", [' * 3000 + '["none"]' + ']]' * 3000


def _param(index: int, key: str, value):
    return lambda m: m["function"]["params"][index].__setitem__(key, value)


FUNCTION_EDITS = {
    "version true": lambda m: m.__setitem__("version", True),
    "parameter type": _param(0, "type", "int"),
    "extra parameter": lambda m: m["function"]["params"].append({"name": "y", "type": "Tensor"}),
    "no parameters": lambda m: m["function"].__setitem__("params", []),
    "parameter name": _param(0, "name", 3),
    "return type": lambda m: m["function"].__setitem__("return_type", "int"),
    "function name": lambda m: m["function"].__setitem__("name", 7),
    "deep default": _param(0, "default", DEEP),
}
MODULE_EDITS = {
    "qualname": lambda m: next(iter(m["types"].values())).__setitem__("qualname", 3),
    "attributes": lambda m: m["root"].__setitem__("attributes", None),
    "constants": lambda m: m["root"].__setitem__("constants", None),
    "attribute value": lambda m: m["root"]["attributes"]["scale"].__setitem__(
        "value", ["str", "x"]),
    "no forward": lambda m: m["methods"].pop("forward"),
}


def edited(obj, edit) -> io.BytesIO:
    files = archive_of(obj)
    manifest = json.loads(files["manifest.json"])
    edit(manifest)
    files["manifest.json"] = json.dumps(manifest).replace(f'"{DEEP}"', DEEP_TEXT).encode()
    return zipped(files)


@pytest.mark.parametrize("edit", FUNCTION_EDITS.values(), ids=FUNCTION_EDITS.keys())
def test_edited_function_manifest_is_refused(edit):
    """Each loaded before into a function whose argument check or graph disagreed with
    its signature (or crashed with an internal error when called)."""
    with pytest.raises(tsjit.SerializationError, match="corrupt archive|not a tsjit archive|"
                                                       "format version"):
        tsjit.load(edited(tsjit.script(double), edit))


@pytest.mark.parametrize("edit", MODULE_EDITS.values(), ids=MODULE_EDITS.keys())
def test_edited_module_manifest_is_refused(edit):
    with pytest.raises(tsjit.SerializationError, match="corrupt archive"):
        tsjit.load(edited(tsjit.script(Scaled()), edit))


def test_damaged_array_data_is_refused():
    files = archive_of(tsjit.script(Scaled()))
    files["data.npz"] = b"not an npz"
    with pytest.raises(tsjit.SerializationError, match="not a tsjit archive"):
        tsjit.load(zipped(files))


def test_a_graph_calling_python_is_refused():
    """Save writes prim::PythonOp only as a call of a @tsjit.ignore function by name
    (`fn=Ignored(module, qualname)`), so a graph whose PythonOp holds an object was edited:
    it would call any standard-library function it names."""
    files = archive_of(tsjit.script(double))
    files["code/function.ir"] = (
        b"graph(%x : Tensor):\n"
        b"  %0 : Tensor = prim::PythonOp[fn=Py(copy.deepcopy)](%x)\n"
        b"  return (%0)\n")
    with pytest.raises(tsjit.SerializationError, match="not an object saved code may name"):
        tsjit.load(zipped(files))


def test_unedited_archive_still_loads():
    x = rand(3)
    module = Scaled()
    assert_same(tsjit.load(zipped(archive_of(tsjit.script(module))))(x), module(x))
