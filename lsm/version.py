"""Versions, version edits and the manifest: which table files are live.

A *version* is an immutable list of levels of ``FileMeta``.  L0 holds tables
flushed from memtables, which may overlap; it is kept newest first (highest
number first), so a point lookup stops at the first hit.  Levels 1.. hold
non-overlapping tables sorted by key.  A *view* is a FileMeta whose ``path``
names another store's table and whose ``lo``/``hi`` bound the user keys it
exposes (HBase's Reference files; see DB.create_from_views).

Manifest format: an lsm.wal log (same framing as the WAL) whose records are
version edits, each a UTF-8 JSON object (keys in hex)::

    {"log": 12, "next": 15, "seq": 1042,                  # any subset
     "add": [[level, {"n": 14, "size": 4096, "entries": 30,
                      "smallest": "<hex ikey>", "largest": "<hex ikey>",
                      "path": "../r1/000009.sst", "lo": "<hex>", "hi": null}]],
     "del": [[level, 9]]}

The first record of a manifest is a snapshot of the whole version; later
records apply in order.  ``CURRENT`` names the live manifest and is switched
atomically (write temp, fsync, rename, fsync dir), so a crash leaves either
the old or the new manifest live.  JSON rather than LevelDB's tagged binary:
edits are rare (one per flush or compaction) and a person can read them.
"""
import json
import os
import threading
from dataclasses import dataclass
from typing import List, Optional

from . import filenames
from ._state import CurrentVersion
from .dbformat import user_key
from .errors import CorruptionError
from .wal import LogReader, LogWriter

__all__ = ["FileMeta", "Version", "VersionEdit", "VersionSet"]

#: Start a fresh manifest (a snapshot) when the current one grows past this.
MANIFEST_ROLL_BYTES = 4 << 20


@dataclass(frozen=True)
class FileMeta:
    number: int
    size: int
    entries: int
    smallest: bytes       # internal key
    largest: bytes        # internal key
    path: Optional[str] = None     # a view: another store's table, relative to this store
    lo: Optional[bytes] = None     # a view's user-key bounds [lo, hi)
    hi: Optional[bytes] = None

    def __post_init__(self):
        # user-key bounds, read on every point lookup: computed once
        object.__setattr__(self, "smallest_user", user_key(self.smallest))
        object.__setattr__(self, "largest_user", user_key(self.largest))

    @property
    def is_view(self) -> bool:
        return self.path is not None

    def to_json(self):
        d = {"n": self.number, "size": self.size, "entries": self.entries,
             "smallest": self.smallest.hex(), "largest": self.largest.hex()}
        if self.path is not None:
            d["path"] = self.path
            d["lo"] = None if self.lo is None else self.lo.hex()
            d["hi"] = None if self.hi is None else self.hi.hex()
        return d

    @classmethod
    def from_json(cls, d):
        hx = lambda v: None if v is None else bytes.fromhex(v)  # noqa: E731
        return cls(d["n"], d["size"], d["entries"], bytes.fromhex(d["smallest"]),
                   bytes.fromhex(d["largest"]), d.get("path"), hx(d.get("lo")), hx(d.get("hi")))


class VersionEdit:
    """A change to the version: files added/deleted and counters."""
    __slots__ = ("log_number", "next_file", "last_seq", "added", "deleted")

    def __init__(self):
        self.log_number = None
        self.next_file = None
        self.last_seq = None
        self.added = []      # [(level, FileMeta)]
        self.deleted = []    # [(level, number)]

    def add(self, level: int, meta: FileMeta) -> None:
        self.added.append((level, meta))

    def delete(self, level: int, number: int) -> None:
        self.deleted.append((level, number))

    def encode(self) -> bytes:
        d = {}
        if self.log_number is not None:
            d["log"] = self.log_number
        if self.next_file is not None:
            d["next"] = self.next_file
        if self.last_seq is not None:
            d["seq"] = self.last_seq
        if self.added:
            d["add"] = [[lv, m.to_json()] for lv, m in self.added]
        if self.deleted:
            d["del"] = [[lv, n] for lv, n in self.deleted]
        return json.dumps(d, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> "VersionEdit":
        try:
            d = json.loads(data)
            if not isinstance(d, dict):
                raise TypeError(f"a {type(d).__name__}, not an object")
            e = cls()
            e.log_number = d.get("log")
            e.next_file = d.get("next")
            e.last_seq = d.get("seq")
            e.added = [(lv, FileMeta.from_json(m)) for lv, m in d.get("add", ())]
            e.deleted = [(lv, n) for lv, n in d.get("del", ())]
            return e
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptionError(f"manifest: bad version edit: {exc}") from None


class Version:
    """An immutable set of live files by level.

    ``refs`` counts iterators pinning it (changed under VersionSet.lock): the
    files of a version with refs are never deleted.
    """
    __slots__ = ("levels", "refs", "l0", "search", "bounds")

    def __init__(self, levels: List[List[FileMeta]]):
        self.levels = levels
        self.refs = 0
        # What a point lookup walks: L0 as (smallest, largest, file, number),
        # newest first; then per non-empty deeper level (files, largest ikeys,
        # smallest user keys, numbers) for a binary search (lists, so that
        # lsm._read reads no attribute of a file).
        self.l0 = [(f.smallest_user, f.largest_user, f, f.number) for f in levels[0]]
        self.search = [(lv, [f.largest for f in lv], [f.smallest_user for f in lv],
                        [f.number for f in lv]) for lv in levels[1:] if lv]
        # What a bounded scan walks: per non-empty deeper level (files, largest
        # ikeys, smallest user keys, largest user keys).
        self.bounds = [(lv, largest, smallest, [f.largest_user for f in lv])
                       for lv, largest, smallest, _ in self.search]

    def files(self):
        for level, files in enumerate(self.levels):
            for f in files:
                yield level, f

    def level_bytes(self, level: int) -> int:
        return sum(f.size for f in self.levels[level])

    def overlapping(self, level: int, lo: Optional[bytes], hi: Optional[bytes]) -> List[FileMeta]:
        """Files of ``level`` whose user-key range meets [lo, hi] (inclusive; None = open)."""
        out = []
        for f in self.levels[level]:
            if lo is not None and f.largest_user < lo:
                continue
            if hi is not None and f.smallest_user > hi:
                continue
            out.append(f)
        return out

    def apply(self, edit: VersionEdit) -> "Version":
        deleted = set(edit.deleted)
        levels = [[f for f in files if (lv, f.number) not in deleted] for lv, files in enumerate(self.levels)]
        for lv, meta in edit.added:
            levels[lv].append(meta)
        levels[0].sort(key=lambda f: -f.number)
        from ._iter import compare_internal_keys as cmp
        import functools
        keyfn = functools.cmp_to_key(lambda a, b: cmp(a.smallest, b.smallest))
        for lv in range(1, len(levels)):
            levels[lv].sort(key=keyfn)
        return Version(levels)

    def check(self) -> None:
        """Raise CorruptionError unless levels >= 1 are sorted and disjoint."""
        from ._iter import compare_internal_keys as cmp
        for lv in range(1, len(self.levels)):
            files = self.levels[lv]
            for a, b in zip(files, files[1:]):
                if cmp(a.largest, b.smallest) >= 0:
                    raise CorruptionError(f"level {lv}: files {a.number} and {b.number} overlap")


class VersionSet:
    """The current version, the manifest, and the store's counters.

    Thread-safety: ``log_and_apply`` and the counters are guarded by
    ``lock``; reading ``current`` is a single load of a C field
    (``cell``, an ``lsm._state.CurrentVersion``, which the point read
    reads directly and where it keeps its view of the current version).
    """

    current = property(lambda self: self.cell.version, lambda self, v: self.cell.set(v),
                       doc="The current Version.")

    def __init__(self, fs, path: str, num_levels: int):
        self.fs = fs
        self.path = path
        self.num_levels = num_levels
        self.lock = threading.RLock()
        self.cell = CurrentVersion()
        self.current = Version([[] for _ in range(num_levels)])
        self.live_versions = []     # versions with refs > 0 besides current
        self.next_file = 2
        self.last_seq = 0
        self.log_number = 0
        self.manifest_number = 0
        self._manifest = None
        self._manifest_file = None
        self._roll = False          # an edit failed: the next one writes a fresh manifest

    # -- numbers --------------------------------------------------------
    def new_file_number(self) -> int:
        with self.lock:
            n = self.next_file
            self.next_file += 1
            return n

    def mark_file_number_used(self, n: int) -> None:
        with self.lock:
            if self.next_file <= n:
                self.next_file = n + 1

    # -- create / recover -----------------------------------------------
    def create(self) -> None:
        """Initialise an empty store: a manifest with an empty snapshot."""
        self._write_new_manifest()

    def recover(self) -> None:
        """Load the version named by CURRENT.  Raises CorruptionError."""
        cur = os.path.join(self.path, filenames.CURRENT)
        name = self.fs.read_all(cur).decode("ascii", "replace").strip()
        parsed = filenames.parse(name)
        if not parsed or parsed[0] != "manifest":
            raise CorruptionError(f"CURRENT names {name!r}, not a manifest")
        mpath = os.path.join(self.path, name)
        if not self.fs.exists(mpath):
            raise CorruptionError(f"CURRENT names {name}, which does not exist")
        version = Version([[] for _ in range(self.num_levels)])
        reader = LogReader(self.fs.read_all(mpath), mpath)
        edits = 0
        for rec in reader:
            edits += 1
            e = VersionEdit.decode(rec)
            version = version.apply(e)
            if e.log_number is not None:
                self.log_number = e.log_number
            if e.next_file is not None:
                self.next_file = max(self.next_file, e.next_file)
            if e.last_seq is not None:
                self.last_seq = max(self.last_seq, e.last_seq)
        version.check()
        if not edits:       # CURRENT switches only to a manifest already synced with its snapshot
            raise CorruptionError(f"{mpath}: holds no edit (truncated?)")
        if reader.dropped_tail_bytes:
            lost = self._lost_with_torn_edit()
            if lost:
                raise CorruptionError(f"{mpath}: the last edit is damaged ({reader.tail_reason}) "
                                      f"and {lost}")
        self.current = version
        self.manifest_number = parsed[1]
        self.mark_file_number_used(parsed[1])
        for _lv, f in version.files():
            self.mark_file_number_used(f.number)
        # The next log_and_apply (after the WAL replay succeeded) starts a
        # fresh manifest: never append to one whose tail may be torn, and
        # never switch CURRENT for an open that then fails.

    def _lost_with_torn_edit(self):
        """Why dropping the manifest's torn last edit would lose data, or None.

        A crash can tear only an edit that was never synced, and nothing acts
        on an edit before its sync: the WAL it retired is still here.  That
        WAL being gone means the edit had been acted on (and, the damage
        being later, bit rot), and dropping it would silently lose its tables.
        Log number 0 names no WAL: no open of the store synced its edit, so
        the torn edit is the first open's, and acting on it means writing on;
        data could be lost only once a flush wrote a table (its WALs deleted).
        """
        if self.log_number:
            name = filenames.log_name(self.log_number)
            if not self.fs.exists(os.path.join(self.path, name)):
                return f"{name}, which the edit before it needs, was already deleted"
            return None
        tables = [n for n in self.fs.listdir(self.path)
                  if (filenames.parse(n) or ("", 0))[0] == "sst"]
        if tables:
            return (f"table files ({', '.join(sorted(tables)[:3])}...) exist that no intact "
                    "edit names, while no WAL is recorded")
        return None

    def _snapshot_edit(self, version, log_number) -> VersionEdit:
        e = VersionEdit()
        e.log_number = log_number
        e.next_file = self.next_file
        e.last_seq = self.last_seq
        for lv, f in version.files():
            e.add(lv, f)
        return e

    def snapshot_bytes(self, edit: VersionEdit) -> int:
        """Bytes of a fresh manifest after ``edit`` (its one record, framed)."""
        e = self._snapshot_edit(self.current.apply(edit), self.log_number)
        return len(e.encode()) + 7 * (1 + len(e.encode()) // 32768)

    def _write_new_manifest(self, version=None, log_number=None) -> None:
        """A manifest whose one record is a snapshot of ``version`` (the
        current one when None), made live by switching CURRENT."""
        version = self.current if version is None else version
        log_number = self.log_number if log_number is None else log_number
        number = self.new_file_number()
        name = filenames.manifest_name(number)
        mpath = os.path.join(self.path, name)
        f = self.fs.open_append(mpath)
        try:
            w = LogWriter(f)
            w.add_record(self._snapshot_edit(version, log_number).encode())
            w.sync()
        except BaseException:
            f.close()
            self.fs.remove_if_exists(mpath)
            raise
        self.fs.write_atomic(os.path.join(self.path, filenames.CURRENT), (name + "\n").encode())
        old = self._manifest_file
        self._manifest, self._manifest_file = w, f
        if old is not None:
            old.close()
        self.manifest_number = number

    # -- edits ------------------------------------------------------------
    def log_and_apply(self, edit: VersionEdit) -> Version:
        """Persist ``edit`` (synced) and make the new version current.

        On failure nothing in memory changes (the version, the log number)
        and the next edit starts a fresh manifest (RocksDB does the same):
        the failed one's tail is unknown, and an edit appended after a torn
        one would be lost at the next open.  Until that next edit succeeds,
        CURRENT may name either manifest, so the files the failed edit
        added must be kept (the DB's ``_unlogged``)."""
        with self.lock:
            log_number = self.log_number if edit.log_number is None else edit.log_number
            edit.next_file = self.next_file
            edit.last_seq = self.last_seq
            new = self.current.apply(edit)
            try:
                if (self._roll or self._manifest_file is None
                        or self._manifest_file.size >= MANIFEST_ROLL_BYTES):
                    self._write_new_manifest(new, log_number)
                else:
                    if any(not f.is_view for _lv, f in edit.added):
                        # The new tables' directory entries must be durable before
                        # a durable edit names them (LevelDB's SyncDirIfManifest):
                        # else a power cut leaves the manifest naming lost files.
                        self.fs.sync_dir(self.path)
                    self._manifest.add_record(edit.encode())
                    self._manifest.sync()
            except BaseException:
                self._roll = True
                raise
            self._roll = False
            self.log_number = log_number
            self.current = new
            return new

    @property
    def must_roll(self) -> bool:
        """An edit failed and no later one has succeeded yet (see ``log_and_apply``)."""
        return self._roll

    # -- pinning ------------------------------------------------------------
    def ref(self) -> Version:
        with self.lock:
            v = self.current
            v.refs += 1
            if v.refs == 1:
                self.live_versions.append(v)
            return v

    def unref(self, v: Version) -> None:
        with self.lock:
            v.refs -= 1
            if v.refs == 0:
                self.live_versions.remove(v)

    def live_files(self):
        """Numbers of own files and paths of views used by any live version."""
        with self.lock:
            numbers, views = set(), set()
            for v in [self.current] + self.live_versions:
                for _lv, f in v.files():
                    numbers.add(f.number)
                    if f.path is not None:
                        views.add(f.path)
            return numbers, views

    def close(self) -> None:
        if self._manifest_file is not None:
            self._manifest_file.close()
            self._manifest_file = None
