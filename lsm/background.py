"""Background work of the DB: flush, compaction, and deleting obsolete files.

``BackgroundWork`` is the part of ``lsm.DB`` (lsm/db.py) that changes the
tree; the DB's API and its state live in db.py.  One unit of work
(``_background_step``) is either a flush of the frozen memtable (``_imm``)
to L0 tables, or one compaction chosen by ``pick_compaction``
(lsm/compaction.py, a pure query; the round-robin pointer of a level is
advanced here, when the compaction is run).  A compaction whose inputs
overlap nothing below becomes a trivial move (a manifest edit); otherwise
its inputs are merged (``input_iterator``), filtered by a
``CompactionStream`` and written by ``build_tables`` (lsm/builder.py).
Every step logs one ``VersionEdit`` and then deletes the files no live
version, iterator or pending output uses.

Who runs it: with ``Options.background`` the thread of ``_bg_loop``;
without, the writer itself (``_run_inline_work``) until nothing is due.
``_bg_busy`` (under ``_mutex``) makes steps mutually exclusive; an error in
work (in the thread or inline) is kept in ``_bg_error`` and classified by
the store's ``Health`` (lsm/health.py): writes are refused
(``ReadOnlyError``) until ``_resume_locked`` has redone what failed, which
the thread does by itself, with backoff, for a retryable error (inline: the
next write does, once the wait is over), and ``DB.resume()`` does at once.

A resume, with the write lock held: the frozen memtable is flushed; a WAL
whose append, fsync or switch failed is retired (a fresh WAL is made, the
memtable frozen onto it and flushed, so the failed WAL's records are in a
table and the edit retires it: none is replayed twice, the torn one never);
a compaction that failed is run again; a manifest whose edit failed is
replaced by a fresh one (VersionSet.log_and_apply), and only then are the
tables of a failed edit deleted (``_unlogged``).

DB state this class reads and writes (defined in ``DB._init``): ``_mutex``,
``_cv``, ``_imm``, ``_imm_log_number``, ``_bg_busy``, ``_bg_error``, ``_write_error``,
``_health``, ``_unlogged``, ``_write_lock``, ``_mem``, ``_auto_compactions``,
``_bg_thread``, ``_closing``, ``_pointers``, ``pending_outputs``,
``_stats``, ``_last_seq``, ``_log``, ``_tables``, ``versions``, ``fs``,
``path``, ``options``.
"""
import contextlib
import logging
import os
import threading
import time

from . import filenames
from ._compaction_stream import CompactionAborted, CompactionStream
from .builder import build_tables
from .compaction import idle_compaction, input_iterator, pacing_limit, pick_compaction
from .errors import LSMError, StorageError
from .memtable import MemTable
from .version import VersionEdit

__all__ = ["BackgroundWork", "CompactionPacer"]

log = logging.getLogger("lsm")


class CompactionPacer:
    """One timeline for the paced compactions of the stores that share it
    (``Options.compaction_pacer``; a region server gives its regions one,
    as HBase's compaction throughput controller is per region server and
    RocksDB's rate limiter is shared through its options): together they
    read no more bytes a second than the limit of each reservation, however
    many stores compact at once.  Thread-safe."""

    #: Seconds of pace a compaction may run ahead of the timeline (a burst).
    BURST = 0.05

    def __init__(self):
        self._lock = threading.Lock()
        self._next = 0.0            # when the bytes reserved so far are due

    def reserve(self, nbytes: float, limit: float) -> float:
        """Reserve ``nbytes`` at ``limit`` bytes a second; returns the
        seconds the caller should sleep before going on (0: none)."""
        now = time.monotonic()
        with self._lock:
            self._next = max(self._next, now - self.BURST) + nbytes / limit
            return max(0.0, self._next - now - self.BURST)


class BackgroundWork:
    """Flush, compaction and cleanup: mixed into ``lsm.DB`` (see the module doc)."""

    def _build_tables(self, stream, cut, level):
        return build_tables(stream, self.options, self.fs, self.path, self.versions.new_file_number,
                            self.pending_outputs, self._mutex, cut, level)

    def _start_background(self):
        if self.options.background:
            self._bg_thread = threading.Thread(target=self._bg_loop, name=f"lsm-bg:{self.path}", daemon=True)
            self._bg_thread.start()
        with self._mutex:
            self._cv.notify_all()


    def _wait_bg_quiet_locked(self):
        while self._bg_busy:
            self._cv.wait(0.1)
        self._raise_bg_error()


    def _record_bg_error(self, e, where):
        """``where`` (a flush, a compaction) failed with ``e``: keep the first
        error; the store refuses writes until a resume (LevelDB's bg_error_,
        RocksDB's ErrorHandler).  A failed table or manifest write leaves
        those files' state unknown: the resume starts fresh ones."""
        with self._mutex:
            if self._bg_error is None:
                self._bg_error = e if isinstance(e, LSMError) else StorageError(str(e))
            self._health.failed(e, where)
            self._cv.notify_all()


    def _raise_bg_error(self):
        if self._bg_error is not None:
            raise self._bg_error


    def _wait_idle(self, cond):
        while not cond():
            self._raise_bg_error()
            if self.options.background:
                with self._mutex:
                    if not cond():
                        self._cv.wait(0.1)
            else:
                self._background_step()
        self._raise_bg_error()


    def _bg_loop(self):
        while True:
            with self._mutex:
                while True:
                    if self._closing:
                        return
                    if self._write_error is not None or self._bg_error is not None:
                        wait = self._health.due()     # None: stopped, only resume() helps
                        if wait is not None and wait <= 0:
                            break
                        self._cv.wait(1.0 if wait is None else wait)
                    elif self._work_due():
                        break
                    else:
                        self._cv.wait(1.0)
                failed = self._write_error is not None or self._bg_error is not None
            try:
                if failed:
                    with self._write_lock:
                        if not self._closed:
                            self._resume_locked()
                else:
                    self._background_step()
            except Exception:   # noqa: BLE001 - kept and logged once by the health; writers see it
                pass


    def _work_due(self):
        return self._imm is not None or (not self._bg_busy and self._compaction_due() is not None)

    def _compaction_due(self):
        """The compaction to run next, or None (also while auto compactions
        are off): ``pick_compaction``'s, else L0's once no write has come for
        ``Options.l0_idle_seconds`` (the last sequence number unchanged that
        long, seen by the background thread's wake-ups, at least once a
        second)."""
        if not self._auto_compactions:
            return None
        v = self.versions.current
        c = pick_compaction(v, self.options, self._pointers)
        idle = self.options.l0_idle_seconds
        if c is None and idle and v.levels[0]:
            seq, now = self._last_seq, time.monotonic()
            if self._idle_since[0] != seq:
                self._idle_since = (seq, now)
            elif now - self._idle_since[1] >= idle:
                c = idle_compaction(v)
        return c


    def _background_step(self):
        """One unit of background work: flush first, else one compaction."""
        with self._mutex:
            if self._bg_busy:
                self._cv.wait(0.1)
                return
            self._bg_busy = True
        flush = self._imm is not None
        with self._background_job("flush" if flush else "compaction"):
            if flush:
                self._flush_imm()
            else:
                c = self._compaction_due()
                if c is not None:
                    c.advance_pointer(self._pointers)
                    self._run_compaction(c, allow_move=True, paced=True)

    @contextlib.contextmanager
    def _background_job(self, where):
        """The end of one job (``where``: "flush", "compaction") that set
        ``_bg_busy``: a failure is recorded (the store refuses writes until a
        resume) and re-raised; the flag clears and waiters wake either way."""
        try:
            yield
        except BaseException as e:
            self._record_bg_error(e, where)
            raise
        finally:
            with self._mutex:
                self._bg_busy = False
                self._cv.notify_all()


    def _write_memtable(self, mem):
        """Write ``mem`` (frozen: nothing writes it any more) to L0 table(s);
        returns their FileMeta (not installed)."""
        it = mem.flush_iterator()
        it.seek_to_first()
        metas = self._build_tables(CompactionStream(it, self._smallest_snapshot(), False), cut=False, level=0)
        for m in metas:
            self._stats["flushes"] += 1
            self._stats["bytes_flushed"] += m.size
        return metas


    def _flush_imm(self):
        imm = self._imm
        metas = self._write_memtable(imm)
        edit = VersionEdit()
        for m in metas:
            edit.add(0, m)
        edit.log_number = self._imm_log_number
        self._log_edit(edit, metas)
        with self._mutex:
            self._imm = None
            for m in metas:
                self.pending_outputs.discard(m.number)
            self._cv.notify_all()
        self._delete_obsolete_files()


    def _log_edit(self, edit, metas):
        """Log ``edit``, which installs the new tables ``metas``.  If that
        fails, the manifest CURRENT names may or may not list them: they are
        kept (in ``pending_outputs``) until a later edit has succeeded."""
        self.versions.last_seq = self._last_seq
        try:
            self.versions.log_and_apply(edit)
        except BaseException:
            with self._mutex:
                self._unlogged.update(m.number for m in metas)
            raise

    def _resume_locked(self):
        """With the write lock held: redo what made the store refuse writes
        (the module doc says how) and accept writes again; on failure the
        health waits longer before the next try, and the error is raised."""
        with self._mutex:
            while self._bg_busy:
                self._cv.wait(0.1)
            if self._write_error is None and self._bg_error is None:
                return
            self._bg_busy = True
            where = self._health.where
        try:
            if self._imm is not None:
                self._flush_imm()
            if self._write_error is not None:
                self._retire_log()
                self._flush_imm()
            if where == "compaction":
                c = self._compaction_due()
                if c is not None:
                    self._run_compaction(c, allow_move=True)
            if self.versions.must_roll:         # no edit since the failed one
                self._log_edit(VersionEdit(), ())
        except Exception as e:
            with self._mutex:
                if self._bg_error is None and self._write_error is None:
                    self._bg_error = e
                self._health.retry_failed(e)
            raise
        finally:
            with self._mutex:
                self._bg_busy = False
                self._cv.notify_all()
        with self._mutex:
            self.pending_outputs -= self._unlogged
            self._unlogged.clear()
            self._bg_error = self._write_error = None
            self._health.resumed()
            self._cv.notify_all()
        self._delete_obsolete_files()

    def _retire_log(self):
        """Freeze the memtable onto a fresh WAL, leaving the failed one (its
        tail torn or unknown) to be retired by the flush that follows."""
        new = self._new_log()
        old = self._log
        self._close_log(old)            # no fsync: it failed (lsm/db.py)
        self._log = new
        with self._mutex:
            self._imm = self._mem
            self._imm_log_number = new.number
            self._mem = MemTable(self.options.memtable_entry_overhead, self._prefix_extractor)
            self._write_error = None
            self._cv.notify_all()

    def _trivial_move(self, c) -> bool:
        """LevelDB's trivial move: tables of own files that overlap neither
        each other nor the output level change level by a manifest edit,
        without being rewritten (sequential loads then cost no compaction)."""
        files = c.inputs[0]
        if c.inputs[1] or c.level == c.output_level or any(f.is_view for f in files):
            return False
        files = sorted(files, key=lambda f: f.smallest_user)
        if any(a.largest_user >= b.smallest_user for a, b in zip(files, files[1:])):
            return False
        edit = VersionEdit()
        for f in files:
            edit.delete(c.level, f.number)
            edit.add(c.output_level, f)
        self._log_edit(edit, ())
        self._stats["trivial_moves"] += 1
        return True


    def _run_compaction(self, c, allow_move=False, paced=False):
        # Only background compactions move tables; a manual one (compact_range)
        # rewrites, so the compaction filter and view rewriting see the data
        # (LevelDB's rule too).  Only the background step's may be paced: a
        # resume runs its compaction holding the write lock.
        if allow_move and self._trivial_move(c):
            return
        v = self.versions.current
        it = input_iterator(c, self._table_iter)
        it.seek_to_first()
        lo, hi = c.user_range()
        deeper = any(v.overlapping(lv, lo, hi) for lv in range(c.output_level + 1, len(v.levels)))
        factory = self.options.compaction_filter_factory
        filter_fn = factory() if factory is not None else None
        check = self._auto_compaction_check if allow_move else self._compaction_check
        limit = pacing_limit(c, v, self.options) if paced else None
        if limit is not None:
            check = self._paced(c, limit, check, lambda: stream.entries_in)
        stream = CompactionStream(it, self._smallest_snapshot(), not deeper, filter_fn, check)
        try:
            metas = self._build_tables(stream, cut=True, level=c.output_level)
        except CompactionAborted:
            # The store is closing (or, for an automatic compaction, automatic
            # compactions were turned off): its outputs are already removed
            # (build_tables), the inputs stay; a later compaction redoes it.
            log.debug("%s: %r aborted", self.path, c)
            return
        edit = VersionEdit()
        for level, f in c.all_inputs():
            edit.delete(level, f.number)
            self._stats["bytes_read_compaction"] += f.size
        for m in metas:
            edit.add(c.output_level, m)
            self._stats["bytes_compacted"] += m.size
        self._log_edit(edit, metas)
        with self._mutex:
            for m in metas:
                self.pending_outputs.discard(m.number)
        self._stats["compactions"] += 1
        log.debug("%s: %r -> %d tables", self.path, c, len(metas))
        self._delete_obsolete_files()


    def _compaction_check(self):
        """Called by a running compaction every few thousand entries: flush a
        frozen memtable meanwhile (LevelDB's DoCompactionWork does; writers
        and ``flush()`` then do not wait for the whole compaction), and
        abort when the store is closing (HBase's closing region), so that
        closing a store, e.g. the parent of a split, does not wait for it."""
        if self._imm is not None and not self._closing:
            self._flush_imm()
        return self._closing

    def _paced(self, c, limit, check, entries_done):
        """``check`` that also paces compaction ``c`` to ``limit`` bytes of
        input a second on the store's ``CompactionPacer``
        (``Options.compaction_throughput_lower`` says which compactions and
        why): when the work is ahead of the pace it sleeps, the GIL
        released, in steps of at most 50 ms so that a close or a frozen
        memtable is seen soon.  While L0 holds ``l0_compaction_trigger``
        tables or more it neither sleeps nor reserves: the compaction holds
        the one background thread, and an urgent one waits."""
        files = c.inputs[0] + c.inputs[1]
        per_entry = sum(f.size for f in files) / max(1, sum(f.entries for f in files))
        trigger = self.options.l0_compaction_trigger
        self._stats["paced_compactions"] += 1
        done = 0.0          # input bytes accounted for so far

        def paced():
            nonlocal done
            if check():
                return True
            now = entries_done() * per_entry
            if len(self.versions.current.levels[0]) >= trigger:
                done = now
                return False
            wait, done = self._pacer.reserve(now - done, limit), now
            while wait > 0:
                step = min(wait, 0.05)
                time.sleep(step)
                self._stats["paced_seconds"] += step
                wait -= step
                if check():
                    return True
            return False
        return paced

    def _auto_compaction_check(self):
        """``_compaction_check`` of an automatic compaction: it also aborts
        when automatic compactions are turned off (HBase's compaction switch
        interrupts running compactions too), e.g. on a region about to split."""
        return self._compaction_check() or not self._auto_compactions

    def _delete_obsolete_files(self):
        """Delete files no live version, iterator or pending output uses."""
        numbers, _views = self.versions.live_files()
        with self._mutex:
            keep = numbers | self.pending_outputs
        log_number = self.versions.log_number
        current_log = self._log.number if self._log is not None else None
        for name in self.fs.listdir(self.path):
            p = filenames.parse(name)
            if p is None:
                continue
            kind, n = p
            if kind == "sst" and n not in keep:
                path = os.path.join(self.path, name)
                self._tables.evict(n)
                self.fs.remove_if_exists(path)
            elif kind == "log" and n < log_number and n != current_log:
                self.fs.remove_if_exists(os.path.join(self.path, name))
            elif kind == "manifest" and n != self.versions.manifest_number and not self.versions.must_roll:
                # (after a failed edit, CURRENT may name a manifest that is not
                # ``manifest_number``: every one stays until an edit succeeds)
                self.fs.remove_if_exists(os.path.join(self.path, name))


    def _run_inline_work(self):
        """Without a background thread: flush and compact until nothing is due."""
        while self._imm is not None or self._compaction_due() is not None:
            self._background_step()
