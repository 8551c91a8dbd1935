"""for loops and comprehensions: how a loop steps through what it iterates over.

A loop over a compile-time sequence (a tuple, a ModuleList, enumerate/zip of them) is
unrolled.  A loop over `range`, `enumerate`, `zip` or `reversed` of sequences steps an
index (so native code can run it); a list's length is read at every step, as Python's
list iterator does.  A loop over any other iterable object (a dict, a view, a range
or zip object held in a variable) steps Python's own iterator over it.  Used as values,
range(...), zip(...), enumerate(...) and reversed(...) are the Python objects (a range,
a zip iterator ...), which a scripted function returns as eager Python does.
"""
from __future__ import annotations

import ast
import builtins
import collections
import copy
from collections.abc import Callable
from typing import NamedTuple

from ..ir.graph import SourceRange, Value
from ..ir.types import (
    TENSOR,
    AnyType,
    DictType,
    IterableType,
    ListType,
    StrType,
    TensorType,
    TupleType,
    Type,
    UninitializedType,
    VarTupleType,
)
from ..ops.registry import lookup_method
from .control_flow import contains_statement
from .environment import BROKE, RETURNED
from .errors import CompilationError
from .sugared import IterableForm, Sugared


class Iteration(NamedTuple):
    """How a loop steps through an iterable: at most `trip` steps, `element(i)` the i-th
    element, and `has(i)` (when the length may change during the loop) whether there is
    still an i-th element."""
    trip: Value
    element: Callable[[Value], Value]
    has: Callable[[Value], Value] | None = None


# the op that makes the object of each iterable form but range
_VALUE_OPS = {"enumerate": "prim::enumerate", "zip": "prim::zip", "reversed": "aten::reversed"}


class LoopMixin:
    # ---- for loops
    def emit_for(self, target: ast.expr, iter_node: ast.expr, body: list[ast.stmt],
                 src: SourceRange) -> None:
        generator = self.as_generator(iter_node)
        if generator is not None and len(generator.generators) == 1:
            # for t in (e for x in xs if c): for x in xs: if c: t = e; body (x renamed)
            (inner,), (elt,) = _rename_targets(generator.generators, [generator.elt],
                                               self.next_comprehension_id())
            assign = ast.copy_location(ast.Assign([target], elt), target)
            steps: list[ast.stmt] = [assign, *body]
            for cond in reversed(inner.ifs):
                steps = [ast.copy_location(ast.If(cond, steps, []), cond)]
            return self.emit_for(inner.target, inner.iter, steps, src)
        iterable = self.sugared_expr(iter_node)
        items = self.unrolled_items(iterable, src)
        if items is not None:
            return self.unrolled_for(target, items, body, src)
        self.loop_over(iterable, lambda element: self.assign_target(target, element, src), body,
                       src, target)

    def loop_over(self, iterable, bind_element: Callable[[Value], object],
                  body: list[ast.stmt], src: SourceRange, target: ast.expr | None = None) -> None:
        """A prim::Loop over a runtime iterable: `bind_element(element)`, then `body`, per
        element.  A list's length is read again before every step, so the loop sees
        appends and removals made while it runs, as Python's list iterator does."""
        it = self.iteration(iterable, src)
        index: list[Value] = []

        def bind(i: Value) -> None:
            index.append(i)
            bind_element(it.element(i))

        def has_next() -> Value:
            return it.has(self.emit_op("aten::add", [index[-1], self.const(1, src)], src=src))

        if it.has is None:
            self.emit_loop(it.trip, self.const(True, src), body, bind, None, src, target=target)
        else:
            self.emit_loop(it.trip, it.has(self.const(0, src)), body, bind, has_next, src,
                           target=target)

    def unrolled_items(self, iterable, src: SourceRange) -> list | None:
        """The elements of an iterable known at compile time (tuples, ModuleLists, enums,
        enumerate/zip of them): loops over it are unrolled.  None: iterate at run time."""
        iterable = self.compiler.module_container(self, iterable, src)
        if isinstance(iterable, Sugared):
            items = iterable.unroll(self, src)
            return None if items is None else list(items)
        if isinstance(iterable.type, TupleType):
            return list(self.insert("prim::TupleUnpack", [iterable], list(iterable.type.elems),
                                    src=src).outputs)
        return None

    def iteration(self, iterable, src: SourceRange) -> Iteration:
        """How a loop steps through a runtime iterable."""
        if isinstance(iterable, IterableForm):
            return self.form_iteration(iterable, src)
        value = self.as_value(iterable, src)
        t = value.type
        if isinstance(t, (DictType, IterableType)):
            return self.stepped_iteration(value, src)
        if not (isinstance(t, (ListType, VarTupleType, TensorType)) or t == StrType):
            hint = (" (its element type is unknown: annotate the value, e.g. "
                    "tsjit.annotate(List[float], x.tolist()))") if t == AnyType else ""
            raise CompilationError(f"cannot iterate over a value of type {t.annotation}{hint}",
                                   src)

        def element(i: Value) -> Value:
            return self.emit_op("aten::__getitem__", [value, i], src=src)
        if isinstance(t, ListType):       # may change length while the loop runs
            return Iteration(self.trip_count_forever(src), element, lambda i: self.emit_op(
                "aten::lt", [i, self.call_builtin(len, [value], src)], src=src))
        return Iteration(self.call_builtin(len, [value], src), element)

    def form_iteration(self, form: IterableForm, src: SourceRange) -> Iteration:
        """range / enumerate / zip / reversed in a loop: index arithmetic over the parts."""
        if form.kind == "range":
            start, stop, step = form.parts
            trip = self.emit_op("aten::__range_length", [start, stop, step], src=src)
            return Iteration(trip, lambda i: self.emit_op(
                "aten::__derive_index", [i, start, step], src=src))
        if form.kind == "enumerate":
            inner, start = form.parts
            it = self.iteration(inner, src)
            return Iteration(it.trip, lambda i: self.emit_op("prim::TupleConstruct", [
                self.emit_op("aten::add", [start, i], src=src), it.element(i)], src=src),
                it.has)
        if form.kind == "zip":
            if not all(self.indexed(p) for p in form.parts):
                # Python's zip stops at the first exhausted part without advancing the
                # later ones: an iterator part is stepped by the zip object itself
                return self.stepped_iteration(self.iterable_value(form, src), src)
            its = [self.iteration(p, src) for p in form.parts]
            trip = its[0].trip
            for other in its[1:]:
                trip = self.call_builtin(builtins.min, [trip, other.trip], src)
            checks = [it.has for it in its if it.has is not None]
            return Iteration(trip, lambda i: self.emit_op(
                "prim::TupleConstruct", [it.element(i) for it in its], src=src),
                self.all_of(checks, src) if checks else None)
        return self.reversed_iteration(form, src)

    def indexed(self, iterable) -> bool:
        """Whether a loop steps through `iterable` by an index (not Python's iterator)."""
        if isinstance(iterable, Value):
            return not isinstance(iterable.type, (DictType, IterableType))
        if not isinstance(iterable, IterableForm) or iterable.kind == "range":
            return True                     # compile-time sequences unroll
        if iterable.kind == "enumerate":
            return self.indexed(iterable.parts[0])
        if iterable.kind == "zip":
            return all(self.indexed(p) for p in iterable.parts)
        inner = iterable.parts[0]           # reversed(...)
        return inner.kind == "range" if isinstance(inner, IterableForm) else self.indexed(inner)

    def reversed_iteration(self, form: IterableForm, src: SourceRange) -> Iteration:
        """reversed(x): a range counts down; a sequence is indexed from the length it had
        when the loop started, and a list that has since shrunk below the index ends the
        loop, as Python's reverse iterator does; anything else steps Python's iterator."""
        (inner,) = form.parts
        if isinstance(inner, IterableForm) and inner.kind == "range":
            start, stop, step = inner.parts
            trip = self.emit_op("aten::__range_length", [start, stop, step], src=src)
            return Iteration(trip, lambda i: self.emit_op(
                "aten::__derive_index", [self.from_end(trip, i, src), start, step], src=src))
        seq = None if isinstance(inner, IterableForm) else self.as_value(inner, src)
        if seq is None or not (isinstance(seq.type, (ListType, VarTupleType, TensorType))
                               or seq.type == StrType):
            return self.stepped_iteration(self.iterable_value(form, src), src)
        trip = self.call_builtin(len, [seq], src)

        def element(i: Value) -> Value:
            return self.emit_op("aten::__getitem__", [seq, self.from_end(trip, i, src)], src=src)
        if not isinstance(seq.type, ListType):
            return Iteration(trip, element)
        return Iteration(trip, element, lambda i: self.emit_op("aten::lt", [
            self.from_end(trip, i, src), self.call_builtin(len, [seq], src)], src=src))

    def from_end(self, length: Value, i: Value, src: SourceRange) -> Value:
        """length - 1 - i: the index of the i-th element counted from the end."""
        last = self.emit_op("aten::sub", [length, self.const(1, src)], src=src)
        return self.emit_op("aten::sub", [last, i], src=src)

    def stepped_iteration(self, value: Value, src: SourceRange) -> Iteration:
        """A loop over a dict, a dict view or another iterable object steps Python's own
        iterator over it, so it sees what eager Python's loop sees (a RuntimeError at the
        first step after the body changed a dict's size or keys; a zip object already
        consumed gives nothing)."""
        stepper = self.emit_op("prim::IterStart", [value], src=src)
        return Iteration(self.trip_count_forever(src), lambda i: self.emit_op(
            "prim::IterItem", [stepper], src=src), lambda i: self.emit_op(
            "prim::IterNext", [stepper], src=src))

    def all_of(self, checks: list[Callable[[Value], Value]], src: SourceRange):
        """i -> whether every check holds at i (zip: every list still has an element)."""
        def has(i: Value) -> Value:
            result = checks[0](i)
            for check in checks[1:]:
                result = self.emit_op("aten::and", [result, check(i)], src=src)
            return result
        return has

    def unrolled_for(self, target, items: list, body: list[ast.stmt], src) -> None:
        """Loops over tuples and ModuleLists: one copy of the body per element.  break and
        continue set their flags as in a prim::Loop; the copies after a break (or a
        return) run under `if not flag`."""
        self.loop_depth += 1
        try:
            if contains_statement(body, (ast.Break,), into_loops=False):
                self.frame.assign(f"$brk{self.loop_depth}", self.const(False, src), src)
            self.unrolled_copies(target, items, body, src)
        finally:
            self.loop_depth -= 1
        if self.frame.exited == BROKE:          # a break leaves this loop only
            self.frame.exited = None

    def unrolled_copies(self, target, items: list, body: list[ast.stmt], src) -> None:
        if not items:
            return
        depth = self.loop_depth
        if contains_statement(body, (ast.Continue,), into_loops=False):
            self.frame.assign(f"$cont{depth}", self.const(False, src), src)
        self.assign_target(target, items[0], src)
        self.emit_statements(body)
        if self.frame.exited == BROKE:          # continue: on to the next copy
            self.frame.exited = None
        rest = items[1:]
        if not rest or self.frame.exited:
            return
        flags = [flag for flag, kind, into_loops in (("$ret", ast.Return, True),
                                                     (f"$brk{depth}", ast.Break, False))
                 if contains_statement(body, (kind,), into_loops)]
        if not flags:
            return self.unrolled_copies(target, rest, body, src)
        self.emit_if(self.any_flag(flags, src), lambda: None,
                     lambda: self.unrolled_copies(target, rest, body, src), src,
                     then_exited=RETURNED if flags == ["$ret"] else BROKE)

    def iterable_value(self, form: IterableForm, src: SourceRange) -> Value:
        """range(...), enumerate(...), zip(...) or reversed(...) used as a value: the
        Python object (a range, or an iterator the first consumer exhausts)."""
        if form.kind == "range":
            return self.emit_op("prim::range", form.parts, src=src)
        parts = [self.as_value(p, src) for p in form.parts]
        return self.emit_op(_VALUE_OPS[form.kind], parts, src=src)

    # ---- comprehensions
    def expr_ListComp(self, node: ast.ListComp) -> Value:
        return self.comprehension_of(node)

    def expr_DictComp(self, node: ast.DictComp) -> Value:
        return self.comprehension_of(node)

    def comprehension_of(self, node: ast.ListComp | ast.DictComp,
                         annotated: Type | None = None) -> Value:
        """A list or dict comprehension, typed by its first element unless `annotated`
        (`xs: List[float] = [x[i].item() for i in ...]`)."""
        if isinstance(node, ast.ListComp):
            return self.comprehension(node, [node.elt], "list", annotated)
        return self.comprehension(node, [node.key, node.value], "dict", annotated)

    def comprehension(self, node, parts: list[ast.expr], kind: str,
                      annotated: Type | None) -> Value:
        """[elt for x in xs if c]: a loop appending to a fresh list (or dict).

        The loop variables are renamed so that they do not leak into (or clobber)
        the enclosing function's variables, as in Python 3."""
        src = self.src(node)
        renamed = _rename_targets(node.generators, parts, self.next_comprehension_id())
        generators, parts = renamed
        result_type = annotated or (ListType(UninitializedType) if kind == "list" else DictType(
            UninitializedType, UninitializedType))
        ctor = "prim::ListConstruct" if kind == "list" else "prim::DictConstruct"
        result = self.insert(ctor, [], [result_type], src=src).output

        def innermost():
            if annotated is None:
                values = [self.expr(p) for p in parts]
                self.settle(values)         # [[] for _ in xs]: a List[List[Tensor]]
            else:   # the annotation types the elements too ([[] for _ in range(n)])
                hints = (annotated.elem,) if kind == "list" else (annotated.key, annotated.value)
                values = [self.typed_expr(p, hint, "an element") for p, hint in zip(parts, hints)]
            if kind == "list":
                if result.type.elem == UninitializedType:
                    result.type = ListType(values[0].type)
                self.call_op(lookup_method(result.type, "append"), [result, values[0]], {}, src,
                             "append")
            else:
                if result.type.key == UninitializedType:
                    self.check_dict_key(values[0].type, src)
                    result.type = DictType(values[0].type, values[1].type)
                self.emit_op("aten::__setitem__", [result, *values], src=src)

        # `:=` in a condition or an element binds in the enclosing scope (PEP 572): each
        # loop of the comprehension carries what the whole comprehension may assign
        rebinding = ast.Tuple(elts=[*parts, *(n for g in generators for n in (g.iter, *g.ifs))],
                              ctx=ast.Load())
        self.emit_generators(generators, innermost, src, rebinding)
        if UninitializedType in result.type.contained():
            result.type = ListType(TENSOR) if kind == "list" else DictType(StrType, TENSOR)
        return result

    def emit_generators(self, generators: list[ast.comprehension], innermost, src,
                        rebinding: ast.expr) -> None:
        first, rest = generators[0], generators[1:]

        def body():
            conds = list(first.ifs)

            def guarded(conds):
                if not conds:
                    if rest:
                        self.emit_generators(rest, innermost, src, rebinding)
                    else:
                        innermost()
                    return
                cond, refine = self.condition(conds[0])
                self.emit_if(cond, lambda: guarded(conds[1:]), lambda: None, src, refine)
            guarded(conds)

        iterable = self.sugared_expr(first.iter)
        items = self.unrolled_items(iterable, src)
        if items is not None:
            for item in items:
                self.assign_target(first.target, item, src)
                body()
            return
        self.loop_over(iterable, lambda element: (self.assign_target(first.target, element, src),
                                                  body()), [], src,
                       ast.Tuple(elts=[first.target, rebinding], ctx=ast.Load()))

    # ---- generator expressions consumed by a call
    def as_generator(self, node: ast.expr) -> ast.GeneratorExp | None:
        """A generator expression, or a call of the builtin map()/filter() as the generator
        expression it equals: map(f, a, b) is (f(x, y) for x, y in zip(a, b)), filter(f,
        a) is (x for x in a if f(x)) (filter(None, a): if x). None for anything else, and
        where f is not a name (map evaluates it once, the generator each time)."""
        if isinstance(node, ast.GeneratorExp):
            return node
        if not (isinstance(node, ast.Call) and not node.keywords and len(node.args) >= 2
                and not any(isinstance(a, ast.Starred) for a in node.args)):
            return None
        kind = next((k for k in ("map", "filter") if self.is_builtin_name(node.func, k)), None)
        f, *iterables = node.args
        if kind is None or (kind == "filter" and len(iterables) != 1) or (
                len(iterables) > 1 and not self.is_builtin_name(ast.Name("zip"), "zip")) or not (
                isinstance(f, ast.Name) or kind == "filter" and isinstance(f, ast.Constant)
                and f.value is None):
            return None
        unique = self.next_comprehension_id()
        names = [ast.Name(f"$item{unique}_{i}", ast.Store()) for i in range(len(iterables))]
        loads = [ast.Name(n.id, ast.Load()) for n in names]
        if kind == "map":
            elt, ifs = ast.Call(f, loads, []), []
        else:
            elt, ifs = loads[0], [loads[0] if isinstance(f, ast.Constant) else
                                  ast.Call(f, [ast.Name(names[0].id, ast.Load())], [])]
        target = names[0] if len(names) == 1 else ast.Tuple(names, ast.Store())
        source = iterables[0] if len(iterables) == 1 else ast.Call(
            ast.Name("zip", ast.Load()), iterables, [])
        generator = ast.GeneratorExp(elt, [ast.comprehension(target, source, ifs, 0)])
        for child in ast.walk(generator):
            if not hasattr(child, "lineno"):
                ast.copy_location(child, node)
        return generator

    def keyed_call(self, node: ast.Call) -> ast.expr | None:
        """sorted(xs, key=f, reverse=...) / min(xs, key=f) / max(xs, key=f) as the sort or
        search of (f(x), i, x) tuples it equals: equal keys fall back to the position i
        (Python's sort is stable, min/max give the first extreme), so the elements are
        never compared; xs.sort(key=f) stores that into xs (emitted here: the expression
        returned is its None). `f` must be a name; None for calls this does not apply to."""
        keywords = {k.arg: k.value for k in node.keywords}
        if isinstance(node.func, ast.Attribute) and node.func.attr == "sort" and not node.args \
                and isinstance(node.func.value, (ast.Name, ast.Attribute)):
            # xs.sort(key=f): xs[:] = sorted(xs, key=f) (a list only: other receivers None)
            receiver = self.sugared_expr(node.func.value)
            if not isinstance(getattr(receiver, "type", None), ListType):
                return None
            ordered = self.keyed_call(ast.copy_location(ast.Call(
                _name("sorted"), [node.func.value], node.keywords), node))
            if ordered is None:
                return None
            target = ast.Subscript(copy.deepcopy(node.func.value), ast.Slice(), ast.Store())
            assign = ast.Assign([target], ordered)
            for child in ast.walk(assign):
                ast.copy_location(child, node)
            self.emit_statements([assign])
            return ast.copy_location(ast.Constant(None), node)
        kind = next((k for k in ("sorted", "min", "max") if self.is_builtin_name(node.func, k)),
                    None)
        key = keywords.pop("key", None)
        reverse = keywords.pop("reverse", ast.Constant(False)) if kind == "sorted" else \
            ast.Constant(False)
        if kind is None or len(node.args) != 1 or keywords or not isinstance(
                key, (ast.Name, ast.Attribute)) or not (isinstance(reverse, ast.Constant)
                                                        and isinstance(reverse.value, bool)):
            return None
        unique = self.next_comprehension_id()
        i, x = f"$i{unique}", f"$x{unique}"
        # position ascending among equal keys: max and sorted(reverse=True) see -i
        position = ast.UnaryOp(ast.USub(), _name(i)) if kind == "max" or reverse.value \
            else _name(i)
        keyed = ast.Call(key, [_name(x)], [])
        if _reads_own_keys(key, node.args[0]):
            # max(d, key=d.get): each key is in d, so d.get(k) is d[k] (not Optional)
            keyed = ast.Subscript(key.value, _name(x), ast.Load())
        triples = ast.ListComp(ast.Tuple([keyed, position, _name(x)], ast.Load()),
                               [ast.comprehension(ast.Tuple([_store(i), _store(x)], ast.Store()),
                                                  ast.Call(_name("enumerate"), [node.args[0]],
                                                           []), [], 0)])
        if kind == "sorted":
            ordered = ast.Call(_name("sorted"), [triples],
                               [ast.keyword("reverse", reverse)])
            result = ast.ListComp(ast.Subscript(_name(x), ast.Constant(2), ast.Load()),
                                  [ast.comprehension(_store(x), ordered, [], 0)])
        else:
            result = ast.Subscript(ast.Call(_name(kind), [triples], []), ast.Constant(2),
                                   ast.Load())
        for child in ast.walk(result):
            ast.copy_location(child, node)
        return result

    def is_builtin_name(self, node: ast.expr, name: str) -> bool:
        """Whether `node` is the name of the builtin `name`, not rebound by the program."""
        return isinstance(node, ast.Name) and node.id == name and \
            self.frame.lookup(name) is None and name not in self.resolver.closure and \
            self.resolver.globals.get(name, getattr(builtins, name)) is getattr(builtins, name)

    def generator_argument_call(self, func, node: ast.Call) -> Value | None:
        """`f(x for x in xs)` where `f` consumes the whole generator at once (sum, min,
        max, sorted, list, tuple, str.join, ...): the same as of a list comprehension.
        any()/all() stop at the first element that decides them, as Python's do, and
        next(gen, default) at the first element: they are a loop that breaks. None: not
        such a call."""
        genexp = node.args[0]
        obj = getattr(func, "obj", None)
        if (obj is builtins.any or obj is builtins.all) and len(node.args) == 1 \
                and not node.keywords:
            return self.short_circuit(genexp, obj is builtins.any)
        if obj is builtins.next and len(node.args) <= 2 and not node.keywords:
            return self.first_of_generator(genexp, node.args[1] if len(node.args) == 2
                                           else None)
        if not (any(obj is c for c in _CONSUMERS) or getattr(func, "name", None) == "join"
                and isinstance(getattr(func, "receiver", None), Value)
                and func.receiver.type == StrType):
            return None
        listcomp = ast.copy_location(ast.ListComp(elt=genexp.elt, generators=genexp.generators),
                                     genexp)
        return self.expr_Call(ast.copy_location(ast.Call(
            func=node.func, args=[listcomp, *node.args[1:]], keywords=node.keywords), node))

    def short_circuit(self, genexp: ast.GeneratorExp, is_any: bool) -> Value:
        """any(elt for ...) / all(elt for ...) as the loop Python runs: the result starts
        False (True), and the first element that is true (false) sets it and breaks out of
        every `for` of the generator."""
        flag = f"${'any' if is_any else 'all'}{self.next_comprehension_id()}"

        def on_element(elt: ast.expr) -> list[ast.stmt]:
            decided = elt if is_any else ast.UnaryOp(ast.Not(), elt)
            return [ast.If(decided, [_assign(flag, ast.Constant(is_any)), ast.Break()], [])]
        done = _name(flag) if is_any else ast.UnaryOp(ast.Not(), _name(flag))
        return self.first_match(genexp, [_assign(flag, ast.Constant(not is_any))], on_element,
                                done, flag)

    def first_of_generator(self, genexp: ast.GeneratorExp, default: ast.expr | None
                           ) -> Value:
        """next(elt for ..., default): the first element, read as Python reads it (the
        generator stops there), else the default; without one, StopIteration."""
        unique = self.next_comprehension_id()
        result, found = f"$next{unique}", f"$found{unique}"
        prelude: list[ast.stmt] = []
        after: list[ast.stmt] = []
        if default is None:     # typed by the first element stored (as a function's return)
            placeholder = self.insert("prim::Uninitialized", [], [UninitializedType],
                                      src=self.src(genexp))
            self.frame.assign(result, placeholder.output, self.src(genexp))
            after = [ast.If(ast.UnaryOp(ast.Not(), _name(found)), [ast.Raise(
                ast.Call(_name("StopIteration"), [], []), None)], [])]
        elif not isinstance(default, (ast.Constant, ast.Name)):
            # the generator's first iterable is evaluated before the default, as in Python
            first = genexp.generators[0]
            prelude.append(_assign(f"$iter{unique}", first.iter))
            genexp = ast.copy_location(ast.GeneratorExp(genexp.elt, [ast.comprehension(
                first.target, _name(f"$iter{unique}"), first.ifs, first.is_async),
                *genexp.generators[1:]]), genexp)
        if default is not None:
            prelude.append(_assign(result, default))
        prelude.append(_assign(found, ast.Constant(False)))

        def on_element(elt: ast.expr) -> list[ast.stmt]:
            return [_assign(result, elt), _assign(found, ast.Constant(True)), ast.Break()]
        return self.first_match(genexp, prelude, on_element, _name(found), result, after)

    def first_match(self, genexp: ast.GeneratorExp, prelude: list[ast.stmt],
                    on_element: Callable[[ast.expr], list[ast.stmt]], done: ast.expr,
                    result: str, after: list[ast.stmt] = ()) -> Value:
        """The loops of a generator that run `on_element` (which breaks once decided) on
        each element, leaving every enclosing `for` too once `done`; then the statements
        `after`, and `result`."""
        generators, (elt,) = _rename_targets(genexp.generators, [genexp.elt],
                                             self.next_comprehension_id())
        body = on_element(elt)
        for depth, g in enumerate(reversed(generators)):
            for cond in reversed(g.ifs):
                body = [ast.If(cond, body, [])]
            if depth:       # an inner loop has ended: leave this one too once decided
                body = [*body, ast.If(copy.deepcopy(done), [ast.Break()], [])]
            body = [ast.For(g.target, g.iter, body, [], None)]
        statements = [*prelude, *body, *after]
        for statement in statements:
            for child in ast.walk(statement):
                ast.copy_location(child, genexp)
                if hasattr(child, "end_lineno"):
                    child.end_lineno, child.end_col_offset = genexp.end_lineno, \
                        genexp.end_col_offset
        self.emit_statements(statements)
        return self.frame.value_of(result, self.src(genexp))

    def next_comprehension_id(self) -> int:
        self.comprehension_count = getattr(self, "comprehension_count", 0) + 1
        return self.comprehension_count


def _name(name: str) -> ast.Name:
    return ast.Name(name, ast.Load())


def _reads_own_keys(key: ast.expr, iterable: ast.expr) -> bool:
    """Whether `key` is `d.get` of the dict `d` that `iterable` (`d` or `d.keys()`) runs
    over (the same name or attribute chain)."""
    if not (isinstance(key, ast.Attribute) and key.attr == "get"
            and isinstance(key.value, (ast.Name, ast.Attribute))):
        return False
    if isinstance(iterable, ast.Call) and not iterable.args and isinstance(
            iterable.func, ast.Attribute) and iterable.func.attr == "keys":
        iterable = iterable.func.value
    return ast.dump(iterable) == ast.dump(key.value)


def _store(name: str) -> ast.Name:
    return ast.Name(name, ast.Store())


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign([ast.Name(name, ast.Store())], value)


# builtins that consume a whole iterable argument at once
_CONSUMERS = (builtins.sum, builtins.min, builtins.max, builtins.sorted, builtins.list,
              builtins.tuple, builtins.set, builtins.frozenset, builtins.dict,
              collections.OrderedDict)


class _Renamer(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)
        return node


def _rename_targets(generators, parts, unique: int):
    names = {}
    for g in generators:
        for n in ast.walk(g.target):
            if isinstance(n, ast.Name):
                names[n.id] = f"{n.id}'{unique}"
    renamer = _Renamer(names)
    new_generators = []
    for g in generators:
        g2 = copy.deepcopy(g)
        g2.target = renamer.visit(g2.target)
        g2.ifs = [renamer.visit(c) for c in g2.ifs]
        new_generators.append(g2)
    # the first iterable is evaluated in the enclosing scope; later ones see earlier targets
    for g2, g in zip(new_generators[1:], generators[1:]):
        g2.iter = renamer.visit(copy.deepcopy(g.iter))
    return new_generators, [renamer.visit(copy.deepcopy(p)) for p in parts]
