"""Retrieving a function's source and mapping AST positions to SourceRanges."""
from __future__ import annotations

import ast
import inspect
import linecache
import re
import sys
import textwrap

from ..ir.graph import SourceRange
from .errors import CompilationError


class ParsedSource:
    """The dedented source of one function or class, its AST and file position."""

    def __init__(self, obj: object):
        try:
            filename = inspect.getsourcefile(obj) or "<unknown>"
            lines, first_line = source_lines(obj, filename)
        except (OSError, TypeError) as e:
            raise CompilationError(_no_source(obj, e)) from None
        self.text = textwrap.dedent("".join(lines))
        self.filename = filename
        self.first_line = first_line
        self._lines = self.text.split("\n")
        self._line_starts = [0]
        for line in self._lines:
            self._line_starts.append(self._line_starts[-1] + len(line) + 1)
        try:
            self.tree = ast.parse(self.text, type_comments=True)
        except RecursionError:
            # CPython's parser, whose depth limit follows the recursion limit: Python
            # itself could not compile this source at the current limit either.
            where = SourceRange(self.text, filename, 0, len(self._lines[0]), first_line)
            raise CompilationError(
                "this function nests expressions deeper than Python's parser allows at the "
                f"current recursion limit ({sys.getrecursionlimit()}); Python could not "
                "compile this source either", where) from None

    def header(self) -> SourceRange:
        """The definition's first decorator, or its `def` line without decorators."""
        decorators = getattr(self.definition, "decorator_list", None)
        return self.range(decorators[0] if decorators else self.definition)

    @property
    def definition(self) -> ast.AST:
        return self.tree.body[0]

    def range(self, node: ast.AST) -> SourceRange:
        start = self._offset(node.lineno, node.col_offset)
        end_line = getattr(node, "end_lineno", None) or node.lineno
        end_col = getattr(node, "end_col_offset", None)
        if end_col is None:
            end = start + 1
        else:
            end = self._offset(end_line, end_col)
        if isinstance(node, (ast.If, ast.While, ast.For, ast.With, ast.FunctionDef, ast.Try)):
            end = min(end, self._offset(node.lineno + 1, 0) - 1)   # the header line only
        return SourceRange(self.text, self.filename, start, end, self.first_line)

    def _offset(self, line: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets; convert within the line
        text_line = self._lines[line - 1] if line - 1 < len(self._lines) else ""
        col = len(text_line.encode("utf-8")[:col].decode("utf-8", errors="ignore"))
        return self._line_starts[line - 1] + col


_DEFINITION_START = re.compile(r"\s*(@|def\s|async\s+def\s)")


def source_lines(obj: object, filename: str) -> tuple[list[str], int]:
    """``inspect.getsourcelines(obj)``, found without tokenize for a plain function.

    inspect finds where a function's block ends by tokenizing from its first line, and
    the first use of tokenize compiles its regular expressions: ~3 ms, a fifth of what a
    process with a warm disk cache spends before its first optimized result. Here the
    block is cut at the first later line (neither blank nor a comment) indented no deeper
    than the ``def``. Where that cut falls inside a string, bracket or line continuation,
    the lines up to it do not parse as one definition ending on their last line, and
    inspect is asked after all."""
    fn = inspect.unwrap(obj) if callable(obj) else obj
    code = getattr(fn, "__code__", None)
    if inspect.isfunction(fn) and code is not None:
        linecache.checkcache(filename)
        lines = linecache.getlines(filename, fn.__globals__)
        start = code.co_firstlineno - 1
        if 0 <= start < len(lines) and _DEFINITION_START.match(lines[start]):
            block = _function_block(lines, start)
            if block is not None:
                return block, start + 1
    return inspect.getsourcelines(obj)


def _indentation(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_code(line: str) -> bool:
    stripped = line.lstrip()
    return bool(stripped) and not stripped.startswith("#")


def _function_block(lines: list[str], start: int) -> list[str] | None:
    """The lines of the definition at ``start`` (its decorators, one a line, then its
    ``def``), or None where the cut by indentation does not give one definition. As in
    inspect, comment lines after the body belong to it when indented at least as deep as
    its first statement."""
    indent = _indentation(lines[start])
    scan = start
    while scan < len(lines) - 1 and lines[scan].lstrip().startswith("@"):
        scan += 1
    scan = last = scan + 1
    while scan < len(lines) and not (_is_code(lines[scan]) and
                                     _indentation(lines[scan]) <= indent):
        if _is_code(lines[scan]):
            last = scan + 1
        scan += 1
    block = lines[start:last]
    try:
        tree = ast.parse(textwrap.dedent("".join(block)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    definition = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
            definition.end_lineno != len(block):
        return None
    first = definition.body[0].lineno
    if first == definition.lineno:      # `def f(x): return x`: no indented body
        return block
    body_indent = _indentation(block[first - 1])
    for k in range(last, scan):
        if lines[k].lstrip().startswith("#") and _indentation(lines[k]) >= body_indent:
            last = k + 1
    return lines[start:last]


# the file names CPython gives code that has no file: exec()/`python -c`, the REPL
_NO_FILE = re.compile(r"<(string|stdin|console|python-input-\d+)>")


def _no_source(obj: object, error: Exception) -> str:
    """Why the source of `obj` cannot be found, and what to do instead."""
    name = getattr(obj, "__qualname__", obj)
    code = getattr(inspect.unwrap(obj), "__code__", None) if callable(obj) else None
    if code is not None and _NO_FILE.fullmatch(code.co_filename):
        return (f"cannot get the source of {name!r}: it was defined in an interactive "
                f"session, `python -c` or exec() (its file is {code.co_filename}), and "
                "tsjit.script compiles the source text of a file. Ways out: define it in a "
                "file (a .py module) and import it; record it with tsjit.trace(fn, "
                "example_inputs), which needs no source; or set TSJIT_DISABLE=1 to run the "
                "Python function unchanged")
    return (f"cannot get the source of {name!r}: {error}. tsjit.script compiles the source "
            "text of functions defined in a file")
