"""Python type annotations (typing, builtin generics, `# type:` comments) as IR types."""
from __future__ import annotations

import ast
import enum
import types
import typing

import numpy as np

from ..ir.types import (
    TENSOR,
    AnyType,
    BoolType,
    ClassType,
    ComplexType,
    DictType,
    EnumType,
    FloatType,
    IntType,
    ListType,
    NoneType,
    StrType,
    TupleType,
    Type,
    VarTupleType,
    make_union,
)

_SCALARS = {int: IntType, float: FloatType, bool: BoolType, str: StrType, complex: ComplexType,
            type(None): NoneType, None: NoneType}
_DICT_KEYS = (StrType, IntType, FloatType, BoolType, ComplexType, AnyType)


class AnnotationError(Exception):
    """An annotation the language does not support; the caller adds the source."""


def is_final(annotation: object) -> bool:
    return typing.get_origin(annotation) is typing.Final or annotation is typing.Final


def is_typing_form(obj: object) -> bool:
    """List, Optional[int], int | None, Any, list[int]: typing objects that are not classes."""
    return (typing.get_origin(obj) is not None or obj is typing.Any
            or isinstance(obj, (typing._SpecialForm, types.GenericAlias)))


def is_type_form(obj: object) -> bool:
    """A class or a typing form: what an annotation or an isinstance() target can be."""
    return isinstance(obj, type) or is_typing_form(obj)


def class_annotations(cls: type) -> dict[str, object]:
    """The evaluated annotations of a class body and of its bases' (a subclass inherits
    `w: List[int]` declared on its base class)."""
    if not any(vars(k).get("__annotations__") for k in cls.__mro__):
        return {}
    # the class's own name resolves to it (`next: Optional["Node"]`): `@tsjit.script` reads
    # these while the class statement runs, before the name is bound
    scope = {**vars(cls), cls.__name__: cls}
    try:
        return typing.get_type_hints(cls, localns=scope)
    except Exception as e:  # noqa: BLE001 (NameError, SyntaxError, TypeError of typing)
        raise AnnotationError(f"cannot evaluate the annotations of class {cls.__qualname__}: "
                              f"{e}") from None


def is_namedtuple_class(obj: object) -> bool:
    return isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields")


_NAMEDTUPLES_IN_PROGRESS: set[type] = set()


def namedtuple_type(cls: type) -> TupleType:
    if cls in _NAMEDTUPLES_IN_PROGRESS:     # a field of the tuple's own type, maybe nested
        raise AnnotationError(f"NamedTuple {cls.__qualname__} contains itself: a NamedTuple "
                              "type cannot be recursive (a script class can: "
                              "`next: Optional[Node]`)")
    _NAMEDTUPLES_IN_PROGRESS.add(cls)
    try:
        hints = class_annotations(cls)
        elems = tuple(to_type(hints[f]) if f in hints else TENSOR for f in cls._fields)
    finally:
        _NAMEDTUPLES_IN_PROGRESS.discard(cls)
    return TupleType(elems, tuple(cls._fields), cls)


# a container annotation without element types is an error, as in TorchScript (the element
# type of `List` is not Tensor: guessing it would reject the arguments the user meant)
_BARE_CONTAINERS = {list: "[int]", typing.List: "[int]",  # noqa: UP006
                    dict: "[str, int]", typing.Dict: "[str, int]",  # noqa: UP006
                    tuple: "[int, int]", typing.Tuple: "[int, int]"}  # noqa: UP006


def to_type(ann: object, class_type_of=None) -> Type:
    """The IR type of an evaluated annotation.

    `class_type_of(cls)` returns the ClassType of a script class (compiling it if
    needed); without it, plain classes are not valid annotations.
    """
    if ann in _SCALARS:
        return _SCALARS[ann]
    if ann is typing.Any or ann is object:     # `object` accepts any value, as Any does
        return AnyType
    if ann is np.ndarray or (isinstance(ann, type) and issubclass(ann, np.generic)):
        return TENSOR
    if is_final(ann):
        args = typing.get_args(ann)
        return to_type(args[0], class_type_of) if args else AnyType
    if ann in _BARE_CONTAINERS:
        name = getattr(ann, "_name", None) or ann.__name__
        raise AnnotationError(f"'{name}' needs element types, e.g. {name}{_BARE_CONTAINERS[ann]}")
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is np.ndarray:            # np.ndarray[Any, np.dtype[...]], npt.NDArray[...]
        return TENSOR
    if origin is typing.Annotated:      # Annotated[T, metadata]: T
        return to_type(args[0], class_type_of)
    if isinstance(ann, typing.NewType):     # NewType("UserId", int): its base type
        return to_type(ann.__supertype__, class_type_of)
    if origin in (list, list):
        return ListType(to_type(args[0], class_type_of))
    if origin in (dict, dict):
        key, value = (to_type(a, class_type_of) for a in args)
        if key not in _DICT_KEYS and key != TENSOR:
            raise AnnotationError(f"dict keys must be str, int, float, complex, bool, Tensor or "
                                  f"Any; "
                                  f"{key.annotation} is not supported as a dict key type")
        return DictType(key, value)
    if origin in (tuple, tuple):
        if len(args) == 2 and args[1] is Ellipsis:
            return VarTupleType(to_type(args[0], class_type_of))
        if args == ((),):
            return TupleType(())
        return TupleType(tuple(to_type(a, class_type_of) for a in args))
    if origin is typing.Union or origin is types.UnionType:
        return make_union([to_type(a, class_type_of) for a in args])
    if is_namedtuple_class(ann):
        return namedtuple_type(ann)
    if isinstance(ann, type) and issubclass(ann, enum.Enum):
        return EnumType(ann)
    if isinstance(ann, type) and class_type_of is not None:
        found = class_type_of(ann)
        if found is not None:
            return found
    if isinstance(ann, ClassType):
        return ann
    raise AnnotationError(f"unknown type annotation: {_describe(ann)}")


def _describe(ann: object) -> str:
    return getattr(ann, "__qualname__", None) or repr(ann)


# Names an annotation may use without importing them, as TorchScript's resolver allows:
# a `# type: (int, Tensor) -> Tensor` comment is written in a module that need not import
# `Tensor` or `List` (the function's own globals still take precedence).
_DEFAULT_NAMES = {"Tensor": np.ndarray, **{name: getattr(typing, name) for name in (
    "Any", "Dict", "List", "NamedTuple", "Optional", "Tuple", "Union")}}


def evaluate(node: ast.expr, globals_: dict, locals_: dict | None = None) -> object:
    """Evaluate an annotation expression (or a string forward reference) in the
    function's namespace."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError as e:
            raise AnnotationError(f"cannot parse the annotation {node.value!r}: {e.msg}"
                                  ) from None
    code = compile(ast.Expression(node), "<annotation>", "eval")
    names = {k: v for k, v in _DEFAULT_NAMES.items() if k not in globals_}
    names.update(locals_ or {})
    try:
        # string forward references inside generics (List["Node"]) resolve in the same
        # namespace, as typing.get_type_hints resolves them
        return typing._eval_type(eval(code, globals_, names), globals_, names)
    except Exception as e:
        raise AnnotationError(f"cannot evaluate annotation {ast.unparse(node)!r}: {e}") from None


def parse_type_comment(comment: str) -> tuple[list[ast.expr], ast.expr | None]:
    """`# type: (int, Tensor) -> Tensor` as annotation expressions."""
    try:
        tree = ast.parse(comment, mode="func_type")
    except SyntaxError as e:
        raise AnnotationError(f"malformed type comment {comment!r}: {e.msg}") from None
    return list(tree.argtypes), tree.returns
