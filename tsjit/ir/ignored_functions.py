"""Calls of `@tsjit.ignore` (and `@tsjit.unused`) functions in saved code.

Script code calls an ignored function back in Python (`prim::PythonOp`), as TorchScript
does.  Saved code cannot hold the function itself, only its name, and loading must run
no code of the file's.  So a saved call names the function (`Ignored(module, qualname)`),
and the name is looked up when the call first runs: in the modules the process has
already imported (nothing is imported), through their and their classes' own
dictionaries (no attribute hook runs), and it must lead to a plain Python function that
the program marked with `@tsjit.ignore` or `@tsjit.unused`.  A loaded archive can thus
call back only functions the loading program itself exposed to script code.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from types import FunctionType, ModuleType

_MARKERS = ("_tsjit_ignore", "_tsjit_unused")


def is_ignored_function(value: object) -> bool:
    """A plain function marked @tsjit.ignore or @tsjit.unused (checked by exact types and
    the function's own dict: no hook of the object runs)."""
    return type(value) is FunctionType and any(
        value.__dict__.get(marker, False) is True for marker in _MARKERS)


def _qualified(module: str, qualname: str) -> bool:
    return all(part.isidentifier() for part in (*module.split("."), *qualname.split(".")))


class IgnoredFunction:
    """An ignored function of a loaded graph, by name; calling it calls the function."""

    __slots__ = ("module", "qualname", "_function")

    def __init__(self, module: str, qualname: str) -> None:
        if not _qualified(module, qualname):
            raise ValueError(f"{module}.{qualname} is not a qualified name")
        self.module, self.qualname = module, qualname
        self._function: Callable | None = None

    @classmethod
    def of(cls, fn: Callable) -> IgnoredFunction:
        return cls(fn.__module__, fn.__qualname__)

    @staticmethod
    def can_name(fn: Callable) -> bool:
        """Whether `fn`'s names are dotted identifiers (not so in a local scope)."""
        return _qualified(fn.__module__, fn.__qualname__)

    def __repr__(self) -> str:
        return f"Ignored({self.module}, {self.qualname})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IgnoredFunction) and (self.module, self.qualname) == (
            other.module, other.qualname)

    def __hash__(self) -> int:
        return hash((self.module, self.qualname))

    def resolve(self) -> Callable:
        """The function, found without importing or running anything; LookupError if the
        module is not imported or the name does not lead to a marked function."""
        if self._function is None:
            found = sys.modules.get(self.module)
            if found is None:
                raise LookupError(f"saved code calls the @tsjit.ignore function "
                                  f"{self.module}.{self.qualname}, but module "
                                  f"'{self.module}' is not imported: import it before calling")
            for part in self.qualname.split("."):
                scope = issubclass(type(found), (ModuleType, type))
                found = vars(found).get(part) if scope else None
            if not is_ignored_function(found):
                raise LookupError(f"saved code calls {self.module}.{self.qualname}, which is "
                                  "not a function marked @tsjit.ignore or @tsjit.unused")
            self._function = found
        return self._function

    def __call__(self, *args: object) -> object:
        return self.resolve()(*args)
