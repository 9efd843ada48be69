"""The fault-injecting file system of the tests and the soak harness
(LevelDB's FaultInjectionTestEnv).

``FaultInjectionFS`` wraps any ``FileSystem`` (lsm/fs.py) and simulates
power loss (unsynced bytes and directory entries dropped), I/O errors and
crash points (``SimulatedCrash``), and records every mutating operation so
that tests can audit the order of writes, syncs and renames.  The engine and
the region server never import this module; the reliability harness does
(``regions.soak``: powerloss cuts the power at random file operations of a
workload through it), so it ships with the package.
"""
import errno
import os
import threading
from contextlib import suppress

from .errors import StorageError
from .fs import AppendFile, FileLock, FileSystem, ReadFile

__all__ = ["FaultInjectionFS", "SimulatedCrash"]


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
            room = fs._room()
            if fault is None and room < len(data):     # the simulated disk is full
                if room:
                    self._write(data[:room])
                fs.full_errors += 1
                raise StorageError(errno.ENOSPC, "append failed: No space left on device (simulated)",
                                   self.path)
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

    @property
    def size(self) -> int:
        return self._inner.size

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
    * ``capacity``: a disk of that many bytes (None: unbounded), counting the
      bytes of the files written through this wrapper (what the engine
      writes; not a preallocation's zeros).  An append that does not fit
      writes what fits and raises ``StorageError(ENOSPC)``, as a full disk
      does; ``full_errors`` counts them.  Change it at any time: lower it to
      fill the disk, raise it to free space.  ``used()`` is the bytes held.
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
        self.capacity = None            # bytes of the simulated disk (None: unbounded)
        self.full_errors = 0            # appends refused by ``capacity``

    # -- space ------------------------------------------------------------------

    def used(self) -> int:
        """Bytes of the files written through this wrapper (the simulated disk's)."""
        with self._lock:
            return sum(st.size for st in self._files.values())

    def _room(self) -> int:
        """Bytes an append may still write (large when unbounded); lock held."""
        if self.capacity is None:
            return 1 << 62
        return max(0, self.capacity - sum(st.size for st in self._files.values()))

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

    def open_append(self, path: str, truncate: bool = True, preallocate: int = 0) -> AppendFile:
        with self._lock:
            self._check("open_append", path)
            key = os.path.abspath(path)
            existed = self.base.exists(path)
            f = _FaultAppendFile(self, path, self.base.open_append(path, truncate, preallocate))
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
