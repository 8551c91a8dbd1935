"""The file format of saved script code: a zip archive of a JSON manifest, IR text and arrays.

    manifest.json   {"format": "tsjit-archive", "version": 1, "kind": ..., ...}
    code/<name>.ir  the graph of each function or method, in the IR text form
    data.npz        every NumPy array and scalar the manifest refers to (no pickles)

Values (module attributes, default arguments) are written as tagged JSON, `[tag,
payload]`, so that each loads back as the same Python type it was saved as: a tuple
stays a tuple, a float64 scalar stays a NumPy scalar, a bool is not an int.  Only plain
data is written: the loading process must not need any of the saving program's code.
"""
from __future__ import annotations

import io
import json
import os
import zipfile
from typing import IO, Any

import numpy as np

FORMAT = "tsjit-archive"
VERSION = 1

MANIFEST = "manifest.json"
ARRAYS = "data.npz"

PathOrFile = str | os.PathLike[str] | IO[bytes]


class SerializationError(RuntimeError):
    """Something cannot be saved faithfully, or a file is not a loadable archive."""


class ValueEncoder:
    """Turns attribute values into tagged JSON; arrays go to `arrays` by key.  An array
    reached twice (one object shared by two attributes) is written once and loads back
    as one object, so writes through one name stay visible through the other."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.array_keys: dict[int, str] = {}

    def encode(self, value: object, where: str) -> list:
        if value is None:
            return ["none"]
        if isinstance(value, (bool, int, float, str)):
            return [type(value).__name__, value]
        if isinstance(value, (np.ndarray, np.generic)):
            return ["array" if isinstance(value, np.ndarray) else "scalar",
                    self.array_key(value, where)]
        if isinstance(value, np.dtype):
            return ["dtype", self.dtype_name(value, where)]
        if isinstance(value, type) and issubclass(value, np.generic):
            return ["scalar_type", self.dtype_name(np.dtype(value), where)]
        if type(value) in (list, tuple):
            return [type(value).__name__,
                    [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]]
        if type(value) is dict:
            return ["dict", [[self.encode(k, f"{where} (key)"), self.encode(v, f"{where}[{k!r}]")]
                             for k, v in value.items()]]
        return self.encode_other(value, where)

    def encode_other(self, value: object, where: str) -> list:
        raise SerializationError(f"cannot save {where}: a value of type "
                                 f"'{type(value).__qualname__}' has no saved form")

    def array_key(self, value: np.ndarray | np.generic, where: str) -> str:
        key = self.array_keys.get(id(value))
        if key is None:
            if value.dtype.hasobject:
                raise SerializationError(f"cannot save {where}: an array of Python objects")
            key = self.array_keys[id(value)] = f"a{len(self.arrays)}"
            self.arrays[key] = np.asarray(value)
        return key

    @staticmethod
    def dtype_name(dtype: np.dtype, where: str) -> str:
        if dtype.fields is not None or np.dtype(dtype.str) != dtype:
            raise SerializationError(f"cannot save {where}: dtype {dtype} has no saved form")
        return dtype.str


class ValueDecoder:
    """The inverse of ValueEncoder, over the archive's arrays."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.arrays = arrays

    def decode(self, encoded: list) -> object:
        tag, *payload = encoded
        if tag == "none":
            return None
        if tag in ("bool", "int", "float", "str"):
            return payload[0]
        if tag == "array":
            return self.arrays[payload[0]]
        if tag == "scalar":
            return self.arrays[payload[0]][()]
        if tag == "dtype":
            return np.dtype(payload[0])
        if tag == "scalar_type":
            return np.dtype(payload[0]).type
        if tag in ("list", "tuple"):
            items = [self.decode(v) for v in payload[0]]
            return items if tag == "list" else tuple(items)
        if tag == "dict":
            return {self.decode(k): self.decode(v) for k, v in payload[0]}
        return self.decode_other(tag, payload)

    def decode_other(self, tag: str, payload: list) -> object:
        raise SerializationError(f"corrupt archive: unknown value tag {tag!r}")


def write_archive(target: PathOrFile, manifest: dict, texts: dict[str, str],
                  arrays: dict[str, np.ndarray]) -> None:
    """Write the whole archive; the manifest gets the format and version stamped in."""
    manifest = {"format": FORMAT, "version": VERSION, **manifest}
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MANIFEST, json.dumps(manifest, indent=1))
        for name, text in texts.items():
            archive.writestr(name, text)
        archive.writestr(ARRAYS, buffer.getvalue())


class ArchiveReader:
    """An opened archive: the checked manifest, its texts, its arrays."""

    def __init__(self, source: PathOrFile) -> None:
        name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "<file>"
        try:
            with zipfile.ZipFile(source) as archive:
                self.manifest: dict[str, Any] = json.loads(archive.read(MANIFEST))
                self._check(name)
                self.texts = {n: archive.read(n).decode() for n in archive.namelist()
                              if n.startswith("code/")}
                with np.load(io.BytesIO(archive.read(ARRAYS)), allow_pickle=False) as npz:
                    self.arrays = {k: npz[k] for k in npz.files}
        except (zipfile.BadZipFile, KeyError, ValueError, EOFError, RecursionError) as e:
            raise SerializationError(f"{name} is not a tsjit archive ({e})") from None

    def _check(self, name: str) -> None:
        manifest = self.manifest
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise SerializationError(f"{name} is not a tsjit archive (no tsjit manifest)")
        version = manifest.get("version")
        if type(version) is not int or version > VERSION or version < 1:
            raise SerializationError(f"{name} has archive format version {version!r}; this "
                                     f"tsjit reads versions 1 to {VERSION}: load it with the "
                                     "tsjit that saved it")

    def text(self, name: str) -> str:
        if name not in self.texts:
            raise SerializationError(f"corrupt archive: {name} is missing")
        return self.texts[name]
