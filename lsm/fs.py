"""The file-system interface: every file operation of the engine goes through here.

Why one interface: tests swap ``OSFileSystem`` for ``FaultInjectionFS``
(lsm/faultfs.py) to drop unsynced data (power loss), fail an operation (EIO)
or stop at a crash point, and to audit the order of writes, syncs and
renames.  ``MemoryFileSystem`` (lsm/memfs.py) keeps a whole store in
memory behind the same interface (``DB.open(None)``).  Cython code opens,
reads and renames nothing: the OS file system's append file is the one file
in C (``lsm._fileio.OSAppendFile``, ext/lsm/_fileio.pyx: append, sync and
close of a descriptor this module opened, its errors mapped by
``lsm.errors.storage_error``, as this module's are).  Every other byte the extensions see was read or
will be written here.

Contracts
---------
* Any ``OSError`` from the OS is re-raised as ``lsm.errors.StorageError`` with
  the errno kept and the path in the message.  A missing file raises
  ``FileMissingError``, which is both a ``StorageError`` and a
  ``FileNotFoundError`` so callers can test for either.
* ``AppendFile.append`` hands *all* bytes to the OS before returning (an
  ``os.write`` loop, no user-space buffer).  This is the WAL's durability
  contract: a record is acknowledged once handed to the OS, which survives
  kill -9 of the process (not power loss: that needs ``sync``).
* A file's size is the attribute ``size`` on both kinds (``AppendFile``: bytes
  appended so far; ``ReadFile``: the size at open); ``FileSystem.file_size``
  stats a path.
* ``open_append(..., preallocate=n)`` may keep zero bytes written past the
  appended ones, ``n`` at a time, so that an append overwrites allocated
  space and an ``fdatasync`` after it commits no change of the file's size
  (sqlite3 reuses its WAL file for the same reason).  While the file is open
  its bytes on disk are ``size`` plus up to ``n`` zeros; ``close`` trims
  them, and a crash leaves them, which is why only the WAL asks for it: its
  reader ends cleanly at zeros.  ``OSFileSystem`` also maps the zeros
  shared and copies small appends into the mapping: no system call, and the
  bytes are with the OS when ``append`` returns all the same (details in
  ext/lsm/_fileio.pyx).  A hint: ``OSFileSystem`` honours it, the
  in-memory file system ignores it.
* ``ReadFile`` serves immutable files (tables) through ``mmap``: a block read
  is a ``memcpy`` under the GIL, not a syscall, and is safe from many threads
  at once.  A mapped file must not be truncated while mapped (SIGBUS).
* ``write_atomic`` writes ``path + TEMP_SUFFIX``, fsyncs it, renames it over
  ``path`` and fsyncs the directory; leftover ``*.tmp`` files are garbage.

Ownership: an ``AppendFile`` is used by one writer at a time (the WAL and
manifest writers are serialized by the DB); ``ReadFile`` may be shared.

"""
import errno
import fcntl
import mmap
import os
import shutil
from contextlib import suppress

from ._fileio import OSAppendFile
from .errors import ClosedError, CorruptionError, FileMissingError, StorageError, storage_error

__all__ = [
    "FileSystem", "OSFileSystem", "AppendFile", "ReadFile", "FileLock",
    "FileMissingError", "TEMP_SUFFIX", "storage_error", "lock_held_error", "BufferReadFile",
]

#: Suffix of the temporary file ``write_atomic`` renames into place.
TEMP_SUFFIX = ".tmp"


def lock_held_error(path: str) -> StorageError:
    """The error of ``FileSystem.lock`` on a lock someone holds: the one text for it."""
    return StorageError(errno.EWOULDBLOCK, "lock failed: already held by another process or "
                        "open store", path)


class _Closable:
    """``with`` closes the file."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class AppendFile(_Closable):
    """A file open for appending (WAL, manifest, a table being built)."""

    size: int

    def append(self, data) -> None:
        raise NotImplementedError

    def sync(self) -> None:
        raise NotImplementedError


class ReadFile(_Closable):
    """Random access to an immutable file (a table)."""

    size: int

    def read(self, offset: int, n: int) -> bytes:
        raise NotImplementedError

    def buffer(self):
        """The file's bytes as one buffer that stays unchanged while the file
        is open (a mapping), for reads in C; None when there is none (every
        read then goes through ``read``)."""
        return None


class FileLock:
    """An exclusive advisory lock (``flock``) held on an open LOCK file.

    Released by ``release()`` (idempotent), on exit of a ``with`` block, or by
    the OS when the process dies: a crashed process never leaves a stale lock.
    """

    def __init__(self, path: str, fd: int):
        self.path = path
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def release(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class FileSystem:
    """The interface.  Paths are ``str``; directories are created by the caller."""

    def open_append(self, path: str, truncate: bool = True, preallocate: int = 0) -> AppendFile:
        """Open for appending: create, or truncate (``truncate=False`` keeps the
        existing bytes and appends after them; ``size`` starts at their length).
        ``preallocate``: zero-fill ahead of the end, that many bytes at a time
        (see the module doc)."""
        raise NotImplementedError

    def open_read(self, path: str) -> ReadFile:
        raise NotImplementedError

    def read_all(self, path: str) -> bytes:
        raise NotImplementedError

    def rename(self, src: str, dst: str) -> None:
        """Atomically replace ``dst`` by ``src``; durable after ``sync_dir``."""
        raise NotImplementedError

    def remove(self, path: str) -> None:
        """Delete a file; a missing file raises ``FileMissingError``."""
        raise NotImplementedError

    def truncate(self, path: str, size: int) -> None:
        raise NotImplementedError

    def exists(self, path: str) -> bool:
        raise NotImplementedError

    def listdir(self, path: str) -> list:
        """Names in a directory, sorted."""
        raise NotImplementedError

    def makedirs(self, path: str) -> None:
        """Create a directory and its parents; an existing one is fine."""
        raise NotImplementedError

    def sync_dir(self, path: str) -> None:
        """fsync a directory, making creates, renames and removes in it durable."""
        raise NotImplementedError

    def file_size(self, path: str) -> int:
        raise NotImplementedError

    def lock(self, path: str) -> FileLock:
        """Take the exclusive lock on ``path`` (created if missing); a held
        lock raises ``StorageError`` naming the path, without waiting."""
        raise NotImplementedError

    def rmtree(self, path: str, missing_ok: bool = False) -> None:
        raise NotImplementedError

    # -- built from the primitives above, so a wrapper inherits them ----------

    def remove_if_exists(self, path: str) -> bool:
        """Delete ``path`` if present; returns whether it was there."""
        try:
            self.remove(path)
        except FileNotFoundError:
            return False
        return True

    def write_atomic(self, path: str, data: bytes) -> None:
        """Replace ``path`` by ``data`` all-or-nothing, durably.

        Temp file in the same directory, write, fsync, rename over ``path``,
        fsync the directory.  Not for concurrent use on the same ``path``
        (the temp name is fixed so that leftovers are recognisable).
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"write_atomic data must be bytes, got {type(data).__name__}")
        tmp = path + TEMP_SUFFIX
        try:
            f = self.open_append(tmp)
            try:
                f.append(data)
                f.sync()
            finally:
                f.close()
            self.rename(tmp, path)
        except Exception:
            # Not on a SimulatedCrash (a BaseException): a crash cleans nothing.
            with suppress(Exception):
                self.remove_if_exists(tmp)
            raise
        self.sync_dir(os.path.dirname(path) or ".")


# --------------------------------------------------------------------------
# The real OS


class BufferReadFile(ReadFile):
    """Reads slices of a buffer that stays unchanged while open (an ``mmap``
    of a table here, the ``bytes`` of a file in lsm/memfs.py): each read is a
    ``memcpy`` under the GIL, safe from many threads at once.  ``close``
    drops the buffer; a later read raises ``ClosedError``."""

    __slots__ = ("path", "size", "_mm")

    def __init__(self, path: str, buffer):
        self.path = path
        self.size = len(buffer)
        self._mm = buffer

    def read(self, offset: int, n: int) -> bytes:
        end = offset + n
        if end > self.size or offset < 0 or n < 0:
            if offset < 0 or n < 0:
                raise ValueError(f"read of {self.path!r}: offset {offset} and n {n} must be >= 0")
            raise CorruptionError(
                f"short read of {self.path!r}: {n} bytes at offset {offset}, file has {self.size}")
        try:
            return self._mm[offset:end]
        except (TypeError, ValueError):  # None after close, or a closed map
            raise ClosedError(f"read of closed file {self.path!r}") from None

    def buffer(self):
        return self._mm

    def close(self) -> None:
        self._mm = None


class _MmapReadFile(BufferReadFile):
    """mmap-backed reads: slicing the map copies the bytes under the GIL."""

    __slots__ = ()

    def __init__(self, path: str):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                size = os.fstat(fd).st_size
                # An empty file cannot be mapped; b"" slices the same way.
                mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else b""
            finally:
                os.close(fd)            # the map keeps its own reference
        except OSError as e:
            raise storage_error(e, "open for read", path) from None
        super().__init__(path, mm)

    def close(self) -> None:
        mm, self._mm = self._mm, None
        if isinstance(mm, mmap.mmap):
            try:
                mm.close()
            except BufferError:
                # A table's point reader still holds the map for a search
                # without the GIL in flight (lsm._mapped_blocks.MappedBlocks): it is
                # unmapped when the last holder lets go of it.
                pass


class OSFileSystem(FileSystem):
    """``FileSystem`` on the real OS (POSIX).  Stateless: safe from any thread."""

    def open_append(self, path: str, truncate: bool = True, preallocate: int = 0) -> AppendFile:
        flags = os.O_CREAT | os.O_CLOEXEC
        flags |= os.O_TRUNC if truncate else 0
        # A preallocated file is mapped (lsm._fileio): a shared writable
        # mapping needs the descriptor open for reading too.
        flags |= os.O_RDWR if preallocate else os.O_WRONLY | os.O_APPEND
        try:
            fd = os.open(path, flags, 0o644)
            size = 0 if truncate else os.lseek(fd, 0, os.SEEK_END)
        except OSError as e:
            raise storage_error(e, "open for append", path) from None
        return OSAppendFile(path, fd, size, preallocate)

    def open_read(self, path: str) -> ReadFile:
        return _MmapReadFile(path)

    def read_all(self, path: str) -> bytes:
        try:
            with open(path, "rb", buffering=0) as f:
                return f.read()
        except OSError as e:
            raise storage_error(e, "read", path) from None

    def rename(self, src: str, dst: str) -> None:
        try:
            os.replace(src, dst)
        except OSError as e:
            raise storage_error(e, "rename", src, dst) from None

    def remove(self, path: str) -> None:
        try:
            os.remove(path)
        except OSError as e:
            raise storage_error(e, "remove", path) from None

    def truncate(self, path: str, size: int) -> None:
        try:
            os.truncate(path, size)
        except OSError as e:
            raise storage_error(e, "truncate", path) from None

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def listdir(self, path: str) -> list:
        try:
            return sorted(os.listdir(path))
        except OSError as e:
            raise storage_error(e, "listdir", path) from None

    def makedirs(self, path: str) -> None:
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as e:
            raise storage_error(e, "makedirs", path) from None

    def sync_dir(self, path: str) -> None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            raise storage_error(e, "fsync of directory", path) from None

    def file_size(self, path: str) -> int:
        try:
            return os.stat(path).st_size
        except OSError as e:
            raise storage_error(e, "stat", path) from None

    def lock(self, path: str) -> FileLock:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise storage_error(e, "open lock file", path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise lock_held_error(path) from None
            raise storage_error(e, "lock", path) from None
        return FileLock(path, fd)

    def rmtree(self, path: str, missing_ok: bool = False) -> None:
        if missing_ok and not os.path.lexists(path):
            return
        try:
            shutil.rmtree(path)
        except OSError as e:
            raise storage_error(e, "rmtree", path) from None
