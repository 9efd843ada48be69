"""``DB.check()``: the engine's invariants, checked on a quiet store.

The engine's model test (tests/test_db_model.py) calls it after every step,
as the regions model test calls ``server.check()``.  It reads the manifest's
view of the tree and the directory, never the tables' contents, so it costs
one ``stat`` per live file.  Raises ``CorruptionError`` naming the first
broken invariant:

* the current version: L0 newest first (file numbers descending); every
  deeper level sorted and disjoint by user key (a key never spans two tables
  of a level); each file's smallest key <= its largest;
* files: every own table of the version exists with the size the manifest
  says; every view's table (another store's file) exists;
* numbers: the next file number is above every live file and the WAL;
* sequences: no table, memtable entry or manifest counter is above the
  DB's last sequence; a key's memtable versions ascend; every entry of the
  frozen memtable is older than every entry of the active one;
* cleanup: no live file is in ``pending_outputs`` (scheduled for deletion
  if its build failed), and no background step is running.
"""
import os

from . import filenames
from .dbformat import parse_internal_key
from .errors import CorruptionError

__all__ = ["check_db"]


def _fail(db, what):
    raise CorruptionError(f"{db.path}: DB.check: {what}")


def check_db(db) -> None:
    """Check ``db`` (see the module doc); waits for background work to pause."""
    with db._write_lock:
        db._check_open()
        with db._mutex:
            db._wait_bg_quiet_locked()
            _check_quiet(db)


def _check_quiet(db):
    vs, v = db.versions, db.versions.current
    last = db._last_seq
    if len(v.levels) != db.options.num_levels:
        _fail(db, f"{len(v.levels)} levels, options say {db.options.num_levels}")
    l0 = [f.number for f in v.levels[0]]
    if l0 != sorted(l0, reverse=True):
        _fail(db, f"L0 not newest first: {l0}")
    v.check()
    for lv in range(1, len(v.levels)):
        files = v.levels[lv]
        for a, b in zip(files, files[1:]):
            if a.largest_user >= b.smallest_user:
                _fail(db, f"L{lv}: user key ranges of {a.number} and {b.number} meet")
    live, _views = vs.live_files()
    if db.pending_outputs & live:
        _fail(db, f"live files {sorted(db.pending_outputs & live)} are pending outputs")
    for lv, f in v.files():
        if parse_internal_key(f.smallest)[0] > parse_internal_key(f.largest)[0]:
            _fail(db, f"L{lv} #{f.number}: smallest key above largest")
        for ikey in (f.smallest, f.largest):
            if parse_internal_key(ikey)[1] > last:
                _fail(db, f"L{lv} #{f.number}: sequence above the last one ({last})")
        if f.number >= vs.next_file:
            _fail(db, f"L{lv} #{f.number}: number not below next_file {vs.next_file}")
        if f.is_view:
            path = os.path.normpath(os.path.join(db.path, f.path))
            if not db.fs.exists(path):
                _fail(db, f"L{lv} #{f.number}: viewed table {path} is missing")
        else:
            path = os.path.join(db.path, filenames.table_name(f.number))
            if not db.fs.exists(path):
                _fail(db, f"L{lv} #{f.number}: table file missing")
            size = db.fs.file_size(path)
            if size != f.size:
                _fail(db, f"L{lv} #{f.number}: {size} bytes on disk, manifest says {f.size}")
    if db._log is not None and db._log.number >= vs.next_file:
        _fail(db, f"WAL #{db._log.number}: number not below next_file {vs.next_file}")
    if vs.last_seq > last:
        _fail(db, f"manifest last sequence {vs.last_seq} above the DB's {last}")
    imm_max = _check_memtable(db, db._imm, last) if db._imm is not None else 0
    mem_min = _check_memtable(db, db._mem, last, smallest=True)
    if db._imm is not None and mem_min is not None and mem_min <= imm_max:
        _fail(db, f"active memtable holds sequence {mem_min}, not above the frozen one's {imm_max}")


def _check_memtable(db, mem, last, smallest=False):
    """The largest (or smallest) sequence in ``mem``; checks each key's versions ascend."""
    seqs = []
    for key, vs in list(mem.versions.items()):
        s = [x.seq for x in vs.chain()]
        if s != sorted(s) or len(set(s)) != len(s):
            _fail(db, f"memtable versions of {key!r} not in ascending sequence: {s}")
        if s[-1] > last:
            _fail(db, f"memtable sequence {s[-1]} of {key!r} above the last one ({last})")
        seqs.append(s[0] if smallest else s[-1])
    if smallest:
        return min(seqs, default=None)
    return max(seqs, default=0)
