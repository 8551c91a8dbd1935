"""Saving script functions and modules, and loading them in another process.

As with `torch.jit.save`, the file holds the compiled program, not its source: the
graph of each function or method (the unoptimized `.graph`: the loading process
profiles and specializes it again for its own inputs and machine), the schemas, and a
module's attribute values.  A loaded module is an instance of a class made at load
time with the saved class's name, carrying the saved attributes; the loading process
never imports the program that saved it.

So everything saved must be plain data or an object of the standard library, NumPy or
tsjit, found again by name.  A graph that refers to the program's own code (a script
class, a @tsjit.ignore'd function, a user-defined exception or enum) cannot be saved:
`save` raises and names the object, rather than write a file that loads into
something else.  The archive's layout is in `archive.py`.
"""
from __future__ import annotations

import difflib
import re
import sys

from ..frontend.compiler import CompiledCallable
from ..interpreter.helpers import value_matches
from ..ir.graph import Graph
from ..ir.parser import IRParseError, import_object, parse_ir, parse_type
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
from .module import Module, ModuleDict, ModuleList
from .script_function import ScriptFunction, ScriptMethod, ScriptModule

# Besides the standard library, the packages every process that runs tsjit code has.
PORTABLE_PACKAGES = frozenset({"numpy", "tsjit"})

# A class type in graph text (`__tsjit__.pkg.Net`), not an enum (`Enum<__tsjit__.pkg.E>`).
_CLASS_TYPE = re.compile(r"(?<!Enum<)__tsjit__\.([\w.<>]+)")


def portable_object(qualified_name: str) -> object:
    """The object a graph names as `module.qualname`, if a fresh process can import it."""
    package = qualified_name.partition(".")[0]
    if package not in sys.stdlib_module_names and package not in PORTABLE_PACKAGES:
        raise SerializationError(
            f"'{qualified_name}' belongs to the program's own code (module '{package}'), not "
            "to the standard library, NumPy or tsjit: script classes, @tsjit.ignore'd "
            "functions and other objects of the program cannot be saved, since the process "
            "that loads the file need not have them")
    return import_object(qualified_name)


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


def _function_record(function: ScriptFunction, key: str, encoder: ValueEncoder,
                     texts: dict[str, str], class_types: dict[str, ClassType]) -> dict:
    compiled = function.compiled
    path = f"code/{key}.ir"
    texts[path] = _portable_graph_text(compiled, class_types)
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


def _portable_graph_text(compiled: CompiledCallable, class_types: dict[str, ClassType]) -> str:
    """The graph's text, once it is known to load back as the same graph without the
    program's code: every class it names is one of the saved modules' types, every
    object it names is importable, and reading the text gives the text again."""
    text = print_graph(compiled.graph)
    _check_class_names(text, compiled.name, class_types)
    try:
        reread = print_graph(parse_ir(text, portable_object, class_types))
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
        parse_type(text, portable_object, class_types)
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

    The file is a program: load files you trust, as you would import code."""
    reader = ArchiveReader(source)
    manifest = reader.manifest
    try:
        if manifest["kind"] == "function":
            decoder = ValueDecoder(reader.arrays)
            record = manifest["function"]
            function = ScriptFunction(_compiled(record, reader, decoder, {}), None)
            function.__doc__ = record["doc"]
            return function
        if manifest["kind"] == "module":
            return _load_module(reader)
        raise SerializationError(f"corrupt archive: unknown kind {manifest['kind']!r}")
    except (KeyError, TypeError, ValueError, LookupError, AttributeError, RecursionError,
            IRParseError, IRVerificationError) as e:
        raise SerializationError(f"corrupt archive: {type(e).__name__}: {e}") from None


def _load_module(reader: ArchiveReader) -> ScriptModule:
    manifest = reader.manifest
    class_types = {name: ClassType(_loaded_class(entry["module"], entry["qualname"]),
                                   is_module=True)
                   for name, entry in manifest["types"].items()}
    decoder = _ModuleDecoder(reader.arrays, class_types)
    instance = decoder.module(manifest["root"])
    if "forward" not in manifest["methods"]:
        raise SerializationError("corrupt archive: the module has no forward method")
    methods = {}
    for name, record in manifest["methods"].items():
        methods[name] = ScriptMethod(_compiled(record, reader, decoder, class_types), None,
                                     instance)
        methods[name].__doc__ = record["doc"]
    return ScriptModule(instance, methods)


def _loaded_class(module: str, qualname: str) -> type:
    """A stand-in for the saved module's class: same names (so the graphs print as they
    did), no code of its own (the methods are the compiled graphs)."""
    return type(qualname.rpartition(".")[2], (Module,),
                {"__module__": module, "__qualname__": qualname,
                 "__doc__": "A module class loaded by tsjit.load."})


class _ModuleDecoder(ValueDecoder):
    def __init__(self, arrays, class_types: dict[str, ClassType]) -> None:
        super().__init__(arrays)
        self.class_types = class_types
        self.described: set[ClassType] = set()

    def decode_other(self, tag: str, payload: list) -> object:
        if tag == "module":
            return self.module(payload[0])
        if tag == "module_list":
            return ModuleList(self.module(record) for record in payload[0])
        if tag == "module_dict":
            return ModuleDict({key: self.module(record) for key, record in payload[0]})
        return super().decode_other(tag, payload)

    def module(self, record: dict) -> Module:
        """The instance; the first instance of a class also describes its type (instances
        of one class share the loaded type, as they share the name in the graphs)."""
        t = self.class_types[record["class"]]
        instance = object.__new__(t.py_class)
        describe = t not in self.described
        self.described.add(t)
        for name, entry in record["attributes"].items():
            vars(instance)[name] = value = self.decode(entry["value"])
            if describe and "type" in entry:
                t.attributes[name] = parse_type(entry["type"], portable_object, self.class_types)
            if name in t.attributes and not value_matches(value, t.attributes[name]):
                raise SerializationError(f"corrupt archive: attribute '{name}' of "
                                         f"{t.py_class.__qualname__} is not a "
                                         f"{t.attributes[name].annotation}")
        for name, encoded in record["constants"].items():
            vars(instance)[name] = value = self.decode(encoded)
            if describe:
                t.constants[name] = value
        return instance


def _compiled(record: dict, reader: ArchiveReader, decoder: ValueDecoder,
              class_types: dict[str, ClassType]) -> CompiledCallable:
    graph: Graph = parse_ir(reader.text(record["graph"]), portable_object, class_types)
    verify(graph)
    for node in graph.block.walk():
        if node.kind == "prim::PythonOp":   # save refuses them: only an edited file has one
            raise SerializationError(f"'{record['name']}' calls Python "
                                     f"({node.attrs.get('fn')!r}), which saved code never does")
    params, types = [], []
    for entry in record["params"]:
        default = decoder.decode(entry["default"]) if "default" in entry else NO_DEFAULT
        params.append(Param(entry["name"], default))
        types.append((entry["name"], parse_type(entry["type"], portable_object, class_types)))
    return_type = parse_type(record["return_type"], portable_object, class_types)
    _check_signature(record["name"], types, return_type, graph)
    return CompiledCallable(record["name"], tuple(params), types, return_type, graph)


def _check_signature(name: str, param_types: list[tuple[str, Type]], return_type: Type,
                     graph: Graph) -> None:
    """The manifest's signature is what the argument checks enforce and the graph assumes
    of its inputs: an edited one must not load into a function that runs ill-typed values."""
    if type(name) is not str or any(type(p) is not str for p, _ in param_types):
        raise SerializationError(f"corrupt archive: function name {name!r} or one of its "
                                 "parameter names is not a string")
    if [t for _, t in param_types] != [v.type for v in graph.inputs] or not all(
            is_subtype(v.type, return_type) for v in graph.outputs):
        raise SerializationError(f"corrupt archive: the signature of '{name}' does not match "
                                 "its graph")
