"""The front end: Python source → typed IR (emitter, name resolution, annotations, errors)."""
from .compiler import Compiler
from .errors import CompilationError

__all__ = ["CompilationError", "Compiler"]
