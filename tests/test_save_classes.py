"""Saving and loading (and pickling) programs that use their own classes: script classes,
enums, NamedTuples and exception classes, stored as data and rebuilt on load.

The round trips run in a fresh process that cannot import the program; the crafted
archives check that the new class records run no code and refuse what save never writes.
"""
from __future__ import annotations

import io
import json
import pickle

import numpy as np
import pytest
from _archives import archive_of, zipped
from _differential import assert_same
from _programs import CHILD_WITHOUT_PROGRAM, imported_program, run_child

import tsjit

PROGRAM = "classes_program_under_test"

SOURCE = '''
import enum
from typing import List, NamedTuple

import numpy as np

import tsjit


class Color(enum.Enum):
    RED = 1
    GREEN = 2
    BLUE = 3


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 10


class Point(NamedTuple):
    x: float
    y: float = 0.0


class ProgramError(ValueError):
    """Raised by the program."""


class Negative(ProgramError):
    pass


@tsjit.script
class Stats:
    def __init__(self, scale: float):
        self.scale = scale
        self.values: List[float] = []

    def add(self, v: float) -> None:
        self.values.append(v * self.scale)

    def total(self) -> float:
        s = 0.0
        for v in self.values:
            s += v
        return s

    def __len__(self) -> int:
        return len(self.values)


def summarize(xs: List[float], scale: float) -> Stats:
    s = Stats(scale)
    for x in xs:
        if x < 0.0:
            raise Negative("negative value")
        s.add(x)
    return s


def shift(p: Point, c: Color) -> Point:
    if c == Color.RED:
        return Point(p.x + 1.0, p.y)
    return Point(p.x, p.y + float(c.value))


def level_of(x: float, threshold: Level = Level.HIGH) -> int:
    if x > 0.0:
        return threshold.value
    return -threshold.value


class Painter(tsjit.Module):
    def __init__(self):
        super().__init__()
        self.color = Color.GREEN
        self.origin: Point = Point(1.0, 2.0)

    def forward(self, x: np.ndarray) -> np.ndarray:
        if self.color == Color.GREEN:
            return x * self.origin.x + self.origin.y
        return x
'''

# The child gets the saved forms, loads (or unpickles) each, and reports what a user sees.
CHILD = CHILD_WITHOUT_PROGRAM + '''
import numpy as np
import tsjit
forms = pickle.load(open(sys.argv[1], "rb"))
report = {{}}
for how, rebuild in (("load", lambda f: tsjit.load(io.BytesIO(f))), ("pickle", pickle.loads)):
    loaded = {{name: rebuild(form) for name, form in forms[how].items()}}
    s = loaded["summarize"]([1.0, 2.0, 4.0], 2.0)
    try:
        loaded["summarize"]([1.0, -1.0], 1.0)
    except ValueError as e:
        raised = ([c.__qualname__ for c in type(e).__mro__], str(e))
    Point, Color = (t.py_class for _, t in loaded["shift"].compiled.param_types)
    moved = loaded["shift"](Point(1.0), Color.BLUE)
    painter = loaded["painter"]
    report[how] = {{
        "stats": (type(s).__module__, type(s).__qualname__, s.total(), len(s), s.values,
                  s.scale),
        "raised": raised,
        "moved": (tuple(moved), type(moved).__qualname__, moved._fields,
                  isinstance(moved, tuple)),
        "returned": loaded["shift"](Point(5.0), Color.RED),
        "red": tuple(loaded["shift"](Point(1.0, 2.0), Color.RED)),
        "colors": [(c.name, c.value) for c in Color],
        "level": (loaded["level_of"](1.0), loaded["level_of"](-1.0)),
        "painter": (painter(np.ones(3)), painter.color.name, tuple(painter.origin)),
        "same_classes": type(loaded["shift"](Point(0.0), Color.RED)) is Point,
        "source_module": {program!r} in sys.modules,
    }}
pickle.dump(report, open(sys.argv[2], "wb"))
'''


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    yield from imported_program(tmp_path_factory, PROGRAM, SOURCE)


def _scripted(program) -> dict:
    return {"summarize": tsjit.script(program.summarize), "shift": tsjit.script(program.shift),
            "level_of": tsjit.script(program.level_of),
            "painter": tsjit.script(program.Painter())}


def _saved(obj) -> bytes:
    buffer = io.BytesIO()
    obj.save(buffer)
    return buffer.getvalue()


def test_fresh_process_rebuilds_the_programs_classes(program, tmp_path):
    scripted = _scripted(program)
    forms = {"load": {name: _saved(obj) for name, obj in scripted.items()},
             "pickle": {name: pickle.dumps(obj) for name, obj in scripted.items()}}
    report = run_child(CHILD.format(program=PROGRAM), tmp_path, forms)
    s = program.summarize([1.0, 2.0, 4.0], 2.0)
    moved = program.shift(program.Point(1.0), program.Color.BLUE)
    painter = program.Painter()
    for how in ("load", "pickle"):
        got = report[how]
        assert not got["source_module"]
        assert got["stats"] == (PROGRAM, "Stats", s.total(), len(s), s.values, s.scale)
        assert got["raised"] == ([c.__qualname__ for c in program.Negative.__mro__],
                                 "negative value")
        assert got["moved"][1:] == ("Point", ("x", "y"), True)
        assert tuple(got["moved"][0]) == tuple(moved)
        assert got["red"] == tuple(program.shift(program.Point(1.0, 2.0), program.Color.RED))
        assert got["colors"] == [(c.name, c.value) for c in program.Color]
        assert got["level"] == (program.level_of(1.0), program.level_of(-1.0))
        assert_same(got["painter"][0], painter(np.ones(3)))
        assert got["painter"][1:] == ("GREEN", (1.0, 2.0))
        assert got["same_classes"]
        # pickled back into this process (a worker's result): the program's own class
        assert got["returned"] == program.Point(6.0, 0.0)
        assert type(got["returned"]) is program.Point


def test_loading_twice_shares_the_rebuilt_classes(program):
    """Functions loaded separately that use one class get one rebuilt class, so the
    result of one is an argument the other takes."""
    form = _saved(tsjit.script(program.shift))
    first, second = tsjit.load(io.BytesIO(form)), tsjit.load(io.BytesIO(form))
    Point, Color = (t.py_class for _, t in first.compiled.param_types)
    assert Point is not program.Point and Color is not program.Color
    assert (Point, Color) == tuple(t.py_class for _, t in second.compiled.param_types)
    assert tuple(second(first(Point(1.0), Color.RED), Color.GREEN)) == (2.0, 2.0)


def test_instances_of_the_original_classes_are_other_classes(program):
    """Documented: a rebuilt class is not the saving program's class."""
    loaded = tsjit.load(io.BytesIO(_saved(tsjit.script(program.shift))))
    with pytest.raises(TypeError, match="for argument 'p'"):
        loaded(program.Point(1.0), program.Color.RED)
    Point, Color = (t.py_class for _, t in loaded.compiled.param_types)
    result = loaded(Point(1.0), Color.RED)
    assert type(result) is Point and not isinstance(result, program.Point)


def test_rebuilt_script_class_methods_are_compiled_graphs(program):
    loaded = tsjit.load(io.BytesIO(_saved(tsjit.script(program.summarize))))
    stats = loaded([3.0], 1.0)
    Stats = type(stats)
    assert isinstance(vars(Stats)["total"], tsjit.ScriptFunction)
    fresh = Stats(0.5)      # __init__ is the compiled graph too
    fresh.add(4.0)
    assert (fresh.values, fresh.total(), len(fresh)) == ([2.0], 2.0, 1)


# ---- crafted class records

def _edited(obj, edit) -> io.BytesIO:
    files = archive_of(obj)
    manifest = json.loads(files["manifest.json"])
    edit(manifest["classes"], manifest)
    files["manifest.json"] = json.dumps(manifest).encode()
    return zipped(files)


def _refused(source, match: str) -> None:
    with pytest.raises(tsjit.SerializationError, match=match):
        tsjit.load(source)


def _record(classes: dict, qualname: str) -> dict:
    return classes[f"{PROGRAM}.{qualname}"]


@pytest.mark.parametrize("member", ["__class__", "_sunder_", "a b", "mro\n", "ｒｅｄ"])
def test_enum_member_names_are_public_identifiers(program, member):
    def edit(classes, _):
        _record(classes, "Color")["members"][0][0] = member
    _refused(_edited(tsjit.script(program.shift), edit), "not a public identifier")


@pytest.mark.parametrize("value", [["array", "a0"], ["list", [["int", 1]]], ["none"]])
def test_enum_values_are_plain_numbers_and_strings(program, value):
    def edit(classes, _):
        _record(classes, "Color")["members"][0][1] = value
    _refused(_edited(tsjit.script(program.shift), edit), "archive")


@pytest.mark.parametrize("field", ["__import__", "_0", "class", "x y"])
def test_namedtuple_fields_are_public_identifiers(program, field):
    def edit(classes, _):
        _record(classes, "Point")["fields"][0] = field
    _refused(_edited(tsjit.script(program.shift), edit), "not a public identifier")


@pytest.mark.parametrize("base, match", [
    ("os.system", "not an object saved code may name"),
    ("builtins.int", "not an exception"),
    (f"{PROGRAM}.Negative", "in terms of itself"),
    ("subprocess.CalledProcessError", "not an object"),
])
def test_exception_bases_are_builtin_or_the_archives(program, base, match):
    def edit(classes, _):
        _record(classes, "Negative")["base"] = base
    _refused(_edited(tsjit.script(program.summarize), edit), match)


@pytest.mark.parametrize("name", ["__getattribute__", "__del__", "__reduce_ex__",
                                  "__init_subclass__", "__class_getitem__", "values"])
def test_script_class_method_names(program, name):
    """Special methods that change how Python treats the class, and a method hiding an
    attribute, are refused."""
    def edit(classes, _):
        methods = _record(classes, "Stats")["methods"]
        methods[name] = methods.pop("total")
    _refused(_edited(tsjit.script(program.summarize), edit), "method name")


def test_class_record_under_another_name(program):
    def edit(classes, _):
        _record(classes, "Color")["qualname"] = "Level"
    _refused(_edited(tsjit.script(program.shift), edit), "has another name")


@pytest.mark.parametrize("kind", ["module", "function", "", 7])
def test_unknown_class_kinds(program, kind):
    def edit(classes, _):
        _record(classes, "Point")["kind"] = kind
    _refused(_edited(tsjit.script(program.shift), edit), "corrupt archive")


def test_a_method_that_does_not_take_its_class(program):
    def edit(classes, manifest):
        methods = _record(classes, "Stats")["methods"]
        methods["total"] = dict(methods["total"], graph=methods["add"]["graph"])
    _refused(_edited(tsjit.script(program.summarize), edit), "used twice")


def _graph_edited(obj, member: str, old: str, new: str) -> io.BytesIO:
    files = archive_of(obj)
    text = files[member].decode()
    assert old in text
    files[member] = text.replace(old, new).encode()
    return zipped(files)


@pytest.mark.parametrize("cls, match", [
    (f"{PROGRAM}.Negative", "must be a class the archive defines"),
    ("builtins.ValueError", "must be a class the archive defines"),
    ("numpy.float64", "must be a class the archive defines"),
    (f"{PROGRAM}.Point", "not an object saved code may name"),     # not in this archive
])
def test_create_object_makes_only_the_archives_script_classes(program, cls, match):
    source = _graph_edited(tsjit.script(program.summarize), "code/function.ir",
                           f"prim::CreateObject[cls=Py({PROGRAM}.Stats)]",
                           f"prim::CreateObject[cls=Py({cls})]")
    _refused(source, match)


def test_tuple_construct_makes_only_the_archives_namedtuples(program):
    source = _graph_edited(tsjit.script(program.shift), "code/function.ir",
                           f"cls=Py({PROGRAM}.Point)", f"cls=Py({PROGRAM}.Color)")
    _refused(source, "must be a namedtuple the archive defines")


@pytest.mark.parametrize("old, new, match", [
    ('prim::GetAttr[name="scale"]', 'prim::GetAttr[name="__dict__"]', "cannot be"),
    ('prim::GetAttr[name="scale"]', 'prim::GetAttr[name="add"]', "declares no such"),
    ('%1 : float = prim::GetAttr[name="scale"]', '%1 : int = prim::GetAttr[name="scale"]',
     "gives a"),
    ("list::append(%0, %2)", 'prim::SetAttr[name="scale"](%self, %0)', "to a List"),
])
def test_script_class_attributes_in_method_graphs(program, old, new, match):
    """A method's graph reads and writes only the attributes its class's record declares,
    as their declared types."""
    member = f"code/{PROGRAM}.Stats.add.ir"
    _refused(_graph_edited(tsjit.script(program.summarize), member, old, new), match)


def test_script_object_values_hold_only_declared_attributes(program):
    painter = program.Painter()
    scripted = tsjit.script(painter)

    def edit(classes, manifest):
        manifest["root"]["attributes"]["origin"]["value"] = [
            "namedtuple", [f"{PROGRAM}.Point", [["float", 1.0]]]]
    _refused(_edited(scripted, edit), "fields")

    def edit_kind(classes, manifest):
        manifest["root"]["attributes"]["color"]["value"] = ["enum", [f"{PROGRAM}.Point", "x"]]
    _refused(_edited(scripted, edit_kind), "not an archive class of kind enum")


def test_class_records_count_against_the_element_budget(program, monkeypatch):
    from tsjit.api import loadable
    files = archive_of(tsjit.script(program.shift))
    manifest = json.loads(files["manifest.json"])
    record = _record(manifest["classes"], "Color")
    record["members"] = [[f"M{k}", ["int", k]] for k in range(2000)]
    files["manifest.json"] = json.dumps(manifest).encode()
    monkeypatch.setattr(loadable, "MAX_GRAPH_ELEMENTS", 1000)
    _refused(zipped(files), "more than 1000")


UNSAVEABLE = """
import enum
from typing import NamedTuple


class Loud(ValueError):
    def __str__(self):
        return "LOUD"


class Shade(enum.Enum):
    DARK = 1

    def describe(self):
        return "dark"


class Pair(NamedTuple):
    a: float
    b: float

    def total(self) -> float:
        return self.a + self.b


def raises(x: int) -> int:
    if x < 0:
        raise Loud("x")
    return x


def shade(s: Shade) -> int:
    return s.value


def first(p: Pair) -> float:
    return p.a
"""


@pytest.mark.parametrize("function, match", [("raises", "Loud.*add nothing"),
                                             ("shade", "Shade.*define no methods"),
                                             ("first", "Pair.*define no methods")])
def test_saving_refuses_what_it_cannot_rebuild(tmp_path_factory, function, match):
    """Classes with code of their own (an exception's __str__, an enum's or a
    NamedTuple's methods) would load as something else: save names them."""
    imported = imported_program(tmp_path_factory, "unsaveable_program", UNSAVEABLE)
    module = next(imported)
    try:
        with pytest.raises(tsjit.SerializationError, match=match):
            tsjit.script(getattr(module, function)).save(io.BytesIO())
    finally:
        next(imported, None)


@pytest.mark.parametrize("name", ["builtins.ValueError", "numpy.float64"])
def test_class_records_cannot_hide_allowed_objects(program, name):
    """A record named builtins.ValueError would make every `raise ValueError` of the
    archive raise a class that `except ValueError` does not catch."""
    def edit(classes, _):
        record = classes.pop(f"{PROGRAM}.ProgramError")
        module, _, qualname = name.rpartition(".")
        classes[name] = dict(record, module=module, qualname=qualname, base="builtins.Exception")
        classes[f"{PROGRAM}.Negative"]["base"] = name
    _refused(_edited(tsjit.script(program.summarize), edit), "would hide")


# ---- pickles of instances of rebuilt classes

def _only_tsjit_reconstructors(data: bytes) -> object:
    """Unpickle allowing only tsjit's reconstructors: what they build is all there is."""
    from tsjit.api import class_records

    class Only(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) == ("tsjit.api.class_records", "restore_instance"):
                return class_records.restore_instance
            raise pickle.UnpicklingError(f"{module}.{name}")

    return Only(io.BytesIO(data)).load()


def _reduced_to(*args) -> bytes:
    from tsjit.api import class_records

    class Crafted:
        def __reduce__(self):
            return class_records.restore_instance, args
    return pickle.dumps(Crafted())


@pytest.mark.parametrize("name, kind, state", [
    (("subprocess", "Popen"), "class", {"returncode": None, "_child_created": True}),
    (("subprocess", "CalledProcessError"), "exception", (1, "touch canary")),
    (("os", "stat_result"), "namedtuple", (1,) * 10),
    (("os", "system"), "enum", "x"),
    (("enum", "Enum"), "enum", "x"),
])
def test_restore_instance_builds_only_data_classes(name, kind, state):
    """The reconstructor of rebuilt classes' instances made any class of any imported
    module, with the pickle's state: a Popen whose __del__ then ran on it."""
    with pytest.raises(pickle.UnpicklingError, match="no class"):
        _only_tsjit_reconstructors(_reduced_to(name, kind, state))


def test_instances_of_rebuilt_classes_pickle_by_name(program):
    loaded = tsjit.load(io.BytesIO(_saved(tsjit.script(program.shift))))
    Point, Color = (t.py_class for _, t in loaded.compiled.param_types)
    moved = loaded(Point(1.0), Color.RED)
    # here the program's own classes exist: the instances come back as those
    assert pickle.loads(pickle.dumps(moved)) == program.Point(2.0, 0.0)
    assert pickle.loads(pickle.dumps(Color.BLUE)) is program.Color.BLUE
    assert _only_tsjit_reconstructors(pickle.dumps(moved)) == program.Point(2.0, 0.0)


def test_class_count_limit(program, monkeypatch):
    """Each class costs far more than a graph element: 50,000 exception records loaded
    in 12 s within the element budget."""
    from tsjit.api import class_records

    def edit(classes, _):
        for k in range(30):
            classes[f"{PROGRAM}.E{k}"] = {"kind": "exception", "module": PROGRAM,
                                          "qualname": f"E{k}", "base": "builtins.Exception"}
    source = _edited(tsjit.script(program.summarize), edit)
    monkeypatch.setattr(class_records, "MAX_CLASSES", 25)
    _refused(source, "over the limit of 25")
    monkeypatch.setattr(class_records, "MAX_CLASSES", 40)
    source.seek(0)
    assert tsjit.load(source) is not None
