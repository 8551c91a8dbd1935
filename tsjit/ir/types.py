"""The static type lattice of the IR.

Types are immutable and hashable so that passes can use them as dictionary keys
(specialization caches, CSE).  `Tensor` stands for any NumPy value: an ndarray or
a NumPy scalar (`np.float32(1)`), because NumPy itself moves between the two
(`x.sum()` of an array is a scalar, `scalar + array` is an array); the optional
refinements (dtype, sizes, layout, ndarray) are what profiling learns and guards
check.  Script classes, modules and enums keep a reference to their Python class,
so instances are real instances of the user's class.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import ClassVar


class Type:
    """Base of all IR types; `str()` is the TorchScript text form."""

    __slots__ = ()

    def contained(self) -> tuple[Type, ...]:
        return ()

    @property
    def annotation(self) -> str:
        """The Python annotation spelling, used by `.code` and `.schema`."""
        return str(self)


@dataclass(frozen=True)
class _Singleton(Type):
    name: str

    def __str__(self) -> str:
        return self.name


IntType = _Singleton("int")
FloatType = _Singleton("float")
BoolType = _Singleton("bool")
StrType = _Singleton("str")
NoneType = _Singleton("NoneType")
AnyType = _Singleton("Any")
DTypeType = _Singleton("DType")          # np.float32, x.dtype
NoReturnType = _Singleton("NoReturn")    # the value of an expression that always raises
UninitializedType = _Singleton("Uninitialized")  # bottom: a value on a path that exits
ComplexType = _Singleton("complex")      # a Python complex number (not a complex array)

SCALAR_TYPES = (IntType, FloatType, BoolType)


@dataclass(frozen=True)
class TensorType(Type):
    """A NumPy value; each refinement is None when unknown.

    sizes: one entry per dimension (None for an unknown extent), or None when even
    the rank is unknown.  layout: "C" (C-contiguous), "F" (Fortran-contiguous) or
    "strided".  ndarray: True for an ndarray, False for a NumPy scalar.
    """

    dtype: str | None = None
    sizes: tuple[int | None, ...] | None = None
    layout: str | None = None
    ndarray: bool | None = None

    @property
    def rank(self) -> int | None:
        return None if self.sizes is None else len(self.sizes)

    @property
    def is_refined(self) -> bool:
        return self != TENSOR

    def __str__(self) -> str:
        if not self.is_refined:
            return "Tensor"
        parts = []
        if self.dtype is not None:
            parts.append(f"dtype={self.dtype}")
        if self.sizes is not None:
            dims = ", ".join("*" if s is None else str(s) for s in self.sizes)
            parts.append(f"sizes=[{dims}]")
        if self.layout is not None:
            parts.append(f"layout={self.layout}")
        if self.ndarray is not None:
            parts.append(f"ndarray={int(self.ndarray)}")
        return f"Tensor({', '.join(parts)})"

    @property
    def annotation(self) -> str:
        return "Tensor"


TENSOR = TensorType()


@dataclass(frozen=True)
class ListType(Type):
    elem: Type

    def contained(self) -> tuple[Type, ...]:
        return (self.elem,)

    def __str__(self) -> str:
        return f"List[{self.elem}]"

    @property
    def annotation(self) -> str:
        return f"List[{self.elem.annotation}]"


@dataclass(frozen=True)
class DictType(Type):
    key: Type
    value: Type

    def contained(self) -> tuple[Type, ...]:
        return (self.key, self.value)

    def __str__(self) -> str:
        return f"Dict[{self.key}, {self.value}]"

    @property
    def annotation(self) -> str:
        return f"Dict[{self.key.annotation}, {self.value.annotation}]"


@dataclass(frozen=True)
class TupleType(Type):
    """A fixed-length tuple; `py_class` is set for a NamedTuple (names then too)."""

    elems: tuple[Type, ...]
    names: tuple[str, ...] | None = None
    py_class: type | None = field(default=None, compare=True)

    def contained(self) -> tuple[Type, ...]:
        return self.elems

    def __str__(self) -> str:
        if self.py_class is not None:
            fields = ", ".join(f"{n}: {t}" for n, t in zip(self.names, self.elems))
            return f"NamedTuple[{qualified_name(self.py_class)}, {fields}]"
        return f"Tuple[{', '.join(map(str, self.elems))}]"

    @property
    def annotation(self) -> str:
        if self.py_class is not None:
            return self.py_class.__qualname__
        if not self.elems:
            return "Tuple[()]"
        return f"Tuple[{', '.join(t.annotation for t in self.elems)}]"


@dataclass(frozen=True)
class VarTupleType(Type):
    """A homogeneous tuple of unknown length, such as `x.shape`."""

    elem: Type

    def contained(self) -> tuple[Type, ...]:
        return (self.elem,)

    def __str__(self) -> str:
        return f"Tuple[{self.elem}, ...]"

    @property
    def annotation(self) -> str:
        return f"Tuple[{self.elem.annotation}, ...]"


@dataclass(frozen=True)
class IterableType(Type):
    """A Python object script code iterates over but does not build as a container: a
    dict view (`d.keys()` is a `dict_keys`, which follows later changes of the dict and
    is no list), a range, the iterators zip(), enumerate(), reversed() and iter() make,
    or the iterator a loop steps through one of them (`iterator`).  `kind` names the
    Python class (any reverse iterator is `reversed`, any iter() result `iter`); the
    value at run time is that object itself, so what the program returns or prints is
    what eager Python gives."""

    kind: str
    elem: Type

    KINDS: ClassVar[tuple[str, ...]] = ("dict_keys", "dict_values", "dict_items", "range",
                                        "zip", "enumerate", "reversed", "iter", "iterator")
    SIZED: ClassVar[tuple[str, ...]] = ("dict_keys", "dict_values", "dict_items", "range")
    # one-shot iterators: iterating over one consumes it
    ITERATORS: ClassVar[tuple[str, ...]] = ("zip", "enumerate", "reversed", "iter", "iterator")

    def contained(self) -> tuple[Type, ...]:
        return (self.elem,)

    def __str__(self) -> str:
        return f"{self.kind}[{self.elem}]"

    @property
    def annotation(self) -> str:
        return f"{self.kind}[{self.elem.annotation}]"


@dataclass(frozen=True)
class OptionalType(Type):
    elem: Type

    def contained(self) -> tuple[Type, ...]:
        return (self.elem,)

    def __str__(self) -> str:
        return f"{self.elem}?"

    @property
    def annotation(self) -> str:
        return f"Optional[{self.elem.annotation}]"


@dataclass(frozen=True)
class UnionType(Type):
    options: tuple[Type, ...]

    def contained(self) -> tuple[Type, ...]:
        return self.options

    def __str__(self) -> str:
        return f"Union[{', '.join(map(str, self.options))}]"

    @property
    def annotation(self) -> str:
        return f"Union[{', '.join(t.annotation for t in self.options)}]"


_TYPE_ATTRIBUTE = "__tsjit_class_type__"


class ClassType(Type):
    """A script class or module: one instance per Python class (identity equality).

    `attributes` is filled while the class compiles (from `__init__`, annotations,
    or the module instance's values); `constants` holds module constants and Final
    attributes, which are folded into code; `methods` the compiled methods by name (the
    compiler's cache lives here, so they live as long as the type).
    """

    __slots__ = ("py_class", "attributes", "constants", "is_module", "methods", "__weakref__")
    # Every type made by for_class while it lives (a weak set: see for_class).
    _known: ClassVar[weakref.WeakSet[ClassType]] = weakref.WeakSet()
    # Types of classes that cannot hold an attribute (a metaclass refusing it): kept here.
    _pinned: ClassVar[dict[type, ClassType]] = {}

    def __init__(self, py_class: type, is_module: bool = False):
        self.py_class = py_class
        self.is_module = is_module
        self.attributes: dict[str, Type] = {}
        self.constants: dict[str, object] = {}
        self.methods: dict[str, object] = {}

    def __reduce__(self):
        """A script class's type pickles (and copies) as its class's type: a class pickled
        by value (cloudpickle's form of one defined in `__main__`, as Dask sends and
        returns it) carries its dict, this type included, and the class unpickled must
        keep the type its compiled code names: the process's own where its class has
        one, never a copy (types are identities); in a process where the class is new,
        this type's compiled state.  A module's type is per instance: it travels only
        with its scripted module's saved form."""
        if self.is_module:
            raise TypeError(f"cannot pickle the compiled type of module {self.annotation}: "
                            "pickle the scripted module")
        return _class_type, (self.py_class,), (self.attributes, self.constants, self.methods)

    def __setstate__(self, state: tuple) -> None:
        if self in _awaiting_state:     # (a type the class had already keeps its state)
            _awaiting_state.discard(self)
            self.attributes, self.constants, self.methods = state

    @classmethod
    def for_class(cls, py_class: type, is_module: bool = False) -> ClassType:
        """The (unique) type of a class, so the same class always maps to one type.  The
        type is stored in the class itself (its own dict, never a base class's): the type
        and its compiled methods live exactly as long as the class, with no global table
        keeping a class the program dropped alive."""
        found = vars(py_class).get(_TYPE_ATTRIBUTE) or cls._pinned.get(py_class)
        if found is None:
            found = ClassType(py_class, is_module)
            try:
                setattr(py_class, _TYPE_ATTRIBUTE, found)
            except (AttributeError, TypeError):
                cls._pinned[py_class] = found
            cls._known.add(found)
        return found

    @classmethod
    def known(cls) -> list[ClassType]:
        """The types for_class made that are alive."""
        return list(cls._known)

    @property
    def name(self) -> str:
        return qualified_name(self.py_class)

    def __str__(self) -> str:
        return f"__tsjit__.{self.name}"

    @property
    def annotation(self) -> str:
        return self.py_class.__qualname__

    def __repr__(self) -> str:
        return f"ClassType({self.name})"


@dataclass(frozen=True)
class EnumType(Type):
    py_class: type

    def __str__(self) -> str:
        return f"Enum<__tsjit__.{qualified_name(self.py_class)}>"

    @property
    def annotation(self) -> str:
        return self.py_class.__qualname__


def qualified_name(py_class: type) -> str:
    return f"{py_class.__module__}.{py_class.__qualname__}"


def is_tensor(t: Type) -> bool:
    return isinstance(t, TensorType)


def is_number(t: Type) -> bool:
    """int, float or bool: the Python scalars that mix in arithmetic."""
    return t in SCALAR_TYPES


def is_subtype(sub: Type, sup: Type) -> bool:
    """Whether every value of `sub` is a value of `sup` (no implicit conversions)."""
    if sub == sup or sup == AnyType or sub in (NoReturnType, UninitializedType):
        return True
    if isinstance(sup, TensorType) and isinstance(sub, TensorType):
        return all(getattr(sup, f) is None or getattr(sup, f) == getattr(sub, f)
                   for f in ("dtype", "layout", "ndarray")) and _sizes_within(sub.sizes,
                                                                             sup.sizes)
    if isinstance(sup, OptionalType):
        return sub == NoneType or is_subtype(sub, sup.elem) or (
            isinstance(sub, OptionalType) and is_subtype(sub.elem, sup.elem))
    if isinstance(sup, UnionType):
        subs = sub.options if isinstance(sub, UnionType) else (
            (sub.elem, NoneType) if isinstance(sub, OptionalType) else (sub,))
        return all(any(is_subtype(s, o) for o in sup.options) for s in subs)
    if isinstance(sub, TupleType) and isinstance(sup, TupleType):
        return (sup.py_class is None and len(sub.elems) == len(sup.elems)
                and all(map(is_subtype, sub.elems, sup.elems)))
    if isinstance(sub, TupleType) and isinstance(sup, VarTupleType):
        return all(is_subtype(e, sup.elem) for e in sub.elems)
    return False


def _sizes_within(sub: tuple | None, sup: tuple | None) -> bool:
    """Per dimension: the same rank, each known extent of `sup` equal in `sub`."""
    if sup is None:
        return True
    return sub is not None and len(sub) == len(sup) and all(
        s is None or s == t for s, t in zip(sup, sub))


def unify(a: Type, b: Type) -> Type | None:
    """The least type that holds both, as TorchScript unifies branch and loop types.

    int and float do not unify (as in TorchScript): a variable keeps one type.
    """
    if is_subtype(a, b):
        return b
    if is_subtype(b, a):
        return a
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        sizes = None
        if a.sizes is not None and b.sizes is not None and len(a.sizes) == len(b.sizes):
            sizes = tuple(x if x == y else None for x, y in zip(a.sizes, b.sizes))
        return TensorType(*(getattr(a, f) if getattr(a, f) == getattr(b, f) else None
                            for f in ("dtype",)), sizes,
                          *(getattr(a, f) if getattr(a, f) == getattr(b, f) else None
                            for f in ("layout", "ndarray")))
    if NoneType in (a, b):
        other = b if a == NoneType else a
        return other if isinstance(other, OptionalType) else OptionalType(other)
    if isinstance(a, OptionalType) or isinstance(b, OptionalType):
        inner = unify(a.elem if isinstance(a, OptionalType) else a,
                      b.elem if isinstance(b, OptionalType) else b)
        return None if inner is None else OptionalType(inner)
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.elems) == len(b.elems) \
            and a.py_class is b.py_class:
        elems = [unify(x, y) for x, y in zip(a.elems, b.elems)]
        return None if None in elems else TupleType(tuple(elems), a.names, a.py_class)
    if isinstance(a, ListType) and isinstance(b, ListType):
        elem = unify(a.elem, b.elem)
        return ListType(elem) if isinstance(elem, TensorType) else None
    return None


def widen(a: Type, b: Type) -> Type | None:
    """`unify`, plus what a loop-carried variable may become: a Python number that
    turns into a NumPy value (`s = 0.0; s += x[i]` makes s a np.float64)."""
    joined = unify(a, b)
    if joined is None and (isinstance(a, TensorType) or isinstance(b, TensorType)) and (
            is_number(a) or is_number(b)):
        return TENSOR
    return joined


def make_union(options: list[Type]) -> Type:
    """Union[...] normalised: flattened, duplicates removed, Optional when None is in it."""
    flat: list[Type] = []
    for t in options:
        for o in (t.options if isinstance(t, UnionType) else
                  (t.elem, NoneType) if isinstance(t, OptionalType) else (t,)):
            if o not in flat:
                flat.append(o)
    if len(flat) == 1:
        return flat[0]
    if NoneType in flat:
        rest = [t for t in flat if t != NoneType]
        return OptionalType(rest[0] if len(rest) == 1 else UnionType(tuple(rest)))
    return UnionType(tuple(flat))


def union_options(t: Type) -> tuple[Type, ...]:
    """The alternatives a value of type `t` may be (for isinstance refinement)."""
    if isinstance(t, OptionalType):
        return union_options(t.elem) + (NoneType,)
    if isinstance(t, UnionType):
        return t.options
    return (t,)


# Types `_class_type` made for an unpickled class, until their pickled state is set.
_awaiting_state: weakref.WeakSet[ClassType] = weakref.WeakSet()


def _class_type(py_class: type) -> ClassType:
    """The type of unpickled class `py_class`: its own, if it has one (see
    ClassType.__reduce__)."""
    found = vars(py_class).get(_TYPE_ATTRIBUTE)
    if isinstance(found, ClassType):
        return found
    found = ClassType.for_class(py_class)
    _awaiting_state.add(found)
    return found
