"""The reference interpreter: a graph becomes one Python function that CPython runs.

Why generate Python instead of interpreting instructions: each node's reference
implementation is already a Python expression (the registry's template), so the generated
function performs exactly the operations the eager program performs — same objects, same
NumPy calls, same exceptions — while CPython's own bytecode interpreter does the
dispatching.  A call costs one Python call, and scalar loops run at CPython's speed
instead of paying an instruction loop written in Python on top of it.

What the generator adds to a naive translation:
  - one variable per coalesced group of values (variables.py), no copies around loops;
  - `del` of dead values at their last use (release.py), so large temporaries are freed
    as early as in hand-written code;
  - the cheapest faithful loop statement (control.py);
  - a map from generated lines to script source ranges, used by the single exception
    handler around the body (errors.py) to point runtime errors at the script.
"""
from __future__ import annotations

import itertools
import keyword
import linecache
import weakref
from collections.abc import Callable, Sequence

from ..ir.graph import Block, Graph, Node, SourceRange, Value
from ..ops.registry import OPS
from .control import INT64_MAX, LoopForm, LoopParts, SequenceLoop, is_constant, sequence_loop
from .errors import locate
from .helpers import RESERVED_NAMES, namespace
from .liveness import Liveness
from .release import Releases, may_hold_large_object
from .rendering import BOUND_NAME, Renderer
from .variables import CODEGEN_GLOBALS, Variables, python_name

_INDENT = "    "
_compiled_count = itertools.count()


class _Writer:
    """Builds one function's source: the graph's blocks as nested Python statements."""

    def __init__(self, graph: Graph, renderer: Renderer, release: bool):
        self.graph = graph
        self.renderer = renderer
        liveness = Liveness(graph)
        self.vars = Variables(graph, liveness, lambda v: v.node.kind == "prim::Constant")
        self.releases = Releases(graph, liveness, self.vars) if release else None
        self.lines: list[tuple[int, str, SourceRange | None]] = []
        self.depth = 0
        self._discard: str | None = None
        self._by_for_statement: set[Node] = set()   # done by their loop's `for` statement

    # ---- small pieces
    def emit(self, text: str, source: SourceRange | None = None) -> None:
        self.lines.append((self.depth, text, source))

    def expr(self, value: Value) -> str:
        if value in self.vars:
            return self.vars[value]
        if value.node.attrs.get("shared"):     # a mutable default: the very object
            return self.renderer.bind(value.node.attrs["value"])
        return self.renderer.operand(value.node.attrs["value"])

    def assign(self, targets: Sequence[str], sources: Sequence[str]) -> None:
        """targets = sources, all sources read before any target is written."""
        pairs = [(t, s) for t, s in zip(targets, sources) if t != s]
        if pairs:
            self.emit(f"{', '.join(t for t, _ in pairs)} = {', '.join(s for _, s in pairs)}")

    def delete(self, names: Sequence[str]) -> None:
        if names:
            self.emit(f"del {', '.join(names)}")

    def released(self, table: str, key: Node | Block) -> list[str]:
        return getattr(self.releases, table).get(key, []) if self.releases else []

    def nested(self, write: Callable[[], None]) -> list[tuple[int, str, SourceRange | None]]:
        """The lines `write` emits one level deeper, not yet added to this function."""
        saved, self.lines = self.lines, []
        self.depth += 1
        try:
            write()
            return self.lines
        finally:
            self.lines = saved
            self.depth -= 1

    def suite(self, lines: list[tuple[int, str, SourceRange | None]]
              ) -> list[tuple[int, str, SourceRange | None]]:
        """The statements of a nested block (`nested`'s lines), `pass` if there are none:
        a block whose nodes were all optimized away is still a valid Python suite."""
        return lines or [(self.depth + 1, "pass", None)]

    def discard(self) -> str:
        """The variable unused loop counters are bound to."""
        if self._discard is None:
            self._discard = self.vars.fresh("_")
        return self._discard

    # ---- blocks and nodes
    def block(self, block: Block) -> None:
        self.delete(self.released("at_start", block))
        self.nodes(block.nodes)

    def nodes(self, nodes: Sequence[Node]) -> None:
        i = 0
        while i < len(nodes):
            node = nodes[i]
            if node.kind == "prim::Enter":
                end = _matching_exit(nodes, i)
                self.with_body(node, nodes[i + 1:end])
                i = end
                continue
            if node.kind == "prim::If":
                self.if_(node)
            elif node.kind == "prim::Loop":
                self.loop(node)
            elif node.kind not in ("prim::Constant", "prim::Exit") and \
                    node not in self._by_for_statement:
                self.op(node)
            self.delete(self.released("after", node))
            i += 1

    def with_body(self, enter: Node, body: Sequence[Node]) -> None:
        """The nodes of a `with` body: an exception leaving them calls the manager's
        __exit__ with it, as Python's with statement does, then goes on (the manager's
        Exit node, after them, keeps the manager alive to here). An __exit__ that
        suppresses it raises RuntimeError instead."""
        self.delete(self.released("after", enter))
        lines = self.nested(lambda: self.nodes(body))
        manager, error = self.expr(enter.inputs[0]), self.vars.fresh("error")
        self.emit("try:", enter.source)
        self.lines += self.suite(lines)
        self.emit(f"except BaseException as {error}:", enter.source)
        self.emit(f"{_INDENT}if {manager}.__exit__(type({error}), {error}, "
                  f"{error}.__traceback__):", enter.source)
        # Python would go on after the with statement; the graph cannot (the values the
        # body defines are not there): say so rather than raise the exception as if kept
        self.emit(f"{_INDENT * 2}raise RuntimeError('__exit__ returned a true value to "
                  f"suppress the exception, which script code does not support') from "
                  f"{error}", enter.source)
        self.emit(f"{_INDENT}raise")

    def op(self, node: Node) -> None:
        op_def = OPS.get(node.kind)
        if op_def is None:
            raise NotImplementedError(f"the interpreter has no implementation of {node.kind}")
        args = [self.expr(v) for v in node.inputs]
        attrs = self.renderer.attributes(node.attrs, op_def.attrs.get("names", ()),
                                         op_def.attrs.get("shared", ()))
        code = op_def.emit_python(args, attrs)
        targets = [self.vars[v] for v in node.outputs]
        augmented = op_def.attrs.get("augmented")
        if augmented and args[0].isidentifier() and (self.renderer.readable or
                                                      targets == args[:1]):
            # x += y, as written (and as run where x keeps its variable: the statement
            # costs a third of the `x = _operator.iadd(x, y)` call in a loop)
            self.emit(f"{args[0]} {augmented} {args[1]}", node.source)
            self.assign(targets, args[:len(targets)])
            return
        if op_def.attrs.get("unpacks") or len(targets) > 1:
            lhs = ", ".join(targets) + ("," if len(targets) == 1 else "") if targets else "[]"
            self.emit(f"{lhs} = {code}", node.source)
        elif targets:
            self.emit(f"{targets[0]} = {code}", node.source)
        else:
            self.emit(code, node.source)

    def branch(self, block: Block, targets: list[str]) -> None:
        """An If branch, ending with the assignment of its results to the If's outputs."""
        self.block(block)
        self.assign(targets, [self.expr(v) for v in block.outputs])
        self.delete(self.released("at_end", block))

    def if_(self, node: Node) -> None:
        targets = [self.vars[v] for v in node.outputs]
        then_, else_ = (self.nested(lambda b=b: self.branch(b, targets)) for b in node.blocks)
        cond = self.expr(node.inputs[0])
        if not then_ and else_:
            self.emit(f"if not {cond}:", node.source)
            self.lines += else_
            return
        self.emit(f"if {cond}:", node.source)
        self.lines += self.suite(then_)
        if else_:
            self.emit("else:")
            self.lines += else_

    def loop(self, node: Node) -> None:
        loop = LoopParts(node)
        form = loop.form
        params = [self.vars[p] for p in loop.params]
        initial = [self.expr(v) for v in loop.initial]
        counter_unused = not loop.counter.uses
        endless = is_constant(loop.max_trip_count, INT64_MAX) and counter_unused
        first_true = is_constant(loop.initial_cond, True)
        cond_var = self._cond_var(loop) if form is LoopForm.WHILE and not first_true else None
        if cond_var is not None:
            self.assign([*params, cond_var], [*initial, self.expr(loop.initial_cond)])
        else:
            self.assign(params, initial)
        self.delete(self.released("before_loop", node))
        guarded = form is LoopForm.GENERAL and not first_true
        if guarded:
            self.emit(f"if {self.expr(loop.initial_cond)}:", node.source)
            self.depth += 1
        sequence = None
        if cond_var is not None:
            self.emit(f"while {cond_var}:", node.source)
        elif endless and (form is not LoopForm.GENERAL or self.renderer.readable):
            self.emit("while True:", node.source)
        elif self.renderer.readable and is_constant(loop.max_trip_count, INT64_MAX):
            self.emit(f"for {self.vars[loop.counter]} in itertools.count():", node.source)
        elif (index := self._range_index(loop)) is not None:
            _, start, step = (self.expr(v) for v in index.inputs)
            stop = f"{start} + {self.expr(loop.max_trip_count)}" + (
                "" if is_constant(index.inputs[2], 1) else f" * {step}")
            self._by_for_statement.add(index)
            self.emit(f"for {self.vars[index.output]} in range({start}, {stop}, {step}):",
                      node.source)
        elif (sequence := self._sequence(loop)) is not None:
            self._by_for_statement.update((sequence.element, *sequence.stepping))
            element, items = self.vars[sequence.element.output], self.expr(sequence.sequence)
            if len(loop.counter.uses) == 2:     # the element's index and the loop test's
                self.emit(f"for {element} in {items}:", node.source)
            else:
                self.emit(f"for {self.vars[loop.counter]}, {element} in enumerate({items}):",
                          node.source)
        else:
            counter = self.discard() if counter_unused else self.vars[loop.counter]
            self.emit(f"for {counter} in range({self.expr(loop.max_trip_count)}):", node.source)
        check_next = form is not LoopForm.RANGE and cond_var is None and sequence is None
        self.lines += self.suite(self.nested(
            lambda: self._loop_body(loop, params, cond_var, check_next)))
        if guarded:
            self.depth -= 1
        outputs = [self.vars[v] for v in node.outputs]
        self.assign(outputs, params)
        if self.releases is not None:
            self.delete([p for p, o, v in zip(params, outputs, loop.params)
                         if p != o and p not in outputs and may_hold_large_object(v.type)])

    def _loop_body(self, loop: LoopParts, params: list[str], cond_var: str | None,
                   check_next: bool) -> None:
        body = loop.node.blocks[0]
        self.block(body)
        next_cond = self.expr(loop.next_cond)
        targets, results = list(params), [self.expr(v) for v in loop.carried_next]
        if cond_var is not None:
            targets.append(cond_var)
            results.append(next_cond)
        elif check_next and not is_constant(loop.next_cond, True) and next_cond in [
                t for t, r in zip(targets, results) if t != r]:
            cond_var = self.vars.fresh("cond")     # the copies overwrite next_cond's variable
            targets.append(cond_var)
            results.append(next_cond)
            next_cond = cond_var
        self.assign(targets, results)
        self.delete(self.released("at_end", body))
        if check_next and not is_constant(loop.next_cond, True):
            self.emit(f"if not {next_cond}:")
            self.emit(f"{_INDENT}break")

    def _range_index(self, loop: LoopParts) -> Node | None:
        """The `aten::__derive_index` node that computes `for k in range(a, b, c)`'s k first
        thing in the loop's body, when the `for` statement can bind k itself (over a
        range of the same a and c and as many steps): `k = a + i * c` cost two operations
        an iteration, which made the interpreter's loops ~1.4x slower than Python's."""
        uses = loop.counter.uses
        if loop.form is not LoopForm.RANGE or len(uses) != 1:
            return None
        index = uses[0][0]
        body = loop.node.blocks[0]
        first = next((n for n in body.nodes if n.kind not in ("prim::Constant", "prim::profile")),
                     None)
        trip = loop.max_trip_count.node
        if first is not index or index.kind != "aten::__derive_index" or \
                trip.kind != "aten::__range_length" or \
                (trip.inputs[0], trip.inputs[2]) != (index.inputs[1], index.inputs[2]) or \
                self.vars.members(index.output) != [index.output]:
            return None
        return index

    def _sequence(self, loop: LoopParts) -> SequenceLoop | None:
        """The loop as a `for` over its list (control.sequence_loop), where the element and
        the counter have variables of their own for the statement to bind."""
        sequence = sequence_loop(loop)
        if sequence is None or self.renderer.readable:
            return None
        values = (sequence.element.output, loop.counter)
        if any(v not in self.vars or self.vars.members(v) != [v] for v in values):
            return None
        return sequence

    def _cond_var(self, loop: LoopParts) -> str:
        """The variable `while c:` tests: the next condition's own, when the initial and
        next conditions share it and nothing else does; a fresh one otherwise."""
        nxt, first = loop.next_cond, loop.initial_cond
        if nxt in self.vars and first in self.vars and self.vars[nxt] == self.vars[first] \
                and all(v is nxt or v is first for v in self.vars.members(nxt)):
            return self.vars[nxt]
        return self.vars.fresh("cond")

    # ---- the function
    def function(self, name: str, annotate: bool, handle_errors: bool,
                 defaults: Sequence[object] = (), keyword_only: int = 0
                 ) -> tuple[str, dict[int, SourceRange]]:
        """The source of `def name(...)`, and the script range of each line that has one.
        `defaults`: the values of the last parameters' defaults, `keyword_only`: how many
        of the last parameters are keyword-only (both written for `.code`)."""
        inputs = self.graph.inputs
        params = [self.vars[v] + (f": {_annotation(v.type)}" if annotate else "")
                  for v in inputs]
        first_default = len(params) - len(defaults)
        for i, value in enumerate(defaults):
            params[first_default + i] += f" = {self.renderer.expression(value)}"
        if keyword_only:
            params.insert(len(params) - keyword_only, "*")
        outputs = self.graph.outputs
        returns = ""
        if annotate:
            returns = " -> " + (_annotation(outputs[0].type) if len(outputs) == 1 else
                                f"Tuple[{', '.join(_annotation(v.type) for v in outputs)}]")
        self.emit(f"def {_identifier(name)}({', '.join(params)}){returns}:")
        self.depth += 1
        if handle_errors:
            self.emit("try:")
            self.depth += 1
        self.block(self.graph.block)
        results = [self.expr(v) for v in outputs]
        self.emit("return " + (results[0] if len(results) == 1 else
                               f"({', '.join(results)}{',' if len(results) == 1 else ''})"))
        if handle_errors:
            self.depth -= 1
            error, located = self.vars.fresh("error"), self.vars.fresh("located")
            self.emit(f"except Exception as {error}:")
            self.emit(f"{_INDENT}{located} = _locate({error}, _SOURCES)")
            self.emit(f"{_INDENT}if {located} is {error}:")
            self.emit(f"{_INDENT * 2}raise")
            self.emit(f"{_INDENT}raise {located} from None")
        sources = {i + 1: src for i, (_, _, src) in enumerate(self.lines) if src is not None}
        return "\n".join(_INDENT * depth + text for depth, text, _ in self.lines) + "\n", sources


def _matching_exit(nodes: Sequence[Node], enter: int) -> int:
    """The index of the Exit node that closes the Enter at `enter` (the block's end if
    none does: the body always raises)."""
    depth = 0
    for i in range(enter, len(nodes)):
        kind = nodes[i].kind
        depth += (kind == "prim::Enter") - (kind == "prim::Exit")
        if depth == 0:
            return i
    return len(nodes)


def _annotation(t) -> str:
    """A type's annotation as a Python expression: a string literal when its spelling is
    not one (a class defined in a function: `make.<locals>.Point`)."""
    text = t.annotation
    try:
        compile(text, "<annotation>", "eval")
    except SyntaxError:
        return repr(text)
    return text


def _identifier(name: str) -> str:
    """A function name Python accepts (`Net.forward` -> `Net_forward`) and that no global
    of generated code uses; Python reads it as written (characters NFKC would change
    become `_`: a loaded function's name `ｎp` would define `np`)."""
    name = python_name(name)
    if not name.isidentifier() or keyword.iskeyword(name) or name in RESERVED_NAMES \
            or name in CODEGEN_GLOBALS or BOUND_NAME.fullmatch(name):
        name = "_" + name
    return name


class CompiledGraph:
    """A graph turned into a Python function; calling it runs the graph.

    `fn` is the generated function itself (callers on a hot path may call it directly);
    `source` its text; `sources` maps its line numbers to the script's source ranges.
    """

    __slots__ = ("graph", "fn", "source", "sources")

    def __init__(self, graph: Graph, fn: Callable, source: str,
                 sources: dict[int, SourceRange]):
        self.graph = graph
        self.fn = fn
        self.source = source
        self.sources = sources

    def __call__(self, *inputs):
        return self.fn(*inputs)

    def __repr__(self) -> str:
        return f"<CompiledGraph {self.fn.__name__}>"


def compile_graph(graph: Graph, name: str = "forward", filename: str = "<script>"
                  ) -> CompiledGraph:
    """Generate, compile and load the Python function that runs `graph`.

    The function takes the graph's inputs positionally and returns its output (a tuple
    when the graph has not exactly one).  Tracebacks show the generated lines under the
    label `<tsjit name (filename) #k>` (never the script's own file name, whose lines
    differ); the script locations in error messages come from the nodes' source ranges.
    """
    renderer = Renderer()
    source, sources = _Writer(graph, renderer, release=True).function(
        name, annotate=False, handle_errors=True)
    globals_ = namespace()
    globals_.update(renderer.bound)
    globals_.update(_locate=locate, _SOURCES=sources)
    label = f"<tsjit {name} ({filename}) #{next(_compiled_count)}>"
    exec(compile(source, label, "exec"), globals_)
    fn = globals_[_identifier(name)]
    linecache.cache[label] = (len(source), None, source.splitlines(True), label)
    weakref.finalize(fn, linecache.cache.pop, label, None)
    return CompiledGraph(graph, fn, source, sources)


def python_source(graph: Graph, name: str, defaults: Sequence[object] = (),
                  keyword_only: int = 0) -> str:
    """The graph as readable Python (`.code`): source variable names, objects written by
    name, `x += y` as written, `while True` / `itertools.count()` for loops without a
    bound, the parameters' `defaults` (of the last ones) and the `*` before the last
    `keyword_only` ones, no memory-release `del`s and no error handler.  It is valid
    Python (it compiles), to read rather than to run."""
    source, _ = _Writer(graph, Renderer(readable=True), release=False).function(
        name, annotate=True, handle_errors=False, defaults=defaults,
        keyword_only=keyword_only)
    return source
