"""FileCheck: each directive passes where PyTorch's does and fails where it fails."""
from __future__ import annotations

import pytest

from tsjit.ir.parser import parse_ir
from tsjit.testing.filecheck import FileCheck, FileCheckError

TEXT = """\
graph(%x : Tensor):
  %0 : Tensor = aten::mul(%x, %x)
  %1 : Tensor = aten::add(%0, %x)
  %2 : Tensor = aten::add(%1, %0)
  %3 : Tensor = aten::neg(%2)
  return (%3)
"""


def fails(check: FileCheck, *needles: str) -> None:
    with pytest.raises(FileCheckError) as info:
        check.run(TEXT)
    for needle in needles:
        assert needle in str(info.value)


def test_checks_match_in_order():
    FileCheck().check("aten::mul").check("aten::add").check("aten::neg").run(TEXT)
    fails(FileCheck().check("aten::neg").check("aten::mul"),
          "CHECK: aten::mul: not found, at line 5", "<-- this one")


def test_check_not_holds_between_its_neighbours():
    FileCheck().check("aten::mul").check_not("aten::neg").check("aten::add").run(TEXT)
    FileCheck().check("aten::neg").check_not("aten::mul").run(TEXT)
    fails(FileCheck().check("aten::mul").check_not("aten::neg").check("return"),
          "CHECK-NOT: aten::neg: found where it must not occur, at line 5")
    fails(FileCheck().check_not("aten::mul").check("aten::add"), "CHECK-NOT: aten::mul")


def test_consecutive_check_nots_share_a_range():
    FileCheck().check("aten::mul").check_not("aten::neg").check_not("return").check(
        "aten::add").run(TEXT)
    fails(FileCheck().check("aten::mul").check_not("aten::neg").check_not("%1").check(
        "aten::neg"), "CHECK-NOT: %1")


def test_check_next_must_be_on_the_following_line():
    FileCheck().check("aten::mul").check_next("aten::add(%0, %x)").run(TEXT)
    fails(FileCheck().check("aten::mul").check_next("aten::neg"),
          "CHECK-NEXT: aten::neg: not found on the next line, at line 3")
    with pytest.raises(FileCheckError, match="there is no next line"):
        FileCheck().check("return").check_next("x").run(TEXT.rstrip("\n"))


def test_check_count():
    FileCheck().check_count("aten::add", 2).check("aten::neg").run(TEXT)
    FileCheck().check_count("aten::add", 1).run(TEXT)
    FileCheck().check_count("aten::add", 2, exactly=True).run(TEXT)
    fails(FileCheck().check_count("aten::add", 3), "CHECK-COUNT-3: aten::add: not found "
          "(found 2 of 3)")
    fails(FileCheck().check_count("aten::add", 1, exactly=True), "CHECK-NOT: aten::add")
    fails(FileCheck().check_count("aten::div", 0, exactly=True).check_count(
        "aten::mul", 0, exactly=True), "CHECK-NOT: aten::mul")
    with pytest.raises(ValueError):
        FileCheck().check_count("aten::add", 0)


def test_check_not_after_count_starts_at_its_last_match():
    FileCheck().check_count("%x", 4).check_not("%x)").check("return").run(TEXT)
    fails(FileCheck().check_count("%x", 3).check_not("%x)").check("return"),
          "CHECK-NOT: %x): found where it must not occur, at line 3")


def test_runs_on_a_graph():
    graph = parse_ir(TEXT)
    FileCheck().check("aten::mul").check_count("aten::add", 2, exactly=True).run(graph)
    with pytest.raises(FileCheckError):
        FileCheck().check_not("aten::mul").run(graph)
