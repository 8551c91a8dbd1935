"""A small FileCheck (PyTorch's torch.testing.FileCheck semantics) for IR text.

Pass tests assert the shape of a graph ("a fusion group, no aten::mul left")
rather than its exact text, so they survive renumbering and unrelated changes:

    FileCheck().check("prim::FusionGroup").check_not("aten::mul").run(graph)

Checks match in order, each starting where the previous positive match ended.
CHECK-NOT holds between its neighbours: from the end of the previous match to
the start of the next positive match (or the end of the text); consecutive
CHECK-NOTs share that range.  CHECK-NEXT must match on the line after the
previous match.  CHECK-COUNT finds n occurrences in order; `exactly=True` adds a
CHECK-NOT of the same string after them.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.graph import Graph
from ..ir.printer import print_graph


class FileCheckError(AssertionError):
    """A check did not hold; the message shows the check, the place and the text."""


@dataclass(frozen=True)
class _Check:
    directive: str          # CHECK, CHECK-NOT, CHECK-NEXT or CHECK-COUNT
    text: str
    count: int = 1

    def __str__(self) -> str:
        name = f"CHECK-COUNT-{self.count}" if self.directive == "CHECK-COUNT" else self.directive
        return f"{name}: {self.text}"


class FileCheck:
    def __init__(self) -> None:
        self.checks: list[_Check] = []

    def check(self, text: str) -> FileCheck:
        """`text` occurs after the previous match."""
        return self._add("CHECK", text)

    def check_not(self, text: str) -> FileCheck:
        """`text` does not occur between the previous match and the next one."""
        return self._add("CHECK-NOT", text)

    def check_next(self, text: str) -> FileCheck:
        """`text` occurs on the line right after the previous match."""
        return self._add("CHECK-NEXT", text)

    def check_count(self, text: str, count: int, exactly: bool = False) -> FileCheck:
        """`text` occurs `count` times after the previous match (and no more if `exactly`)."""
        if count < 0 or (count == 0 and not exactly):
            raise ValueError("check_count needs count > 0, or count == 0 with exactly=True")
        if count:
            self._add("CHECK-COUNT", text, count)
        if exactly:
            self._add("CHECK-NOT", text)
        return self

    def _add(self, directive: str, text: str, count: int = 1) -> FileCheck:
        if not text:
            raise ValueError(f"{directive} needs a non-empty string")
        self.checks.append(_Check(directive, text, count))
        return self

    def run(self, subject: Graph | str) -> None:
        """Apply the checks to a graph (as `print_graph` prints it) or to text."""
        text = print_graph(subject) if isinstance(subject, Graph) else subject
        _Run(self.checks, text).run()


class _Run:
    def __init__(self, checks: list[_Check], text: str):
        self.checks = checks
        self.text = text

    def run(self) -> None:
        end = 0                          # where the previous positive match ended
        pending_nots: list[_Check] = []
        for check in self.checks:
            if check.directive == "CHECK-NOT":
                pending_nots.append(check)
                continue
            start, next_end = self.match(check, end)
            self.assert_absent(pending_nots, end, start)
            pending_nots = []
            end = next_end
        self.assert_absent(pending_nots, end, len(self.text))

    def match(self, check: _Check, pos: int) -> tuple[int, int]:
        """The span `check` matches, searching from `pos`."""
        if check.directive == "CHECK-NEXT":
            newline = self.text.find("\n", pos)
            if newline < 0:
                raise self.fail(check, pos, "there is no next line")
            found = self.text.find(check.text, newline + 1)
            if found < 0 or "\n" in self.text[newline + 1:found]:
                raise self.fail(check, newline + 1, "not found on the next line")
            return found, found + len(check.text)
        first = found = -1
        for k in range(check.count):
            found = self.text.find(check.text, pos)
            if found < 0:
                detail = f" (found {k} of {check.count})" if check.count > 1 else ""
                raise self.fail(check, pos, "not found" + detail)
            first = found if k == 0 else first
            pos = found + len(check.text)
        return first, pos

    def assert_absent(self, nots: list[_Check], start: int, stop: int) -> None:
        for check in nots:
            found = self.text.find(check.text, start, stop)
            if found >= 0:
                raise self.fail(check, found, "found where it must not occur")

    def fail(self, check: _Check, pos: int, problem: str) -> FileCheckError:
        line_no = self.text.count("\n", 0, pos) + 1
        line_start = self.text.rfind("\n", 0, pos) + 1
        line_end = self.text.find("\n", pos)
        line = self.text[line_start:len(self.text) if line_end < 0 else line_end]
        listing = "\n".join(f"  {c}" + ("   <-- this one" if c is check else "")
                            for c in self.checks)
        return FileCheckError(
            f"{check}: {problem}, at line {line_no}:\n  {line}\n  {' ' * (pos - line_start)}^\n"
            f"checks:\n{listing}\ninput:\n{self.text}")
