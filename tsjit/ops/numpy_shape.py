"""ndarray attributes and NumPy's shape functions: views, reshaping, joining, splitting,
copies, element access and the in-place writes (fill, copyto).

Ops whose result may share memory with an argument say `views=True`; reshape and ravel
copy or not as NumPy decides at run time, so they are views too.  Ops that mutate an
argument say `writes=(k,)`.  Results keep the input's dtype; sizes are refined where the
constant arguments make them certain.
"""
from __future__ import annotations

import numpy as np

from ..ir.types import (
    AnyType,
    DTypeType,
    IntType,
    ListType,
    NoneType,
    TensorType,
    TupleType,
    Type,
    VarTupleType,
)
from .numpy_rules import (
    ANYTHING,
    ARRAY,
    OPTIONAL_SHAPE,
    SHAPE,
    UNKNOWN,
    CallTypes,
    ResultRule,
    define,
    dtype_of,
    dtype_or,
    element_count,
    is_literal,
    normalize_axes,
    rank_of,
    same_as,
    shape_sizes,
    sizes_of,
    tensor,
)
from .promotion import common_dtype

Sizes = tuple[int | None, ...] | None


def _like(call: CallTypes, sizes: Sizes, ndarray: bool | None = True) -> TensorType:
    """A result with the first argument's dtype."""
    return tensor(dtype_of(call.types[0]), sizes, ndarray)


def _scalar_kept(t: Type) -> bool | None:
    """Ops that keep a NumPy scalar a scalar (x.T, x.copy()) keep the ndarray flag."""
    return t.ndarray if isinstance(t, TensorType) else None


# -- attributes --

_INT_TUPLE = VarTupleType(IntType)
for _name, _type in [("shape", _INT_TUPLE), ("strides", _INT_TUPLE), ("ndim", IntType),
                     ("size", IntType), ("itemsize", IntType), ("nbytes", IntType),
                     ("dtype", DTypeType)]:
    define(f"ndarray::{_name}", "a", lambda call, t=_type: t, f"{{0}}.{_name}",
           attributes=((TensorType, _name),), may_raise=False)

define("numpy::shape", "a", lambda call: _INT_TUPLE, "np.shape", python=(np.shape,))
define("numpy::ndim", "a", lambda call: IntType, "np.ndim", python=(np.ndim,))
define("numpy::size", "a, axis=None", lambda call: IntType, "np.size", python=(np.size,))


# -- transposition --

def _permuted(call: CallTypes, axes: object) -> Type:
    """a.transpose(axes): None reverses; a constant permutation permutes known sizes."""
    sizes, keep = sizes_of(call.types[0]), _scalar_kept(call.types[0])
    if sizes is None or axes is None:
        return _like(call, None if sizes is None else sizes[::-1], keep)
    if axes is UNKNOWN or sorted(axes) != list(range(len(sizes))):
        return _like(call, (None,) * len(sizes), keep)
    return _like(call, tuple(sizes[d] for d in axes), keep)


def _method_axes(axes: object) -> object:
    """x.transpose() / x.transpose(None) / x.transpose((1, 0)) / x.transpose(1, 0)."""
    if axes is UNKNOWN or len(axes) > 1:
        return axes
    return None if not axes or axes[0] is None else tuple(axes[0])


define("ndarray::T", "a", lambda call: _permuted(call, None), "{0}.T",
       attributes=((TensorType, "T"),), may_raise=False, views=True)
def _part(which: str):
    """x.real / x.imag: the component dtype of a complex array (float64 of complex128), the
    array's own dtype otherwise; a view of the same shape (imag of a real array is zeros)."""
    def result(call):
        t, dtype = call["a"], dtype_of(call["a"])
        part = None if dtype is None else getattr(np.zeros(0, dtype), which).dtype
        return tensor(part, sizes_of(t), t.ndarray if isinstance(t, TensorType) else None)
    return result


for _which in ("real", "imag"):
    define(f"ndarray::{_which}", "a", _part(_which), f"{{0}}.{_which}",
           attributes=((TensorType, _which),), may_raise=False, views=True)


define("numpy::transpose", "a, axes=None", lambda call: _permuted(call, call.const("axes")),
       "np.transpose", python=(np.transpose,), views=True)
define("ndarray::transpose", "a, /, *axes",
       lambda call: _permuted(call, _method_axes(call.const("axes"))), ".transpose",
       kinds={"axes": OPTIONAL_SHAPE}, views=True)


def _swapped(call: CallTypes) -> Type:
    sizes, a1, a2 = sizes_of(call["a"]), call.const("axis1"), call.const("axis2")
    if sizes is None or a1 is UNKNOWN or a2 is UNKNOWN:
        return _permuted(call, UNKNOWN)
    order = list(range(len(sizes)))
    if not all(-len(sizes) <= d < len(sizes) for d in (a1, a2)):
        return _permuted(call, UNKNOWN)
    order[a1], order[a2] = order[a2], order[a1]
    return _permuted(call, tuple(order))


define("numpy::swapaxes", "a, axis1, axis2", _swapped, "np.swapaxes", python=(np.swapaxes,),
       method="swapaxes", views=True)
define("numpy::moveaxis", "a, source, destination", lambda call: _permuted(call, UNKNOWN),
       "np.moveaxis", python=(np.moveaxis,), views=True)


# -- reshaping --

def _target_shape(call: CallTypes, shape: Type, value: object) -> Sizes:
    """The sizes of a reshape of the first argument to `shape` (an int or a tuple of ints,
    `value` when constant): the rank from the type, extents from the value, -1 resolved
    against the input's element count."""
    named = shape_sizes(shape, value)
    if named is None:
        return None
    extents = [None if e == -1 else e for e in named]
    total = element_count(sizes_of(call.types[0]))
    rest = element_count(tuple(e for e in extents if e is not None))
    if value is not UNKNOWN and extents.count(None) == 1 and total is not None and rest:
        extents[extents.index(None)] = total // rest
    return tuple(extents)


def _method_shape(call: CallTypes) -> tuple[Type, object]:
    """x.reshape(2, 3) and x.reshape((2, 3)): the shape as one argument."""
    shapes, values = call.all_of("shape"), call.const("shape")
    if len(shapes) == 1:
        return shapes[0], UNKNOWN if values is UNKNOWN else values[0]
    return TupleType(shapes), values


def _reshaped(call: CallTypes, shape: Type, value: object) -> Type:
    sizes = _target_shape(call, shape, value)
    return _like(call, sizes, True if sizes else None)   # a 0-d result may be a scalar


define("numpy::reshape", "a, /, shape, order='C', *, copy=None",
       lambda call: _reshaped(call, call["shape"], call.const("shape")),
       "np.reshape", python=(np.reshape,), views=True)
define("ndarray::reshape", "a, /, *shape, order='C', copy=None",
       lambda call: _reshaped(call, *_method_shape(call)),
       ".reshape", kinds={"shape": SHAPE}, views=True)


def _flat(call: CallTypes) -> Type:
    sizes = sizes_of(call.types[0])
    return _like(call, None if sizes is None else (element_count(sizes),))


define("numpy::ravel", "a, order='C'", _flat, "np.ravel", python=(np.ravel,), method="ravel",
       views=True)
define("ndarray::flatten", "a, order='C'", _flat, ".flatten")


def _squeezed(call: CallTypes) -> Type:
    sizes, axis = sizes_of(call["a"]), call.const("axis")
    if sizes is None or axis is UNKNOWN or (axis is None and None in sizes):
        return _like(call, None, None)
    axes = normalize_axes(axis, len(sizes)) if axis is not None else tuple(
        d for d, s in enumerate(sizes) if s == 1)
    kept = None if axes is None else tuple(s for d, s in enumerate(sizes) if d not in axes)
    return _like(call, kept, None)


define("numpy::squeeze", "a, axis=None", _squeezed, "np.squeeze", python=(np.squeeze,),
       method="squeeze", views=True)


def _expanded(call: CallTypes) -> Type:
    sizes, axis = sizes_of(call["a"]), call.const("axis")
    if sizes is None or axis is UNKNOWN:
        return _like(call, None)
    axes = normalize_axes(axis, len(sizes) + (len(axis) if isinstance(axis, tuple) else 1))
    if axes is None:
        return _like(call, None)
    rest = iter(sizes)
    return _like(call, tuple(1 if d in axes else next(rest)
                             for d in range(len(sizes) + len(axes))))


define("numpy::expand_dims", "a, axis", _expanded, "np.expand_dims", kinds={"axis": SHAPE},
       python=(np.expand_dims,), views=True)


def _same_rank(call: CallTypes) -> Type:
    rank = rank_of(call.types[0])
    return _like(call, None if rank is None else (None,) * rank)


for _fn in (np.flip, np.fliplr, np.flipud):
    define(f"numpy::{_fn.__name__}", "m, axis=None" if _fn is np.flip else "m", _same_rank,
           f"np.{_fn.__name__}", python=(_fn,), views=True)


define("numpy::broadcast_to", "array, shape, subok=False",
       lambda call: _like(call, _target_shape(call, call["shape"], call.const("shape"))),
       "np.broadcast_to", python=(np.broadcast_to,), views=True)
define("numpy::broadcast_arrays", "*args, subok=False",
       lambda call: TupleType((tensor(),) * len(call.all_of("args"))),
       "np.broadcast_arrays", kinds={"args": ARRAY}, python=(np.broadcast_arrays,),
       views=True)


def _each_as_array(call: CallTypes) -> Type:
    """np.atleast_1d(a) is an array; np.atleast_1d(a, b) a tuple of them."""
    outs = tuple(tensor(dtype_of(t), None, True) for t in call.all_of("arys"))
    return outs[0] if len(outs) == 1 else TupleType(outs)


for _fn in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    define(f"numpy::{_fn.__name__}", "*arys", _each_as_array, f"np.{_fn.__name__}",
           kinds={"arys": ARRAY}, python=(_fn,), views=True)


# -- joining and splitting --

def _elements(t: Type) -> list[Type] | None:
    """The element types of a sequence of arrays, if the type lists them."""
    if isinstance(t, TupleType):
        return list(t.elems)
    if isinstance(t, ListType):
        return [t.elem]
    return None


def _joined(extra_rank: int) -> ResultRule:
    """concatenate (extra_rank 0) and stack (1): the promoted dtype of the inputs."""
    def result(call: CallTypes) -> Type:
        elems = _elements(call.types[0])
        dtype = dtype_or(call, None if elems is None else common_dtype(elems))
        ranks = {rank_of(e) for e in elems or ()}
        rank = ranks.pop() if len(ranks) == 1 else None
        return tensor(dtype, None if rank is None else (None,) * (rank + extra_rank), True)
    return result


define("numpy::concatenate", "arrays, /, axis=0, out=None, *, dtype=None, casting='same_kind'",
       _joined(0), "np.concatenate", python=(np.concatenate,))
define("numpy::stack", "arrays, axis=0, out=None, *, dtype=None, casting='same_kind'",
       _joined(1), "np.stack", python=(np.stack,))
for _fn in (np.vstack, np.hstack):
    define(f"numpy::{_fn.__name__}", "tup, *, dtype=None, casting='same_kind'",
           lambda call: tensor(dtype_or(call, None), None, True),
           f"np.{_fn.__name__}", python=(_fn,))
for _fn in (np.column_stack, np.dstack):
    define(f"numpy::{_fn.__name__}", "tup", lambda call: tensor(ndarray=True),
           f"np.{_fn.__name__}", python=(_fn,))
define("numpy::append", "arr, values, axis=None", lambda call: tensor(ndarray=True),
       "np.append", python=(np.append,))
for _fn in (np.split, np.array_split):
    define(f"numpy::{_fn.__name__}", "ary, indices_or_sections, axis=0",
           lambda call: ListType(_same_rank(call)), f"np.{_fn.__name__}", python=(_fn,),
           views=True)
for _fn in (np.hsplit, np.vsplit, np.dsplit):
    define(f"numpy::{_fn.__name__}", "ary, indices_or_sections",
           lambda call: ListType(_same_rank(call)), f"np.{_fn.__name__}", python=(_fn,),
           views=True)

define("numpy::tile", "A, reps", lambda call: _like(call, None), "np.tile", python=(np.tile,))
define("numpy::repeat", "a, repeats, axis=None", lambda call: _like(call, None), "np.repeat",
       python=(np.repeat,), method="repeat")
define("numpy::roll", "a, shift, axis=None", same_as("a", ndarray=True), "np.roll",
       python=(np.roll,))


# -- copies and contiguity --

define("numpy::copy", "a, order='K', subok=False", same_as("a", ndarray=True), "np.copy",
       python=(np.copy,))
define("ndarray::copy", "a, order='C'", same_as("a"), ".copy")


def _contiguous(call: CallTypes) -> Type:
    """np.ascontiguousarray: at least 1-D, in the requested dtype; may be the input."""
    sizes = sizes_of(call["a"])
    return tensor(dtype_or(call, dtype_of(call["a"])), sizes if sizes != () else (1,), True)


for _fn in (np.ascontiguousarray, np.asfortranarray):
    define(f"numpy::{_fn.__name__}", "a, dtype=None", _contiguous, f"np.{_fn.__name__}",
           python=(_fn,), views=True)


def _view_result(call: CallTypes) -> Type:
    """x.view() is x's type; x.view(dtype) reinterprets the bytes (sizes may change)."""
    if call["dtype"] == NoneType:
        return same_as("a")(call)
    return tensor(dtype_or(call, None), None, None)


define("ndarray::view", "a, dtype=None", _view_result, ".view", views=True)


# -- diagonals, triangles, gathering --

def _triangle(call: CallTypes) -> Type:
    """np.tril/np.triu keep a matrix's sizes; a vector becomes the square matrix of its
    repeated rows."""
    sizes = sizes_of(call["m"])
    return _like(call, sizes * 2 if sizes is not None and len(sizes) == 1 else sizes)


for _fn in (np.tril, np.triu):
    define(f"numpy::{_fn.__name__}", "m, k=0", _triangle, f"np.{_fn.__name__}", python=(_fn,))


def _diag_result(call: CallTypes) -> Type:
    rank = rank_of(call["v"])
    return _like(call, {1: (None, None), 2: (None,)}.get(rank))


define("numpy::diag", "v, k=0", _diag_result, "np.diag", python=(np.diag,),
       views=True)   # of a matrix: a view of its diagonal
define("numpy::diagonal", "a, offset=0, axis1=0, axis2=1",
       lambda call: _like(call, None if rank_of(call["a"]) is None
                          else (None,) * (rank_of(call["a"]) - 1)),
       "np.diagonal", python=(np.diagonal,), method="diagonal", views=True)
define("numpy::take", "a, indices, axis=None, out=None, mode='raise'",
       lambda call: _like(call, None, None), "np.take", python=(np.take,), method="take")
define("numpy::take_along_axis", "arr, indices, axis=-1",
       lambda call: _like(call, sizes_of(call["indices"])), "np.take_along_axis",
       python=(np.take_along_axis,))


# -- element access and in-place writes --

# x.item() and x.tolist() give Python values whose type depends on the dtype.
define("ndarray::item", "a, *args", lambda call: AnyType, ".item",
       kinds={"args": SHAPE})
define("ndarray::tolist", "a", lambda call: AnyType, ".tolist")
define("ndarray::fill", "a, value", lambda call: None, ".fill", writes=(0,))
define("numpy::copyto", "dst, src, casting='same_kind', where=True", lambda call: None,
       "np.copyto", python=(np.copyto,), writes=(0,))
define("numpy::fill_diagonal", "a, val, wrap=False", lambda call: None, "np.fill_diagonal",
       python=(np.fill_diagonal,), writes=(0,))


# -- rotating, padding, resizing, inserting and deleting --

define("numpy::rot90", "m, k=1, axes=(0, 1)", _same_rank, "np.rot90", python=(np.rot90,),
       views=True)


def _pad_call(args: list[str], attrs: dict) -> str:
    """np.pad rejects constant_values= in other modes than 'constant': None leaves it out."""
    array, width, mode, values = args
    plain = f"np.pad({array}, {width}, {mode})"
    if values == "None":
        return plain
    given = f"np.pad({array}, {width}, {mode}, constant_values={values})"
    return given if is_literal(values) else f"({plain} if {values} is None else {given})"


define("numpy::pad", "array, pad_width, mode='constant', *, constant_values=None",
       _same_rank, _pad_call, kinds={"pad_width": ANYTHING, "constant_values": ANYTHING},
       python=(np.pad,))
define("numpy::resize", "a, new_shape",
       lambda call: _like(call, _target_shape(call, call["new_shape"],
                                              call.const("new_shape"))),
       "np.resize", kinds={"new_shape": SHAPE}, python=(np.resize,))


def _edited(call: CallTypes) -> Type:
    """np.insert / np.delete: flattened without an axis, else the input's rank."""
    if call.const("axis") is None:
        return _like(call, (None,))
    return _same_rank(call)


define("numpy::insert", "arr, obj, values, axis=None", _edited, "np.insert",
       kinds={"obj": ARRAY}, python=(np.insert,))
define("numpy::delete", "arr, obj, axis=None", _edited, "np.delete", kinds={"obj": ARRAY},
       python=(np.delete,))
