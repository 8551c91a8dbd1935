"""Native scalar code: regions of a graph (scalar control flow, element access) compiled to
LLVM functions that Python calls as builtins.

    ntypes / inference   run-time kinds of values, per variant of a region's inputs
    rules                the per-op lowering rules, registered by python_ops,
                         operator_rules, numpy_ops and sequence_ops
    emitter / boundary   one LLVM function per variant: CFG, phis, boxing, guards
    cpython              the C-API boundary and the builtin wrapper
    sites                fallbacks: single nodes run by the interpreter
    native_function      the callable a prim::NativeCall holds: variants, dispatch, stats
"""
from . import (  # noqa: F401  (each registers its rules)
    numpy_ops,
    operator_rules,
    python_ops,
    sequence_ops,
)
from .native_function import NativeFunction, direct_entry, lower_native_call
from .ntypes import Unsupported
from .rules import rule_for

__all__ = ["NativeFunction", "Unsupported", "direct_entry", "lower_native_call", "rule_for"]
