"""The IR emitter: one Python function (or method) → one Graph.

Statements are emitted here; expressions, calls and control flow come from the
mixins.  Every node records the source range it came from, so errors at compile
time and at run time can point at the user's code.
"""
from __future__ import annotations

import ast
import sys
from typing import TYPE_CHECKING

import numpy as np

from ..ir.graph import Block, Graph, Node, SourceRange, Value
from ..ir.types import (
    TENSOR,
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
    StrType,
    TensorType,
    TupleType,
    Type,
    UninitializedType,
    VarTupleType,
    is_subtype,
    make_union,
)
from ..ops.python_calls import iterated_type
from ..ops.registry import OpTypeError, infer_types, lookup_method, op
from .annotations import AnnotationError, evaluate, to_type
from .calls import CallMixin, literal_hint
from .control_flow import ControlFlowMixin, contains_statement
from .environment import RAISED, RETURNED, Frame, debug_name, undefined
from .errors import CompilationError
from .expressions import (
    BINARY,
    EMPTY_DICT,
    MAGIC,
    ExpressionMixin,
    constant_bool,
    slice_attrs,
)
from .loops import LoopMixin
from .resolution import Resolver
from .source import ParsedSource
from .sugared import CompileTimeTuple, IterableForm, Sugared

if TYPE_CHECKING:
    from .compiler import Compiler

MUTABLE_IN_PLACE = (TensorType, ListType)     # `x += y` mutates these in place
EMPTY_LIST = ListType(UninitializedType)      # `[]` until its first store or use


def _holds_str(t: Type) -> bool:
    return t == StrType or (not isinstance(t, TensorType) and StrType in t.contained())


def _formatted_value(kind: str, inputs: list[Value]) -> Value | None:
    """The value an op turns into text, which may be an array: `f"{x}"`, `"%s" % x`."""
    if kind == "prim::FormatValue" or (kind == "aten::mod" and inputs[0].type == StrType):
        return inputs[0] if kind == "prim::FormatValue" else inputs[1]
    return None


def constant_type(value: object) -> Type:
    if isinstance(value, bool):
        return BoolType
    if isinstance(value, int):
        return IntType
    if isinstance(value, float):
        return FloatType
    if isinstance(value, complex):
        return ComplexType
    if isinstance(value, str):
        return StrType
    if value is None:
        return NoneType
    if isinstance(value, tuple):
        return TupleType(tuple(constant_type(v) for v in value))
    if isinstance(value, (np.generic, np.ndarray)):
        return TENSOR
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return DTypeType
    import enum
    if isinstance(value, enum.Enum):
        return EnumType(type(value))
    return AnyType


class FunctionEmitter(CallMixin, LoopMixin, ExpressionMixin, ControlFlowMixin):
    def __init__(self, compiler: Compiler, fn: object, source: ParsedSource,
                 self_type: ClassType | None = None, self_value: object = None):
        self.compiler = compiler
        self.fn = fn
        self.source = source
        self.definition: ast.FunctionDef = source.definition
        self.graph = Graph()
        self.frame = Frame(self.graph.block)
        self.resolver = Resolver(self, fn, self_type.py_class
                                 if isinstance(self_type, ClassType) else None)
        self.self_type = self_type
        self.self_value = self_value      # the module instance, for module methods
        self.loop_depth = 0
        self.return_type: Type | None = None
        self.bare_tuple_return: SourceRange | None = None    # `-> tuple`: inferred, a tuple
        self.param_types: list[tuple[str, Type]] = []
        self.defaults: dict[str, object] = {}
        self.unannotated: set[str] = set()      # parameters taken as Tensor for want of one
        self.unannotated_inputs: dict[Value, str] = {}
        # class variables read so far (see Compiler.class_variable), and where the next
        # node emitted at the function's entry goes
        self.class_reads: dict[tuple, tuple[Value, Value]] = {}
        self.entry_index = 0

    # ---- helpers used by all mixins
    def src(self, node: ast.AST) -> SourceRange:
        return self.source.range(node)

    def insert(self, kind: str, inputs: list[Value], types: list[Type] | None = None,
               attrs: dict | None = None, src: SourceRange | None = None) -> Node:
        self.settle(inputs)
        node = self.graph.create(kind, inputs, types or [], attrs, src)
        return self.frame.block.append(node)

    def emit_op(self, kind: str, inputs: list[Value], attrs: dict | None = None,
                src: SourceRange | None = None) -> Value | None:
        """Insert an op whose output types come from its type rule."""
        self.settle(inputs)
        formatted = _formatted_value(kind, inputs)
        self.check_unannotated_use([v for v in inputs if v is not formatted], src)
        try:
            types = infer_types(op(kind), [v.type for v in inputs], attrs or {})
        except OpTypeError as e:
            raise CompilationError(f"{e}{self.unannotated_hint(inputs)}", src) from None
        node = self.insert(kind, inputs, types, attrs, src)
        return node.outputs[0] if node.outputs else None

    @staticmethod
    def settle(values: list, wanted: Type | None = None) -> None:
        """An empty list literal (`xs = []`) takes the element type of what is first
        stored in it (`xs.append(1)`: a List[int], as Numba infers it); any other first
        use gives it `wanted` (an annotation it meets), else TorchScript's List[Tensor].
        An empty dict literal likewise (`d[k] = v` first: a Dict of k's and v's types;
        else TorchScript's Dict[str, Tensor])."""
        for v in values:
            if isinstance(v, Value) and v.type == EMPTY_LIST:
                v.type = wanted if isinstance(wanted, ListType) else ListType(TENSOR)
            elif isinstance(v, Value) and v.type == EMPTY_DICT:
                v.type = wanted if isinstance(wanted, DictType) else DictType(StrType, TENSOR)

    def type_empty_dict(self, d: Value, key: Value, value: Value, src: SourceRange) -> None:
        """`d[k] = v` as the first use of an empty dict literal: the dict maps k's type to
        v's."""
        self.settle([key, value])
        self.check_dict_key(key.type, src)
        d.type = DictType(key.type, value.type)

    def type_empty_list(self, xs: Value, method: str, args: list, src: SourceRange) -> None:
        """`xs.append(v)` / `insert(i, v)` / `extend(vs)` as the first use of an empty
        list literal: the list holds v's type (args[k] becomes its value)."""
        position = 1 if method == "insert" else 0
        if xs.type != EMPTY_LIST or len(args) <= position:
            return
        args[position] = value = self.as_value(args[position], src)
        if method != "extend":
            self.settle([value])        # xs.append([]): a List[List[Tensor]]
        elem = value.type
        if method == "extend":
            if value.type == EMPTY_LIST:
                return
            try:
                elem = iterated_type(value.type)
            except OpTypeError:
                return                  # refused by extend's own rule
        if elem != UninitializedType:
            xs.type = ListType(elem)

    def at_entry(self, emit):
        """Run `emit()` with its nodes placed at the start of the function, where they run
        once per call, before anything else (their inputs must be parameters or constants
        they make)."""
        outer, self.frame = self.frame, Frame(Block(self.graph, None))
        try:
            result = emit()
        finally:
            entry, self.frame = self.frame, outer
        for node in list(entry.block.nodes):
            entry.block.nodes.remove(node)
            self.graph.block.insert(self.entry_index, node)
            self.entry_index += 1
        return result

    def unannotated_hint(self, inputs: list) -> str:
        """What an error about these values adds when one is a parameter that is a
        Tensor only because it has no annotation."""
        for v in inputs:
            name = self.unannotated_inputs.get(v) if isinstance(v, Value) else None
            if name is not None:
                return (f" (parameter '{name}' has no annotation, so it was taken as a "
                        f"Tensor: annotate it)")
        return ""

    def check_unannotated_use(self, inputs: list[Value], src: SourceRange | None) -> None:
        """An unannotated parameter (a Tensor) used with a str (`name == "double"`) was
        meant as a str: say so now rather than fail every call with a TypeError."""
        if not self.unannotated_inputs or not any(_holds_str(v.type) for v in inputs):
            return
        for v in inputs:
            name = self.unannotated_inputs.get(v)
            if name is not None:
                raise CompilationError(
                    f"parameter '{name}' has no annotation, so it was taken as a Tensor, but "
                    f"it is used with a str here: annotate it ({name}: str)", src)

    def const(self, value: object, src: SourceRange | None, type_: Type | None = None) -> Value:
        return self.insert("prim::Constant", [], [type_ or constant_type(value)],
                           {"value": value}, src).output

    def const_python(self, obj: object, src: SourceRange | None) -> Value:
        return self.const(obj, src)

    def annotation_type(self, node: ast.expr) -> Type:
        try:
            return to_type(evaluate(node, self.resolver.globals, self.resolver.closure),
                           self.compiler.class_type_of)
        except AnnotationError as e:
            raise CompilationError(str(e), self.src(node)) from None

    # ---- the function
    def emit_function(self, param_types: list[tuple[str, Type]],
                      return_type: Type | None) -> Graph:
        self.param_types, self.return_type = param_types, return_type
        src = self.src(self.definition)
        for name, t in param_types:
            value = self.graph.add_input(t, name)
            self.frame.assign(name, value, src)
            if name in self.unannotated:
                self.unannotated_inputs[value] = name
        self.frame.assign("$ret", self.const(False, src), src)
        # Falling off the end returns None: an explicit statement, so that it runs only
        # on the paths that did not return earlier (`if x > 0: return x` as the last one).
        implicit_return = ast.copy_location(ast.Return(value=None), self.definition.body[-1])
        self.emit_statements(self.definition.body + [implicit_return])
        result = self.frame.value_of("$retval", src)
        if result is None:          # every path raises: the result is never observed
            result = self.uninitialized(self.graph.block, self.return_type or NoneType)
        if self.return_type is None:
            self.return_type = result.type
        self.graph.block.add_output(result)
        return self.graph

    # ---- statements
    def emit_statement(self, stmt: ast.stmt) -> None:
        method = getattr(self, f"stmt_{type(stmt).__name__}", None)
        if method is None:
            raise CompilationError(_unsupported_statement(stmt), self.src(stmt))
        try:
            method(stmt)
        except RecursionError:
            # Chains of operators, signs and attributes are walked iteratively; other
            # nestings (calls of calls, conditional expressions) thousands deep are not.
            raise CompilationError(
                "this statement nests expressions too deeply for tsjit's front end "
                f"(Python's recursion limit is {sys.getrecursionlimit()}); split it into "
                "several statements", self.src(stmt)) from None

    def stmt_Expr(self, stmt: ast.Expr) -> None:
        if isinstance(stmt.value, ast.Constant):
            return                      # docstrings and bare constants
        self.sugared_expr(stmt.value)

    def stmt_Pass(self, stmt: ast.Pass) -> None:
        pass

    def stmt_Assign(self, stmt: ast.Assign) -> None:
        declared = self.assignment_hint(stmt)
        if declared is not None:
            value = self.typed_expr(stmt.value, declared)
        else:
            value = self.sugared_expr(stmt.value)
        for target in stmt.targets:
            self.assign_target(target, value, self.src(stmt))

    def stmt_AnnAssign(self, stmt: ast.AnnAssign) -> None:
        src = self.src(stmt)
        declared = self.annotation_type(stmt.annotation)
        if stmt.value is None:
            return
        value = self.typed_expr(stmt.value, declared)
        self.assign_target(stmt.target, value, src)

    def assignment_hint(self, stmt: ast.Assign) -> Type | None:
        """The type an assigned value must have: a `# type:` comment, or for a literal
        the type of the element or attribute it is stored into."""
        if stmt.type_comment:                       # `xs = []  # type: List[int]`
            return self.type_comment(stmt)
        declared = self.target_type(stmt.targets[0]) if len(stmt.targets) == 1 else None
        if declared is None or literal_hint(self.constructor_literal(stmt.value) or stmt.value,
                                            declared) is None:
            return None
        return declared

    def type_comment(self, stmt: ast.Assign) -> Type:
        try:
            node = ast.parse(stmt.type_comment, mode="eval").body
        except SyntaxError as e:
            raise CompilationError(f"malformed type comment {stmt.type_comment!r}: {e.msg}",
                                   self.src(stmt)) from None
        ast.copy_location(node, stmt)
        node.end_lineno, node.end_col_offset = stmt.end_lineno, stmt.end_col_offset
        return self.annotation_type(node)

    def target_type(self, target: ast.expr) -> Type | None:
        """The type an element or attribute store expects, when its base is a variable
        or an attribute of one (`groups[k] = []`, `self.items = {}`, `self.d[k] = []`):
        literals assigned there take it."""
        if not isinstance(target, (ast.Subscript, ast.Attribute)):
            return None
        base = self.static_type(target.value)
        if isinstance(target, ast.Attribute):
            return base.attributes.get(target.attr) if isinstance(base, ClassType) else None
        if isinstance(base, ListType) and not isinstance(target.slice, ast.Slice):
            return base.elem
        return base.value if isinstance(base, DictType) and base != EMPTY_DICT else None

    def static_type(self, node: ast.expr) -> Type | None:
        """The type of a variable or a chain of attributes of one, without emitting code."""
        if isinstance(node, ast.Name):
            binding = self.frame.lookup(node.id)
            return binding.value.type if binding and isinstance(binding.value, Value) else None
        if isinstance(node, ast.Attribute):
            base = self.static_type(node.value)
            return base.attributes.get(node.attr) if isinstance(base, ClassType) else None
        return None

    def typed_expr(self, node: ast.expr, declared: Type, what: str = "value") -> Value:
        """An expression checked against (and typed as) an annotation.  List, dict and
        tuple literals take their element types from it, as in TorchScript
        (`xs: List[int] = []`, `return 0, []` in a function returning
        Tuple[int, List[str]], `d: Optional[Dict[str, int]] = {}`)."""
        src = self.src(node)
        node = self.constructor_literal(node) or node
        hint = literal_hint(node, declared)
        if isinstance(node, (ast.ListComp, ast.DictComp)) and hint is not None:
            value = self.comprehension_of(node, hint)
        elif isinstance(hint, ListType):
            value = self.expr_List(node, hint)
        elif isinstance(hint, DictType):
            value = self.expr_Dict(node, hint)
        elif isinstance(hint, TupleType):
            items = [self.typed_expr(e, t, what) for e, t in zip(node.elts, hint.elems)]
            value = self.emit_op("prim::TupleConstruct", items, src=src)
        else:
            value = self.expr(node)
        return self.coerce(value, declared, src, what)

    def coerce(self, value: Value, declared: Type, src: SourceRange, what: str) -> Value:
        self.settle([value], declared)
        if value.type == declared:
            return value
        if not is_subtype(value.type, declared) and value.type != AnyType:
            # an Any value (x.item(), an Any parameter) is taken at its word, as Python does
            hint = ""
            if isinstance(value.type, TensorType) and declared in (FloatType, IntType, BoolType):
                hint = (f" (a NumPy scalar such as x[i] or x.sum() is a Tensor in script code: "
                        f"convert it with {declared.annotation}(...))")
            elif isinstance(value.type, IterableType):
                hint = (f" (Python gives a {value.type.kind} object here, not a list or "
                        "tuple: convert it with list(...) or tuple(...))")
            raise CompilationError(f"{what} has type {value.type.annotation}, but "
                                   f"{declared.annotation} was expected{hint}", src)
        return self.insert("aten::annotate", [value], [declared], src=src).output

    def assign_target(self, target: ast.expr, value, src: SourceRange) -> None:
        if isinstance(value, IterableForm) and value.is_iterator():
            value = value.as_value(self, src)   # one object, which its first consumer exhausts
        if isinstance(target, ast.Name):
            if isinstance(value, Value) and value.name is None and debug_name(target.id):
                value.name = target.id
            self.frame.assign(target.id, value, self.src(target))
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(target.elts, value, src)
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value)
            if isinstance(base.type, ClassType):
                self.call_method(base, "__setitem__", [self.expr(target.slice), value], {}, src)
                return
            index = self.index_value(target.slice)
            attrs = slice_attrs(index)
            value = self.as_value(value, src)
            if base.type == EMPTY_DICT:
                self.type_empty_dict(base, index, value, src)
            self.emit_op("aten::__setitem__", [base, index, value], attrs=attrs, src=src)
        elif isinstance(target, ast.Attribute):
            base = self.attribute_owner(target)
            self.set_attr(base, target.attr, self.as_value(value, src), self.src(target))
        elif isinstance(target, ast.Starred):
            raise CompilationError("a starred target must be inside a tuple", src)
        else:
            raise CompilationError(f"cannot assign to {type(target).__name__}", src)

    def attribute_owner(self, target: ast.Attribute) -> Value:
        """The object of an attribute store; a compile-time one (`math` in `math.pi = x`)
        is named as what cannot be assigned to, rather than as a value that cannot exist."""
        owner = self.sugared_expr(target.value)
        if not isinstance(owner, Sugared):
            return owner
        try:
            return owner.as_value(self, self.src(target.value))
        except CompilationError:
            raise CompilationError(f"cannot assign to attribute '{target.attr}' of "
                                   f"{owner.describe()}", self.src(target)) from None

    def as_value(self, value, src: SourceRange) -> Value:
        return value.as_value(self, src) if isinstance(value, Sugared) else value

    def unpack(self, targets: list[ast.expr], value, src: SourceRange) -> None:
        """a, b = t / a, *rest = lst: tuples split statically, lists at run time."""
        starred = [i for i, t in enumerate(targets) if isinstance(t, ast.Starred)]
        if len(starred) > 1:
            raise CompilationError("multiple starred expressions in assignment", src)
        items = self.unpacked_items(value, len(targets), starred[0] if starred else None, src)
        for target, item in zip(targets, items):
            self.assign_target(target.value if isinstance(target, ast.Starred) else target,
                               item, src)

    def unpacked_items(self, value, count: int, star: int | None, src) -> list:
        if isinstance(value, CompileTimeTuple):
            items = value.items
        else:
            value = self.as_value(value, src)
            t = value.type
            if isinstance(t, TupleType):
                items = self.insert("prim::TupleUnpack", [value], list(t.elems), src=src).outputs
            elif isinstance(t, (ListType, VarTupleType)) and star is None:
                return self.insert("prim::ListUnpack", [value], [t.elem] * count,
                                   src=src).outputs
            elif isinstance(t, (ListType, VarTupleType, TensorType)) or t == StrType:
                return self.star_unpack_runtime(value, count, star, src)
            else:
                raise CompilationError(f"cannot unpack a value of type {t.annotation}", src)
        if star is None:
            if len(items) != count:
                raise CompilationError(f"cannot unpack {len(items)} values into {count} "
                                       "targets", src)
            return list(items)
        after = count - star - 1
        if len(items) < count - 1:
            raise CompilationError(f"not enough values to unpack (expected at least "
                                   f"{count - 1}, got {len(items)})", src)
        # Python always makes the starred target a list: of the items' union type
        middle = [self.as_value(m, src) for m in items[star:len(items) - after]]
        rest = self.list_literal(middle, ListType(make_union([m.type for m in middle]))
                                 if middle else None, src)
        return [*items[:star], rest, *items[len(items) - after:]]

    def star_unpack_runtime(self, value: Value, count: int, star: int | None, src) -> list:
        """Unpack a sequence whose length is known only at run time (a list with a starred
        target, an array's first axis, a str), raising Python's ValueError on a length
        that does not fit."""
        length = self.call_builtin(len, [value], src)
        if star is None:
            self.check_length("aten::lt", length, count,
                              f"not enough values to unpack (expected {count})", src)
            self.check_length("aten::gt", length, count,
                              f"too many values to unpack (expected {count})", src)
            return [self.emit_op("aten::__getitem__", [value, self.const(i, src)], src=src)
                    for i in range(count)]
        items = []
        after = count - star - 1
        self.check_length("aten::lt", length, count - 1,
                          f"not enough values to unpack (expected at least {count - 1})", src)
        for i in range(star):
            items.append(self.emit_op("aten::__getitem__", [value, self.const(i, src)], src=src))
        stop = self.const(-after if after else None, src)
        sl = self.emit_op("prim::Slice", [self.const(star, src), stop, self.const(None, src)],
                          src=src)
        rest = self.emit_op("aten::__getitem__", [value, sl], attrs={"slice": True}, src=src)
        if isinstance(rest.type, VarTupleType):
            rest = self.call_builtin(list, [rest], src)
        items.append(rest)
        for i in range(after, 0, -1):
            items.append(self.emit_op("aten::__getitem__", [value, self.const(-i, src)], src=src))
        return items

    def check_length(self, compare: str, length: Value, bound: int, message: str,
                     src: SourceRange) -> None:
        """Raise ValueError(message) when `compare(length, bound)` holds at run time."""
        cond = self.emit_op(compare, [length, self.const(bound, src)], src=src)
        self.emit_if(cond, lambda: self.emit_raise(ValueError, [self.const(message, src)], src),
                     lambda: None, src)

    def stmt_AugAssign(self, stmt: ast.AugAssign) -> None:
        src = self.src(stmt)
        name = BINARY[type(stmt.op)]
        rhs = self.expr(stmt.value)
        target = stmt.target
        if isinstance(target, ast.Name):
            current = self.expr(target)
            self.frame.assign(target.id, self.augmented(name, current, rhs, src), src)
        elif isinstance(target, ast.Attribute):
            base = self.attribute_owner(target)
            current = self.get_attr(base, target.attr, src)
            self.set_attr(base, target.attr, self.augmented(name, current, rhs, src), src)
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value)
            index = self.index_value(target.slice)
            attrs = slice_attrs(index)
            current = self.emit_op("aten::__getitem__", [base, index], attrs=attrs, src=src)
            result = self.augmented(name, current, rhs, src)
            self.emit_op("aten::__setitem__", [base, index, result], attrs=attrs, src=src)
        else:
            raise CompilationError("unsupported augmented assignment target", src)

    def augmented(self, name: str, current: Value, rhs: Value, src: SourceRange) -> Value:
        if name == "add" and current.type == EMPTY_LIST:    # xs = []; xs += [1]: an extend
            self.type_empty_list(current, "extend", [rhs], src)
        if name == "add" and isinstance(current.type, ListType) and not isinstance(
                rhs.type, ListType):        # list.__iadd__ extends by any iterable: xs += "ab"
            self.call_op(lookup_method(current.type, "extend"), [current, rhs], {}, src,
                         "extend")
            return current
        if isinstance(current.type, MUTABLE_IN_PLACE) or name == "or" and isinstance(
                current.type, DictType):        # d |= e updates d
            result = self.emit_op(f"aten::i{name}", [current, rhs], src=src)
            if isinstance(current.type, ListType) and result.type != current.type:
                raise CompilationError(f"cannot {name} a {rhs.type.annotation} to a "
                                       f"{current.type.annotation}", src)
            return result
        in_place = "__i" + MAGIC[name][2:] if name in MAGIC else None
        if in_place and self.has_magic(current, in_place):      # a class's __iadd__
            return self.call_method(current, in_place, [rhs], {}, src)
        return self.binary(name, current, rhs, src)

    def stmt_If(self, stmt: ast.If) -> None:
        cond, refine = self.condition(stmt.test)
        taken = constant_bool(cond)
        if taken is not None:
            # decided at compile time (is_scripting(), a Final flag, a static isinstance):
            # only the taken branch is compiled, as TorchScript does
            self.apply_refinements(refine[0 if taken else 1], self.src(stmt))
            self.emit_statements(stmt.body if taken else stmt.orelse)
            return
        self.emit_if(cond, lambda: self.emit_statements(stmt.body),
                     lambda: self.emit_statements(stmt.orelse), self.src(stmt), refine)

    def stmt_While(self, stmt: ast.While) -> None:
        src = self.src(stmt)
        if stmt.orelse:
            raise CompilationError("while ... else is not supported", src)
        first, refine = self.condition(stmt.test)
        later: list[Value] = []             # the condition at the end of each body emitted

        def next_condition() -> Value:
            later.append(self.condition(stmt.test)[0])
            return later[-1]

        # the body runs only while the condition holds: it narrows as an if would, for the
        # types at the loop head (a carried variable may have widened in the body)
        self.emit_loop(self.trip_count_forever(src), first, stmt.body,
                       lambda i: self.apply_refinements(self.narrowing(stmt.test)[0], src),
                       next_condition, src, target=stmt.test,
                       defined_by_condition={n: v for n, v in refine[0].items()
                                             if isinstance(v, Value)})
        if contains_statement(stmt.body, (ast.Break,), into_loops=False):
            return
        if constant_bool(first) and all(constant_bool(c) for c in later[-1:]):
            # `while True:` without a break: only a return or a raise leaves it
            returns = contains_statement(stmt.body, (ast.Return,), into_loops=True)
            self.frame.exited = RETURNED if returns else RAISED
        else:                               # left because the condition became false
            self.apply_refinements(self.narrowing(stmt.test)[1], src)

    def stmt_For(self, stmt: ast.For) -> None:
        src = self.src(stmt)
        if stmt.orelse:
            raise CompilationError("for ... else is not supported (the else clause of a "
                                   "loop)", src)
        self.emit_for(stmt.target, stmt.iter, stmt.body, src)

    def stmt_Break(self, stmt: ast.Break) -> None:
        self.set_flag(f"$brk{self.loop_depth}", self.src(stmt))

    def stmt_Continue(self, stmt: ast.Continue) -> None:
        self.set_flag(f"$cont{self.loop_depth}", self.src(stmt))

    def stmt_Return(self, stmt: ast.Return) -> None:
        self.emit_return(stmt.value, self.src(stmt))

    def emit_return(self, value_node: ast.expr | None, src: SourceRange) -> None:
        if value_node is None:
            value = self.const(None, src)
        elif self.return_type is not None:
            value = self.typed_expr(value_node, self.return_type, "the return value")
        else:
            value = self.expr(value_node)
        self.settle([value], self.return_type)
        if self.return_type is not None and value.type != self.return_type:
            if not is_subtype(value.type, self.return_type):
                raise CompilationError(
                    f"return value has type {value.type.annotation}, but the function is "
                    f"annotated to return {self.return_type.annotation}", src)
            value = self.insert("aten::annotate", [value], [self.return_type], src=src).output
        self.frame.assign("$retval", value, src)
        self.set_flag("$ret", src)

    def stmt_Raise(self, stmt: ast.Raise) -> None:
        src = self.src(stmt)
        if stmt.exc is None:
            raise CompilationError("a bare 'raise' (re-raise) is not supported", src)
        exc = stmt.exc
        args: list[Value] = []
        if isinstance(exc, ast.Call):
            cls = self.sugared_expr(exc.func)
            args = [self.expr(a) for a in exc.args]
        else:
            cls = self.sugared_expr(exc)
        obj = getattr(cls, "obj", None)
        if not (isinstance(obj, type) and issubclass(obj, BaseException)):
            raise CompilationError("raise needs an exception class such as ValueError", src)
        self.emit_raise(obj, args, src)

    def emit_raise(self, cls: type, args: list[Value], src: SourceRange) -> None:
        """Raise `cls(*args)`; nothing after it on this path runs."""
        self.insert("prim::RaiseException", args, [], {"cls": cls}, src)
        self.frame.exited = RAISED

    def stmt_Assert(self, stmt: ast.Assert) -> None:
        src = self.src(stmt)
        cond, refine = self.condition(stmt.test)

        def fail():
            self.emit_raise(AssertionError, [self.expr(stmt.msg)] if stmt.msg else [], src)
        self.emit_if(cond, lambda: None, fail, src, refine)

    def stmt_Delete(self, stmt: ast.Delete) -> None:
        src = self.src(stmt)
        for target in stmt.targets:
            if isinstance(target, ast.Subscript):
                base = self.expr(target.value)
                self.emit_op("aten::__delitem__", [base, self.index_value(target.slice)],
                             src=src)
            elif isinstance(target, ast.Name):
                if self.frame.value_of(target.id, src) is None:
                    raise CompilationError(f"undefined value {target.id}: '{target.id}' is "
                                           "not defined", self.src(target))
                self.frame.vars[target.id] = undefined(f"'{target.id}' was deleted", None,
                                                       ("deleted here:", src))
            else:
                raise CompilationError("del supports names and subscripts", src)

    def stmt_With(self, stmt: ast.With) -> None:
        src = self.src(stmt)
        managers = []
        for item in stmt.items:
            manager = self.expr(item.context_expr)
            if not isinstance(manager.type, ClassType):
                raise CompilationError("with needs a script class instance with __enter__ "
                                       "and __exit__", src)
            entered = self.call_method(manager, "__enter__", [], {}, src)
            # from here an exception calls __exit__ (in the target's assignment too)
            self.insert("prim::Enter", [manager], [], src=src)
            if item.optional_vars is not None:
                self.assign_target(item.optional_vars, entered, src)
            managers.append(manager)
        self.emit_statements(stmt.body)
        exited = self.frame.exited
        none = self.const(None, src)
        self.frame.exited = None
        for manager in reversed(managers):
            self.insert("prim::Exit", [manager], [], src=src)
            if exited != RAISED:            # __exit__ runs on return/break too
                self.call_method(manager, "__exit__", [none, none, none], {}, src)
        self.frame.exited = exited


def _unsupported_statement(stmt: ast.stmt) -> str:
    names = {"Try": "try/except", "TryStar": "try/except*", "Global": "the global statement",
             "Nonlocal": "the nonlocal statement", "FunctionDef": "nested function definitions",
             "AsyncFunctionDef": "async functions", "ClassDef": "class definitions inside "
             "functions", "Import": "import statements", "ImportFrom": "import statements",
             "AsyncFor": "async for", "AsyncWith": "async with", "Match": "match statements"}
    what = names.get(type(stmt).__name__, type(stmt).__name__)
    return f"script code does not support {what}"
