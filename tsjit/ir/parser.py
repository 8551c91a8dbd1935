"""Reads the text form that `printer.py` writes back into a Graph.

Tests start from IR text (parse -> pass -> FileCheck), and saved code must load
without its original source, so the parser accepts exactly the printer's output:
`print_graph(parse_ir(text)) == text` for every printed graph.  Output types are
taken from the text, never re-inferred: the text is the truth, and checking it
against the type rules is the verifier's job.  Values are resolved by name in
one flat table (the printer's names are unique per graph); scoping across blocks
is likewise left to the verifier, so that broken graphs can be written as text.

Text from outside (a loaded archive) is parsed with a `NodeFilter`, which refuses
ops and attributes node by node, and a resolver that names only allowed objects;
nesting (types, attribute values, blocks) is bounded by MAX_NESTING either way.
"""
from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Callable, Mapping
from typing import Protocol

import numpy as np

from .graph import Block, Graph, Node, Value
from .ignored_functions import IgnoredFunction
from .printer import SUBGRAPH
from .types import (
    AnyType,
    BoolType,
    ClassType,
    ComplexType,
    DictType,
    DTypeType,
    EnumType,
    FloatType,
    IntType,
    IterableType,
    ListType,
    NoneType,
    NoReturnType,
    OptionalType,
    StrType,
    TensorType,
    TupleType,
    Type,
    UninitializedType,
    UnionType,
    VarTupleType,
)

Resolver = Callable[[str], object]
MAX_NESTING = 100     # types in types, values in values, blocks in blocks


class NodeFilter(Protocol):
    """Decides which nodes a text may hold: each method raises ValueError to refuse."""

    def kind(self, kind: str) -> None: ...

    def attribute(self, kind: str, key: str, value: object) -> None: ...

    def element(self) -> None:
        """One more node, value (a node's input or output, a parameter), type or
        attribute value: refuse past a budget (what a graph costs in memory grows with
        these, not with its text)."""

SINGLETON_TYPES = {t.name: t for t in (IntType, FloatType, BoolType, StrType, NoneType, AnyType,
                                       DTypeType, NoReturnType, UninitializedType, ComplexType)}
CLASS_PREFIX = "__tsjit__."

_TOKEN = re.compile(r"""
    (?P<skip>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<value>%[\w.]+)
  | (?P<kind>[A-Za-z_]\w*::\w+(?:\.\w+)*)
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_]\w*(?:\.(?:[A-Za-z_]\w*|<\w+>))*)
  | (?P<punct>->|\.\.\.|[()\[\],:=?*<>-])
""", re.VERBOSE)


_SHOWN = 100


class IRParseError(ValueError):
    """Malformed IR text; `line` and `column` (1-based) point at the offending token."""

    def __init__(self, message: str, text: str, pos: int):
        self.line = text.count("\n", 0, pos) + 1
        line_start = text.rfind("\n", 0, pos) + 1
        self.column = pos - line_start + 1
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end < 0 else line_end
        # at most _SHOWN characters each side of the caret (a line may be megabytes long)
        start, end = max(line_start, pos - _SHOWN), min(line_end, pos + _SHOWN)
        shown = ("..." if start > line_start else "") + text[start:end] + (
            "..." if end < line_end else "")
        caret = pos - start + (3 if start > line_start else 0)
        super().__init__(f"{message} (line {self.line}, column {self.column})\n"
                         f"  {shown}\n  {' ' * caret}^")


class _Token:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind: str, text: str, pos: int):
        self.kind, self.text, self.pos = kind, text, pos

    def describe(self) -> str:
        return "end of input" if self.kind == "eof" else repr(self.text)


class _Tokens:
    """The tokens of a text, scanned as the parser asks for them: a text of millions of
    one-character tokens never becomes millions of objects at once (loaded archives are
    parsed within a memory budget)."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.current = self._scan()

    def _scan(self) -> _Token:
        text = self.text
        while self.pos < len(text):
            m = _TOKEN.match(text, self.pos)
            if m is None:
                raise IRParseError(f"unexpected character {text[self.pos]!r}", text, self.pos)
            self.pos = m.end()
            if m.lastgroup != "skip":
                return _Token(m.lastgroup, m.group(), m.start())
        return _Token("eof", "", len(text))

    def advance(self) -> _Token:
        """The current token; the next one becomes current (eof stays)."""
        tok = self.current
        if tok.kind != "eof":
            self.current = self._scan()
        return tok


def import_object(qualified_name: str) -> object:
    """The object named `module.qualname`: the longest importable prefix is the module."""
    parts = qualified_name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        module = sys.modules.get(module_name)
        if module is None:
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError:
                continue
        obj = module
        for attr in parts[split:]:
            if not hasattr(obj, attr):
                raise LookupError(f"module {module_name!r} has no attribute path "
                                  f"{'.'.join(parts[split:])!r}")
            obj = getattr(obj, attr)
        return obj
    raise LookupError(f"no importable module in {qualified_name!r}")


def _source_name(printed: str) -> str | None:
    """The debug name a printed name came from: `x` for `x.1`, None for `5`."""
    base, dot, suffix = printed.rpartition(".")
    if dot and suffix.isdigit():
        printed = base
    return None if printed.replace(".", "").isdigit() else printed


class _Parser:
    def __init__(self, text: str, resolve: Resolver | None,
                 class_types: Mapping[str, ClassType] | None = None,
                 node_filter: NodeFilter | None = None):
        self.text = text
        self.tokens = _Tokens(text)
        self.resolve_fn = resolve
        self.class_types = class_types or {}
        self.node_filter = node_filter
        self.values: dict[str, Value] = {}
        self.depth = 0

    # ---- token helpers
    def peek(self) -> _Token:
        return self.tokens.current

    def next(self) -> _Token:
        return self.tokens.advance()

    def error(self, message: str, tok: _Token | None = None) -> IRParseError:
        return IRParseError(message, self.text, (tok or self.peek()).pos)

    def accept(self, text: str) -> bool:
        if self.peek().kind in ("punct", "name") and self.peek().text == text:
            self.next()
            return True
        return False

    def expect(self, text: str) -> _Token:
        tok = self.peek()
        if not self.accept(text):
            raise self.error(f"expected {text!r}, found {tok.describe()}")
        return tok

    def expect_kind(self, kind: str, what: str) -> _Token:
        tok = self.peek()
        if tok.kind != kind:
            raise self.error(f"expected {what}, found {tok.describe()}")
        return self.next()

    def comma_list(self, close: str, item: Callable[[], object]) -> list:
        """Items separated by commas up to `close` (consumed); a trailing comma is allowed."""
        items = []
        while not self.accept(close):
            items.append(item())
            if not self.accept(","):
                self.expect(close)
                break
        return items

    def end(self) -> None:
        if self.peek().kind != "eof":
            raise self.error(f"unexpected {self.peek().describe()} after the end")

    def nested(self, parse: Callable[[], object]) -> object:
        """`parse()` one level deeper: text nested past MAX_NESTING is refused, not left
        to exhaust Python's stack here or in the passes that walk the graph."""
        if self.depth >= MAX_NESTING:
            raise self.error(f"nested more than {MAX_NESTING} levels deep")
        self.depth += 1
        try:
            return parse()
        finally:
            self.depth -= 1

    def filtered(self, check: Callable[[], None], tok: _Token) -> None:
        try:
            check()
        except ValueError as e:
            raise self.error(str(e), tok) from None

    # ---- Python objects
    def resolve(self, qualified_name: str, tok: _Token) -> object:
        try:
            if self.resolve_fn is not None:
                return self.resolve_fn(qualified_name)
            return import_object(qualified_name)
        except Exception as e:
            raise self.error(f"cannot resolve {qualified_name!r}: {e}", tok) from e

    def qualified_name(self) -> tuple[str, _Token]:
        tok = self.expect_kind("name", "a qualified name")
        return tok.text, tok

    # ---- types
    def type(self) -> Type:
        t = self.nested(self.atom_type)
        while self.accept("?"):
            t = OptionalType(t)
        return t

    def atom_type(self) -> Type:
        tok = self.expect_kind("name", "a type")
        self.count(tok)
        name = tok.text
        if name in SINGLETON_TYPES:
            return SINGLETON_TYPES[name]
        if name == "Tensor":
            return self.tensor_refinements() if self.accept("(") else TensorType()
        if name.startswith(CLASS_PREFIX):
            return self.class_type(name[len(CLASS_PREFIX):], tok)
        if name == "Enum":
            self.expect("<")
            qualname, qtok = self.qualified_name()
            if not qualname.startswith(CLASS_PREFIX):
                raise self.error(f"expected {CLASS_PREFIX}<qualified name>", qtok)
            self.expect(">")
            return EnumType(self.resolve(qualname[len(CLASS_PREFIX):], qtok))
        if name in IterableType.KINDS:
            self.expect("[")
            elem = self.type()
            self.expect("]")
            return IterableType(name, elem)
        generic = {"List": self.list_type, "Dict": self.dict_type, "Tuple": self.tuple_type,
                   "Union": self.union_type, "NamedTuple": self.named_tuple_type}.get(name)
        if generic is None:
            raise self.error(f"unknown type {name!r}", tok)
        self.expect("[")
        return generic()

    def list_type(self) -> Type:
        elem = self.type()
        self.expect("]")
        return ListType(elem)

    def dict_type(self) -> Type:
        key = self.type()
        self.expect(",")
        value = self.type()
        self.expect("]")
        return DictType(key, value)

    def tuple_type(self) -> Type:
        if self.accept("("):        # the annotation spelling of the empty tuple, Tuple[()]
            self.expect(")")
        if self.accept("]"):
            return TupleType(())
        elems = [self.type()]
        while self.accept(","):
            ellipsis = self.peek()
            if self.accept("..."):
                if len(elems) != 1:
                    raise self.error("'...' follows exactly one element type", ellipsis)
                self.expect("]")
                return VarTupleType(elems[0])
            elems.append(self.type())
        self.expect("]")
        return TupleType(tuple(elems))

    def union_type(self) -> Type:
        return UnionType(tuple(self.comma_list("]", self.type)))

    def named_tuple_type(self) -> Type:
        qualname, tok = self.qualified_name()
        self.expect(",")

        def field() -> tuple[str, Type]:
            name = self.expect_kind("name", "a field name").text
            self.expect(":")
            return name, self.type()

        fields = self.comma_list("]", field)
        py_class = self.resolve(qualname, tok)
        return TupleType(tuple(t for _, t in fields), tuple(n for n, _ in fields), py_class)

    def class_type(self, qualname: str, tok: _Token) -> Type:
        if qualname in self.class_types:
            return self.class_types[qualname]
        if self.resolve_fn is None:     # text of this process: its compiled classes
            for class_type in ClassType.known():
                if class_type.name == qualname:
                    return class_type
        py_class = self.resolve(qualname, tok)
        if not isinstance(py_class, type):
            raise self.error(f"{qualname!r} is not a class", tok)
        return ClassType.for_class(py_class)

    def tensor_refinements(self) -> Type:
        fields: dict[str, object] = {}

        def refinement() -> None:
            key = self.expect_kind("name", "a tensor refinement")
            self.expect("=")
            if key.text == "sizes":
                self.expect("[")
                fields["sizes"] = tuple(self.comma_list("]", self.size))
            elif key.text in ("dtype", "layout"):
                fields[key.text] = self.expect_kind("name", f"a {key.text}").text
            elif key.text == "ndarray":
                flag = self.expect_kind("number", "0 or 1")
                if flag.text not in ("0", "1"):
                    raise self.error("ndarray is 0 or 1", flag)
                fields["ndarray"] = flag.text == "1"
            else:
                raise self.error(f"unknown tensor refinement {key.text!r}", key)

        self.comma_list(")", refinement)
        return TensorType(**fields)

    def size(self) -> int | None:
        if self.accept("*"):
            return None
        tok = self.expect_kind("number", "a size or '*'")
        if not tok.text.isdigit() or len(tok.text) > 19:
            raise self.error("a size is a non-negative 64-bit integer", tok)
        return int(tok.text)

    # ---- attribute values (the forms of printer.format_attr)
    def attr_value(self) -> object:
        return self.nested(self.attr_atom)

    def attr_atom(self) -> object:
        tok = self.next()
        self.count(tok)
        if tok.kind == "string":
            return json.loads(tok.text)
        if tok.kind == "number":
            return self.converted(self.number, tok.text, tok)
        if tok.text == "-":
            number = self.next()
            if number.kind == "number" or number.text == "inf":
                return -self.converted(self.number, number.text, number)
            raise self.error("expected a number after '-'", number)
        if tok.text == "(":
            items = []
            while not self.accept(")"):
                items.append(self.attr_value())
                if not self.accept(","):
                    if len(items) == 1:
                        raise self.error("a 1-tuple is written (x,)")
                    self.expect(")")
                    break
            return tuple(items)
        if tok.text == "[":
            return self.comma_list("]", self.attr_value)
        if tok.text == "...":
            return Ellipsis
        if tok.kind == "name":
            constant = {"True": True, "False": False, "None": None,
                        "inf": float("inf"), "nan": float("nan")}
            if tok.text in constant:
                return constant[tok.text]
            if self.accept("("):
                return self.wrapped_value(tok)
        raise self.error(f"expected an attribute value, found {tok.describe()}", tok)

    @staticmethod
    def number(text: str) -> int | float:
        return float(text) if text == "inf" or any(c in text for c in ".eE") else int(text)

    def converted(self, convert: Callable[[object], object], value: object,
                  head: _Token) -> object:
        try:
            return convert(value)
        except (TypeError, ValueError, OverflowError) as e:
            raise self.error(f"{head.text}(...) cannot hold {value!r:.80}: {e}", head) from None

    def wrapped_value(self, head: _Token) -> object:
        """`Type(...)`, `dtype(...)`, `Enum(...)`, `Py(...)`, `Ignored(...)`, `Array(...)`,
        `bytes("6869")`, `float32(2.5)`."""
        form = head.text
        if form == "Type":
            value = self.type()
        elif form == "dtype":
            value = self.numpy_dtype()
        elif form == "Ignored":                 # Ignored(module, qualname): a name, not code
            module, tok = self.qualified_name()
            self.expect(",")
            qualname, _ = self.qualified_name()
            value = self.converted(lambda name: IgnoredFunction(*name), (module, qualname), tok)
        elif form in ("Enum", "Py"):
            qualname, tok = self.qualified_name()
            if self.peek().text == "(":
                raise self.error(f"an instance of {qualname} cannot be rebuilt from text", tok)
            value = self.resolve(qualname, tok)
        elif form == "bytes":                   # bytes("68690a"): the hex digits
            value = self.converted(bytes.fromhex, self.attr_value(), head)
        elif form == "complex":                 # complex(real, imag)
            real = self.attr_value()
            self.expect(",")
            value = complex(real, self.attr_value())
        elif form == "Array":
            dtype = self.numpy_dtype(numeric=True)
            self.expect(",")
            value = self.converted(lambda v: np.array(v, dtype=dtype), self.attr_value(), head)
        else:
            value = self.converted(self.numpy_dtype(head, numeric=True).type, self.attr_value(),
                                   head)
        self.expect(")")
        return value

    def numpy_dtype(self, tok: _Token | None = None, numeric: bool = False) -> np.dtype:
        """The dtype named by `tok`; `numeric`: of a bool or number, the only values the
        printer writes as arrays and scalars."""
        tok = tok or self.expect_kind("name", "a NumPy dtype")
        try:
            dtype = np.dtype(tok.text)
        except TypeError:
            raise self.error(f"unknown NumPy dtype or attribute form {tok.text!r}", tok) from None
        if numeric and dtype.kind not in "biufc":
            raise self.error(f"NumPy values of dtype {dtype} have no text form", tok)
        return dtype

    # ---- graphs
    def graph(self) -> Graph:
        """A graph, then the `with <kind>_<k> = graph(...)` sections of the subgraphs its
        nodes (and theirs) hold; each section has its own value names."""
        graph = self.graph_body()
        sections: dict[str, tuple[Graph, _Token]] = {}
        while self.accept("with"):
            label = self.expect_kind("kind", "a subgraph label (prim::FusionGroup_0)")
            if label.text in sections:
                raise self.error(f"subgraph {label.text} is defined twice", label)
            self.expect("=")
            outer, self.values = self.values, {}
            sections[label.text] = (self.graph_body(), label)
            self.values = outer
        self.end()
        unused = dict(sections)
        for g in [graph, *(sub for sub, _ in sections.values())]:
            for node in g.nodes():
                if node.kind in sections:
                    unused.pop(node.kind, None)
                    node.attrs[SUBGRAPH] = sections[node.kind][0]
                    node.kind = node.kind.rpartition("_")[0]
        if unused:
            raise self.error(f"no node is labelled {next(iter(unused))}",
                             next(iter(unused.values()))[1])
        return graph

    def graph_body(self) -> Graph:
        graph = Graph()
        self.expect("graph")
        self.expect("(")
        self.comma_list(")", lambda: self.define(graph.block.param_node, self.declaration()))
        self.expect(":")
        self.body(graph.block)
        self.expect("return")
        self.block_outputs(graph.block)
        return graph

    def declaration(self) -> tuple[_Token, Type]:
        name = self.expect_kind("value", "a value (%name)")
        self.count(name)
        self.expect(":")
        return name, self.type()

    def count(self, tok: _Token) -> None:
        if self.node_filter is not None:
            self.filtered(self.node_filter.element, tok)

    def define(self, node: Node, declaration: tuple[_Token, Type]) -> Value:
        tok, type_ = declaration
        printed = tok.text[1:]
        if printed in self.values:
            raise self.error(f"value %{printed} is defined twice", tok)
        value = self.values[printed] = node.add_output(type_, _source_name(printed))
        return value

    def use(self) -> Value:
        tok = self.expect_kind("value", "a value (%name)")
        self.count(tok)
        value = self.values.get(tok.text[1:])
        if value is None:
            raise self.error(f"undefined value {tok.text}", tok)
        return value

    def body(self, block: Block) -> None:
        while self.peek().kind in ("value", "kind"):
            self.node(block)

    def node(self, block: Block) -> None:
        declarations = []
        if self.peek().kind == "value":
            declarations = [self.declaration()]
            while self.accept(","):
                declarations.append(self.declaration())
            self.expect("=")
        kind_tok = self.expect_kind("kind", "an op kind (ns::name)")
        kind = kind_tok.text
        if self.node_filter is not None:
            self.filtered(lambda: self.node_filter.kind(kind), kind_tok)
        self.count(kind_tok)
        attrs = {}
        if self.accept("["):
            for key, value in self.comma_list("]", lambda: self.attribute(kind)):
                attrs[key] = value
        node = Node(kind, attrs)
        self.expect("(")
        for value in self.comma_list(")", self.use):
            node.add_input(value)
        for declaration in declarations:   # after the inputs: a node cannot use its outputs
            self.define(node, declaration)
        block.append(node)
        while re.fullmatch(r"block\d+", self.peek().text):
            self.nested(lambda: self.block(node))

    def attribute(self, kind: str) -> tuple[str, object]:
        key = self.expect_kind("name", "an attribute name")
        self.expect("=")
        value = self.attr_value()
        if self.node_filter is not None:
            self.filtered(lambda: self.node_filter.attribute(kind, key.text, value), key)
        return key.text, value

    def block(self, node: Node) -> None:
        tok = self.next()
        if tok.text != f"block{len(node.blocks)}":
            raise self.error(f"expected block{len(node.blocks)}, found {tok.text}", tok)
        block = node.add_block()
        self.expect("(")
        self.comma_list(")", lambda: self.define(block.param_node, self.declaration()))
        self.expect(":")
        self.body(block)
        self.expect("->")
        self.block_outputs(block)

    def block_outputs(self, block: Block) -> None:
        self.expect("(")
        for value in self.comma_list(")", self.use):
            block.add_output(value)


def parse_ir(text: str, resolve: Resolver | None = None,
             class_types: Mapping[str, ClassType] | None = None,
             node_filter: NodeFilter | None = None) -> Graph:
    """The graph that `text` (as written by `print_graph`) describes.

    `resolve(qualified_name)` finds the Python objects the text names (functions,
    classes, enums); by default the module is imported and the qualname walked, and
    class names may also be those of classes compiled in this process.
    `class_types` maps qualified names to the class types they stand for, first:
    a loaded module's types belong to classes made at load time, not importable.
    `node_filter` refuses ops and attributes (text from outside this process) and
    bounds the graph's size.
    """
    return _Parser(text, resolve, class_types, node_filter).graph()


def parse_type(text: str, resolve: Resolver | None = None,
               class_types: Mapping[str, ClassType] | None = None) -> Type:
    """The type whose `str()` is `text`."""
    parser = _Parser(text, resolve, class_types)
    t = parser.type()
    parser.end()
    return t
