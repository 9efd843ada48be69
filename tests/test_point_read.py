"""The point read's table searches without the GIL (lsm/_read.pyx ReadView,
lsm/_blockcache.pyx "Reads without the GIL"): the same answers as the path
through the table cache, exact under threads while blocks are evicted and
tables compacted away, and nothing kept once the searches are done."""
import random
import sys
import threading

import pytest

import lsm
from lsm._blockcache import reclaim_stats
from conftest import run_writers_then_readers, tiny_options


def _fill(db, rnd, keys):
    """Overwrites, deletes and flushes over several levels; returns the model."""
    model = {}
    for round_ in range(6):
        for k in rnd.sample(keys, len(keys) // 2):
            if rnd.random() < 0.2:
                db.delete(k)
                model.pop(k, None)
            else:
                v = b"%s=%d" % (k, round_)
                db.put(k, v)
                model[k] = v
        db.flush()
    return model


def test_reads_through_the_version_view_match_reads_through_the_table_cache(dbpath):
    """One store read twice: with a table cache big enough for every file
    (the view keeps each table's reader and searches without the GIL) and
    with one too small (no reader kept: every table through the cache, with
    the GIL).  Cold and warm, present, deleted and missing keys, at a
    snapshot taken midway: the same answers."""
    rnd = random.Random(5)
    keys = [b"k%05d" % i for i in range(3000)]
    with lsm.DB.open(dbpath, tiny_options(max_open_files=5000)) as db:
        model = _fill(db, rnd, keys)
        for k in keys[:500]:
            db.put(k, b"after")
    answers = {}
    for max_open in (5000, 3):
        with lsm.DB.open(dbpath, tiny_options(max_open_files=max_open, block_cache_bytes=1 << 20)) as db:
            got = []
            for _ in range(2):          # cold (readers opened, blocks cached), then warm
                got.append([db.get(k) for k in keys + [b"k%05d+" % i for i in range(0, 3000, 7)]])
            assert got[0] == got[1]
            answers[max_open] = got[0]
            view = db.versions.cell.view
            assert view.keep == (max_open == 5000)
            assert (view.readers_kept() > 0) == (max_open == 5000)
            assert sum(1 for _ in db.versions.current.files()) > 3   # the small cache really is too small
    assert answers[5000] == answers[3]
    expect = [b"after" if i < 500 else model.get(k) for i, k in enumerate(keys)]
    assert answers[5000][:len(keys)] == expect
    assert all(v is None for v in answers[5000][len(keys):])


def test_short_scans_find_their_tables_through_the_version_view(dbpath):
    """scan_short and scan_short_many find the tables of a range in the
    version's view (L0 files that meet it, then each level's files from the
    first whose largest key is not below its start): with every reader kept
    in the view and with none (a table cache too small), at the latest
    sequence and at a snapshot, the same entries as the iterator path
    (scan_chunk) and as the model."""
    rnd = random.Random(11)
    keys = [b"r%05d" % i for i in range(3000)]
    with lsm.DB.open(dbpath, tiny_options(max_open_files=5000)) as db:
        model = _fill(db, rnd, keys)
        for k in keys[::60]:            # an L0 file above the levels
            db.put(k + b"/d", b"delta")
            model[k + b"/d"] = b"delta"
        db.flush()
        assert len(db.versions.current.levels[0]) == 1
    ranges = []
    for _ in range(300):
        k = rnd.choice(keys)
        ranges.append((k, k + b"0"))                    # one key and its suffixed one
    ranges += [(b"r00999+", b"r01003"), (b"a", b"b"), (b"r02990", b"s")]
    with lsm.DB.open(dbpath, tiny_options(max_open_files=5000)) as db:
        files = [f for level, f in db.versions.current.files() if level > 0]
    for f in files:                     # ranges across a level's file boundaries
        i = keys.index(f.smallest_user[:6])
        ranges.append((keys[max(0, i - 3)], keys[min(len(keys) - 1, i + 3)]))
    assert len(files) > 10
    for max_open in (5000, 3):
        everything = sorted(model.items())
        with lsm.DB.open(dbpath, tiny_options(max_open_files=max_open,
                                              block_cache_bytes=1 << 20)) as db:
            if max_open == 5000:        # the L0 file is still there
                assert len(db.versions.current.levels[0]) == 1
            for (lo, hi), got in zip(ranges, db.scan_short_many(ranges, 1000)):
                assert got == [(k, v) for k, v in everything if lo <= k < hi]
            snap = db.snapshot()
            for k in keys[::2]:
                db.put(k, b"later")
                model[k] = b"later"
            many = db.scan_short_many(ranges, 1000)
            at_snap = db.scan_short_many(ranges, 1000, snap)
            for (lo, hi), got, old in zip(ranges, many, at_snap):
                assert got == db.scan_chunk(lo, hi, 1000) == db.scan_short(lo, hi)
                assert old == db.scan_chunk(lo, hi, 1000, snapshot=snap)
                assert old == [(k, v) for k, v in everything if lo <= k < hi]
            view = db.versions.cell.view
            assert (view.readers_kept() > 0) == (max_open == 5000)
            snap.close()


def test_reads_at_a_snapshot_search_the_tables_without_the_gil_too(dbpath):
    rnd = random.Random(6)
    keys = [b"s%04d" % i for i in range(800)]
    with lsm.DB.open(dbpath, tiny_options(max_open_files=5000)) as db:
        model = _fill(db, rnd, keys)
        snap = db.snapshot()
        for k in keys:
            db.put(k, b"newer")
        db.flush()
        assert [db.get(k, snapshot=snap) for k in keys] == [model.get(k) for k in keys]
        assert all(db.get(k) == b"newer" for k in keys)
        snap.close()


def test_the_view_is_the_current_versions_and_goes_with_it(dbpath):
    """A new current version forgets the old one's view (and with it the
    readers it kept); the next read builds the new version's."""
    with lsm.DB.open(dbpath, tiny_options(max_open_files=5000)) as db:
        db.put(b"a", b"1")
        db.flush()
        assert db.get(b"a") == b"1"
        old = db.versions.cell.view
        assert old is not None and old.readers_kept() == 1
        db.put(b"b", b"2")
        db.flush()
        assert db.versions.cell.view is None
        assert db.get(b"b") == b"2" and db.get(b"a") == b"1"
        assert db.versions.cell.view is not old and db.versions.cell.view.readers_kept() == 2
    assert db.versions.cell.view is None          # close let the readers go


def test_block_cache_hits_taken_without_the_gil_are_counted(dbpath):
    value = b"1" * 200                       # a compressed block: read through the cache
    with lsm.DB.open(dbpath, tiny_options(max_open_files=5000, compression_min_level=0)) as db:
        db.put(b"a", value)
        db.flush()
        assert db.get(b"a") == value           # opens the table, reads the block
        hits = db.block_cache.stats()["hits"]
        for _ in range(10):
            assert db.get(b"a") == value
        assert db.block_cache.stats()["hits"] == hits + 10


def test_raw_blocks_of_a_mapped_table_are_searched_in_place_without_the_cache(dbpath):
    """An uncompressed table read from its mapping: point reads, with and
    without the GIL, read its blocks where they are (as LevelDB reads an
    mmapped table): nothing goes into the block cache or is looked up in
    it, and every answer is the one the iterator gives."""
    rnd = random.Random(3)
    keys = [b"m%05d" % i for i in range(3000)]
    with lsm.DB.open(dbpath, tiny_options(max_open_files=5000, compression=False,
                                          block_cache_bytes=1 << 20)) as db:
        model = _fill(db, rnd, keys)
        assert sum(db.stats()["files_per_level"]) > 1
        cache = db.block_cache
        before = cache.stats(), len(cache), cache.usage
        for _ in range(2):
            assert [db.get(k) for k in keys] == [model.get(k) for k in keys]
        assert (cache.stats(), len(cache), cache.usage) == before
        assert dict(db.scan()) == model


@pytest.mark.parametrize("api", ["get", "multi_get"])
@pytest.mark.parametrize("compressed", [True, False], ids=["cached", "mapped"])
def test_point_reads_stay_exact_while_blocks_are_evicted_and_tables_compacted(dbpath, compressed, api):
    """Readers search blocks without the GIL while other threads evict them
    (a block cache of a few blocks), replace readers' slots, and compact the
    tables away (closing them: their mappings go).  Every value read is its
    key's (a block or mapping freed under a search would give garbage or
    crash), and once the threads stop no search is registered and the kept
    blocks and mappings are gone.  Compressed blocks are read through the
    cache's slots; raw ones in place from the tables' mappings.  Read with
    get, and with multi_get (a batch of 20 keys searched in one section
    without the GIL)."""
    opts = tiny_options(max_open_files=5000, block_cache_bytes=2048, background=True,
                        l0_slowdown_trigger=8, l0_stop_trigger=16,
                        compression=compressed, compression_min_level=0)
    db = lsm.DB.open(dbpath, opts)
    keys = [b"c%05d" % i for i in range(2000)]
    for k in keys:
        db.put(k, k + b"=0")
    db.flush()
    errors, done = [], threading.Event()

    def writer(t):
        rnd = random.Random(t)
        try:
            for i in range(1, 2500):
                k = rnd.choice(keys)
                db.put(k, k + b"=%d" % i)
        except Exception as e:   # pragma: no cover - reported below
            errors.append(e)

    def reader(seed):
        rnd = random.Random(seed)
        n = 0
        try:
            while not done.is_set() or n < 2000:
                batch = [rnd.choice(keys)] if api == "get" else rnd.sample(keys, 20)
                got = [db.get(batch[0])] if api == "get" else db.multi_get(batch)
                for k, v in zip(batch, got):
                    assert v is not None and v.startswith(k + b"="), (k, v)
                n += len(batch)
        except Exception as e:   # pragma: no cover
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        run_writers_then_readers([threading.Thread(target=writer, args=(t,)) for t in range(2)],
                                 [threading.Thread(target=reader, args=(t,)) for t in range(3)], done)
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    stats = db.stats()
    assert stats["compactions"] > 0
    assert (db.block_cache.stats()["hits"] > 0) == compressed
    # The last search to leave let go of everything kept.
    assert reclaim_stats()[:2] == ((0, 0), (0, 0))
    db.close()


def test_reads_of_a_store_of_views_search_without_the_gil_within_each_views_range(tmp_path):
    """A store made of views (a region's daughter) read through its version
    view: each view's reader clamped to its range, cold and warm, the same
    answers as the parent's model."""
    rnd = random.Random(8)
    opts = tiny_options(max_open_files=5000)
    keys = [b"v%05d" % i for i in range(2000)]
    parent = lsm.DB.open(str(tmp_path / "parent"), opts)
    model = _fill(parent, rnd, keys)
    tables = parent.live_tables()
    mid = parent.middle_key()
    parent.close()
    daughters = {side: lsm.DB.create_from_views(str(tmp_path / side), [
        (lv, p, lo, hi) for lv, p, _lo, _hi in tables], opts)
        for side, lo, hi in (("left", None, mid), ("right", mid, None))}
    for side, db in daughters.items():
        view_keys = [k for k in keys if (k < mid) == (side == "left")]
        other_keys = [k for k in keys if (k < mid) != (side == "left")]
        for _ in range(2):                      # cold, then warm
            assert [db.get(k) for k in view_keys] == [model.get(k) for k in view_keys]
            assert all(db.get(k) is None for k in other_keys)
        view = db.versions.cell.view
        assert view.keep and view.readers_kept() > 0
        db.close()
