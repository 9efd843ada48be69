"""Compactions that make way for readers: pacing
(Options.compaction_throughput_lower/higher: which compactions are paced, at
what rate, that a paced compaction yields, finishes, and lets a close
through at once) and L0's compaction once writes stop
(Options.l0_idle_seconds)."""
import time

import lsm
from lsm.compaction import Compaction, max_bytes_for_level, pacing_limit
from lsm.version import FileMeta


class _Version:
    def __init__(self, level_bytes):
        self._bytes = level_bytes

    def level_bytes(self, level):
        return self._bytes.get(level, 0)


def _c(level, output_level, reason):
    f = FileMeta(1, 100, 10, b"a" + bytes(8), b"b" + bytes(8))
    return Compaction(level, output_level, [f], [], reason)


def test_pacing_limit_follows_the_pressure():
    opts = lsm.Options(compaction_throughput_lower=10, compaction_throughput_higher=50)
    target = max_bytes_for_level(opts, 1)
    at = lambda x: _Version({1: int(target * x)})       # noqa: E731
    assert pacing_limit(_c(0, 1, "L0 trigger"), at(5), opts) is None        # urgent: L0
    assert pacing_limit(_c(1, 2, "manual"), at(1.5), opts) is None          # compact_range
    assert pacing_limit(_c(1, 2, "L1 size"), at(1.0), opts) == 10           # just over: lower
    assert pacing_limit(_c(1, 2, "L1 size"), at(1.5), opts) == 30
    assert pacing_limit(_c(1, 2, "L1 size"), at(2.0), opts) is None         # 2x its target: urgent
    assert pacing_limit(_c(2, 3, "rewrite view"), at(0), opts) == 10
    assert pacing_limit(_c(6, 6, "rewrite view"), at(0), opts) == 10        # a last-level view
    assert pacing_limit(_c(0, 1, "rewrite view"), at(0), opts) is None      # L0 views: urgent
    off = opts.copy(compaction_throughput_lower=0)
    assert pacing_limit(_c(2, 3, "rewrite view"), at(0), off) is None


def _daughter(tmp_path, **pacing):
    """A store of views of a parent's L1 table (as a split leaves), and the
    parent's data: 20,000 entries, about 1.4 MB (a pace is kept from one
    check of the compaction to the next, every 1,024 entries)."""
    opts = lsm.Options(compression=False)
    parent = lsm.DB.open(str(tmp_path / "parent"), opts)
    model = {b"k%06d" % i: b"v%d" % i * 20 for i in range(20000)}
    for k, v in model.items():
        parent.put(k, v)
    parent.compact_range()
    views = [(1, p, None, None) for _lv, p, _lo, _hi in parent.live_tables()]
    parent.close()
    dopts = opts.copy(auto_compactions=False, **pacing)
    return lsm.DB.create_from_views(str(tmp_path / "d"), views, dopts), model


def test_a_view_rewrite_is_paced_and_finishes(tmp_path):
    # ~1.4 MB of input at 400 KB/s: about 3.5 s instead of a few ms
    db, model = _daughter(tmp_path, compaction_throughput_lower=400 << 10,
                          compaction_throughput_higher=400 << 10)
    try:
        assert db.stats()["views"] > 0
        t0 = time.monotonic()
        db.set_auto_compactions(True)
        while db.stats()["views"]:
            for k in list(model)[::1000]:        # reads served meanwhile, from views and tables
                assert db.get(k) == model[k]
            assert time.monotonic() - t0 < 30
            time.sleep(0.05)
        s = db.stats()
        assert s["paced_compactions"] >= 1 and s["paced_seconds"] > 0.5
        assert time.monotonic() - t0 > 1.0
        _rewritten(db, model)
    finally:
        db.close()


def _crawling(tmp_path):
    """A daughter whose views' rewrite is paced at 10 KB/s (minutes), 0.3 s into it."""
    db, model = _daughter(tmp_path, compaction_throughput_lower=10 << 10,
                          compaction_throughput_higher=10 << 10)
    db.set_auto_compactions(True)
    time.sleep(0.3)
    assert db.stats()["paced_compactions"] >= 1 and db.stats()["views"] > 0
    return db, model


def _rewritten(db, model):
    assert db.external_files() == set()
    assert list(db.scan()) == sorted(model.items())
    db.check()


def test_a_close_ends_a_paced_compaction_at_once(tmp_path):
    db, model = _crawling(tmp_path)
    t0 = time.monotonic()
    db.close()
    assert time.monotonic() - t0 < 1.0              # aborted, its inputs kept
    db = lsm.DB.open(str(tmp_path / "d"), lsm.Options(compaction_throughput_lower=0))
    try:
        assert list(db.scan()) == sorted(model.items())
        db.compact_range()
        _rewritten(db, model)
    finally:
        db.close()


def test_an_urgent_l0_makes_a_paced_compaction_run_free(tmp_path):
    db, model = _crawling(tmp_path)
    try:
        # writes that fill L0 past its trigger: the paced rewrite stops sleeping
        for i in range(4 * 900):
            db.put(b"z%06d" % i, bytes(100))
            if i % 900 == 899:
                db.flush()
        t0 = time.monotonic()
        while db.stats()["views"] and time.monotonic() - t0 < 20:
            time.sleep(0.05)
        assert db.stats()["views"] == 0
        db.check()
    finally:
        db.close()


def test_stores_sharing_a_pacer_share_its_limit():
    pacer = lsm.CompactionPacer()
    # two compactions reserving 1 MB each at 1 MB/s on one timeline: the
    # second waits for the first's second too
    first = pacer.reserve(1 << 20, 1 << 20)
    second = pacer.reserve(1 << 20, 1 << 20)
    eps = 1e-9      # the sums of monotonic() readings round: 0.9000000000000454 was seen
    assert 0.85 < first <= 0.9 + eps and 1.85 < second <= 1.9 + eps   # each less the burst (0.05 s) twice
    assert lsm.CompactionPacer().reserve(1000, 1 << 20) == 0        # within the burst: no wait


def test_a_region_server_gives_its_regions_one_pacer(tmp_path):
    import regions
    with regions.RegionServer.open(str(tmp_path / "s")) as srv:
        srv.create_table("t", split_keys=[b"m"])
        dbs = [r.db for r in srv._table("t").layout[1]]
        assert len(dbs) == 2 and dbs[0]._pacer is dbs[1]._pacer is srv._pacer


def test_l0_left_below_its_trigger_is_compacted_once_writes_stop(tmp_path):
    opts = lsm.Options(memtable_bytes=64 << 10, l0_idle_seconds=0.5)
    db = lsm.DB.open(str(tmp_path / "db"), opts)
    try:
        model = {}
        for i in range(2):                       # two overlapping L0 tables, below the trigger (4)
            for j in range(500):
                k, v = b"k%05d" % (j * 7 + i), b"v%d" % i
                db.put(k, v)
                model[k] = v
            db.flush()
        assert db.stats()["files_per_level"][0] == 2
        t0 = time.monotonic()
        while db.stats()["files_per_level"][0] and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        assert db.stats()["files_per_level"][0] == 0
        assert time.monotonic() - t0 >= 0.4              # not before the store was idle that long
        assert list(db.scan()) == sorted(model.items())
        db.check()
    finally:
        db.close()


def test_no_idle_compaction_while_writes_go_on_or_when_off(tmp_path):
    db = lsm.DB.open(str(tmp_path / "a"), lsm.Options(memtable_bytes=64 << 10, l0_idle_seconds=0.6))
    off = lsm.DB.open(str(tmp_path / "b"), lsm.Options(memtable_bytes=64 << 10, l0_idle_seconds=0))
    try:
        for d in (db, off):
            d.put(b"a", b"1")
            d.flush()
        end = time.monotonic() + 1.5
        while time.monotonic() < end:            # a write every 0.1 s: never idle
            db.put(b"b", b"2")
            time.sleep(0.1)
        assert db.stats()["files_per_level"][0] == 1
        assert off.stats()["files_per_level"][0] == 1
        time.sleep(1.2)
        assert off.stats()["files_per_level"][0] == 1
    finally:
        db.close()
        off.close()
