"""The reference interpreter: graphs run as generated Python functions (see codegen.py)."""
from .codegen import CompiledGraph, compile_graph, python_source
from .helpers import isinstance_of

__all__ = ["CompiledGraph", "compile_graph", "isinstance_of", "python_source"]
