"""A program under test as a module file of its own, importable here and nowhere else.

Save/load and pickling tests script functions of such a module, then check that a child
process, which runs with the module's directory off its path, still runs them."""
from __future__ import annotations

import importlib.util
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from _subprocess import child_environment


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


# The first lines of a child process's script (a format string, {program}: the module's
# name): the child must not be able to import the program it runs the saved form of.
CHILD_WITHOUT_PROGRAM = '''
import io, pickle, sys
try:
    import {program}
except ModuleNotFoundError:
    pass
else:
    raise AssertionError("the program's module is importable in the child")
'''


def run_child(script: str, tmp_path: Path, payload: object, timeout: float = 300) -> object:
    """Run `script` in a fresh Python process with `payload` pickled to the file named by
    its argv[1]; what it pickles to the file named by argv[2]."""
    jobs, report = tmp_path / "jobs.pkl", tmp_path / "report.pkl"
    jobs.write_bytes(pickle.dumps(payload))
    child = subprocess.run([sys.executable, "-c", script, str(jobs), str(report)],
                           cwd=tmp_path, env=child_environment(), capture_output=True,
                           text=True, timeout=timeout)
    assert child.returncode == 0, child.stderr
    return pickle.loads(report.read_bytes())
