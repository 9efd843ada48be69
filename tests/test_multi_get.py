"""``DB.multi_get`` (lsm/_read.pyx ``PointPath.multi_get``): for every key
the answer ``get`` gives (the value, None for a missing or deleted key), all
the keys read at one sequence, with the tables' searches of the whole batch
in one section without the GIL.  Exact under threads while blocks are
evicted and tables compacted away: tests/test_point_read.py's threaded
test, read with multi_get."""
import random
import threading

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import lsm
from conftest import run_writers_then_readers, tiny_options

KEYS = [b"m%03d" % i for i in range(120)]


def _ops():
    key = st.sampled_from(KEYS)
    return st.lists(st.one_of(
        st.tuples(st.just("put"), key, st.binary(max_size=40)),
        st.tuples(st.just("delete"), key, st.none()),
        st.tuples(st.just("flush"), st.none(), st.none()),
        st.tuples(st.just("compact"), st.none(), st.none()),
        st.tuples(st.just("snapshot"), st.none(), st.none()),
    ), max_size=250)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops(), max_open=st.sampled_from([5000, 3]),
       probe=st.lists(st.sampled_from(KEYS + [b"m", b"m050x", b"zz"]), max_size=80))
def test_multi_get_answers_as_get_over_random_puts_deletes_flushes_and_compactions(tmp_path_factory, ops,
                                                                                   max_open, probe):
    """Random puts, deletes, flushes, compactions (so memtables, L0 and
    deeper levels, tombstones shadowing values) and snapshots: multi_get of
    every key, of missing keys and of a random list with repeats gives,
    key by key, what get gives and what the model holds, also at each
    snapshot after later writes; with a table cache that keeps the view's
    readers (5000) and one too small for them (3)."""
    path = str(tmp_path_factory.mktemp("mg") / "db")
    model, snaps = {}, []
    with lsm.DB.open(path, tiny_options(max_open_files=max_open, block_cache_bytes=4096)) as db:
        for op, k, v in ops:
            if op == "put":
                db.put(k, v)
                model[k] = v
            elif op == "delete":
                db.delete(k)
                model.pop(k, None)
            elif op == "flush":
                db.flush()
            elif op == "compact":
                db.compact_range()
            else:
                snaps.append((db.snapshot(), dict(model)))
        keys = KEYS + [b"m", b"zz"] + probe
        for _ in range(2):                  # cold (readers opened, blocks cached), then warm
            got = db.multi_get(keys)
            assert got == [db.get(k) for k in keys]
            assert got == [model.get(k) for k in keys]
        for snap, seen in snaps:
            assert db.multi_get(keys, snapshot=snap) == [seen.get(k) for k in keys]
            assert db.multi_get(keys, snap) == [db.get(k, snap) for k in keys]
            snap.close()


def test_multi_get_takes_any_iterable_and_checks_keys_as_get_does(dbpath):
    with lsm.DB.open(dbpath, tiny_options()) as db:
        db.put(b"a", b"1")
        assert db.multi_get([]) == []
        assert db.multi_get((b"a", b"b")) == [b"1", None]
        assert db.multi_get(k for k in [b"b", b"a"]) == [None, b"1"]
        with pytest.raises(TypeError):
            db.multi_get([b"a", "b"])
        with pytest.raises(ValueError):
            db.multi_get([b"a", b""])
        with pytest.raises(TypeError):
            db.multi_get(b"a", snapshot=object())
    with pytest.raises(lsm.ClosedError):
        db.multi_get([b"a"])


def test_multi_get_reads_every_key_at_one_sequence(dbpath):
    """Two keys always written together in one batch (a pair of equal
    counters): a multi_get of both never sees one batch's half, while a
    writer keeps writing and flushing."""
    db = lsm.DB.open(dbpath, tiny_options(background=True, max_open_files=5000))
    pairs = [(b"x%03d" % i, b"y%03d" % i) for i in range(40)]
    for a, b in pairs:
        db.put(a, b"0")
        db.put(b, b"0")
    errors, done = [], threading.Event()

    def writer():
        try:
            for n in range(1, 120):
                batch = lsm.WriteBatch()
                for a, b in pairs:
                    batch.put(a, b"%d" % n)
                    batch.put(b, b"%d" % n)
                db.write(batch)
                if n % 20 == 0:
                    db.flush(wait=False)
        except Exception as e:   # pragma: no cover - reported below
            errors.append(e)

    def reader():
        keys = [k for p in pairs for k in p]
        n = 0
        try:
            while not done.is_set() or n < 50:
                got = db.multi_get(keys)
                assert len(set(got)) == 1, got
                n += 1
        except Exception as e:   # pragma: no cover
            errors.append(e)

    run_writers_then_readers([threading.Thread(target=writer)],
                             [threading.Thread(target=reader) for _ in range(2)], done)
    assert errors == []
    db.close()


def test_multi_get_of_a_store_of_views_stays_within_each_views_range(tmp_path):
    """A region's daughter (a store of half-file views): multi_get of its
    own keys and of the other half's gives what get gives."""
    rnd = random.Random(3)
    opts = tiny_options(max_open_files=5000)
    keys = [b"v%05d" % i for i in range(1500)]
    parent = lsm.DB.open(str(tmp_path / "parent"), opts)
    model = {}
    for round_ in range(4):
        for k in rnd.sample(keys, 700):
            if rnd.random() < 0.2:
                parent.delete(k)
                model.pop(k, None)
            else:
                parent.put(k, b"%s=%d" % (k, round_))
                model[k] = b"%s=%d" % (k, round_)
        parent.flush()
    tables = parent.live_tables()
    mid = parent.middle_key()
    parent.close()
    for side, lo, hi in (("left", None, mid), ("right", mid, None)):
        db = lsm.DB.create_from_views(str(tmp_path / side), [(lv, p, lo, hi) for lv, p, _l, _h in tables],
                                      opts)
        for _ in range(2):
            got = db.multi_get(keys)
            assert got == [db.get(k) for k in keys]
            assert got == [model.get(k) if (k < mid) == (side == "left") else None for k in keys]
        db.close()
