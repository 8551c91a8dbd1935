"""Runtime errors of generated code, pointed back at the script source.

The generated function wraps its body in one `try` (free on the normal path since
CPython 3.11) whose handler calls `locate`: the line of the generated code that failed
names the graph node, and the node's SourceRange the script text.  The exception keeps
its eager class, so `except ZeroDivisionError` in the caller behaves as without tsjit.
"""
from __future__ import annotations

from ..ir.graph import SourceRange

# Set on an exception once it carries a script location, so that a script function called
# by another one does not get the caller's location appended as well.
_LOCATED = "__tsjit_located__"


def _rebuildable(exc: BaseException) -> bool:
    """Whether `type(exc)(message)` makes an equivalent exception with a longer message.

    Only builtin classes whose str() is their single message argument qualify: KeyError's
    argument is the key, OSError and NumPy's errors take other arguments, and user classes
    may have any constructor; a cause, notes or attributes would be lost by a rebuild.
    """
    cls = type(exc)
    return (cls.__module__ == "builtins" and cls.__str__ is BaseException.__str__
            and (not exc.args or (len(exc.args) == 1 and type(exc.args[0]) is str))
            and exc.__cause__ is None and not exc.__dict__)


def locate(exc: BaseException, sources: dict[int, SourceRange]) -> BaseException:
    """The exception to raise instead of `exc`, which escaped a generated function.

    `sources` maps the generated function's line numbers to the script ranges of the nodes
    on them; `exc.__traceback__` starts at the generated frame.  Returns `exc` itself when
    nothing is added to it or it was annotated in place (a note); otherwise a new exception
    of the same class whose message ends with the marked source excerpt.
    """
    tb = exc.__traceback__
    source = sources.get(tb.tb_lineno) if tb is not None else None
    if source is None or getattr(exc, _LOCATED, False):
        return exc
    where = source.highlight()
    if _rebuildable(exc):
        located = type(exc)(f"{exc.args[0]}\n{where}" if exc.args else where)
        located.__traceback__ = tb
    elif hasattr(exc, "add_note"):
        exc.add_note(where)
        located = exc
    else:   # Python 3.10 without notes, and an exception we cannot rebuild
        return exc
    setattr(located, _LOCATED, True)
    return located
