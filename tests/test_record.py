"""The C fast paths of WAL records (a single put/delete framed, a batch's
payload) and of the memtable's batch insert equal the Python paths."""
import random

from lsm._memtable import add_entries, add_version
from lsm.memtable import MemTable
from lsm._record import encode_batch, frame_batch, frame_single
from lsm.batch import decode_record, encode_record, encode_single
from lsm.memfs import MemoryAppendFile
from lsm.wal import BLOCK_SIZE, HEADER_SIZE, LogReader, LogWriter


def test_frame_single_matches_add_record_of_encode_single_byte_for_byte():
    rng = random.Random(3)
    for _ in range(300):
        kind = rng.randint(0, 1)
        key = rng.randbytes(rng.randint(1, 40))
        value = rng.randbytes(rng.randint(0, 300)) if kind else b""
        seq = rng.randint(1, (1 << 56) - 1)
        a, b = MemoryAppendFile(), MemoryAppendFile()
        LogWriter(a).add_record(encode_single(seq, kind, key, value))
        LogWriter(b).append_framed(frame_single(seq, kind, key, value, BLOCK_SIZE))
        assert a.getvalue() == b.getvalue()
        assert list(LogReader(b.getvalue())) == [encode_single(seq, kind, key, value)]
        assert decode_record(encode_single(seq, kind, key, value)) == (seq, [(kind, key, value)])


def test_frame_single_declines_records_that_do_not_fit_the_block():
    rec_len = HEADER_SIZE + 8 + 4 + 1 + 4 + 3 + 4 + 10
    assert frame_single(1, 1, b"key", b"0123456789", rec_len) is not None
    assert frame_single(1, 1, b"key", b"0123456789", rec_len - 1) is None
    assert frame_single(1, 1, b"k", b"x" * 70000, BLOCK_SIZE) is None


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


def test_frame_batch_matches_add_record_of_encode_record_or_declines():
    rng = random.Random(6)
    for n in list(range(0, 4)) + [rng.randint(4, 300) for _ in range(60)]:
        ops = _random_ops(rng, n)
        seq = rng.randint(1, (1 << 56) - 1)
        payload = encode_record(seq, ops)
        left = rng.choice([BLOCK_SIZE, len(payload) + HEADER_SIZE, len(payload) + HEADER_SIZE - 1])
        rec = frame_batch(seq, ops, left)
        if len(payload) + HEADER_SIZE > left or len(payload) > 0xffff:
            assert rec is None
            continue
        a, b = MemoryAppendFile(), MemoryAppendFile()
        LogWriter(a).add_record(payload)
        LogWriter(b).append_framed(rec)
        assert a.getvalue() == b.getvalue()
        assert list(LogReader(b.getvalue())) == [payload]


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
    # versions and version lists hold no container but versions: untracked from the start
    assert any(type(v) is list for v in b.values())
    assert not any(gc.is_tracked(v) for v in b.values())
    assert not any(gc.is_tracked(x) for v in b.values() if type(v) is list for x in v)
