"""The C fast paths of WAL records (a put, a delete or a batch built in
place by the log writer) and of the memtable's batch insert equal the
general paths."""
import random

from lsm._memtable import add_entries, add_version
from lsm.memtable import MemTable
from lsm._write_batch import encode_batch
from lsm.batch import decode_record, encode_record, encode_single
from lsm.memfs import MemoryAppendFile
from lsm.wal import BLOCK_SIZE, HEADER_SIZE, LogReader, LogWriter


def _offsets(rng):
    """Where in a block a writer starts: the start, random, and near the end
    (so that records are fragmented and block trailers written)."""
    return [0, rng.randrange(HEADER_SIZE, BLOCK_SIZE), BLOCK_SIZE - rng.randint(0, 400),
            BLOCK_SIZE - HEADER_SIZE]


def _same_log(offset, via_record, via_c):
    """Write one record both ways after a first record ``offset`` bytes long
    (0, or at least a header); the logs are equal, and so are the writers'
    ``room``.  Returns the log."""
    a, b = MemoryAppendFile(), MemoryAppendFile()
    wa, wb = LogWriter(a), LogWriter(b)
    if offset:
        for w in (wa, wb):
            w.add_record(bytes(offset - HEADER_SIZE))
    via_record(wa)
    via_c(wb)
    assert a.getvalue() == b.getvalue() and wa.room == wb.room
    return a.getvalue()


def test_add_single_matches_add_record_of_encode_single_byte_for_byte():
    rng = random.Random(3)
    for _ in range(300):
        kind = rng.randint(0, 1)
        key = rng.randbytes(rng.randint(1, 40))
        value = rng.randbytes(rng.choice([rng.randint(0, 300), rng.randint(0, 70000)])) if kind else b""
        seq = rng.randint(1, (1 << 56) - 1)
        payload = encode_single(seq, kind, key, value)
        assert decode_record(payload) == (seq, [(kind, key, value)])
        for offset in _offsets(rng):
            log = _same_log(offset, lambda w: w.add_record(payload),
                            lambda w: w.add_single(seq, kind, key, value))
            assert list(LogReader(log))[-1] == payload


def _random_ops(rng, n, keys=None):
    ops = []
    for _ in range(n):
        kind = rng.randint(0, 1)
        key = rng.choice(keys) if keys else rng.randbytes(rng.randint(1, 40))
        ops.append((kind, key, rng.randbytes(rng.randint(0, 300)) if kind else b""))
    return ops


def test_encode_batch_is_encode_record_byte_for_byte():
    rng = random.Random(4)
    for n in list(range(0, 5)) + [rng.randint(5, 400) for _ in range(100)]:
        ops = _random_ops(rng, n)
        seq = rng.randint(1, (1 << 56) - 1)
        assert encode_batch(seq, ops) == encode_record(seq, ops)
        assert decode_record(encode_batch(seq, ops)) == (seq, ops)


def test_add_batch_matches_add_record_of_encode_record_byte_for_byte():
    rng = random.Random(6)
    for n in list(range(0, 4)) + [rng.randint(4, 300) for _ in range(60)]:
        ops = _random_ops(rng, n)
        seq = rng.randint(1, (1 << 56) - 1)
        payload = encode_record(seq, ops)
        for offset in _offsets(rng):
            log = _same_log(offset, lambda w: w.add_record(payload), lambda w: w.add_batch(seq, ops))
            assert list(LogReader(log))[-1] == payload


def test_add_entries_is_add_version_per_entry():
    import gc
    rng = random.Random(5)
    keys = [rng.randbytes(rng.randint(1, 6)) for _ in range(30)]   # repeats: version lists
    mem, one = MemTable(64), MemTable(64)
    b, pending_b = {}, []
    seq = 1
    for _ in range(50):
        ops = _random_ops(rng, rng.randint(0, 40), keys)
        charged = mem.approximate_bytes
        add_entries(mem, seq, ops)
        for i, (kind, key, value) in enumerate(ops):
            one.add(seq + i, kind, key, value)
            if add_version(b, key, seq + i, kind, value):
                pending_b.append(key)
        assert mem.approximate_bytes - charged == sum(len(k) + len(v) + 64 for _, k, v in ops)
        seq += len(ops)
    assert mem.versions == b == one.versions and mem._pending == pending_b == one._pending
    assert mem.entries == one.entries == seq - 1
    assert mem.approximate_bytes == one.approximate_bytes
    # a key's versions are a chain of Versions, newest first, none a GC
    # object: the dict holding them stays untracked
    assert any(v.prev is not None for v in b.values())
    assert all([x.seq for x in v.chain()] == sorted(x.seq for x in v.chain()) for v in b.values())
    assert not any(gc.is_tracked(x) for v in b.values() for x in v.chain())
    assert not gc.is_tracked(b) and not gc.is_tracked(mem.versions)


def test_a_write_of_a_new_key_allocates_nothing_the_cyclic_gc_counts():
    """A memtable version is not a GC object (``_memtable.Version``): writing
    new keys leaves the GC's young-generation count where it was, so a load
    brings on no collection by itself (as tuples, each write counted)."""
    import gc
    from lsm._memtable import Version
    mem = MemTable(64)
    keys = [b"k%06d" % i for i in range(5000)]
    ops = [(1, k, b"v") for k in keys]
    was = gc.isenabled()
    gc.disable()
    try:
        before = gc.get_count()[0]
        add_entries(mem, 1, ops)
        for i, k in enumerate(keys[:1000]):
            mem.add(10_000 + i, 1, k + b"+", b"v")
        assert gc.get_count()[0] - before <= 2
    finally:
        if was:
            gc.enable()
    v = mem.versions[keys[0]]
    assert type(v) is Version and (v.seq, v.kind, v.value) == (1, 1, b"v")
    assert not gc.is_tracked(v)


def test_a_key_written_a_million_times_is_freed_and_compared_without_recursion():
    """A key's versions are a chain (each links the one before it): freeing
    it, or comparing two, walks it instead of recursing, which would
    overflow the C stack (run in a child process, so that a crash is a
    failure here, not the end of the test run)."""
    import subprocess
    import sys
    code = (
        "from lsm.memtable import MemTable\n"
        "from lsm._memtable import get_version\n"
        "a, b = MemTable(), MemTable()\n"
        "for i in range(1_000_000):\n"
        "    a.add(i + 1, 1, b'hot', b'v')\n"
        "    b.add(i + 1, 1, b'hot', b'v')\n"
        "assert a.versions == b.versions\n"
        "b.add(2_000_000, 1, b'hot', b'w')\n"
        "assert a.versions != b.versions\n"
        "held = get_version(a.versions, b'hot', 500_000)\n"
        "del a, b\n"
        "assert held.seq == 500_000 and len(held.chain()) == 500_000\n"
        "del held\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])


# -- the CRC (ext/lsm/crc32_fold.h) -------------------------------------------
def _xpow_mod_p(e):
    """x^e mod P (zlib's polynomial, normal form), by long division."""
    p, a = 0x104C11DB7, 1 << e
    while a.bit_length() > 32:
        a ^= p << (a.bit_length() - 33)
    return a


def test_the_crc_folds_with_constants_that_are_powers_of_x_mod_p():
    from lsm._crc32 import FOLD_CONSTANTS
    reflected = [int(format(_xpow_mod_p(e), "032b")[::-1], 2) << 1 for e in (544, 480, 160, 96)]
    assert list(FOLD_CONSTANTS) == reflected


def test_the_crc_is_zlibs_on_every_length_offset_and_start_value():
    """Folded (forced from 64 bytes), by zlib, and as chosen by length: the
    same value as zlib.crc32, for every length up to 300 at three
    alignments, random long buffers, and memoryviews."""
    import zlib
    from lsm._crc32 import _crc32_with, crc32
    rnd = random.Random(11)
    lengths = list(range(301)) + [rnd.randrange(300, 70000) for _ in range(40)] + [1 << 20]
    for n in lengths:
        for off in (0, 1, 13):
            data = memoryview(rnd.randbytes(n + off))[off:]
            start = rnd.getrandbits(32)
            want = zlib.crc32(data, start)
            assert _crc32_with(data, start, 1) == want, (n, off)
            assert _crc32_with(data, start, 0) == want, (n, off)
            assert crc32(data, start) == want == crc32(bytes(data), start), (n, off)
    assert crc32(b"") == 0 and crc32(b"abc") == zlib.crc32(b"abc")
    # Continuing a CRC across pieces, as the log writer does.
    data = rnd.randbytes(5000)
    assert crc32(data[1234:], crc32(data[:1234])) == zlib.crc32(data)
