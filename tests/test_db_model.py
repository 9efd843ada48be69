"""Model-based test of the whole DB against a dict, with tiny sizes so that
flush, multi-level compaction, snapshots, reopen and bounded views all run."""
import os
import random

import pytest

import lsm
from lsm import _twins
from conftest import tiny_options


def model_scan(model, start, end, reverse):
    keys = sorted(k for k in model if (start is None or k >= start) and (end is None or k < end))
    if reverse:
        keys.reverse()
    return [(k, model[k]) for k in keys]


def check_chunk(db, rng, model, start, end, reverse, snapshot=None):
    """``scan_chunk`` (one C call, lsm/_read.pyx) against the model and its
    twin, a pinned ``iterator`` read with ``next_batch``; forward, also
    ``scan_short`` (each source read directly, or the iterator path when a
    source holds more than 64 keys of the range)."""
    limit = rng.choice([0, 1, 2, 5, 1000])
    got = db.scan_chunk(start, end, limit, reverse, snapshot)
    assert got == model_scan(model, start, end, reverse)[:limit], (start, end, reverse, limit)
    it = db.iterator(start, end, snapshot)
    if reverse:
        it.seek_to_last()
    else:
        it.seek_to_first()
    assert it.next_batch(limit, reverse) == got
    check_scan_into(db, rng, got, start, end, limit, reverse, snapshot)
    if not reverse:
        assert db.scan_short(start, end, limit, snapshot) == got, (start, end, limit)
        # scan_short_many: this range among others, all at one sequence
        others = [(rand_bound(rng), rand_bound(rng)) for _ in range(rng.randint(0, 3))]
        ranges = others + [(start, end)] + others[:1]
        many = db.scan_short_many(ranges, limit, snapshot)
        assert many[len(others)] == got, (start, end, limit)
        assert many == [db.scan_short(a, b, limit, snapshot) if a is not None and b is not None
                        else db.scan_chunk(a, b, limit, False, snapshot) for a, b in ranges]


def check_scan_into(db, rng, got, start, end, limit, reverse, snapshot=None):
    """lsm's C face ``point_scan_into`` (its entries handed to a C consumer
    in place, lsm._twins.scan_into) against ``scan_chunk``'s ``got``: the
    same entries, the last one's key, and a consumer's stop honoured."""
    taken = _twins.scan_into(db, start, end, limit, reverse, snapshot)
    if taken is None:                   # LSM_REGIONS_PUREPYTHON: no C path
        return
    assert taken == (got, got[-1][0] if got else None, False), (start, end, reverse, limit)
    if got:
        stop = rng.randint(1, len(got))
        assert _twins.scan_into(db, start, end, limit, reverse, snapshot, stop) == (
            got[:stop], got[stop - 1][0], True)


def rand_key(rng):
    # a small key space with keys that are prefixes of each other
    return bytes(rng.choice(b"abcd") for _ in range(rng.randint(1, 5)))


def rand_bound(rng):
    return None if rng.random() < 0.3 else rand_key(rng)


@pytest.mark.parametrize("seed,background", [(1, False), (2, False), (3, True), (4, False)])
def test_random_operations_match_a_dict_model(tmp_path, seed, background):
    rng = random.Random(seed)
    path = str(tmp_path / "db")
    opts = tiny_options(background=background)
    db = lsm.DB.open(path, opts)
    model = {}
    snaps = []   # (snapshot, frozen model)
    work = {"flushes": 0, "compactions": 0}   # stats are per open: add them up

    def count(db):
        st = db.stats()
        for k in work:
            work[k] += st[k]
    try:
        for step in range(2500):
            r = rng.random()
            if r < 0.40:
                k, v = rand_key(rng), os.urandom(rng.randint(0, 40))
                db.put(k, v)
                model[k] = v
            elif r < 0.50:
                k = rand_key(rng)
                db.delete(k)
                model.pop(k, None)
            elif r < 0.56:
                b = lsm.WriteBatch()
                for _ in range(rng.randint(1, 8)):
                    k = rand_key(rng)
                    if rng.random() < 0.7:
                        v = os.urandom(rng.randint(0, 20))
                        b.put(k, v)
                        model[k] = v
                    else:
                        b.delete(k)
                        model.pop(k, None)
                db.write(b)
            elif r < 0.72:
                k = rand_key(rng)
                assert db.get(k) == model.get(k), (step, k)
            elif r < 0.80:
                s, e = rand_bound(rng), rand_bound(rng)
                rev = rng.random() < 0.5
                assert list(db.scan(s, e, reverse=rev)) == model_scan(model, s, e, rev), (step, s, e, rev)
                check_chunk(db, rng, model, s, e, rev)
            elif r < 0.83:
                snaps.append((db.snapshot(), dict(model)))
            elif r < 0.87 and snaps:
                snap, frozen = rng.choice(snaps)
                k = rand_key(rng)
                assert db.get(k, snapshot=snap) == frozen.get(k)
                s, e = rand_bound(rng), rand_bound(rng)
                assert list(db.scan(s, e, snapshot=snap)) == model_scan(frozen, s, e, False)
                check_chunk(db, rng, frozen, s, e, rng.random() < 0.5, snap)
                if rng.random() < 0.3:
                    snaps.remove((snap, frozen))
                    snap.close()
            elif r < 0.90:
                db.flush()
            elif r < 0.92:
                s, e = rand_bound(rng), rand_bound(rng)
                db.compact_range(s, e)
            elif r < 0.94:
                for snap, _ in snaps:
                    snap.close()
                snaps = []
                count(db)
                db.close()
                db = lsm.DB.open(path, opts)
            else:
                # a positionable iterator: seek then walk both ways
                it = db.iterator()
                t = rand_key(rng)
                it.seek(t)
                keys = sorted(model)
                after = [k for k in keys if k >= t]
                assert (it.key() if it.valid() else None) == (after[0] if after else None)
                if it.valid():
                    it.prev()
                    before = [k for k in keys if k < t]
                    assert (it.key() if it.valid() else None) == (before[-1] if before else None)
            db.check()
        assert list(db.scan()) == model_scan(model, None, None, False)
        count(db)
        assert work["flushes"] > 0 and work["compactions"] > 0
        db.compact_range()
        assert sum(db.stats()["files_per_level"][1:]) > 0
    finally:
        for snap, _ in snaps:
            snap.close()
        db.close()


def test_views_of_a_store_behave_like_its_key_range(tmp_path):
    rng = random.Random(7)
    opts = tiny_options()
    parent = lsm.DB.open(str(tmp_path / "parent"), opts)
    model = {}
    for i in range(3000):
        k = rand_key(rng) + b"%d" % (i % 50)
        v = os.urandom(rng.randint(0, 30))
        parent.put(k, v)
        model[k] = v
        if i % 7 == 0:
            d = rand_key(rng)
            parent.delete(d)
            model.pop(d, None)
    parent.flush()
    tables = parent.live_tables()
    assert len(tables) > 1
    mid = parent.middle_key()
    assert mid is not None and min(model) < mid <= max(model)
    left = lsm.DB.create_from_views(str(tmp_path / "left"), [(lv, p, None, mid) for lv, p, _lo, _hi in tables], opts)
    right = lsm.DB.create_from_views(str(tmp_path / "right"), [(lv, p, mid, None) for lv, p, _lo, _hi in tables], opts)
    parent.close()
    lmodel = {k: v for k, v in model.items() if k < mid}
    rmodel = {k: v for k, v in model.items() if k >= mid}
    assert list(left.scan()) == sorted(lmodel.items())
    assert list(right.scan(reverse=True)) == sorted(rmodel.items(), reverse=True)
    rng = random.Random(5)
    for _ in range(200):
        s, e, rev = rand_bound(rng), rand_bound(rng), rng.random() < 0.5
        check_chunk(left, rng, lmodel, s, e, rev)
        check_chunk(right, rng, rmodel, s, e, rev)
    for k in list(model)[:300]:
        assert (left if k < mid else right).get(k) == model[k]
        assert (right if k < mid else left).get(k) is None
    assert left.external_files() and right.external_files()
    left.check()
    right.check()
    # a daughter with references splits again: a view of a view
    tables2 = right.live_tables()
    mid2 = right.middle_key()
    assert mid2 is not None and mid2 > mid
    rr = lsm.DB.create_from_views(str(tmp_path / "rr"),
                                  [(lv, p, max(lo or mid2, mid2), hi) for lv, p, lo, hi in tables2], opts)
    assert list(rr.scan()) == sorted((k, v) for k, v in rmodel.items() if k >= mid2)
    # writes to a daughter work; compaction rewrites views into own files
    right.put(b"zzz", b"new")
    rmodel[b"zzz"] = b"new"
    right.compact_range()
    assert right.external_files() == set()
    right.check()
    assert right.stats()["views"] == 0
    assert list(right.scan()) == sorted(rmodel.items())
    left.compact_range()
    assert left.external_files() == set()
    # parent's files can go now as far as left/right are concerned; rr still refers
    assert rr.external_files()
    rr.compact_range()
    assert rr.external_files() == set()
    for d in (left, right, rr):
        d.close()
    reopened = lsm.DB.open(str(tmp_path / "right"), opts)
    assert list(reopened.scan()) == sorted(rmodel.items())
    reopened.close()
