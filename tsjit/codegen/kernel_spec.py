"""The contract between the fuser and the elementwise kernel generator.

The fuser describes a fusion group as a small SSA program over per-element values
(``KernelSpec``); the code generator turns it into one native loop. The spec carries only
what the compiled code depends on (dtypes, ranks, scalar-ness, the op DAG), never sizes or
strides, so one kernel serves every shape and layout of the same rank.

``supports`` is the single place that says what the generator can do bit-for-bit like
NumPy; anything else stays with NumPy in the interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "MATH_FUNCTIONS",
    "MAX_OPERANDS",
    "MAX_RANK",
    "SUPPORTED_DTYPES",
    "KernelInput",
    "KernelOp",
    "KernelSpec",
    "OpSignature",
    "OPS_WITH_SCALAR_OPERAND_LOOPS",
    "PYTHON_FLOAT_EXPONENT",
    "PYTHON_FLOAT_REMAINDER",
    "INTEGER_OPERANDS",
    "PYTHON_INT_EXPONENT",
    "SCALAR_OPERANDS",
    "NAN_FIXED_LATER",
    "OP_SIGNATURES",
    "supports",
    "invalid_values_vary",
    "check_op",
    "EXPLICIT_CAST",
]


@dataclass(frozen=True)
class KernelInput:
    """One operand. ``is_scalar``: passed by value (Python/NumPy scalar or 0-d array) and
    broadcast everywhere; its value is converted to ``dtype`` as NumPy's casting would.
    ``never_nan``: a scalar known not to be NaN (a constant of the program other than
    NaN), whose NaN the kernel need not order (``operand_nans``)."""

    dtype: np.dtype
    rank: int
    is_scalar: bool
    never_nan: bool = False


# An op's `attrs` flag: every operand after the first is the same for every element (a
# scalar).  NumPy's clip and power loops then take paths of their own: clip's ties (x ==
# bound, e.g. -0.0 against 0.0) keep x, where with bound arrays they give the bound; power
# computes the exponents 1, 2, -1 and 0.5 exactly (x, x*x, 1/x, sqrt(x)).
SCALAR_OPERANDS = "scalar_operands"
OPS_WITH_SCALAR_OPERAND_LOOPS = frozenset({"clip", "pow"})
# A pow's `attrs` flag: ``array ** e`` with a Python int (float) ``e``, which ndarray's
# operator computes as np.reciprocal or np.square for -1 or 2 (np.sqrt for 0.5) before any
# power loop (NumPy's fast_scalar_power); np.power and other exponents run the loop, whose
# float16 form is powf: ``-nan ** -1.0`` is +nan there, ``(-0.0) ** 0.5`` +0.0.
PYTHON_INT_EXPONENT = "python_int_exponent"
PYTHON_FLOAT_EXPONENT = "python_float_exponent"
# A mod's `attrs` flag: Python's float % (CPython calls the C library's fmod, whose NaN of
# two NaN operands is the first one's), where NumPy's remainder loop gives the one with the
# larger significand (numpy_nans.larger_nan_wins_remainder).
PYTHON_FLOAT_REMAINDER = "python_float_remainder"
# A truediv's `attrs` flag: both operands are ints or bools converted to the float loop.
# LLVM knows their values where the program makes them constant (``x - x``, ``x < x``)
# and folds the division, flags and all (0 / 0 gives NaN with no invalid raised), so
# the kernel computes its divide and invalid errors itself (element_ops.computed_errors).
INTEGER_OPERANDS = "integer_operands"
# An op's `attrs` flag: a later op of the kernel replaces the result's NaNs, so the op need
# not give x86's NaN itself (a square is then the plain product, whose NaN LLVM may take
# from another operand: ``fabs(y) * fabs(y)`` becomes ``y * y``).
NAN_FIXED_LATER = "nan_fixed_later"
# A cast's second attr: the program's own astype, whose result NumPy makes an array of
# (laid out as its source), where an operand's cast is part of the consuming ufunc's loop
# (which then lays out its result as its iterator does: codegen/output_layout.py).
EXPLICIT_CAST = "explicit_cast"


@dataclass(frozen=True)
class KernelOp:
    """``result = op(values[args])``; ``dtype`` is the result's dtype; ``attrs``: a cast's
    target dtype (and EXPLICIT_CAST), or SCALAR_OPERANDS (clip, pow), or NAN_FIXED_LATER
    (square), or PYTHON_FLOAT_REMAINDER (mod), or INTEGER_OPERANDS (truediv)."""

    op: str
    args: tuple[int, ...]
    dtype: np.dtype
    attrs: tuple = ()


@dataclass(frozen=True)
class KernelSpec:
    """Values are numbered inputs first (0..n_in-1), then ops in order. ``outputs`` lists
    value numbers; ``inplace[k]`` names the input that output k is written into (``x += y``)
    or None for a fresh array."""

    inputs: tuple[KernelInput, ...]
    ops: tuple[KernelOp, ...]
    outputs: tuple[int, ...]
    inplace: tuple[int | None, ...] = ()

    def value_dtype(self, value: int) -> np.dtype:
        n_in = len(self.inputs)
        if value < n_in:
            return np.dtype(self.inputs[value].dtype)
        return np.dtype(self.ops[value - n_in].dtype)

    @property
    def out_rank(self) -> int:
        """Rank of the broadcast iteration space (0-d when every operand is a scalar)."""
        return max((i.rank for i in self.inputs if not i.is_scalar), default=0)

    def inplace_target(self, output: int) -> int | None:
        return self.inplace[output] if self.inplace else None


def invalid_values_vary(spec) -> bool:
    """Whether an element whose op raises invalid gets a value from NumPy that depends on
    where it lies (``spec``: a KernelSpec or a reduction_spec.RowKernelSpec): NumPy's
    float32/64 -> uint32 cast is a loop the compiler vectorized, whose vector body (the
    two-range sequence, as the kernel's) and scalar tail (a 64-bit conversion, truncated)
    disagree on NaN and on values below -2**31 or from 2**32 on:
    ``np.full(7, -1.4e10).astype(np.uint32)`` is 2147483648 in its first four elements,
    3179869184 in the last three. A kernel that flagged invalid then leaves the values to
    NumPy, whatever its error state (``codegen.launch``)."""
    return any(op.op == "cast" and op.dtype == np.dtype(np.uint32)
               and spec.value_dtype(op.args[0]) in _VECTORIZED_TO_UINT32 for op in spec.ops)


_VECTORIZED_TO_UINT32 = (np.dtype(np.float32), np.dtype(np.float64))


# Bounds of the shared iteration driver's fixed-size scratch (per-operand pointers, strides
# and stack buffers); NumPy allows rank 64, fused groups never come near either bound.
MAX_OPERANDS = 16
MAX_RANK = 16

SUPPORTED_DTYPES = frozenset(
    np.dtype(t)
    for t in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64",
    )
)


@dataclass(frozen=True)
class OpSignature:
    """What an op accepts. ``kinds``: NumPy dtype kinds allowed for the op's dtype
    ('b' bool, 'i'/'u' integers, 'f' floats). ``operands``: how operand dtypes relate to
    the op's dtype: 'same' (the fuser cast them), 'compare' (equal to each other, result
    bool), 'any' (logical ops read truthiness), 'where', 'shift' (any integer amount),
    'cast'."""

    arity: int
    kinds: str
    operands: str = "same"


# Functions lowered through tsjit.codegen.vmath (pow too, as the float case of "pow").
MATH_FUNCTIONS = (
    "exp", "expm1", "log", "log1p", "log2", "log10", "tanh", "sigmoid", "sin", "cos", "tan",
    "arctan", "arctan2",
)

_INT = "iu"
_NUM = "iuf"
_ALL = "biuf"

OP_SIGNATURES: dict[str, OpSignature] = {
    # arithmetic (bool add/mul are NumPy's logical or/and)
    "add": OpSignature(2, _ALL), "sub": OpSignature(2, _NUM), "mul": OpSignature(2, _ALL),
    "truediv": OpSignature(2, "f"), "floordiv": OpSignature(2, _NUM),
    "mod": OpSignature(2, _NUM), "pow": OpSignature(2, "f"),
    "neg": OpSignature(1, _NUM), "pos": OpSignature(1, _NUM), "abs": OpSignature(1, _ALL),
    "sign": OpSignature(1, _NUM), "square": OpSignature(1, _NUM),
    "reciprocal": OpSignature(1, "f"),
    # comparisons
    **{name: OpSignature(2, "b", "compare") for name in ("eq", "ne", "lt", "le", "gt", "ge")},
    # logical
    **{name: OpSignature(2, "b", "any") for name in ("logical_and", "logical_or", "logical_xor")},
    "logical_not": OpSignature(1, "b", "any"),
    # bitwise
    **{name: OpSignature(2, "b" + _INT) for name in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    "invert": OpSignature(1, "b" + _INT),
    "left_shift": OpSignature(2, _INT, "shift"), "right_shift": OpSignature(2, _INT, "shift"),
    # selection
    **{name: OpSignature(2, _ALL) for name in ("maximum", "minimum", "fmax", "fmin")},
    "clip": OpSignature(3, _NUM),
    "where": OpSignature(3, _ALL, "where"),
    "cast": OpSignature(1, _ALL, "cast"),
    # rounding and classification
    **{name: OpSignature(1, _NUM) for name in ("floor", "ceil", "trunc", "rint")},
    **{name: OpSignature(1, "b", "any") for name in ("isnan", "isinf", "isfinite", "signbit")},
    "copysign": OpSignature(2, "f"),
    "sqrt": OpSignature(1, "f"),  # exact: LLVM's sqrt instruction
    # transcendental functions (float only; inline vectorizable code from vmath)
    **{name: OpSignature(1, "f") for name in MATH_FUNCTIONS if name != "arctan2"},
    "arctan2": OpSignature(2, "f"),
}


def check_op(spec: KernelSpec, index: int, op: KernelOp) -> str | None:
    """Why ``op`` (value number ``index``) cannot be compiled, or None."""
    sig = OP_SIGNATURES.get(op.op)
    if sig is None:
        return f"unknown op {op.op!r}"
    if len(op.args) != sig.arity:
        return f"{op.op} takes {sig.arity} operands, got {len(op.args)}"
    if any(not 0 <= a < index for a in op.args):
        return f"{op.op} refers to a value not defined before it"
    dtype = np.dtype(op.dtype)
    if dtype not in SUPPORTED_DTYPES:
        return f"{op.op}: unsupported dtype {dtype}"
    if dtype.kind not in sig.kinds:
        return f"{op.op} is not supported for {dtype}"
    operand_dtypes = [spec.value_dtype(a) for a in op.args]
    if sig.operands == "same" and any(d != dtype for d in operand_dtypes):
        return f"{op.op}: operands {operand_dtypes} were not cast to {dtype}"
    if sig.operands == "compare" and operand_dtypes[0] != operand_dtypes[1]:
        return f"{op.op}: comparison of different dtypes {operand_dtypes}"
    if sig.operands == "shift" and (
        operand_dtypes[0] != dtype or operand_dtypes[1].kind not in "biu"
    ):
        return f"{op.op}: shift of {operand_dtypes} to {dtype}"
    if sig.operands == "where" and (operand_dtypes[1] != dtype or operand_dtypes[2] != dtype):
        return f"where: branches {operand_dtypes[1:]} were not cast to {dtype}"
    if sig.operands == "cast" and (not op.attrs or np.dtype(op.attrs[0]) != dtype
                                   or op.attrs[1:] not in ((), (EXPLICIT_CAST,))):
        return f"cast: attrs {op.attrs} must be (target dtype[, EXPLICIT_CAST]), the target " \
               f"equal to the op dtype"
    return None


def supports(spec: KernelSpec) -> tuple[bool, str]:
    """Whether the elementwise generator can compile ``spec`` with NumPy's exact semantics,
    and if not, why (for the fuser's log)."""
    n_operands = sum(not i.is_scalar for i in spec.inputs) + sum(
        t is None for t in (spec.inplace or (None,) * len(spec.outputs))
    )
    if n_operands > MAX_OPERANDS:
        return False, f"{n_operands} array operands (at most {MAX_OPERANDS})"
    for inp in spec.inputs:
        if inp.rank > MAX_RANK:
            return False, f"rank {inp.rank} (at most {MAX_RANK})"
        if np.dtype(inp.dtype) not in SUPPORTED_DTYPES:
            return False, f"unsupported input dtype {inp.dtype}"
        if inp.rank < 0 or (inp.is_scalar and inp.rank != 0):
            return False, f"input rank {inp.rank} (scalars have rank 0)"
    n_in = len(spec.inputs)
    for i, op in enumerate(spec.ops):
        reason = check_op(spec, n_in + i, op)
        if reason is not None:
            return False, reason
    n_values = n_in + len(spec.ops)
    if not spec.outputs:
        return False, "a kernel needs at least one output"
    if any(not 0 <= v < n_values for v in spec.outputs):
        return False, "an output refers to an unknown value"
    if all(i.is_scalar for i in spec.inputs):
        return False, "no array operand: the result would be a 0-d computation"
    if spec.inplace and len(spec.inplace) != len(spec.outputs):
        return False, "inplace must name a target (or None) for every output"
    targets = [t for t in spec.inplace if t is not None]
    if len(set(targets)) != len(targets):
        return False, "two outputs written into the same input"
    for out, target in zip(spec.outputs, spec.inplace):
        if target is None:
            continue
        if not 0 <= target < n_in or spec.inputs[target].is_scalar:
            return False, f"in-place target {target} is not an array input"
        if spec.inputs[target].rank != spec.out_rank:
            return False, "in-place target has a lower rank than the broadcast result"
        if np.dtype(spec.inputs[target].dtype) != spec.value_dtype(out):
            return False, "in-place target dtype differs from the output dtype"
    return True, ""
