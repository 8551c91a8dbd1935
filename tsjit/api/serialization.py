"""Saving script functions and modules, and loading them in another process.

As with `torch.jit.save`, the file holds the compiled program, not its source: the
graph of each function or method (the unoptimized `.graph`: the loading process
profiles and specializes it again for its own inputs and machine), the schemas, and a
module's attribute values.  A loaded module is an instance of a class made at load
time with the saved class's name, carrying the saved attributes; the loading process
never imports the program that saved it.

The program's own classes that its graphs use (script classes, enums, NamedTuples,
exception classes) are saved as data and rebuilt at load (`class_records.py`).

Loading runs no code of the file's: everything saved is plain data, registry ops, the
few objects `loadable.py` allows (found again by name without importing anything) and
the archive's own classes.  A graph that refers to other code of the program (a
@tsjit.ignore'd function, an exception class with methods of its own) cannot be saved:
`save` applies the loader's rules, raises and names the object, rather than write a
file that loads into something else or not at all.  The archive's layout is in
`archive.py`.
"""
from __future__ import annotations

import difflib
import inspect
import re
import unicodedata

from ..frontend.compiler import CompiledCallable
from ..frontend.dataclass_methods import script_method_names, synthesized_method
from ..frontend.errors import CompilationError
from ..interpreter.helpers import value_matches
from ..ir.graph import Graph
from ..ir.ignored_functions import IgnoredFunction
from ..ir.parser import IRParseError, parse_ir, parse_type
from ..ir.printer import print_graph
from ..ir.types import _TYPE_ATTRIBUTE, ClassType, Type, is_subtype, qualified_name
from ..ir.verifier import IRVerificationError, verify
from ..ops.registry import NO_DEFAULT, Param
from . import class_records
from .archive import (
    ArchiveReader,
    PathOrFile,
    SerializationError,
    ValueDecoder,
    ValueEncoder,
    write_archive,
)
from .argument_check import value_has_type
from .class_records import (
    ClassNames,
    cached_class,
    check_method_name,
    class_kind,
    class_record,
    class_variables,
    classes_in_graph,
    classes_in_type,
    new_class,
    new_enum,
    new_namedtuple,
    record_digest,
    remember_class,
    set_class_variables,
)
from .loadable import (
    ALLOWED_OBJECTS,
    SavedCodeRules,
    allowed_object,
    check_loaded_graph,
    is_identifier,
)
from .module import Module, ModuleDict, ModuleList
from .script_function import ScriptFunction, ScriptMethod, ScriptModule

# value tags of instances of the program's classes -> the kind of class
_VALUE_KINDS = {"enum": "enum", "namedtuple": "namedtuple", "object": "class"}
# A class type in graph text (`__tsjit__.pkg.Net`), not an enum (`Enum<__tsjit__.pkg.E>`).
_CLASS_TYPE = re.compile(r"(?<!Enum<)__tsjit__\.([\w.<>]+)")


# ---- saving

def save(obj: ScriptFunction | ScriptModule, target: PathOrFile) -> None:
    """Write a script function or module to `target` (a path or a binary file)."""
    if isinstance(obj, ScriptMethod):
        raise SerializationError(f"'{obj.name}' is a method of a scripted module: save the "
                                 "module")
    encoder = _Encoder()
    if isinstance(obj, ScriptFunction):
        record = encoder.function_record(obj.compiled, "function", obj.__doc__)
        manifest = {"kind": "function", "function": record}
    elif isinstance(obj, ScriptModule):
        methods = object.__getattribute__(obj, "_methods")
        instance = object.__getattribute__(obj, "_instance")
        root = encoder.module(instance, "self", methods["forward"].compiled.param_types[0][1])
        manifest = {
            "kind": "module",
            "types": {name: {"module": t.py_class.__module__, "qualname": t.py_class.__qualname__}
                      for name, t in encoder.types.items()},
            "root": root,
            "methods": {name: encoder.function_record(m.compiled, name, m.__doc__)
                        for name, m in methods.items()},
        }
    else:
        raise TypeError(f"tsjit.save expects a ScriptFunction or ScriptModule, not "
                        f"{type(obj).__name__}")
    if encoder.records:
        manifest["classes"] = encoder.records
    write_archive(target, manifest, encoder.texts, encoder.arrays)


class _Encoder(ValueEncoder):
    """Writes modules (typed attributes, constants, module containers), graphs, and the
    program's classes they use (`class_records.py`), checking each graph against the
    loader's rules as it goes."""

    def __init__(self) -> None:
        super().__init__()
        self.types: dict[str, ClassType] = {}      # module types
        self.names = ClassNames()                   # the program's classes, as load has them
        self.records: dict[str, dict] = {}
        self.texts: dict[str, str] = {}
        self.rules = SavedCodeRules(self.names.kinds)   # what load checks, archive-wide
        self.module_attributes: dict[ClassType, set[str]] = {}   # as load will have them
        self.class_variables: dict[type, set[str]] = {}     # script classes', recorded

    @property
    def class_types(self) -> dict[str, ClassType]:
        return {**self.types, **self.names.class_types}

    def encode_other(self, value: object, where: str) -> list:
        if isinstance(value, ModuleList):
            return ["module_list", [self.module(m, f"{where}[{i}]") for i, m in enumerate(value)]]
        if isinstance(value, ModuleDict):
            return ["module_dict", [[k, self.module(m, f"{where}[{k!r}]")]
                                    for k, m in value.items()]]
        if isinstance(value, Module):
            return ["module", self.module(value, where)]
        kind = class_kind(type(value))
        if kind is not None:
            name = self.add_class(type(value), where)
            if kind == "enum":
                return ["enum", [name, value.name]]
            if kind == "namedtuple":
                return ["namedtuple", [name, [self.encode(v, f"{where}.{f}")
                                              for f, v in zip(value._fields, value)]]]
            if kind == "class":
                return ["object", [name, {a: self.encode(getattr(value, a), f"{where}.{a}")
                                          for a in ClassType.for_class(type(value)).attributes
                                          if hasattr(value, a)}]]
        return super().encode_other(value, where)

    def module(self, instance: Module, where: str, t: ClassType | None = None) -> dict:
        t = t or _module_type(instance)
        self.types.setdefault(t.name, t)
        attributes = {}
        for name, declared in t.attributes.items():
            self.add_classes(classes_in_type_list(declared), where)
            attributes[name] = {"type": str(declared),
                                "value": self.encode(getattr(instance, name), f"{where}.{name}")}
        for name, value in vars(instance).items():
            if isinstance(value, (ModuleList, ModuleDict)) and not name.startswith("_"):
                attributes[name] = {"value": self.encode(value, f"{where}.{name}")}
        constants = {name: self.encode(value, f"{where}.{name}")
                     for name, value in t.constants.items()}
        self.module_attributes.setdefault(t, set(attributes))
        return {"class": t.name, "attributes": attributes, "constants": constants}

    # ---- the program's classes
    def add_classes(self, classes: list[type], owner: str) -> None:
        for cls in classes:
            self.add_class(cls, owner)

    def add_class(self, cls: type, owner: str) -> str:
        """Record program class `cls` (and the classes its record names); its name."""
        name = qualified_name(cls)
        if name in self.names.objects or name in ALLOWED_OBJECTS or (
                isinstance(vars(cls).get(_TYPE_ATTRIBUTE), ClassType)
                and vars(cls)[_TYPE_ATTRIBUTE].is_module):
            return name
        kind = class_kind(cls)
        if kind is None:
            raise SerializationError(
                f"cannot save {owner}: it uses '{name}', which is not a script class, enum, "
                "NamedTuple or exception class (only these of the program's own code are "
                "saved, as data; @tsjit.ignore'd functions and other objects are not)")
        self.names.add(name, cls, kind)
        if kind == "exception":
            self.add_class(cls.__bases__[0], owner)
        elif kind == "namedtuple":
            for annotation in getattr(cls, "__annotations__", {}).values():
                if isinstance(annotation, type):
                    self.add_class(annotation, owner)
        elif kind == "class":
            for attribute in ClassType.for_class(cls).attributes.values():
                self.add_classes(classes_in_type_list(attribute), owner)
        if kind == "class":         # (its methods' graphs, checked as recorded, read them)
            self.class_variables[cls] = set(class_variables(cls))
        self.records[name] = class_record(cls, kind, self.encode, self.class_methods)
        return name

    def class_methods(self, t: ClassType) -> dict:
        """The records of a script class's methods, each compiled first (the class may have
        been used from script code, which compiles only the methods it calls)."""
        from .script import _compiler
        where = f"class '{t.py_class.__qualname__}'"
        for name in script_method_names(t.py_class):
            member = vars(t.py_class)[name]
            if isinstance(member, property) and member.fset is not None:
                raise SerializationError(f"cannot save {where}: property '{name}' has a "
                                         "setter (only getters are saved)")
            fn = member.fget if isinstance(member, property) else member
            fn = synthesized_method(t.py_class, name) or fn
            if inspect.isfunction(fn) and not getattr(fn, "_tsjit_ignore", False) and \
                    not getattr(fn, "_tsjit_unused", False):    # calls of it raise
                try:
                    _compiler.method(t, name, None)
                except CompilationError as e:
                    raise SerializationError(f"cannot save {where}: its method '{name}' does "
                                             f"not compile:\n{e}") from None
        return {name: self.function_record(m, f"{t.name}.{name}", _method_doc(t.py_class, name))
                for name, m in list(t.methods.items())
                if type(name) is str and name != "$compiled"}  # (not the compiler's own keys)

    # ---- graphs
    def function_record(self, compiled: CompiledCallable, key: str, doc: str | None) -> dict:
        path = f"code/{key}.ir"
        owner = f"'{compiled.name}'"
        self.add_classes(classes_in_graph(
            compiled.graph, [compiled.return_type, *(t for _, t in compiled.param_types)]), owner)
        self.texts[path] = self.graph_text(compiled)
        params = []
        for param, (name, t) in zip(compiled.params, compiled.param_types):
            entry = {"name": name, "type": self.type_text(t, compiled.name)}
            if param.kwonly:
                entry["kwonly"] = True
            if param.default is not NO_DEFAULT:
                entry["default"] = self.encode(param.default,
                                               f"the default of '{name}' of '{compiled.name}'")
            params.append(entry)
        return {"name": compiled.name, "doc": doc, "params": params,
                "return_type": self.type_text(compiled.return_type, compiled.name),
                "graph": path}

    def graph_text(self, compiled: CompiledCallable) -> str:
        """The graph's text, once it is known to load back as the same graph without the
        program's code: every class it names is a saved module type or program class, it
        passes the loader's rules (ops, attributes, allowed objects), and reading the text
        gives the text again."""
        _check_ignored_calls(compiled)
        text = print_graph(compiled.graph)
        _check_class_names(text, compiled.name, self.class_types)
        try:
            graph = parse_ir(text, self.names.resolve, self.class_types, self.rules)
            check_loaded_graph(graph, {**self.module_attributes, **{
                t: set(t.attributes) for t in self.names.class_types.values()}},
                self.class_variables)
        except (IRParseError, ValueError) as e:
            raise SerializationError(f"cannot save '{compiled.name}': {e}") from None
        reread = print_graph(graph)
        if reread != text:
            changed = next(line for line in difflib.ndiff(text.splitlines(),
                                                          reread.splitlines())
                           if line.startswith("- "))
            raise SerializationError(f"cannot save '{compiled.name}': this line of its graph "
                                     f"has a constant with no text form that loads back as it "
                                     f"was:\n  {changed[2:].strip()}")
        return text

    def type_text(self, t: Type, owner: str) -> str:
        text = str(t)
        _check_class_names(text, owner, self.class_types)
        try:
            parse_type(text, self.names.resolve, self.class_types)
        except IRParseError as e:
            raise SerializationError(f"cannot save '{owner}': its type {t.annotation}: {e}") \
                from None
        return text


def _method_doc(cls: type, name: str) -> str | None:
    member = inspect.getattr_static(cls, name, None)
    return getattr(member.fget if isinstance(member, property) else member, "__doc__", None)


def classes_in_type_list(t: Type) -> list[type]:
    found: list[type] = []
    classes_in_type(t, found)
    return found


def _module_type(instance: Module) -> ClassType:
    """The type the compiler gave a submodule (a container's items have no attribute
    type in their parent's type), or the type a loaded (or unpickled) module's class was
    loaded with: its graphs name that type, and saving it again must too."""
    loaded = vars(type(instance)).get(_TYPE_ATTRIBUTE)
    if isinstance(loaded, ClassType) and loaded.is_module:
        return loaded
    from .script import _compiler
    return _compiler.module_type_of(instance)


def _check_ignored_calls(compiled: CompiledCallable) -> None:
    """Saved code calls a @tsjit.ignore function by its name (ir/ignored_functions.py):
    the name must lead back to the function."""
    for node in compiled.graph.block.walk():
        fn = node.attrs.get("fn") if node.kind == "prim::PythonOp" else None
        if fn is None or isinstance(fn, IgnoredFunction):
            continue
        try:
            found = IgnoredFunction.of(fn).resolve()
        except (LookupError, ValueError) as e:
            found = e
        if found is not fn:
            raise SerializationError(
                f"cannot save '{compiled.name}': it calls the @tsjit.ignore function "
                f"'{fn.__qualname__}', which saved code names by module and qualified name: "
                f"define it at the top level of its module or of a class ({found})")


def _check_class_names(text: str, owner: str, class_types: dict[str, ClassType]) -> None:
    for name in _CLASS_TYPE.findall(text):
        if name not in class_types:
            raise SerializationError(
                f"cannot save '{owner}': it uses class '{name}', which is neither a module "
                "type nor a script class the archive defines")


# ---- loading

def load(source: PathOrFile, program_classes: bool | dict[str, type] = False
         ) -> ScriptFunction | ScriptModule:
    """The script function or module saved in `source` (a path or a binary file).

    Loading runs no code of the file's (see `loadable.py`); a file that is not an
    archive tsjit wrote, or was edited into one that breaks the rules, raises
    SerializationError.  The archive's classes are rebuilt (`class_records.py`); with
    `program_classes` (unpickling) they are the program's own where this process has
    them (a dict: these classes by name first) and each saves as its record says
    (`_program_classes`)."""
    with ArchiveReader(source) as reader:
        try:
            return _Loader(reader, program_classes).load()
        except (KeyError, TypeError, ValueError, LookupError, AttributeError, RecursionError,
                IRParseError, IRVerificationError) as e:
            raise SerializationError(f"corrupt archive: {type(e).__name__}: {e}") from None


class _Loader(ValueDecoder):
    """One archive's loading: its classes (rebuilt first), module types, values, graphs."""

    def __init__(self, reader: ArchiveReader,
                 program_classes: bool | dict[str, type] = False) -> None:
        super().__init__(reader)
        self.program_classes = program_classes
        self.manifest = reader.manifest
        self.names = ClassNames()
        self.rules = SavedCodeRules(self.names.kinds)
        self.module_types: dict[str, ClassType] = {}
        self.attribute_names: dict[ClassType, set[str]] = {}   # what GetAttr/SetAttr may name
        self.class_variables: dict[type, set[str]] = {}   # what GetAttr of a class may name
        self.records: dict[str, dict] = {}      # the classes' records, while they are built
        self.building: set[str] = set()
        self.graphs: dict[str, str] = {}        # script classes' method graphs, read early

    @property
    def class_types(self) -> dict[str, ClassType]:
        return {**self.module_types, **self.names.class_types}

    def load(self) -> ScriptFunction | ScriptModule:
        manifest = self.manifest
        kind = manifest["kind"]
        if kind not in ("function", "module"):
            raise SerializationError(f"corrupt archive: unknown kind {kind!r:.40}")
        self.classes(manifest.get("classes", {}))
        if kind == "function":
            record = manifest["function"]
            function = ScriptFunction(self.compiled(record), None)
            function.__doc__ = _doc(record)
            if self.program_classes:
                function._archive_classes = dict(self.names.objects)
            return function
        for name, entry in manifest["types"].items():
            if _string(name) in self.names.objects:
                raise SerializationError(f"corrupt archive: {name!r:.80} is defined twice")
            self.module_types[name] = ClassType.for_class(
                _loaded_class(entry["module"], entry["qualname"]), is_module=True)
        instance = self.module(manifest["root"])
        if "forward" not in manifest["methods"]:
            raise SerializationError("corrupt archive: the module has no forward method")
        methods = {}
        for name, record in manifest["methods"].items():
            methods[name] = ScriptMethod(self.compiled(record), None, instance)
            methods[name].__doc__ = _doc(record)
        return ScriptModule(instance, methods)

    # ---- the program's classes (class_records.py)
    def classes(self, records: dict) -> None:
        """Rebuild the archive's classes, or take those this process already rebuilt from
        the same records."""
        if type(records) is not dict:
            raise SerializationError("corrupt archive: 'classes' is not a mapping")
        if len(records) > class_records.MAX_CLASSES:
            raise SerializationError(f"the archive defines {len(records)} classes, over the "
                                     f"limit of {class_records.MAX_CLASSES}")
        graphs = {}
        for name, record in records.items():
            if _dotted_name(name, "class") in ALLOWED_OBJECTS:
                raise SerializationError(f"corrupt archive: class {name} would hide the "
                                         "object of that name")
            for _ in [name, *record.get("members", ()), *record.get("fields", ()),
                      *record.get("attributes", ()), *record.get("methods", ())]:
                self.rules.element()        # classes count against the archive's budget
            if record["kind"] == "class":
                graphs.update({m["graph"]: self.reader.text(m["graph"])
                               for m in record["methods"].values()})
        digest = record_digest(records, graphs)
        found = _program_classes(records, digest, self.program_classes) \
            if self.program_classes and records else None
        found = found or {name: cached_class(name, digest) for name in records}
        if records and all(cls is not None for cls in found.values()):
            for name, cls in found.items():
                self.names.add(name, cls, records[name]["kind"])
                if records[name]["kind"] == "class":
                    self.class_variables[cls] = set(records[name].get("class_variables", ()))
            for t in self.names.class_types.values():
                self.attribute_names[t] = set(t.attributes)
            return
        self.records, self.graphs = records, graphs
        for name in records:
            self.build(name)
        for name, record in records.items():
            if record["kind"] == "class":
                self.script_class(name, record)
        for name, cls in self.names.objects.items():
            remember_class(name, digest, cls, self.names.kinds[cls])

    def build(self, name: str) -> type:
        """The class `name` of the archive, built on first use (a record may name others:
        an exception its base, a NamedTuple's defaults enums)."""
        found = self.names.objects.get(name)
        if found is not None:
            return found
        record = self.records.get(name)
        if record is None or name in self.building:
            raise SerializationError(f"corrupt archive: class {name!r:.80} is not defined, or "
                                     "is defined in terms of itself")
        self.building.add(name)
        kind = record["kind"]
        module, qualname = record["module"], record["qualname"]
        if f"{_dotted_name(module, 'module')}.{_dotted_name(qualname, 'class')}" != name:
            raise SerializationError(f"corrupt archive: class {name!r:.80} has another name")
        if kind == "enum":
            cls = new_enum(name, record, self.decode)
        elif kind == "namedtuple":
            cls = new_namedtuple(name, record, self.decode)
        elif kind == "exception":
            base = _string(record["base"])
            base = self.build(base) if base in self.records else allowed_object(base)
            if not (isinstance(base, type) and issubclass(base, BaseException)):
                raise SerializationError(f"corrupt archive: the base of {name} is not an "
                                         "exception class")
            cls = new_class(record, base)
        elif kind == "class":
            cls = new_class(record)
            t = ClassType.for_class(cls)
            t.methods["$compiled"] = True       # no source: the compiler must not compile it
            self.class_variables[cls] = set_class_variables(cls, record, self.decode)
        else:
            raise SerializationError(f"corrupt archive: unknown class kind {kind!r:.40}")
        self.names.add(name, cls, kind)
        return cls

    def script_class(self, name: str, record: dict) -> None:
        """A script class's attribute types and methods (its compiled graphs)."""
        cls = self.names.objects[name]
        t = ClassType.for_class(cls)
        for attribute, text in record["attributes"].items():
            if not is_identifier(attribute):
                raise SerializationError(f"corrupt archive: attribute name {attribute!r:.80} "
                                         f"of {name} is not an identifier")
            t.attributes[attribute] = parse_type(_string(text), self.names.resolve,
                                                 self.class_types)
        self.attribute_names[t] = set(t.attributes)
        properties = _payload_list(record["properties"])
        for method, method_record in record["methods"].items():
            check_method_name(method, t.attributes)
            compiled = self.compiled(method_record)
            if not compiled.param_types or compiled.param_types[0][1] is not t:
                raise SerializationError(f"corrupt archive: method {method} of {name} does not "
                                         "take an instance of it first")
            function = ScriptFunction(compiled, None)
            function.__doc__ = _doc(method_record)
            if method == "__exit__":
                function.take_exception_details()
            t.methods[method] = compiled
            setattr(cls, method, property(function) if method in properties else function)

    # ---- values
    def decode_other(self, tag: str, payload: object, depth: int) -> object:
        if tag == "module":
            return self.module(payload, depth + 1)
        if tag == "module_list" and type(payload) is list:
            return ModuleList(self.module(record, depth + 1) for record in payload)
        if tag == "module_dict" and type(payload) is list:
            return ModuleDict({_string(key): self.module(record, depth + 1)
                               for key, record in payload})
        if tag in _VALUE_KINDS and type(payload) is list and len(payload) == 2:
            name, content = payload
            cls = self.build(_string(name))
            if self.names.kinds.get(cls) != _VALUE_KINDS[tag]:
                raise SerializationError(f"corrupt archive: {name!r:.80} is not an archive "
                                         f"class of kind {tag}")
            if tag == "enum":
                return cls.__members__[_string(content)]
            if tag == "namedtuple":
                values = [self.decode(v, depth + 1) for v in _payload_list(content)]
                if len(values) != len(cls._fields):
                    raise SerializationError(f"corrupt archive: a {name} of {len(values)} "
                                             "fields")
                return cls(*values)
            return self.script_object(cls, content, depth)
        return super().decode_other(tag, payload, depth)

    def script_object(self, cls: type, attributes: object, depth: int) -> object:
        t = ClassType.for_class(cls)
        instance = object.__new__(cls)
        for name, encoded in _payload_dict(attributes).items():
            declared = t.attributes.get(name)
            value = self.decode(encoded, depth + 1)
            if declared is None or not value_matches(value, declared):
                raise SerializationError(f"corrupt archive: attribute {name!r:.80} of a "
                                         f"{cls.__qualname__} is not declared or not a "
                                         f"{declared and declared.annotation}")
            vars(instance)[name] = value
        return instance

    def module(self, record: dict, depth: int = 0) -> Module:
        """The instance; the first instance of a class also describes its type (instances
        of one class share the loaded type, as they share the name in the graphs)."""
        t = self.module_types[record["class"]]
        instance = object.__new__(t.py_class)
        describe = t not in self.attribute_names
        names = self.attribute_names.setdefault(t, set())   # (constants are compiled in)
        for name in [*record["attributes"], *record["constants"]]:
            if not is_identifier(name) or name in vars(instance):
                raise SerializationError(f"corrupt archive: attribute name {name!r:.80} of "
                                         f"{t.py_class.__qualname__} is not an identifier "
                                         "or is given twice")
            vars(instance)[name] = None
        for name, entry in record["attributes"].items():
            names.add(name)
            vars(instance)[name] = value = self.decode(entry["value"], depth + 1)
            if "type" not in entry and not isinstance(value, (ModuleList, ModuleDict)):
                raise SerializationError(f"corrupt archive: attribute '{name}' of "
                                         f"{t.py_class.__qualname__} has no type")
            if describe and "type" in entry:
                t.attributes[name] = parse_type(_string(entry["type"]), self.names.resolve,
                                                self.class_types)
            if name in t.attributes and not value_matches(value, t.attributes[name]):
                raise SerializationError(f"corrupt archive: attribute '{name}' of "
                                         f"{t.py_class.__qualname__} is not a "
                                         f"{t.attributes[name].annotation}")
        for name, encoded in record["constants"].items():
            vars(instance)[name] = value = self.decode(encoded, depth + 1)
            if describe:
                t.constants[name] = value
        return instance

    # ---- graphs
    def compiled(self, record: dict) -> CompiledCallable:
        """A function or method: its graph, under the rules of saved code (`loadable.py`)
        and within the archive's size budget, and its signature."""
        path = record["graph"]
        text = self.graphs.pop(path) if path in self.graphs else self.reader.text(path)
        class_types = self.class_types
        graph = parse_ir(text, self.names.resolve, class_types, self.rules)
        verify(graph)
        check_loaded_graph(graph, self.attribute_names, self.class_variables)
        params, types = [], []
        for entry in record["params"]:
            name = entry["name"]
            if not is_identifier(name) or name in (p.name for p in params):
                raise SerializationError(f"corrupt archive: parameter name {name!r:.80} is "
                                         "not an identifier or is repeated")
            t = parse_type(_string(entry["type"]), self.names.resolve, class_types)
            default = self.decode(entry["default"]) if "default" in entry else NO_DEFAULT
            if default is not NO_DEFAULT and not value_has_type(default, t):
                raise SerializationError(f"corrupt archive: the default of parameter '{name}' "
                                         f"is not a {t.annotation}")
            kwonly = entry.get("kwonly", False)
            if not isinstance(kwonly, bool):
                raise SerializationError(f"corrupt archive: 'kwonly' of parameter '{name}' is "
                                         "not a bool")
            params.append(Param(name, default, kwonly=kwonly))
            types.append((name, t))
        return_type = parse_type(_string(record["return_type"]), self.names.resolve,
                                 class_types)
        _check_signature(_dotted_name(record["name"], "function"), types, return_type, graph)
        return CompiledCallable(record["name"], tuple(params), types, return_type, graph)


def _program_classes(records: dict, digest: str, offered: bool | dict[str, type]
                     ) -> dict[str, type] | None:
    """The program's own classes for `records` (those `offered`, else found in modules
    already imported; nothing is imported), if this process has every one and they save
    as exactly these records (same fields, members, attribute types, method graphs):
    then code unpickled into the program that pickled it (a pool's forked or spawned
    worker, a round trip) takes and returns the program's instances as the original
    code does.  None when one is missing or differs: the records are rebuilt, as
    `tsjit.load` always does."""
    found = {}
    for name, record in records.items():
        cls = offered.get(name) if isinstance(offered, dict) else None
        cls = cls or class_records.program_class(record["module"], record["qualname"],
                                                 record["kind"])
        if cls is None or qualified_name(cls) != name:
            return None
        found[name] = cls
    encoder = _Encoder()
    try:
        for cls in found.values():
            encoder.add_class(cls, "the program's class")
    except SerializationError:
        return None
    graphs = {m["graph"]: encoder.texts[m["graph"]] for r in encoder.records.values()
              if r["kind"] == "class" for m in r["methods"].values()}
    if encoder.records.keys() != records.keys() or \
            record_digest(encoder.records, graphs) != digest:
        return None
    return found


def _loaded_class(module: object, qualname: object) -> type:
    """A stand-in for the saved module's class: same names (so the graphs print as they
    did), no code of its own (the methods are the compiled graphs)."""
    for name in (module, qualname):
        _dotted_name(name, "class")
    return type(qualname.rpartition(".")[2], (Module,),
                {"__module__": _string(module), "__qualname__": qualname,
                 "__doc__": "A module class loaded by tsjit.load."})


def _dotted_name(name: object, what: str) -> str:
    """A qualified name as Python gives them (`Net.forward`, `make.<locals>.f`): it
    becomes labels, `__qualname__`s and the name of generated functions."""
    if not all(part.isidentifier() and unicodedata.normalize("NFKC", part) == part
               or part in ("<locals>", "<lambda>") for part in _string(name).split(".")):
        raise SerializationError(f"corrupt archive: {what} name {name!r:.80} is not a "
                                 "dotted name")
    return name


def _string(value: object) -> str:
    if type(value) is not str:
        raise SerializationError(f"corrupt archive: {value!r:.80} is not a string")
    return value


def _payload_list(value: object) -> list:
    if type(value) is not list:
        raise SerializationError(f"corrupt archive: {value!r:.80} is not a list")
    return value


def _payload_dict(value: object) -> dict:
    if type(value) is not dict:
        raise SerializationError(f"corrupt archive: {value!r:.80} is not a mapping")
    return value


def _doc(record: dict) -> str | None:
    doc = record["doc"]
    return None if doc is None else _string(doc)


def _check_signature(name: str, param_types: list[tuple[str, Type]], return_type: Type,
                     graph: Graph) -> None:
    """The manifest's signature is what the argument checks enforce and the graph assumes
    of its inputs: an edited one must not load into a function that runs ill-typed values."""
    if [t for _, t in param_types] != [v.type for v in graph.inputs] or not all(
            is_subtype(v.type, return_type) for v in graph.outputs):
        raise SerializationError(f"corrupt archive: the signature of '{name}' does not match "
                                 "its graph")
