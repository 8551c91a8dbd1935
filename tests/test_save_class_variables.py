"""Saved code that reads a script class's class variables (`Counter.step`, also through an
instance): the class's record holds its constant class variables, the rebuilt class has
them, and the loader lets a GetAttr of an archive class name only those. Saving such code
was refused ("prim::GetAttr of attribute 'step' of a Any: the archive declares no such
attribute")."""
from __future__ import annotations

import io
import json
import pickle

import pytest
from _archives import archive_of, zipped

import tsjit


class Counter:
    step = 3
    label = "counter"
    bounds = (0, 10)

    def __init__(self, start: int):
        self.value = start

    def advanced(self) -> int:
        return self.value + self.step


def read_class_variables(start: int):
    c = Counter(start)
    return c.advanced(), Counter.label, Counter.bounds[1] - c.step


def test_a_function_reading_class_variables_is_saved_and_loaded(tmp_path):
    scripted = tsjit.script(read_class_variables)
    scripted.save(tmp_path / "f.tsjit")
    for restored in (tsjit.load(tmp_path / "f.tsjit"), pickle.loads(pickle.dumps(scripted))):
        assert restored(4) == read_class_variables(4) == (7, "counter", 7)


def test_a_class_variable_the_record_does_not_give_is_refused():
    files = archive_of(tsjit.script(read_class_variables))
    graph = files["code/function.ir"].decode()
    assert 'prim::GetAttr[name="label"]' in graph
    for name in ("value", "advanced", "missing"):      # (dunder names fail to parse)
        edited = dict(files, **{"code/function.ir": graph.replace(
            'prim::GetAttr[name="label"]', f'prim::GetAttr[name="{name}"]').encode()})
        with pytest.raises(tsjit.SerializationError, match="no such class variable"):
            tsjit.load(zipped(edited))


@pytest.mark.parametrize("name", ["__class__", "not an identifier", "advanced"])
def test_recorded_class_variables_are_checked(name):
    files = archive_of(tsjit.script(read_class_variables))
    manifest = json.loads(files["manifest.json"])
    record = next(r for r in manifest["classes"].values() if r["kind"] == "class")
    record["class_variables"][name] = record["class_variables"].pop("step")
    files["manifest.json"] = json.dumps(manifest).encode()
    with pytest.raises(tsjit.SerializationError, match="class variable"):
        tsjit.load(zipped(files))


def test_the_rebuilt_class_has_the_recorded_values():
    restored = tsjit.load(io.BytesIO(zipped(archive_of(tsjit.script(read_class_variables)))
                                     .getvalue()))
    assert restored(0)[1] == "counter"


class Tally:
    start = 10

    def __init__(self, n: int):
        self.n = n

    def total(self) -> int:
        return self.start + self.n


def tally_total(tally: Tally) -> int:
    return tally.total() + tally.start


def test_an_instance_attribute_shadows_the_class_variable_as_in_python():
    # `self.start` read the class's 10 where the instance had its own start = 5
    shadowed = Tally(1)
    shadowed.start = 5
    scripted = tsjit.script(tally_total)
    for _ in range(3):
        assert scripted(shadowed) == tally_total(shadowed) == 11
        assert scripted(Tally(1)) == tally_total(Tally(1)) == 21
