"""``DB.write_pairs``: a write of ``(key, value)`` pairs (value None: a delete),
how the region server hands lsm its writes with no WriteBatch and no record
kinds.  The pairs are one atomic write, one WAL record: the record a
WriteBatch of the same puts and deletes makes, byte for byte."""
import random

import pytest

import lsm
from lsm.batch import decode_record, encode_record
from lsm.dbformat import KIND_DELETE, KIND_VALUE
from lsm._write_batch import encode_batch


def _triples(pairs):
    return [(KIND_DELETE, k, b"") if v is None else (KIND_VALUE, k, v) for k, v in pairs]


def test_the_record_of_pairs_is_the_record_of_their_batch():
    rng = random.Random(7)
    for _ in range(300):
        pairs = [(rng.randbytes(rng.randrange(1, 20)),
                  None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 50)))
                 for _ in range(rng.randrange(0, 12))]
        seq = rng.randrange(1 << 56)
        assert encode_batch(seq, pairs) == encode_record(seq, _triples(pairs))
        assert decode_record(encode_batch(seq, pairs)) == (seq, _triples(pairs))


def test_pairs_are_applied_in_order_atomically_and_survive_a_reopen(tmp_path):
    path = str(tmp_path / "db")
    with lsm.DB.open(path) as db:
        db.put(b"b", b"old")
        db.write_pairs([(b"a", b"1"), (b"b", None), (b"c", b""), (b"a", b"2"), (b"d", b"x")])
        db.write_pairs([(b"d", None)], sync=True)
        db.write_pairs([])                        # empty: nothing
        want = [(b"a", b"2"), (b"c", b"")]
        assert list(db.scan()) == want
        stats = db.stats()
        # one sequence number a pair, one WAL record a write
        assert (stats["last_sequence"], stats["wal_appends"]) == (7, 3)
    with lsm.DB.open(path) as db:                 # replayed from the WAL
        assert list(db.scan()) == want
        assert db.stats()["last_sequence"] == 7


def test_a_bad_pair_refuses_the_whole_write(tmp_path):
    with lsm.DB.open(str(tmp_path / "db"), lsm.Options(max_key_bytes=8,
                                                       max_value_bytes=16)) as db:
        db.put(b"k", b"v")
        for bad, exc, words in [
                ((b"a", b"1"), TypeError, "pairs must be a list"),
                ([(b"a", b"1"), ("b", b"2")], TypeError, "key must be bytes"),
                ([(b"a", b"1"), (b"", b"2")], ValueError, "key must not be empty"),
                ([(b"a", b"1"), (b"b", 2)], TypeError, "value must be bytes"),
                ([(b"a", b"1"), (b"b", b"2", b"3")], TypeError, "operation 1 must be a"),
                ([[b"a", b"1"]], TypeError, "operation 0 must be a"),
                ([(b"a", b"1"), (b"123456789", None)], ValueError, "key is 9 bytes"),
                ([(b"a", b"1"), (b"b", b"x" * 17)], ValueError, "value is 17 bytes")]:
            with pytest.raises(exc, match=words):
                db.write_pairs(bad)
            assert list(db.scan()) == [(b"k", b"v")]
        db.write_pairs([(b"12345678", b"x" * 16), (b"k", None)])    # at the limits: fine
        assert list(db.scan()) == [(b"12345678", b"x" * 16)]
