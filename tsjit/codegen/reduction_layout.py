"""How a reduction kernel walks its operands: the iteration shape laid out as NumPy walks it.

A row kernel (``reduction_spec``) sees ``rows`` rows of ``n`` elements: the trailing
``row_axes`` axes make the row and must be one contiguous run in every array that spans
them (NumPy then sums the run pairwise, as the kernel does); the leading axes collapse
into one row stride per operand.  A column kernel sees ``(O, R, I)``: the kept axes
before the reduced block, the block, the kept axes after it; ``O`` and ``R`` collapse
into one stride each per operand and ``I`` is contiguous.  Broadcast axes have stride 0.

Fortran-ordered operands NumPy walks last axis outermost: the launcher then transposes
them and runs the kernel of the reversed axes (``fortran_ordered``, ``reversed_axes``).
Rows laid out otherwise in C-like operands (a 1-D slice, a reversed view, a 2-D slice or
an operand broadcast along some of the row's axes, reduced whole) NumPy sums in their
logical order too where the reduced value is an elementwise temporary (C-ordered), or an
input whose row is one stride: a strided row kernel walks them so
(``strided_row_layout``).  Otherwise (operands of different orders, a reduction of an
input NumPy walks in buffers) NumPy's iterator would walk them in another order, so
these functions raise ``LayoutError`` and the group runs as NumPy calls instead.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from tsjit.codegen.reduction_spec import RowKernelSpec

__all__ = ["LayoutError", "column_layout", "fortran_ordered", "kept_shape", "reversed_axes",
           "row_layout", "strided_row_layout"]


class LayoutError(ValueError):
    """The operands' layout is not one the kernel computes as NumPy does (module doc)."""


def _aligned_strides(array: np.ndarray, shape: tuple[int, ...]) -> list[int]:
    """``array``'s byte strides broadcast to ``shape`` (0 along broadcast axes)."""
    strides = [0] * len(shape)
    offset = len(shape) - array.ndim
    for d in range(array.ndim):
        if array.shape[d] != 1:
            strides[offset + d] = array.strides[d]
    return strides


def _collapsed(sizes: tuple[int, ...], strides: list[int]) -> int:
    """The one stride of axes that collapse into a single one (C order), else LayoutError."""
    stride, inner = 0, None
    for d in reversed(range(len(sizes))):
        if sizes[d] == 1:
            continue
        if inner is None:
            stride = strides[d]
        elif strides[d] != inner[0] * inner[1]:
            raise LayoutError("axes that do not collapse into one")
        inner = (strides[d], sizes[d])
    return stride


def _contiguous(array: np.ndarray, sizes: tuple[int, ...], strides: list[int]) -> None:
    """Raise LayoutError unless the axes of ``sizes`` are one contiguous run of ``array``."""
    if math.prod(sizes) > 1 and _collapsed(sizes, strides) != array.itemsize:
        raise LayoutError("a run that is not contiguous")


def row_layout(arrays: list[np.ndarray], per_row: list[bool], shape: tuple[int, ...],
               row_axes: int) -> tuple[int, int, list[int]]:
    """``(rows, n, row stride per array)``; ``per_row``: the array holds one value per row
    (its last size is 1)."""
    if not shape:
        raise LayoutError("no axis to reduce")
    lead, row = shape[:-row_axes], shape[-row_axes:]
    strides = []
    for array, single in zip(arrays, per_row):
        aligned = _aligned_strides(array, shape)
        if not single:
            _contiguous(array, row, aligned[-row_axes:])
        strides.append(_collapsed(lead, aligned[:-row_axes]))
    return math.prod(lead), math.prod(row), strides


def strided_row_layout(arrays: list[np.ndarray], per_row: list[bool], direct: list[bool],
                       shape: tuple[int, ...], row_axes: int) -> tuple[int, int, list[int]]:
    """``(rows, n, block)`` for a strided row kernel (``reduction_strided``): ``block``
    holds a row stride per array, then each array's element stride, its outer stride and
    the piece length ``m``.  The row splits at one axis into pieces (its outer axes) of
    ``m`` elements (its inner axes), each part collapsing into one stride of any sign in
    every array (0 for a value kept per row); one piece where the whole row collapses.  The
    operands must be C-like (NumPy lays their temporaries out C-ordered), and an array a
    reduction reads itself (``direct``) one piece (NumPy walks it as it is: one run only
    where it is one stride)."""
    if not shape:
        raise LayoutError("no axis to reduce")
    lead, row = shape[:-row_axes], shape[-row_axes:]
    aligned = [_aligned_strides(array, shape) for array in arrays]
    for strides in aligned:
        moving = [abs(s) for s, size in zip(strides, shape) if size > 1 and s]
        if moving != sorted(moving, reverse=True):
            raise LayoutError("an operand NumPy walks in another order than C's")
    for cut in range(len(row)):
        try:
            inner = [0 if single else _collapsed(row[cut:], strides[len(lead) + cut:])
                     for single, strides in zip(per_row, aligned)]
            outer = [0 if single else _collapsed(row[:cut], strides[len(lead):len(lead) + cut])
                     for single, strides in zip(per_row, aligned)]
        except LayoutError:
            continue
        for single, read, strides in zip(per_row, direct, aligned):
            if read and cut and not single:   # NumPy walks it alone: one stride?
                _collapsed(row, strides[len(lead):])
        strides = [_collapsed(lead, a[:len(lead)]) for a in aligned]
        return math.prod(lead), math.prod(row), [*strides, *inner, *outer,
                                                 math.prod(row[cut:])]
    raise LayoutError("a row that does not split into pieces of one stride")


def column_layout(arrays: list[np.ndarray], shape: tuple[int, ...], block: tuple[int, int]
                  ) -> tuple[tuple[int, int, int], list[int], list[int], tuple[int, ...]]:
    """``((O, R, I), o-stride per array, r-stride per array, broadcast)`` for the reduced
    ``block``: each array is contiguous along the inner axes, or (its position in
    ``broadcast``) broadcast along all of them, one value per reduced row."""
    start, stop = block
    outer, reduced, inner = shape[:start], shape[start:stop], shape[stop:]
    if math.prod(inner) == 1 and math.prod(reduced) > 1:
        # NumPy's iterator drops axes of length 1: the reduced rows are one run, which its
        # add loop sums pairwise, where a column kernel adds row after row ((x * 1.5)
        # .sum(axis=0) of shape (65539, 1) differed by 556 ulp in a variance)
        raise LayoutError("the kept inner axes have one element: NumPy sums the reduced "
                          "block as a run (pairwise)")
    outer_strides, row_strides, broadcast = [], [], []
    for k, array in enumerate(arrays):
        aligned = _aligned_strides(array, shape)
        if math.prod(inner) > 1 and not any(aligned[stop:]):
            broadcast.append(k)
        else:
            _contiguous(array, inner, aligned[stop:])
        outer_strides.append(_collapsed(outer, aligned[:start]))
        row_strides.append(_collapsed(reduced, aligned[start:stop]))
    return ((math.prod(outer), math.prod(reduced), math.prod(inner)), outer_strides,
            row_strides, tuple(broadcast))


def kept_shape(shape: tuple[int, ...], axes: range, keepdims: bool) -> tuple[int, ...]:
    """The shape of a reduction of ``axes`` of ``shape``."""
    if keepdims:
        return tuple(1 if d in axes else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in axes)


def fortran_ordered(arrays: list[np.ndarray], shape: tuple[int, ...]) -> bool:
    """Whether NumPy walks these operands (and the temporaries of their elementwise ops,
    which it lays out alike) last axis outermost: in every one, the axes that advance
    in memory have strides growing with the axis (none negative), and in some one two
    axes or more advance. An operand with one axis advancing does not order the axes:
    NumPy then lays temporaries out C-ordered (``np.broadcast_to(row, (m, n)) * 3``).
    Nor do broadcast axes (stride 0), which NumPy's iterator places by rules of its own
    where there are three axes or more: such operands are not taken for Fortran-ordered.
    Operands with no axis advancing (empty, or one value broadcast) fit either order."""
    advancing = []
    for array in arrays:
        aligned = _aligned_strides(array, shape)
        strides = [s for s, n in zip(aligned, shape) if n > 1 and s]
        if any(s < 0 for s in strides) or strides != sorted(set(strides)):
            return False
        if strides and len(shape) > 2 and any(n > 1 and not s for s, n in zip(aligned, shape)):
            return False
        advancing.append(len(strides))
    return max(advancing, default=0) != 1


def reversed_axes(spec: RowKernelSpec) -> RowKernelSpec:
    """``spec`` for the transposed iteration shape: its reduced block of axes reversed."""
    rank = spec.out_rank
    if spec.full:
        return spec
    start, stop = spec.column or (rank - spec.row_axes, rank)
    start, stop = rank - stop, rank - start
    if stop == rank:
        return dataclasses.replace(spec, column=None, row_axes=stop - start,
                                   full=stop - start == rank and rank > 1, inner_broadcast=())
    return dataclasses.replace(spec, column=(start, stop), row_axes=1, inner_broadcast=())
