"""Structured control flow: emitting prim::If / prim::Loop and joining environments.

Early exits never appear in the IR.  `return`, `break` and `continue` set flag
variables; the statements after one that may exit run under `if not flag`
(`guard_rest`), and loops fold the flags into their continue condition.  The
join of two frames turns every variable bound differently on the live paths
into an output of the `prim::If`.
"""
from __future__ import annotations

import ast
from collections.abc import Callable

from ..ir.graph import Node, SourceRange, Value
from ..ir.types import (
    DictType,
    IntType,
    ListType,
    TensorType,
    Type,
    UninitializedType,
    is_number,
    unify,
    union_options,
    widen,
)
from .environment import (
    BROKE,
    EXIT_STRENGTH,
    RAISED,
    RETURNED,
    Binding,
    Frame,
    debug_name,
    is_synthetic,
    undefined,
)
from .errors import CompilationError

INT64_MAX = 2**63 - 1


class ControlFlowMixin:
    frame: Frame
    # new variables an and/or operand assigns (`:=`): a join keeps their value on the
    # paths that define them (Binding.partial)
    partially_defined: frozenset[str] = frozenset()

    # ---- if/else
    def emit_if(self, cond: Value, then_fn: Callable[[], None], else_fn: Callable[[], None],
                src: SourceRange, refinements: tuple[dict, dict] = ({}, {}),
                then_exited: str | None = None) -> None:
        """Emit `if cond: then_fn() else: else_fn()` and join the two frames.

        `refinements` narrow variables' types on each branch (`x is not None`);
        `then_exited` marks the then-branch as a path that exited earlier (the guard
        that skips the rest of a block after an early exit)."""
        node = self.insert("prim::If", [cond], [], src=src)
        frames = []
        for block, body, narrowed in zip((node.add_block(), node.add_block()),
                                         (then_fn, else_fn), refinements):
            frame = Frame(block, self.frame)

            def run(body=body, narrowed=narrowed):
                self.apply_refinements(narrowed, src)
                body()
            frames.append(self.run_in_frame(frame, run))
        if then_exited:
            frames[0].exited = then_exited
        self.join(node, frames, src)

    def run_in_frame(self, frame: Frame, body: Callable[[], None]) -> Frame:
        outer, self.frame = self.frame, frame
        try:
            body()
        finally:
            self.frame = outer
        return frame

    def narrowing(self, test: ast.expr) -> tuple[dict, dict]:
        """What a condition narrows on each branch for the current types, without its
        code: the condition is emitted to learn that, then removed again."""
        block, saved = self.frame.block, dict(self.frame.vars)
        count = len(block.nodes)
        _, refine = self.condition(test)
        for node in reversed(block.nodes[count:]):
            node.destroy()
        self.frame.vars = saved
        # (not the values an assignment expression gives on one side: they were removed)
        return tuple({n: t for n, t in side.items() if not isinstance(t, Value)}
                     for side in refine)

    def apply_refinements(self, narrowed: dict[str, Type | Value], src: SourceRange) -> None:
        """Rebind each narrowed variable to a cast of its current value; a variable an
        assignment expression defines only on this side (`a and (v := f())`) to the
        value it has there."""
        for name, type_ in narrowed.items():
            if isinstance(type_, Value):
                self.frame.assign(name, type_, src, refinement=True)
                continue
            value = self.frame.value_of(name, src)
            if isinstance(value, Value) and value.type != type_:
                cast = self.insert("prim::unchecked_cast", [value], [type_], src=src).output
                self.frame.assign(name, cast, src, refinement=True)

    def join(self, node: Node, frames: list[Frame], src: SourceRange) -> None:
        parent = self.frame
        names: list[str] = []
        for f in frames:
            for name, binding in f.vars.items():
                if name not in names and not binding.refinement:
                    names.append(name)
        for name in names:
            self._join_variable(node, name, frames, src)
        live = [f for f in frames if not f.exited]
        if not live:
            parent.exited = min((f.exited for f in frames), key=EXIT_STRENGTH.get)
        elif len(live) == 1:
            # the other branch exited: what the live branch learned still holds (a value
            # an and/or defined on this side: the value it has where defined)
            self.apply_refinements({n: self._partial(n) or b.value.type
                                    for n, b in live[0].vars.items()
                                    if b.refinement and n not in names}, src)

    def _partial(self, name: str) -> Value | None:
        outer = self.frame.lookup(name)
        return outer.partial if outer is not None and outer.value is None else None

    def _join_variable(self, node: Node, name: str, frames: list[Frame],
                       src: SourceRange) -> None:
        parent = self.frame
        outer = parent.lookup(name)
        synthetic = is_synthetic(name)
        flowing = [f for f in frames if f.flows(name)]
        if not flowing:
            return
        bindings = [f.vars.get(name) or outer for f in flowing]
        if all(b is outer for b in bindings):
            return
        defined = [b for b in bindings if b is not None and b.value is not None]
        if not defined:             # undefined on every path: keep the first reason
            binding = next(b for b in bindings if b is not None)
            parent.vars[name] = self._join_partial(node, name, frames, flowing, bindings,
                                                   binding)
            return
        if len(defined) < len(bindings) and not synthetic:
            missing = frames.index(flowing[[b in defined for b in bindings].index(False)])
            binding = undefined(
                f"'{name}' is not defined in the {('true', 'false')[missing]} branch", None,
                (f"'{name}' is defined in the other branch here:", defined[0].source),
                ("and used after this if statement, which does not define it on every "
                 "path:", src))
            parent.vars[name] = self._join_partial(node, name, frames, flowing, bindings,
                                                   binding)
            return
        values = [b.value for b in defined]
        if any(not isinstance(v, Value) for v in values):
            if all(v is values[0] for v in values):
                parent.vars[name] = Binding(values[0], defined[0].source)
                return
            raise CompilationError(f"'{name}' refers to different compile-time objects on "
                                   "the two branches", src)
        self.settle_alike(values)     # `if xs is None: xs = []` beside a List[int]
        # a loop-carried number that becomes a NumPy value on one branch (`if ...: c += x[i]`)
        # widens there as it does at the end of the loop body
        join = widen if parent.carries(name) else unify
        joined = values[0].type
        for v in values[1:]:
            joined = join(joined, v.type)
            if joined is None:
                parent.vars[name] = self._mismatch(name, defined, src)
                return
        for block, f in zip(node.blocks, frames):
            b = bindings[flowing.index(f)] if f in flowing else None
            block.add_output(self._widened(block, b.value, joined)
                             if b is not None and b.value is not None
                             else self.uninitialized(block, joined))
        out = node.add_output(joined, debug_name(name))
        parent.vars[name] = Binding(out, max((b.source for b in defined if b.source),
                                             key=lambda r: r.start, default=src))

    def _join_partial(self, node: Node, name: str, frames: list[Frame], flowing: list[Frame],
                      bindings: list, undefined_here: Binding) -> Binding:
        """`undefined_here` (the join's binding of a variable some paths leave undefined),
        for a variable an and/or operand assigns (`partially_defined`) with the value it
        has on the paths that define it, even partially (an inner and/or): an output of
        `node` that is Uninitialized on the other paths."""
        undefined_here = Binding(None, undefined_here.source, error=undefined_here.error)
        if name not in self.partially_defined:
            return undefined_here       # (an inner partial value stays in its block)

        def where_defined(b):
            if b is None:
                return None
            return b.value if b.value is not None else b.partial
        values = [where_defined(bindings[flowing.index(f)]) if f in flowing else None
                  for f in frames]
        known = [v for v in values if isinstance(v, Value)]
        if len(known) != len([v for v in values if v is not None]) or not known or any(
                v.type != known[0].type for v in known):
            return undefined_here
        for block, v in zip(node.blocks, values):
            block.add_output(v if v is not None else self.uninitialized(block, known[0].type))
        undefined_here.partial = node.add_output(known[0].type, debug_name(name))
        return undefined_here

    @staticmethod
    def _mismatch(name: str, defined: list[Binding], src: SourceRange) -> Binding:
        (a, a_src), (b, b_src) = ((d.value.type.annotation, d.source) for d in
                                  (defined[0], defined[-1]))
        if name == "$retval":
            return undefined(f"the function returns {a} on one path and {b} on another "
                             "(annotate the return type with a Union or Optional)", None,
                             (f"{a} here:", a_src), (f"{b} here:", b_src))
        return undefined(
            f"Type mismatch: '{name}' is set to type {a} in the true branch and type {b} in "
            "the false branch", None, (f"'{name}' is {a} here:", a_src),
            (f"and {b} here:", b_src), ("and the branches join at this if statement:", src))

    def _widened(self, block, value: Value, type_: Type) -> Value:
        if not is_number(value.type) or not isinstance(type_, TensorType):
            return value
        n = self.graph.create("aten::annotate", [value], [type_])
        block.append(n)
        return n.output

    def uninitialized(self, block, type_: Type) -> Value:
        n = self.graph.create("prim::Uninitialized", [], [type_])
        block.append(n)
        return n.output

    # ---- statement lists with early exits
    def emit_statements(self, stmts: list[ast.stmt]) -> None:
        for i, stmt in enumerate(stmts):
            if self.frame.exited:
                return              # unreachable code after return/raise
            self.emit_statement(stmt)
            flags = self.exit_flags(stmt)
            rest = stmts[i + 1:]
            if flags and rest and not self.frame.exited:
                src = self.src(rest[0])
                cond = self.any_flag(flags, src)
                self.emit_if(cond, lambda: None, lambda rest=rest: self.emit_statements(rest), src,
                             then_exited=RETURNED if flags == ["$ret"] else BROKE)
                return

    def exit_flags(self, stmt: ast.stmt) -> list[str]:
        """The flags a statement may set without always exiting."""
        flags = []
        if _contains(stmt, (ast.Return,), into_loops=True):
            flags.append("$ret")
        if self.loop_depth and _contains(stmt, (ast.Break,), into_loops=False):
            flags.append(f"$brk{self.loop_depth}")
        if self.loop_depth and _contains(stmt, (ast.Continue,), into_loops=False):
            flags.append(f"$cont{self.loop_depth}")
        return flags

    def any_flag(self, flags: list[str], src: SourceRange) -> Value:
        values = [self.frame.value_of(f, src) for f in flags]
        result = values[0]
        for v in values[1:]:
            result = self.emit_op("aten::or", [result, v], src=src)
        return result

    def set_flag(self, name: str, src: SourceRange) -> None:
        self.frame.assign(name, self.const(True, src), src)
        self.frame.exited = RETURNED if name == "$ret" else BROKE

    # ---- loops
    def emit_loop(self, trip_count: Value, first_cond: Value, body_stmts: list[ast.stmt],
                  bind_iteration: Callable[[Value], None], next_cond: Callable[[], Value] | None,
                  src: SourceRange, widened: dict[str, Type] | None = None,
                  target: ast.expr | None = None,
                  defined_by_condition: dict[str, Value] | None = None) -> None:
        """Emit a prim::Loop whose body runs `bind_iteration(i)` then the statements.

        `target` is what rebinds variables each iteration besides the body: a for loop's
        target (`bind_iteration` assigns it) or a while loop's condition (`next_cond`
        evaluates it, and its `:=` assign).  A variable it rebinds that exists before the
        loop is carried, so after the loop it holds the last element, or the value the
        condition last assigned, as in Python.

        `next_cond` computes the continue condition of a while loop at the end of the
        body; for loops continue unless a break/return flag is set.  A carried variable
        whose type widens in the body (None → Optional[int], 0.0 → a NumPy value) makes
        the loop be emitted again with the wider type (`widened`).

        `defined_by_condition`: new variables a while condition assigns whenever it is
        true (`while i < n and (v := xs[i]) > 0`), with their values from its first
        evaluation: carried, so the body sees the value of the evaluation that let it in;
        after the loop they may be undefined (the condition was false)."""
        widened = widened or {}
        defined_by_condition = defined_by_condition or {}
        self.loop_depth += 1
        depth = self.loop_depth
        brk, cont = f"$brk{depth}", f"$cont{depth}"
        may_break = contains_statement(body_stmts, (ast.Break,), into_loops=False)
        may_return = contains_statement(body_stmts, (ast.Return,), into_loops=True)
        if may_break:
            self.frame.assign(brk, self.const(False, src), src)
        if may_return and self.frame.lookup("$retval") is None:
            placeholder = self.insert("prim::Uninitialized", [], [UninitializedType], src=src)
            self.frame.assign("$retval", placeholder.output, src)
        rebound = _assigned_names([target, *body_stmts] if target else body_stmts)
        names = [n for n in rebound if self._is_carried(n) or n in defined_by_condition]
        if may_return:
            names += [n for n in ("$ret", "$retval") if n not in names]
        if may_break and brk not in names:
            names.append(brk)
        initial = [defined_by_condition.get(n) or self.frame.value_of(n, src) for n in names]
        initial = [self.insert("aten::annotate", [v], [widened[n]], src=src).output
                   if n in widened and v.type != widened[n] else v
                   for n, v in zip(names, initial)]
        node = self.insert("prim::Loop", [trip_count, first_cond, *initial], [], src=src)
        body = node.add_block()
        iteration = body.add_param(IntType)
        frame = Frame(body, self.frame, carried=frozenset(names))
        for name, v in zip(names, initial):
            frame.assign(name, body.add_param(v.type, debug_name(name)), src)

        def run_body():
            # The body runs only while no break or return flag is set (they stop the
            # loop): in the body they are the constant False, which lets the code after
            # `if k % d == 0: break` test `k % d == 0` itself, not a carried flag.
            for name in (brk, "$ret"):
                if name in names:
                    self.frame.assign(name, self.const(False, src), src)
            bind_iteration(iteration)
            if contains_statement(body_stmts, (ast.Continue,), into_loops=False):
                self.frame.assign(cont, self.const(False, src), src)
            self.emit_statements(body_stmts)
            exits = [f for f, used in ((brk, may_break), ("$ret", may_return)) if used]
            if self.frame.exited == RAISED:
                cond = self.const(False, src)
            elif next_cond is None:
                cond = (self.emit_op("aten::__not__", [self.any_flag(exits, src)], src=src)
                        if exits else self.const(True, src))
            elif exits:
                stop = self.any_flag(exits, src)
                cond = self.emit_conditional(stop, lambda: self.const(False, src), next_cond, src)
            else:
                cond = next_cond()
            self.frame.vars["$loopcond"] = Binding(cond, src)

        self.run_in_frame(frame, run_body)
        body.add_output(frame.vars.pop("$loopcond").value)
        for name, param in zip(names, body.params[1:]):
            final = frame.value_of(name, src) if not frame.exited == RAISED else param
            if not isinstance(final, Value):
                final = param
            if final.type != param.type:
                joined = widen(param.type, final.type)
                if param.type == UninitializedType:
                    self._retype_placeholder(node, param, final.type)
                elif joined is not None and joined != param.type:
                    node.destroy()
                    self.loop_depth -= 1
                    return self.emit_loop(trip_count, first_cond, body_stmts, bind_iteration,
                                          next_cond, src, {**widened, name: joined}, target,
                                          defined_by_condition)
                elif joined != param.type:
                    where = frame.lookup(name).source
                    raise CompilationError(
                        f"variable '{name}' changes type in the loop: it is "
                        f"{param.type.annotation} before the loop and "
                        f"{final.type.annotation} at the end of the body "
                        "(a loop-carried variable must keep its type)", where or src)
            body.add_output(final)
        for name, param in zip(names, body.params[1:]):
            out = node.add_output(param.type, debug_name(name))
            self.frame.assign(name, out, src)
            if name in defined_by_condition:
                self.frame.vars[name] = undefined(
                    f"'{name}' is assigned in the loop's condition only on the way into the "
                    "body: after the loop it may be undefined", None)
        for name, binding in frame.vars.items():
            if name not in names and not name.startswith("$") and not binding.refinement \
                    and self.frame.lookup(name) is None:
                # one the body itself leaves undefined (`if ...: found = i; break`) keeps
                # its own reason, which points at the assignment
                self.frame.vars[name] = binding if binding.value is None else undefined(
                    f"'{name}' is defined inside the loop body only: it is not defined "
                    "when the loop runs zero times", None,
                    (f"'{name}' is defined here:", binding.source))
        self.loop_depth -= 1

    def _is_carried(self, name: str) -> bool:
        found = self.frame.lookup(name)
        return found is not None and isinstance(found.value, Value)

    @staticmethod
    def _retype_placeholder(node: Node, param: Value, type_: Type) -> None:
        """A `$retval` first set inside the loop takes the type of its first return."""
        initial = node.inputs[param.index + 1]
        initial.type = param.type = type_

    def emit_conditional(self, cond: Value, then_fn: Callable[[], Value],
                         else_fn: Callable[[], Value], src: SourceRange) -> Value:
        """A value-producing if (ternaries, short-circuit and/or).  Variables an
        alternative assigns (`a > 0 and (b := a * 2) > 3`) join as after an if statement."""
        node = self.insert("prim::If", [cond], [], src=src)
        results, frames = [], []
        for block, fn in zip((node.add_block(), node.add_block()), (then_fn, else_fn)):
            produced: list[Value] = []
            frames.append(self.run_in_frame(Frame(block, self.frame),
                                            lambda fn=fn, out=produced: out.append(fn())))
            results.append((block, produced[0]))
        self.join(node, frames, src)
        self.settle_alike([value for _, value in results])     # `xs or []`
        joined = unify(results[0][1].type, results[1][1].type)
        if joined is None:
            raise CompilationError(
                f"the two alternatives have different types: {results[0][1].type.annotation} "
                f"and {results[1][1].type.annotation}", src)
        for block, value in results:
            block.add_output(value)
        return node.add_output(joined)

    def settle_alike(self, values: list) -> None:
        """An empty list or dict literal (`[]`, `{}`) among values that meet (the paths of
        an if, the alternatives of `xs or []`) takes the type a typed one has."""
        typed = [o for v in values if isinstance(v, Value) for o in union_options(v.type)
                 if isinstance(o, ListType) and o.elem != UninitializedType
                 or isinstance(o, DictType) and o.key != UninitializedType]
        if typed:
            self.settle(values, typed[0])

    def trip_count_forever(self, src: SourceRange) -> Value:
        return self.const(INT64_MAX, src)


def _contains(node: ast.AST, kinds: tuple, into_loops: bool) -> bool:
    """Whether `node` has a `kinds` statement; with into_loops=False, not counting those
    inside a loop (a loop statement's own break/continue do not leave the outer loop)."""
    if isinstance(node, kinds):
        return True
    if not into_loops and isinstance(node, (ast.For, ast.While)):
        return False
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if _contains(child, kinds, into_loops):
            return True
    return False


def contains_statement(stmts: list[ast.stmt], kinds: tuple, into_loops: bool) -> bool:
    """Whether a statement list may run a `kinds` statement (return, break, ...): what
    decides which exit flags a loop or a block needs."""
    return any(_contains(s, kinds, into_loops) for s in stmts)


def _assigned_names(stmts: list[ast.AST]) -> list[str]:
    """Names a loop (its target and body) may rebind, in source order: its carried
    values."""
    names: list[str] = []
    for stmt in stmts:
        for node in ast.walk(stmt):
            target_names = []
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                target_names.append(node.id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                target_names.append(node.target.id)
            elif isinstance(node, ast.NamedExpr):
                target_names.append(node.target.id)
            for n in target_names:
                if n not in names:
                    names.append(n)
    return names

