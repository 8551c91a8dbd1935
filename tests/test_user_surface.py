"""What users meet first: the command line, environment variables, TSJIT_LOG, `.code`,
the inspection methods (which must not run the function again once it is specialized)
and the docstrings `help()` shows."""
from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from _subprocess import child_environment

import tsjit
from tsjit import environment
from tsjit.codegen import engine


def _python(*args: str, env: dict | None = None, cwd: Path | None = None
            ) -> subprocess.CompletedProcess:
    environ = child_environment(**(env or {}))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          env=environ, cwd=cwd, timeout=300)


# ------------------------------------------------------------------ python -m tsjit
def test_help_lists_the_commands_and_exits_0():
    done = _python("-m", "tsjit", "--help")
    assert done.returncode == 0, done.stderr
    assert "demo" in done.stdout and "bench" in done.stdout and "usage:" in done.stdout


def test_demo_help_does_not_run_the_demo():
    done = _python("-m", "tsjit", "demo", "--help")
    assert done.returncode == 0, done.stderr
    assert "usage: python -m tsjit demo" in done.stdout
    assert "===" not in done.stdout and "stats" not in done.stdout  # the demo's output


def test_an_unknown_command_is_a_usage_error():
    done = _python("-m", "tsjit", "demos")
    assert done.returncode == 2
    assert "invalid choice: 'demos'" in done.stderr and "===" not in done.stdout


# ------------------------------------------------------------------ environment
@pytest.mark.parametrize("word,expected", [
    ("1", True), ("true", True), ("TRUE", True), (" Yes ", True), ("on", True),
    ("0", False), ("false", False), ("No", False), ("OFF", False), ("", None), ("  ", None),
])
def test_boolean_variables_accept_the_usual_words(monkeypatch, word, expected):
    monkeypatch.setenv("TSJIT_TEST_FLAG", word)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for default in (True, False):
            assert environment.flag("TSJIT_TEST_FLAG", default) is (
                default if expected is None else expected)


def test_a_bad_boolean_warns_once_and_takes_the_default(monkeypatch):
    monkeypatch.setenv("TSJIT_TEST_FLAG", "maybe")
    with pytest.warns(RuntimeWarning, match=r"TSJIT_TEST_FLAG='maybe' is not a boolean.*"
                                            r"0/false/no/off/1/true/yes/on.*default"):
        assert environment.flag("TSJIT_TEST_FLAG", True) is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert environment.flag("TSJIT_TEST_FLAG", True) is True     # reported once
    monkeypatch.delenv("TSJIT_TEST_FLAG")
    assert environment.flag("TSJIT_TEST_FLAG", False) is False


def test_every_boolean_variable_uses_the_one_parser(monkeypatch):
    monkeypatch.setenv("TSJIT_DISK_CACHE", "Off")
    assert engine._default_cache_dir() is None
    monkeypatch.setenv("TSJIT_DISK_CACHE", "yes")
    assert engine._default_cache_dir() is not None
    monkeypatch.setenv("TSJIT_DISABLE", "on")
    assert tsjit.script(doubled) is doubled
    monkeypatch.setenv("TSJIT_DISABLE", "false")
    assert isinstance(tsjit.script(doubled), tsjit.ScriptFunction)
    done = _python("-c", "import tsjit.config as c; print(c.fusion_enabled(), c.native_enabled())",
                   env={"TSJIT_FUSION": "No", "TSJIT_NATIVE": "TRUE"})
    assert done.stdout.split() == ["False", "True"], done.stderr


def doubled(x):
    return x * 2.0 + 1.0


# ------------------------------------------------------------------ TSJIT_LOG
LOGGED = """
import logging, sys
import numpy as np
if sys.argv[1] == "configured":
    logging.basicConfig(format="APP %(name)s: %(message)s", level=logging.DEBUG)
import tsjit
from program import doubled
f = tsjit.script(doubled)
for _ in range(3):
    f(np.ones(10))
"""


def _logged(tmp_path: Path, mode: str, channels: str) -> subprocess.CompletedProcess:
    (tmp_path / "program.py").write_text(inspect.getsource(doubled))
    (tmp_path / "logged.py").write_text(LOGGED)
    return _python("logged.py", mode, cwd=tmp_path,
                   env={"TSJIT_LOG": channels, "TSJIT_CACHE_DIR": str(tmp_path / "cache")})


def test_an_unknown_log_channel_is_reported_once(tmp_path):
    done = _logged(tmp_path, "plain", "fuser,fusr,nothing")
    assert done.returncode == 0, done.stderr
    reports = [line for line in done.stderr.splitlines() if "unknown channel" in line]
    assert len(reports) == 1, done.stderr
    assert "'fusr', 'nothing'" in reports[0] and "fuser" in reports[0]
    assert "[tsjit.fuser]" in done.stderr          # the known channel still logs


def test_log_lines_are_printed_once_when_the_application_configures_logging(tmp_path):
    plain = _logged(tmp_path, "plain", "fuser")
    configured = _logged(tmp_path, "configured", "fuser")
    assert plain.returncode == 0 and configured.returncode == 0, configured.stderr
    ours = [line[len("[tsjit.fuser] "):] for line in plain.stderr.splitlines()
            if line.startswith("[tsjit.fuser] ")]
    theirs = [line[len("APP tsjit.fuser: "):] for line in configured.stderr.splitlines()
              if line.startswith("APP tsjit.fuser: ")]
    assert ours and sorted(theirs) == sorted(ours), (plain.stderr, configured.stderr)
    assert "[tsjit.fuser]" not in configured.stderr


# ------------------------------------------------------------------ .code
def with_defaults(x, scale: float = 2.0, name: str = "a", flag: bool = True,
                  items: list[int] = [1, 2], n: int = -3) -> np.ndarray:  # noqa: B006
    return x * scale if flag else x


def augmented(x, y):
    x += y
    x *= 2.0
    return x


def over_a_list(xs: list[int]) -> int:
    total = 0
    for v in xs:
        total += v
    return total


def until(n: int) -> int:
    k = 0
    while k * k < n:
        k += 1
    return k


def make_point_class():
    class Point:
        def __init__(self, x: float):
            self.x = x

    return Point


Point = make_point_class()


def local_class_argument(p: Point) -> float:
    return p.x * 2.0


def test_code_is_readable_python():
    code = tsjit.script(with_defaults).code
    assert ("def with_defaults(x: Tensor, scale: float = 2.0, name: str = 'a', "
            "flag: bool = True, items: List[int] = [1, 2], n: int = -3) -> Tensor:") in code
    code = tsjit.script(augmented).code
    assert "x += y" in code and "*= 2.0" in code and "_operator" not in code
    code = tsjit.script(over_a_list).code
    assert "in itertools.count():" in code and "9223372036854775807" not in code
    assert "while" in tsjit.script(until).code
    code = tsjit.script(local_class_argument).code
    assert "p: 'make_point_class.<locals>.Point'" in code
    for fn in (with_defaults, augmented, over_a_list, until, local_class_argument):
        compile(tsjit.script(fn).code, fn.__name__, "exec")


PROGRAM_MODULES = ["test_algorithm_programs", "test_frontend_control_flow",
                   "test_frontend_expressions", "test_frontend_classes",
                   "test_frontend_containers", "test_frontend_statements",
                   "test_language_regressions", "test_python_ops", "test_native_scalar"]


def test_code_of_many_functions_compiles():
    """Every function of these test modules that scripts prints back as valid Python,
    without internal names or INT64_MAX trip counts."""
    compiled = 0
    for module_name in PROGRAM_MODULES:
        module = importlib.import_module(module_name)
        for name, fn in vars(module).items():
            if not inspect.isfunction(fn) or fn.__module__ != module_name or \
                    name.startswith(("test_", "_")):
                continue
            try:
                scripted = tsjit.script(fn)
            except Exception:       # helpers, fixtures and programs that must not compile
                continue
            if not isinstance(scripted, tsjit.ScriptFunction):
                continue
            code = scripted.code
            compile(code, f"{module_name}.{name}", "exec")
            assert "_operator." not in code and "9223372036854775807" not in code, code
            assert re.search(rf"^def \w*{name}\(", code, re.M), code
            compiled += 1
    assert compiled >= 150


# ------------------------------------------------------------------ inspection
def logging_kernel(x, log: list[int]):
    log.append(1)
    return x * 2.0 + 1.0


def logging_loop(n: int, log: list[int]) -> int:
    log.append(n)
    total = 0
    for i in range(n):
        total += i * i
    return total


@pytest.mark.parametrize("fn,args", [(logging_kernel, (np.ones(100),)),
                                     (logging_loop, (100,))])
def test_inspection_does_not_run_a_specialized_function(fn, args):
    scripted = tsjit.script(fn)
    log: list[int] = []
    for _ in range(3):
        scripted(*args, log)
    calls = len(log)
    graph = str(scripted.graph_for(*args, log))
    llvm = scripted.inspect_llvm(*args, log)
    asm = scripted.inspect_asm(*args, log)
    assert len(log) == calls, "an inspection ran the function"
    assert "prim::FusionGroup" in graph or "prim::NativeCall" in graph
    assert "define " in llvm and asm.strip()
    if fn is logging_kernel:     # another size of the same dtype and rank: same code
        assert scripted.inspect_llvm(np.ones(7), log) == llvm and len(log) == calls


def test_inspection_runs_a_function_that_has_not_specialized():
    """As documented: the profiling call runs (with its effect) to know the types."""
    scripted = tsjit.script(logging_kernel)
    log: list[int] = []
    assert "define " in scripted.inspect_llvm(np.ones(100), log)
    assert log


@pytest.mark.parametrize("method", ["graph_for", "inspect_llvm", "inspect_asm"])
def test_inspection_docstrings_say_when_the_function_runs(method):
    doc = " ".join(getattr(tsjit.ScriptFunction, method).__doc__.split())
    assert "runs" in doc and ("specializ" in doc or "see inspect_llvm" in doc)


# ------------------------------------------------------------------ help()
@pytest.mark.parametrize("obj", [tsjit.script, tsjit.Module, tsjit.trace])
def test_help_explains_with_an_example_that_runs(obj, tmp_path):
    doc = inspect.getdoc(obj)
    assert len(doc.split("\n\n")[0]) > 40
    example = _example(doc)
    (tmp_path / "example.py").write_text(example)
    done = _python("example.py", cwd=tmp_path,
                   env={"TSJIT_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, (example, done.stderr)


def _example(doc: str) -> str:
    """The indented block after the docstring's `::` line."""
    lines = doc.split("::\n", 1)[1].splitlines()
    block = []
    for line in lines:
        if line.strip() and not line.startswith("    "):
            break
        block.append(line)
    return textwrap.dedent("\n".join(block))
