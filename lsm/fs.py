"""The file-system interface: every file operation of the engine goes through here.

Why one interface: tests swap ``OSFileSystem`` for ``FaultInjectionFS`` to drop
unsynced data (power loss), fail an operation (EIO) or stop at a crash point,
and to audit the order of writes, syncs and renames.  Cython code does no file
I/O; it only encodes and decodes bytes handed to it from here.

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
* ``ReadFile`` serves immutable files (tables) through ``mmap``: a block read
  is a ``memcpy`` under the GIL, not a syscall, and is safe from many threads
  at once.  A mapped file must not be truncated while mapped (SIGBUS).
* ``write_atomic`` writes ``path + TEMP_SUFFIX``, fsyncs it, renames it over
  ``path`` and fsyncs the directory; leftover ``*.tmp`` files are garbage.

Ownership: an ``AppendFile`` is used by one writer at a time (the WAL and
manifest writers are serialized by the DB); ``ReadFile`` may be shared.

``FaultInjectionFS`` (below) wraps any ``FileSystem`` for tests.
"""
import errno
import fcntl
import mmap
import os
import shutil
import threading
from contextlib import suppress

from ._record import write_holding_gil as _write_small
from .errors import ClosedError, CorruptionError, StorageError

__all__ = [
    "FileSystem", "OSFileSystem", "AppendFile", "ReadFile", "FileLock",
    "FileMissingError", "TEMP_SUFFIX", "storage_error", "FaultInjectionFS", "SimulatedCrash",
]

#: Appends up to this size are written without releasing the GIL.
_SMALL_WRITE = 64 << 10

#: Suffix of the temporary file ``write_atomic`` renames into place.
TEMP_SUFFIX = ".tmp"


class FileMissingError(StorageError, FileNotFoundError):
    """The file or directory does not exist (ENOENT)."""


def storage_error(exc: OSError, what: str, path: str, path2: str = None) -> StorageError:
    """Map an ``OSError`` to the engine's ``StorageError``: the one place for it.

    Keeps ``errno``; the message names the operation and the path(s).
    """
    cls = FileMissingError if exc.errno == errno.ENOENT else StorageError
    err = cls(exc.errno, f"{what} failed: {exc.strerror or exc}", path, None, path2)
    err.__cause__ = exc
    return err


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

    def read(self, offset: int, n: int) -> bytes:
        raise NotImplementedError

    def size(self) -> int:
        raise NotImplementedError


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

    def open_append(self, path: str, truncate: bool = True) -> AppendFile:
        """Open for appending: create, or truncate (``truncate=False`` keeps the
        existing bytes and appends after them; ``size`` starts at their length)."""
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


class _OSAppendFile(AppendFile):
    __slots__ = ("path", "size", "_fd")

    def __init__(self, path: str, fd: int, size: int):
        self.path = path
        self.size = size
        self._fd = fd

    def append(self, data) -> None:
        fd = self._fd
        if fd < 0:
            raise ClosedError(f"append to closed file {self.path!r}")
        total = len(data)
        try:
            # Small appends (WAL records) keep the GIL: see
            # lsm._record.write_holding_gil for why.
            n = _write_small(fd, data) if total <= _SMALL_WRITE and type(data) is bytes \
                else os.write(fd, data)
        except OSError as e:
            raise storage_error(e, "append", self.path) from None
        if n != total:                  # rare: a short write; finish it
            self._append_rest(memoryview(data), n, total)
        self.size += total

    def _append_rest(self, view, done: int, total: int) -> None:
        try:
            while done < total:
                n = os.write(self._fd, view[done:])
                if n <= 0:
                    raise OSError(errno.EIO, "write returned 0")
                done += n
        except OSError as e:
            self.size += done           # what reached the file; the tail is now unknown
            raise storage_error(e, "append", self.path) from None

    def sync(self) -> None:
        if self._fd < 0:
            raise ClosedError(f"sync of closed file {self.path!r}")
        try:
            os.fdatasync(self._fd)
        except OSError as e:
            raise storage_error(e, "fsync", self.path) from None

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError as e:
                raise storage_error(e, "close", self.path) from None


class _MmapReadFile(ReadFile):
    """mmap-backed reads: slicing the map copies the bytes under the GIL."""

    __slots__ = ("path", "_size", "_mm")

    def __init__(self, path: str):
        self.path = path
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                self._size = os.fstat(fd).st_size
                # An empty file cannot be mapped; b"" slices the same way.
                self._mm = mmap.mmap(fd, self._size, access=mmap.ACCESS_READ) if self._size else b""
            finally:
                os.close(fd)            # the map keeps its own reference
        except OSError as e:
            raise storage_error(e, "open for read", path) from None

    def read(self, offset: int, n: int) -> bytes:
        end = offset + n
        if end > self._size or offset < 0 or n < 0:
            if offset < 0 or n < 0:
                raise ValueError(f"read of {self.path!r}: offset {offset} and n {n} must be >= 0")
            raise CorruptionError(
                f"short read of {self.path!r}: {n} bytes at offset {offset}, file has {self._size}")
        try:
            return self._mm[offset:end]
        except (TypeError, ValueError):  # None after close, or a closed map
            raise ClosedError(f"read of closed file {self.path!r}") from None

    def size(self) -> int:
        return self._size

    def close(self) -> None:
        mm, self._mm = self._mm, None
        if isinstance(mm, mmap.mmap):
            mm.close()


class OSFileSystem(FileSystem):
    """``FileSystem`` on the real OS (POSIX).  Stateless: safe from any thread."""

    def open_append(self, path: str, truncate: bool = True) -> AppendFile:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
        if truncate:
            flags |= os.O_TRUNC
        try:
            fd = os.open(path, flags, 0o644)
            size = 0 if truncate else os.fstat(fd).st_size
        except OSError as e:
            raise storage_error(e, "open for append", path) from None
        return _OSAppendFile(path, fd, size)

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
                raise StorageError(e.errno, "lock failed: already held by another process or "
                                   "open store", path) from None
            raise storage_error(e, "lock", path) from None
        return FileLock(path, fd)

    def rmtree(self, path: str, missing_ok: bool = False) -> None:
        if missing_ok and not os.path.lexists(path):
            return
        try:
            shutil.rmtree(path)
        except OSError as e:
            raise storage_error(e, "rmtree", path) from None


# --------------------------------------------------------------------------
# Fault injection (tests)


class SimulatedCrash(BaseException):
    """Raised at a crash point set by ``FaultInjectionFS.crash_at``.

    A ``BaseException``, not an ``LSMError``: engine code that handles
    ``Exception`` must not be able to catch and "recover" from a crash, just
    as it could not from kill -9.
    """


class _Fault:
    __slots__ = ("op", "path_contains", "after", "times", "exc", "partial", "crash")

    def __init__(self, op, path_contains, after, times, exc, partial, crash):
        self.op, self.path_contains, self.after, self.times = op, path_contains, after, times
        self.exc, self.partial, self.crash = exc, partial, crash


class _FileState:
    """What the simulated disk knows of one file: bytes written and bytes synced."""

    __slots__ = ("size", "synced")

    def __init__(self, size: int, synced: int):
        self.size, self.synced = size, synced


class _Entry:
    """A directory-entry change not yet made durable by ``sync_dir``: the
    creation of ``dst`` (``src`` None) or the rename of ``src`` to ``dst``
    (``old_bytes``/``old_state``: the file it replaced, if any)."""

    __slots__ = ("src", "dst", "old_bytes", "old_state")

    def __init__(self, src, dst, old_bytes=None, old_state=None):
        self.src, self.dst, self.old_bytes, self.old_state = src, dst, old_bytes, old_state

    @property
    def dir(self) -> str:
        return os.path.dirname(self.dst)


class _FaultAppendFile(AppendFile):
    def __init__(self, fs: "FaultInjectionFS", path: str, inner: AppendFile):
        self._fs, self.path, self._inner = fs, path, inner

    @property
    def size(self) -> int:
        return self._inner.size

    def append(self, data) -> None:
        fs = self._fs
        with fs._lock:
            fault = fs._match("append", self.path)
            if fault is not None:
                keep = fault.partial
                keep = len(data) // 2 if keep is True else min(int(keep), len(data))
                if keep:                # a torn write: a prefix reaches the file
                    self._write(data[:keep])
                raise fs._fire(fault, "append", self.path)
            self._write(data)

    def _write(self, data) -> None:
        self._inner.append(data)
        self._fs._state(self.path).size = self._inner.size
        self._fs.ops.append(("append", self.path, len(data)))

    def sync(self) -> None:
        fs = self._fs
        with fs._lock:
            fs._check("sync", self.path)
            self._inner.sync()
            st = fs._state(self.path)
            st.synced = st.size
            fs.ops.append(("sync", self.path))

    def close(self) -> None:
        self._fs._open.discard(self)
        self._inner.close()


class _FaultReadFile(ReadFile):
    def __init__(self, fs: "FaultInjectionFS", path: str, inner: ReadFile):
        self._fs, self.path, self._inner = fs, path, inner

    def read(self, offset: int, n: int) -> bytes:
        self._fs._check("read", self.path)
        return self._inner.read(offset, n)

    def size(self) -> int:
        return self._inner.size()

    def close(self) -> None:
        self._fs._open.discard(self)
        self._inner.close()


class FaultInjectionFS(FileSystem):
    """A ``FileSystem`` wrapper for tests that simulates power loss, I/O errors
    and crash points, and records every mutating operation (LevelDB's
    ``FaultInjectionTestEnv`` is the model).

    * ``ops``: mutating operations in order, as tuples: ``("open_append", p)``,
      ``("append", p, nbytes)``, ``("sync", p)``, ``("rename", src, dst)``,
      ``("remove", p)``, ``("truncate", p, size)``, ``("sync_dir", d)``,
      ``("makedirs", d)``, ``("rmtree", d)`` and ``("write_atomic", p)``, which
      is followed by the primitive operations it is made of (open_append,
      append, sync of ``p + TEMP_SUFFIX``, rename, sync_dir), each of which
      can fail or crash on its own.  Operations are recorded once they took
      effect (a torn append with the bytes that reached the file), except
      ``write_atomic``, recorded when it starts.
    * ``drop_unsynced()`` simulates power loss.  Exactly what it simulates:

      1. every handle opened through this wrapper is closed and every lock
         released (the process died);
      2. unless ``entries=False``: directory entries changed since the last
         ``sync_dir`` of their directory are undone, newest first: a file
         created through ``open_append`` is deleted; a ``rename`` is reversed
         (the file goes back to its old name and the overwritten target, whose
         bytes were saved at rename time, comes back).  ``remove`` is *not*
         undone (a removed file stays removed), and ``makedirs``/``rmtree``
         are not tracked.  A rename is tracked under the target's directory;
      3. every file written through this wrapper is truncated to the bytes
         covered by its last ``sync`` (0 if never synced; a rename carries
         the count along).  Files this wrapper never wrote count as durable.
         Unsynced bytes are dropped whole: no torn sectors, no reordering.
    * ``fail(op, ...)`` makes matching operations raise ``StorageError(EIO)``;
      ``crash_at(op, ...)`` makes one raise ``SimulatedCrash``, after which
      every operation raises ``SimulatedCrash`` (nothing more reaches the disk)
      except closing handles and releasing locks, until ``drop_unsynced()`` or
      ``clear_faults()``.

    Thread-safe: one lock orders operations, their faults and their records.
    """

    #: Operation names that ``fail`` and ``crash_at`` accept.
    OPS = frozenset({"append", "sync", "write_atomic", "rename", "remove", "open_append",
                     "open_read", "read", "sync_dir", "truncate", "makedirs", "rmtree", "lock"})

    def __init__(self, base: FileSystem):
        if not isinstance(base, FileSystem):
            raise TypeError(f"FaultInjectionFS base must be a FileSystem, got {type(base).__name__}")
        self.base = base
        self.ops = []
        self.crashed = False
        self._lock = threading.RLock()
        self._faults = []
        self._files = {}                # abspath -> _FileState, for files written here
        self._undo = []                 # _Entry list, oldest first
        self._open = set()              # handles and locks to close on power loss

    # -- faults ---------------------------------------------------------------

    def fail(self, op: str, path_contains: str = "", after: int = 0, times=1, exc=None,
             partial=False) -> None:
        """Make the next matching ``op`` fail, after ``after`` matching ones succeed.

        Raises ``exc`` (an exception instance or class) or ``StorageError(EIO)``,
        ``times`` times (None: forever).  ``path_contains`` matches a substring
        of the path (either path of a rename).  ``partial`` (append only): the
        failing append first writes a prefix, half the data if True or that
        many bytes if an int: a torn write.
        """
        self._add(op, path_contains, after, times, exc, partial, crash=False)

    def crash_at(self, op: str, path_contains: str = "", after: int = 0, partial=False) -> None:
        """Like ``fail`` once, but raise ``SimulatedCrash`` and freeze the FS."""
        self._add(op, path_contains, after, 1, None, partial, crash=True)

    def clear_faults(self) -> None:
        """Forget every pending fault and lift a crash (the FS works again)."""
        with self._lock:
            self._faults.clear()
            self.crashed = False

    def _add(self, op, path_contains, after, times, exc, partial, crash):
        if op not in self.OPS:
            raise ValueError(f"unknown op {op!r}; expected one of {sorted(self.OPS)}")
        if not isinstance(path_contains, str):
            raise TypeError("path_contains must be a str")
        if not isinstance(after, int) or after < 0:
            raise ValueError(f"after must be an int >= 0, got {after!r}")
        if times is not None and (not isinstance(times, int) or times < 1):
            raise ValueError(f"times must be an int >= 1 or None, got {times!r}")
        if partial is not False:
            if op != "append":
                raise ValueError("partial applies to 'append' only")
            if not isinstance(partial, int) or partial < 0:
                raise ValueError(f"partial must be a bool or an int >= 0, got {partial!r}")
        with self._lock:
            self._faults.append(_Fault(op, path_contains, after, times, exc, partial, crash))

    def _match(self, op: str, *paths):
        """The fault that fires for this operation now, or None (consumes a count)."""
        if self.crashed:
            raise SimulatedCrash(f"{op} {paths[0]!r} after a simulated crash")
        for f in self._faults:
            if f.op != op or f.times == 0 or not any(f.path_contains in p for p in paths):
                continue
            if f.after:
                f.after -= 1
                continue
            if f.times is not None:
                f.times -= 1
            return f
        return None

    def _fire(self, fault: _Fault, op: str, path: str) -> BaseException:
        if fault.crash:
            self.crashed = True
            return SimulatedCrash(f"simulated crash at {op} {path!r}")
        exc = fault.exc
        if exc is None:
            return StorageError(errno.EIO, f"{op} failed: injected I/O error", path)
        return exc(f"injected failure of {op} {path!r}") if isinstance(exc, type) else exc

    def _check(self, op: str, *paths) -> None:
        with self._lock:
            fault = self._match(op, *paths)
            if fault is not None:
                raise self._fire(fault, op, paths[0])

    # -- power loss -----------------------------------------------------------

    def close_all(self) -> None:
        """Close every handle and release every lock opened through this FS,
        as the OS does when the process dies."""
        with self._lock:
            for h in list(self._open):
                with suppress(Exception):
                    h.release() if isinstance(h, FileLock) else h.close()
            self._open.clear()

    def drop_unsynced(self, entries: bool = True) -> None:
        """Simulate power loss (see the class docstring for exactly what)."""
        with self._lock:
            self.close_all()
            if entries:
                while self._undo:           # newest first; undoing may rename pending ones
                    self._undo_entry(self._undo.pop())
            self._undo.clear()
            base = self.base
            for key, st in self._files.items():
                if base.exists(key) and base.file_size(key) > st.synced:
                    base.truncate(key, st.synced)
                st.size = st.synced
            self.crashed = False

    def _undo_entry(self, e: _Entry) -> None:
        base = self.base
        if e.src is None:                       # a creation
            base.remove_if_exists(e.dst)
            self._files.pop(e.dst, None)
            return
        if base.exists(e.dst):
            base.rename(e.dst, e.src)
            self._move_tracked(e.dst, e.src)
        if e.old_bytes is not None:
            base.write_atomic(e.dst, e.old_bytes)
            if e.old_state is not None:
                self._files[e.dst] = e.old_state

    def _state(self, path: str) -> _FileState:
        key = os.path.abspath(path)
        st = self._files.get(key)
        if st is None:
            st = self._files[key] = _FileState(0, 0)
        return st

    # -- the FileSystem interface ---------------------------------------------

    def open_append(self, path: str, truncate: bool = True) -> AppendFile:
        with self._lock:
            self._check("open_append", path)
            key = os.path.abspath(path)
            existed = self.base.exists(path)
            f = _FaultAppendFile(self, path, self.base.open_append(path, truncate))
            if not existed:
                self._undo.append(_Entry(None, key))
            if truncate or key not in self._files:
                self._files[key] = _FileState(f.size, 0 if truncate else f.size)
            self._open.add(f)
            self.ops.append(("open_append", path))
            return f

    def open_read(self, path: str) -> ReadFile:
        with self._lock:
            self._check("open_read", path)
            f = _FaultReadFile(self, path, self.base.open_read(path))
            self._open.add(f)
            return f

    def read_all(self, path: str) -> bytes:
        self._check("read", path)
        return self.base.read_all(path)

    def write_atomic(self, path: str, data: bytes) -> None:
        with self._lock:
            self._check("write_atomic", path)
            self.ops.append(("write_atomic", path))
        FileSystem.write_atomic(self, path, data)

    def rename(self, src: str, dst: str) -> None:
        with self._lock:
            self._check("rename", src, dst)
            base = self.base
            skey, dkey = os.path.abspath(src), os.path.abspath(dst)
            old_bytes = None
            if base.exists(dst):
                try:
                    old_bytes = base.read_all(dst)
                except StorageError as e:       # an (empty) directory being replaced
                    if e.errno != errno.EISDIR:
                        raise
            base.rename(src, dst)
            old_state = self._files.pop(dkey, None)
            self._move_tracked(skey, dkey)
            self._undo.append(_Entry(skey, dkey, old_bytes, old_state))
            self.ops.append(("rename", src, dst))

    def _move_tracked(self, skey: str, dkey: str) -> None:
        """Carry the tracked state of ``skey`` (a file, or a directory's files
        and pending entries) over to its new name ``dkey``."""
        st = self._files.pop(skey, None)
        if st is not None:
            self._files[dkey] = st
        prefix = os.path.join(skey, "")

        def moved(p):
            return dkey + p[len(skey):] if p == skey or p.startswith(prefix) else p
        for key in [k for k in self._files if k.startswith(prefix)]:
            self._files[moved(key)] = self._files.pop(key)
        for e in self._undo:
            e.dst = moved(e.dst)
            if e.src is not None:
                e.src = moved(e.src)

    def remove(self, path: str) -> None:
        with self._lock:
            self._check("remove", path)
            self.base.remove(path)
            self._files.pop(os.path.abspath(path), None)
            self.ops.append(("remove", path))

    def truncate(self, path: str, size: int) -> None:
        with self._lock:
            self._check("truncate", path)
            self.base.truncate(path, size)
            st = self._state(path)
            st.size = size
            st.synced = min(st.synced, size)
            self.ops.append(("truncate", path, size))

    def sync_dir(self, path: str) -> None:
        with self._lock:
            self._check("sync_dir", path)
            self.base.sync_dir(path)
            key = os.path.abspath(path)
            self._undo = [e for e in self._undo if e.dir != key]
            self.ops.append(("sync_dir", path))

    def makedirs(self, path: str) -> None:
        with self._lock:
            self._check("makedirs", path)
            self.base.makedirs(path)
            self.ops.append(("makedirs", path))

    def rmtree(self, path: str, missing_ok: bool = False) -> None:
        with self._lock:
            self._check("rmtree", path)
            self.base.rmtree(path, missing_ok)
            prefix = os.path.join(os.path.abspath(path), "")
            for key in [k for k in self._files if k.startswith(prefix)]:
                del self._files[key]
            self.ops.append(("rmtree", path))

    def lock(self, path: str) -> FileLock:
        with self._lock:
            self._check("lock", path)
            lk = self.base.lock(path)
            self._open.add(lk)
            return lk

    def exists(self, path: str) -> bool:
        self._check_alive("exists", path)
        return self.base.exists(path)

    def listdir(self, path: str) -> list:
        self._check_alive("listdir", path)
        return self.base.listdir(path)

    def file_size(self, path: str) -> int:
        self._check_alive("file_size", path)
        return self.base.file_size(path)

    def _check_alive(self, op: str, path: str) -> None:
        if self.crashed:
            raise SimulatedCrash(f"{op} {path!r} after a simulated crash")
