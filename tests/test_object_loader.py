"""The runtime's object loader, which links kernels without LLVM: code it links runs as
the JIT's would (constants, the engine's symbol table, the process's libm), its pages are
never writable and executable at once, what it does not handle it refuses (the engine
then links with LLVM's JIT), and a malformed object is refused, never followed."""
from __future__ import annotations

import math
import random
import struct
import subprocess
import sys
import textwrap

import cffi
import pytest
from _subprocess import child_environment

from tsjit.codegen import object_loader
from tsjit.codegen.engine import JitEngine
from tsjit.codegen.llvm_jit import optimize_and_emit

pytestmark = pytest.mark.skipif(
    not object_loader.supported(), reason="no object loader on this platform (not ELF x86-64)")

_ffi = cffi.FFI()

# A constant-pool load, a call through the engine's table (the runtime's thread count),
# a call into libm (process symbol) and a call between two functions of the module.
_SOURCE = """
declare i32 @tsjit_get_num_threads()
declare double @cos(double)

define internal double @scaled(double %x) {
  %r = fmul double %x, 1.2345678901234567
  ret double %r
}

define double @tsjit_test_loader(double %x) {
  %t = call i32 @tsjit_get_num_threads()
  %tf = sitofp i32 %t to double
  %c = call double @cos(double %x)
  %s = call double @scaled(double %c)
  %r = fadd double %s, %tf
  ret double %r
}
"""


def _object(source: str = _SOURCE) -> bytes:
    return optimize_and_emit(source, "O3")[0]


def _mapping_of(address: int) -> str:
    with open("/proc/self/maps") as maps:
        for line in maps:
            span, permissions = line.split()[:2]
            start, end = (int(v, 16) for v in span.split("-"))
            if start <= address < end:
                return permissions
    raise AssertionError(f"{address:#x} is not mapped")


def _function(compiled):
    return _ffi.cast("double(*)(double)", compiled.addresses["tsjit_test_loader"])


def test_linked_code_computes_as_the_jits(tmp_path, monkeypatch):
    from tsjit import runtime

    loaded = JitEngine(cache_dir=tmp_path / "a").compile(_SOURCE, ["tsjit_test_loader"])
    assert isinstance(loaded._tracker, object_loader.LoadedObject)

    def refuse(obj, imports):
        raise object_loader.LoaderRefused("refused by the test")
    monkeypatch.setattr(object_loader, "load", refuse)   # the JIT links the same object
    jit = JitEngine(cache_dir=tmp_path / "a").compile(_SOURCE, ["tsjit_test_loader"])
    assert jit.from_disk_cache and not isinstance(jit._tracker, object_loader.LoadedObject)
    for x in (0.0, 0.5, -3.0, 1e10):
        want = math.cos(x) * 1.2345678901234567 + runtime.get_num_threads()
        assert _function(loaded)(x) == _function(jit)(x) == want


def test_the_pages_of_loaded_code_are_never_writable(tmp_path):
    compiled = JitEngine(cache_dir=tmp_path).compile(_SOURCE, ["tsjit_test_loader"])
    assert _mapping_of(compiled.addresses["tsjit_test_loader"]) == "r-xp"


# An external data symbol (a GOT load: REX_GOTPCRELX), a table of function addresses
# (absolute R_X86_64_64 relocations in writable .data.rel.ro) and an unwind table (not
# loaded).
_DATA_SOURCE = """
@environ = external global ptr
@table = internal constant [2 x ptr] [ptr @double_it, ptr @triple_it]

define internal i64 @double_it(i64 %x) noinline {
  %r = mul i64 %x, 2
  ret i64 %r
}
define internal i64 @triple_it(i64 %x) noinline {
  %r = mul i64 %x, 3
  ret i64 %r
}
define ptr @tsjit_test_environ() {
  ret ptr @environ
}
define i64 @tsjit_test_table(i64 %i, i64 %x) {
  %slot = getelementptr [2 x ptr], ptr @table, i64 0, i64 %i
  %f = load ptr, ptr %slot
  %r = call i64 %f(i64 %x)
  ret i64 %r
}
"""


def test_got_loads_and_absolute_addresses_in_data():
    import ctypes

    loaded = object_loader.load(_object(_DATA_SOURCE), {})
    environ = _ffi.cast("void *(*)(void)", loaded.address("tsjit_test_environ"))
    table = _ffi.cast("int64_t(*)(int64_t, int64_t)", loaded.address("tsjit_test_table"))
    want = ctypes.addressof(ctypes.c_void_p.in_dll(ctypes.CDLL(None), "environ"))
    assert int(_ffi.cast("uintptr_t", environ())) == want
    assert (table(0, 7), table(1, 7)) == (14, 21)


def _far_function(returns: int) -> int:
    """The address of a function returning ``returns``, mapped at 4-64 GiB: beyond a
    32-bit displacement from the loader's mappings (next to the shared libraries, near
    the top of the address space), so that a call to it goes through a jump stub."""
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    fixed_noreplace = 0x100000
    for gib in range(4, 64):
        address = libc.mmap(gib << 30, 4096, mmap.PROT_READ | mmap.PROT_WRITE,
                            mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | fixed_noreplace, -1, 0)
        if address == gib << 30:
            break
    else:
        raise AssertionError("no free page at 4-64 GiB")
    code = bytes([0x48, 0xC7, 0xC0]) + returns.to_bytes(4, "little") + bytes([0xC3])
    ctypes.memmove(address, code, len(code))           # mov rax, returns; ret
    assert libc.mprotect(ctypes.c_void_p(address), 4096, mmap.PROT_READ | mmap.PROT_EXEC) == 0
    return address


def test_a_call_out_of_reach_goes_through_a_stub():
    source = """
declare i64 @tsjit_test_far()
define i64 @tsjit_test_calls_far() {
  %r = call i64 @tsjit_test_far()
  %s = add i64 %r, 1
  ret i64 %s
}
"""
    far = _far_function(41)
    loaded = object_loader.load(_object(source), {"tsjit_test_far": far})
    entry = loaded.address("tsjit_test_calls_far")
    assert abs(entry - far) > 2**31
    assert _ffi.cast("int64_t(*)(void)", entry)() == 42


def test_an_unresolved_symbol_is_refused_with_its_name():
    source = """
declare i64 @tsjit_no_such_function(i64)
define i64 @tsjit_test_unresolved(i64 %x) {
  %r = call i64 @tsjit_no_such_function(i64 %x)
  ret i64 %r
}
"""
    with pytest.raises(object_loader.LoaderRefused, match="tsjit_no_such_function"):
        object_loader.load(_object(source), {})


def test_dropping_the_object_unmaps_its_code():
    loaded = object_loader.load(_object(), {"tsjit_get_num_threads": 0})
    address = loaded.address("tsjit_test_loader")
    assert _mapping_of(address) == "r-xp"
    del loaded
    with pytest.raises(AssertionError, match="not mapped"):
        _mapping_of(address)


def _section_headers(obj: bytes) -> tuple[int, int]:
    """(offset, count) of the section header table."""
    (offset,) = struct.unpack_from("<Q", obj, 0x28)
    (count,) = struct.unpack_from("<H", obj, 0x3C)
    return offset, count


def _malformed(obj: bytes) -> list[tuple[str, bytes]]:
    """Objects with their structure broken: truncations, header fields, section header
    fields pointing out of the file, and random bytes flipped in the section headers."""
    cases = [(f"truncated to {n}", obj[:n]) for n in range(0, len(obj), max(1, len(obj) // 40))]
    cases += [("empty", b""), ("not ELF", b"\x7fELG" + obj[4:]),
              ("32-bit", obj[:4] + b"\x01" + obj[5:]),
              ("big-endian", obj[:5] + b"\x02" + obj[6:]),
              ("shared object", obj[:0x10] + struct.pack("<H", 3) + obj[0x12:]),
              ("aarch64", obj[:0x12] + struct.pack("<H", 183) + obj[0x14:])]
    table, count = _section_headers(obj)
    for index in range(1, count):
        header = table + index * 64
        for field, width in ((0x18, 8), (0x20, 8), (0x28, 4), (0x2C, 4)):  # offset, size,
            for value in (2**(8 * width) - 1, 2**(8 * width - 1), len(obj)):  # link, info
                bad = bytearray(obj)
                bad[header + field:header + field + width] = value.to_bytes(width, "little")
                cases.append((f"section {index} field {field:#x} = {value:#x}", bytes(bad)))
    rng = random.Random(0)
    for trial in range(200):
        bad = bytearray(obj)
        for _ in range(4):
            bad[table + rng.randrange(count * 64)] = rng.randrange(256)
        cases.append((f"flipped section headers #{trial}", bytes(bad)))
    return cases


def test_malformed_objects_are_refused_not_followed():
    """A broken header or a truncated file is refused; a section header pointing out of
    the file or flipped at random is refused, or (a field the loader does not use, such
    as the link of a code section) loaded and unloaded: never followed out of the bytes,
    which would crash the process here."""
    obj = _object()
    for what, bad in _malformed(obj):
        try:
            loaded = object_loader.load(bad, {"tsjit_get_num_threads": 0})
        except object_loader.LoaderRefused as e:
            assert str(e), what
        else:
            assert not what.startswith(("truncated", "empty", "not ELF", "32-bit",
                                        "big-endian", "shared object", "aarch64")), what
            del loaded


UNLOAD_AFTER_THE_RUNTIME = textwrap.dedent("""
    import gc
    from tsjit import runtime
    from tsjit.codegen import object_loader
    from tsjit.codegen.llvm_jit import optimize_and_emit
    SOURCE = "define i64 @tsjit_test_unload(i64 %x) {\\n  ret i64 %x\\n}\\n"
    obj = object_loader.load(optimize_and_emit(SOURCE, "O3")[0], {})
    runtime._handle = None      # what the interpreter's shutdown does to the module
    gc.collect()
    del obj                     # unloads through the runtime's function
""")


def test_a_loaded_object_keeps_the_runtime_loaded(tmp_path):
    """The loader's unload is a runtime function: an object freed after the runtime's
    module was cleared (the interpreter's shutdown, in any order) must still find it
    (the process segfaulted at exit)."""
    done = subprocess.run([sys.executable, "-c", UNLOAD_AFTER_THE_RUNTIME], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False,
                          env=child_environment())
    assert done.returncode == 0, (done.returncode, done.stderr)
