"""Emitting expressions: operators, comparisons, calls, subscripts, literals."""
from __future__ import annotations

import ast
import functools

from ..ir.graph import SourceRange, Value
from ..ir.types import (
    AnyType,
    BoolType,
    ClassType,
    DictType,
    FloatType,
    IntType,
    ListType,
    NoneType,
    OptionalType,
    StrType,
    TensorType,
    TupleType,
    Type,
    UninitializedType,
    UnionType,
    unify,
    union_options,
)
from ..ops.python_calls import storable
from .annotations import AnnotationError, evaluate, is_type_form
from .errors import CompilationError
from .sugared import CompileTimeTuple, ModuleListValue, PythonObject, Sugared

BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
          ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift",
          ast.RShift: "rshift", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
          ast.MatMult: "matmul"}
MAGIC = {"add": "__add__", "sub": "__sub__", "mul": "__mul__", "truediv": "__truediv__",
         "floordiv": "__floordiv__", "mod": "__mod__", "pow": "__pow__", "matmul": "__matmul__",
         "eq": "__eq__", "ne": "__ne__", "lt": "__lt__", "le": "__le__", "gt": "__gt__",
         "ge": "__ge__", "and": "__and__", "or": "__or__", "xor": "__xor__",
         "lshift": "__lshift__", "rshift": "__rshift__", "neg": "__neg__"}
REFLECTED = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}
COMPARE = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt",
           ast.GtE: "ge"}
UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert"}
NO_REFINEMENT: tuple[dict, dict] = ({}, {})


def function_locals(definition: ast.FunctionDef) -> frozenset[str]:
    """The names a function assigns (its local variables, by Python's scoping rules): every
    target but a comprehension's own, which are local to the comprehension (its `:=`
    targets are the function's)."""
    comprehension_targets = {id(n) for c in ast.walk(definition)
                             if isinstance(c, ast.comprehension) for n in ast.walk(c.target)}
    return frozenset(n.id for n in ast.walk(definition) if isinstance(n, ast.Name)
                     and isinstance(n.ctx, (ast.Store, ast.Del))
                     and id(n) not in comprehension_targets)


class ExpressionMixin:
    @functools.cached_property
    def local_names(self) -> frozenset[str]:
        return function_locals(self.definition)

    # ---- entry points
    def expr(self, node: ast.expr) -> Value:
        """Emit an expression that must be a runtime value."""
        result = self.sugared_expr(node)
        if isinstance(result, Sugared):
            return result.as_value(self, self.src(node))
        return result

    def sugared_expr(self, node: ast.expr):
        method = getattr(self, f"expr_{type(node).__name__}", None)
        if method is None:
            raise CompilationError(f"script code does not support {_describe_syntax(node)}",
                                   self.src(node))
        return method(node)

    # ---- names and literals
    def expr_Name(self, node: ast.Name):
        src = self.src(node)
        found = self.frame.value_of(node.id, src)
        if found is not None:
            return found
        if node.id in self.local_names:
            # Python decides scope per function: a name assigned anywhere in it is local
            # everywhere in it, so reading it first raises UnboundLocalError, it does not
            # read the global or builtin (this read `K` from the module before `K = 5`)
            raise CompilationError(
                f"local variable '{node.id}' is referenced before assignment: it is assigned "
                "elsewhere in this function, which makes it local everywhere in it (Python "
                "raises UnboundLocalError; a global or builtin of that name is not read)", src)
        return self.resolver.python_name(node.id, src)

    def expr_Constant(self, node: ast.Constant) -> Value:
        if node.value is Ellipsis:
            return self.const_python(Ellipsis, self.src(node))
        return self.const(node.value, self.src(node))

    def expr_Attribute(self, node: ast.Attribute):
        """``x.a.b.c`` nests one Attribute per name: walked as a loop, not recursively."""
        chain = [node]
        while isinstance(chain[-1].value, ast.Attribute):
            chain.append(chain[-1].value)
        value = self.sugared_expr(chain[-1].value)
        for link in reversed(chain):
            value = self.get_attr(value, link.attr, self.src(link))
        return value

    def expr_NamedExpr(self, node: ast.NamedExpr) -> Value:
        value = self.expr(node.value)
        self.frame.assign(node.target.id, value, self.src(node))
        return value

    # ---- operators
    def expr_BinOp(self, node: ast.BinOp) -> Value:
        """A tree of binary operators, walked with an explicit stack: a chain such as
        ``a + 1.5 + ... + 1.5`` nests one BinOp per term, and recursion would stop at
        Python's recursion limit long before CPython's parser does. Operands are emitted
        left to right, as Python evaluates them."""
        operands: list[Value] = []
        pending: list[tuple[ast.expr, bool]] = [(node, False)]
        while pending:
            current, operands_ready = pending.pop()
            if operands_ready:
                right = operands.pop()
                left = operands.pop()
                name = BINARY[type(current.op)]
                operands.append(self.binary(name, left, right, self.src(current)))
            elif isinstance(current, ast.BinOp):
                pending += [(current, True), (current.right, False), (current.left, False)]
            else:
                operands.append(self.expr(current))
        return operands[0]

    def binary(self, name: str, a: Value, b: Value, src: SourceRange) -> Value:
        if name in MAGIC and (isinstance(a.type, ClassType) or isinstance(b.type, ClassType)):
            return self.magic_binary(name, a, b, src)
        if name == "mul":
            repeated = self.repeated_tuple(a, b, src) or self.repeated_tuple(b, a, src)
            if repeated is not None:
                return repeated
        exponent = _negative_int_constant(b) if name == "pow" and a.type == IntType else None
        if exponent is not None:
            # `n ** -2` is a float in Python (CPython computes float(n) ** -2.0), so the
            # result can meet a `float` annotation as in TorchScript
            a, b = self.emit_op("aten::Float", [a], src=src), self.const(float(exponent), src)
        return self.emit_op(f"aten::{name}", [a, b], src=src)

    def repeated_tuple(self, t: Value, n: Value, src: SourceRange) -> Value | None:
        """`t * 2` of a tuple by a constant: a tuple of known element types (which mixed
        elements need); by a count known only when it runs it is `aten::mul`."""
        count = n.node.attrs.get("value") if n.node.kind == "prim::Constant" else None
        if not (isinstance(t.type, TupleType) and t.type.py_class is None
                and type(count) in (int, bool) and len(t.type.elems) * count <= 256):
            return None
        items = self.insert("prim::TupleUnpack", [t], list(t.type.elems), src=src).outputs
        return self.emit_op("prim::TupleConstruct", list(items) * max(count, 0), src=src)

    def magic_binary(self, name: str, a: Value, b: Value, src: SourceRange) -> Value:
        """An operator on a script-class instance, with Python's fallbacks: the right
        operand's reflected method (__radd__; __gt__ for <), != as the negation of
        __eq__, and ==/!= as identity when the class defines neither."""
        method = MAGIC[name]
        reflected = MAGIC[REFLECTED[name]] if name in REFLECTED else "__r" + method[2:]
        if self.has_magic(a, method):
            return self.call_method(a, method, [b], {}, src)
        if self.has_magic(b, reflected):
            return self.call_method(b, reflected, [a], {}, src)
        if name == "ne" and self.has_magic(a, "__eq__"):
            equal = self.truth(self.call_method(a, "__eq__", [b], {}, src), src)
            return self.emit_op("aten::__not__", [equal], src=src)
        if name in ("eq", "ne"):
            return self.emit_op("aten::__is__" if name == "eq" else "aten::__isnot__", [a, b],
                                src=src)
        raise CompilationError(f"unsupported operand types for {method}: "
                               f"'{a.type.annotation}' and '{b.type.annotation}'", src)

    def has_magic(self, value: Value, method: str) -> bool:
        return isinstance(value.type, ClassType) and self.class_has_method(value.type, method)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Value:
        """``- - ~x`` nests one UnaryOp per sign: the arithmetic ones are applied in a loop,
        innermost first, so a long run does not recurse."""
        src = self.src(node)
        if isinstance(node.op, ast.Not):
            cond, _ = self.condition(node.operand)
            return self.negate(cond, src)
        chain = [node]
        while isinstance(chain[-1].operand, ast.UnaryOp) and \
                not isinstance(chain[-1].operand.op, ast.Not):
            chain.append(chain[-1].operand)
        value = self.expr(chain[-1].operand)
        for link in reversed(chain):
            value = self.unary(UNARY[type(link.op)], value, self.src(link))
        return value

    def unary(self, name: str, value: Value, src: SourceRange) -> Value:
        if isinstance(value.type, ClassType) and name in MAGIC:
            return self.call_method(value, MAGIC[name], [], {}, src)
        return self.emit_op(f"aten::{name}", [value], src=src)

    def expr_BoolOp(self, node: ast.BoolOp) -> Value:
        value, _ = self.bool_op(node)
        return value

    def bool_op(self, node: ast.BoolOp, want_bool: bool = False):
        """`a and b` / `a or b` with short-circuiting and Optional refinement.

        Python returns an operand, not a bool; when both operands are bools (or a
        condition is wanted) the result is a bool."""
        src = self.src(node)
        is_and = isinstance(node.op, ast.And)
        first, *rest = node.values
        left, refine = self.condition(first) if want_bool else self.operand(first)
        if not rest:
            return left, refine
        right_node = ast.BoolOp(op=node.op, values=rest) if len(rest) > 1 else rest[0]
        ast.copy_location(right_node, rest[0])
        right_node.end_lineno, right_node.end_col_offset = node.end_lineno, node.end_col_offset
        cond = self.truth(left, src)
        narrowed = refine[0] if is_and else refine[1]
        refined_after: list = []

        def evaluate_right() -> Value:
            self.apply_refinements(narrowed, src)
            value, r = self.bool_op(right_node, want_bool) if isinstance(
                right_node, ast.BoolOp) else (
                self.condition(right_node) if want_bool else self.operand(right_node))
            refined_after.append(r)
            return value

        def keep_left() -> Value:
            if want_bool or left.type == BoolType:
                return self.const(not is_and, src)
            if not is_and and isinstance(left.type, OptionalType):     # true: not None
                return self.insert("prim::unchecked_cast", [left], [left.type.elem],
                                   src=src).output
            return left

        known = constant_bool(cond)
        if known is not None:       # decided when compiled (is_scripting(), a constant flag)
            if known != is_and:     # short-circuits: the right operand is not compiled
                return keep_left(), NO_REFINEMENT
            value = evaluate_right()
            return value, refined_after[0] if want_bool or value.type == BoolType else (
                NO_REFINEMENT)
        # `a and (v := f()) > 0`: v, unbound (or maybe unbound) before, is defined
        # whenever the whole is true
        assigned = {n.target.id for n in ast.walk(right_node) if isinstance(n, ast.NamedExpr)
                    and getattr(self.frame.lookup(n.target.id), "value", None) is None}
        outer = self.partially_defined
        self.partially_defined = outer | assigned
        try:
            if is_and:
                result = self.emit_conditional(cond, evaluate_right, keep_left, src)
            else:
                result = self.emit_conditional(cond, keep_left, evaluate_right, src)
        finally:
            self.partially_defined = outer
        if not (want_bool or result.type == BoolType):
            return result, NO_REFINEMENT
        defined = {name: b.partial for name in assigned
                   if (b := self.frame.vars.get(name)) is not None and b.partial is not None}
        if is_and:
            inner = refined_after[0][0] if refined_after else {}
            return result, ({**refine[0], **inner, **defined}, {})
        inner = refined_after[0][1] if refined_after else {}
        return result, ({}, {**refine[1], **inner, **defined})

    def negate(self, cond: Value, src: SourceRange) -> Value:
        known = constant_bool(cond)
        if known is not None:
            return self.const(not known, src)
        return self.emit_op("aten::__not__", [cond], src=src)

    def operand(self, node: ast.expr):
        """An operand of and/or: its value as is (Python returns operands, not bools),
        with the refinements a comparison or isinstance() makes for the other operand."""
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.BoolOp):
            return self.bool_op(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) or \
                isinstance(node, ast.Call) and self.is_isinstance_call(node):
            return self.condition(node)
        value = self.expr(node)
        if isinstance(node, (ast.Name, ast.NamedExpr)) and isinstance(value.type, OptionalType):
            # `x and x + 1`: true, x is not None
            name = node.id if isinstance(node, ast.Name) else node.target.id
            return value, ({name: value.type.elem}, {})
        return value, NO_REFINEMENT

    def truth(self, value: Value, src: SourceRange) -> Value:
        """bool(value) for conditions (`if x:` on ints, lists, Optional, arrays)."""
        if value.type == BoolType:
            return value
        if isinstance(value.type, ClassType):
            if self.class_has_method(value.type, "__bool__"):
                return self.checked_bool(self.call_method(value, "__bool__", [], {}, src), src)
            if self.class_has_method(value.type, "__len__"):
                return self.checked_length(self.call_method(value, "__len__", [], {}, src), src)
            return self.const(True, src)
        if value.type == NoneType:
            return self.const(False, src)
        return self.call_builtin(bool, [value], src)

    def checked_bool(self, result: Value, src: SourceRange) -> Value:
        """What a class's __bool__ returned, as Python's truth test takes it: anything but
        a bool raises TypeError (checked at run time when the static type allows a bool)."""
        if result.type == BoolType:
            return result
        if BoolType not in union_options(result.type) and result.type != AnyType:
            message = self.const("__bool__ should return bool, returned "
                                 f"{result.type.annotation}", src)
            self.insert("prim::RaiseException", [message], [], {"cls": TypeError}, src)
            return self.const(True, src)        # never observed: the raise comes first
        message = self.const("__bool__ should return bool", src)
        is_bool = self.insert("prim::isinstance", [result], [BoolType], {"types": (BoolType,)},
                              src).output
        self.emit_if(is_bool, lambda: None,
                     lambda: self.emit_raise(TypeError, [message], src), src)
        return self.insert("prim::unchecked_cast", [result], [BoolType], src=src).output

    def checked_length(self, length: Value, src: SourceRange) -> Value:
        """The truth of an object by its __len__, as Python takes it: the length must be
        an int (else a compilation error: Python would raise TypeError on every call) and
        not negative (ValueError when it runs)."""
        if length.type not in (IntType, BoolType):
            raise CompilationError(f"__len__ returns {length.type.annotation}, but Python "
                                   "requires an int of it", src)
        zero = self.const(0, src)
        negative = self.emit_op("aten::lt", [length, zero], src=src)
        self.emit_if(negative, lambda: self.emit_raise(
            ValueError, [self.const("__len__() should return >= 0", src)], src),
            lambda: None, src)
        return self.emit_op("aten::ne", [length, zero], src=src)

    def expr_Compare(self, node: ast.Compare) -> Value:
        return self.compare(node)[0]

    def compare(self, node: ast.Compare):
        """Comparison chains `a < b < c` evaluate pairwise, each operand once."""
        src = self.src(node)
        left = self.expr(node.left)
        results: list[Value] = []
        refinements = NO_REFINEMENT
        pairs = list(zip(node.ops, node.comparators))

        def chain(left_value: Value, index: int) -> Value:
            nonlocal refinements
            op, right_node = pairs[index]
            right = self.sugared_expr(right_node)
            if isinstance(op, (ast.In, ast.NotIn)):
                right = self.compiler.module_container(self, right, src)
                if isinstance(right, ModuleListValue):      # `"k" in self.layers`
                    right = self.list_literal(right.unroll(self, src), None, src)
            if isinstance(right, Sugared):
                right = right.as_value(self, self.src(right_node))
            value, refine = self.compare_pair(op, left_value, right, node.left, right_node, src)
            if len(pairs) == 1:
                refinements = refine
            if index + 1 == len(pairs):
                return value
            cond = self.truth(value, src)
            return self.emit_conditional(cond, lambda: self.truth(chain(right, index + 1), src),
                                         lambda: self.const(False, src), src)

        results.append(chain(left, 0))
        return results[0], refinements

    def compare_pair(self, op: ast.cmpop, a: Value, b: Value, a_node: ast.expr,
                     b_node: ast.expr, src: SourceRange):
        if isinstance(op, (ast.Is, ast.IsNot)):
            return self.identity(op, a, b, a_node, b_node, src)
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(b.type, ClassType):
                result = self.call_method(b, "__contains__", [a], {}, src)
            else:
                result = self.emit_op("aten::__contains__", [b, a], src=src)
            if isinstance(op, ast.NotIn):
                result = self.emit_op("aten::__not__", [result], src=src)
            return result, NO_REFINEMENT
        name = COMPARE[type(op)]
        if isinstance(a.type, ClassType) or isinstance(b.type, ClassType):
            return self.binary(name, a, b, src), NO_REFINEMENT
        return self.emit_op(f"aten::{name}", [a, b], src=src), NO_REFINEMENT

    def identity(self, op, a: Value, b: Value, a_node, b_node, src):
        """`x is None` / `x is not None`, refining an Optional variable on each branch."""
        kind = "aten::__is__" if isinstance(op, ast.Is) else "aten::__isnot__"
        known = _known_identity(a.type, b.type)
        if known is not None:       # decided by the types (`self.bias is None`, bias: None)
            return self.const(known == (kind == "aten::__is__"), src), NO_REFINEMENT
        result = self.emit_op(kind, [a, b], src=src)
        refine_true: dict = {}
        refine_false: dict = {}
        for value, node, other in ((a, a_node, b), (b, b_node, a)):
            if isinstance(node, ast.NamedExpr):    # `(v := d.get(k)) is not None` narrows v
                node = node.target
            if other.type == NoneType and isinstance(node, ast.Name) and \
                    NoneType in union_options(value.type):
                rest = [t for t in union_options(value.type) if t != NoneType]
                narrowed = rest[0] if len(rest) == 1 else UnionType(tuple(rest))
                is_none, not_none = ({node.id: NoneType}, {node.id: narrowed})
                refine_true, refine_false = (is_none, not_none) if kind == "aten::__is__" else (
                    not_none, is_none)
        return result, (refine_true, refine_false)

    def condition(self, node: ast.expr):
        """A bool for if/while/assert, plus the variables it narrows on each branch."""
        if isinstance(node, ast.Compare):
            value, refine = self.compare(node)
        elif isinstance(node, ast.BoolOp):
            value, refine = self.bool_op(node, want_bool=True)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner, refine = self.condition(node.operand)
            return self.negate(inner, self.src(node)), refine[::-1]
        elif isinstance(node, ast.Call) and self.is_isinstance_call(node):
            value, refine = self.isinstance_call(node, self.src(node))
        elif isinstance(node, (ast.Name, ast.NamedExpr)):
            value = self.expr(node)
            refine = NO_REFINEMENT
            name = node.id if isinstance(node, ast.Name) else node.target.id
            if isinstance(value.type, OptionalType):     # `if x:` narrows like `x is not None`
                refine = ({name: value.type.elem}, {})
        else:
            value, refine = self.expr(node), NO_REFINEMENT
        return self.truth(value, self.src(node)), refine

    def expr_IfExp(self, node: ast.IfExp) -> Value:
        src = self.src(node)
        cond, refine = self.condition(node.test)
        known = constant_bool(cond)
        if known is not None:       # only the taken alternative is compiled
            return self.expr(node.body if known else node.orelse)

        def branch(expr_node, narrowed):
            def run():
                self.apply_refinements(narrowed, src)
                return self.expr(expr_node)
            return run
        return self.emit_conditional(cond, branch(node.body, refine[0]),
                                     branch(node.orelse, refine[1]), src)

    # ---- containers
    def starred_items(self, node: ast.Starred) -> list:
        """The elements `*t` stands for in a display or a call: a tuple's, whose number is
        known when compiling (TorchScript's rule; a list's length is not)."""
        value = self.sugared_expr(node.value)
        if isinstance(value, CompileTimeTuple):
            return list(value.items)
        value = self.as_value(value, self.src(node))
        if not isinstance(value.type, TupleType):
            raise CompilationError(f"a starred {value.type.annotation} here: only a tuple "
                                   "(whose length is known when compiling) can be starred",
                                   self.src(node))
        return self.insert("prim::TupleUnpack", [value], list(value.type.elems),
                           src=self.src(node)).outputs

    def display_items(self, elts: list[ast.expr], evaluate) -> list:
        """The elements of a tuple or list display, with `*t` spread out."""
        items = []
        for e in elts:
            if isinstance(e, ast.Starred):
                items += [self.as_value(i, self.src(e)) for i in self.starred_items(e)]
            else:
                items.append(evaluate(e))
        return items

    def expr_Tuple(self, node: ast.Tuple):
        items = self.display_items(node.elts, self.sugared_expr)
        if any(isinstance(i, Sugared) for i in items) and not all(
                isinstance(i, PythonObject) for i in items):
            return CompileTimeTuple(items)
        if any(isinstance(i, Sugared) for i in items):
            return PythonObject(tuple(i.obj for i in items), "tuple")
        return self.emit_op("prim::TupleConstruct", items, src=self.src(node))

    def expr_List(self, node: ast.List, annotated: Type | None = None) -> Value:
        src = self.src(node)
        items = self.display_items(node.elts, self.expr)
        return self.list_literal(items, annotated, src)

    def list_literal(self, items: list[Value], annotated: Type | None, src) -> Value:
        self.settle(items, annotated.elem if isinstance(annotated, ListType) else None)
        if annotated is not None:
            if not isinstance(annotated, ListType):
                raise CompilationError(f"a list literal cannot be {annotated.annotation}", src)
            elem = annotated.elem
            for v in items:
                self.check_assignable(v.type, elem, src, "list element")
        elif not items:
            elem = UninitializedType    # typed by its first store or use (see settle)
        else:
            elem = items[0].type
            for v in items[1:]:
                joined = unify(elem, v.type)
                if joined is None:
                    raise CompilationError(
                        "list literal elements must have a single type: found "
                        f"{elem.annotation} and {v.type.annotation} (annotate the list as "
                        "List[Union[...]] or List[Any] to mix types)", src)
                elem = joined
        return self.insert("prim::ListConstruct", items, [ListType(elem)], src=src).output

    def array_literal(self, node: ast.List) -> Value:
        """A (nested) list literal NumPy makes an array of (`np.array([i, 0.5])`).  Python
        numbers of different types, which a list may not hold, are passed as a tuple:
        NumPy reads a tuple as it reads a list (the dtype it discovers, each number
        converted once, to the dtype= asked for if any).  Anything else follows the rules
        of list literals."""
        src = self.src(node)
        leaves: list[Value] = []

        def evaluate(n: ast.expr):
            if isinstance(n, ast.List):
                return [evaluate(e) for e in n.elts]
            leaves.append(self.expr(n))
            return leaves[-1]
        nested = evaluate(node)
        kinds = {v.type for v in leaves}
        mixed_numbers = len(kinds) > 1 and kinds <= {BoolType, IntType, FloatType}

        def build(part) -> Value:
            if not isinstance(part, list):
                return part
            items = [build(p) for p in part]
            if mixed_numbers:
                return self.emit_op("prim::TupleConstruct", items, src=src)
            return self.list_literal(items, None, src)
        return build(nested)

    def expr_Dict(self, node: ast.Dict, annotated: Type | None = None) -> Value:
        src = self.src(node)
        # (key, value) of each entry, in order; a `**mapping` entry is (None, mapping)
        entries = [(None if k is None else self.expr(k), self.expr(v))
                   for k, v in zip(node.keys, node.values)]
        keys = [k for k, _ in entries if k is not None]
        values = [v for k, v in entries if k is not None]
        merged = [v for k, v in entries if k is None]
        for m in merged:
            if not isinstance(m.type, DictType):
                raise CompilationError(f"'**' in a dict literal needs a dict, not a "
                                       f"{m.type.annotation}", src)
        self.settle(values, annotated.value if isinstance(annotated, DictType) else None)
        if annotated is not None:
            if not isinstance(annotated, DictType):
                raise CompilationError(f"a dict literal cannot be {annotated.annotation}", src)
            dict_type = annotated
        elif not entries:
            return self.insert("prim::DictConstruct", [], [EMPTY_DICT], src=src).output
        else:
            dict_type = DictType(
                self.common_type_of([*(k.type for k in keys), *(m.type.key for m in merged)],
                                    "dict key", src),
                self.common_type_of([*(v.type for v in values),
                                     *(m.type.value for m in merged)], "dict value", src))
        self.check_dict_key(dict_type.key, src)
        for k, v in zip(keys, values):
            self.check_assignable(k.type, dict_type.key, src, "dict key")
            self.check_assignable(v.type, dict_type.value, src, "dict value")
        for m in merged:
            self.check_assignable(m.type.key, dict_type.key, src, "dict key")
            self.check_assignable(m.type.value, dict_type.value, src, "dict value")
        if not merged:
            flat = [x for kv in zip(keys, values) for x in kv]
            return self.insert("prim::DictConstruct", flat, [dict_type], src=src).output
        # {**a, "k": v, **b}: the entries stored in order into a new dict, as Python does
        result = self.insert("prim::DictConstruct", [], [dict_type], src=src).output
        for k, v in entries:
            if k is None:
                self.emit_op("dict::update", [result, v], src=src)
            else:
                self.emit_op("aten::__setitem__", [result, k, v], src=src)
        return result

    def common_type(self, values: list[Value], what: str, src) -> Type:
        return self.common_type_of([v.type for v in values], what, src)

    @staticmethod
    def common_type_of(types: list[Type], what: str, src) -> Type:
        result = types[0]
        for t in types[1:]:
            joined = unify(result, t)
            if joined is None:
                raise CompilationError(f"{what}s must have a single type: found "
                                       f"{result.annotation} and {t.annotation}", src)
            result = joined
        return result

    @staticmethod
    def check_dict_key(key: Type, src) -> None:
        if key not in (StrType, IntType, BoolType, AnyType) and not isinstance(
                key, TensorType) and key.annotation not in ("float", "complex"):
            raise CompilationError(f"dict keys must be str, int, float, complex, bool or Tensor; "
                                   f"{key.annotation} is not supported as a dict key type", src)

    def check_assignable(self, found: Type, expected: Type, src, what: str) -> None:
        if not storable(found, expected):
            raise CompilationError(f"{what} has type {found.annotation}, expected "
                                   f"{expected.annotation}", src)

    # ---- subscripts
    def expr_Subscript(self, node: ast.Subscript):
        src = self.src(node)
        base = self.compiler.module_container(self, self.sugared_expr(node.value), src)
        if isinstance(base, ModuleListValue):
            return base.lookup(self.constant_index(node.slice, base, src), src)
        if isinstance(base, CompileTimeTuple):      # `item[1]` over moduledict.items()
            index = self.constant_index(node.slice, base, src)
            return base.items[index] if isinstance(index, int) else CompileTimeTuple(
                base.items[index])
        if is_type_form(getattr(base, "obj", None)):      # List[int] as a value (isinstance)
            try:
                obj = evaluate(node, self.resolver.globals, self.resolver.closure)
            except AnnotationError as e:
                raise CompilationError(str(e), src) from None
            return PythonObject(obj, ast.unparse(node))
        if isinstance(base, PythonObject):
            raise CompilationError(f"{base.describe()} cannot be subscripted here", src)
        if isinstance(base, Sugared):
            base = base.as_value(self, src)
        return self.getitem(base, node.slice, src)

    def constant_index(self, node: ast.expr, container: Sugared, src) -> object:
        """The index of a compile-time container: a literal, or a constant such as the
        key of an unrolled loop over a ModuleDict; or a slice of such constants."""
        if isinstance(node, ast.Slice):
            return slice(*(None if part is None else self.constant_index(part, container, src)
                           for part in (node.lower, node.upper, node.step)))
        if _is_literal(node):
            return ast.literal_eval(node)
        key = self.sugared_expr(node)
        if isinstance(key, Value) and key.node.kind == "prim::Constant":
            return key.node.attrs["value"]
        raise CompilationError(f"a {container.describe()} can only be indexed by a constant",
                               src)

    def getitem(self, base: Value, index_node: ast.expr, src) -> Value:
        if isinstance(base.type, ClassType):
            return self.call_method(base, "__getitem__", [self.expr(index_node)], {}, src)
        index = self.index_value(index_node)
        attrs = slice_attrs(index) or {}
        if isinstance(base.type, TupleType) and not isinstance(base.type, TensorType):
            const = _constant_index(index_node)
            if const is None and attrs:         # slice(1, 3) of constants
                const = tuple(constant_of(v) for v in index.node.inputs)
                const = None if Ellipsis in const else const
            if const is not None:
                attrs["index"] = const
        return self.emit_op("aten::__getitem__", [base, index], attrs=attrs, src=src)

    def index_value(self, node: ast.expr) -> Value:
        if isinstance(node, ast.Slice):
            parts = [self.expr(p) if p is not None else self.const(None, self.src(node))
                     for p in (node.lower, node.upper, node.step)]
            return self.emit_op("prim::Slice", parts, src=self.src(node))
        if isinstance(node, ast.Tuple):
            items = [self.index_value(e) for e in node.elts]
            return self.emit_op("prim::TupleConstruct", items, src=self.src(node))
        return self.expr(node)

    def expr_Slice(self, node: ast.Slice) -> Value:
        return self.index_value(node)

    # ---- strings
    def expr_JoinedStr(self, node: ast.JoinedStr) -> Value:
        src = self.src(node)
        parts = []
        for piece in node.values:
            if isinstance(piece, ast.Constant):
                parts.append(self.const(piece.value, src))
            else:
                parts.append(self.expr(piece))
        result = parts[0] if parts else self.const("", src)
        for p in parts[1:]:
            result = self.emit_op("aten::add", [result, p], src=src)
        return result

    def expr_FormattedValue(self, node: ast.FormattedValue) -> Value:
        src = self.src(node)
        value = self.expr(node.value)
        spec = self.expr(node.format_spec) if node.format_spec else self.const("", src)
        conversion = {-1: "", 115: "s", 114: "r", 97: "a"}[node.conversion]
        return self.emit_op("prim::FormatValue", [value, spec], attrs={"conversion": conversion},
                            src=src)


# `{}` until its first store or use (see FunctionEmitter.settle)
EMPTY_DICT = DictType(UninitializedType, UninitializedType)


def slice_attrs(index: Value) -> dict | None:
    """The attributes of an element access whose index is a slice (`a:b` or `slice(a, b)`,
    also through a variable): the result is a sequence, not an element."""
    return {"slice": True} if index.node.kind == "prim::Slice" else None


def constant_of(value: Value) -> object:
    """The value of a constant, or Ellipsis where it is not known when compiling."""
    return value.node.attrs["value"] if value.node.kind == "prim::Constant" else Ellipsis


def _negative_int_constant(value: Value) -> int | None:
    """The value of a negative int literal (`-2` is the negation of a constant)."""
    node, sign = value.node, 1
    if node.kind == "aten::neg":
        node, sign = node.inputs[0].node, -1
    if node.kind != "prim::Constant" or node.outputs[0].type != IntType:
        return None
    number = sign * node.attrs["value"]
    return number if number < 0 else None


def constant_bool(value: Value) -> bool | None:
    """The value of a bool known when compiling (a constant), else None."""
    node = value.node
    if node.kind == "prim::Constant" and value.type == BoolType:
        return bool(node.attrs["value"])
    return None


def _known_identity(a: Type, b: Type) -> bool | None:
    """`a is b` when the static types decide it: None is None, and a value whose type
    excludes None is never None."""
    if a == NoneType and b == NoneType:
        return True
    for x, y in ((a, b), (b, a)):
        if x == NoneType and y != AnyType and NoneType not in union_options(y):
            return False
    return None


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def _constant_index(node: ast.expr) -> int | tuple | None:
    """A tuple index known at compile time: an int, or (start, stop, step) of a slice."""
    if isinstance(node, ast.Slice):
        parts = [p for p in (node.lower, node.upper, node.step) if p is not None]
        if all(_is_literal(p) for p in parts):
            return tuple(ast.literal_eval(p) if p is not None else None
                         for p in (node.lower, node.upper, node.step))
        return None
    if _is_literal(node):
        value = ast.literal_eval(node)
        return value if isinstance(value, int) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _is_literal(
            node.operand):
        return -ast.literal_eval(node.operand)
    return None


def _describe_syntax(node: ast.AST) -> str:
    names = {"Lambda": "lambda expressions", "Yield": "yield (generators)",
             "YieldFrom": "yield from (generators)", "Await": "await", "SetComp":
             "set comprehensions", "Set": "sets", "GeneratorExp": "generator expressions",
             "Starred": "starred expressions here"}
    return names.get(type(node).__name__, f"'{type(node).__name__}' expressions")

