"""The environment of the child Python processes tests start."""
from __future__ import annotations

import os
from pathlib import Path

import tsjit

REPOSITORY = Path(tsjit.__file__).resolve().parents[1]


def child_environment(base: dict[str, str] | None = None, **variables: str) -> dict[str, str]:
    """`base` (default: this process's environment) with `variables` set and the tsjit
    this process imported first on PYTHONPATH: a child then imports the same tsjit whether
    it is installed or only checked out, and whatever its working directory."""
    environment = dict(os.environ if base is None else base, **variables)
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPOSITORY), environment.get("PYTHONPATH")]))
    return environment
