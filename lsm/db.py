"""The DB: an LSM store of bytes keys and values in one directory.

Write path: WAL record (lsm/wal.py framing of an lsm/batch.py record) ->
memtable -> when full, frozen and flushed to an L0 table in the background
-> leveled compaction (lsm/background.py runs what lsm/compaction.py picks;
lsm/builder.py writes the tables).  Read path: memtable, frozen memtable, L0
tables newest first, then one table per deeper level; scans merge all of
them (ext/lsm/_iter.pyx, _db_iter.pyx).  docs/impl.md gives the model,
docs/walkthrough.md ("Inside the engine") the code that runs.

Durability contract:
  * ``sync=False`` (default): a write returns once its WAL record has been
    handed to the OS: it survives kill -9 of the process.
  * ``sync=True``: the WAL is fsynced before the write returns; concurrent
    syncing writers share one fsync (group commit).  Survives power loss.
  * After a failed WAL write or fsync, or a failed flush or compaction,
    the store refuses writes (``ReadOnlyError``, naming the cause) and
    keeps serving reads.  A retryable failure (a full disk, no descriptor
    left, an EIO of a write) is retried with backoff and the store resumes
    by itself; ``resume()`` retries at once; corruption stops it for good
    (lsm/health.py).  A resume never appends to a WAL or manifest whose
    tail failed: it writes the memtable out to a table under a fresh WAL
    and starts a fresh manifest, so nothing acknowledged is lost and
    nothing is applied twice.

Thread-safety: any number of threads may call any method.  Writers are
serialised by one lock; readers take no lock on the point-read path, and
search the tables with the GIL released (two reader threads run side by
side); flush and compaction run in one background thread and never block
readers.
"""
import bisect
import errno
import logging
import os
import threading
import time
from operator import attrgetter

from . import filenames
from ._db_iter import DBIterator
from ._iter import LevelIterator, ListIterator, MergingIterator
from ._read import PointPath
from ._state import DBState
from ._write import WritePath
from .background import BackgroundWork, CompactionPacer
from .batch import WriteBatch, check_bound, replay
from .cache import BlockCache, TableCache
from .check import check_db
from .views import create_store_from_views
from .compaction import range_compactions
from .errors import ClosedError, CorruptionError, ReadOnlyError, StorageError
from .health import Health, is_retryable
from .fs import OSFileSystem
from .memfs import open_in_memory
from .memtable import MemTable, PrefixExtractor
from .options import Options
from .purepython import bind_c_calls, c_call
from .sstable import Table
from .views import TableView
from .version import FileMeta, VersionEdit, VersionSet
from .wal import LogReader, LogWriter

__all__ = ["DB", "Snapshot"]

_bisect_left = bisect.bisect_left

log = logging.getLogger("lsm")


class Snapshot:
    """A consistent, read-only view of the store as of one sequence number.

    Later writes are invisible through it; compaction keeps the versions it
    needs until ``close()`` (or garbage collection).  Usable as a context
    manager and with ``db.get(..., snapshot=)`` / ``db.scan(..., snapshot=)``.
    """
    __slots__ = ("seq", "_db", "__weakref__")

    def __init__(self, db, seq):
        self.seq = seq
        self._db = db

    def close(self) -> None:
        if self._db is not None:
            self._db._release_snapshot(self.seq)
            self._db = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class _Pin:
    """Keeps a version's files alive for an iterator; released on GC."""
    __slots__ = ("versions", "version")

    def __init__(self, versions, version):
        self.versions = versions
        self.version = version

    def __del__(self):
        try:
            self.versions.unref(self.version)
        except Exception:
            pass


class _Log:
    """The active WAL file, with the group-commit bookkeeping: ``synced``,
    the bytes an fsync covered; ``wanted``, the end of the last record whose
    writer waits for an fsync (set under the write lock, so that closing the
    log for a memtable switch syncs what such a writer is owed)."""
    __slots__ = ("number", "file", "writer", "synced", "wanted", "failed")

    def __init__(self, number, file):
        self.number = number
        self.file = file
        self.writer = LogWriter(file)
        self.synced = 0
        self.wanted = 0
        self.failed = None      # the error of a failed append or fsync: never written again


def _state_field(name: str) -> property:
    """The DB attribute that is field ``name`` of its ``DBState`` (lsm/_state.pyx)."""
    setter = getattr(DBState, "set_" + name, None)
    if setter is not None:          # mem and imm: their versions dicts too
        def set_field(db, value):
            setter(db._s, value)
    else:
        def set_field(db, value):
            setattr(db._s, name, value)
    return property(attrgetter("_s." + name), set_field)


class DB(BackgroundWork):
    """An open store.  Create with ``DB.open(path)``; see the module doc.

    This file holds the DB's API and state; flush, compaction and file
    cleanup are ``BackgroundWork`` (lsm/background.py).

    The hot operations are C: ``put``, ``delete``, ``write`` and
    ``write_pairs`` are ``lsm._write.WritePath``'s (``self._writes``), ``get``, ``multi_get`` and
    the ``scan_*`` reads ``lsm._read.PointPath``'s (``self._point``).  Each is
    declared below with ``@c_call(path)`` (lsm/purepython.py), which binds
    it on the open DB to that C method of the same name: a call is one C
    call, no Python frame.  The method's docstring is the operation's; its
    body makes the same call, and runs only under LSM_REGIONS_PUREPYTHON.
    """

    # The state the C paths read on every call lives in C fields
    # (``self._s``, lsm/_state.pyx); these are their Python names.
    _mem = _state_field("mem")
    _imm = _state_field("imm")
    _log = _state_field("log")
    _last_seq = _state_field("last_seq")
    _closed = _state_field("closed")
    _write_error = _state_field("write_error")
    _bg_error = _state_field("bg_error")

    # ------------------------------------------------------------------ open
    @classmethod
    def open(cls, path: str, options: Options = None) -> "DB":
        """Open (creating if missing) the store in directory ``path``.

        Replays the WAL; a torn tail is dropped, a corrupt record in the
        middle raises ``CorruptionError``.  Raises ``StorageError`` if
        another DB object holds the store open.

        ``path`` None: a fresh, empty store in memory (lsm/memfs.py): the same
        engine with nothing on disk and no durability, whose memory is
        released at ``close()``.
        """
        options = Options() if options is None else options
        if not isinstance(options, Options):
            raise TypeError(f"options must be lsm.Options, got {type(options).__name__}")
        options.validate()
        path, options, memory = open_in_memory(path, options)
        db = cls.__new__(cls)
        db._init(os.path.abspath(os.fspath(path)), options)
        db._memory = memory
        try:
            db._recover()
        except BaseException:
            db._abort_open()
            raise
        db._start_background()
        return db

    @classmethod
    def create_from_views(cls, path: str, views, options: Options = None, last_sequence: int = None) -> "DB":
        """Create a store whose tables are bounded views of other stores' tables.

        ``views``: ``[(level, table_path, lo, hi), ...]`` as returned by
        ``live_tables()`` (newest L0 table first), ``lo``/``hi`` the user-key
        bounds ``[lo, hi)`` (None = open).  No data is copied: this is how a
        region split makes its daughters.  Atomic: built in a temporary
        directory renamed to ``path`` at the end, so a failure leaves nothing.

        ``last_sequence``: the source store's last sequence number
        (``stats()["last_sequence"]``), so that new writes sort after the
        viewed data.  When None it is found by reading the views, which
        costs time proportional to their size.
        """
        options = Options() if options is None else options
        create_store_from_views(path, views, options, last_sequence)
        return cls.open(path, options)

    def _init(self, path, options):
        self._s = DBState()
        self.path = path
        self.options = options
        self.fs = options.fs or OSFileSystem()
        self._closed = False
        self._write_lock = threading.Lock()
        self._sync_cv = threading.Condition(threading.Lock())   # group commit (_sync_log)
        self._sync_running = False                  # an fsync of the WAL is under way
        self._mutex = threading.Lock()              # guards imm, bg state, snapshots
        self._cv = threading.Condition(self._mutex)
        self._prefix_extractor = options.prefix_extractor   # set_prefix_extractor changes it
        self._mem = MemTable(options.memtable_entry_overhead, self._prefix_extractor)
        self._imm = None
        self._imm_log_number = None                 # WAL that holds writes after imm
        self._log = None
        self._last_seq = 0
        self._write_error = None
        self._bg_error = None
        self._bg_thread = None
        self._bg_busy = False
        self._auto_compactions = options.auto_compactions
        self._closing = False
        self._snapshots = {}                        # seq -> count
        self._pointers = {}
        self._idle_since = (None, 0.0)              # (last sequence seen, since when): _compaction_due
        self.pending_outputs = set()
        self._stats = {"flushes": 0, "compactions": 0, "trivial_moves": 0, "bytes_flushed": 0, "bytes_compacted": 0,
                       "bytes_read_compaction": 0, "wal_appends": 0, "wal_fsyncs": 0,
                       "paced_compactions": 0, "paced_seconds": 0.0}
        self._health = Health(path, options.resume_retry_seconds, options.resume_retry_max_seconds)
        self._unlogged = set()                      # outputs of a failed edit (_log_edit)
        self._lock_file = None
        self._memory = None                         # the MemoryFileSystem of open(None)
        self.versions = None
        self.block_cache = options.block_cache if options.block_cache is not None \
            else BlockCache(options.block_cache_bytes)
        self._pacer = options.compaction_pacer or CompactionPacer()
        self._tables = TableCache(self._open_table, options.max_open_files,    # file number -> table
                                  options.shared_tables)
        # what the C read paths need of this DB, handed in (they hold no DB)
        self._point = PointPath(self._s, self._tables.peek.__self__, self.block_cache,
                                options.max_open_files, options, lambda: self.versions.cell,
                                self._check_open, self._snapshot_seq, self._table)
        self._writes = WritePath(self._s, self._write_lock, self._stats, options,
                                 lambda: self.versions.cell, self._admit, self._wal_failed,
                                 self._sync_log)
        # each method declared @c_call below becomes its C call (the one fork)
        bind_c_calls(self)

    def _abort_open(self):
        try:
            if self.versions is not None:
                self.versions.close()
            if self._log is not None:
                self._log.file.close()
        finally:
            if self._lock_file is not None:
                self._lock_file.release()
            self._release_memory()

    def _release_memory(self):
        """An in-memory store (``open(None)``) owns its file system: empty it."""
        if self._memory is not None:
            self._memory.clear()

    def _recover(self):
        fs, path = self.fs, self.path
        fs.makedirs(path)
        self._lock_file = fs.lock(os.path.join(path, filenames.LOCK))
        self.versions = VersionSet(fs, path, self.options.num_levels)
        if not fs.exists(os.path.join(path, filenames.CURRENT)):
            self.versions.create()
        else:
            self.versions.recover()
        self._last_seq = self.versions.last_seq
        # Replay every WAL not yet covered by a table, oldest first, into the
        # memtable.  Its records stay there, and their WALs stay live until
        # it is flushed (RocksDB's avoid_flush_during_recovery): an open
        # writes a fresh manifest and an empty WAL, a few hundred bytes, not
        # a table, so a store whose disk filled up opens once that much is
        # free.  Only WALs holding more than a memtable (a crash while one
        # was being flushed) have tables written meanwhile, to bound memory.
        logs = sorted(n for kind, n in filter(None, map(filenames.parse, fs.listdir(path)))
                      if kind == "log" and n >= self.versions.log_number)
        mem = MemTable(self.options.memtable_entry_overhead, self._prefix_extractor)
        edit = VersionEdit()
        oldest = None           # the oldest WAL whose records are only in ``mem``
        try:
            for n in logs:
                self.versions.mark_file_number_used(n)
                lpath = os.path.join(path, filenames.log_name(n))
                reader = LogReader(fs.read_all(lpath), lpath)
                for seq, kind, key, value in replay(reader):
                    mem.add(seq, kind, key, value)
                    if seq > self._last_seq:
                        self._last_seq = seq
                if reader.dropped_tail_bytes:
                    log.warning("%s: dropped a torn tail of %d bytes (%s)", lpath,
                                reader.dropped_tail_bytes, reader.tail_reason)
                oldest = n if oldest is None else oldest
                if mem.approximate_bytes >= self.options.memtable_bytes:
                    edit.added.extend((0, m) for m in self._write_memtable(mem))
                    mem = MemTable(self.options.memtable_entry_overhead, self._prefix_extractor)
                    oldest = None
            self._log = self._new_log()
            edit.log_number = self._log.number if oldest is None else oldest
            self.versions.last_seq = self._last_seq
            self.versions.log_and_apply(edit)
        except StorageError as e:
            if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            tables = mem.approximate_bytes if mem.approximate_bytes >= self.options.memtable_bytes else 0
            raise StorageError(e.errno, f"opening the store needs about "
                               f"{self._open_needs(edit) + tables} bytes free on its file system "
                               f"(a new manifest and CURRENT{', the replayed WAL as a table' if tables else ''}"
                               f"); it failed with: {e.strerror}", path) from e
        self._mem = mem
        self.pending_outputs.clear()
        self._delete_obsolete_files()

    def _open_needs(self, edit) -> int:
        """Bytes an open writes besides tables: the manifest's snapshot of the
        version with ``edit`` applied, and CURRENT (each rounded up to whole
        4 KiB blocks, as a file system allocates them; CURRENT twice, its
        temporary file and itself)."""
        blocks = lambda n: -(-n // 4096) * 4096     # noqa: E731
        return blocks(self.versions.snapshot_bytes(edit)) + 2 * blocks(64)

    def _new_log(self) -> _Log:
        """A new, empty WAL (not yet the store's)."""
        n = self.versions.new_file_number()
        path = os.path.join(self.path, filenames.log_name(n))
        f = self.fs.open_append(path, preallocate=self.options.wal_preallocate())
        try:
            # The new WAL's directory entry must survive power loss before a
            # sync=True write in it is acknowledged.
            self.fs.sync_dir(self.path)
        except BaseException:
            f.close()
            self.fs.remove_if_exists(path)
            raise
        return _Log(n, f)

    def _discard_log(self, lg: _Log) -> None:
        """Close and delete a WAL that never became the store's (nothing in it)."""
        try:
            lg.file.close()
            self.fs.remove_if_exists(os.path.join(self.path, filenames.log_name(lg.number)))
        except StorageError:
            pass        # an empty WAL left behind is replayed as nothing

    # ----------------------------------------------------------------- tables
    def _open_table(self, number, f: FileMeta):
        path, lo, hi, is_view = self._table_key(f)
        t = Table.open(self.fs.open_read(path), self.options, cache=self.block_cache, name=path)
        return TableView(t, lo, hi) if is_view else t

    def _table_key(self, f: FileMeta):
        if f.path is None:
            return (os.path.join(self.path, filenames.table_name(f.number)), None, None, False)
        return (os.path.normpath(os.path.join(self.path, f.path)), f.lo, f.hi, True)

    def _table(self, f: FileMeta):
        """The open table (or view) of ``f``, through the table cache."""
        return self._tables.get(f.number, f)

    def _table_iter(self, f: FileMeta):
        return self._table(f).iterator()

    # ------------------------------------------------------------------ writes
    @c_call("_writes")
    def put(self, key: bytes, value: bytes, sync: bool = None) -> None:
        """Set ``key`` to ``value``.  See the module doc for durability.
        Runs as ``lsm._write.WritePath.put``: the checks, the WAL record and
        the memtable in one C call (docs/walkthrough.md, "A put")."""
        self._writes.put(key, value, sync)

    @c_call("_writes")
    def delete(self, key: bytes, sync: bool = None) -> None:
        """Remove ``key`` (a tombstone; no error if it is absent).  Runs as
        ``lsm._write.WritePath.delete``."""
        self._writes.delete(key, sync)

    def _admit(self) -> _Log:
        """With the write lock held: refuse if closed or failed, make room
        in the memtable; returns the WAL to append to."""
        if self._closed:
            self._check_open()
        if self._write_error is not None or self._bg_error is not None:
            self._refuse_or_resume()
        if (self._mem.approximate_bytes >= self.options.memtable_bytes
                or len(self.versions.current.levels[0]) >= self.options.l0_slowdown_trigger):
            self._make_room()
        return self._log

    @c_call("_writes")
    def write(self, batch: WriteBatch, sync: bool = None) -> None:
        """Apply every operation of ``batch`` atomically, in order (one WAL
        record).  Runs as ``lsm._write.WritePath.write``."""
        self._writes.write(batch, sync)

    @c_call("_writes")
    def write_pairs(self, pairs: list, sync: bool = None) -> None:
        """``write`` of a list of ``(key, value)`` tuples, ``value`` None a
        delete: every one applied atomically, in order (one WAL record),
        with no WriteBatch made (how the region server writes; the caller
        knows no record kinds).  Checked as ``put`` and ``delete`` check
        theirs, before anything is written.  Runs as
        ``lsm._write.WritePath.write_pairs``."""
        self._writes.write_pairs(pairs, sync)

    # ------------------------------------------------------- degraded state
    def _refuse_or_resume(self):
        """With the write lock held, the store failed: raise the refusal, fast.
        Without a background thread, a retry that is due is made first (with
        one, that thread makes it)."""
        if not self.options.background:
            wait = self._health.due()
            if wait is not None and wait <= 0:
                try:
                    self._resume_locked()
                    return
                except Exception:       # noqa: BLE001 - the health keeps it; refuse below
                    pass
        raise self._health.refusal(self._write_error or self._bg_error)

    def _wal_failed(self, e):
        """A WAL append, its fsync or its switch failed with ``e``: writes are
        refused from now on, until a resume retires the WAL (lsm._write calls
        this too)."""
        with self._mutex:
            if self._write_error is None:
                self._write_error = e
            self._health.failed(e, "WAL write")
            self._cv.notify_all()

    def resume(self) -> None:
        """Retry now what made the store refuse writes (RocksDB's
        ``DB::Resume``): after a full disk, or descriptors that ran out, once
        the resource is back.  Returns at once when the store accepts writes;
        raises the refusal (``ReadOnlyError``, ``retryable`` telling whether
        a later retry may succeed) if the retry fails or the data is corrupt.
        A store with a background thread also retries by itself."""
        with self._write_lock:
            self._check_open()
            if self._write_error is None and self._bg_error is None:
                return
            if isinstance(self._health.cause, CorruptionError):
                raise self._health.refusal(self._bg_error)
            try:
                self._resume_locked()
            except Exception as e:
                raise self._health.refusal(e) from e

    def health(self) -> dict:
        """``{"state": "ok" | "degraded" | "stopped", "cause": str or None,
        "failed": what failed ("WAL write", "flush", "compaction"), "seconds":
        how long since, "retries": resumes tried since}`` (lsm/health.py)."""
        h = self._health
        since = h.since
        return {"state": h.state, "cause": None if h.cause is None else str(h.cause),
                "failed": h.where, "retries": h.attempts,
                "seconds": 0.0 if since is None else time.monotonic() - since}

    def _sync_log(self, lg: _Log, end: int) -> None:
        """Group commit: make the WAL durable up to ``end``.

        One fsync runs at a time and covers every record appended before it
        starts.  A writer whose record a running fsync covers waits for it
        and returns; one whose record came later becomes the next syncer the
        moment it ends.  (With one lock around the fsync instead, covered
        writers queued behind the next fsync: 1.5 records an fsync on 4
        threads.)  After a failed fsync nobody retries: a retry can succeed
        on pages the kernel already dropped (PostgreSQL's fsyncgate)."""
        cv = self._sync_cv
        with cv:
            while lg.synced < end:
                if self._sync_running:
                    cv.wait()
                    continue
                if lg.failed is not None:
                    raise ReadOnlyError(f"write not made durable after an earlier failure: "
                                        f"{lg.failed}", cause=lg.failed,
                                        retryable=is_retryable(lg.failed))
                self._sync_running = True
                target = lg.file.size
                cv.release()
                try:
                    lg.file.sync()
                except BaseException as e:
                    lg.failed = e
                    self._wal_failed(e)
                    raise
                else:
                    if target > lg.synced:
                        lg.synced = target
                    self._stats["wal_fsyncs"] += 1
                finally:
                    cv.acquire()
                    self._sync_running = False
                    cv.notify_all()

    def _close_log(self, lg: _Log) -> None:
        """Sync and close ``lg`` once no fsync of it runs; writers waiting to
        sync it then find their records covered.  It is synced when the
        store syncs, or when a writer of it still waits for an fsync (a
        ``sync=True`` write to a store without ``sync``, whose memtable
        switch came between its append and its fsync).  After a failed
        write or fsync it is closed without one."""
        cv = self._sync_cv
        with cv:
            while self._sync_running:
                cv.wait()
            if lg.failed is None:
                if lg.synced < lg.file.size and (self.options.sync or lg.wanted > lg.synced):
                    lg.file.sync()
                lg.synced = lg.file.size
                lg.file.close()
            else:
                # no fsync after a failed write or fsync, and no writer still
                # to sync finds its record covered: it gets the failure
                # (_sync_log); a close that fails adds nothing to know
                try:
                    lg.file.close()
                except StorageError:
                    pass

    def _make_room(self):
        """Called with the write lock held: switch memtables, or wait for the
        background thread while L0 or the frozen memtable is backed up."""
        opts = self.options
        delayed = False
        while True:
            if self._write_error is not None or self._bg_error is not None:
                self._refuse_or_resume()
            l0 = len(self.versions.current.levels[0])
            if not delayed and l0 >= opts.l0_slowdown_trigger:
                # Let compaction catch up a little, once per write (LevelDB).
                time.sleep(0.001)
                delayed = True
                continue
            if self._mem.approximate_bytes < opts.memtable_bytes:
                return
            if self._imm is not None or l0 >= opts.l0_stop_trigger:
                if opts.background:
                    with self._mutex:
                        if self._imm is not None or len(self.versions.current.levels[0]) >= opts.l0_stop_trigger:
                            self._cv.wait(0.1)
                    continue
                if self._imm is not None or self._compaction_due() is not None:
                    self._background_step()
                    continue
                # inline, automatic compactions off: nothing will shrink L0; go on
            self._switch_memtable()
            if not opts.background:
                self._run_inline_work()
            return

    def _switch_memtable(self):
        """Freeze the memtable and start a new WAL (write lock held)."""
        old = self._log
        try:
            new = self._new_log()
        except BaseException as e:      # no WAL to write to: refuse writes until one is made
            self._wal_failed(e)
            raise
        try:
            self._close_log(old)
        except BaseException as e:      # the old WAL's tail is unknown: a resume retires it
            old.failed = e
            self._discard_log(new)
            self._wal_failed(e)
            raise
        self._log = new
        with self._mutex:
            self._imm = self._mem
            self._imm_log_number = self._log.number
            self._mem = MemTable(self.options.memtable_entry_overhead, self._prefix_extractor)
            self._cv.notify_all()

    # ------------------------------------------------------------------- reads
    @c_call("_point")
    def get(self, key: bytes, snapshot: Snapshot = None):
        """The value of ``key``, or None.

        The memtable, the frozen memtable, then the current version's tables
        (L0 newest first, one table per deeper level).  Runs as
        ``lsm._read.PointPath.get``, one C call.
        The memtables are read with the GIL; the tables' search runs with it
        released once a second thread reads too, and is handed back without
        a sleep (lsm/_read.pyx, "Two reader threads"); ``multi_get``
        releases it once for many keys (docs/walkthrough.md, "Inside the
        engine: A point read").
        """
        return self._point.get(key, snapshot)

    @c_call("_point")
    def multi_get(self, keys, snapshot: Snapshot = None) -> list:
        """``[get(k, snapshot) for k in keys]``: each key's value, or None,
        every key read at one sequence (the latest, or the snapshot's), as
        RocksDB's MultiGet.  The memtables are read with the GIL, then the
        tables' searches of all the keys run in one section without it: a
        batch hands the GIL over once, not once a key.  Runs as
        ``lsm._read.PointPath.multi_get``.
        """
        return self._point.multi_get(keys, snapshot)

    def _snapshot_seq(self, snapshot):
        if not isinstance(snapshot, Snapshot):
            raise TypeError(f"snapshot must be an lsm Snapshot, got {type(snapshot).__name__}")
        if snapshot._db is not self:
            raise ClosedError("snapshot is closed or belongs to another DB")
        return snapshot.seq

    def snapshot(self) -> Snapshot:
        """A consistent view; later writes do not change it.  Close it when done."""
        if self._closed:
            self._check_open()
        with self._mutex:
            seq = self._last_seq
            self._snapshots[seq] = self._snapshots.get(seq, 0) + 1
        return Snapshot(self, seq)

    def _release_snapshot(self, seq):
        with self._mutex:
            n = self._snapshots.get(seq, 0) - 1
            if n <= 0:
                self._snapshots.pop(seq, None)
            else:
                self._snapshots[seq] = n

    def _smallest_snapshot(self):
        with self._mutex:
            return min(self._snapshots, default=self._last_seq)

    def iterator(self, start=None, end=None, snapshot=None) -> DBIterator:
        """A positionable iterator (seek/next/prev) over ``[start, end)``.

        Its merging iterator holds only the sources that may have keys in the
        range: a memtable with a key in it, the L0 tables and the tables of
        each deeper level whose key ranges meet it (a level's one table
        directly, several through a LevelIterator).  A short range, such as
        one row, usually reads one source, with no merge at all.
        """
        check_bound("start", start)
        check_bound("end", end)
        if self._closed:
            self._check_open()
        seq = self._last_seq if snapshot is None else self._snapshot_seq(snapshot)
        # After seq: every entry at or below it is in these memtables by now.
        mem, imm = self._mem, self._imm
        v = self.versions.ref()
        pin = _Pin(self.versions, v)
        lo, hi = start, end
        children = []
        for m in (mem, imm):
            it = m.iterator(lo, hi) if m is not None else None
            if it is not None:
                children.append(it)
        for f in v.levels[0]:
            if (hi is None or f.smallest_user < hi) and (lo is None or f.largest_user >= lo):
                children.append(self._table_iter(f))
        for files, largest, smallest_users, largest_users in v.bounds:
            i = 0 if lo is None else _bisect_left(largest_users, lo)
            j = len(files) if hi is None else _bisect_left(smallest_users, hi)
            if j - i == 1:
                children.append(self._table_iter(files[i]))
            elif j - i > 1:
                sub = files[i:j]
                children.append(LevelIterator(largest[i:j],
                                              lambda k, sub=sub: self._table_iter(sub[k])))
        if len(children) == 1:
            it = children[0]
        else:
            it = MergingIterator(children) if children else ListIterator([], [])
        return DBIterator(it, seq, start, end, pin)

    def scan(self, start: bytes = None, end: bytes = None, reverse: bool = False, snapshot: Snapshot = None):
        """Iterate ``(key, value)`` over ``[start, end)`` in key order (or reversed).

        Lazy: each step reads one entry ahead (``DBIterator.__next__``)."""
        return self.iterator(start, end, snapshot).begin(reverse)

    @c_call("_point")
    def scan_chunk(self, start: bytes = None, end: bytes = None, limit: int = 1000, reverse: bool = False,
                   snapshot: Snapshot = None) -> list:
        """The first ``limit`` ``(key, value)`` of ``[start, end)`` in key order
        (or the last ones, reversed) as one list: how the region server
        reads a range in chunks.  The same entries as ``iterator(start, end)``
        read with ``next_batch``.  Runs as ``lsm._read.PointPath.scan_chunk``,
        one C call."""
        return self._point.scan_chunk(start, end, limit, reverse, snapshot)

    @c_call("_point")
    def scan_short(self, start: bytes, end: bytes, limit: int = 1000, snapshot: Snapshot = None) -> list:
        """``scan_chunk(start, end, limit, snapshot=snapshot)`` for a range that
        holds few keys (a row of the data API): each source's entries of it
        are read directly and merged, building no iterator; a source holding
        more than 64 keys of the range makes it take ``scan_chunk``'s path.
        Same result either way.  Runs as ``lsm._read.PointPath.scan_short``."""
        return self._point.scan_short(start, end, limit, snapshot)

    @c_call("_point")
    def scan_short_many(self, ranges: list, limit: int = 1000, snapshot: Snapshot = None) -> list:
        """``[scan_short(start, end, limit, snapshot) for start, end in ranges]``
        in one call, every range read at one sequence (the latest, or the
        snapshot's): a consistent read of many rows (the data API's
        BatchGetRow).  ``ranges`` is a list of ``(start, end)`` tuples.  Runs
        as ``lsm._read.PointPath.scan_short_many``."""
        return self._point.scan_short_many(ranges, limit, snapshot)

    # ------------------------------------------------------- flush / compaction
    def flush(self, wait: bool = True) -> None:
        """Freeze the memtable and write it to a table (waits by default)."""
        with self._write_lock:
            self._check_open()
            if self._write_error is not None:       # its WAL failed: only a resume switches it
                self._refuse_or_resume()
            if len(self._mem):
                while self._imm is not None:
                    if self.options.background:
                        with self._mutex:
                            self._cv.wait(0.1)
                    else:
                        self._background_step()
                    self._raise_bg_error()
                self._switch_memtable()
                if not self.options.background:
                    self._run_inline_work()
        if wait:
            self._wait_idle(lambda: self._imm is None)

    def set_auto_compactions(self, enabled: bool) -> None:
        """Turn automatic compactions on or off (``Options.auto_compactions``).
        Off, a running automatic compaction aborts at its next check (its
        inputs stay; a later one redoes it); flushes and ``compact_range`` are
        not affected.  Turned on, the background thread picks what is
        due at once (without one, the next flush or memtable switch runs it)."""
        if not isinstance(enabled, bool):
            raise TypeError(f"enabled must be a bool, got {type(enabled).__name__}")
        with self._mutex:
            self._auto_compactions = enabled
            self._cv.notify_all()

    def set_prefix_extractor(self, prefix_extractor) -> None:
        """Use ``prefix_extractor`` (``Options.prefix_extractor``; None: none)
        from now on: the memtables index their keys by it at once, and the
        next ones are made with it."""
        if prefix_extractor is not None and not isinstance(prefix_extractor, PrefixExtractor):
            raise TypeError("prefix_extractor must be an lsm.PrefixExtractor or None, "
                            f"got {type(prefix_extractor).__name__}")
        with self._write_lock:              # no write, no memtable switch meanwhile
            self._check_open()
            self._prefix_extractor = prefix_extractor
            for mem in (self._mem, self._imm):
                if mem is not None:
                    mem.use_prefix_extractor(prefix_extractor)

    def compact_range(self, start: bytes = None, end: bytes = None) -> None:
        """Flush, then compact every table meeting ``[start, end]`` down to one
        level, rewriting views into own files.  Blocks until done."""
        check_bound("start", start)
        check_bound("end", end)
        self.flush()
        while True:
            with self._mutex:
                if self._closing:           # close() aborts the compaction: stop here
                    raise ClosedError("DB is closed")
                self._wait_bg_quiet_locked()
                c = range_compactions(self.versions.current, self.options, start, end)
                if c is None:
                    return
                self._bg_busy = True
            with self._background_job("compaction"):
                self._run_compaction(c)

    # ------------------------------------------------------------- introspection
    def stats(self) -> dict:
        """Files and bytes per level, memtable bytes, flush/compaction counts,
        and write amplification (table bytes written / bytes flushed)."""
        v = self.versions.current
        s = self._stats
        flushed = s["bytes_flushed"]
        imm = self._imm
        return {
            "files_per_level": [len(lv) for lv in v.levels],
            "bytes_per_level": [sum(f.size for f in lv) for lv in v.levels],
            "table_bytes": sum(f.size for _l, f in v.files()),
            "memtable_bytes": self._mem.approximate_bytes + (imm.approximate_bytes if imm is not None else 0),
            "memtable_entries": len(self._mem) + (len(imm) if imm is not None else 0),
            "num_entries": sum(f.entries for _l, f in v.files()) + len(self._mem),
            "views": sum(1 for _l, f in v.files() if f.is_view),
            "auto_compactions": self._auto_compactions,
            "flushes": s["flushes"],
            "compactions": s["compactions"],
            "trivial_moves": s["trivial_moves"],
            "bytes_flushed": flushed,
            "bytes_compacted": s["bytes_compacted"],
            "write_amplification": (flushed + s["bytes_compacted"]) / flushed if flushed else 0.0,
            "last_sequence": self._last_seq,
            "wal_appends": s["wal_appends"],     # WAL records written (one per write or batch)
            "wal_fsyncs": s["wal_fsyncs"],       # WAL fsyncs (group commit: one may cover many)
            # compactions paced (not urgent: Options.compaction_throughput_lower), seconds slept
            "paced_compactions": s["paced_compactions"],
            "paced_seconds": round(s["paced_seconds"], 3),
            "block_cache": self.block_cache.stats() if hasattr(self.block_cache, "stats") else None,
        }

    def _tables_in(self, start, end):
        """The current version's tables meeting ``[start, end]``, the version
        pinned until the walk ends: the caller opens them one by one, and a
        compaction finishing meanwhile must not delete their files."""
        v = self.versions.ref()
        try:
            for _lv, f in v.files():
                if end is not None and f.smallest_user >= end:
                    continue
                if start is not None and f.largest_user < start:
                    continue
                yield f
        finally:
            self.versions.unref(v)

    def approximate_size(self, start: bytes = None, end: bytes = None) -> int:
        """Approximate table bytes of keys in ``[start, end)`` (memtable excluded)."""
        total = 0
        for f in self._tables_in(start, end):
            t = self._table(f)
            a = 0 if start is None else t.approximate_offset(start)
            b = t.file_size if end is None else t.approximate_offset(end)
            if start is None and end is None:
                a, b = 0, t.file_size
            total += max(0, b - a)
        return total

    def middle_key(self, start: bytes = None, end: bytes = None):
        """The user key that halves the table bytes of ``[start, end)``.

        Weighted by bytes, from every table's block index: the split point of
        a region.  Returns a key strictly greater than ``start`` (and the
        smallest key), or None when the range holds too little to split.
        """
        points = []
        for f in self._tables_in(start, end):
            # About 512 points per table: the answer is then within about
            # 1/512 of a table's bytes, and the cost stays flat as regions grow.
            prev = 0
            for key, cum in self._table(f).block_boundaries(512):
                w, prev = cum - prev, cum
                if (start is None or key > start) and (end is None or key < end):
                    points.append((key, w))
        if len(points) < 2:
            return None
        points.sort()
        total = sum(w for _k, w in points)
        acc = 0
        smallest = points[0][0]
        for key, w in points:
            acc += w
            if acc * 2 >= total and key > smallest:
                return key
        return None

    def live_tables(self):
        """``[(level, path, lo, hi)]`` of the current version (newest L0 first)."""
        out = []
        for level, f in self.versions.current.files():
            path, lo, hi, _view = self._table_key(f)
            out.append((level, path, lo, hi))
        return out

    def external_files(self) -> set:
        """Absolute paths of other stores' tables this store still refers to."""
        _numbers, views = self.versions.live_files()
        return {os.path.normpath(os.path.join(self.path, p)) for p in views}

    def check(self) -> None:
        """Raise ``CorruptionError`` unless the engine's invariants hold
        (levels, files and sizes, numbers, sequences: see lsm/check.py).
        Waits for background work to pause; meant for tests and tools."""
        check_db(self)

    # ------------------------------------------------------------------- close
    def _check_open(self):
        """Raise ``ClosedError`` after ``close()``: the one "DB is closed"."""
        if self._closed:
            raise ClosedError("DB is closed")

    def close(self) -> None:
        """Stop background work and release the store (idempotent).

        Unflushed writes stay in the WAL and are replayed at the next open.
        """
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
        with self._mutex:
            self._closing = True
            self._cv.notify_all()
        if self._bg_thread is not None:
            self._bg_thread.join()
        try:
            if self._log is not None:
                self._close_log(self._log)
            self.versions.close()
            self._tables.close()
            # The point read's view keeps its tables' readers: let them go too.
            self.versions.cell.view = None
        finally:
            self._lock_file.release()
            self._release_memory()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<lsm.DB {self.path!r}{' closed' if self._closed else ''}>"

