"""The C fast path of a single put/delete WAL record equals the Python path."""
import random

from lsm._record import frame_single
from lsm.batch import decode_record, encode_single
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
