"""The typed SSA IR: types, graphs, the text printer and parser, the verifier."""
from .graph import Block, Graph, Node, SourceRange, Value
from .parser import IRParseError, parse_ir, parse_type
from .printer import print_graph
from .verifier import IRVerificationError, verify

__all__ = ["Block", "Graph", "IRParseError", "IRVerificationError", "Node", "SourceRange",
           "Value", "parse_ir", "parse_type", "print_graph", "verify"]
