"""The in-memory file system: an lsm store (or a region server) with nothing on disk.

``MemoryFileSystem`` implements the ``FileSystem`` interface of lsm/fs.py
over a tree of directories held in memory, so an in-memory store runs the
engine's own code paths (WAL, manifest, tables, compaction, splits) and
differs from an on-disk one only below this interface.  ``DB.open(None)``
and ``RegionServer.open(None)`` open one on a fresh ``MemoryFileSystem``
(``open_in_memory``) and clear it at close.

Contracts
---------
* Durability: none.  Everything lives in this process and is gone when the
  file system is cleared (at close of the store that owns it) or the process
  ends.  ``sync`` and ``sync_dir`` do nothing: a store opened with
  ``sync=True`` accepts the option and runs as with ``sync=False``.
* Semantics follow POSIX where the engine relies on them: missing files and
  directories raise ``FileMissingError`` (ENOENT), a directory where a file
  is expected ``StorageError`` (EISDIR, ENOTDIR, ENOTEMPTY), with the same
  messages as ``OSFileSystem`` (both go through ``lsm.fs.storage_error``).
  ``rename`` replaces a file or an empty directory atomically; an open
  ``AppendFile`` keeps writing to its file across a rename, as a descriptor
  does.  Paths are ``str``; relative paths are taken from ``/`` (this file
  system has no working directory).
* A ``ReadFile`` is a snapshot: the file's bytes at ``open_read`` (tables are
  immutable, so this is what the engine expects).  Reads slice an immutable
  ``bytes`` object, exactly as ``OSFileSystem`` slices an ``mmap``
  (``lsm.fs.BufferReadFile`` serves both): the table reader, Python or Cython
  (lsm/sstable.py, ext/lsm/_table.pyx), only calls ``read(offset, n)`` and
  reads ``size``; nothing assumes a buffer protocol or a descriptor.
* Locks (``lock``) are exclusive per file of this file system, released by
  ``release()`` or ``clear()``.
* Memory: a file is a ``bytearray`` while written and becomes ``bytes`` when
  read (one copy, shared by every reader since), so a table costs its size
  once.  ``bytes_used`` is the total.

Thread-safety: one lock orders every operation on the tree and every append;
reads of an open ``ReadFile`` take no lock.  The region server's background
flushes, compactions and splits use one instance from many threads.
"""
import errno
import os
import posixpath
import threading

from .errors import ClosedError, StorageError
from .fs import AppendFile, BufferReadFile, FileLock, FileSystem, lock_held_error, storage_error

__all__ = ["MemoryFileSystem", "MemoryAppendFile", "MemoryReadFile", "MEMORY_PATH", "open_in_memory"]

#: The path of a store opened in memory (``DB.open(None)``): error messages
#: and ``repr`` name it, so an in-memory store is recognisable.
MEMORY_PATH = "/:memory:"


def open_in_memory(path, options):
    """``(path, options, fs)`` for opening a store at ``path``.

    ``path`` None: ``MEMORY_PATH`` and a copy of ``options`` on a fresh
    ``MemoryFileSystem``, returned as ``fs`` (the caller owns it and clears it
    at close).  Otherwise the arguments unchanged and ``fs`` None.  Works for
    ``lsm.Options`` and ``regions.ServerOptions`` (both have ``fs`` and
    ``copy``); an explicit ``options.fs`` with ``path`` None is a
    contradiction and raises ``ValueError``; a ``path`` of another type
    ``TypeError``.
    """
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str, path-like or None (in memory), got {type(path).__name__}")
        return path, options, None
    if options.fs is not None:
        raise ValueError("path None opens a fresh in-memory store, so options.fs must be None; "
                         f"got {type(options.fs).__name__} (give a path to use that file system)")
    fs = MemoryFileSystem()
    return MEMORY_PATH, options.copy(fs=fs), fs


def _error(code: int, what: str, path: str, path2: str = None):
    return storage_error(OSError(code, os.strerror(code)), what, path, path2)


class _File:
    """A file's bytes (``bytearray`` while written, ``bytes`` once read) and
    whether a lock holds it."""

    __slots__ = ("data", "locked")

    def __init__(self, data=b""):
        self.data = bytearray(data)
        self.locked = False

    def frozen(self) -> bytes:
        """The bytes, immutable from now on (the next append copies them back)."""
        if type(self.data) is not bytes:
            self.data = bytes(self.data)
        return self.data


class _Dir:
    __slots__ = ("entries",)

    def __init__(self):
        self.entries = {}           # name -> _File | _Dir


class MemoryAppendFile(AppendFile):
    """An ``AppendFile`` over a file held in memory.

    ``MemoryFileSystem.open_append`` makes them; ``MemoryAppendFile(data)``
    alone is a file outside any file system (tests of the WAL and table
    formats), whose bytes ``getvalue()`` returns.  Appends take the file
    system's lock (``lock``) so that a concurrent reader sees whole appends.
    """

    __slots__ = ("path", "size", "closed", "_node", "_lock")

    def __init__(self, data=b"", path: str = "<memory>", *, _node=None, _lock=None):
        self.path = path
        self.closed = False
        self._node = _node if _node is not None else _File(data)
        self._lock = _lock if _lock is not None else threading.Lock()
        self.size = len(self._node.data)

    def append(self, data) -> None:
        if self.closed:
            raise ClosedError(f"append to closed file {self.path!r}")
        node = self._node
        with self._lock:
            if type(node.data) is bytes:
                node.data = bytearray(node.data)
            node.data += data
        self.size += len(data)

    def sync(self) -> None:
        """Nothing to make durable (see the module doc); a closed file raises."""
        if self.closed:
            raise ClosedError(f"sync of closed file {self.path!r}")

    def getvalue(self) -> bytes:
        """The file's bytes so far (also after close)."""
        with self._lock:
            return bytes(self._node.data)

    def close(self) -> None:
        self.closed = True


class MemoryReadFile(BufferReadFile):
    """A ``ReadFile`` over ``bytes`` (``MemoryFileSystem.open_read`` makes
    them; alone, a table's bytes for a format test).  ``closed`` says whether
    ``close`` was called."""

    __slots__ = ()

    def __init__(self, data, path: str = "<memory>"):
        super().__init__(path, bytes(data))

    @property
    def closed(self) -> bool:
        return self._mm is None


class _MemoryLock(FileLock):
    """The exclusive lock on one file of a ``MemoryFileSystem``."""

    def __init__(self, path: str, node: _File, guard: threading.Lock):
        super().__init__(path, -1)
        self._node, self._guard = node, guard

    @property
    def held(self) -> bool:
        return self._node is not None

    def release(self) -> None:
        node, self._node = self._node, None
        if node is not None:
            with self._guard:
                node.locked = False


class MemoryFileSystem(FileSystem):
    """``FileSystem`` in memory (see the module doc for the contract).

    >>> fs = MemoryFileSystem()
    >>> fs.makedirs("/db")
    >>> with fs.open_append("/db/f") as f:
    ...     f.append(b"abc")
    >>> fs.read_all("/db/f"), fs.listdir("/db"), fs.bytes_used
    (b'abc', ['f'], 3)
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._root = _Dir()

    # -- the tree -------------------------------------------------------------

    @staticmethod
    def _parts(path: str) -> list:
        if not isinstance(path, str):
            raise TypeError(f"path must be a str, got {type(path).__name__}")
        norm = posixpath.normpath(posixpath.join("/", path))
        return [p for p in norm.split("/") if p]

    def _walk(self, parts, what, path):
        """The node at ``parts`` or None if absent; a file on the way raises ENOTDIR."""
        node = self._root
        for name in parts:
            if type(node) is not _Dir:
                raise _error(errno.ENOTDIR, what, path)
            node = node.entries.get(name)
            if node is None:
                return None
        return node

    def _parent(self, path, what):
        """(directory, name) where ``path`` lives; its directory must exist."""
        parts = self._parts(path)
        if not parts:
            raise _error(errno.EISDIR, what, path)
        d = self._walk(parts[:-1], what, path)
        if d is None:
            raise _error(errno.ENOENT, what, path)
        if type(d) is not _Dir:
            raise _error(errno.ENOTDIR, what, path)
        return d, parts[-1]

    def _existing(self, path, what, kind):
        """The ``kind`` (_File or _Dir) at ``path``: ENOENT if absent, EISDIR
        or ENOTDIR if it is the other kind."""
        node = self._walk(self._parts(path), what, path)
        if node is None:
            raise _error(errno.ENOENT, what, path)
        if type(node) is not kind:
            raise _error(errno.EISDIR if kind is _File else errno.ENOTDIR, what, path)
        return node

    def _file(self, path, what) -> _File:
        return self._existing(path, what, _File)

    def _dir(self, path, what) -> _Dir:
        return self._existing(path, what, _Dir)

    # -- the FileSystem interface ---------------------------------------------

    def _created(self, path, what) -> _File:
        """The file at ``path``, created empty if missing (O_CREAT)."""
        d, name = self._parent(path, what)
        node = d.entries.get(name)
        if node is None:
            node = d.entries[name] = _File()
        elif type(node) is not _File:
            raise _error(errno.EISDIR, what, path)
        return node

    def open_append(self, path: str, truncate: bool = True, preallocate: int = 0) -> AppendFile:
        # ``preallocate`` is a hint for disks (see lsm.fs): nothing to gain here.
        with self._lock:
            node = self._created(path, "open for append")
            if truncate:
                node.data = bytearray()
            return MemoryAppendFile(path=path, _node=node, _lock=self._lock)

    def open_read(self, path: str) -> MemoryReadFile:
        with self._lock:
            data = self._file(path, "open for read").frozen()
        return MemoryReadFile(data, path)

    def read_all(self, path: str) -> bytes:
        with self._lock:
            return self._file(path, "read").frozen()

    def rename(self, src: str, dst: str) -> None:
        with self._lock:
            sd, sname = self._parent(src, "rename")
            node = sd.entries.get(sname)
            if node is None:
                raise _error(errno.ENOENT, "rename", src, dst)
            dd, dname = self._parent(dst, "rename")
            old = dd.entries.get(dname)
            if old is node:
                return
            if type(node) is _Dir:
                if old is not None and type(old) is not _Dir:
                    raise _error(errno.ENOTDIR, "rename", src, dst)
                if old is not None and old.entries:
                    raise _error(errno.ENOTEMPTY, "rename", src, dst)
                if self._parts(dst)[:len(self._parts(src))] == self._parts(src):
                    raise _error(errno.EINVAL, "rename", src, dst)   # into itself
            elif type(old) is _Dir:
                raise _error(errno.EISDIR, "rename", src, dst)
            dd.entries[dname] = node
            del sd.entries[sname]

    def remove(self, path: str) -> None:
        with self._lock:
            d, name = self._parent(path, "remove")
            node = d.entries.get(name)
            if node is None:
                raise _error(errno.ENOENT, "remove", path)
            if type(node) is _Dir:
                raise _error(errno.EISDIR, "remove", path)
            del d.entries[name]

    def truncate(self, path: str, size: int) -> None:
        if size < 0:
            raise _error(errno.EINVAL, "truncate", path)
        with self._lock:
            node = self._file(path, "truncate")
            data = node.data
            node.data = bytearray(data[:size]) + bytes(max(0, size - len(data)))

    def exists(self, path: str) -> bool:
        with self._lock:
            try:
                return self._walk(self._parts(path), "exists", path) is not None
            except StorageError:    # a file on the way: os.path.exists says False too
                return False

    def listdir(self, path: str) -> list:
        with self._lock:
            return sorted(self._dir(path, "listdir").entries)

    def makedirs(self, path: str) -> None:
        parts = self._parts(path)
        with self._lock:
            node = self._root
            for i, name in enumerate(parts, 1):
                child = node.entries.get(name)
                if child is None:
                    child = node.entries[name] = _Dir()
                elif type(child) is not _Dir:   # a file: in the way, or the path itself
                    raise _error(errno.EEXIST if i == len(parts) else errno.ENOTDIR, "makedirs", path)
                node = child

    def sync_dir(self, path: str) -> None:
        """Nothing to make durable; a missing directory still raises."""
        with self._lock:
            self._dir(path, "fsync of directory")

    def file_size(self, path: str) -> int:
        with self._lock:
            node = self._walk(self._parts(path), "stat", path)
            if node is None:
                raise _error(errno.ENOENT, "stat", path)
            return len(node.data) if type(node) is _File else 0

    def lock(self, path: str) -> FileLock:
        with self._lock:
            node = self._created(path, "open lock file")
            if node.locked:
                raise lock_held_error(path)
            node.locked = True
            return _MemoryLock(path, node, self._lock)

    def rmtree(self, path: str, missing_ok: bool = False) -> None:
        with self._lock:
            d, name = self._parent(path, "rmtree")
            node = d.entries.get(name)
            if node is None:
                if missing_ok:
                    return
                raise _error(errno.ENOENT, "rmtree", path)
            if type(node) is not _Dir:
                raise _error(errno.ENOTDIR, "rmtree", path)
            del d.entries[name]

    # -- beyond the interface -------------------------------------------------

    @property
    def bytes_used(self) -> int:
        """Total size of the files (what the file system holds in memory)."""
        with self._lock:
            total, stack = 0, [self._root]
            while stack:
                for node in stack.pop().entries.values():
                    if type(node) is _Dir:
                        stack.append(node)
                    else:
                        total += len(node.data)
            return total

    def clear(self) -> None:
        """Forget every file and directory (the memory goes back to Python
        once no ``ReadFile`` still holds its bytes)."""
        with self._lock:
            self._root = _Dir()

    def __repr__(self):
        return f"<lsm.memfs.MemoryFileSystem {self.bytes_used} bytes>"
