"""The DB's public API: arguments, errors, snapshots, stats, sizes, hooks."""
import gc
import os
import random
import sys
import threading
import time

import pytest

import lsm
from lsm.faultfs import FaultInjectionFS
from lsm.fs import OSFileSystem
from regions.soak.harness import AppendFileProxy
from conftest import run_writers_then_readers, tiny_options


def test_put_get_delete_and_reopen(dbpath):
    with lsm.DB.open(dbpath) as db:
        db.put(b"a", b"1")
        db.put(b"b", b"2")
        db.delete(b"a")
        assert db.get(b"a") is None and db.get(b"b") == b"2"
        db.put(b"e", b"")
        assert db.get(b"e") == b""
    with lsm.DB.open(dbpath) as db:
        assert db.get(b"a") is None and db.get(b"b") == b"2" and db.get(b"e") == b""


@pytest.mark.parametrize("call", [
    lambda db: db.put("text", b"v"),
    lambda db: db.put(b"k", "text"),
    lambda db: db.put(bytearray(b"k"), b"v"),
    lambda db: db.get(1),
    lambda db: db.delete(None),
    lambda db: db.scan(start="a"),
    lambda db: db.write([("put", b"k", b"v")]),
])
def test_wrong_types_raise_type_error_and_change_nothing(dbpath, call):
    with lsm.DB.open(dbpath) as db:
        db.put(b"k0", b"v0")
        with pytest.raises(TypeError):
            call(db)
        assert list(db.scan()) == [(b"k0", b"v0")]


def test_empty_and_oversize_arguments_name_the_argument(dbpath):
    with lsm.DB.open(dbpath, lsm.Options(max_key_bytes=8, max_value_bytes=16)) as db:
        with pytest.raises(ValueError, match="key must not be empty"):
            db.put(b"", b"v")
        with pytest.raises(ValueError, match="key is 9 bytes"):
            db.put(b"123456789", b"v")
        with pytest.raises(ValueError, match="value is 17 bytes"):
            db.put(b"k", b"x" * 17)
        b = lsm.WriteBatch().put(b"ok", b"v").put(b"k", b"x" * 17)
        with pytest.raises(ValueError, match="value is 17 bytes"):
            db.write(b)
        assert db.get(b"ok") is None     # the batch was refused whole
        b = lsm.WriteBatch().put(b"12345678", b"x" * 16).put(b"k2", b"y" * 16)
        db.write(b)                      # every key and value at its limit: fine
        assert db.get(b"12345678") == b"x" * 16
        with pytest.raises(ValueError, match="key is 9 bytes"):
            db.write(lsm.WriteBatch().delete(b"123456789"))
        b = lsm.WriteBatch().put(b"k", b"x" * 17)
        b.clear()                        # a cleared batch forgets its longest value
        db.write(b.put(b"k3", b"z"))
        assert db.get(b"k3") == b"z"
        with pytest.raises(TypeError):
            lsm.WriteBatch().put(b"k", 5)


def test_write_batch_is_atomic_and_ordered(dbpath):
    with lsm.DB.open(dbpath) as db:
        b = lsm.WriteBatch()
        b.put(b"x", b"1").put(b"x", b"2").delete(b"y").put(b"y", b"3")
        assert len(b) == 4
        db.write(b)
        assert db.get(b"x") == b"2" and db.get(b"y") == b"3"


def test_closed_db_raises_closed_error(dbpath):
    db = lsm.DB.open(dbpath)
    db.close()
    db.close()   # idempotent
    for call in (lambda: db.put(b"k", b"v"), lambda: db.get(b"k"), lambda: db.scan(), lambda: db.snapshot()):
        with pytest.raises(lsm.ClosedError):
            call()


def test_second_open_of_same_directory_is_refused(dbpath):
    with lsm.DB.open(dbpath):
        with pytest.raises(lsm.StorageError):
            lsm.DB.open(dbpath)


def test_snapshot_is_unchanged_by_later_writes_flushes_and_compactions(dbpath):
    with lsm.DB.open(dbpath, tiny_options()) as db:
        for i in range(200):
            db.put(b"k%03d" % i, b"old")
        snap = db.snapshot()
        for i in range(200):
            db.put(b"k%03d" % i, b"new")
            if i % 3 == 0:
                db.delete(b"k%03d" % i)
        db.flush()
        db.compact_range()
        assert all(v == b"old" for _k, v in db.scan(snapshot=snap))
        assert len(list(db.scan(snapshot=snap))) == 200
        assert db.get(b"k000", snapshot=snap) == b"old" and db.get(b"k000") is None
        snap.close()
        with pytest.raises(lsm.ClosedError):
            db.get(b"k001", snapshot=snap)


def test_scan_bounds_and_reverse(dbpath):
    with lsm.DB.open(dbpath, tiny_options()) as db:
        keys = [b"%03d" % i for i in range(300)]
        for k in keys:
            db.put(k, k)
        db.flush()
        assert [k for k, _ in db.scan(b"100", b"110")] == keys[100:110]
        assert [k for k, _ in db.scan(b"100", b"110", reverse=True)] == keys[100:110][::-1]
        assert [k for k, _ in db.scan(end=b"003")] == keys[:3]
        assert [k for k, _ in db.scan(start=b"297", reverse=True)] == keys[297:][::-1]
        assert list(db.scan(b"5", b"4")) == []


def test_scan_chunk_is_the_first_entries_of_scan_in_one_list(dbpath):
    with lsm.DB.open(dbpath, tiny_options()) as db:
        keys = [b"%03d" % i for i in range(300)]
        for k in keys:
            db.put(k, k * 2)
        db.flush()
        db.delete(b"105")
        db.put(b"106", b"new")                      # newer than the table's version
        snap = db.snapshot()
        db.put(b"107", b"after the snapshot")
        expect = [(k, b"new" if k == b"106" else k * 2) for k in keys if k != b"105"]
        got = db.scan_chunk(b"100", b"120", 5, snapshot=snap)
        assert got == [e for e in expect if b"100" <= e[0] < b"120"][:5]
        assert db.scan_chunk(b"100", b"120", 5, reverse=True, snapshot=snap) == \
            [e for e in expect if b"100" <= e[0] < b"120"][::-1][:5]
        assert db.scan_chunk(limit=1000, snapshot=snap) == expect
        assert db.scan_chunk(b"290", limit=0) == []
        assert db.scan_chunk(b"5", b"4") == []
        assert db.scan_chunk(b"107", b"108") == [(b"107", b"after the snapshot")]
        with pytest.raises(ValueError):
            db.scan_chunk(limit=-1)
        snap.close()


def test_point_reads_through_large_index_blocks_of_prefixed_keys(dbpath):
    """Tables whose index blocks have hundreds of entries (small data
    blocks) and whose keys share a long prefix: every key, every missing
    neighbour and keys outside the prefix read as the model says."""
    rng = random.Random(44)
    keys = sorted({b"tbl:0017/row:" + rng.randbytes(rng.randint(1, 9)) for _ in range(3000)})
    present = set(keys[::2])
    opts = tiny_options(block_size=128, bloom_bits_per_key=0, memtable_bytes=1 << 20,
                        target_file_bytes=1 << 20, level1_bytes=1 << 22)
    with lsm.DB.open(dbpath, opts) as db:
        for k in sorted(present):
            db.put(k, k[::-1])
        db.flush()
        db.compact_range()
        st = db.stats()             # a table or two, each of hundreds of data blocks
        assert 1 <= sum(st["files_per_level"]) <= 2
        assert sum(st["bytes_per_level"]) >= 200 * 128 * sum(st["files_per_level"])
        for k in keys:
            assert db.get(k) == (k[::-1] if k in present else None), k
        for k in (b"a", b"tbl:0017", b"tbl:0017/row:", b"tbl:0017/row;", b"\xff" * 20):
            assert db.get(k) is None


def test_point_reads_through_remembered_cache_slots_survive_eviction(dbpath):
    """A table's point reader remembers the block-cache slot of each block
    it read and skips the cache's dict on the next hit.  With a cache far
    smaller than the table, slots are evicted under it all the time: every
    read stays right, a repeated read counts as a hit, and the cache's
    books stay consistent.  (Compressed blocks: raw ones of a mapped table
    are read in place, not cached.)"""
    rng = random.Random(45)
    keys = [b"k%06d" % i for i in range(4000)]
    opts = tiny_options(block_size=256, memtable_bytes=1 << 20, target_file_bytes=1 << 20,
                        level1_bytes=1 << 22, block_cache_bytes=8 << 10, compression_min_level=0)
    with lsm.DB.open(dbpath, opts) as db:
        for k in keys:
            db.put(k, k * 3)
        db.flush()
        db.compact_range()
        for k in rng.choices(keys, k=6000):
            assert db.get(k) == k * 3
        cache = db.block_cache
        before = cache.stats()
        assert db.get(b"k000123") == db.get(b"k000123") == b"k000123" * 3
        after = cache.stats()
        assert after["hits"] - before["hits"] >= 1
        assert after["hits"] + after["misses"] - before["hits"] - before["misses"] == 2
        audit = cache.audit()
        assert audit["usage"] == cache.usage <= 8 << 10
        assert audit["ring_live"] == audit["owner_keys"] == len(cache)


def test_scan_is_an_iterator_that_resumes_where_it_stopped(dbpath):
    with lsm.DB.open(dbpath, tiny_options()) as db:
        for i in range(50):
            db.put(b"%03d" % i, b"v")
        db.flush()
        it = db.scan(b"010")
        assert next(it) == (b"010", b"v")
        assert [kv[0] for _, kv in zip(range(3), it)] == [b"011", b"012", b"013"]
        assert next(it) == (b"014", b"v")
        assert [k for k, _ in db.scan(b"010", b"013", reverse=True)] == [b"012", b"011", b"010"]


def test_point_read_of_a_key_longer_than_the_stack_buffer(dbpath):
    """Keys over 512 bytes take the point read's object path (PointReader._slow)."""
    with lsm.DB.open(dbpath, tiny_options(block_size=4096)) as db:
        keys = [bytes([65 + i]) * 700 for i in range(20)]
        for k in keys:
            db.put(k, k[:3])
        db.compact_range()
        assert db.stats()["files_per_level"][0] == 0
        assert [db.get(k) for k in keys] == [k[:3] for k in keys]
        assert db.get(b"B" * 699) is None and db.get(b"B" * 701) is None


def test_a_closing_store_aborts_its_compaction_and_keeps_every_key(dbpath):
    """close() sets _closing; a running compaction stops at its next check,
    removes its outputs and leaves its inputs: nothing is lost or leaked."""
    state = {"calls": 0}

    def factory():
        def keep(key, value):
            state["calls"] += 1
            if state["calls"] == 1500:
                db._closing = True          # what close() does first
            return False
        return keep

    db = lsm.DB.open(dbpath, tiny_options(compaction_filter_factory=factory, target_file_bytes=1 << 20))
    keys = [b"%05d" % i for i in range(4000)]
    for k in keys:
        db.put(k, k)
    db.flush()
    with pytest.raises(lsm.ClosedError):
        db.compact_range()
    assert state["calls"] >= 1500
    db._closing = False
    db.check()
    live = {os.path.basename(p) for _lv, p, _lo, _hi in db.live_tables()}
    assert {n for n in os.listdir(dbpath) if n.endswith(".sst")} == live      # no output left behind
    assert all(db.get(k) == k for k in keys)
    db.close()
    with lsm.DB.open(dbpath, tiny_options()) as db:
        assert [k for k, _ in db.scan()] == keys


def test_automatic_compactions_off_pick_nothing_until_turned_on(dbpath):
    """Options.auto_compactions=False: flushes still run, no compaction is
    picked (L0 grows past its trigger); set_auto_compactions(True) lets the
    next inline step compact; every key survives."""
    with lsm.DB.open(dbpath, tiny_options(auto_compactions=False)) as db:
        assert db.stats()["auto_compactions"] is False
        for r in range(5):                       # l0_compaction_trigger is 2
            for i in range(40):
                db.put(b"%03d" % i, b"v%d" % r)
            db.flush()
        st = db.stats()
        assert st["files_per_level"][0] == 5 and st["compactions"] == st["trivial_moves"] == 0
        with pytest.raises(TypeError, match="must be a bool"):
            db.set_auto_compactions(1)
        db.set_auto_compactions(True)
        db.put(b"x", b"y")
        db.flush()                               # inline: runs what is now due
        st = db.stats()
        assert st["auto_compactions"] is True and st["compactions"] >= 1
        assert st["files_per_level"][0] < 5
        assert [db.get(b"%03d" % i) for i in range(40)] == [b"v4"] * 40
        db.check()


def test_inline_writes_go_on_past_the_l0_stop_trigger_with_compactions_off(dbpath):
    """Without a background thread and with automatic compactions off nothing
    can shrink L0: writes past l0_stop_trigger switch memtables instead of
    waiting for ever."""
    with lsm.DB.open(dbpath, tiny_options(auto_compactions=False, l0_slowdown_trigger=3,
                                          l0_stop_trigger=4)) as db:
        for i in range(2000):
            db.put(b"%05d" % i, b"v" * 20)
        assert db.stats()["files_per_level"][0] > 4
        assert db.get(b"00000") == b"v" * 20 and db.get(b"01999") == b"v" * 20


def test_a_write_asks_for_room_once_l0_reaches_its_slowdown_trigger(dbpath, monkeypatch):
    """The write path reads L0's file count from the current version's cell
    (``CurrentVersion.l0_files``, set with the version): below the slowdown
    trigger a put goes straight to the WAL, at it the put goes through
    ``_admit`` (which makes room); the count follows flushes and
    compactions.  (The write path is handed ``_admit`` when the DB opens.)"""
    calls = []
    admit = lsm.DB._admit
    monkeypatch.setattr(lsm.DB, "_admit", lambda db: calls.append(1) or admit(db))
    with lsm.DB.open(dbpath, tiny_options(auto_compactions=False, l0_slowdown_trigger=3,
                                          l0_stop_trigger=6, memtable_bytes=1 << 20)) as db:
        cell = db.versions.cell
        for n in range(1, 4):
            db.put(b"k%d" % n, b"v")
            db.flush()
            assert cell.l0_files == len(db.versions.current.levels[0]) == n
        del calls[:]
        db.put(b"x", b"v")             # L0 at the trigger: through _admit
        assert calls
        db.compact_range()
        assert cell.l0_files == len(db.versions.current.levels[0]) == 0
        del calls[:]
        db.put(b"y", b"v")             # below it again: straight in
        assert not calls
        assert db.get(b"x") == db.get(b"y") == b"v"


def test_turning_automatic_compactions_off_aborts_a_running_one(dbpath):
    """An automatic compaction stops at its next check once they are turned
    off: its outputs go, its inputs stay, nothing is lost.  A manual one
    (compact_range) is not affected."""
    state = {"calls": 0, "db": None}

    def factory():
        def keep(key, value):
            state["calls"] += 1
            if state["calls"] == 1500:
                state["db"].set_auto_compactions(False)
            return False
        return keep

    opts = tiny_options(compaction_filter_factory=factory, target_file_bytes=1 << 20,
                        memtable_bytes=1 << 20, l0_compaction_trigger=2)
    with lsm.DB.open(dbpath, opts) as db:
        state["db"] = db
        keys = [b"%05d" % i for i in range(4000)]
        for half in (keys[::2], keys[1::2]):
            for k in half:
                db.put(k, k)
            db.flush()                           # the second flush's inline work compacts
        st = db.stats()
        assert 1500 <= state["calls"] < 4000 and st["compactions"] == 0
        assert st["files_per_level"][0] == 2 and st["auto_compactions"] is False
        live = {os.path.basename(p) for _lv, p, _lo, _hi in db.live_tables()}
        assert {n for n in os.listdir(dbpath) if n.endswith(".sst")} == live
        assert all(db.get(k) == k for k in keys)
        db.compact_range()                       # manual: runs whole
        st = db.stats()
        assert st["compactions"] >= 1 and st["files_per_level"][0] == 0
        assert [k for k, _ in db.scan()] == keys
        db.check()


def test_compaction_stream_check_is_called_and_can_abort():
    from lsm._compaction_stream import CompactionAborted, CompactionStream
    from lsm._iter import ListIterator
    from lsm.dbformat import KIND_VALUE, make_internal_key as internal_key

    ks = [internal_key(b"%05d" % i, i + 1, KIND_VALUE) for i in range(5000)]
    calls = []
    it = ListIterator(ks, [b"v"] * len(ks))
    it.seek_to_first()
    added = []

    class Sink:
        def add(self, k, v):
            added.append(k)

        def size_estimate(self):
            return 0

    stream = CompactionStream(it, 10 ** 9, False, None, lambda: calls.append(1) or len(calls) >= 3)
    with pytest.raises(CompactionAborted):
        stream.fill(Sink())
    assert len(calls) == 3 and 2048 <= len(added) < 3072


def test_stats_sizes_and_middle_key(dbpath):
    with lsm.DB.open(dbpath, tiny_options()) as db:
        for i in range(2000):
            db.put(b"%05d" % i, os.urandom(50))
        db.compact_range()
        st = db.stats()
        for field in ("files_per_level", "bytes_per_level", "table_bytes", "memtable_bytes", "flushes",
                      "compactions", "write_amplification", "num_entries"):
            assert field in st
        assert st["write_amplification"] >= 1.0
        total = db.approximate_size()
        assert total == st["table_bytes"] > 2000 * 50
        half = db.approximate_size(None, b"01000")
        assert 0.35 * total < half < 0.65 * total
        assert db.approximate_size(b"00500", b"00600") < db.approximate_size(b"00500", b"01500")
        mid = db.middle_key()
        assert b"00800" < mid < b"01200"
        mid2 = db.middle_key(b"01000", None)
        assert b"01300" < mid2 < b"01700"
        assert db.middle_key(b"00001", b"00002") is None


def test_size_walks_pin_their_version_against_a_compaction_deleting_its_files(dbpath):
    """middle_key and approximate_size open the tables of the version they
    walk one by one; a compaction finishing meanwhile must not delete the
    files not yet opened (a split-point search of the concurrency soak run
    once found one gone)."""
    with lsm.DB.open(dbpath, tiny_options(max_open_files=20)) as db:
        for i in range(3000):
            db.put(b"%05d" % i, os.urandom(50))
        db.flush()
        walk = db._tables_in(None, None)
        first = next(walk)
        files = [f for _lv, f in db.versions.current.files()]
        assert files[0] is first
        for f in files:
            db._tables.evict(f.number)      # forget the open tables: each must be reopened
        db.compact_range()
        live = {f.number for _lv, f in db.versions.current.files()}
        gone = [f for f in files if f.number not in live]       # rewritten, not moved
        assert gone
        rest = list(walk)                   # the walk ends here, its version still pinned
        for f in gone:
            assert db._table(f).file_size > 0
        assert len(rest) == len(files) - 1
        db.put(b"more", b"v")
        db.flush()                          # the walk is over: its obsolete files go
        on_disk = set(os.listdir(dbpath))
        assert not {os.path.basename(db._table_key(f)[0]) for f in gone} & on_disk


def test_compaction_filter_drops_entries_and_older_versions_stay_hidden(dbpath):
    def factory():
        return lambda key, value: value == b"drop"
    with lsm.DB.open(dbpath, tiny_options(compaction_filter_factory=factory)) as db:
        for i in range(300):
            db.put(b"k%03d" % i, b"keep")
        db.compact_range()
        for i in range(0, 300, 2):
            db.put(b"k%03d" % i, b"drop")
        db.compact_range()
        got = dict(db.scan())
        assert len(got) == 150 and set(got.values()) == {b"keep"}
        assert db.get(b"k000") is None and db.get(b"k001") == b"keep"


def test_failed_wal_write_makes_the_store_refuse_writes_until_it_resumes_or_reopens(dbpath):
    fs = FaultInjectionFS(OSFileSystem())
    db = lsm.DB.open(dbpath, lsm.Options(fs=fs, resume_retry_seconds=600))  # no retry meanwhile
    db.put(b"a", b"1")
    fs.fail("append", path_contains=".log")
    with pytest.raises(lsm.StorageError):
        db.put(b"b", b"2")
    with pytest.raises(lsm.ReadOnlyError):
        db.put(b"c", b"3")
    assert db.get(b"a") == b"1"
    db.close()
    with lsm.DB.open(dbpath) as db:
        assert db.get(b"a") == b"1" and db.get(b"b") is None and db.get(b"c") is None


def test_sync_writes_fsync_before_returning_and_share_fsyncs(dbpath):
    fs = FaultInjectionFS(OSFileSystem())
    db = lsm.DB.open(dbpath, lsm.Options(fs=fs))
    db.put(b"k", b"v", sync=True)
    assert any(op[0] == "sync" and op[1].endswith(".log") for op in fs.ops)
    n_before = sum(1 for op in fs.ops if op[0] == "sync")

    def writer(t):
        for i in range(100):
            db.put(b"%d-%d" % (t, i), b"v", sync=True)
    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    syncs = sum(1 for op in fs.ops if op[0] == "sync") - n_before
    assert 0 < syncs <= 800
    db.close()
    # power loss: everything acknowledged with sync=True survives
    fs.drop_unsynced()
    with lsm.DB.open(dbpath) as db:
        assert sum(1 for _ in db.scan()) == 801


class _GatedSyncFS(OSFileSystem):
    """The OS file system whose WAL fsyncs each wait for a gate the test
    opens (``release``), so that a test can hold an fsync mid-way."""

    def __init__(self):
        self.gates, self.started = [], threading.Semaphore(0)

    def open_append(self, path, truncate=True, preallocate=0):
        f = super().open_append(path, truncate, preallocate)
        return _GatedSyncFile(f, self) if path.endswith(".log") else f

    def wait_started(self, n):
        for _ in range(n):
            assert self.started.acquire(timeout=10), "an fsync that should start did not"


class _GatedSyncFile(AppendFileProxy):
    """An append file whose ``sync`` waits for a gate of ``fs`` first."""

    def __init__(self, inner, fs):
        super().__init__(inner)
        self._fs = fs

    def sync(self):
        gate = threading.Event()
        self._fs.gates.append(gate)
        self._fs.started.release()
        assert gate.wait(10), "the test never released this fsync"
        if getattr(gate, "error", None):
            raise gate.error
        self._inner.sync()


def _sync_put(db, key, out):
    try:
        db.put(key, b"v", sync=True)
        out[key] = "ok"
    except Exception as e:
        out[key] = e


def _wait_until(cond):
    deadline = time.monotonic() + 10
    while not cond():
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_a_writer_covered_by_an_fsync_does_not_wait_for_the_next_one(dbpath):
    """Group commit: when an fsync ends, the writers it covered return at
    once, while a writer whose record came later starts the next fsync; they
    do not queue behind it."""
    fs = _GatedSyncFS()
    db = lsm.DB.open(dbpath, lsm.Options(fs=fs, background=False))
    out = {}
    start = lambda k: threading.Thread(target=_sync_put, args=(db, k, out)).start()  # noqa: E731
    start(b"a")
    fs.wait_started(1)                      # fsync 1 (a) is running
    start(b"b")
    start(b"c")
    _wait_until(lambda: db.stats()["wal_appends"] == 3)     # b and c wait for fsync 1
    fs.gates[0].set()
    fs.wait_started(1)                      # fsync 2 covers b and c
    _wait_until(lambda: out.get(b"a") == "ok")
    start(b"d")
    _wait_until(lambda: db.stats()["wal_appends"] == 4)
    fs.gates[1].set()
    fs.wait_started(1)                      # fsync 3: d's
    _wait_until(lambda: out.get(b"b") == "ok" and out.get(b"c") == "ok")
    assert b"d" not in out                  # ... and d still waits for its own
    fs.gates[2].set()
    _wait_until(lambda: out.get(b"d") == "ok")
    assert db.stats()["wal_fsyncs"] == 3
    db.close()


def test_after_a_failed_fsync_no_waiting_writer_retries_it(dbpath):
    """A retried fsync can report success for pages the kernel dropped after
    the failure (PostgreSQL's fsyncgate): writers waiting on the failed one
    get ReadOnlyError naming it, and no second fsync is tried."""
    fs = _GatedSyncFS()
    db = lsm.DB.open(dbpath, lsm.Options(fs=fs, background=False, resume_retry_seconds=600))
    out = {}
    threading.Thread(target=_sync_put, args=(db, b"a", out)).start()
    fs.wait_started(1)
    waiters = [threading.Thread(target=_sync_put, args=(db, k, out)) for k in (b"b", b"c")]
    for t in waiters:
        t.start()
    _wait_until(lambda: db.stats()["wal_appends"] == 3)
    fs.gates[0].error = lsm.StorageError("fsync failed: EIO (simulated)")
    fs.gates[0].set()
    for t in waiters:
        t.join(10)
    _wait_until(lambda: b"a" in out)
    assert isinstance(out[b"a"], lsm.StorageError)
    for k in (b"b", b"c"):
        assert isinstance(out[k], lsm.ReadOnlyError), out[k]
        assert "not made durable after an earlier failure: fsync failed: EIO" in str(out[k])
    assert len(fs.gates) == 1
    with pytest.raises(lsm.ReadOnlyError):
        db.put(b"d", b"v")
    db.close()


@pytest.mark.parametrize("write", ["put", "batch"])
def test_a_sync_write_survives_a_memtable_switch_between_its_append_and_its_fsync(
        dbpath, write, monkeypatch):
    """A store without ``sync``, one write with ``sync=True``: a memtable
    switch by another writer between that write's append and its fsync
    closes the WAL under it.  The switch must sync what the writer is owed
    (before, it marked the log synced without an fsync, and the write was
    acknowledged and then lost at a power cut).  (The write path is handed
    ``_sync_log`` when the DB opens: the spy goes on the class.)"""
    fs = FaultInjectionFS(OSFileSystem())
    sync_log = lsm.DB._sync_log
    window = []

    def switch_first(db, lg, end):      # the other writer's switch, in the window
        if window:
            window.append(lg)
            with db._write_lock:
                db._switch_memtable()
        sync_log(db, lg, end)
    monkeypatch.setattr(lsm.DB, "_sync_log", switch_first)
    db = lsm.DB.open(dbpath, lsm.Options(fs=fs, background=False))
    db.put(b"before", b"0")
    window.append(1)
    if write == "put":
        db.put(b"k", b"durable", sync=True)
    else:
        db.write(lsm.WriteBatch().put(b"k", b"durable"), sync=True)
    assert len(window) == 2             # the write's own fsync came through the spy
    window.clear()
    fs.drop_unsynced()                   # power cut; the store is not closed
    with lsm.DB.open(dbpath) as db2:
        assert db2.get(b"k") == b"durable"


def test_unsynced_writes_may_be_lost_on_power_loss_but_never_corrupt(dbpath):
    fs = FaultInjectionFS(OSFileSystem())
    db = lsm.DB.open(dbpath, lsm.Options(fs=fs))
    db.put(b"durable", b"1", sync=True)
    for i in range(100):
        db.put(b"k%d" % i, b"v")
    db.close()
    fs.drop_unsynced()
    with lsm.DB.open(dbpath) as db:
        assert db.get(b"durable") == b"1"
        got = dict(db.scan())
        assert all(v == b"v" for k, v in got.items() if k != b"durable")


def test_row_reads_of_the_memtable_stay_exact_while_writers_add_keys(dbpath):
    """scan_short reads the memtable without its lock when no merge of
    pending keys runs: with writers adding keys (pending until a reader
    merges them), thread switches every 10 us and collections running
    finalizers, every 40-key range read is exact."""
    db = lsm.DB.open(dbpath, lsm.Options(memtable_bytes=64 << 20))
    errors, written, done = [], [0, 0], threading.Event()

    class Finalized:                 # cyclic garbage whose collection runs Python code
        def __init__(self):
            self.me = self

        def __del__(self):
            sum(range(20))

    def writer(t):
        for i in range(20000):
            db.put(b"w%d-%06d" % (t, i), b"%d" % i)
            written[t] = i + 1
            if i % 7 == 0:
                Finalized()

    def reader(seed):
        rnd = random.Random(seed)
        try:
            while not done.is_set():
                w = rnd.randrange(2)
                n = written[w]
                if n < 50:
                    continue
                lo = rnd.randrange(n - 40)
                got = db.scan_short(b"w%d-%06d" % (w, lo), b"w%d-%06d" % (w, lo + 40))
                assert [k for k, _ in got] == [b"w%d-%06d" % (w, i) for i in range(lo, lo + 40)]
                Finalized()
        except Exception as e:   # pragma: no cover - reported below
            errors.append(e)

    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-5)
    gc.set_threshold(50, 5, 5)
    try:
        run_writers_then_readers([threading.Thread(target=writer, args=(t,)) for t in range(2)],
                                 [threading.Thread(target=reader, args=(t,)) for t in range(2)],
                                 done)
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)
        db.close()
    assert errors == []


def test_threads_read_and_write_while_flush_and_compaction_run(dbpath):
    db = lsm.DB.open(dbpath, tiny_options(background=True, l0_slowdown_trigger=8, l0_stop_trigger=16))
    errors = []
    done = threading.Event()
    written = [0, 0, 0]

    def writer(t):
        try:
            for i in range(1500):
                db.put(b"w%d-%05d" % (t, i), b"%d" % i)
                written[t] = i + 1
        except Exception as e:   # pragma: no cover - reported below
            errors.append(e)

    def chunk_reader():
        # scan_chunk pins no version: tables a compaction deletes under it
        # are either open already or reopened from the new version.
        try:
            while not done.is_set():
                n = written[1]
                got = db.scan_chunk(b"w1", b"w2", 2000)
                assert [k for k, _ in got[:n]] == [b"w1-%05d" % i for i in range(n)]
                assert all(k.startswith(b"w1-") for k, _ in got)
                # scan_short likewise (tables read directly, no iterator)
                got = db.scan_short(b"w1-", b"w1-00040")
                assert [k for k, _ in got[:n]] == [b"w1-%05d" % i for i in range(min(n, 40))]
        except Exception as e:   # pragma: no cover
            errors.append(e)

    def reader():
        try:
            while not done.is_set():
                prev = None
                for k, _v in db.scan(b"w0", b"w1"):
                    assert prev is None or k > prev
                    prev = k
                db.get(b"w1-00010")
        except Exception as e:   # pragma: no cover
            errors.append(e)

    run_writers_then_readers([threading.Thread(target=writer, args=(t,)) for t in range(3)],
                             [threading.Thread(target=reader) for _ in range(2)]
                             + [threading.Thread(target=chunk_reader)], done)
    assert not errors
    for t in range(3):
        assert [k for k, _ in db.scan(b"w%d-" % t, b"w%d." % t)] == [b"w%d-%05d" % (t, i) for i in range(1500)]
    assert db.stats()["compactions"] > 0
    db.close()


def test_an_open_refused_for_a_corrupt_wal_leaves_current_and_manifests_alone(dbpath):
    with lsm.DB.open(dbpath) as db:
        for i in range(5):
            db.put(b"k%d" % i, b"v" * 50)
    log = [n for n in os.listdir(dbpath) if n.endswith(".log")][0]
    p = os.path.join(dbpath, log)
    data = bytearray(open(p, "rb").read())
    data[30] ^= 0x40            # inside the first record; valid ones follow
    open(p, "wb").write(bytes(data))
    before = sorted(os.listdir(dbpath)), open(os.path.join(dbpath, "CURRENT")).read()
    with pytest.raises(lsm.CorruptionError):
        lsm.DB.open(dbpath)
    assert (sorted(os.listdir(dbpath)), open(os.path.join(dbpath, "CURRENT")).read()) == before


def test_sequential_tables_move_down_a_level_without_being_rewritten(dbpath):
    with lsm.DB.open(dbpath, tiny_options()) as db:
        for i in range(3000):
            db.put(b"%08d" % i, b"v%d" % i)
        st = db.stats()
        assert st["trivial_moves"] > 0
        assert sum(st["files_per_level"][1:]) > 0
        assert [k for k, _ in db.scan()] == [b"%08d" % i for i in range(3000)]
        assert db.get(b"00001234") == b"v1234"


def test_check_passes_on_a_sound_store_and_names_a_table_whose_size_differs(dbpath):
    with lsm.DB.open(dbpath, tiny_options()) as db:
        for i in range(400):
            db.put(b"k%04d" % i, b"v" * 20)
        db.flush()
        db.check()
        level, path, _lo, _hi = db.live_tables()[0]
        with open(path, "ab") as f:
            f.write(b"x")
        with pytest.raises(lsm.CorruptionError, match="manifest says"):
            db.check()
        os.remove(path)
        with pytest.raises(lsm.CorruptionError, match="missing"):
            db.check()


def test_check_refuses_a_closed_store(dbpath):
    db = lsm.DB.open(dbpath, tiny_options())
    db.close()
    with pytest.raises(lsm.ClosedError):
        db.check()
