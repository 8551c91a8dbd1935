"""tsjit's environment variables: one reader for the boolean ones.

A boolean variable takes 1/0, true/false, yes/no or on/off, in any case, surrounded by
any blanks; unset or blank means the default.  Anything else warns once (per variable and
value) with a RuntimeWarning naming the accepted words, and the default applies: a typo
must neither crash the program nor silently flip a switch.
"""
from __future__ import annotations

import os
import warnings

DISABLE_ENV = "TSJIT_DISABLE"       # tsjit.script and tsjit.trace return the Python object
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")
_reported: set[tuple[str, str]] = set()


def flag(name: str, default: bool) -> bool:
    """The boolean value of environment variable `name` (see the module docstring)."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    if (name, value) not in _reported:
        _reported.add((name, value))
        warnings.warn(f"{name}={value!r} is not a boolean: use one of "
                      f"{'/'.join(FALSE_WORDS + TRUE_WORDS)} (any case); using the default, "
                      f"{name}={int(default)}", RuntimeWarning, stacklevel=2)
    return default
