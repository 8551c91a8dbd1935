"""Whole-region bailouts: what native code does when Python's result is of a type it
cannot continue with.

Native code computes with the result types the IR promised, and with ints of 64 bits.
Python does not always oblige: `a ** -1` of ints is a float, `(-2.0) ** 0.5` is a complex
number, and `2**62 * 4` an int of 65 bits.  Continuing natively (with a wrapped int, say)
would give another result than the eager program.  So the
fallback site computing such a node returns a `Rerun` instead of its result, native code
gives up, and the region runs again *from its original inputs* in the reference
interpreter, which computes Python's own result (NativeFunction.rerun).  That is sound
only while the run has done nothing observable, so native code keeps an "effect
performed" flag: set before each node with effects in the registry (an array write, a
print) and before each fallback that may emit a NumPy warning.  The test is on the
fallback's slow path only: hot code pays nothing for it.

Once an effect has happened the region cannot start over: it raises instead a
`ResultKindError` (a TypeError; for an int beyond 64 bits, an OverflowError) naming the
operation, the reason and the script location.  That is the one
documented case where a scripted function raises where eager Python returns a value (for
example a complex power, or an int beyond 64 bits, computed after the loop computing its
operands wrote into an array).  An int beyond 64 bits raises OverflowError because that
is what eager Python raises where such an int goes next into an array (`x[i] = v * k`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from llvmlite import ir

from ...ir.graph import Node
from . import cpython
from .ntypes import I1, I64, PTR

if TYPE_CHECKING:
    from .emitter import FunctionEmitter


class ResultKindError(TypeError):
    """Python gave a value of another type than native code continues with (the IR's
    type), after the region had performed an effect."""


class Rerun:
    """Why native code gives up on a node: what a fallback site returns instead of a
    result native code cannot take (`error`: what it raises after an effect)."""

    __slots__ = ("reason", "node", "error")

    def __init__(self, reason: str, node: Node, error: type[Exception] = ResultKindError):
        self.reason, self.node, self.error = reason, node, error

    def refuse(self) -> NoReturn:
        """Raise `error`: the region performed an effect, it cannot start over."""
        where = f"\n{self.node.source.highlight()}" if self.node.source else ""
        raise self.error(
            f"{self.node.kind} in native code: {self.reason}; the region cannot run again "
            "in the interpreter because it has already performed an effect (an array "
            f"write, a print or a NumPy warning){where}")

    def __repr__(self) -> str:
        return f"<tsjit rerun: {self.reason}>"


def int_beyond_64_bits(node: Node) -> Rerun:
    """Giving up on `node` because Python's int result needs more than 64 bits."""
    return Rerun("Python's int needs more than 64 bits", node, OverflowError)


def refuse(rerun: Rerun) -> NoReturn:
    """What native code calls to give up after an effect: raises the Rerun's error."""
    rerun.refuse()


class Bailouts:
    """The bailout code of one native function being emitted (see the module docstring):
    its "effect performed" flag and the blocks that give up."""

    def __init__(self, em: FunctionEmitter, rerun_handler: object):
        """Call at the function's entry: the flags start clear there."""
        self.em = em
        self._rerun_handler = rerun_handler
        self._effect_performed = em.alloca(I1)
        self._calls: ir.Value | None = None
        self._rerun: ir.Block | None = None
        em.b.store(ir.Constant(I1, 0), self._effect_performed)

    def give_up_at_call(self, limit: int, rerun: Rerun) -> None:
        """Count the times this code runs (in a function) and give up with `rerun` at the
        `limit`-th."""
        b = self.em.b
        if self._calls is None:
            self._calls = self.em.alloca(I64, initial=ir.Constant(I64, 0))
        calls = b.add(b.load(self._calls, typ=I64), ir.Constant(I64, 1))
        b.store(calls, self._calls)
        self.give_up_if(b.icmp_signed(">=", calls, ir.Constant(I64, limit)), rerun)

    def mark_effect(self) -> None:
        """What follows does something observable: after it, this run may not re-run."""
        self.em.b.store(ir.Constant(I1, 1), self._effect_performed)

    def check_site_result(self, result: ir.Value) -> None:
        """Give up if a fallback site returned a Rerun (a new reference, `result`)."""
        b, em = self.em.b, self.em
        gave_up = b.icmp_unsigned("==", cpython.type_of(b, result), em.object(Rerun))
        self._give_up_where(gave_up, lambda: result)

    def give_up_if(self, when: ir.Value, rerun: Rerun) -> None:
        """Where `when` holds, give up with `rerun`, without asking a site: for a result
        native code can tell it cannot hold (int() of a uint64 from 2**63 on), where a
        site called with NumPy scalars would count as an effect (it might warn)."""
        def new_reference() -> ir.Value:
            obj = self.em.object(rerun)
            cpython.call(self.em.b, "Py_IncRef", obj)
            return obj
        self._give_up_where(when, new_reference)

    def _give_up_where(self, when: ir.Value, rerun: Callable[[], ir.Value]) -> None:
        b, em = self.em.b, self.em
        bail, cont = em.fn.append_basic_block("gave_up"), em.fn.append_basic_block()
        b.cbranch(when, bail, cont).set_weights([1, 1000])
        b.position_at_end(bail)
        self._give_up(rerun())
        b.position_at_end(cont)

    def _give_up(self, rerun: ir.Value) -> None:
        """End the current block: re-run the region if no effect has been performed, else
        raise `rerun`'s error (`rerun`: a new reference to a Rerun, released)."""
        b, em = self.em.b, self.em
        refused, again = em.fn.append_basic_block("refused"), em.fn.append_basic_block()
        b.cbranch(b.load(self._effect_performed, typ=I1), refused, again)
        b.position_at_end(again)
        cpython.call(b, "Py_DecRef", rerun)
        b.branch(self._rerun_block())
        b.position_at_end(refused)
        error = cpython.call(b, "PyObject_CallOneArg", em.object(refuse), rerun)
        cpython.call(b, "Py_DecRef", error)           # NULL: the error is set
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
