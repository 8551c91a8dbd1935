"""The on-disk object cache: native code that a later process links instead of compiling.

An entry is code that a process will jump into, so nothing found in the directory is
trusted:
- The directory must belong to this user and be writable by nobody else. It is created
  0700 and opened once; every later access goes through that descriptor, so renaming or
  replacing the path afterwards changes nothing. A directory that fails the check is not
  used (one warning): anyone who may write there could plant code.
- An entry is one file: a header, the key material it was compiled for (the engine puts
  tsjit's generator fingerprint, the LLVM and llvmlite versions, the CPU name and features
  and the kernel's own key in it), the optimized IR and the object code, with a SHA-256
  digest over all of them. A reader checks the file (regular, ours, private, sane size),
  the digest, and that the stored key material is its own, before the object reaches the
  linker: flipped bits, a truncated file and another kernel's entry under this name are
  all rejected. The digest is an integrity check, not a signature; what keeps other users
  from writing entries is the directory check above.
- A rejected entry is deleted (one warning line, no traceback), so the kernel is compiled
  again and its entry rewritten by this process; later processes find the new one.
- Writes go to a fresh temporary file in the same directory, are fsynced and renamed over
  the entry: a reader sees the old entry, the new one or none, never part of one, whatever
  the number of processes sharing the directory.
"""
from __future__ import annotations

import hashlib
import logging
import os
import stat
import struct
import threading
import time
from pathlib import Path

from tsjit import forking

__all__ = ["DiskCache"]

log = logging.getLogger("tsjit.cache")

_MAGIC = b"TSJITOC2"
_LENGTHS = struct.Struct("<QQQ")  # key material, optimized IR, object code
_DIGEST_BYTES = hashlib.sha256().digest_size
_HEADER_BYTES = len(_MAGIC) + _DIGEST_BYTES + _LENGTHS.size
_ENTRY_SUFFIX = ".entry"
_TEMP_SUFFIX = ".tmp"
# No kernel object comes near this; a bigger file is not read into memory.
_MAX_ENTRY_BYTES = 64 << 20
# The cache is trimmed (oldest entries first) once per process when it outgrows this.
_MAX_CACHE_BYTES = 256 << 20
# A temporary file this old belongs to a writer that died before renaming it.
_STALE_TEMP_SECONDS = 3600


class _BadEntry(Exception):
    """An entry that must not be linked; the message says why."""


class DiskCache:
    """Entries of verified object code in one private directory (see the module docstring).
    Every failure to read or write only costs the cache: ``load`` then returns None and
    ``store`` does nothing."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = forking.lock()
        self._opened = False
        self._dir_fd: int | None = None
        self._trim_started = False

    def load(self, key_material: str) -> tuple[bytes, str] | None:
        """The object code and optimized IR stored for ``key_material``, or None when
        there is no valid entry (a bad one is deleted)."""
        dir_fd = self._directory_fd()
        if dir_fd is None:
            return None
        name = _entry_name(key_material)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        except OSError as e:  # a symlink (ELOOP) or something we may not read
            self._discard(dir_fd, name, None, f"cannot be opened ({e.strerror})")
            return None
        try:
            info = os.fstat(fd)
            try:
                data = _read_checked(fd, info)
                return _decode(data, key_material)
            except _BadEntry as e:
                self._discard(dir_fd, name, info, str(e))
                return None
        except OSError:
            return None
        finally:
            os.close(fd)

    def store(self, key_material: str, obj: bytes, optimized_ir: str) -> None:
        """Write the entry for ``key_material`` atomically (temporary file, fsync, rename)."""
        dir_fd = self._directory_fd()
        if dir_fd is None:
            return
        self._start_trim(dir_fd)
        name = _entry_name(key_material)
        temp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}{_TEMP_SUFFIX}"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_encode(key_material, optimized_ir.encode(), obj))
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError:
            _remove_quietly(dir_fd, temp)

    def _directory_fd(self) -> int | None:
        """The descriptor of the cache directory, opened (and created) on first use; None
        when the directory cannot be used."""
        if not self._opened:
            with self._lock:
                if not self._opened:
                    self._dir_fd = _open_private_directory(self.directory)
                    self._opened = True
        return self._dir_fd

    def _discard(self, dir_fd: int, name: str, info: os.stat_result | None,
                 reason: str) -> None:
        """Delete a bad entry, unless another process has meanwhile replaced it."""
        try:
            current = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if info is None or (current.st_ino, current.st_dev) == (info.st_ino, info.st_dev):
                os.unlink(name, dir_fd=dir_fd)
        except OSError:
            pass
        log.warning("disk cache %s: entry %s %s; removed, the kernel is compiled again",
                    self.directory, name, reason)

    def _start_trim(self, dir_fd: int) -> None:
        """Trim on a daemon thread, once per process: a scan of a big cache takes ~100 ms."""
        if self._trim_started:
            return
        self._trim_started = True
        threading.Thread(target=_trim, args=(dir_fd, _MAX_CACHE_BYTES), daemon=True,
                         name="tsjit-cache-trim").start()


def _entry_name(key_material: str) -> str:
    return hashlib.sha256(key_material.encode()).hexdigest() + _ENTRY_SUFFIX


def _encode(key_material: str, optimized_ir: bytes, obj: bytes) -> bytes:
    key = key_material.encode()
    lengths = _LENGTHS.pack(len(key), len(optimized_ir), len(obj))
    body = lengths + key + optimized_ir + obj
    return _MAGIC + hashlib.sha256(body).digest() + body


def _read_checked(fd: int, info: os.stat_result) -> bytes:
    """The whole file, after checking it is a private regular file of this user."""
    if not stat.S_ISREG(info.st_mode):
        raise _BadEntry("is not a regular file")
    if info.st_uid != os.getuid():
        raise _BadEntry("belongs to another user")
    if info.st_mode & 0o022:
        raise _BadEntry("is writable by other users")
    if not _HEADER_BYTES <= info.st_size <= _MAX_ENTRY_BYTES:
        raise _BadEntry(f"has an impossible size ({info.st_size} bytes)")
    chunks = []
    remaining = info.st_size + 1  # one byte more: a file that grew is caught below
    while remaining > 0:
        chunk = os.read(fd, remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _decode(data: bytes, key_material: str) -> tuple[bytes, str]:
    """(object, optimized IR) of a verified entry; raises _BadEntry otherwise."""
    if not data.startswith(_MAGIC):
        raise _BadEntry("is not a tsjit cache entry")
    digest_end = len(_MAGIC) + _DIGEST_BYTES
    body = data[digest_end:]
    if len(body) < _LENGTHS.size:
        raise _BadEntry("is truncated")
    if hashlib.sha256(body).digest() != data[len(_MAGIC):digest_end]:
        raise _BadEntry("does not match its digest (corrupted or truncated)")
    key_length, ir_length, obj_length = _LENGTHS.unpack_from(body)
    if _LENGTHS.size + key_length + ir_length + obj_length != len(body):
        raise _BadEntry("has inconsistent lengths")
    start = _LENGTHS.size
    stored_key = body[start:start + key_length]
    if stored_key != key_material.encode():
        raise _BadEntry("was compiled for other key material (another kernel, tsjit "
                        "version, LLVM or CPU)")
    start += key_length
    try:
        optimized_ir = body[start:start + ir_length].decode()
    except UnicodeDecodeError:
        raise _BadEntry("holds IR that is not text") from None
    return body[start + ir_length:], optimized_ir


def _open_private_directory(directory: Path) -> int | None:
    """Create ``directory`` 0700 if missing and open it; None (with one warning) when it
    belongs to another user or others may write to it."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        log.warning("disk cache %s cannot be used (%s); kernels are compiled in every "
                    "process", directory, e.strerror or e)
        return None
    info = os.fstat(fd)
    problem = None
    if info.st_uid != os.getuid():
        problem = "belongs to another user"
    elif info.st_mode & 0o022:
        problem = f"is writable by other users (mode {stat.S_IMODE(info.st_mode):o})"
    if problem is not None:
        os.close(fd)
        log.warning("disk cache %s %s, so it could hold planted code: not used (make it "
                    "0700 or set TSJIT_CACHE_DIR)", directory, problem)
        return None
    return fd


def _trim(dir_fd: int, max_bytes: int) -> None:
    """Delete temporary files left by dead writers, then the least recently written
    entries until the cache is 3/4 of ``max_bytes``. Best effort: another process may be
    trimming or writing at the same time, and a reader that opened an entry before it is
    deleted still reads all of it."""
    try:
        now = time.time()
        entries = []
        with os.scandir(dir_fd) as scan:
            for entry in scan:
                info = entry.stat(follow_symlinks=False)
                if entry.name.endswith(_TEMP_SUFFIX):
                    if now - info.st_mtime > _STALE_TEMP_SECONDS:
                        _remove_quietly(dir_fd, entry.name)
                    continue
                entries.append((info.st_mtime, info.st_size, entry.name))
        total = sum(size for _, size, _ in entries)
        if total <= max_bytes:
            return
        for _, size, name in sorted(entries):
            _remove_quietly(dir_fd, name)
            total -= size
            if total <= max_bytes * 3 // 4:
                return
    except OSError:
        pass


def _remove_quietly(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass
