"""lsm's C face for scans, ``point_scan_into`` (ext/lsm/_api.pxd): a chunk's
entries handed to a C consumer in place, entry by entry, are ``scan_chunk``'s
(the list path, itself checked against a dict model in test_db_model.py):
the same entries for every source mix (memtable, frozen memtable, L0 and
deeper tables, bounded views), snapshot, deletes, bounds and direction; the
consumer's stop and its exception end the scan.  ``lsm._twins.scan_into``
runs the face with a consumer that collects ``(key, value)``."""
import random

import pytest

import lsm
from conftest import tiny_options
from lsm import _twins

pytestmark = pytest.mark.skipif(lsm.PUREPYTHON, reason="no C path under LSM_REGIONS_PUREPYTHON")


def same_as_scan_chunk(db, start, end, limit, reverse, snapshot=None):
    want = db.scan_chunk(start, end, limit, reverse, snapshot)
    got = _twins.scan_into(db, start, end, limit, reverse, snapshot)
    assert got == (want, want[-1][0] if want else None, False), (start, end, limit, reverse)
    for stop in ({1, len(want) // 2, len(want)} - {0} if want else ()):
        assert _twins.scan_into(db, start, end, limit, reverse, snapshot, stop) == (
            want[:stop], want[stop - 1][0], True)
    return want


BOUNDS = [None, b"", b"k", b"k0", b"k05", b"k050", b"k0500", b"k1", b"k2", b"z"]


def all_ranges(db, snapshot=None):
    for start in BOUNDS:
        for end in BOUNDS:
            for limit in (0, 1, 7, 1000):
                for reverse in (False, True):
                    same_as_scan_chunk(db, start, end, limit, reverse, snapshot)


def test_every_source_mix_reads_as_scan_chunk(tmp_path):
    """Versions of one key in several sources, tombstones hiding older
    values, keys only in tables, keys only in the memtable."""
    rng = random.Random(7)
    db = lsm.DB.open(str(tmp_path / "db"), tiny_options())
    try:
        all_ranges(db)                                  # empty
        for rnd in range(6):
            for _ in range(150):
                k = b"k%04d" % rng.randrange(300)
                if rng.random() < 0.2:
                    db.delete(k)
                else:
                    db.put(k, b"v%d." % rnd + bytes(rng.randrange(30)))
            if rnd % 2 == 0:
                db.flush()
            snap = db.snapshot()
            for _ in range(40):                         # newer than the snapshot
                db.put(b"k%04d" % rng.randrange(300), b"after")
                db.delete(b"k%04d" % rng.randrange(300))
            all_ranges(db)
            all_ranges(db, snap)
            snap.close()
        db.compact_range()
        all_ranges(db)
    finally:
        db.close()


def test_a_store_of_views_reads_as_scan_chunk(tmp_path):
    """A daughter's bounded views (their iterator lends no entry in place:
    the face reads them through key() and value())."""
    src = lsm.DB.open(str(tmp_path / "src"), tiny_options())
    for i in range(400):
        src.put(b"k%04d" % i, b"v%d" % i)
    src.flush()
    views = [(level, path, b"k0100", b"k0300") for level, path, _, _ in src.live_tables()]
    last = src.stats()["last_sequence"]
    src.close()
    db = lsm.DB.create_from_views(str(tmp_path / "d"), views, tiny_options(), last)
    try:
        db.put(b"k0150", b"new")
        db.delete(b"k0151")
        want = same_as_scan_chunk(db, None, None, 1000, False)
        assert len(want) == 199 and (b"k0150", b"new") in want
        all_ranges(db)
    finally:
        db.close()


def test_many_versions_of_a_key_in_the_memtable_are_one_entry(tmp_path):
    db = lsm.DB.open(None, tiny_options(memtable_bytes=1 << 20))
    try:
        for i in range(50):
            for k in (b"a", b"b", b"c"):
                db.put(k, b"%s%d" % (k, i))
        db.delete(b"b")
        assert same_as_scan_chunk(db, None, None, 10, False) == [(b"a", b"a49"), (b"c", b"c49")]
        assert same_as_scan_chunk(db, None, None, 10, True) == [(b"c", b"c49"), (b"a", b"a49")]
    finally:
        db.close()


def test_the_consumers_exception_ends_the_scan(tmp_path):
    db = lsm.DB.open(None, tiny_options())
    try:
        for i in range(20):
            db.put(b"k%02d" % i, b"v")
        for reverse in (False, True):
            with pytest.raises(KeyError):
                _twins.scan_into(db, None, None, 100, reverse, None, 0, 5)
        assert _twins.scan_into(db, None, None, 100)[0] == db.scan_chunk(None, None, 100)
    finally:
        db.close()


def test_bad_arguments_raise_as_scan_chunk_does(tmp_path):
    db = lsm.DB.open(None, tiny_options())
    try:
        for args in [("x", None), (None, 5)]:
            with pytest.raises(TypeError):
                db.scan_chunk(*args)
            with pytest.raises(TypeError):
                _twins.scan_into(db, *args)
        with pytest.raises(ValueError):
            _twins.scan_into(db, None, None, -1)
    finally:
        db.close()
    with pytest.raises(lsm.ClosedError):
        _twins.scan_into(db)
