"""Whole-region bailouts: what native code does when it cannot go on with Python's semantics.

Native code computes with 64-bit ints and with the result types the IR promised.  Python
does not always oblige: `a * b` may need more than 64 bits, `a ** -1` is a float, and
`(-2.0) ** 0.5` is a complex number.  Continuing natively would give another result than
the eager program, so the native function gives up and the region runs again *from its
original inputs* in the reference interpreter, which computes Python's own result
(NativeFunction.rerun).  That is sound only while the run has done nothing observable, so
native code keeps an "effect performed" flag: set before each node with effects in the
registry (an array write, a print) and before each fallback that may emit a NumPy warning.

Where native code gives up: an int `+ - * << **`, negation, `abs`, `//` or `int()` whose
exact result does not fit in 64 bits (LLVM's overflow intrinsics or a range test, then a
branch never taken in practice; in an arm of an `if` that runs whether or not it is taken,
see FunctionEmitter.predicate, only when it is taken), and a fallback site whose result is
of another kind (the site returns a `Rerun`).

Once an effect has happened the region cannot start over: it raises instead one of the
errors below, naming the operation, the reason and the script location.  That is the one
documented case where a scripted function raises where eager Python returns a value (for
example an int that outgrows 64 bits after the loop computing it wrote into an array).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from llvmlite import ir

from ...ir.graph import Node
from . import cpython
from .ntypes import I1, PTR

if TYPE_CHECKING:
    from .emitter import FunctionEmitter


class ResultKindError(TypeError):
    """Python gave a value of another type than native code continues with (the IR's
    type), after the region had performed an effect."""


class Int64OverflowError(OverflowError):
    """An int result needed more than 64 bits, after the region had performed an effect."""


class Rerun:
    """Why native code gives up on a node (what a fallback site returns instead of a
    result native code cannot take; what an overflow test names), with the error to raise
    if the region cannot run again."""

    __slots__ = ("error", "reason", "node")

    def __init__(self, error: type[Exception], reason: str, node: Node):
        self.error, self.reason, self.node = error, reason, node

    def refuse(self) -> NoReturn:
        """Raise the error: the region performed an effect, it cannot start over."""
        where = f"\n{self.node.source.highlight()}" if self.node.source else ""
        raise self.error(
            f"{self.node.kind} in native code: {self.reason}; the region cannot run again "
            "in the interpreter because it has already performed an effect (an array "
            f"write, a print or a NumPy warning){where}")

    def __repr__(self) -> str:
        return f"<tsjit rerun: {self.reason}>"


INT_OVERFLOW = "the int result does not fit in 64 bits"


def refuse(rerun: Rerun) -> NoReturn:
    """What native code calls to give up after an effect: raises the Rerun's error."""
    rerun.refuse()


class Bailouts:
    """The bailout code of one native function being emitted (see the module docstring):
    its "effect performed" flag and the blocks that give up."""

    def __init__(self, em: FunctionEmitter, rerun_handler: object):
        """Call at the function's entry: the flag starts clear there."""
        self.em = em
        self._rerun_handler = rerun_handler
        self._effect_performed = em.alloca(I1)
        self._rerun: ir.Block | None = None
        self._overflow: dict[Node, ir.Block] = {}
        em.b.store(ir.Constant(I1, 0), self._effect_performed)

    def mark_effect(self) -> None:
        """What follows does something observable: after it, this run may not re-run."""
        self.em.b.store(ir.Constant(I1, 1), self._effect_performed)

    def note_overflow(self, overflow: ir.Value, node: Node) -> None:
        """Give up if `node`'s int result did not fit in 64 bits (`overflow`) and the code
        is running for real (FunctionEmitter.predicate)."""
        b, em = self.em.b, self.em
        target = self._overflow_block(node)
        cont = em.fn.append_basic_block()
        if em.predicate is not None:
            # tested on the rare path only, to keep the common one a compare and a jump
            taken = em.fn.append_basic_block("overflow_if_taken")
            with b.goto_block(taken):
                b.cbranch(em.predicate, target, cont)
            target = taken
        b.cbranch(overflow, target, cont).set_weights([1, 1000])
        b.position_at_end(cont)

    def check_site_result(self, result: ir.Value) -> None:
        """Give up if a fallback site returned a Rerun (a new reference, `result`)."""
        b, em = self.em.b, self.em
        gave_up = b.icmp_unsigned("==", cpython.type_of(b, result), em.object(Rerun))
        bail, cont = em.fn.append_basic_block("gave_up"), em.fn.append_basic_block()
        b.cbranch(gave_up, bail, cont).set_weights([1, 1000])
        b.position_at_end(bail)
        self._give_up(result, release=True)
        b.position_at_end(cont)

    def _overflow_block(self, node: Node) -> ir.Block:
        block = self._overflow.get(node)
        if block is None:
            b, em = self.em.b, self.em
            block = self._overflow[node] = em.fn.append_basic_block("overflow")
            with b.goto_block(block):
                self._give_up(em.object(Rerun(Int64OverflowError, INT_OVERFLOW, node)),
                              release=False)
        return block

    def _give_up(self, rerun: ir.Value, release: bool) -> None:
        """End the current block: re-run the region if no effect has been performed, else
        raise `rerun`'s error (a Rerun object; `release`: a reference to drop)."""
        b, em = self.em.b, self.em
        refused, again = em.fn.append_basic_block("refused"), em.fn.append_basic_block()
        b.cbranch(b.load(self._effect_performed, typ=I1), refused, again)
        b.position_at_end(again)
        if release:
            cpython.call(b, "Py_DecRef", rerun)
        b.branch(self._rerun_block())
        b.position_at_end(refused)
        error = cpython.call(b, "PyObject_CallOneArg", em.object(refuse), rerun)
        cpython.call(b, "Py_DecRef", error)           # NULL: the error is set
        if release:
            cpython.call(b, "Py_DecRef", rerun)
        b.branch(em.fail_block)

    def _rerun_block(self) -> ir.Block:
        """Return `rerun_handler(*args)`: the region again, from the caller's arguments
        (untouched), in the interpreter."""
        if self._rerun is None:
            b, em = self.em.b, self.em
            self._rerun = em.fn.append_basic_block("rerun")
            with b.goto_block(self._rerun):
                b.ret(cpython.call(b, "PyObject_Vectorcall", em.object(self._rerun_handler),
                                   em.args, em.nargs, ir.Constant(PTR, None)))
        return self._rerun
