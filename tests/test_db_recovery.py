"""Recovery at the DB level: kill -9, torn WALs, flipped bits in tables.

The contract under test (lsm/db.py): a write acknowledged with the default
durability survives kill -9; recovery yields a prefix of the writes, never a
partial batch; a corrupt record in the middle of a WAL, or a flipped bit in
a table, raises ``CorruptionError`` and never becomes a wrong value.
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

import lsm
from lsm import filenames
from lsm.wal import BLOCK_SIZE, LogReader
from regions.soak.harness import NoSyncFileSystem

from conftest import tiny_options

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))


# The OS file system without fsyncs, for the tests that reopen a store
# hundreds of times: they are about process crashes and damaged bytes, not
# power loss, and an fsync per reopen would make them take minutes.
NoSyncFS = NoSyncFileSystem


def files_of(path, kind):
    return sorted(os.path.join(path, n) for n in os.listdir(path)
                  if (filenames.parse(n) or (None,))[0] == kind)


def contents(path, options):
    with lsm.DB.open(path, options) as db:
        return dict(db.scan())


def flip_bit(path, offset, bit=0):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([b ^ (1 << bit)]))


# -- kill -9 in the middle of a write stream ---------------------------------

def stream_ops(i):
    """Write number ``i`` of the stream, a pure function of ``i`` so that the
    child and the parent agree: a put, a delete or a batch, as a list of
    ``(key, value-or-None)``, over a key space small enough for overwrites."""
    rng = random.Random(i * 1_000_003 + 17)
    def key():
        return b"k%04d" % rng.randrange(300)

    def value():
        return b"v%d:" % i + (b"z" * rng.randint(0, 150) if rng.random() < 0.5 else rng.randbytes(rng.randint(0, 150)))
    r = rng.random()
    if r < 0.7:
        return [(key(), value())]
    if r < 0.8:
        return [(key(), None)]
    return [(key(), value() if rng.random() < 0.8 else None) for _ in range(rng.randint(2, 6))]


def apply_ops(model, ops):
    for k, v in ops:
        if v is None:
            model.pop(k, None)
        else:
            model[k] = v


def child_options():
    # Tiny memtable and tables, background work on: the stream flushes every
    # few dozen writes and compacts all the time, so kills land in both.
    return tiny_options(background=True)


def child_main(path, start, ack_path):
    """Run in the child: open the store, write stream_ops(start), ... and append
    each number to ``ack_path`` after the write returned, until killed."""
    ack = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(ack, b"opening\n")
    db = lsm.DB.open(path, child_options())
    os.write(ack, b"open\n")
    i = start
    while True:
        ops = stream_ops(i)
        if len(ops) == 1:
            k, v = ops[0]
            if v is None:
                db.delete(k)
            else:
                db.put(k, v)
        else:
            b = lsm.WriteBatch()
            for k, v in ops:
                if v is None:
                    b.delete(k)
                else:
                    b.put(k, v)
            db.write(b)
        os.write(ack, b"%d\n" % i)
        i += 1


CHILD = (f"import sys; sys.path.insert(0, {TESTS_DIR!r}); "
         "from test_db_recovery import child_main; "
         "child_main(sys.argv[1], int(sys.argv[2]), sys.argv[3])")


def read_acks(ack_path):
    """``(opened, [acknowledged write numbers])``; a torn last line is ignored."""
    with open(ack_path, "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    opened = b"open" in lines
    return opened, [int(x) for x in lines if x.isdigit()]


def wait_for_line(ack_path, line, proc, deadline):
    while time.monotonic() < deadline:
        if os.path.exists(ack_path):
            with open(ack_path, "rb") as f:
                if line in f.read().split(b"\n")[:-1]:
                    return
        assert proc.poll() is None, f"child exited early with {proc.returncode}"
        time.sleep(0.002)
    raise AssertionError(f"child never wrote {line!r}")


def test_kill_9_during_writes_flushes_and_compactions_loses_no_acknowledged_write(tmp_path):
    rng = random.Random(2024)
    path = str(tmp_path / "db")
    reopen = tiny_options()              # the parent's reopen: no background work
    model, done = {}, 0                  # writes 0 .. done-1 are in the store
    acked_total = 0
    for rnd in range(6):
        ack_path = str(tmp_path / f"ack-{rnd}")
        err_path = str(tmp_path / f"stderr-{rnd}")
        with open(err_path, "wb") as err:
            proc = subprocess.Popen([sys.executable, "-c", CHILD, path, str(done), ack_path],
                                    stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 15
            if rnd == 1:
                # Kill early: during (or just after) the child's recovery.
                wait_for_line(ack_path, b"opening", proc, deadline)
                time.sleep(rng.uniform(0.0, 0.03))
            else:
                wait_for_line(ack_path, b"open", proc, deadline)
                time.sleep(rng.uniform(0.15, 0.5))
            assert proc.poll() is None, open(err_path).read()
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert proc.returncode == -signal.SIGKILL, open(err_path).read()
        opened, acked = read_acks(ack_path)
        assert acked == list(range(done, done + len(acked))), "acks out of order"
        if rnd != 1:
            assert opened and len(acked) > 20, (rnd, len(acked))
        acked_total += len(acked)
        for i in acked:
            apply_ops(model, stream_ops(i))
        got = contents(path, reopen)
        # Every acknowledged write is there; the one write in flight at the
        # kill may or may not be; nothing else.
        if got == model:
            done += len(acked)
        else:
            in_flight = dict(model)
            apply_ops(in_flight, stream_ops(done + len(acked)))
            assert got == in_flight, (
                f"round {rnd}: after {done + len(acked)} acknowledged writes, "
                f"missing {sorted(set(model) - set(got))[:5]}, "
                f"invented {sorted(set(got) - set(in_flight))[:5]}, "
                f"wrong {[k for k in got if k in model and got[k] != model[k]][:5]}")
            model, done = in_flight, done + len(acked) + 1
    assert acked_total > 200
    with lsm.DB.open(path, reopen) as db:
        st = db.stats()
    assert sum(st["files_per_level"][1:]) > 0, f"the children never compacted: {st}"


# -- the WAL cut at every byte of its last records ---------------------------

def write_and_measure(db, log_path, op):
    """Apply ``op`` (one of: ("put", k, v), ("del", k), ("batch", ops)) and
    return the WAL's size after it: the end of its record (the bytes
    appended: the file on disk also holds the zeros written ahead)."""
    if op[0] == "put":
        db.put(op[1], op[2])
    elif op[0] == "del":
        db.delete(op[1])
    else:
        b = lsm.WriteBatch()
        for k, v in op[1]:
            if v is None:
                b.delete(k)
            else:
                b.put(k, v)
        db.write(b)
    assert db._log.file.path == log_path
    return db._log.file.size


def as_ops(op):
    if op[0] == "put":
        return [(op[1], op[2])]
    if op[0] == "del":
        return [(op[1], None)]
    return op[1]


def build_wal(path, options, fill_to, last, rng):
    """Put fill keys until the WAL holds ``fill_to`` bytes, then write ``last``,
    without a flush, and close the store.  Returns (the end offset of each
    write's WAL record, models) where ``models[m]`` is the store after the
    first m writes, for m >= the number of fill writes."""
    ends, models, model = [], {}, {}
    with lsm.DB.open(path, options) as db:
        [log] = files_of(path, "log")
        while not ends or ends[-1] < fill_to:
            near = ends and ends[-1] >= fill_to - 500      # small steps near the target
            op = ("put", b"fill%04d" % len(ends), rng.randbytes(16 if near else rng.randint(50, 300)))
            ends.append(write_and_measure(db, log, op))
            apply_ops(model, as_ops(op))
        models[len(ends)] = dict(model)
        for op in last:
            ends.append(write_and_measure(db, log, op))
            apply_ops(model, as_ops(op))
            models[len(ends)] = dict(model)
    [log] = files_of(path, "log")
    assert os.path.getsize(log) == ends[-1]
    return ends, models


def reopen_cut(src, work, cut, options):
    """Copy the store ``src`` to ``work`` with its WAL cut to ``cut`` bytes and
    return what a reopen sees."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    [log] = files_of(work, "log")
    os.truncate(log, cut)
    return contents(work, options)


def test_wal_cut_at_every_byte_of_its_last_three_records_reopens_to_a_prefix(tmp_path):
    src, work = str(tmp_path / "src"), str(tmp_path / "work")
    options = lsm.Options(background=False, fs=NoSyncFS())     # nothing is flushed
    rng = random.Random(5)
    # Fill the first WAL block to within a few hundred bytes of its end, so
    # that the first of the last three records is split into FIRST and LAST
    # fragments across the block boundary.
    last = [("put", b"one", b"1" * 150),
            ("batch", [(b"two-a", b"a" * 20), (b"fill0001", None), (b"two-b", b"b" * 30), (b"one", b"new")]),
            ("del", b"fill0002")]
    ends, models = build_wal(src, options, BLOCK_SIZE - 100, last, rng)
    start = ends[-4]
    assert start < BLOCK_SIZE < ends[-3], "the first of the last three records must span two blocks"
    for cut in range(start, ends[-1] + 1):
        m = sum(1 for e in ends if e <= cut)
        assert reopen_cut(src, work, cut, options) == models[m], f"cut at {cut}: expected the first {m} writes"


def test_a_batch_torn_anywhere_across_its_blocks_appears_wholly_or_not_at_all(tmp_path):
    src, work = str(tmp_path / "src"), str(tmp_path / "work")
    options = lsm.Options(background=False, fs=NoSyncFS())
    rng = random.Random(6)
    # A ~80 KiB batch: one logical record in FIRST, MIDDLE and LAST fragments.
    big = [(b"batch%03d" % i, rng.randbytes(800)) for i in range(100)] + [(b"fill0000", None)]
    ends, models = build_wal(src, options, 1000, [("batch", big)], rng)
    start, end = ends[-2], ends[-1]
    assert end - start > 2 * BLOCK_SIZE
    boundaries = [b for b in range(BLOCK_SIZE, end, BLOCK_SIZE)]
    cuts = {start, start + 1, start + 7, end - 1, end}
    for b in boundaries:
        cuts.update((b - 1, b, b + 1, b + 7, b + 8))
    cuts.update(rng.sample(range(start, end), 15))
    for cut in sorted(cuts):
        want = models[len(ends)] if cut >= end else models[len(ends) - 1]
        got = reopen_cut(src, work, cut, options)
        assert got == want, f"cut at {cut} of a batch record at [{start}, {end})"


# -- a damaged record in the middle of the WAL --------------------------------

def test_a_corrupt_wal_record_followed_by_valid_ones_makes_open_raise(tmp_path):
    path = str(tmp_path / "db")
    options = lsm.Options(background=False, fs=NoSyncFS())
    ops = [("put", b"a", b"1" * 10), ("put", b"b", b"2" * 10), ("put", b"c", b"3" * 10), ("put", b"d", b"4")]
    ends, models = build_wal(path, options, 0, ops, random.Random(7))
    [log] = files_of(path, "log")
    with open(log, "rb") as f:
        pristine = f.read()
    # Record 2 of 5 (the first is a fill put); records 3-5 are valid after it.
    lo, hi = ends[1], ends[2]
    for offset in range(lo, hi):
        flip_bit(log, offset, offset % 8)
        data_files = files_of(path, "log") + files_of(path, "sst")
        with pytest.raises(lsm.CorruptionError) as ei:
            lsm.DB.open(path, options)
        assert os.path.basename(log) in str(ei.value), str(ei.value)
        # A refused open writes no table, drops no WAL and releases the
        # store (the next open in this loop would fail on the lock).
        assert files_of(path, "log") + files_of(path, "sst") == data_files
        with open(log, "rb") as f:
            damaged = f.read()
        assert len(damaged) == len(pristine) and damaged != pristine
        flip_bit(log, offset, offset % 8)
    # Restored, the same WAL replays in full.
    assert contents(path, options) == models[len(ends)]


# -- a flipped bit in a table ---------------------------------------------------

def check_reads_after_damage(path, options, model, absent):
    """Open the store and read every key, ``absent`` keys and full scans both
    ways.  Each operation must give the model's answer or raise
    CorruptionError.  Returns whether any operation raised."""
    want = sorted(model.items())
    try:
        db = lsm.DB.open(path, options)
    except lsm.CorruptionError:
        return True
    raised = False
    with db:
        for k in list(model) + absent:
            try:
                got = db.get(k)
            except lsm.CorruptionError:
                raised = True
                continue
            assert got == model.get(k), f"get({k!r}) gave {got!r}, not {model.get(k)!r}"
        for reverse in (False, True):
            expect = want[::-1] if reverse else want
            got = []
            try:
                for kv in db.scan(reverse=reverse):
                    got.append(kv)
            except lsm.CorruptionError:
                raised = True
                assert got == expect[:len(got)], f"scan(reverse={reverse}) before the error"
            else:
                assert got == expect, f"scan(reverse={reverse}) silently differs"
    return raised


def test_a_flipped_bit_anywhere_in_a_table_is_corruption_never_a_wrong_value(tmp_path):
    path = str(tmp_path / "db")
    options = tiny_options(fs=NoSyncFS(), target_file_bytes=1024, level1_bytes=1 << 20)   # no later compaction
    rng = random.Random(8)
    model = {}
    with lsm.DB.open(path, options) as db:
        for i in range(160):
            k = b"key%04d" % rng.randrange(400)
            # Half compressible (zstd blocks), half random (raw blocks).
            v = (b"abc" * rng.randint(1, 20)) if rng.random() < 0.5 else rng.randbytes(rng.randint(1, 40))
            db.put(k, v)
            model[k] = v
        for k in rng.sample(sorted(model), 15):
            db.delete(k)
            del model[k]
        db.compact_range()
        st = db.stats()
    assert st["files_per_level"][0] == 0 and sum(st["files_per_level"]) >= 3, st
    absent = [b"key%04d" % i for i in range(400) if b"key%04d" % i not in model][:40]
    assert not check_reads_after_damage(path, options, model, absent), "the sound store raised"
    tables = sorted(files_of(path, "sst"), key=os.path.getsize)
    # Every byte of the smallest table, a sample of bytes of the others.
    targets = [(tables[0], off) for off in range(os.path.getsize(tables[0]))]
    for t in tables[1:]:
        targets += [(t, off) for off in rng.sample(range(os.path.getsize(t)), 60)]
    missed = []
    for n, (table, offset) in enumerate(targets):
        bit = n % 8
        flip_bit(table, offset, bit)
        try:
            if not check_reads_after_damage(path, options, model, absent):
                missed.append((os.path.basename(table), offset, bit))
        finally:
            flip_bit(table, offset, bit)
    # Every byte of a table is under a checksum (blocks, trailers, footer), so
    # every flip must be noticed by at least the full scan.
    assert not missed, f"flips that went unnoticed (harmless, but every byte is checksummed): {missed[:10]}"


def test_a_crash_leaves_the_preallocated_wal_zeros_and_recovery_ends_cleanly_at_them(tmp_path, caplog):
    """The WAL is zero-filled ahead of its end (Options
    .wal_preallocate_bytes).  A crash leaves the zeros on disk: recovery must
    take them as the log's clean end, not as a torn tail or damage."""
    src, crashed = str(tmp_path / "db"), str(tmp_path / "crashed")
    opts = lsm.Options(sync=True, background=False, wal_preallocate_bytes=64 << 10)
    db = lsm.DB.open(src, opts)
    for i in range(300):
        db.put(b"k%04d" % i, b"v" * 100)
    # The image of a crash right now: every write was synced, nothing closed.
    shutil.copytree(src, crashed, ignore=shutil.ignore_patterns(filenames.LOCK))
    db.close()
    (wal,) = [n for n in os.listdir(crashed) if n.endswith(".log")]
    data = open(os.path.join(crashed, wal), "rb").read()
    assert len(data) == 64 << 10 and data.endswith(bytes(1000))
    caplog.set_level("WARNING", logger="lsm")
    with lsm.DB.open(crashed, opts) as db:
        assert [db.get(b"k%04d" % i) for i in range(300)] == [b"v" * 100] * 300
        db.put(b"after", b"x")
    assert not [r for r in caplog.records if "torn tail" in r.getMessage()]
    # A clean close trims the zeros: the log ends with its last record (the
    # newest WAL; the replayed one stays until its records are flushed).
    wal = max(n for n in os.listdir(crashed) if n.endswith(".log"))
    reader = LogReader(open(os.path.join(crashed, wal), "rb").read())
    assert len(list(reader)) == 1
    assert reader.end_offset == os.path.getsize(os.path.join(crashed, wal))
    with lsm.DB.open(crashed, opts) as db:
        assert db.get(b"after") == b"x" and db.get(b"k0299") == b"v" * 100


def test_wal_preallocation_defaults_to_1_mib_unless_set_and_is_checked():
    assert lsm.Options().wal_preallocate() == 1 << 20
    assert lsm.Options(sync=True).wal_preallocate() == 1 << 20
    assert lsm.Options(sync=True, wal_preallocate_bytes=0).wal_preallocate() == 0
    assert lsm.Options(wal_preallocate_bytes=4096).wal_preallocate() == 4096
    for bad in (-1, 1.5, "1M", True):
        with pytest.raises(ValueError, match="wal_preallocate_bytes must be None or an int >= 0"):
            lsm.Options(wal_preallocate_bytes=bad).validate()
