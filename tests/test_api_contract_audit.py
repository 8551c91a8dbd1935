"""Promises of the public contract (shared/design/API.md) found broken by an audit."""
from __future__ import annotations

import numpy as np
import pytest

import tsjit


def scale(a, b):
    # type: (int, Tensor) -> Tensor
    return b * a


def test_type_comment_names_tensor_without_importing_it():
    scripted = tsjit.script(scale)
    assert scripted.schema == "scale(int a, Tensor b) -> Tensor"
    np.testing.assert_array_equal(scripted(3, np.arange(4.0)), scale(3, np.arange(4.0)))


def pick(xs, d):
    # type: (List[int], Optional[int]) -> int
    return xs[0] if d is None else d


def test_type_comment_names_typing_forms_without_importing_them():
    scripted = tsjit.script(pick)
    assert (scripted([7], None), scripted([7], 2)) == (pick([7], None), pick([7], 2))


@pytest.mark.parametrize("setter", [tsjit.set_profiling_runs, tsjit.set_num_threads])
def test_config_setters_reject_a_wrong_type_with_type_error_and_a_bad_count_with_value_error(
        setter):
    with pytest.raises(TypeError, match="expects an int"):
        setter("2")
    with pytest.raises(ValueError, match=">= 1"):
        setter(0)
