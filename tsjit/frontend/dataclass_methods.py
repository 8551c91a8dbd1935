"""Source text for the methods ``@dataclass`` generates, so that script code compiles them.

``@dataclass`` makes ``__init__``, ``__eq__`` and the order comparisons with ``exec()``: they
have no source for the frontend to read. As TorchScript does, the same methods are written
out again here from the class's fields (``__init__`` with its defaults, ``InitVar``
parameters and the call of ``__post_init__``; the comparisons as comparisons of field
tuples, which is what CPython's versions compute), made into functions whose text is
registered in ``linecache`` under a name of their own (errors in them are then shown like
any other source), and compiled as the class's methods. Methods the class writes itself
are kept; generated ones without a script meaning (``__repr__``, ``__hash__``) are left
to Python."""
from __future__ import annotations

import dataclasses
import inspect
import linecache
import typing
import weakref

from .annotations import class_annotations
from .errors import CompilationError

_PREFIX = "<dataclass "
_COMPARISONS = {"__eq__": "==", "__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">="}

# (class, method name) -> the function made for it, while the class lives
_MADE: weakref.WeakKeyDictionary[type, dict[str, object]] = weakref.WeakKeyDictionary()


def is_generated(fn: object) -> bool:
    """Whether a function was made by exec() (as @dataclass makes __init__): no source."""
    if callable(fn):
        fn = inspect.unwrap(fn)         # __repr__ is wrapped by a guard against recursion
    return getattr(getattr(fn, "__code__", None), "co_filename", "").startswith("<")


def synthesized_method(cls: type, name: str) -> object | None:
    """The function standing for the generated dataclass method `name` of `cls` (None if
    `cls` is no dataclass, defines `name` itself, or `name` is not one made here)."""
    if not dataclasses.is_dataclass(cls) or not is_generated(vars(cls).get(name)):
        return None
    if name != "__init__" and name not in _COMPARISONS:
        return None
    made = _MADE.setdefault(cls, {})
    if name not in made:
        made[name] = _make(cls, name)
    return made[name]


def script_method_names(cls: type) -> list[str]:
    """The names of `cls`'s own functions script code can compile: the generated methods
    of a dataclass only where they are written out here."""
    return [name for name, member in vars(cls).items()
            if not is_generated(member) or synthesized_method(cls, name) is not None]


def is_init_variable(annotation: object) -> bool:
    """Whether a class annotation declares an ``InitVar`` (an __init__ parameter, no
    attribute) or is the ``KW_ONLY`` marker (neither)."""
    return isinstance(annotation, dataclasses.InitVar) or annotation in (
        dataclasses.InitVar, dataclasses.KW_ONLY)


def is_synthesized(fn: object) -> bool:
    """Whether `fn` is a method written out here (its keyword-only parameters, a
    dataclass's kw_only fields, may have defaults)."""
    return getattr(getattr(fn, "__code__", None), "co_filename", "").startswith(_PREFIX)


def _make(cls: type, name: str) -> object:
    namespace: dict[str, object] = {"__builtins__": __builtins__, "_tsjit_class": cls}
    if name == "__init__":
        text = _init_text(cls, namespace)
    else:
        fields = [f.name for f in dataclasses.fields(cls) if f.compare]
        mine = "".join(f"self.{f}, " for f in fields)
        theirs = "".join(f"other.{f}, " for f in fields)
        text = (f"def {name}(self, other: _tsjit_class) -> bool:\n"
                f"    return ({mine}) {_COMPARISONS[name]} ({theirs})\n")
    filename = f"{_PREFIX}{cls.__module__}.{cls.__qualname__}.{name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)
    fn = namespace[name]
    weakref.finalize(fn, linecache.cache.pop, filename, None)   # freed with the class
    fn.__qualname__ = f"{cls.__qualname__}.{name}"
    fn.__module__ = cls.__module__
    return fn


def _init_text(cls: type, namespace: dict) -> str:
    """`__init__` as dataclasses writes it: each init field a parameter (in field order,
    with its default), assigned in order; fields without init take their default; the
    InitVars go to __post_init__."""
    hints = class_annotations(cls)
    params, keyword_params, body, init_vars = ["self"], [], [], []
    frozen = cls.__dataclass_params__.frozen
    set_field = "object.__setattr__(self, {0!r}, {1})" if frozen else "self.{0} = {1}"
    for f in cls.__dataclass_fields__.values():
        hint = hints.get(f.name, f.type)
        if typing.get_origin(hint) is typing.ClassVar or hint is typing.ClassVar:
            continue
        if f.default_factory is not dataclasses.MISSING:
            raise CompilationError(
                f"field '{f.name}' of dataclass {cls.__qualname__} has a default_factory: "
                "script code cannot call it (give the field a default, or set it in a "
                "__init__ written in the class body)")
        default = f"_tsjit_default_{f.name}"
        if f.default is not dataclasses.MISSING:
            namespace[default] = f.default
        is_init_var = is_init_variable(hint)
        if f.init or is_init_var:
            namespace[f"_tsjit_type_{f.name}"] = hint.type if isinstance(
                hint, dataclasses.InitVar) else hint
            param = f"{f.name}: _tsjit_type_{f.name}"
            (keyword_params if f.kw_only else params).append(
                param + (f" = {default}" if default in namespace else ""))
        if is_init_var:
            init_vars.append(f.name)
        elif f.init or default in namespace:
            body.append(set_field.format(f.name, f.name if f.init else default))
    if hasattr(cls, "__post_init__"):
        body.append(f"self.__post_init__({', '.join(init_vars)})")
    lines = "".join(f"    {line}\n" for line in body or ["pass"])
    if keyword_params:                  # kw_only fields come last, after a `*`
        params += ["*", *keyword_params]
    return f"def __init__({', '.join(params)}) -> None:\n{lines}"

