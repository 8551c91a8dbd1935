"""The operator registry and the tables that fill it (importing this package loads them all)."""
from . import (  # noqa: F401  (each module registers its ops on import)
    builtin_ops,
    complex_ops,
    container_ops,
    executor_ops,
    iteration_ops,
    math_ops,
    native_ops,
    numpy_ops,
    operators,
    prim_ops,
    str_ops,
)
from .registry import OPS, OpDef, OpTypeError, lookup_method, lookup_python, op

__all__ = ["OPS", "OpDef", "OpTypeError", "lookup_method", "lookup_python", "op"]
