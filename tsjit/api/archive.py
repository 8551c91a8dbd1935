"""The file format of saved script code: a zip archive of a JSON manifest, IR text and arrays.

    manifest.json   {"format": "tsjit-archive", "version": 1, "kind": ..., ...}
    code/<name>.ir  the graph of each function or method, in the IR text form
    data.npz        every NumPy array and scalar the manifest refers to (no pickles)

Values (module attributes, default arguments) are written as tagged JSON, `[tag,
payload]`, so that each loads back as the same Python type it was saved as: a tuple
stays a tuple, a float64 scalar stays a NumPy scalar, a bool is not an int.  Only plain
data is written: the loading process must not need any of the saving program's code.

Loading reads only what the manifest refers to, each member once, within limits
(MAX_TEXT_BYTES for the manifest and for each graph, MAX_GRAPH_BYTES for all graphs
together, MAX_TOTAL_BYTES in all, MAX_NESTING levels of values), and checks every size a
member or an array header claims against the bytes actually there, so a crafted file
costs no more memory than its limits and raises `SerializationError`, never another
error.  Text gets the tight limits because it grows when it is read: JSON becomes Python
objects worth up to ~25 times its bytes (graphs are bounded by their element count, see
`loadable.py`), while an array's bytes are its size.  Writing is deterministic (fixed
timestamps): the same program saves to the same bytes, which pickling uses as a content
hash.
"""
from __future__ import annotations

import io
import json
import math
import os
import zipfile
import zlib
from typing import IO, Any

import numpy as np

FORMAT = "tsjit-archive"
VERSION = 2     # 2: the manifest may hold "classes" (see class_records.py); else 1 is written

MANIFEST = "manifest.json"
ARRAYS = "data.npz"

MAX_TEXT_BYTES = 16 << 20       # the manifest, and each graph's text
MAX_GRAPH_BYTES = 16 << 20      # all graphs' text together
MAX_TOTAL_BYTES = 4 << 30       # everything read from one archive, arrays included
MAX_NESTING = 100               # lists in lists (values, JSON) in the manifest
MAX_MEMBERS = 10_000            # zip entries (zipfile builds an object for each at once)
MAX_EMPTY_ELEMENTS = 1 << 20    # elements of an array whose dtype has no bytes (`[]`)

PathOrFile = str | os.PathLike[str] | IO[bytes]

# What reading a malformed zip, npy or text member raises (zipfile and numpy raise all of
# these for crafted input); each becomes a SerializationError.
_MALFORMED = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError,
              ValueError, NotImplementedError, RuntimeError, UnicodeDecodeError, KeyError,
              OverflowError, TypeError)
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)


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
        if type(value) in (bool, int, float, str):     # not their subclasses (enums, NumPy)
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
    """The inverse of ValueEncoder, over the archive's arrays (read when first used).
    Each tag's payload must have the type the encoder writes; anything else is a
    corrupt archive."""

    def __init__(self, reader: ArchiveReader) -> None:
        self.reader = reader

    def decode(self, encoded: object, depth: int = 0) -> object:
        if depth > MAX_NESTING:
            raise SerializationError(f"corrupt archive: values nested more than "
                                     f"{MAX_NESTING} levels deep")
        if type(encoded) is not list or not encoded or type(encoded[0]) is not str:
            raise SerializationError(f"corrupt archive: {encoded!r:.80} is not a value")
        tag, *payload = encoded
        if tag == "none" and not payload:
            return None
        if len(payload) != 1:
            raise SerializationError(f"corrupt archive: value {encoded!r:.80} is malformed")
        (item,) = payload
        plain = {"bool": bool, "int": int, "float": float, "str": str}.get(tag)
        if plain is not None:
            return _payload(item, plain)
        if tag == "array":
            return self.reader.array(_payload(item, str))
        if tag == "scalar":
            value = self.reader.array(_payload(item, str))
            if value.ndim != 0:
                raise SerializationError(f"corrupt archive: scalar {item!r} is an array")
            return value[()]
        if tag in ("dtype", "scalar_type"):
            dtype = _dtype(_payload(item, str))
            return dtype if tag == "dtype" else dtype.type
        if tag in ("list", "tuple"):
            items = [self.decode(v, depth + 1) for v in _payload(item, list)]
            return items if tag == "list" else tuple(items)
        if tag == "dict":
            pairs = [_payload(pair, list) for pair in _payload(item, list)]
            if any(len(pair) != 2 for pair in pairs):
                raise SerializationError("corrupt archive: a dict entry is not a key and value")
            keys = [self.decode(k, depth + 1) for k, _ in pairs]
            if not all(isinstance(k, (str, int, float, bool)) for k in keys):
                raise SerializationError("corrupt archive: a dict key is not a str or number")
            return {k: self.decode(v, depth + 1) for k, (_, v) in zip(keys, pairs)}
        return self.decode_other(tag, item, depth)

    def decode_other(self, tag: str, payload: object, depth: int) -> object:
        raise SerializationError(f"corrupt archive: unknown value tag {tag!r:.40}")


def _payload(value: object, kind: type) -> Any:
    if type(value) is not kind:
        raise SerializationError(f"corrupt archive: {value!r:.80} is not a {kind.__name__}")
    return value


def _dtype(name: str) -> np.dtype:
    try:
        dtype = np.dtype(name)
    except _MALFORMED:
        raise SerializationError(f"corrupt archive: {name!r:.40} is not a NumPy dtype") from None
    if dtype.hasobject:
        raise SerializationError(f"corrupt archive: dtype {name!r} holds Python objects")
    return dtype


def _zip_info(name: str, compression: int = zipfile.ZIP_DEFLATED) -> zipfile.ZipInfo:
    """A member whose bytes depend on its content only (no time stamp)."""
    info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
    info.compress_type = compression
    info.external_attr = 0o644 << 16
    return info


def write_archive(target: PathOrFile, manifest: dict, texts: dict[str, str],
                  arrays: dict[str, np.ndarray]) -> None:
    """Write the whole archive; the manifest gets the format and version stamped in."""
    manifest = {"format": FORMAT, "version": VERSION if "classes" in manifest else 1,
                **manifest}
    npz = io.BytesIO()      # as np.savez writes it (a stored zip of .npy files)
    with zipfile.ZipFile(npz, "w", zipfile.ZIP_STORED) as inner:
        for key, array in arrays.items():
            data = io.BytesIO()
            np.lib.format.write_array(data, array, allow_pickle=False)
            inner.writestr(_zip_info(f"{key}.npy", zipfile.ZIP_STORED), data.getvalue())
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(_zip_info(MANIFEST), json.dumps(manifest, indent=1))
        for name, text in texts.items():
            archive.writestr(_zip_info(name), text)
        archive.writestr(_zip_info(ARRAYS), npz.getvalue())


class ArchiveReader:
    """An opened archive: the checked manifest; texts and arrays read when asked for.

    Use it as a context manager (it closes a file it opened)."""

    def __init__(self, source: PathOrFile) -> None:
        self.name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "<file>"
        self._file = open(source, "rb") if isinstance(source, (str, os.PathLike)) else None
        self._budget = MAX_TOTAL_BYTES
        self._graph_budget = MAX_GRAPH_BYTES
        self._read_members: set[str] = set()
        self._npz: zipfile.ZipFile | None = None
        self._arrays: dict[str, np.ndarray] = {}
        try:
            self._zip = self._guarded(_open_zip, self._file or source)
            manifest = self._guarded(json.loads, self._read(self._zip, MANIFEST, MAX_TEXT_BYTES))
        except SerializationError:
            self.close()
            raise
        self.manifest: dict[str, Any] = manifest
        self._check()

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def _guarded(self, read, *args):
        """`read(*args)`, any error of malformed input raised as SerializationError."""
        try:
            return read(*args)
        except SerializationError:
            raise
        except RecursionError:
            raise SerializationError(f"{self.name} is not a tsjit archive (nested too "
                                     "deeply)") from None
        except _MALFORMED as e:
            raise SerializationError(f"{self.name} is not a tsjit archive "
                                     f"({type(e).__name__}: {e})") from None

    def _read(self, archive: zipfile.ZipFile, name: str, limit: int) -> bytes:
        """Member `name`, refused if it is (or inflates to) more than `limit` bytes or more
        than is left of the archive's total."""
        try:
            info = archive.getinfo(name)
        except KeyError:
            raise SerializationError(f"{self.name} is not a tsjit archive ({name} is "
                                     "missing)") from None
        limit = min(limit, self._budget)
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) \
                or info.flag_bits & 0x1:
            raise SerializationError(f"{self.name}: {name} is encrypted or compressed "
                                     "in a way tsjit does not write")
        if info.file_size > limit:
            raise SerializationError(f"{self.name}: {name} is {info.file_size} bytes, over "
                                     f"the limit of {limit}")

        def read() -> bytes:
            with archive.open(info) as member:
                return member.read(limit + 1)
        data = self._guarded(read)
        if len(data) > limit:
            raise SerializationError(f"{self.name}: {name} inflates past the limit of "
                                     f"{limit} bytes")
        self._budget -= len(data)
        return data

    def _check(self) -> None:
        manifest = self.manifest
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise SerializationError(f"{self.name} is not a tsjit archive (no tsjit manifest)")
        version = manifest.get("version")
        if type(version) is not int or version > VERSION or version < 1:
            raise SerializationError(f"{self.name} has archive format version {version!r}; "
                                     f"this tsjit reads versions 1 to {VERSION}: load it "
                                     "with the tsjit that saved it")

    def text(self, name: object) -> str:
        """A graph's text (`code/<name>.ir`), each graph member once."""
        if type(name) is not str or not name.startswith("code/"):
            raise SerializationError(f"corrupt archive: {name!r:.80} is not a graph member")
        if name in self._read_members:
            raise SerializationError(f"corrupt archive: graph {name!r:.80} is used twice")
        self._read_members.add(name)
        data = self._read(self._zip, name, min(MAX_TEXT_BYTES, self._graph_budget))
        self._graph_budget -= len(data)
        return self._guarded(data.decode)

    def array(self, key: str) -> np.ndarray:
        """Array `key` of data.npz; the same object each time it is asked for."""
        array = self._arrays.get(key)
        if array is None:
            if self._npz is None:
                self._npz = self._guarded(_open_zip, io.BytesIO(
                    self._read(self._zip, ARRAYS, MAX_TOTAL_BYTES)))
            data = self._read(self._npz, f"{key}.npy", MAX_TOTAL_BYTES)
            array = self._arrays[key] = self._guarded(_npy_array, data, key)
        return array


def _open_zip(file: IO[bytes]) -> zipfile.ZipFile:
    """The zip in `file`, once its end record shows at most MAX_MEMBERS entries (a
    directory of millions of tiny entries would cost far more memory than the file)."""
    end = zipfile._EndRecData(file)     # the end record zipfile itself reads first
    if end is None:
        raise zipfile.BadZipFile("no zip end record")
    if end[zipfile._ECD_ENTRIES_TOTAL] > MAX_MEMBERS:
        raise SerializationError(f"the archive has {end[zipfile._ECD_ENTRIES_TOTAL]} "
                                 f"members, over the limit of {MAX_MEMBERS}")
    archive = zipfile.ZipFile(file)
    names = archive.namelist()
    if len(set(names)) != len(names):   # zipfile reads the last: other tools the first
        raise SerializationError("the archive has two members of one name")
    return archive


def _npy_array(data: bytes, key: str) -> np.ndarray:
    """The array an .npy file holds, built from its bytes (never np.load: the header's
    shape is checked against the data before anything is allocated)."""
    stream = io.BytesIO(data)
    version = np.lib.format.read_magic(stream)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f"npy format version {version}")
    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                   else np.lib.format.read_array_header_2_0)
    shape, fortran_order, dtype = read_header(stream)
    if dtype.hasobject or any(n < 0 for n in shape):
        raise ValueError(f"array {key} has dtype {dtype} or shape {shape}")
    size = math.prod(shape)
    if size > MAX_EMPTY_ELEMENTS and not dtype.itemsize:
        raise ValueError(f"array {key} claims {size} elements of {dtype}, which has no bytes "
                         "(numpy would spend time on each of them)")
    if size * dtype.itemsize != len(data) - stream.tell():
        raise ValueError(f"the header of array {key} claims {size} elements of {dtype}, "
                         f"the file holds {len(data) - stream.tell()} bytes")
    flat = np.frombuffer(data, dtype, size, stream.tell()) if size else np.empty(0, dtype)
    return flat.reshape(shape, order="F" if fortran_order else "C").copy(order="K")
