"""The C owners of byte layouts (_keys.pxd, _coding.pxd, through lsm._twins)
agree with their Python owners (lsm/dbformat.py, lsm/crc.py, struct, varints)."""
import random
import struct
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from lsm import _twins as c
from lsm import dbformat as py
from lsm.block import decode_varint, encode_varint
from lsm.crc import MASK_DELTA, mask_crc
from lsm.sstable import decode_handle, encode_handle

seqs = st.integers(min_value=0, max_value=py.MAX_SEQ)
kinds = st.sampled_from([py.KIND_DELETE, py.KIND_VALUE])
users = st.binary(max_size=12)


def test_constants_agree():
    assert (c.KIND_DELETE, c.KIND_VALUE, c.TAG_SIZE, c.MAX_SEQ) == \
        (py.KIND_DELETE, py.KIND_VALUE, py.TAG_SIZE, py.MAX_SEQ)
    assert c.MASK_DELTA == MASK_DELTA


@settings(max_examples=300)
@given(users, seqs, kinds)
def test_internal_keys_pack_and_parse_alike(user, seq, kind):
    ikey = py.make_internal_key(user, seq, kind)
    assert c.make_internal_key(user, seq, kind) == ikey
    assert c.parse_internal_key(ikey) == py.parse_internal_key(ikey) == (user, seq, kind)
    assert c.lookup_key(user, seq) == py.lookup_key(user, seq)


@settings(max_examples=300)
@given(users, seqs, kinds, users, seqs, kinds)
def test_internal_key_order_agrees(u1, s1, k1, u2, s2, k2):
    a, b = py.make_internal_key(u1, s1, k1), py.make_internal_key(u2, s2, k2)
    ka, kb = py.internal_sort_key(a), py.internal_sort_key(b)
    assert c.compare(a, b) == (ka > kb) - (ka < kb)


def test_fixed_ints_varints_handles_and_the_crc_mask_agree():
    rng = random.Random(5)
    for _ in range(2000):
        v32, v64 = rng.getrandbits(32), rng.getrandbits(rng.choice([7, 14, 35, 64]))
        assert c.fixed32(v32) == (struct.pack("<I", v32), v32)
        assert c.fixed64(v64) == (struct.pack("<Q", v64), v64)
        assert c.varint(v64) == encode_varint(v64) and decode_varint(c.varint(v64)) == (v64, len(c.varint(v64)))
        h = encode_handle(v32, v64)
        assert decode_handle(h + b"tail", "t") == (v32, v64, len(h))
        crc = zlib.crc32(v64.to_bytes(8, "little"))
        assert c.mask_crc(crc) == mask_crc(crc)
