"""tsjit.codegen.vmath (or another code generator) as it was at another git revision,
importable beside the current one.

What a change to the math library or the kernel generator costs is a ratio of two
versions' kernels, timed in one process, interleaved (bench/README.md). This module reads
every module of tsjit/codegen from ``git show REV:tsjit/codegen/<module>.py`` into a
private package under a temporary directory, with their ``tsjit.codegen`` imports pointed
at that package, and imports the one asked for. Other tsjit modules come from the working
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


def _source(revision: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{revision}:{path}"], cwd=_REPOSITORY, check=True,
                          capture_output=True, text=True).stdout


def package_name(revision: str) -> str:
    """The name of the package that holds ``revision``'s code generators."""
    return "codegen_at_" + re.sub(r"\W", "_", revision)


def load(revision: str, module: str = "vmath") -> ModuleType:
    """The code-generator ``module`` of ``revision`` (a commit, branch or tag of this
    repository)."""
    package = package_name(revision)
    if package not in sys.modules:
        root = Path(tempfile.mkdtemp(prefix="tsjit_codegen_"))
        (root / package).mkdir()
        (root / package / "__init__.py").write_text("")
        listing = subprocess.run(["git", "ls-tree", "--name-only", revision, "tsjit/codegen/"],
                                 cwd=_REPOSITORY, check=True, capture_output=True,
                                 text=True).stdout
        for path in listing.split():
            if path.endswith(".py"):
                source = _source(revision, path).replace("tsjit.codegen", package)
                (root / package / Path(path).name).write_text(source)
        sys.path.insert(0, str(root))
    return importlib.import_module(f"{package}.{module}")
