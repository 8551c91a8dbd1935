"""tsjit.codegen.vmath as it was at another git revision, importable beside the current one.

What a change to the math library costs is a ratio of two versions' kernels, timed in one
process, interleaved (bench/README.md). This module reads vmath.py and the code-generator
modules it imports, transitively, from ``git show REV:tsjit/codegen/<module>.py`` into a
private package under a temporary directory, with their ``tsjit.codegen`` imports pointed
at that package, and imports it. Other tsjit modules (none, so far) come from the working
tree.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

_REPOSITORY = Path(__file__).resolve().parents[1]
_CODEGEN_IMPORT = re.compile(r"from tsjit\.codegen(?:\.(\w+))? import (\([^)]*\)|[^\n]+)")


def _source(revision: str, module: str) -> str:
    return subprocess.run(["git", "show", f"{revision}:tsjit/codegen/{module}.py"],
                          cwd=_REPOSITORY, check=True, capture_output=True, text=True).stdout


def _imported_modules(source: str) -> set[str]:
    """The tsjit.codegen modules a source imports (``from tsjit.codegen import a, b`` names
    modules; ``from tsjit.codegen.a import x`` names a)."""
    modules = set()
    for match in _CODEGEN_IMPORT.finditer(source):
        if match.group(1):
            modules.add(match.group(1))
        else:
            names = match.group(2).replace("(", " ").replace(")", " ")
            modules.update(part.split()[0] for part in names.split(",") if part.strip())
    return modules


def load(revision: str) -> ModuleType:
    """The vmath module of ``revision`` (a commit, branch or tag of this repository)."""
    package = "vmath_at_" + re.sub(r"\W", "_", revision)
    root = Path(tempfile.mkdtemp(prefix="tsjit_vmath_"))
    (root / package).mkdir()
    (root / package / "__init__.py").write_text("")
    pending, written = ["vmath"], set()
    while pending:
        module = pending.pop()
        if module in written:
            continue
        source = _source(revision, module)
        pending.extend(_imported_modules(source))
        (root / package / f"{module}.py").write_text(source.replace("tsjit.codegen", package))
        written.add(module)
    sys.path.insert(0, str(root))
    return importlib.import_module(f"{package}.vmath")
