"""Saving script functions and modules, and loading them in another process.

As with `torch.jit.save`, the file holds the compiled program, not its source: the
graph of each function or method (the unoptimized `.graph`: the loading process
profiles and specializes it again for its own inputs and machine), the schemas, and a
module's attribute values.  A loaded module is an instance of a class made at load
time with the saved class's name, carrying the saved attributes; the loading process
never imports the program that saved it.

Loading runs no code of the file's: everything saved is plain data, registry ops and
the few objects `loadable.py` allows, found again by name without importing anything.
A graph that refers to the program's own code (a script class, a @tsjit.ignore'd
function, a user-defined exception or enum) cannot be saved: `save` applies the
loader's rules, raises and names the object, rather than write a file that loads into
something else or not at all.  The archive's layout is in `archive.py`.
"""
from __future__ import annotations

import difflib
import re
import unicodedata

from ..frontend.compiler import CompiledCallable
from ..interpreter.helpers import value_matches
from ..ir.graph import Graph
from ..ir.parser import IRParseError, parse_ir, parse_type
from ..ir.printer import print_graph
from ..ir.types import ClassType, Type, is_subtype
from ..ir.verifier import IRVerificationError, verify
from ..ops.registry import NO_DEFAULT, Param
from .archive import (
    ArchiveReader,
    PathOrFile,
    SerializationError,
    ValueDecoder,
    ValueEncoder,
    write_archive,
)
from .argument_check import value_has_type
from .loadable import SavedCodeRules, allowed_object, check_loaded_graph, is_identifier
from .module import Module, ModuleDict, ModuleList
from .script_function import ScriptFunction, ScriptMethod, ScriptModule

# A class type in graph text (`__tsjit__.pkg.Net`), not an enum (`Enum<__tsjit__.pkg.E>`).
_CLASS_TYPE = re.compile(r"(?<!Enum<)__tsjit__\.([\w.<>]+)")


# ---- saving

def save(obj: ScriptFunction | ScriptModule, target: PathOrFile) -> None:
    """Write a script function or module to `target` (a path or a binary file)."""
    if isinstance(obj, ScriptMethod):
        raise SerializationError(f"'{obj.name}' is a method of a scripted module: save the "
                                 "module")
    encoder = _ModuleEncoder()
    texts: dict[str, str] = {}
    if isinstance(obj, ScriptFunction):
        record = _function_record(obj, "function", encoder, texts, {})
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
            "methods": {name: _function_record(m, name, encoder, texts, encoder.types)
                        for name, m in methods.items()},
        }
    else:
        raise TypeError(f"tsjit.save expects a ScriptFunction or ScriptModule, not "
                        f"{type(obj).__name__}")
    write_archive(target, manifest, texts, encoder.arrays)


class _ModuleEncoder(ValueEncoder):
    """Also writes modules: their typed attributes, constants and module containers."""

    def __init__(self) -> None:
        super().__init__()
        self.types: dict[str, ClassType] = {}
        self.rules = SavedCodeRules()     # what load will check, over the whole archive

    def encode_other(self, value: object, where: str) -> list:
        if isinstance(value, ModuleList):
            return ["module_list", [self.module(m, f"{where}[{i}]") for i, m in enumerate(value)]]
        if isinstance(value, ModuleDict):
            return ["module_dict", [[k, self.module(m, f"{where}[{k!r}]")]
                                    for k, m in value.items()]]
        if isinstance(value, Module):
            return ["module", self.module(value, where)]
        return super().encode_other(value, where)

    def module(self, instance: Module, where: str, t: ClassType | None = None) -> dict:
        t = t or _module_type(instance)
        self.types.setdefault(t.name, t)
        attributes = {}
        for name, declared in t.attributes.items():
            attributes[name] = {"type": str(declared),
                                "value": self.encode(getattr(instance, name), f"{where}.{name}")}
        for name, value in vars(instance).items():
            if isinstance(value, (ModuleList, ModuleDict)) and not name.startswith("_"):
                attributes[name] = {"value": self.encode(value, f"{where}.{name}")}
        constants = {name: self.encode(value, f"{where}.{name}")
                     for name, value in t.constants.items()}
        return {"class": t.name, "attributes": attributes, "constants": constants}


def _module_type(instance: Module) -> ClassType:
    """The type the compiler gave a submodule (a container's items have no attribute
    type in their parent's type)."""
    from .script import _compiler
    return _compiler.module_type_of(instance)


def _function_record(function: ScriptFunction, key: str, encoder: _ModuleEncoder,
                     texts: dict[str, str], class_types: dict[str, ClassType]) -> dict:
    compiled = function.compiled
    path = f"code/{key}.ir"
    texts[path] = _portable_graph_text(compiled, class_types, encoder.rules)
    params = []
    for param, (name, t) in zip(compiled.params, compiled.param_types):
        entry = {"name": name, "type": _portable_type_text(t, compiled.name, class_types)}
        if param.default is not NO_DEFAULT:
            entry["default"] = encoder.encode(param.default,
                                              f"the default of '{name}' of '{compiled.name}'")
        params.append(entry)
    return {"name": compiled.name, "doc": function.__doc__, "params": params,
            "return_type": _portable_type_text(compiled.return_type, compiled.name, class_types),
            "graph": path}


def _portable_graph_text(compiled: CompiledCallable, class_types: dict[str, ClassType],
                         rules: SavedCodeRules) -> str:
    """The graph's text, once it is known to load back as the same graph without the
    program's code: every class it names is one of the saved modules' types, it passes
    the loader's rules (ops, attributes, allowed objects), and reading the text gives
    the text again."""
    text = print_graph(compiled.graph)
    _check_class_names(text, compiled.name, class_types)
    try:
        reread = print_graph(_parse_graph(text, class_types, rules))
    except IRParseError as e:
        raise SerializationError(f"cannot save '{compiled.name}': {e}") from None
    if reread != text:
        changed = next(line for line in difflib.ndiff(text.splitlines(), reread.splitlines())
                       if line.startswith("- "))
        raise SerializationError(f"cannot save '{compiled.name}': this line of its graph has "
                                 f"a constant with no text form that loads back as it was:\n"
                                 f"  {changed[2:].strip()}")
    return text


def _portable_type_text(t: Type, owner: str, class_types: dict[str, ClassType]) -> str:
    text = str(t)
    _check_class_names(text, owner, class_types)
    try:
        parse_type(text, allowed_object, class_types)
    except IRParseError as e:
        raise SerializationError(f"cannot save '{owner}': its type {t.annotation}: {e}") \
            from None
    return text


def _check_class_names(text: str, owner: str, class_types: dict[str, ClassType]) -> None:
    for name in _CLASS_TYPE.findall(text):
        if name not in class_types:
            raise SerializationError(
                f"cannot save '{owner}': it uses script class '{name}', a class of the "
                "program's own code (only modules and their submodules are saved)")


# ---- loading

def load(source: PathOrFile) -> ScriptFunction | ScriptModule:
    """The script function or module saved in `source` (a path or a binary file).

    Loading runs no code of the file's (see `loadable.py`); a file that is not an
    archive tsjit wrote, or was edited into one that breaks the rules, raises
    SerializationError."""
    with ArchiveReader(source) as reader:
        manifest = reader.manifest
        try:
            if manifest["kind"] == "function":
                record = manifest["function"]
                function = ScriptFunction(_compiled(record, reader, ValueDecoder(reader), {}, {},
                                                    SavedCodeRules()), None)
                function.__doc__ = _doc(record)
                return function
            if manifest["kind"] == "module":
                return _load_module(reader)
            raise SerializationError(f"corrupt archive: unknown kind {manifest['kind']!r:.40}")
        except (KeyError, TypeError, ValueError, LookupError, AttributeError, RecursionError,
                IRParseError, IRVerificationError) as e:
            raise SerializationError(f"corrupt archive: {type(e).__name__}: {e}") from None


def _load_module(reader: ArchiveReader) -> ScriptModule:
    manifest = reader.manifest
    class_types = {_string(name): ClassType(_loaded_class(entry["module"], entry["qualname"]),
                                            is_module=True)
                   for name, entry in manifest["types"].items()}
    decoder = _ModuleDecoder(reader, class_types)
    instance = decoder.module(manifest["root"])
    if "forward" not in manifest["methods"]:
        raise SerializationError("corrupt archive: the module has no forward method")
    methods = {}
    rules = SavedCodeRules()
    for name, record in manifest["methods"].items():
        compiled = _compiled(record, reader, decoder, class_types, decoder.names, rules)
        methods[name] = ScriptMethod(compiled, None, instance)
        methods[name].__doc__ = _doc(record)
    return ScriptModule(instance, methods)


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


def _doc(record: dict) -> str | None:
    doc = record["doc"]
    return None if doc is None else _string(doc)


class _ModuleDecoder(ValueDecoder):
    def __init__(self, reader: ArchiveReader, class_types: dict[str, ClassType]) -> None:
        super().__init__(reader)
        self.class_types = class_types
        self.names: dict[ClassType, set[str]] = {}   # the attributes each class's records have

    def decode_other(self, tag: str, payload: object, depth: int) -> object:
        if tag == "module":
            return self.module(payload, depth + 1)
        if tag == "module_list" and type(payload) is list:
            return ModuleList(self.module(record, depth + 1) for record in payload)
        if tag == "module_dict" and type(payload) is list:
            return ModuleDict({_string(key): self.module(record, depth + 1)
                               for key, record in payload})
        return super().decode_other(tag, payload, depth)

    def module(self, record: dict, depth: int = 0) -> Module:
        """The instance; the first instance of a class also describes its type (instances
        of one class share the loaded type, as they share the name in the graphs)."""
        t = self.class_types[record["class"]]
        instance = object.__new__(t.py_class)
        describe = t not in self.names
        names = self.names.setdefault(t, set())
        for name in [*record["attributes"], *record["constants"]]:
            if not is_identifier(name):
                raise SerializationError(f"corrupt archive: attribute name {name!r:.80} of "
                                         f"{t.py_class.__qualname__} is not an identifier")
            names.add(name)
        for name, entry in record["attributes"].items():
            vars(instance)[name] = value = self.decode(entry["value"], depth + 1)
            if describe and "type" in entry:
                t.attributes[name] = parse_type(_string(entry["type"]), allowed_object,
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


def _parse_graph(text: str, class_types: dict[str, ClassType], rules: SavedCodeRules) -> Graph:
    """The graph of saved code: registry ops with their own attributes, allowed objects,
    the archive's classes (see `loadable.py`), within the archive's size budget."""
    return parse_ir(text, allowed_object, class_types, rules)


def _compiled(record: dict, reader: ArchiveReader, decoder: ValueDecoder,
              class_types: dict[str, ClassType],
              attribute_names: dict[ClassType, set[str]],
              rules: SavedCodeRules) -> CompiledCallable:
    graph = _parse_graph(reader.text(record["graph"]), class_types, rules)
    verify(graph)
    check_loaded_graph(graph, attribute_names)
    params, types = [], []
    for entry in record["params"]:
        name = entry["name"]
        if not is_identifier(name) or name in (p.name for p in params):
            raise SerializationError(f"corrupt archive: parameter name {name!r:.80} is not "
                                     "an identifier or is repeated")
        t = parse_type(_string(entry["type"]), allowed_object, class_types)
        default = decoder.decode(entry["default"]) if "default" in entry else NO_DEFAULT
        if default is not NO_DEFAULT and not value_has_type(default, t):
            raise SerializationError(f"corrupt archive: the default of parameter '{name}' "
                                     f"is not a {t.annotation}")
        params.append(Param(name, default))
        types.append((name, t))
    return_type = parse_type(_string(record["return_type"]), allowed_object, class_types)
    _check_signature(_dotted_name(record["name"], "function"), types, return_type, graph)
    return CompiledCallable(record["name"], tuple(params), types, return_type, graph)


def _check_signature(name: str, param_types: list[tuple[str, Type]], return_type: Type,
                     graph: Graph) -> None:
    """The manifest's signature is what the argument checks enforce and the graph assumes
    of its inputs: an edited one must not load into a function that runs ill-typed values."""
    if [t for _, t in param_types] != [v.type for v in graph.inputs] or not all(
            is_subtype(v.type, return_type) for v in graph.outputs):
        raise SerializationError(f"corrupt archive: the signature of '{name}' does not match "
                                 "its graph")
