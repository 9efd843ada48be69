"""The memtable's prefix index (``Options.prefix_extractor``): a short scan
within one prefix answers as the sorted keys do, at every sequence, with
the index made at once, switched on an open DB, or dropped."""
import random
import threading

import pytest
from hypothesis import given, settings, strategies as st

import lsm
from lsm._memtable import MemTable, visible_range
from conftest import run_writers_then_readers, tiny_options

KEYS = st.binary(min_size=1, max_size=5).map(lambda b: bytes(c % 3 + 97 for c in b))


def _same(a, b, lo, hi, seq, cap):
    got_a, got_b = [], []
    rc_a = visible_range(a, lo, hi, seq, got_a, cap)
    rc_b = visible_range(b, lo, hi, seq, got_b, cap)
    assert (rc_a, got_a) == (rc_b, got_b), (lo, hi, seq, cap)


@settings(max_examples=200, deadline=None)
@given(length=st.integers(1, 3), writes=st.lists(st.tuples(KEYS, st.sampled_from([0, 1, 1])),
                                                   min_size=1, max_size=120),
       reads=st.lists(st.tuples(KEYS, st.binary(min_size=0, max_size=2), st.integers(0, 130),
                                st.sampled_from([1, 2, 64])), max_size=30),
       switch=st.integers(0, 130), to=st.sampled_from([None, 1, 2, 3]))
def test_short_scans_through_the_index_match_the_sorted_keys(length, writes, reads, switch, to):
    """Ranges within one prefix (lo and lo + a byte) and across prefixes, at
    every sequence and cap, with the extractor switched midway."""
    indexed, plain = MemTable(64, lsm.fixed_prefix(length)), MemTable(64)
    for seq, (key, kind) in enumerate(writes, 1):
        if seq == switch:
            indexed.use_prefix_extractor(None if to is None else lsm.fixed_prefix(to))
        for m in (indexed, plain):
            m.add(seq, kind, key, b"v%d" % seq)
    for lo, tail, seq, cap in reads:
        hi = lo + tail if tail else lo + b"d"
        if lo < hi:
            _same(indexed, plain, lo, hi, seq, cap)


def test_a_prefix_of_one_key_is_read_from_its_slot_and_others_by_the_sorted_keys():
    """The index answers for a prefix of one key without the sorted keys:
    new keys stay pending (the sorted-list walk merges them first), as they
    do for a prefix no key has; a prefix of several keys, or a read across
    prefixes, is read by the sorted keys."""
    indexed, plain = MemTable(64, lsm.fixed_prefix(2)), MemTable(64)
    for seq, key in enumerate([b"ab2", b"ba", b"ac", b"ab1", b"aa9", b"ab"], 1):
        indexed.add(seq, 1, key, key)
        plain.add(seq, 1, key, key)
    for lo, hi in ((b"ac", b"ac\xff"), (b"ba", b"ba\x00"), (b"zz", b"zz\x01"),
                   (b"aa9", b"aa9\x00"), (b"aa", b"aa9")):
        for seq in (0, 2, 3, 10):
            _same(indexed, plain, lo, hi, seq, 64)
    assert indexed._pending and not plain._pending
    _same(indexed, plain, b"ab", b"ab\xff", 10, 64)          # three keys: the sorted list
    assert not indexed._pending
    indexed.add(11, 1, b"ad", b"ad")
    plain.add(11, 1, b"ad", b"ad")
    _same(indexed, plain, b"ad", b"ae", 11, 0)               # one key, cap 0: -1 both
    _same(indexed, plain, b"a", b"b", 11, 64)                # no prefix: the sorted list


def test_the_prefix_table_is_charged_to_the_memtable():
    """Its slots count towards the memtable's size (and so its flush), 24
    bytes each, the table doubling from 64 slots at 3/4 full."""
    indexed, plain = MemTable(64, lsm.fixed_prefix(4)), MemTable(64)
    for seq in range(1, 1001):
        for m in (indexed, plain):
            m.add(seq, 1, b"%04d" % seq, b"v")
    assert indexed.approximate_bytes - plain.approximate_bytes == 2048 * 24


def test_extractors_say_what_is_wrong():
    with pytest.raises(ValueError, match="length must be >= 1"):
        lsm.fixed_prefix(0)
    with pytest.raises(TypeError, match="made by fixed_prefix"):
        lsm.PrefixExtractor()
    pe = lsm.fixed_prefix(3)
    assert (pe.prefix_len(b"ab"), pe.prefix_len(b"abc"), pe.prefix_len(b"abcdef")) == (-1, 3, 3)
    with pytest.raises(TypeError, match="key must be bytes"):
        pe.prefix_len("abc")
    with pytest.raises(TypeError, match="prefix_extractor must be an lsm.PrefixExtractor"):
        lsm.Options(prefix_extractor=len).validate()


def test_a_db_reads_the_same_with_its_extractor_set_dropped_or_switched(dbpath):
    """Across the memtable, the one being flushed and the tables, and
    through set_prefix_extractor on an open DB holding keys already."""
    rnd = random.Random(3)
    db = lsm.DB.open(dbpath, tiny_options(memtable_bytes=1 << 16))
    ref = {}
    try:
        with pytest.raises(TypeError, match="prefix_extractor must be"):
            db.set_prefix_extractor("ab")
        for step in range(6):
            for _ in range(300):
                key = b"%c%c%d" % (rnd.choice(b"abc"), rnd.choice(b"xyz"), rnd.randrange(30))
                if rnd.random() < 0.2:
                    db.delete(key)
                    ref.pop(key, None)
                else:
                    db.put(key, b"%d" % step)
                    ref[key] = b"%d" % step
            db.set_prefix_extractor([lsm.fixed_prefix(2), None, lsm.fixed_prefix(1)][step % 3])
            if step == 3:
                db.flush()
            for p in (b"ax", b"by", b"cz", b"a", b"c"):
                want = sorted((k, v) for k, v in ref.items() if k.startswith(p))
                assert db.scan_short(p, p + b"\xff") == want
                assert db.scan_short_many([(p, p + b"\xff")]) == [want]
    finally:
        db.close()
    with pytest.raises(lsm.ClosedError):
        db.set_prefix_extractor(None)


def test_readers_through_the_index_see_exact_rows_while_a_writer_adds_keys(dbpath):
    """Readers read ranges of one prefix at the sequence they start at (a
    snapshot) while a writer adds keys to the same prefixes and the
    memtable is flushed; each answer equals the one read again at the end."""
    db = lsm.DB.open(dbpath, tiny_options(memtable_bytes=1 << 15, background=True,
                                          prefix_extractor=lsm.fixed_prefix(2)))
    done, seen, errors = threading.Event(), [], []

    def write():
        rnd = random.Random(1)
        for i in range(6000):
            db.put(b"%c%c%04d" % (rnd.choice(b"ab"), rnd.choice(b"xy"), rnd.randrange(400)),
                   b"%d" % i)

    def read(seed):
        rnd = random.Random(seed)
        try:
            while not done.is_set():
                p = b"%c%c" % (rnd.choice(b"ab"), rnd.choice(b"xy"))
                snap = db.snapshot()
                seen.append((p, snap, db.scan_short(p, p + b"\xff", 1000, snap)))
        except Exception as e:      # surfaced below
            errors.append(e)

    try:
        run_writers_then_readers([threading.Thread(target=write)],
                                 [threading.Thread(target=read, args=(s,)) for s in (2, 3)], done)
        assert not errors and len(seen) > 10
        for p, snap, got in seen:
            assert got == db.scan_chunk(p, p + b"\xff", 1000, snapshot=snap)
    finally:
        db.close()


def test_short_scans_of_one_key_rows_match_the_iterator_across_every_source(dbpath):
    """Rows as the data API keeps them: a prefix (the row key) of one key,
    its head, with now and then a second key (a delta) or a delete, spread
    over the tables, a frozen memtable and the live one.  ``scan_short_many``
    (whose memtables answer a one-key prefix from the prefix table, without
    a list: lsm._read ``_short``) reads as ``scan_chunk`` does at every
    snapshot taken, for every limit."""
    rnd = random.Random(34)
    db = lsm.DB.open(dbpath, tiny_options(memtable_bytes=1 << 20,
                                          prefix_extractor=lsm.fixed_prefix(4)))
    snaps = []
    try:
        for step in range(5):
            for _ in range(150):
                row = b"r%03d" % rnd.randrange(400)
                key = row + (b"h" if rnd.random() < 0.85 else b"d%d" % rnd.randrange(2))
                if rnd.random() < 0.15:
                    db.delete(key)
                else:
                    db.put(key, b"%d-%d" % (step, rnd.randrange(1000)))
                if rnd.random() < 0.03:
                    snaps.append(db.snapshot())
            if step in (1, 2):
                db.flush()
            elif step == 3:
                with db._write_lock:            # frozen, not flushed: the next writes go on top
                    db._switch_memtable()
        assert db._imm is not None
        snaps.append(None)
        ranges = [(b"r%03d" % i, b"r%03d\xff" % i) for i in range(401)] + [(b"r005h", b"r005i")]
        for snap in snaps:
            for limit in (0, 1, 5):
                want = [db.scan_chunk(lo, hi, limit, snapshot=snap) for lo, hi in ranges]
                assert db.scan_short_many(ranges, limit, snap) == want
                assert [db.scan_short(lo, hi, limit, snap) for lo, hi in ranges] == want
    finally:
        db.close()


@pytest.mark.parametrize("late", [False, True])
def test_a_one_key_prefix_reads_its_newest_version_through_every_rewrite(late):
    """A prefix's one key has its newest Version in its slot (the row read,
    ``prefix_one``, takes it from there, not from the dict): kept through
    rewrites and a delete, through ``set_prefix_extractor`` after the writes
    (``late``), and given up when the prefix gains a second key."""
    pe = lsm.fixed_prefix(4)
    db = lsm.DB.open(None, tiny_options(memtable_bytes=1 << 20,
                                        prefix_extractor=None if late else pe))
    try:
        snaps = []
        for i in range(30):
            db.put(b"rowB%d" % i, b"other")        # a prefix of many keys
        for i in range(30):
            db.put(b"rowAh", b"%d" % i)
            snaps.append((db.snapshot(), [(b"rowAh", b"%d" % i)]))
            if late and i == 10:
                db.set_prefix_extractor(pe)
        db.delete(b"rowAh")
        snaps.append((db.snapshot(), []))
        db.put(b"rowAh", b"back")
        snaps.append((None, [(b"rowAh", b"back")]))
        for snap, want in snaps:
            assert db.scan_short(b"rowA", b"rowA\xff", 10, snap) == want
            assert db.scan_short_many([(b"rowA", b"rowA\xff"), (b"rowB1", b"rowB1\x00")], 10,
                                      snap) == [want, [(b"rowB1", b"other")]]
        db.put(b"rowAx", b"second")
        assert db.scan_short(b"rowA", b"rowA\xff") == [(b"rowAh", b"back"), (b"rowAx", b"second")]
        db.put(b"rowAh", b"again")
        assert db.scan_short(b"rowA", b"rowA\xff") == [(b"rowAh", b"again"), (b"rowAx", b"second")]
    finally:
        db.close()
