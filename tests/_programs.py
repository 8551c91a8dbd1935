"""A program under test as a module file of its own, importable here and nowhere else.

Save/load and pickling tests script functions of such a module, then check that a child
process, which runs with the module's directory off its path, still runs them."""
from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from types import ModuleType


def imported_program(tmp_path_factory, name: str, source: str) -> Iterator[ModuleType]:
    """For a module-scoped fixture: module `name` with `source`, imported from a temporary
    directory while the fixture lives."""
    directory = tmp_path_factory.mktemp("program")
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[name]
