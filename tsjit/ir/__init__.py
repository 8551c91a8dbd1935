"""The typed SSA IR: types, graphs, the text printer and parser, the verifier.

The parser (`tsjit.ir.parser`) is not imported here: only loading an archive and tests
read graph text, and its tokenizer costs a few ms of every `import tsjit`.
"""
from .graph import Block, Graph, Node, SourceRange, Value
from .printer import print_graph
from .verifier import IRVerificationError, verify

__all__ = ["Block", "Graph", "IRVerificationError", "Node", "SourceRange", "Value",
           "print_graph", "verify"]
