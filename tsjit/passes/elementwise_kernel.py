"""IR elementwise nodes read as one fused kernel: what the fuser can compile, and how.

The fuser asks `build_group(nodes, ...)` whether a set of nodes makes one kernel, and the
executor asks it again for the KernelSpec of a FusionGroup's subgraph, so the two can
never disagree.  The registry says which ops are elementwise (`attrs["kernel"]`, and the
NumPy ufunc whose loop they run); NumPy says the loop dtypes (`promotion.loop_dtypes`,
NEP 50 with weak Python scalars), and the cast to each loop's input dtypes is made
explicit in the spec.  Types come from the group's inputs (profiled, and checked by the
group's guard at run time) and are derived for every value computed inside, so nothing
inside a kernel rests on an unguarded assumption.

A ufunc call with `out=` (`ufunc::call_out`) is the ufunc's kernel op written into `out`,
as `x += y` is written into `x`.  It is preceded by `ufunc::out_check` (NumPy's casting and
rank errors, see ops/numpy_ufuncs.py).  In a group the check needs no kernel op: it depends only
on the dtypes and ranks of its inputs and the kinds of its Python numbers, which the
group's guard fixes, so it is made once, here, on the same zero-size stand-ins; a check
that raises keeps its node out of the group.  The value of a Python int matters too (NumPy
raises OverflowError for one out of the loop's range): the check joins only a group that
converts the int to the same dtype, whose range check then sends an out-of-range value to
the interpreter, which raises at the check.

In-place writes (`x += y`, `x *= 2.0`, `out[...] = expr`) become kernel outputs written
into their array.  The kernel reads all its inputs before writing (the launcher copies an
input that overlaps a written array), which matches the program only when nothing in the
group reads an array *after* a write, other than the written array itself through the
values the group computed: such a group is refused.  Every value of an array that is
written (the array, its `x += y` results) stands for one object: one kernel output.

Shapes are not part of a kernel: one iteration space, the broadcast of all array inputs,
serves the group.  An output that does not depend on every array input could be smaller
than that space in NumPy; `FusedKernel.shape_checks` lists the input sets whose broadcast
must equal the iteration shape for the kernel to compute what NumPy computes.
"""
from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..codegen import numpy_nans
from ..codegen.fp_errors import reports_are_ambiguous
from ..codegen.kernel_spec import (
    EXPLICIT_CAST,
    INTEGER_OPERANDS,
    NAN_FIXED_LATER,
    OP_SIGNATURES,
    OPS_WITH_SCALAR_OPERAND_LOOPS,
    PYTHON_FLOAT_EXPONENT,
    PYTHON_INT_EXPONENT,
    SCALAR_OPERANDS,
    KernelInput,
    KernelOp,
    KernelSpec,
    invalid_values_vary,
    supports,
)
from ..ir.graph import NOT_CONSTANT, Node, Value, constant_value
from ..ir.types import (
    BoolType,
    FloatType,
    IntType,
    TensorType,
    Type,
)
from ..ops.promotion import loop_dtypes, ufunc_loop
from .elementwise_calls import ElementwiseCall, read_call

PYTHON_SCALARS = {bool: BoolType, int: IntType, float: FloatType}


def never_nan(constant: object) -> bool:
    """Whether a constant operand is a number that is not NaN."""
    try:
        return not np.isnan(constant)
    except TypeError:
        return False
_PYTHON_CLASSES = {t: cls for cls, t in PYTHON_SCALARS.items()}
# Exponents of `x ** c` whose NumPy result the kernel computes without pow: NumPy's own
# fast paths for float arrays (bitwise), and x*x*x for 3 (computed in float64: within an
# ulp of pow).
_STRIDE_ZERO_LOOPS = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
_POWERS = {2: ("square",), 0.5: ("sqrt",), -1: ("reciprocal",), 3: ("square", "mul")}
# Binary ops whose result LLVM computes from their operand when both are one value (x * x,
# x + x, maximum(x, x) -> x). Others it may fold to a constant (int x - x, x ^ x, x > x)
# and np.where of equal branches to the branch, dropping the computation of the operand
# (the condition) and its floating-point errors: such a node is not fused after an op
# computing that value.
_KEEP_EQUAL_OPERANDS = frozenset({
    "add", "mul", "truediv", "pow", "maximum", "minimum", "fmax", "fmin", "copysign",
    "arctan2", "bitwise_and", "bitwise_or", "logical_and", "logical_or"})
# Classifications whose result is a constant to LLVM for an integer or bool operand
# (np.isnan of an int32 array is False everywhere), and the ops whose result one constant
# operand may decide (False and x, np.where(False, a, b)), dropping the other operands.
_CONSTANT_FOR_INTEGERS = frozenset({"isnan", "isinf", "isfinite"})   # and unsigned signbit
_ABSORBING = frozenset({"where", "mul", "maximum", "minimum", "fmax", "fmin", "clip",
                        "bitwise_and", "bitwise_or", "logical_and", "logical_or"})


def _int_bounds(dtype: np.dtype) -> tuple[int, int] | None:
    """The Python ints NumPy converts to `dtype` without an OverflowError or an overflow
    warning (None: any int)."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return int(info.min), int(info.max)
    if dtype.kind in "fc":
        largest = int(np.finfo(dtype).max)
        return -largest, largest
    return None


def _float_bounds(dtype: np.dtype) -> tuple[float, float] | None:
    """The Python floats NumPy converts to `dtype` without an overflow warning ("overflow
    encountered in cast": float32 + 1e40 warns, float32 + inf does not; None: any float).
    A float at least the largest finite value plus half its spacing rounds to infinity;
    bounds leave out infinities and NaN too, which the interpreter then computes."""
    if dtype.kind not in "fc" or np.finfo(dtype).bits >= 64:
        return None
    info = np.finfo(dtype)
    half_spacing = math.ldexp(1.0, info.maxexp - info.nmant - 2)    # of the largest
    largest = math.nextafter(float(info.max) + half_spacing, 0.0)
    return -largest, largest


def is_constant_like(node: Node) -> bool:
    """Nodes a group copies into its subgraph instead of taking their values as inputs."""
    return node.kind == "prim::Constant" or (node.kind == "prim::Slice" and all(
        constant_value(v) is not NOT_CONSTANT for v in node.inputs))


# ---------------------------------------------------------------- the built kernel

@dataclass(frozen=True)
class Feed:
    """Where a kernel input's value comes from: a group input, or a constant."""

    value: Value | None
    constant: object = None


@dataclass
class GroupOutput:
    """One kernel output: the object `root` (an input written in place, or a fresh array)
    that the IR `values` (root, its in-place results) all are."""

    root: Value
    values: list[Value]
    type: TensorType


@dataclass
class FusedKernel:
    """A group as one kernel: the spec, where each kernel input comes from, what each
    output stands for, and what only a call can check (see the module docstring)."""

    spec: KernelSpec
    group_inputs: list[Value]
    feeds: tuple[Feed, ...]
    outputs: list[GroupOutput]
    shape_checks: tuple[frozenset[int], ...]   # kernel array-input sets (see module doc)
    written: tuple[int, ...]                    # kernel inputs written in place
    input_types: dict[Value, Type] = field(default_factory=dict)  # as the kernel assumes
    range_checks: dict[int, tuple[int, int]] = field(default_factory=dict)  # Python ints
    value_types: dict[Value, TensorType] = field(default_factory=dict)
    raising: frozenset[Node] = frozenset()      # members that may raise ValueError
    # (bound inputs, base inputs or None): a call where the bound inputs all have one
    # element and a base input more (or, None, always) runs in NumPy (see
    # `_Builder.stride_zero_check`)
    size_one_checks: tuple[tuple[frozenset[int], frozenset[int] | None], ...] = ()
    # the state after the members' ops, which `extend_group` continues from
    builder: _Builder | None = field(default=None, repr=False, compare=False)


@functools.cache
def dtype_name(dtype: np.dtype) -> str:
    """`dtype.name`, which NumPy computes in Python (~5 us) on every access: a group of
    n ops asks for it about n times per join."""
    return dtype.name


def _integral(t: Type) -> bool:
    """Whether an operand (its promotion type) holds an int or a bool."""
    if isinstance(t, TensorType):
        return t.dtype is not None and np.dtype(t.dtype).kind in "biu"
    return t in (IntType, BoolType)


class GroupError(Exception):
    """The nodes do not make one kernel; the message says why (for the fuser's log)."""


class ScalarResult(GroupError):
    """The op computes a NumPy scalar of `dtype` (no kernel: every operand is 0-d)."""

    def __init__(self, message: str, dtype: np.dtype):
        super().__init__(message)
        self.dtype = dtype


def build_group(nodes: list[Node], used_outside) -> FusedKernel:
    """The kernel computing `nodes` (in program order); `used_outside(value)` tells which
    of their results the rest of the program reads.  Raises GroupError."""
    builder = _Builder()
    for node in nodes:
        builder.add(node, _call_of(node))
    return builder.finish(nodes, used_outside)


def extend_group(group: FusedKernel, nodes: list[Node], node: Node,
                 used_outside) -> FusedKernel:
    """`build_group(nodes + [node], used_outside)`, where `group` is the kernel of `nodes`:
    only `node`'s ops are added (the fuser grows groups one node at a time, and rebuilding
    every group from its first node made fusion quadratic in the length of the code)."""
    builder = group.builder.copy()
    builder.add(node, _call_of(node))
    return builder.finish([*nodes, node], used_outside)


def _call_of(node: Node) -> ElementwiseCall:
    call = read_call(node)
    if call is None:
        raise GroupError(f"{node.kind} is not an elementwise array op")
    return call


class _Builder:
    def __init__(self) -> None:
        self.inputs: list[KernelInput] = []
        self.feeds: list[Feed] = []
        self.ops: list[KernelOp] = []               # args are value ids (see `final`)
        # per value id (inputs and ops in the order they were added):
        self.dtypes: list[np.dtype] = []
        self.ancestors: list[frozenset[int]] = []   # the kernel array inputs it reads
        self.slots: list[int] = []                  # input k: k; op j: -1 - j
        self.group_inputs: list[Value] = []
        self.numbers: dict[Value, int] = {}          # arrays and computed values
        self.array_values: set[Value] = set()        # the arrays among them from outside
        self.scalar_inputs: dict[tuple[Value, np.dtype], int] = {}
        self.casts: dict[tuple[int, np.dtype, bool], int] = {}
        self.root_of: dict[Value, Value] = {}        # written values -> their array
        self.current: dict[Value, int] = {}          # written array -> its latest value
        self.written: list[Value] = []
        self.raising: set[Node] = set()
        self.range_checks: dict[int, tuple[int, int]] = {}   # kernel input -> (lo, hi)
        self.checked_ints: list[tuple[Value, np.dtype]] = []  # Python ints out checks convert
        self.size_one_checks: list[tuple[frozenset[int], frozenset[int] | None]] = []

    def copy(self) -> _Builder:
        """A builder that continues from this one's state, leaving this one as it is (the
        containers are copied; what they hold is never changed in place)."""
        twin = _Builder.__new__(_Builder)
        for name, value in vars(self).items():
            setattr(twin, name, value.copy())
        return twin

    # ---- values
    def number(self, v: Value) -> int | None:
        root = self.root_of.get(v)
        if root is not None:
            return self.current[root]
        return self.numbers.get(v)

    def kind(self, v: Value) -> str:
        """'value' (array input or computed), 'python' (weak scalar), 'numpy' (NumPy
        scalar) for a usable operand; raises GroupError otherwise."""
        if self.number(v) is not None:
            return "value"
        c = constant_value(v)
        if c is not NOT_CONSTANT:
            if type(c) in PYTHON_SCALARS:
                return "python"
            if isinstance(c, np.generic):
                return "numpy"
            raise GroupError(f"constant {c!r} is not a number")
        if v.type in (IntType, FloatType, BoolType):
            return "python"
        t = v.type
        if isinstance(t, TensorType) and t.dtype is not None and t.sizes is not None \
                and t.ndarray is not None:
            return "value" if t.ndarray else "numpy"
        raise GroupError(f"%{v.name or '?'} has no known dtype and rank ({t})")

    def promotion_type(self, v: Value) -> Type:
        """How NumPy's promotion sees the operand (Python scalars weak, the rest strong)."""
        n = self.number(v)
        if n is not None:
            return TensorType(dtype_name(self.dtypes[n]))
        c = constant_value(v)
        if c is not NOT_CONSTANT:
            return PYTHON_SCALARS[type(c)] if type(c) in PYTHON_SCALARS else TensorType(
                np.dtype(type(c)).name)
        return v.type

    def use(self, v: Value, want: np.dtype | None) -> int:
        """The value number of operand `v` as dtype `want` (its own dtype if None)."""
        kind = self.kind(v)
        if kind == "python":
            return self.python_scalar(v, want)
        if kind == "numpy":
            own = np.dtype(self.promotion_type(v).dtype)
            n = self.scalar_input(v, own)
        else:
            n = self.number(v)
            if n is None:
                n = self.array_input(v)
        return n if want is None else self.cast(n, want)

    def reads_unwritten_array(self, v: Value) -> bool:
        """Whether `v` is an array from outside the group that no write of it made."""
        if v in self.root_of or self.kind(v) != "value":
            return False
        return v in self.array_values or self.number(v) is None

    def add_input(self, feed: Feed, kernel_input: KernelInput) -> int:
        if feed.value is not None and feed.value not in self.group_inputs:
            self.group_inputs.append(feed.value)
        k = len(self.inputs)
        self.inputs.append(kernel_input)
        self.feeds.append(feed)
        self.dtypes.append(np.dtype(kernel_input.dtype))
        self.ancestors.append(frozenset() if kernel_input.is_scalar else frozenset({k}))
        self.slots.append(k)
        return len(self.dtypes) - 1

    def array_input(self, v: Value) -> int:
        t = v.type
        n = self.add_input(Feed(v), KernelInput(np.dtype(t.dtype), len(t.sizes), False))
        self.numbers[v] = n
        self.array_values.add(v)
        return n

    def scalar_input(self, v: Value, dtype: np.dtype) -> int:
        key = (v, dtype)
        if key not in self.scalar_inputs:
            c = constant_value(v)
            feed = Feed(None, c) if c is not NOT_CONSTANT else Feed(v)
            self.scalar_inputs[key] = self.add_input(
                feed, KernelInput(dtype, 0, True, c is not NOT_CONSTANT and never_nan(c)))
        return self.scalar_inputs[key]

    def python_scalar(self, v: Value, want: np.dtype | None) -> int:
        if want is None:
            raise GroupError("a Python scalar operand without a loop dtype")
        c = constant_value(v)
        # NumPy raises OverflowError (or warns, for a float loop) for an int out of the
        # loop's range, and warns for a finite float out of a narrower float loop's range
        is_int = type(c) is int if c is not NOT_CONSTANT else v.type == IntType
        is_float = type(c) is float if c is not NOT_CONSTANT else v.type == FloatType
        bounds = _int_bounds(want) if is_int else _float_bounds(want) if is_float else None
        if c is not NOT_CONSTANT:
            if bounds is not None and not bounds[0] <= c <= bounds[1] and \
                    (is_int or np.isfinite(c)):
                raise GroupError(f"constant {c!r} is out of the range of {want}")
            return self.scalar_input(v, want)
        n = self.scalar_input(v, want)
        if bounds is not None:   # the launcher checks the value, the interpreter raises
            self.range_checks[self.slots[n]] = bounds
        return n

    def guard(self, v: Value) -> None:
        """Make `v` a group input the kernel does not read: the guard still checks its
        type."""
        if v not in self.group_inputs:
            self.group_inputs.append(v)

    def value_rank(self, v: Value) -> int:
        """The rank of array value `v`: a written array keeps its own rank."""
        root = self.root_of.get(v)
        return self.rank(self.numbers[root] if root is not None else self.number(v))

    def cast(self, n: int, dtype: np.dtype, explicit: bool = False) -> int:
        """`n` as `dtype`: an operand's cast, or (`explicit`) the program's astype."""
        if self.dtypes[n] == dtype:
            return n
        key = (n, dtype, explicit)
        if key not in self.casts:
            attrs = (dtype, EXPLICIT_CAST) if explicit else (dtype,)
            self.casts[key] = self.op("cast", (n,), dtype, attrs)
        return self.casts[key]

    def op(self, name: str, args: tuple[int, ...], dtype: np.dtype, attrs: tuple = ()) -> int:
        n = len(self.dtypes)
        self.slots.append(-1 - len(self.ops))
        self.ops.append(KernelOp(name, args, np.dtype(dtype), attrs))
        self.dtypes.append(np.dtype(dtype))
        self.ancestors.append(frozenset().union(*(self.ancestors[a] for a in args)))
        return n

    def rank(self, n: int) -> int:
        return max((self.inputs[i].rank for i in self.ancestors[n]), default=0)

    # ---- nodes
    def add(self, node: Node, call: ElementwiseCall) -> None:
        if call.kernel == "out_check":    # reads no element, so no aliasing concern
            self.prove_out_check(call)
            return
        reads = [*call.operands, *([call.target] if call.target is not None else [])]
        if self.written and any(map(self.reads_unwritten_array, reads)):
            raise GroupError(f"{node.kind} reads an array after an in-place write in the "
                             f"group (the two may be the same memory)")
        if sum(self.kind(v) == "value" for v in call.operands) >= 2 or call.target is not None:
            self.raising.add(node)
        first_op = len(self.ops)
        result = self.compute(call)
        self.refuse_folds(node, first_op)
        self.refuse_constant_folds(node, first_op)
        if call.target is not None:
            self.write(node, call, result)
        else:
            self.numbers[node.output] = result
        if self.rank(result) == 0:
            message = f"{node.kind} has a 0-d result (a NumPy scalar in NumPy)"
            if call.target is None:
                raise ScalarResult(message, self.dtypes[result])
            raise GroupError(message)

    def refuse_folds(self, node: Node, first_op: int) -> None:
        """GroupError if an op from ``first_op`` on is one that LLVM folds away with a
        value computed in the kernel (see _KEEP_EQUAL_OPERANDS): the value's ops would go
        too, and with them their floating-point flags, which NumPy reports."""
        numbers: dict[tuple, int] = {}
        value_numbers: list[int] = []   # per value id; equal ops of equal operands are one
        for slot in self.slots:         # value to LLVM (GVN)
            op = self.ops[-1 - slot] if slot < 0 else None
            key = ("input", slot) if op is None else \
                (op.op, tuple(value_numbers[a] for a in op.args), op.dtype, op.attrs)
            value_numbers.append(numbers.setdefault(key, len(numbers)))
            if op is None or -1 - slot < first_op:
                continue
            same = [value_numbers[a] for a in op.args]
            if op.op == "where":
                folds, dropped = same[1] == same[2], op.args[0]
            else:
                folds = len(same) == 2 and same[0] == same[1] and \
                    op.op not in _KEEP_EQUAL_OPERANDS
                dropped = op.args[0]
            if folds and self.slots[dropped] < 0:
                raise GroupError(f"{node.kind}: LLVM folds {op.op} of equal operands, and "
                                 f"the ops computing them would not raise NumPy's errors")

    def refuse_constant_folds(self, node: Node, first_op: int) -> None:
        """GroupError if an op from ``first_op`` on reads a value that LLVM knows as a
        constant (``_CONSTANT_FOR_INTEGERS`` of an integer, and ops of such constants
        alone) and LLVM may fold it with its floating-point flags: an op computing in
        floating point on constants alone (np.log(np.isnan(x)) of an int x is log(0) to
        LLVM: -inf, and NumPy's divide-by-zero warning was lost), or an op a constant
        operand may decide beside a value computed in the kernel, whose ops go with it."""
        constant: list[bool] = []
        for n, slot in enumerate(self.slots):
            op = self.ops[-1 - slot] if slot < 0 else None
            if op is None:
                constant.append(False)
                continue
            kinds = [self.dtypes[a].kind for a in op.args]
            constant.append(op.op in _CONSTANT_FOR_INTEGERS and kinds[0] != "f" or
                            op.op == "signbit" and kinds[0] in "bu" or
                            bool(op.args) and all(constant[a] for a in op.args))
            if -1 - slot < first_op or not any(constant[a] for a in op.args):
                continue
            if constant[n] and "f" in (*kinds, self.dtypes[n].kind) and not (
                    op.op == "cast" and kinds[0] != "f"):
                raise GroupError(f"{node.kind}: LLVM folds {op.op} of constants, and with "
                                 f"it the floating-point errors NumPy reports")
            deciding = op.args[:1] if op.op == "where" else op.args
            if op.op in _ABSORBING and any(constant[a] for a in deciding) and any(
                    not constant[a] and self.slots[a] < 0 for a in op.args):
                raise GroupError(f"{node.kind}: a constant operand may decide {op.op}, and "
                                 f"LLVM would drop the ops computing the others")

    def prove_out_check(self, call: ElementwiseCall) -> None:
        """Run the out check on stand-ins of the group's types (see the module docstring):
        GroupError if NumPy raises or warns."""
        *operands, out, dtype_value = call.operands
        dtype = constant_value(dtype_value)
        if dtype is NOT_CONSTANT:
            raise GroupError("out= with a dtype= that is not a constant")
        stand_ins = [self.stand_in(v) for v in operands]
        extra = {} if dtype is None else {"dtype": dtype}
        name = call.ufunc.__name__
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                call.ufunc(*stand_ins, out=self.stand_in(out), **extra)
        except Exception as e:  # noqa: BLE001  (whatever NumPy raises, the interpreter will)
            raise GroupError(f"np.{name}(out=) raises {type(e).__name__}: {e}") from None
        ints = [k for k, v in enumerate(operands)
                if self.kind(v) == "python" and constant_value(v) is NOT_CONSTANT
                and v.type == IntType]
        if ints:
            loop = ufunc_loop(call.ufunc, [self.promotion_type(v) for v in operands],
                              None if dtype is None else np.dtype(dtype))
            if loop is None:
                raise GroupError(f"np.{name}: no loop for the operands")
            self.checked_ints += [(operands[k], loop[0][k]) for k in ints]

    def stand_in(self, v: Value) -> object:
        """What the out check calls the ufunc with for `v` (as its interpreter template
        does): a Python number as itself (NumPy types it by kind; a variable's value only
        matters for an int, see `checked_ints`), anything else as a zero-size array of its
        dtype with one more dimension than it has."""
        kind = self.kind(v)
        c = constant_value(v)
        if kind == "python":
            if c is NOT_CONSTANT:
                self.guard(v)
                return _PYTHON_CLASSES[v.type](0)
            return c
        if c is not NOT_CONSTANT:     # a NumPy scalar constant
            return np.empty((0,), c.dtype)
        n = self.number(v)
        if n is None:
            self.guard(v)
            dtype, rank = np.dtype(v.type.dtype), len(v.type.sizes)
        else:
            dtype, rank = self.dtypes[n], self.value_rank(v)
        return np.empty((0,) * (rank + 1), dtype)

    def compute(self, call: ElementwiseCall) -> int:
        types = [self.promotion_type(v) for v in call.operands]
        if call.kernel == "cast":
            (source,) = call.operands
            if call.assignment:
                if self.kind(source) != "value":
                    raise GroupError("assignment of a scalar (NumPy converts it by value)")
                return self.use(source, None)
            if self.kind(source) == "python":
                return self.use(source, call.cast_to)
            return self.cast(self.use(source, None), call.cast_to, explicit=True)
        if call.kernel == "where":
            loop = loop_dtypes("where", types)
            if loop is None:
                raise GroupError(f"np.where of {', '.join(map(str, types))}")
            result = loop[1]
            cond, x, y = call.operands
            c = self.use(cond, None if self.kind(cond) != "python" else np.dtype(bool))
            return self.op("where", (c, self.use(x, result), self.use(y, result)), result)
        loop = loop_dtypes(call.ufunc, types)
        if loop is None:
            raise GroupError(f"np.{call.ufunc.__name__} has no loop for "
                             f"{', '.join(map(str, types))}")
        in_dtypes, out = loop
        signature = OP_SIGNATURES.get(call.kernel)
        if signature is None:
            raise GroupError(f"the kernel generator has no op {call.kernel!r}")
        power = self.small_power(call, out)
        if power is not None:
            return power
        truthiness = signature.operands == "any"
        args = tuple(self.use(v, None if truthiness and self.kind(v) != "python" else d)
                     for v, d in zip(call.operands, in_dtypes))
        # one value for every element (Python numbers, 0-d arrays): NumPy's inner loop
        # reads it at stride 0, where its clip and power loops take paths of their own
        scalars = call.kernel in OPS_WITH_SCALAR_OPERAND_LOOPS and not any(
            self.rank(a) for a in args[1:])
        if call.kernel in OPS_WITH_SCALAR_OPERAND_LOOPS and not scalars:
            self.stride_zero_check(args, out)
        attrs = (SCALAR_OPERANDS,) if scalars else ()
        if call.kernel == "truediv" and all(map(_integral, types)):
            attrs += (INTEGER_OPERANDS,)
        if scalars and call.power_operator:   # NumPy's fast_scalar_power may take it
            attrs += {IntType: (PYTHON_INT_EXPONENT,),
                      FloatType: (PYTHON_FLOAT_EXPONENT,)}.get(call.operands[1].type, ())
        return self.op(call.kernel, args, out, attrs)

    def stride_zero_check(self, operands: tuple[int, ...], out: np.dtype) -> None:
        """NumPy's float32 and float64 clip and power loops take their scalar paths
        wherever the bounds (the exponent) are read at stride 0: 0-d, and also arrays of
        one element broadcast to more ((1,) or (1, 1) beside a larger base), or of one
        element among operands of other ranks (NumPy's iterator then reads every operand
        of its one element at stride 0; operands of one shape take the trivial loop,
        which does not). The kernel takes its array path for bounds of some rank, so such
        a call runs in NumPy."""
        if out not in _STRIDE_ZERO_LOOPS:
            return
        base, *bounds = operands
        one_rank = len({self.rank(a) for a in operands if self.rank(a)}) == 1
        if one_rank and not self.ancestors[base]:   # a scalar base: one element at most
            return
        self.size_one_checks.append((frozenset().union(*(self.ancestors[a] for a in bounds)),
                                     self.ancestors[base] if one_rank else None))

    def small_power(self, call: ElementwiseCall, out: np.dtype) -> int | None:
        """`x ** c` for the exponents in _POWERS in a float32 or float64 loop (NumPy's loop
        has the same special cases whatever the base's own dtype)."""
        if call.kernel != "pow" or out.kind != "f" or out.itemsize < 4:
            return None
        base, exponent = call.operands
        c = constant_value(exponent)
        if type(c) not in (int, float) or c not in _POWERS:
            return None
        # x*x*x rounds twice: in float32 it overflows where pow's result is the finite
        # largest float; in float64 (exact square, then one rounding) and rounded once to
        # float32 it is within 1 ulp of pow and overflows as pow does.
        work = np.dtype(np.float64) if c == 3 else out
        x = self.cast(self.use(base, out), work)
        # pow's NaN of a NaN: x quieted, its sign bit cleared where cube_nan_positive, set
        # by a select after the products (one select of the narrow result instead of
        # _self_product's in float64), which frees the square from giving it
        nan_positive = c == 3 and numpy_nans.cube_nan_positive(dtype_name(out))
        n = x
        for name in _POWERS[c]:
            attrs = (NAN_FIXED_LATER,) if nan_positive and name == "square" else ()
            n = self.op(name, (n, x) if name == "mul" else (n,), work, attrs)
        n = self.cast(n, out)
        if nan_positive:
            n = self.op("where", (self.op("isnan", (n,), np.dtype(bool)),
                                  self.op("abs", (n,), out), n), out)
        return n

    def write(self, node: Node, call: ElementwiseCall, result: int) -> None:
        target = call.target
        root = self.root_of.get(target)
        if root is None:
            if self.kind(target) != "value":
                raise GroupError(f"{node.kind} on a scalar rebinds it instead of writing")
            root = target
            self.use(target, None)    # the array is an input (or a value computed here)
        dtype = self.dtypes[self.number(root)]
        if self.dtypes[result] != dtype and not call.assignment and \
                not np.can_cast(self.dtypes[result], dtype, "same_kind"):
            raise GroupError(f"{node.kind}: NumPy cannot write {self.dtypes[result]} into "
                             f"{dtype} (same_kind casting)")
        result = self.cast(result, dtype)
        if root not in self.current:
            self.written.append(root)
            self.root_of[root] = root
        self.current[root] = result
        for v in node.outputs:
            self.root_of[v] = root

    # ---- the kernel
    def finish(self, nodes: list[Node], used_outside) -> FusedKernel:
        for v, dtype in self.checked_ints:
            if (v, dtype) not in self.scalar_inputs:
                raise GroupError(f"an out check's int %{v.name or '?'} is not converted to "
                                 f"{dtype} by the group (nothing checks its range)")
        arrays = frozenset(i for i, inp in enumerate(self.inputs) if not inp.is_scalar)
        out_rank = max((self.inputs[i].rank for i in arrays), default=0)
        outputs: list[GroupOutput] = []
        numbers: list[int] = []
        inplace: list[int | None] = []
        checks: set[frozenset[int]] = set()
        external = set(self.group_inputs)
        members = [v for n in nodes for v in n.outputs]
        for root in self.written:
            values = [v for v in members if self.root_of.get(v) is root]
            is_input = root in external
            if not is_input and not any(map(used_outside, values)):
                continue
            n = self.current[root]
            start = self.numbers[root]
            numbers.append(n)
            inplace.append(self.slots[start] if is_input else None)
            checks.add(frozenset({self.slots[start]}) if is_input else self.ancestors[start])
            outputs.append(GroupOutput(root, values, self.output_type(n, out_rank)))
        for v in members:
            if v in self.root_of or not used_outside(v):
                continue
            n = self.numbers[v]
            numbers.append(n)
            inplace.append(None)
            checks.add(self.ancestors[n])
            outputs.append(GroupOutput(v, [v], self.output_type(n, out_rank)))
        if not outputs:
            raise GroupError("no result of the group is used")
        for n in numbers:
            if self.rank(n) != out_rank:
                raise GroupError(f"a result of rank {self.rank(n)} in a rank-{out_rank} group "
                                 f"(NumPy gives it its own, smaller shape)")
        ops = tuple(KernelOp(op.op, tuple(map(self.final, op.args)), op.dtype, op.attrs)
                    for op in self.ops)
        spec = KernelSpec(tuple(self.inputs), ops, tuple(map(self.final, numbers)),
                          tuple(inplace))
        ok, reason = supports(spec)
        if not ok:
            raise GroupError(f"the kernel generator refuses it: {reason}")
        if reports_are_ambiguous(spec):
            raise GroupError("two ops that may report floating-point errors read an array "
                             "written in place (which of them raised could not be told)")
        if invalid_values_vary(spec) and any(t in {a for op in ops for a in op.args}
                                              for t in inplace if t is not None):
            raise GroupError("a float -> uint32 cast in a kernel that overwrites what it "
                             "reads: where it flags invalid, NumPy's values are wanted and "
                             "the ops could not run again")
        value_types = {v: self.output_type(self.number(v), out_rank) for v in members}
        return FusedKernel(spec, list(self.group_inputs), tuple(self.feeds), outputs,
                           tuple(c for c in checks if c != arrays),
                           tuple(i for i in inplace if i is not None),
                           {v: self.input_type(v) for v in self.group_inputs},
                           dict(self.range_checks), value_types, frozenset(self.raising),
                           tuple(self.size_one_checks), self)

    def final(self, vid: int) -> int:
        """The KernelSpec value number of value id `vid` (inputs first, then ops)."""
        slot = self.slots[vid]
        return slot if slot >= 0 else len(self.inputs) - 1 - slot

    def input_type(self, v: Value) -> Type:
        """The type the kernel assumes for group input `v` (what its guard checks): a
        Python scalar's exact type, or a NumPy value's dtype, rank and ndarray-ness."""
        if self.kind(v) == "python":
            return v.type
        t = v.type
        return TensorType(t.dtype, (None,) * len(t.sizes), None, t.ndarray)

    def output_type(self, n: int, rank: int) -> TensorType:
        return TensorType(dtype_name(self.dtypes[n]), (None,) * rank, None, True)
