"""RegionServer: tables, routing, pre-split, manual splits, hooks, meta, recovery."""
import os

import pytest

import lsm
import regions
from regions import procedure

KiB = 1 << 10


def small_options(**kw):
    """Tiny stores with small blocks, everything inline (deterministic)."""
    base = dict(memtable_bytes=4 * KiB, background_workers=0,
                split_policy=regions.DisabledSplitPolicy(),
                lsm_options=lsm.Options(block_size=256, background=False, compression=False))
    base.update(kw)
    return regions.ServerOptions(**base)


@pytest.fixture
def server(tmp_path):
    s = regions.RegionServer.open(str(tmp_path / "srv"), small_options())
    yield s
    s.close()


def key(i):
    return b"k%06d" % i


def fill(server, table, n, tag=b"v"):
    for i in range(n):
        server.put(table, key(i), tag + b"%d" % i + b"." * 40)


def region_dirs(server):
    return sorted(os.listdir(os.path.join(server.path, "regions")))


# -- tables ------------------------------------------------------------------

@pytest.mark.parametrize("split_keys, exc, words", [
    ([b"b", b"a"], ValueError, "split_keys[1] = b'a' is not after"),
    ([b"a", b"a"], ValueError, "duplicate"),
    ([b"a", b""], ValueError, "split_keys[1] is empty"),
    ([b"a", "b"], TypeError, "split_keys[1] must be bytes"),
    (b"ab", TypeError, "list of bytes"),
])
def test_bad_split_keys_are_named_and_create_nothing(server, split_keys, exc, words):
    with pytest.raises(exc) as e:
        server.create_table("t", split_keys)
    assert words in str(e.value)
    assert server.list_tables() == [] and region_dirs(server) == []
    server.check()


def test_bad_table_names_and_attributes_are_refused(server):
    with pytest.raises(ValueError, match="invalid"):
        server.create_table("../x")
    with pytest.raises(TypeError):
        server.create_table(7)
    with pytest.raises(TypeError, match="JSON"):
        server.create_table("t", attributes={"f": object()})
    assert server.list_tables() == []


def test_create_list_delete_and_unknown_table_errors(server):
    server.create_table("a")
    server.create_table("b", [b"m"])
    with pytest.raises(regions.TableExistsError):
        server.create_table("a")
    assert server.list_tables() == ["a", "b"]
    server.put("b", b"x", b"1")
    server.delete_table("b")
    assert server.list_tables() == ["a"]
    for call in (lambda: server.get("b", b"x"), lambda: server.regions("b"),
                 lambda: server.delete_table("b"), lambda: list(server.scan("b"))):
        with pytest.raises(regions.UnknownTableError):
            call()
    assert issubclass(regions.UnknownTableError, regions.RegionError)
    assert len(region_dirs(server)) == 1
    server.check()


def test_tables_attributes_and_data_survive_reopen(tmp_path):
    path = str(tmp_path / "srv")
    with regions.RegionServer.open(path, small_options()) as s:
        s.create_table("t", [b"k000100"], attributes={"pk": ["id", "INTEGER"], "ttl": -1})
        fill(s, "t", 200)
        s.set_table_attributes("t", {"pk": ["id", "INTEGER"], "ttl": 60})
    with regions.RegionServer.open(path, small_options()) as s:
        assert s.table_attributes("t") == {"pk": ["id", "INTEGER"], "ttl": 60}
        assert [(r.start_key, r.end_key) for r in s.regions("t")] == [(b"", b"k000100"), (b"k000100", b"")]
        assert s.get("t", key(150)).startswith(b"v150.")
        assert len(list(s.scan("t"))) == 200
        s.check()


def test_a_second_server_on_the_same_directory_is_refused(server):
    with pytest.raises(lsm.StorageError):
        regions.RegionServer.open(server.path, small_options())


def test_closed_server_refuses_work(tmp_path):
    s = regions.RegionServer.open(str(tmp_path / "srv"), small_options())
    s.create_table("t")
    s.close()
    s.close()
    with pytest.raises(regions.ServerClosedError):
        s.put("t", b"a", b"1")


def test_bad_keys_raise_type_errors(server):
    server.create_table("t")
    with pytest.raises(TypeError, match="key must be bytes"):
        server.put("t", "a", b"1")
    with pytest.raises(TypeError, match="start must be bytes"):
        server.scan("t", start="a")


# -- pre-split routing ---------------------------------------------------------

def test_pre_split_keys_land_in_their_regions_and_scan_in_order(server):
    splits = [b"d", b"h", b"p", b"t"]
    server.create_table("t", splits)
    keys = [bytes([c]) + b"%02d" % i for c in b"abcdefghijklmnopqrstuvwxyz" for i in range(3)]
    for k in reversed(keys):
        server.put("t", k, k.upper())
    infos = server.regions("t")
    assert [(r.start_key, r.end_key) for r in infos] == list(zip([b""] + splits, splits + [b""]))
    for info in infos:   # each region served exactly the writes of its range
        assert info.writes == sum(1 for k in keys if info.contains(k)), info
    assert list(server.scan("t")) == [(k, k.upper()) for k in keys]
    assert list(server.scan("t", reverse=True)) == [(k, k.upper()) for k in reversed(keys)]
    assert [k for k, _ in server.scan("t", b"c01", b"q00")] == [k for k in keys if b"c01" <= k < b"q00"]
    assert [k for k, _ in server.scan("t", b"c01", b"q00", reverse=True)] == \
        [k for k in reversed(keys) if b"c01" <= k < b"q00"]
    assert list(server.scan("t", b"h", b"h")) == []
    server.check()


def test_long_scans_cross_chunks_and_regions(server):
    server.create_table("t", [key(3000), key(3001), key(7000)])
    fill(server, "t", 10000)
    got = [k for k, _ in server.scan("t")]
    assert got == [key(i) for i in range(10000)]
    assert [k for k, _ in server.scan("t", reverse=True)] == got[::-1]
    for expect in (1, 2, 63, 64, 65, 2999, 3000, 3001, 5002, 20000):   # chunk sizes only
        assert [k for k, _ in server.scan("t", expect=expect)] == got
        assert [k for k, _ in server.scan("t", reverse=True, expect=expect)] == got[::-1]


def test_a_scan_reads_no_entry_past_what_its_caller_expects(server):
    """The first chunks add up to ``expect`` (a GetRange page's rows + 2),
    within a region and across regions, forward and backward."""
    server.create_table("t", [key(3000)])
    fill(server, "t", 8000)
    read = []

    def counted(scan_chunk):
        def chunk(*args, **kwargs):
            got = scan_chunk(*args, **kwargs)
            read.append(len(got))
            return got
        return chunk

    for r in server._table("t").layout[1]:
        r.db.scan_chunk = counted(r.db.scan_chunk)
    for reverse, lo, hi, first in ((False, key(2000), None, 2000), (True, None, key(6000), 5999)):
        read.clear()
        it = server.scan("t", lo, hi, reverse=reverse, expect=5002)
        got = [k for _, (k, _) in zip(range(5002), it)]
        step = -1 if reverse else 1
        assert got == [key(i) for i in range(first, first + step * 5002, step)]
        assert sum(read) == 5002


def test_read_range_is_the_scan_as_a_list_within_and_across_regions(server):
    server.create_table("t", [key(3000), key(3001), key(7000)])
    fill(server, "t", 10000)
    for lo, hi in ((5, 6), (2990, 2995), (2999, 3002), (100, 5000), (0, 10000), (6999, 7001),
                   (9999, 10000)):
        start, end = key(lo), key(hi) if hi < 10000 else b"\xff"
        assert server.read_range("t", start, end) == list(server.scan("t", start, end)), (lo, hi)
    assert server.read_range("t", key(5) + b"\x00", key(5) + b"\x01") == []
    with pytest.raises(regions.UnknownTableError):
        server.read_range("nope", b"a", b"b")


def test_read_ranges_reads_each_range_as_read_range(server):
    """Ranges within one region, across regions, past a region's end, empty,
    unbounded, and of more than a scan chunk: each as read_range reads it;
    a region's ranges that follow each other are read under one gate entry,
    each counted as a read."""
    server.create_table("t", [key(3000), key(3001), key(7000)])
    fill(server, "t", 10000)
    bounds = [(5, 6), (7, 9), (2990, 2995), (2999, 3002), (100, 5000), (6999, 7001),
              (7001, 7001), (8, 8), (9999, 10000), (50, 51), (3000, 3001), (0, 10000)]
    ranges = [(key(lo), key(hi) if hi < 10000 else b"\xff") for lo, hi in bounds]
    ranges += [(b"", key(3)), (key(4) + b"\x00", key(4) + b"\x01")]
    before = sum(r.reads for r in server.regions("t"))
    got = server.read_ranges("t", ranges)
    assert sum(r.reads for r in server.regions("t")) - before >= len(ranges)
    assert got == [server.read_range("t", a, b) for a, b in ranges]
    assert [len(g) for g in got[:3]] == [1, 2, 5]
    # rows of several regions, interleaved: each region read once, in request order
    rows = [key(i) for i in (5, 8000, 6, 3000, 8001, 7, 2999, 9998)]
    ranges = [(k, k + b"\x00") for k in rows]
    before = [r.reads for r in server.regions("t")]
    got = server.read_ranges("t", ranges)
    assert [g[0][0] for g in got] == rows
    assert sum(r.reads for r in server.regions("t")) - sum(before) == len(ranges)
    assert server.read_ranges("t", []) == []
    with pytest.raises(TypeError, match="ranges must hold"):
        server.read_ranges("t", [(key(1), key(2)), key(3)])
    with pytest.raises(regions.UnknownTableError):
        server.read_ranges("nope", [(b"a", b"b")])


def test_read_ranges_of_one_region_read_it_once(server):
    """Ranges that all lie in one region (every batch of a table of one
    region) are read in one call of its store, each counted as a read, and
    each answered as read_range answers it: a range of more than a scan
    chunk read whole, an empty one empty; a range past the region's end
    sends the batch down the general path, with the same answers."""
    server.create_table("t", [key(6000)])
    fill(server, "t", 7000)
    bounds = [(7, 8), (0, 5000), (5, 5), (10, 13), (5999, 6000)]
    ranges = [(key(lo), key(hi)) for lo, hi in bounds]
    before = server.regions("t")[0].reads
    got = server.read_ranges("t", ranges[2:])
    assert server.regions("t")[0].reads - before == 3      # one gate entry, three reads
    got = server.read_ranges("t", ranges)
    assert got == [server.read_range("t", a, b) for a, b in ranges]
    assert [len(g) for g in got] == [1, 5000, 0, 3, 1]
    past = ranges + [(key(5999), key(6001))]
    assert server.read_ranges("t", past) == [server.read_range("t", a, b) for a, b in past]


def test_write_batches_within_and_across_regions(server):
    server.create_table("t", [b"m"])
    server.write("t", [(b"a1", b"1"), (b"a2", b"2"), (b"a1", None)])
    assert server.get("t", b"a1") is None and server.get("t", b"a2") == b"2"
    server.write("t", [(b"b", b"x"), (b"z", b"y"), (b"n", b"w"), (b"e", b"")])
    assert list(server.scan("t")) == [(b"a2", b"2"), (b"b", b"x"), (b"e", b""), (b"n", b"w"),
                                      (b"z", b"y")]
    assert [r.writes for r in server.regions("t")] == [5, 2]     # one a key written
    # a bad pair raises before anything is written, wherever it lies
    for bad, error, match in [((b"a", b"b"), TypeError, "pairs must be a list"),
                              ([(b"c", b"1"), (b"y", b"2", b"3")], TypeError, "operation 1"),
                              ([(b"c", b"1"), (b"y", "2")], TypeError, "value must be bytes"),
                              ([(b"c", b"1"), (b"d", 5)], TypeError, "value must be bytes"),
                              ([(b"c", b"1"), ("y", b"2")], TypeError, "key must be bytes"),
                              ([(b"y", b"1"), (b"", b"2")], ValueError, "must not be empty"),
                              ([(b"c", b"1"), [b"y", b"2"]], TypeError, "operation 1")]:
        with pytest.raises(error, match=match):
            server.write("t", bad)
        assert server.get("t", b"c") is None and server.get("t", b"y") is None
    assert [r.writes for r in server.regions("t")] == [5, 2]
    with pytest.raises(regions.UnknownTableError):
        server.write("nope", [(b"a", b"b")])
    with pytest.raises(regions.UnknownTableError):
        server.write("nope", [])
    server.write("t", [])                                        # empty: nothing
    assert [r.writes for r in server.regions("t")] == [5, 2]


# -- splits ----------------------------------------------------------------------

def test_manual_split_keeps_every_key_and_newer_writes_win(server):
    server.create_table("t")
    fill(server, "t", 400, b"old")
    [parent] = server.regions("t")
    daughters = server.split_region("t", parent.region_id)
    assert [d.start_key for d in daughters][0] == b"" and daughters[0].end_key == daughters[1].start_key
    mid = daughters[0].end_key
    assert key(0) < mid < key(399)
    server.check()
    assert [k for k, _ in server.scan("t")] == [key(i) for i in range(400)]
    fill(server, "t", 400, b"new")           # sequence numbers carry over the split
    assert all(v.startswith(b"new") for _, v in server.scan("t"))
    server.compact("t")
    assert all(v.startswith(b"new") for _, v in server.scan("t"))
    assert [k for k, _ in server.scan("t")] == [key(i) for i in range(400)]
    server.check()


def test_explicit_split_key_and_bad_split_requests(server):
    server.create_table("t", [b"m"])
    fill(server, "t", 50)
    first = server.regions("t")[0].region_id
    with pytest.raises(ValueError, match="not strictly inside"):
        server.split_region("t", first, b"z")
    with pytest.raises(regions.UnknownRegionError):
        server.split_region("t", 999)
    a, b = server.split_region("t", first, b"k000020")
    assert (a.end_key, b.start_key, b.end_key) == (b"k000020", b"k000020", b"m")
    assert [r.end_key for r in server.regions("t")] == [b"k000020", b"m", b""]
    assert server.get("t", key(19)) and server.get("t", key(20))
    server.check()


def test_daughter_with_views_splits_again_and_parents_are_collected(server):
    server.create_table("t")
    fill(server, "t", 600)
    server.flush_all()
    (r,) = server.regions("t")
    a, b = server.split_region("t", r.region_id)
    a1, a2 = server.split_region("t", a.region_id)    # a still refers to r's files
    server.check()
    assert len(server.regions("t")) == 3
    assert [k for k, _ in server.scan("t")] == [key(i) for i in range(600)]
    before = region_dirs(server)
    assert "r%d" % r.region_id in before and "r%d" % a.region_id in before
    server.maintain()                                  # still referenced: kept
    assert "r%d" % r.region_id in region_dirs(server)
    server.compact("t")                                # views rewritten
    server.maintain()
    after = region_dirs(server)
    assert "r%d" % r.region_id not in after and "r%d" % a.region_id not in after
    assert [k for k, _ in server.scan("t")] == [key(i) for i in range(600)]
    server.check()


def test_split_boundary_keeps_groups_together(server):
    server.create_table("t")
    server.configure_table("t", split_boundary=regions.KeyPrefix(3))
    for g in range(10):
        for i in range(60):
            server.put("t", b"g%02d-%04d" % (g, i), b"x" * 30)
    (r,) = server.regions("t")
    a, b = server.split_region("t", r.region_id)
    assert len(a.end_key) == 3 and a.end_key.startswith(b"g")     # a group boundary
    with pytest.raises(regions.HotPartitionError, match="hot partition key"):
        # a region of one group cannot split, even at an explicit key
        server.create_table("h")
        server.configure_table("h", split_boundary=regions.KeyPrefix(3))
        for i in range(300):
            server.put("h", b"hot-%05d" % i, b"y" * 30)
        server.split_region("h", server.regions("h")[0].region_id, b"hot-00150")
    assert len(server.regions("h")) == 1
    server.check()


def test_split_point_at_region_start_moves_to_the_next_group(server):
    server.create_table("t", [b"a"])
    server.configure_table("t", split_boundary=regions.KeyPrefix(1))
    for i in range(400):
        server.put("t", b"a%05d" % i, b"x" * 30)    # one big group at the region start
    for i in range(10):
        server.put("t", b"b%05d" % i, b"x" * 30)
    r = server.regions("t")[1]
    a, b = server.split_region("t", r.region_id)
    assert (a.start_key, a.end_key, b.end_key) == (b"a", b"b", b"")
    server.check()


def test_auto_split_reports_a_hot_partition_key(tmp_path):
    opts = small_options(split_policy=regions.ConstantSizeSplitPolicy(4 * KiB, jitter=0))
    with regions.RegionServer.open(str(tmp_path / "s"), opts) as s:
        s.create_table("t")
        s.configure_table("t", split_boundary=regions.KeyPrefix(4))
        for i in range(500):
            s.put("t", b"hot!%05d" % i, b"z" * 40)
        s.flush_all()
        s.maintain()
        (info,) = s.regions("t")
        assert info.split_blocker and "hot partition key" in info.split_blocker
        s.check()


def test_compaction_filter_hook_set_after_open_applies_to_all_regions(tmp_path):
    path = str(tmp_path / "s")
    with regions.RegionServer.open(path, small_options()) as s:
        s.create_table("t", [b"m"])
        for k in (b"a-keep", b"a-drop", b"x-keep", b"x-drop"):
            s.put("t", k, b"v")
    with regions.RegionServer.open(path, small_options()) as s:
        s.configure_table("t", compaction_filter_factory=lambda: (lambda k, v: k.endswith(b"drop")))
        s.compact("t")
        assert [k for k, _ in s.scan("t")] == [b"a-keep", b"x-keep"]


def split_failing_at(server, region_id, point):
    """Split region ``region_id`` of table "t" with an OSError injected at
    kill point ``point``; the error must reach the caller."""
    def fail(name):
        if name == point:
            raise OSError("injected")
    with procedure.kill_hook(fail):
        with pytest.raises(OSError, match="injected"):
            server.split_region("t", region_id)


def test_failure_before_the_point_of_no_return_rolls_back(server):
    server.create_table("t")
    fill(server, "t", 300)
    (r,) = server.regions("t")

    split_failing_at(server, r.region_id, "split.daughter_b_created")
    assert [x.region_id for x in server.regions("t")] == [r.region_id]
    assert region_dirs(server) == ["r%d" % r.region_id]
    assert len(list(server.scan("t"))) == 300
    server.put("t", key(1), b"after")
    assert server.get("t", key(1)) == b"after"
    server.check()
    server.split_region("t", r.region_id)          # and it can split afterwards
    server.check()


def test_a_split_holds_compactions_and_hands_them_back(server):
    """The parent's automatic compactions stop when its split begins; the
    daughters are created with theirs off and get them when the split is
    done; a rolled-back split gives the parent its compactions back."""
    server.create_table("t")
    fill(server, "t", 400)
    server.flush_all()
    (r,) = server.regions("t")
    seen = {}

    def stores():
        return {x.id: x.db for x in server._tables["t"].layout[1]}

    def hook(name):
        if name == "split.prepared":
            seen["parent"] = stores()[r.region_id].stats()["auto_compactions"]
        if name == "split.daughters_opened":     # routed, the procedure not yet done
            seen["daughters"] = [db.stats()["auto_compactions"] for db in stores().values()]
    with procedure.kill_hook(hook):
        a, b = server.split_region("t", r.region_id)
    assert seen == {"parent": False, "daughters": [False, False]}
    now = stores()
    assert [now[a.region_id].stats()["auto_compactions"],
            now[b.region_id].stats()["auto_compactions"]] == [True, True]

    split_failing_at(server, a.region_id, "split.prepared")
    assert stores()[a.region_id].stats()["auto_compactions"] is True
    assert [k for k, _ in server.scan("t")] == [key(i) for i in range(400)]
    server.check()


def test_orphan_directories_are_removed_on_open(tmp_path):
    path = str(tmp_path / "s")
    with regions.RegionServer.open(path, small_options()) as s:
        s.create_table("t")
    os.makedirs(os.path.join(path, "regions", "r99"))
    os.makedirs(os.path.join(path, "regions", "r3.creating"))
    with regions.RegionServer.open(path, small_options()) as s:
        assert region_dirs(s) == ["r1"]
        s.check()


def test_check_detects_a_missing_region_directory(server):
    server.create_table("t")
    server.flush_all()
    import shutil
    shutil.rmtree(os.path.join(server.path, "regions", "r1"))
    with pytest.raises(regions.InvariantError, match="missing"):
        server.check()


def test_global_memtable_budget_flushes_the_largest_memtable(tmp_path):
    opts = small_options(memtable_bytes=1 << 20, global_memtable_bytes=8 * KiB)
    with regions.RegionServer.open(str(tmp_path / "s"), opts) as s:
        s.create_table("t", [b"m"])
        for i in range(200):
            s.put("t", b"a%04d" % i, b"x" * 60)        # the big memtable
        for i in range(20):
            s.put("t", b"n%04d" % i, b"x" * 60)
        assert [r.size_bytes for r in s.regions("t")] == [0, 0]   # nothing flushed yet
        s.maintain()
        big, small = s.regions("t")
        assert big.size_bytes > 0 and small.size_bytes == 0


def test_region_info_reports_sizes_counts_and_traffic(server):
    server.create_table("t", [b"k000050"])
    fill(server, "t", 100)
    server.flush_all()
    for i in range(10):
        server.get("t", key(i))
    a, b = server.regions("t")
    assert (a.writes, b.writes, a.reads, b.reads) == (50, 50, 10, 0)
    assert a.key_count >= 50 and a.size_bytes > 50 * 40 and a.state == "OPEN"
    assert a.split_blocker is None and a.table == "t"


def test_configure_table_keeps_hooks_not_mentioned(server):
    server.create_table("t")
    server.configure_table("t", split_boundary=regions.KeyPrefix(3))
    server.configure_table("t", compaction_filter_factory=lambda: (lambda k, v: False))
    for i in range(300):
        server.put("t", b"ab%d-%04d" % (i % 3, i), b"x" * 30)
    a, b = server.split_region("t", server.regions("t")[0].region_id)
    assert len(a.end_key) == 3                    # the boundary hook is still in force
    with pytest.raises(TypeError, match="split_boundary"):
        server.configure_table("t", split_boundary=5)
    server.configure_table("t", split_boundary=None)   # None removes it
    c, d = server.split_region("t", b.region_id)
    assert len(c.end_key) > 3


def test_a_tables_prefix_extractor_reaches_its_stores_present_and_future(server):
    """configure_table hands prefix_extractor to every region store of the
    table, the open ones at once (keys written before included) and the
    daughters of later splits; None removes it; a wrong type is refused."""
    server.create_table("t")
    for i in range(300):
        server.put("t", b"ab%d-%04d" % (i % 3, i), b"x" * 30)
    pe = lsm.fixed_prefix(3)
    with pytest.raises(TypeError, match="prefix_extractor must be an lsm.PrefixExtractor"):
        server.configure_table("t", prefix_extractor=3)
    server.configure_table("t", prefix_extractor=pe)

    def extractors():
        return [server._tables["t"].layout[1][i].db._mem.prefix_extractor
                for i in range(len(server.regions("t")))]
    assert extractors() == [pe]
    want = [(k, v) for k, v in server.scan("t", b"ab1", b"ab2")]
    assert len(want) == 100 and server.read_range("t", b"ab1", b"ab2") == want
    server.split_region("t", server.regions("t")[0].region_id)
    assert extractors() == [pe, pe]
    server.configure_table("t", prefix_extractor=None)
    assert extractors() == [None, None]
    assert server.read_range("t", b"ab1", b"ab2") == want


def test_region_server_is_importable_from_the_package():
    from regions import RegionServer
    from regions.server import RegionServer as direct
    assert RegionServer is direct
