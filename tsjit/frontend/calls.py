"""Calls, attributes, isinstance, builtin special forms, for loops and comprehensions."""
from __future__ import annotations

import ast
import builtins
import inspect

import numpy as np

from ..ir.graph import SourceRange, Value
from ..ir.types import (
    AnyType,
    BoolType,
    ClassType,
    DictType,
    EnumType,
    FloatType,
    IntType,
    ListType,
    NoneType,
    OptionalType,
    StrType,
    TensorType,
    TupleType,
    Type,
    UnionType,
    VarTupleType,
    is_subtype,
    make_union,
    union_options,
)
from ..ops.numpy_rules import CONSTANTS
from ..ops.python_calls import KEYWORDS
from ..ops.registry import (
    NO_DEFAULT,
    OpDef,
    OpTypeError,
    infer_types,
    lookup_attribute,
    lookup_method,
    lookup_python,
)
from .errors import CompilationError
from .isinstance_types import (
    PY_TYPES,
    RUNTIME_CONTAINER,
    instance_of,
    isinstance_target,
    undecided_instance,
)
from .sugared import (
    BoundMethod,
    CompileTimeTuple,
    IterableForm,
    PythonObject,
    SpecialForm,
    Sugared,
    SuperObject,
)

# what each conversion method may return (a bool from __int__ is an int, as in Python)
_CONVERSION_RESULTS = {"__int__": (IntType, BoolType), "__index__": (IntType, BoolType),
                       "__float__": (FloatType,)}


# special forms' positional argument counts (enumerate's start may be a keyword)
_ARITY = {"enumerate": (1, 2), "zip": (1, None), "reversed": (1, 1), "isinstance": (2, 2),
          "slice": (1, 3),
          "is_scripting": (0, 0),
          "annotate": (2, 2), "getattr": (2, 3), "hasattr": (2, 2)}


def _literal_or_ellipsis(node: ast.expr) -> object:
    """The value of a literal (`-1`, `None`), else Ellipsis: literal slice bounds stay
    constants, so a tuple's slice keeps its element types."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        return Ellipsis


def _defines(cls: type, fn) -> bool:
    """Whether `fn` is a method (or a property's getter) of `cls` itself."""
    found = vars(cls).get(getattr(fn, "__name__", ""))
    return found is fn or getattr(found, "fget", None) is fn


def _check_exact_narrowing(target: Type, src: SourceRange) -> None:
    """Narrowing an Any to a class types it as exactly that class, whose methods script
    code then calls: an instance of a subclass would need the subclass's overrides."""
    subclasses = target.py_class.__subclasses__() if isinstance(target, ClassType) else []
    if subclasses:
        raise CompilationError(
            f"isinstance() narrows an Any to {target.annotation}, which has subclasses "
            f"({', '.join(c.__qualname__ for c in subclasses)}): script code would call "
            f"{target.annotation}'s methods on their instances; annotate the value with a "
            "Union of the classes instead", src)


def _check_arity(name: str, count: int, kwargs: dict, src: SourceRange) -> None:
    """Refuse a special form called with the wrong number of arguments, as Python would."""
    low, high = _ARITY[name]
    if name == "enumerate" and "start" in kwargs:
        count += 1
        kwargs = {k: v for k, v in kwargs.items() if k != "start"}
    if kwargs:
        raise CompilationError(f"{name}() got an unexpected keyword argument "
                               f"'{next(iter(kwargs))}'", src)
    if count < low or (high is not None and count > high):
        expected = (f"{low}" if low == high else f"at least {low}" if high is None
                    else f"{low} to {high}")
        raise CompilationError(f"{name}() takes {expected} arguments ({count} given)"
                               + (" in script code" if name == "zip" else ""), src)


_SCALAR_CLASSES = {IntType: int, FloatType: float, BoolType: bool, StrType: str,
                   NoneType: type(None)}
_STRUCTURED_CLASSES = {ListType: list, DictType: dict, TupleType: tuple, VarTupleType: tuple,
                       TensorType: np.ndarray}


def _python_class(t: object) -> type | None:
    """The Python class of values of a builtin IR type (None for script classes, modules
    and unions): getattr/hasattr of an attribute it has, which script code does not
    support, cannot answer "absent"."""
    if not isinstance(t, Type):
        return None
    found = _SCALAR_CLASSES.get(t) if t in _SCALAR_CLASSES else None
    return found or _STRUCTURED_CLASSES.get(type(t))


def keywords_taken(params, kwargs: dict) -> tuple[str, ...]:
    """The keyword arguments a `**kwargs` parameter takes (those no other parameter names),
    in the call's order."""
    if not any(p.kwvariadic for p in params):
        return ()
    named = {p.name for p in params if not (p.variadic or p.kwvariadic)}
    return tuple(k for k in kwargs if k not in named)


class CallMixin:
    # ---- calls
    def expr_Call(self, node: ast.Call):
        src = self.src(node)
        literal = self.constructor_literal(node)
        if literal is not None:
            return self.sugared_expr(literal)
        func = self.sugared_expr(node.func)
        if getattr(func, "obj", None) is dict and len(node.args) == 1 and node.keywords:
            return self.dict_with_keywords(node)
        if isinstance(func, SpecialForm):
            return self.special_form(func.name, node.args, node.keywords, src)
        keyed = self.keyed_call(node) if any(k.arg == "key" for k in node.keywords) else None
        if keyed is not None:
            return self.expr(keyed)
        generator = self.as_generator(node.args[0]) if node.args else None
        if generator is not None:
            found = self.generator_argument_call(func, ast.copy_location(ast.Call(
                node.func, [generator, *node.args[1:]], node.keywords), node))
            if found is not None:
                return found
        if any(k.arg is None for k in node.keywords):
            raise CompilationError("**kwargs in calls are not supported", src)
        callee = func if isinstance(func, Sugared) else Sugared()
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args += self.starred_items(a)
            else:
                args.append(self.argument(a, callee, len(args), None))
        kwargs = {k.arg: self.argument(k.value, callee, None, k.arg) for k in node.keywords}
        if isinstance(func, Value):
            if isinstance(func.type, ClassType):
                method = "forward" if func.type.is_module else "__call__"
                return self.call_method(func, method, args, kwargs, src)
            raise CompilationError(f"'{func.type.annotation}' object is not callable", src)
        return func.call(self, args, kwargs, src)

    def constructor_literal(self, node: ast.expr) -> ast.expr | None:
        """`list()`, `dict()`, `dict(k=v, ...)` and `list([])`, `dict([])`, `dict(())`
        as the literal they equal (`[]`, `{}`, `{"k": v}`), so that an annotation or a
        parameter type types them as it types a literal."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("list", "dict")):
            return None
        if node.args and not (len(node.args) == 1 and not node.keywords and isinstance(
                node.args[0], (ast.List, ast.Tuple)) and not node.args[0].elts):
            return None
        if self.frame.lookup(node.func.id) is not None or getattr(
                self.resolver.python_name(node.func.id, self.src(node)), "obj", None) \
                is not getattr(builtins, node.func.id):
            return None                         # a name bound to something else
        if node.func.id == "list":
            literal = ast.List(elts=[], ctx=ast.Load()) if not node.keywords else None
        elif any(k.arg is None for k in node.keywords):
            literal = None                      # dict(**m): not supported
        else:
            literal = ast.Dict(keys=[ast.copy_location(ast.Constant(k.arg), k)
                                     for k in node.keywords],
                               values=[k.value for k in node.keywords])
        return literal and ast.copy_location(literal, node)

    def dict_with_keywords(self, node: ast.Call) -> Value:
        """dict(mapping, k=v, ...): a copy of the mapping, then each keyword stored."""
        src = self.src(node)
        result = self.call_builtin(dict, [self.expr(node.args[0])], src)
        for keyword in node.keywords:
            if keyword.arg is None:
                raise CompilationError("**kwargs in calls are not supported", src)
            value = self.typed_expr(keyword.value, result.type.value) if isinstance(
                result.type, DictType) else self.expr(keyword.value)
            self.emit_op("aten::__setitem__", [result, self.const(keyword.arg, src), value],
                         src=src)
        return result

    def argument(self, node: ast.expr, callee: Sugared, position: int | None,
                 keyword: str | None):
        """A call argument; a list/dict literal or comprehension takes the parameter's
        type, as it would in an assignment to an annotated variable, and a list literal
        of array data may mix Python numbers."""
        node = self.constructor_literal(node) or node
        if isinstance(node, ast.List) and callee.makes_array_of(position, keyword):
            return self.array_literal(node)
        declared = callee.argument_type(position, keyword)
        if declared is not None and literal_hint(node, declared) is not None:
            return self.typed_expr(node, declared, "the argument")
        return self.sugared_expr(node)

    def call_op(self, op: OpDef, args: list, kwargs: dict, src: SourceRange, name: str,
                attrs: dict | None = None):
        """A node of `op` (with node attributes `attrs`) for the call."""
        inputs = self.bind_arguments(op.params, args, kwargs, src, name)
        extra = keywords_taken(op.params, kwargs)
        if extra:
            attrs = {**(attrs or {}), KEYWORDS: extra}
        # Constant arguments can decide a result's structure (np.unique(x,
        # return_counts=True) is a tuple): the type rule sees their values.
        constants = {i: v.node.attrs["value"] for i, v in enumerate(inputs)
                     if v.node.kind == "prim::Constant"}
        try:
            types = infer_types(op, [v.type for v in inputs],
                                {**(attrs or {}), CONSTANTS: constants}) \
                if op.infer else [AnyType]
        except OpTypeError as e:
            raise CompilationError(f"{name}(): {e}{self.unannotated_hint(inputs)}",
                                   src) from None
        node = self.insert(op.name, inputs, types, attrs, src)
        return node.outputs[0] if node.outputs else self.const(None, src)

    def call_builtin(self, obj: object, args: list[Value], src: SourceRange) -> Value:
        op = lookup_python(obj)
        if op is None:
            raise CompilationError(f"{obj!r} is not available in script code", src)
        return self.call_op(op, args, {}, src, getattr(obj, "__name__", str(obj)))

    def bind_arguments(self, params, args: list, kwargs: dict, src: SourceRange,
                       name: str) -> list[Value]:
        """Match positional and keyword arguments to parameters, filling defaults."""
        kwargs = dict(kwargs)
        positional = list(args)
        bound = []
        n_positional = sum(1 for p in params if not p.kwonly and not p.variadic)
        extra = keywords_taken(params, kwargs)
        unknown = [k for k in kwargs if k not in {p.name for p in params if not p.variadic}
                   and k not in extra]
        if unknown:                     # reported first, as Python does
            raise CompilationError(f"{name}() got an unexpected keyword argument "
                                   f"'{unknown[0]}'", src)
        for p in params:
            if p.variadic:
                bound.extend(self.as_value(a, src) for a in positional)
                positional = []
                continue
            if p.kwvariadic:
                bound.extend(self.as_value(kwargs.pop(k), src) for k in extra)
                continue
            if not p.kwonly and positional:
                if p.name in kwargs:
                    raise CompilationError(f"{name}() got multiple values for argument "
                                           f"'{p.name}'", src)
                value = positional.pop(0)
            elif p.name in kwargs:
                value = kwargs.pop(p.name)
            elif isinstance(p.default, (list, dict)):
                # a mutable default is one object shared by every call, as in Python
                value = self.insert("prim::Constant", [], [AnyType],
                                    {"value": p.default, "shared": True}, src).output
            elif p.default is not NO_DEFAULT:
                value = self.const(p.default, src)
            else:
                raise CompilationError(f"{name}() missing required argument '{p.name}'", src)
            bound.append(self.as_value(value, src))
        if positional:
            raise CompilationError(f"{name}() takes {n_positional} positional arguments but "
                                   f"{len(args)} were given (too many arguments)", src)
        return bound

    def call_compiled(self, callee, kind: str, args: list, kwargs: dict, src: SourceRange):
        """A call of a compiled script function or method (prim::CallFunction/CallMethod)."""
        inputs = self.bind_arguments(callee.params, args, kwargs, src, callee.name)
        checked = []
        for value, (pname, expected) in zip(inputs, callee.param_types):
            if value.type == AnyType and expected != AnyType:
                value = self.insert("aten::annotate", [value], [expected], src=src).output
            elif not is_subtype(value.type, expected):
                raise CompilationError(
                    f"{callee.name}() expected a value of type {expected.annotation} for "
                    f"argument '{pname}' but found {value.type.annotation}", src)
            checked.append(value)
        node = self.insert(kind, checked, [callee.return_type], {"fn": callee}, src)
        return node.output

    def converted_object(self, convert: type, obj: Value, methods: tuple[str, ...],
                         src: SourceRange) -> Value:
        """int(obj) / float(obj) of a script-class instance: its first method of
        `methods` that the class defines (__int__, then __index__), whose result must
        have the type Python requires of it (else TypeError, as in Python)."""
        name = convert.__name__
        method = next((m for m in methods if self.class_has_method(obj.type, m)), None)
        if method is None:
            raise CompilationError(f"{name}() argument must be a string or a number, not "
                                   f"'{obj.type.annotation}' (the class defines none of "
                                   f"{', '.join(methods)})", src)
        result = self.call_method(obj, method, [], {}, src)
        allowed = _CONVERSION_RESULTS[method]
        if result.type not in allowed:
            raise CompilationError(f"{method} returns {result.type.annotation}, but Python "
                                   f"requires {allowed[0].annotation} of it", src)
        return result if result.type == PY_TYPES[convert] else self.call_builtin(
            convert, [result], src)

    # ---- attributes
    def get_attr(self, base, name: str, src: SourceRange):
        if isinstance(base, Sugared):
            return base.attr(self, name, src)
        t = base.type
        if isinstance(t, ClassType):
            return self.compiler.class_attribute(self, base, name, src)
        if isinstance(t, TupleType) and t.names and name in t.names:
            return self.insert("prim::GetAttr", [base], [t.elems[t.names.index(name)]],
                               {"name": name}, src).output
        if isinstance(t, EnumType) and name in ("name", "value"):
            from .emitter import constant_type
            value_type = StrType if name == "name" else constant_type(
                next(iter(t.py_class)).value)
            return self.insert("prim::GetAttr", [base], [value_type], {"name": name},
                               src).output
        found = lookup_attribute(t, name)
        if found is not None:
            return self.call_op(found, [base], {}, src, name)
        found = lookup_method(t, name)
        if found is not None:
            return BoundMethod(base, found, name)
        if isinstance(t, (OptionalType, UnionType)):
            raise CompilationError(f"'{name}' of a value of type {t.annotation}: narrow the "
                                   "type first (`if x is not None:` or isinstance)", src)
        raise CompilationError(f"'{t.annotation}' object has no attribute '{name}'"
                               f"{self.unannotated_hint([base])}", src)

    def set_attr(self, base: Value, name: str, value: Value, src: SourceRange) -> None:
        if not isinstance(base.type, ClassType):
            raise CompilationError(f"cannot set attribute '{name}' of a "
                                   f"{base.type.annotation}", src)
        self.compiler.set_class_attribute(self, base, name, value, src)

    def call_method(self, obj: Value, name: str, args: list, kwargs: dict, src: SourceRange):
        fn = inspect.getattr_static(obj.type.py_class, name, None)
        if getattr(fn, "_tsjit_ignore", False) or getattr(fn, "_tsjit_unused", False):
            callback = self.compiler.function_value(fn, src, name)
            return callback.call(self, [obj, *args], kwargs, src)
        method = self.compiler.method(obj.type, name, src)
        return self.call_compiled(method, "prim::CallMethod", [obj, *args], kwargs, src)

    def class_has_method(self, t: ClassType, name: str) -> bool:
        """Whether the class itself (not `object`) defines the method."""
        return any(callable(vars(k).get(name)) for k in t.py_class.__mro__ if k is not object)

    # ---- builtins the front end handles itself
    def special_form(self, name: str, arg_nodes: list[ast.expr], keywords: list[ast.keyword],
                     src: SourceRange):
        kwargs = {k.arg: k.value for k in keywords}
        if name in _ARITY:
            _check_arity(name, len(arg_nodes), kwargs, src)
        if name == "range":
            parts = [self.expr(a) for a in arg_nodes]
            if not 1 <= len(parts) <= 3 or kwargs:
                raise CompilationError("range() takes 1 to 3 positional arguments", src)
            for p in parts:
                if p.type not in (IntType, BoolType):
                    raise CompilationError(f"range() arguments must be int, found "
                                           f"{p.type.annotation}", src)
            if len(parts) == 1:
                parts.insert(0, self.const(0, src))
            if len(parts) == 2:
                parts.append(self.const(1, src))
            return IterableForm("range", parts)
        if name == "enumerate":
            start = self.expr(kwargs["start"]) if "start" in kwargs else (
                self.expr(arg_nodes[1]) if len(arg_nodes) > 1 else self.const(0, src))
            return IterableForm("enumerate", [self.sugared_expr(arg_nodes[0]), start])
        if name == "zip":
            return IterableForm("zip", [self.sugared_expr(a) for a in arg_nodes])
        if name == "reversed":
            return IterableForm("reversed", [self.sugared_expr(arg_nodes[0])])
        if name == "slice":             # slice(stop), slice(start, stop[, step])
            parts = [self.const(v, src) if isinstance(v, int) or v is None else self.expr(a)
                     for a, v in ((a, _literal_or_ellipsis(a)) for a in arg_nodes)]
            if len(parts) == 1:
                parts.insert(0, self.const(None, src))
            parts += [self.const(None, src)] * (3 - len(parts))
            return self.emit_op("prim::Slice", parts, src=src)
        if name == "isinstance":
            return self.isinstance_call(arg_nodes, src)[0]
        if name == "print":
            if kwargs:
                raise CompilationError(f"print() keyword arguments ({', '.join(kwargs)}=) are "
                                       "not supported in script code", src)
            args = [self.expr(a) for a in arg_nodes]
            self.insert("prim::Print", args, [], None, src)
            return self.const(None, src)
        if name == "is_scripting":
            return self.const(True, src)
        if name == "annotate":
            declared = self.annotation_type(arg_nodes[0])
            return self.typed_expr(arg_nodes[1], declared)
        if name in ("getattr", "hasattr"):
            obj = self.sugared_expr(arg_nodes[0])
            attr = arg_nodes[1]
            if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
                raise CompilationError(f"{name}() needs a constant attribute name", src)
            try:                        # whether the attribute exists is known statically
                found = self.get_attr(obj, attr.value, src)
            except CompilationError:
                python_class = _python_class(getattr(obj, "type", None))
                if python_class is not None and hasattr(python_class, attr.value):
                    # the value has it in Python: the default (or False) would be wrong
                    raise CompilationError(
                        f"'{obj.type.annotation}' object has attribute '{attr.value}' in "
                        "Python, but script code does not support it", src) from None
                if name == "hasattr":
                    return self.const(False, src)
                if len(arg_nodes) < 3:
                    raise
                return self.sugared_expr(arg_nodes[2])      # getattr(obj, name, default)
            return found if name == "getattr" else self.const(True, src)
        if name == "object.__setattr__":
            return self.object_setattr(arg_nodes, kwargs, src)
        if name == "super":
            return self.super_object(arg_nodes, src)
        raise CompilationError(f"{name}() is not supported in script code", src)

    def super_object(self, arg_nodes, src: SourceRange) -> SuperObject:
        """`super()` in a method of a script class: the classes after the one that defines
        the method, in the MRO of the class it is compiled for."""
        t = self.self_type
        if arg_nodes or not isinstance(t, ClassType) or t.is_module:
            raise CompilationError("super() is supported without arguments, in a method of "
                                   "a script class", src)
        mro = t.py_class.__mro__
        owner = next((i for i, k in enumerate(mro) if _defines(k, self.fn)), None)
        if owner is None:
            raise CompilationError("super(): the method's class is not found", src)
        receiver = self.frame.value_of(self.definition.args.args[0].arg, src)
        return SuperObject(receiver, mro[owner + 1:])

    def object_setattr(self, arg_nodes, kwargs, src: SourceRange):
        """`object.__setattr__(obj, "name", value)`: sets the attribute past the class's
        own __setattr__ (how a frozen dataclass sets its fields)."""
        if len(arg_nodes) != 3 or kwargs or not (
                isinstance(arg_nodes[1], ast.Constant) and isinstance(arg_nodes[1].value, str)):
            raise CompilationError("object.__setattr__() takes an object, a constant "
                                   "attribute name and a value", src)
        base = self.expr(arg_nodes[0])
        if not isinstance(base.type, ClassType):
            raise CompilationError(f"object.__setattr__() of a {base.type.annotation}: only "
                                   "attributes of script class instances can be set", src)
        value = self.expr(arg_nodes[2])
        self.compiler.set_class_attribute(self, base, arg_nodes[1].value, value, src,
                                          direct=True)
        return self.const(None, src)

    def is_isinstance_call(self, node: ast.Call) -> bool:
        if not isinstance(node.func, (ast.Name, ast.Attribute)):
            return False
        try:
            func = self.sugared_expr(node.func)
        except CompilationError:
            return False
        return isinstance(func, SpecialForm) and func.name == "isinstance"

    def isinstance_call(self, arg_nodes, src: SourceRange):
        """isinstance(x, T): decided statically when the static type allows, else checked
        at run time; either way the variable is narrowed on both branches."""
        if isinstance(arg_nodes, ast.Call):
            call = arg_nodes
            src, arg_nodes = self.src(call), call.args
            _check_arity("isinstance", len(arg_nodes), {k.arg: k for k in call.keywords}, src)
        value = self.expr(arg_nodes[0])
        targets = self.isinstance_targets(arg_nodes[1], src)
        options = union_options(value.type)
        matching = [o for o in options if any(instance_of(o, t) for t in targets)]
        rest = [o for o in options if o not in matching]
        undecided = any(undecided_instance(o, t) for o in options for t in targets)
        if not undecided and (not rest or (value.type != AnyType and not matching)):
            result = self.const(bool(matching), src)
        else:
            # with the matching classes themselves: a loaded program's classes are
            # rebuilt without their Python bases
            subclasses = [o for o in matching if isinstance(o, ClassType) and o not in targets]
            runtime = tuple(RUNTIME_CONTAINER.get(t, t) if isinstance(t, type) else t
                            for t in [*targets, *subclasses])
            result = self.insert("prim::isinstance", [value], [BoolType],
                                 {"types": runtime}, src).output
        refine = ({}, {})
        node = arg_nodes[0]
        if isinstance(node, ast.Name) and matching and rest:
            refine = ({node.id: make_union(matching)}, {node.id: make_union(rest)})
        elif isinstance(node, ast.Name) and value.type == AnyType and len(targets) == 1 \
                and not isinstance(targets[0], type):
            _check_exact_narrowing(targets[0], src)
            refine = ({node.id: targets[0]}, {})
        return result, refine

    def isinstance_targets(self, node: ast.expr, src) -> list[Type]:
        target = self.sugared_expr(node)
        if isinstance(target, CompileTimeTuple):
            items = target.items
        elif isinstance(target, PythonObject) and isinstance(target.obj, tuple):
            items = target.obj
        else:
            items = (target,)
        return [t for item in items for t in isinstance_target(getattr(item, "obj", item), src,
                                                               self.compiler.class_type_of)]


def literal_hint(node: ast.expr, declared: Type) -> Type | None:
    """The option of `declared` that types a list/dict/tuple literal or comprehension
    `node`, if any."""
    for option in union_options(declared):
        if isinstance(node, (ast.List, ast.ListComp)) and isinstance(option, ListType) or \
                isinstance(node, (ast.Dict, ast.DictComp)) and isinstance(option, DictType):
            return option
        if isinstance(node, ast.Tuple) and isinstance(option, TupleType) and \
                option.py_class is None and len(option.elems) == len(node.elts):
            return option
    return None
