"""The region gate (regions._region) and routing (regions._router), in C: counts exact under
threads, a closing gate waits for the operations in flight and wakes when
the last one leaves, routing finds the region a bisect over start keys
finds, and the slow path is taken for unknown tables and closed regions."""
import bisect
import random
import threading
import time

import pytest

import regions
from regions._region import CLOSED, OPEN, SPLITTING, Region
from regions._router import Router, Table, split_pairs
from regions.errors import RegionBusyError, UnknownTableError


def _region(start=b"", end=b""):
    return Region("t", 1, start, end, db=None, jitter_rate=1.0)


class _Slow(Exception):
    pass


def _slow(table, key, write):
    raise _Slow(table)


def _router(table):
    """A router holding ``table`` as "t", whose slow path raises ``_Slow``."""
    router = Router(_slow, None, None)
    router.put_table("t", table)
    return router


def test_enter_counts_reads_and_writes_and_refuses_when_not_open():
    r = _region()
    assert r.enter(True) and r.enter(False) and r.enter(None)
    assert (r.inflight, r.reads, r.writes) == (3, 1, 1)
    r.count_writes(4)
    assert r.writes == 5
    for _ in range(3):
        r.exit()
    r.state = SPLITTING
    assert not r.enter(False) and r.inflight == 0 and r.reads == 1
    r.state = OPEN
    assert r.enter(False)
    with pytest.raises(TypeError, match="write must be True, False or None"):
        r.enter(1)


def test_counts_stay_exact_under_eight_threads():
    r = _region()
    n = 20_000

    def work():
        for i in range(n):
            assert r.enter(i % 2 == 0)
            r.exit()
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (r.inflight, r.reads, r.writes) == (0, 4 * n, 4 * n)


def test_close_gate_waits_for_the_last_operation_and_wakes_when_it_leaves():
    r = _region()
    assert r.enter(True)
    leave = threading.Timer(0.2, r.exit)
    leave.start()
    t0 = time.monotonic()
    r.close_gate(SPLITTING, timeout=10)
    assert 0.15 < time.monotonic() - t0 < 5 and r.inflight == 0
    assert not r.enter(False)
    r.set_state(OPEN)
    assert r.enter(False)
    with pytest.raises(RegionBusyError, match="1 operations still in flight"):
        r.close_gate(CLOSED, timeout=0.05)
    assert r.state is OPEN           # a timed-out close opens the gate again
    leave.join()


def test_route_agrees_with_a_bisect_over_the_start_keys():
    rng = random.Random(3)
    starts = [b""] + sorted({bytes(rng.randrange(4) for _ in range(rng.randrange(1, 4)))
                             for _ in range(40)})
    regs = [_region(s) for s in starts]

    table = Table("t", None)
    table.layout = (starts, regs)
    router = _router(table)
    for _ in range(2000):
        key = bytes(rng.randrange(4) for _ in range(rng.randrange(0, 5)))
        r = router.enter("t", key, False)
        assert r is regs[bisect.bisect_right(starts, key) - 1]
        r.exit()
    with pytest.raises(_Slow):
        router.enter("other", b"k", False)
    regs[0].state = SPLITTING
    with pytest.raises(_Slow):
        router.enter("t", b"", True)
    with pytest.raises(TypeError):
        router.enter("t", "not bytes", False)


def test_a_write_splits_by_a_regions_key_range():
    """``split_pairs``, how the server applies a write region by region."""
    rng = random.Random(4)
    for _ in range(300):
        pairs = [(bytes(rng.randrange(4) for _ in range(rng.randrange(1, 4))),
                  b"v" if rng.random() < 0.7 else None) for _ in range(rng.randrange(0, 30))]
        start = bytes(rng.randrange(4) for _ in range(rng.randrange(0, 3)))
        end = rng.choice([None, bytes(rng.randrange(4) for _ in range(rng.randrange(1, 3)))])
        inside = [op for op in pairs if op[0] >= start and (end is None or op[0] < end)]
        mine, rest = split_pairs(pairs, start, end)
        assert mine == inside
        if len(inside) == len(pairs):
            assert mine is pairs and rest is None
        else:
            assert rest == [op for op in pairs if op not in inside]
    with pytest.raises(TypeError):
        split_pairs([(b"a", b"1"), ("b", b"2")], b"b")


def test_the_servers_single_key_operations_route_through_the_c_path():
    with regions.RegionServer.open(None) as s:
        s.create_table("t", split_keys=[b"m"])
        s.put("t", b"a", b"1")
        s.put("t", b"z", b"2")
        assert (s.get("t", b"a"), s.get("t", b"z"), s.get("t", b"q")) == (b"1", b"2", None)
        s.delete("t", b"a")
        assert s.get("t", b"a") is None
        with pytest.raises(TypeError, match="key must be bytes, got str"):
            s.put("t", "a", b"1")
        with pytest.raises(UnknownTableError, match="nope"):
            s.get("nope", b"a")
        assert [(i.reads, i.writes) for i in s.regions("t")] == [(2, 2), (2, 1)]


def test_a_malformed_layout_is_refused_when_set():
    """The router bisects a layout's keys and regions without checking them
    again: setting one checks them, and a bad one changes nothing."""
    table = Table("t", None)
    good = ([b"", b"m"], [_region(), _region(b"m")])
    table.layout = good
    bad = [(([b"", b"m"], [_region()]), ValueError, "2 start keys and 1 regions"),
           (([b"", "m"], [_region(), _region(b"m")]), TypeError, "start key must be bytes"),
           (([b"", b"m", b"c"], [_region()] * 3), ValueError, "out of order"),
           (([b"a", b"m"], [_region(b"a"), _region(b"m")]), ValueError, "first start key"),
           (([b"", b"m"], [_region(), "r"]), TypeError, "must be a Region"),
           ([[b""], [_region()]], TypeError, "tuple")]
    for layout, error, message in bad:
        with pytest.raises(error, match=message):
            table.layout = layout
        assert table.layout is good
    assert _router(table).enter("t", b"z", False) is good[1][1]


def test_the_location_cache_forgets_a_table_with_its_removal():
    """A table found by its name's identity (the router's one-entry
    location cache) is forgotten in the same call that removes or replaces
    the table: a get right after the removal, its regions still open,
    finds no table."""
    with regions.RegionServer.open(None) as s:
        name = "events"
        s.create_table(name)
        s.put(name, b"k", b"1")
        assert s.get(name, b"k") == b"1"        # routed: the cache holds the table
        t = s._tables[name]
        s._router.pop_table(name)                     # removed, its region still open
        with pytest.raises(UnknownTableError):
            s.get(name, b"k")
        s._router.put_table(name, t)
        assert s.get(name, b"k") == b"1"
        s.delete_table(name)
        s.create_table(name)
        assert s.get(name, b"k") is None         # the new table, not the old one's region
        s.put(name, b"k", b"2")
        same = "".join(["ev", "ents"])           # equal, another object: found by the dict
        assert same is not name and s.get(same, b"k") == b"2" and s.get(name, b"k") == b"2"
        t = s._tables[name]
        s._router.clear_tables()
        with pytest.raises(UnknownTableError):
            s.get(name, b"k")
        s._router.put_table(name, t)


def test_a_get_a_put_and_a_row_read_reach_the_store_the_region_holds_now():
    """The router calls an lsm.DB's point read, put and short scan in C,
    and any other store's ``get``, ``put`` and ``scan_short`` as methods;
    replacing a region's store switches them all."""
    with regions.RegionServer.open(None) as s:
        s.create_table("t")
        s.put("t", b"k", b"v")
        r = s._tables["t"].layout[1][0]
        store, calls = r.db, []

        class Wrapped:
            def get(self, key):
                calls.append(("get", key))
                return store.get(key)

            def put(self, key, value, sync=None):
                calls.append(("put", key))
                store.put(key, value, sync)

            def scan_short(self, start, end, limit=1000, snapshot=None):
                calls.append(("scan_short", start))
                return store.scan_short(start, end, limit, snapshot)
        r.db = Wrapped()
        s.put("t", b"w", b"1")
        assert s.get("t", b"k") == b"v" and s.read_range("t", b"k", b"x") == [(b"k", b"v"),
                                                                                (b"w", b"1")]
        assert calls == [("put", b"w"), ("get", b"k"), ("scan_short", b"k")]
        r.db = store
        s.put("t", b"x", b"2")
        assert s.get("t", b"x") == b"2" and s.get("t", b"w") == b"1" and len(calls) == 3
        assert s.read_range("t", b"k", b"y") == [(b"k", b"v"), (b"w", b"1"), (b"x", b"2")]
        assert s.read_range("t", b"y", b"k") == [] and len(calls) == 3
        with pytest.raises(TypeError, match="key must be bytes, got str"):
            s.get("t", "k")
        with pytest.raises(ValueError):
            s.get("t", b"")
        with pytest.raises(TypeError):
            s.put("t", b"k", "not bytes")
        assert s.get("t", b"k") == b"v" and r.inflight == 0
