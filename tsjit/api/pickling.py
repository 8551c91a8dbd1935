"""Pickling script functions and modules: through the saved form, as `save`/`load` write it.

A pickle carries the archive that `obj.save` writes (graphs, signatures, attribute
values; no source text, no code objects) and unpickles with `tsjit.load`'s reader and
every one of its checks, so a process without the program's source rebuilds the object
and a tampered payload raises `SerializationError` as a tampered file does.  The
reconstructors below are the only names a tsjit pickle refers to.

A Dask worker or a `multiprocessing` pool unpickles the same function once per task: an
unpickled function is kept, weakly, under the digest of its saved form, so unpickling it
again gives the same function, with its executor, profiles and compiled code, instead of
compiling once per task.  Only functions are shared: each unpickled module is a fresh
instance (its attributes are state that its methods may change).
"""
from __future__ import annotations

import hashlib
import io
import threading
import weakref

from ..ir.types import qualified_name
from .archive import SerializationError
from .script_function import ScriptFunction, ScriptModule
from .serialization import load, save

# digest of a saved form -> the function unpickled from it, while anything holds it
_unpickled: weakref.WeakValueDictionary[bytes, ScriptFunction] = weakref.WeakValueDictionary()
_unpickled_lock = threading.Lock()


def saved_form(obj: ScriptFunction | ScriptModule) -> bytes:
    """The archive `obj.save` writes, as bytes; a function's is made once (a compiled
    function never changes, and pickling it again gives the same bytes), and unpickled
    in this process it gives this function back (as a Python function, pickled by
    reference, gives itself: the same profiles and compiled code)."""
    if not isinstance(obj, ScriptFunction):
        buffer = io.BytesIO()
        save(obj, buffer)
        return buffer.getvalue()
    if "_saved_form" not in vars(obj):
        buffer = io.BytesIO()
        save(obj, buffer)
        obj._saved_form = buffer.getvalue()
    with _unpickled_lock:
        _unpickled[hashlib.sha256(obj._saved_form).digest()] = obj
    return obj._saved_form


def restore_function(form: bytes) -> ScriptFunction:
    """The function pickled as `form`: the one already unpickled from the same bytes, if
    it is still alive, else a newly loaded one."""
    _check_payload(form)
    digest = hashlib.sha256(form).digest()
    with _unpickled_lock:
        function = _unpickled.get(digest)
    if function is not None:
        return function
    loaded = load(io.BytesIO(form), program_classes=True)
    if not isinstance(loaded, ScriptFunction):
        raise SerializationError("corrupt pickle: a function pickle holds a module")
    loaded._saved_form = form
    with _unpickled_lock:     # two threads unpickling at once: the first one stored wins
        return _unpickled.setdefault(digest, loaded)


def restore_module(form: bytes) -> ScriptModule:
    """The module pickled as `form`, a new instance each time."""
    _check_payload(form)
    loaded = load(io.BytesIO(form), program_classes=True)
    if not isinstance(loaded, ScriptModule):
        raise SerializationError("corrupt pickle: a module pickle holds a function")
    return loaded


def _check_payload(form: object) -> None:
    if type(form) is not bytes:
        raise SerializationError("corrupt pickle: a tsjit pickle holds the saved form as "
                                 f"bytes, not {type(form).__name__}")


def with_classes_of(function: ScriptFunction, args: tuple) -> ScriptFunction | None:
    """`function` loaded again from its saved form with the classes of `args` that have
    the names of the classes it was unpickled with but are other classes, if they save
    as its records do; else None.  A worker may unpickle a task's function before its
    arguments, whose unpickling imports the program's module (the function rebuilt the
    classes then), or receive a class of `__main__` by value (cloudpickle's form, beside
    the `__main__` a spawned worker re-imports): the function takes what it is given."""
    using = vars(function).get("_archive_classes")
    offered: dict[str, type] = {}
    if using:
        _classes_in(args, offered, 4)
    offered = {name: cls for name, cls in offered.items()
               if name in using and cls is not using[name]}
    if not offered:
        return None
    loaded = load(io.BytesIO(function._saved_form), program_classes=offered)
    return loaded if all(loaded._archive_classes[name] is cls
                         for name, cls in offered.items()) else None


def _classes_in(value: object, found: dict[str, type], depth: int) -> None:
    """The classes of `value` and of what it holds (list, tuple and dict items, instance
    attributes; the first few of each container, a few levels deep), by name."""
    cls = type(value)
    found.setdefault(qualified_name(cls), cls)
    if depth == 0:
        return
    if isinstance(value, dict):
        items = [*list(value)[:4], *list(value.values())[:4]]
    elif isinstance(value, (list, tuple)):
        items = list(value[:4])
    else:
        items = list(getattr(value, "__dict__", {}).values())[:8]
    for item in items:
        _classes_in(item, found, depth - 1)
