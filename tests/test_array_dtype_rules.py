"""Type rules that see their arguments as arrays (`promotion.array_dtype`): the set
functions' result dtype is known for float64 too (`np.dtype("float64") == None` is True in
NumPy, so a `None in dtypes` test once took every float64 argument for an unknown one)."""
from __future__ import annotations

import numpy as np
import pytest

from tsjit.ir.types import AnyType, BoolType, FloatType, IntType, TensorType
from tsjit.ops.numpy_rules import CONSTANTS
from tsjit.ops.promotion import array_dtype
from tsjit.ops.registry import OPS, infer_types


def _vector(dtype: str) -> TensorType:
    return TensorType(dtype, (None,), None, True)


@pytest.mark.parametrize("fn", [np.union1d, np.setdiff1d, np.setxor1d, np.intersect1d])
@pytest.mark.parametrize("a, b", [("float64", "float64"), ("int32", "float64"),
                                  ("float64", "float32"), ("int16", "uint8")])
def test_set_function_result_dtype_is_numpys(fn, a, b):
    op = OPS[f"numpy::{fn.__name__}"]
    flags = range(2, len(op.params))             # assume_unique, return_indices: False
    (result,) = infer_types(op, [_vector(a), _vector(b), *(BoolType for _ in flags)],
                            {CONSTANTS: dict.fromkeys(flags, False)})
    want = fn(np.ones(2, a), np.ones(3, b)).dtype
    assert result == TensorType(want.name, (None,), None, True)


def test_array_dtype_makes_python_numbers_strong_and_knows_unknowns():
    assert array_dtype(FloatType) == np.dtype(np.float64)
    assert array_dtype(IntType) == np.dtype(np.int64)
    assert array_dtype(BoolType) == np.dtype(bool)
    assert array_dtype(_vector("float32")) == np.dtype(np.float32)
    assert array_dtype(TensorType()) is None
    assert array_dtype(AnyType) is None
