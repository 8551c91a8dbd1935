"""Native rules for reading sequences: `seq[i]` and `len(seq)` of arrays (numpy_ops), tuples,
array shapes (`x.shape[k]`) and lists of numbers that the region only reads.

Indices follow Python: negative ones count from the end, and an index out of range runs
the read in Python, which raises the IndexError of the sequence's type (NumPy's message
for arrays, "tuple index out of range", "list index out of range").
"""
from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from ...ir.graph import Node
from . import cpython
from .arith import const
from .boundary import list_items, unbox
from .emitter import FunctionEmitter
from .ntypes import (
    I64,
    PTR,
    PY_BOOL,
    PY_INT,
    Array,
    NType,
    NValue,
    PyList,
    Shape,
    Tuple,
    Unsupported,
)
from .numpy_ops import array_length, element_infer, element_read, index_check
from .rules import register_rule


def _items(kind: NType) -> tuple[NType, ...]:
    return kind.elems if isinstance(kind, Tuple) else (PY_INT,) * kind.rank


def _getitem_infer(node: Node, kinds) -> list[NType]:
    seq, index = kinds
    if isinstance(seq, Array):
        return [element_infer(seq, index)]
    if index != PY_INT:
        raise Unsupported(f"{seq}[{index}]")
    if isinstance(seq, PyList):
        return [seq.elem]
    if isinstance(seq, (Shape, Tuple)):
        items = _items(seq)
        if any(item != items[0] for item in items):
            raise Unsupported("indexing a tuple of mixed kinds with a variable")
        return [items[0]] if items else [PY_INT]
    raise Unsupported(f"indexing {seq}")


def _wrap(b: ir.IRBuilder, i: ir.Value, size: ir.Value) -> tuple[ir.Value, ir.Value]:
    """i counted from the end when negative, and whether it is out of range."""
    wrapped = b.select(b.icmp_signed("<", i, const(I64, 0)), b.add(i, size), i)
    return wrapped, b.icmp_unsigned(">=", wrapped, size)


def _tuple_item(em: FunctionEmitter, node: Node, args: Sequence[NValue], kind: NType
                ) -> list[NValue]:
    """shape[k] / tuple[k]: a select over the items."""
    b = em.b
    seq, index = args
    n = len(seq.parts)
    if not n:
        return em.python_fallback(node, args)
    wrapped, outside = _wrap(b, index.value, const(I64, n))
    value = seq.parts[0]
    for k in range(1, n):
        value = b.select(b.icmp_signed("==", wrapped, const(I64, k)), seq.parts[k], value)
    return em.python_fallback(node, args, outside, [NValue(kind, (value,))])


def _list_item(em: FunctionEmitter, node: Node, args: Sequence[NValue], kind: NType
               ) -> list[NValue]:
    """list[i].  The guard checked every item's kind on entry; the read checks its item's
    type again (a callback such as a warning filter could have replaced it), so a
    surprise takes the interpreter's path instead of misreading memory."""
    b = em.b
    seq, index = args
    size, items = list_items(em, seq.value)
    wrapped, outside = _wrap(b, index.value, size)

    def read() -> list[NValue]:
        item = b.load(b.gep(items, [wrapped], source_etype=PTR), typ=PTR)
        if kind == PY_BOOL:
            same = b.or_(b.icmp_unsigned("==", item, em.object(True)),
                         b.icmp_unsigned("==", item, em.object(False)))
        else:
            python_type = int if kind == PY_INT else float
            same = b.icmp_unsigned("==", cpython.type_of(b, item), em.object(python_type))
        return em.python_fallback(node, args, b.not_(same), lambda: [unbox(em, item, kind)])
    return em.python_fallback(node, args, outside, read)


def _getitem_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    kind = args[0].kind
    if isinstance(kind, Array):
        return element_read(em, node, args, out_kinds[0])
    if isinstance(kind, PyList):
        return _list_item(em, node, args, out_kinds[0])
    return _tuple_item(em, node, args, out_kinds[0])


def _len_infer(node: Node, kinds) -> list[NType]:
    if not isinstance(kinds[0], (Array, PyList, Shape, Tuple)):
        raise Unsupported(f"len of {kinds[0]}")
    return [PY_INT]


def _len_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    (seq,) = args
    if isinstance(seq.kind, Array):
        return array_length(em, node, args)
    if isinstance(seq.kind, PyList):
        return [NValue(PY_INT, (list_items(em, seq.value)[0],))]
    return [NValue(PY_INT, (const(I64, len(_items(seq.kind))),))]


register_rule("aten::__getitem__", _getitem_infer, _getitem_emit, index_check)
register_rule("aten::len", _len_infer, _len_emit)
