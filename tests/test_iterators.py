"""Iterator conformance over every iterator kind, against sorted models.

Internal iterators (list, memtable, table, bounded view, level, merging) go
through ``iterator_conformance.check_iterator``; the user-facing DBIterator
(``db.iterator(start, end, snapshot)``) goes through ``check_db_iterator``
below, against a sorted dict of what the snapshot must see.
"""
import os
import random
import threading
import time

import pytest

import lsm
from lsm._db_iter import DBIterator
from lsm._iter import LevelIterator, ListIterator, MergingIterator
from lsm.dbformat import (KIND_DELETE, KIND_VALUE, internal_sort_key, lookup_key, make_internal_key,
                          parse_internal_key, user_key)
from lsm.fs import OSFileSystem
from lsm.memtable import MemTable
from lsm.options import Options
from lsm.sstable import Table, TableBuilder
from lsm.views import TableView

from conftest import tiny_options
from iterator_conformance import check_iterator, check_seeks_and_walks, drain

TABLE_OPTIONS = Options(block_size=128, restart_interval=3)


# -- models of internal entries ---------------------------------------------

def user_keys(rng, n):
    """Distinct user keys, including keys that are prefixes of each other."""
    keys = {bytes(rng.choice(b"abc\x00\xff") for _ in range(rng.randint(1, 4))) for _ in range(n)}
    return sorted(keys)


def entries(rng, users, seqs):
    """Sorted ``(internal key, value)``: 1-3 versions per user key, some
    tombstones; sequence numbers are drawn from the iterator ``seqs`` so that
    entries of different sources never share one."""
    out = []
    for uk in users:
        for _ in range(rng.choice((1, 1, 2, 3))):
            kind = KIND_DELETE if rng.random() < 0.2 else KIND_VALUE
            value = b"" if kind == KIND_DELETE else rng.randbytes(rng.randint(0, 30))
            out.append((make_internal_key(uk, next(seqs), kind), value))
    return sort_entries(out)


def sort_entries(items):
    return sorted(items, key=lambda kv: internal_sort_key(kv[0]))


def seq_source(rng):
    seq = 0
    while True:
        seq += rng.randint(1, 3)
        yield seq


def write_table(path, items, options=TABLE_OPTIONS):
    """A real table file holding ``items``, opened for reading."""
    fs = OSFileSystem()
    f = fs.open_append(path)
    tb = TableBuilder(f, options)
    for k, v in items:
        tb.add(k, v)
    tb.finish()
    f.close()
    return Table.open(fs.open_read(path), options, name=path)


def memtable_of(items):
    """A memtable holding ``items``, added in sequence order as the DB does
    (its precondition), which interleaves the user keys."""
    mem = MemTable()
    for ikey, value in sorted(items, key=lambda kv: parse_internal_key(kv[0])[1]):
        uk, seq, kind = parse_internal_key(ikey)
        mem.add(seq, kind, uk, value)
    return mem


def split_into_runs(items, cuts):
    """Cut sorted ``items`` at the given indexes into consecutive runs."""
    bounds = [0] + list(cuts) + [len(items)]
    return [items[a:b] for a, b in zip(bounds, bounds[1:]) if a < b]


# -- internal iterators -----------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1])
def test_list_iterator_conforms(seed):
    rng = random.Random(seed)
    items = entries(rng, user_keys(rng, 40), seq_source(rng))
    check_iterator(lambda: ListIterator([k for k, _ in items], [v for _, v in items]), items, seed=seed)
    check_iterator(lambda: ListIterator([], []), [])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_memtable_iterator_conforms_with_several_versions_per_key(seed):
    rng = random.Random(seed)
    items = entries(rng, user_keys(rng, 50), seq_source(rng))
    assert len(items) > len({k[:-8] for k, _ in items}), "the model must hold several versions of some key"
    mem = memtable_of(items)
    check_iterator(mem.iterator, items, seed=seed)
    check_iterator(MemTable().iterator, [])


def test_memtable_iterator_crosses_chunks_and_sorted_sublists():
    # 3,000 keys: SortedList holds them in several sublists, and a walk loads
    # many CHUNKs of keys, forward and backward, from any seek.
    rng = random.Random(7)
    keys = sorted({b"k%06d" % rng.randrange(10 ** 6) for _ in range(3000)})
    mem = MemTable()
    seqs = {}
    for seq, k in enumerate(rng.sample(keys, len(keys)), 1):
        mem.add(seq, KIND_VALUE, k, b"v")
        seqs[k] = seq
    assert len(mem.keys._lists) > 1
    want = [(make_internal_key(k, seqs[k], KIND_VALUE), b"v") for k in keys]
    probes = [lookup_key(b"k%06d" % rng.randrange(10 ** 6), len(keys)) for _ in range(200)]
    check_seeks_and_walks(mem.iterator(), want, [internal_sort_key(k) for k, _ in want], probes,
                          internal_sort_key, rng, walks=200, max_steps=300)
    it = mem.iterator()
    it.seek_to_last()
    got = []
    while it.valid():
        got.append(user_key(it.key()))
        it.prev()
    assert got == keys[::-1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_flush_iterator_sees_what_the_sorted_iterator_sees_in_order_or_not(seed):
    """A flush drains a ``FrozenIterator``: the memtable's entries gathered
    into a C array, from its dict when its keys were first written in
    ascending order, else from its sorted keys; either way the same
    entries, every version of a key newest first, as ``MemTableIterator``."""
    from lsm._memtable import FrozenIterator
    rng = random.Random(seed)
    keys = user_keys(rng, 60)
    mem, seq = MemTable(), 0
    for k in keys:                                  # first writes in key order
        seq += 1
        mem.add(seq, KIND_VALUE, k, b"v%d" % seq)
    for _ in range(80):                             # then more versions, any order
        seq += 1
        k = rng.choice(keys)
        if rng.random() < 0.3:
            mem.add(seq, KIND_DELETE, k, b"")
        else:
            mem.add(seq, KIND_VALUE, k, b"v%d" % seq)
    it = mem.flush_iterator()
    assert type(it) is FrozenIterator
    want = drain(mem.iterator())
    assert len(want) == seq and drain(it) == want
    for move in (it.prev, it.seek_to_last, lambda: it.seek(want[0][0]), lambda: it.seek_for_prev(want[0][0])):
        with pytest.raises(NotImplementedError, match="forward only"):
            move()
    it.seek_to_first()
    assert drain(it) == want
    # A key first written out of order (user keys here are at most 4 bytes,
    # so it is new, and below the last): gathered from the sorted keys.
    mem.add(seq + 1, KIND_VALUE, b"\x00" * 5, b"late")
    want = drain(mem.iterator())
    assert len(want) == seq + 1 and drain(mem.flush_iterator()) == want
    assert drain(MemTable().flush_iterator()) == []


def test_memtable_knows_whether_a_range_holds_a_key():
    rng = random.Random(8)
    keys = sorted({b"k%06d" % rng.randrange(10 ** 6) for _ in range(3000)})
    mem = MemTable()
    assert not mem.has_keys_in(None, None) and not mem.has_keys_in(b"a", b"z")
    for seq, k in enumerate(keys, 1):
        mem.add(seq, KIND_VALUE, k, b"v")
    for _ in range(2000):
        lo = rng.choice([None, b"k%06d" % rng.randrange(10 ** 6)])
        hi = rng.choice([None, b"k%06d" % rng.randrange(10 ** 6)])
        want = any((lo is None or k >= lo) and (hi is None or k < hi) for k in keys)
        assert mem.has_keys_in(lo, hi) == want, (lo, hi)


def test_table_and_bounded_view_iterators_conform(tmp_path):
    rng = random.Random(3)
    users = user_keys(rng, 80)
    items = entries(rng, users, seq_source(rng))
    t = write_table(str(tmp_path / "t.sst"), items)
    assert t.num_data_blocks > 3
    check_iterator(t.iterator, items)
    for lo, hi in ((users[10], users[50]), (None, users[5]), (users[-5], None),
                   (users[20] + b"\x00", users[21]), (users[30], users[30])):
        model = [(k, v) for k, v in items
                 if (lo is None or k[:-8] >= lo) and (hi is None or k[:-8] < hi)]
        check_iterator(TableView(t, lo, hi).iterator, model, max_probes=150)


@pytest.mark.parametrize("split_a_user_key", [False, True])
def test_level_iterator_over_several_tables_conforms(tmp_path, split_a_user_key):
    rng = random.Random(4)
    items = entries(rng, user_keys(rng, 90), seq_source(rng))
    step = len(items) // 5
    cuts = [step * i for i in range(1, 5)]
    if not split_a_user_key:
        # The engine's own levels: a user key never spans two tables.
        cuts = [c for c in cuts if items[c - 1][0][:-8] != items[c][0][:-8]]
    else:
        # Still sorted and non-overlapping in internal-key order, which is
        # all LevelIterator's contract asks for.
        multi = next(i for i in range(1, len(items)) if items[i - 1][0][:-8] == items[i][0][:-8])
        cuts = sorted(set(cuts) | {multi})
    runs = split_into_runs(items, cuts)
    assert len(runs) >= 3
    tables = [write_table(str(tmp_path / f"{i}.sst"), run) for i, run in enumerate(runs)]
    largest = [t.largest for t in tables]
    opened = []

    def open_table(i):
        opened.append(i)
        return tables[i].iterator()

    check_iterator(lambda: LevelIterator(largest, open_table), items)
    assert sorted(set(opened)) == list(range(len(tables)))
    check_iterator(lambda: LevelIterator([], open_table), [])


def test_level_iterator_over_bounded_views_conforms(tmp_path):
    rng = random.Random(5)
    users = user_keys(rng, 90)
    items = entries(rng, users, seq_source(rng))
    t = write_table(str(tmp_path / "parent.sst"), items)
    # Three views of one parent table, as a split daughter would hold them.
    bounds = [(None, users[20]), (users[20], users[55]), (users[55], None)]
    views = [TableView(t, lo, hi) for lo, hi in bounds]
    check_iterator(lambda: LevelIterator([v.largest for v in views], lambda i: views[i].iterator()),
                   items, max_probes=250)


@pytest.mark.parametrize("seed", [6, 7])
def test_merging_iterator_over_memtable_and_tables_conforms(tmp_path, seed):
    rng = random.Random(seed)
    seqs = seq_source(rng)
    users = user_keys(rng, 70)
    # Three sources over overlapping user keys with distinct sequence
    # numbers: L1-like tables (oldest), an L0 table, a memtable (newest).
    older = entries(rng, users[::2], seqs)
    l0 = entries(rng, users[::3], seqs)
    newest = entries(rng, rng.sample(users, 30), seqs)
    model = sort_entries(older + l0 + newest)
    runs = split_into_runs(older, [len(older) // 3, 2 * len(older) // 3])
    level = [write_table(str(tmp_path / f"l1-{i}.sst"), run) for i, run in enumerate(runs)]
    l0_table = write_table(str(tmp_path / "l0.sst"), l0)
    mem = memtable_of(newest)

    def make():
        return MergingIterator([mem.iterator(), l0_table.iterator(),
                                LevelIterator([t.largest for t in level], lambda i: level[i].iterator())])

    check_iterator(make, model, seed=seed)
    check_iterator(lambda: MergingIterator([MemTable().iterator(), ListIterator([], [])]), [])


# -- DBIterator ---------------------------------------------------------------

def _at(it):
    return (it.key(), it.value()) if it.valid() else None


def check_db_iterator(db, model, start=None, end=None, snapshot=None, *, seed=0):
    """``db.iterator(start, end, snapshot)`` against ``model`` (a dict of what
    the snapshot sees): forward, backward, seek and seek_for_prev at every key
    and between keys, and random walks that change direction."""
    rng = random.Random(seed)
    keys = sorted(k for k in model if (start is None or k >= start) and (end is None or k < end))
    want = [(k, model[k]) for k in keys]
    it = db.iterator(start, end, snapshot)
    assert isinstance(it, DBIterator)
    assert not it.valid()

    it.seek_to_first()
    got = []
    while it.valid():
        got.append(_at(it))
        it.next()
    assert got == want, "forward"

    it.seek_to_last()
    got = []
    while it.valid():
        got.append(_at(it))
        it.prev()
    assert got == want[::-1], "backward"

    probes = set(model) | {b"\x00", b"\xff\xff\xff\xff\xff\xff"}
    for k in list(model):
        probes.update((k + b"\x00", k[:-1], k + b"\xff"))
    for b in (start, end):
        if b is not None:
            probes.update((b, b + b"\x00", b[:-1]))
    probes = sorted(probes)
    check_seeks_and_walks(it, want, keys, probes, lambda k: k, rng, walks=40, max_steps=10)


def _fill(db, rng, model, steps):
    """Random puts, deletes and batches of a small, prefix-rich key space,
    applied to ``db`` and ``model``; flushes now and then so that the data
    lies in the memtable, L0 and deeper levels at once."""
    for step in range(steps):
        k = bytes(rng.choice(b"abcd") for _ in range(rng.randint(1, 4)))
        r = rng.random()
        if r < 0.6:
            v = os.urandom(rng.randint(0, 40))
            db.put(k, v)
            model[k] = v
        elif r < 0.85:
            db.delete(k)
            model.pop(k, None)
        else:
            b = lsm.WriteBatch()
            for _ in range(3):
                k2 = k + bytes([rng.choice(b"ab")])
                b.put(k2, b"batch").delete(k)
                model[k2] = b"batch"
                model.pop(k, None)
            db.write(b)
        if step % 97 == 96:
            db.flush()


def test_db_iterator_conforms_with_bounds_and_snapshots(dbpath):
    rng = random.Random(8)
    with lsm.DB.open(dbpath, tiny_options()) as db:
        model = {}
        _fill(db, rng, model, 700)
        old_snap, old_model = db.snapshot(), dict(model)
        _fill(db, rng, model, 400)
        mid_snap, mid_model = db.snapshot(), dict(model)
        _fill(db, rng, model, 200)       # the last writes stay in the memtable
        st = db.stats()
        assert st["memtable_entries"] > 0 and sum(st["files_per_level"][1:]) > 0, st
        assert old_model != mid_model != model
        bounds = [(None, None), (b"b", None), (None, b"c"), (b"ab", b"cd"), (b"bb", b"bb\x00"),
                  (b"c", b"b"), (b"d", None)]
        for i, (start, end) in enumerate(bounds):
            for snap, m in ((None, model), (old_snap, old_model), (mid_snap, mid_model)):
                check_db_iterator(db, m, start, end, snap, seed=i)
        db.compact_range()
        check_db_iterator(db, model)
        check_db_iterator(db, old_model, b"a", b"c", old_snap)
        old_snap.close()
        mid_snap.close()


def test_db_iterator_of_an_empty_or_all_deleted_store(dbpath):
    with lsm.DB.open(dbpath, tiny_options()) as db:
        check_db_iterator(db, {})
        for i in range(50):
            db.put(b"k%03d" % i, b"v")
        db.flush()
        for i in range(50):
            db.delete(b"k%03d" % i)
        check_db_iterator(db, {})
        check_db_iterator(db, {}, b"k010", b"k020")


def test_db_iterator_is_a_snapshot_of_its_creation_through_writes_flushes_and_compactions(dbpath):
    rng = random.Random(9)
    with lsm.DB.open(dbpath, tiny_options()) as db:
        model = {}
        _fill(db, rng, model, 500)
        frozen = dict(model)
        it = db.iterator()                 # an implicit snapshot: no Snapshot object
        bounded = db.iterator(b"b", b"c")
        # Writes land in the same memtable the iterator reads, then in new
        # ones; the flushes and compactions delete the tables it was built on.
        _fill(db, rng, model, 300)
        for i in range(200):
            db.put(b"b%03d" % i, b"new")
            model[b"b%03d" % i] = b"new"
        db.compact_range()
        assert model != frozen
        want = sorted(frozen.items())
        it.seek_to_first()
        got = []
        while it.valid():
            got.append((it.key(), it.value()))
            it.next()
        assert got == want
        bounded.seek_to_last()
        got = []
        while bounded.valid():
            got.append((bounded.key(), bounded.value()))
            bounded.prev()
        assert got == [kv for kv in reversed(want) if b"b" <= kv[0] < b"c"]
        check_db_iterator(db, model)


def test_db_iterators_see_a_prefix_of_a_concurrent_writer(dbpath):
    """A writer thread puts w000000, w000001, ...; each iterator, created at
    any moment, must see exactly a prefix of that sequence, forward and
    backward, while flushes and compactions run in the background."""
    n = 2000
    stop = threading.Event()
    errors = []

    def writer(db):
        try:
            for i in range(n):
                db.put(b"w%06d" % i, b"%d" % i)
        except BaseException as e:     # reported by the main thread
            errors.append(e)
        finally:
            stop.set()

    with lsm.DB.open(dbpath, tiny_options(background=True)) as db:
        t = threading.Thread(target=writer, args=(db,))
        t.start()
        checks = 0
        while not stop.is_set() or checks < 5:
            it = db.iterator()
            it.seek_to_first()
            fwd = []
            while it.valid():
                fwd.append(it.key())
                it.next()
            it.seek_to_last()
            back = []
            while it.valid():
                back.append(it.key())
                it.prev()
            assert fwd == [b"w%06d" % i for i in range(len(fwd))], "forward: not a prefix"
            assert back == fwd[::-1], "backward differs from forward"
            if fwd:
                it.seek(fwd[len(fwd) // 2])
                assert it.valid() and it.key() == fwd[len(fwd) // 2] and it.value() == b"%d" % (len(fwd) // 2)
            checks += 1
            # A reader spinning in C would starve the writer's flushes (each
            # GIL hand-back costs a 5 ms switch interval: CPython's convoy
            # effect); a real reader does other work between scans.
            time.sleep(0.001)
        t.join()
        assert not errors, errors
        assert checks >= 5 and db.stats()["flushes"] > 0


@pytest.mark.parametrize("kind", ["flush", "sorted"])
def test_a_memtable_iterator_past_its_end_raises_instead_of_reading_freed_state(kind):
    """key(), value() and the steps of an exhausted memtable iterator raise
    ValueError, as MergingIterator's do (they read through a None before)."""
    mem = MemTable()
    mem.add(1, KIND_VALUE, b"a", b"v")
    mem.add(2, KIND_VALUE, b"a", b"w")
    it = mem.flush_iterator() if kind == "flush" else mem.iterator()
    assert len(drain(it)) == 2 and not it.valid()
    steps = [it.key, it.value, it.next] + ([it.prev] if kind == "sorted" else [])
    for step in steps:
        with pytest.raises(ValueError, match="invalid iterator"):
            step()
