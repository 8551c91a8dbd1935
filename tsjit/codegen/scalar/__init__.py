"""Native scalar code: regions of a graph (scalar control flow, element access) compiled to
LLVM functions that Python calls as builtins.

What a region may contain (passes/lower_native_regions.py finds them): Python ints,
floats, bools, None and Optional numbers, tuples of them; if/elif/else and every loop the
front end makes (for over range with any step, while, break, continue, early return);
operators, comparisons, casts, `abs`/`min`/`max`/`round`/`divmod`/`pow`, the `math`
functions; arrays of bool/int/uint/float32/float64 that are indexed (`x[i]`, `x[i, j] = v`,
`x[i] += v`, negative indices) or measured (`x.shape[k]`, `len(x)`, `x.size`, `x.ndim`);
NumPy scalars (the elements) and their arithmetic; lists of numbers that are only read;
`raise`, `assert` and `print`.

Semantics are the interpreter's (and so eager Python's), bit for bit.  Native ints are 64
bits wide; Python's are not, and the interpreter computes with Python ints.  So every int
operation that may leave the int64 range (`+ - * << ** //`, negation, `abs`, conversions
such as `int()`, `round()` and `math.floor()` of a float or a uint64) tests whether
Python's result needs more bits, but where passes/int_ranges shows that it cannot (loop
indices, counters, remainders; an affine chain such as `3 * x + 1` is tested once, on
x).  Where it does, as where Python's result is of another *type* than the IR's
(`int ** negative int` is a float, `(-2.0) ** 0.5` a complex number), native code cannot
hold it, so it gives up and the region runs again from its original inputs in the
interpreter, which gives Python's value; stats() count it as a bailout.  (Scripted ints
used to wrap here while the profiling calls gave Python's ints: a result changed between
calls.)  That re-run is only sound while the run has done
nothing observable: once the region has written an array, printed or emitted a NumPy
warning, it raises instead a TypeError (an OverflowError for an int) naming the
operation, why it could not re-run, and the script location (bailout.py).  Floats are
CPython's bit for bit (no contraction or reassociation); `math` functions call the same
C library CPython calls.  NumPy scalars follow NumPy (NEP 50 promotion, the dtype's
rounding and wrap-around).

Nothing rare is reimplemented: where Python or NumPy raises, warns or leaves the fast
numeric path (a zero divisor, an index out of bounds, a non-finite float, an overflowing
NumPy integer, a `raise`), the node runs in the interpreter (sites.py), which raises the
eager exception with the script location in its message, or emits NumPy's own warning
under the current errstate.  Arguments of other kinds than a variant was compiled for fail
its guards and take another variant or the interpreter (native_function.py).  A small
`if` of branch-free operations runs both arms and selects (emitter.py), so that a hot
loop does not pay an unpredictable branch for it.

    ntypes / inference   run-time kinds of values, per variant of a region's inputs
    rules                the per-op lowering rules, registered by python_ops,
                         operator_rules, numpy_ops and sequence_ops
    emitter / boundary   one LLVM function per variant: CFG, phis, boxing, guards
    bailout              giving up on a run: re-running the region, or the error
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
