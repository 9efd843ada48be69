"""Blocks: round trips against a sorted model, golden bytes, corruption."""
import random
import struct

import pytest

from lsm import _block
from lsm.block import (Block, BlockBuilder, TYPE_RAW, TYPE_ZSTD, decode_stored_block,
                       decode_varint, encode_stored_block, encode_varint, mask_crc, unmask_crc)
from lsm.dbformat import KIND_DELETE, KIND_VALUE, internal_sort_key, lookup_key, make_internal_key
from lsm.errors import CorruptionError

from iterator_conformance import check_iterator


def random_model(rng, n):
    """Sorted (ikey, value) with prefix keys, several versions, empty and big values."""
    users = set()
    while len(users) < n:
        base = rng.randbytes(rng.randint(0, 6))
        users.add(base)
        if rng.random() < 0.3:
            users.add(base + rng.randbytes(rng.randint(1, 3)))   # base is a prefix of it
    items = {}
    seq = 1
    for uk in users:
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            kind = KIND_DELETE if rng.random() < 0.2 else KIND_VALUE
            r = rng.random()
            value = b"" if kind == KIND_DELETE or r < 0.2 else (
                rng.randbytes(rng.randint(300, 3000)) if r > 0.95 else rng.randbytes(rng.randint(1, 40)))
            items[make_internal_key(uk, seq, kind)] = value
            seq += 1
    return sorted(items.items(), key=lambda kv: internal_sort_key(kv[0]))


def build_block(items, restart_interval):
    b = BlockBuilder(restart_interval)
    for k, v in items:
        b.add(k, v)
    return b.finish()


@pytest.mark.parametrize("restart_interval", [1, 2, 16])
@pytest.mark.parametrize("seed", [1, 2])
def test_block_iterator_matches_sorted_model(seed, restart_interval):
    rng = random.Random(seed)
    model = random_model(rng, 60)
    block = Block(build_block(model, restart_interval))
    check_iterator(block.iterator, model, seed=seed)


def _prefixed_model(rng, shape, n=300):
    """Sorted (ikey, value) whose user keys share a long prefix (row keys of
    one table), and for "runs" share 8 more bytes in long runs too."""
    prefix = b"tbl:0017/row:"
    users = set()
    while len(users) < n:
        if shape == "runs":
            users.add(prefix + rng.choice((b"aaaaaaaa", b"aaaaaaab", b"zzzzzzzz"))
                      + rng.randbytes(rng.randint(0, 3)))
        else:
            users.add(prefix + rng.randbytes(rng.randint(0, 10)))
    items = {}
    for seq, uk in enumerate(sorted(users), 1):
        items[make_internal_key(uk, seq, KIND_VALUE)] = b"v%d" % seq
        if rng.random() < 0.3:
            items[make_internal_key(uk, seq + 10_000, KIND_DELETE)] = b""
    return sorted(items.items(), key=lambda kv: internal_sort_key(kv[0]))


@pytest.mark.parametrize("shape", ["prefixed", "runs"])
def test_seeks_in_blocks_of_many_restarts_match_the_model(shape):
    """Blocks of 64 restarts or more (index blocks) search a prefix array
    of the bytes after the keys' common prefix first: seeks to every key,
    to its neighbours and to keys outside the common prefix must land where
    the plain binary search does."""
    rng = random.Random(shape)
    model = _prefixed_model(rng, shape)
    for interval in (1, 3):
        block = Block(build_block(model, interval))
        check_iterator(block.iterator, model, seed=interval, max_probes=10 ** 6)
        it = block.iterator()
        for uk in (b"", b"tbl:0017", b"tbl:0017/row:", b"tbl:0017/row;", b"\xff" * 20):
            target = make_internal_key(uk, 5, KIND_VALUE)
            it.seek(target)
            after = [k for k, _ in model if internal_sort_key(k) >= internal_sort_key(target)]
            assert (it.key() if it.valid() else None) == (after[0] if after else None), uk


def test_empty_block_iterates_nothing():
    data = BlockBuilder(16).finish()
    assert data == struct.pack("<II", 0, 1)
    check_iterator(Block(data).iterator, [])


def test_block_get_finds_newest_visible_version():
    items = [(make_internal_key(b"k", 9, KIND_VALUE), b"v9"),
             (make_internal_key(b"k", 5, KIND_DELETE), b""),
             (make_internal_key(b"k", 2, KIND_VALUE), b"v2"),
             (make_internal_key(b"l", 1, KIND_VALUE), b"l1")]
    blk = Block(build_block(items, 2))
    assert blk.get(lookup_key(b"k", 100)) == (KIND_VALUE, b"v9")
    assert blk.get(lookup_key(b"k", 9)) == (KIND_VALUE, b"v9")
    assert blk.get(lookup_key(b"k", 8)) == (KIND_DELETE, b"")
    assert blk.get(lookup_key(b"k", 4)) == (KIND_VALUE, b"v2")
    assert blk.get(lookup_key(b"k", 1)) is None          # next entry is user key l
    assert blk.get(lookup_key(b"j", 100)) is None
    assert blk.get(lookup_key(b"m", 100)) is None
    assert blk.get(lookup_key(b"l", 1)) == (KIND_VALUE, b"l1")


def test_golden_bytes_of_a_three_entry_block():
    # Derived by hand from the grammar in ext/lsm/_block.pyx, restart interval 2.
    k1 = b"apple" + bytes.fromhex("0101000000000000")   # seq 1, value
    k2 = b"apply" + bytes.fromhex("0102000000000000")   # seq 2, value
    k3 = b"b" + bytes.fromhex("0003000000000000")       # seq 3, deletion
    assert k1 == make_internal_key(b"apple", 1, KIND_VALUE)
    assert k3 == make_internal_key(b"b", 3, KIND_DELETE)
    golden = bytes.fromhex(
        "00" "0d" "01" + b"apple".hex() + "0101000000000000" + b"x".hex() +   # offset 0, restart
        "04" "09" "00" + b"y".hex() + "0102000000000000" +                     # offset 17, shares "appl"
        "00" "09" "02" + b"b".hex() + "0003000000000000" + b"yz".hex() +       # offset 29, restart
        "00000000" "1d000000" "02000000")                                     # restarts [0, 29], 2
    data = build_block([(k1, b"x"), (k2, b""), (k3, b"yz")], 2)
    assert data == golden
    assert len(golden) == 55
    assert Block(golden).entries() == [(k1, b"x"), (k2, b""), (k3, b"yz")]


def exercise(block_bytes):
    """Every operation on a possibly corrupt block: results or CorruptionError."""
    blk = Block(block_bytes)
    it = blk.iterator()
    it.seek_to_first()
    while it.valid():
        it.key(), it.value()
        it.next()
    it.seek_to_last()
    while it.valid():
        it.prev()
    for uk in (b"", b"apple", b"b", b"zz"):
        it.seek(lookup_key(uk))
        it.seek_for_prev(lookup_key(uk))
        blk.get(lookup_key(uk))


def tiny_block():
    return build_block([(make_internal_key(b"apple", 1, 1), b"x"),
                        (make_internal_key(b"apply", 2, 1), b""),
                        (make_internal_key(b"b", 3, 0), b"yz")], 2)


def test_corrupt_restart_array_raises_corruption_not_a_crash():
    good = tiny_block()
    n = len(good)
    for count in (0, 3, 14, 1000, 0xFFFFFFFF):
        with pytest.raises(CorruptionError):
            Block(good[:-4] + struct.pack("<I", count))
    for r1 in (0, 30, 40, 43, 44, 1000):   # second restart: out of order, mid-entry, past the end
        bad = good[:n - 8] + struct.pack("<II", r1, 2)
        try:
            exercise(bad)
        except CorruptionError:
            pass
    with pytest.raises(CorruptionError):
        Block(good[:n - 12] + struct.pack("<III", 5, 29, 2))   # first restart must be 0
    with pytest.raises(CorruptionError):
        Block(b"\x01\x00")


def test_every_truncation_and_byte_flip_of_a_block_is_caught_or_harmless():
    good = tiny_block()
    raised = 0
    for i in range(len(good)):
        for bad in (good[:i], good[:i] + bytes([good[i] ^ 0xFF]) + good[i + 1:]):
            try:
                exercise(bad)
            except CorruptionError:
                raised += 1
    assert raised > len(good)   # most damage is detected structurally (the CRC catches the rest)


def test_builder_rejects_bad_arguments():
    with pytest.raises(ValueError):
        BlockBuilder(0)
    b = BlockBuilder(4)
    with pytest.raises(TypeError):
        b.add("text", b"v")
    with pytest.raises(TypeError):
        b.add(b"k" * 8, None)
    assert b.num_entries == 0


def test_iterator_rejects_short_seek_keys():
    it = Block(tiny_block()).iterator()
    with pytest.raises(ValueError):
        it.seek(b"short")
    with pytest.raises(ValueError):
        it.key()


def test_varints_round_trip_and_reject_truncation():
    for v in (0, 1, 127, 128, 300, 2 ** 32 - 1, 2 ** 63, 2 ** 64 - 1):
        enc = encode_varint(v)
        assert decode_varint(enc) == (v, len(enc))
        if len(enc) > 1:
            with pytest.raises(CorruptionError):
                decode_varint(enc[:-1])
    assert encode_varint(300) == b"\xac\x02"


def test_stored_block_trailer_and_compression():
    assert unmask_crc(mask_crc(0x12345678)) == 0x12345678
    assert mask_crc(0) == 0xA282EAD8
    contents = b"abc" * 500
    z = encode_stored_block(contents, compress=True)
    assert z[-5] == TYPE_ZSTD and len(z) < len(contents)
    assert decode_stored_block(z, True, "t") == contents
    r = encode_stored_block(contents, compress=False)
    assert r[-5] == TYPE_RAW and r[:-5] == contents
    rnd = random.Random(0).randbytes(1000)          # incompressible: stored raw
    assert encode_stored_block(rnd, compress=True)[-5] == TYPE_RAW
    for stored in (z, r):
        for i in range(0, len(stored), 7):
            bad = stored[:i] + bytes([stored[i] ^ 1]) + stored[i + 1:]
            with pytest.raises(CorruptionError, match="t:"):
                decode_stored_block(bad, True, "t")


def test_compiled_modules_are_in_use():
    assert _block.__file__.endswith(".so")


# -- bloom filter (ext/lsm/_bloom.pyx) ----------------------------------------

def test_bloom_hash_is_mmh3_x64_128():
    import mmh3
    from lsm.bloom import key_digest
    rng = random.Random(0)
    for n in range(0, 50):
        for _ in range(5):
            k = rng.randbytes(n)
            assert key_digest(k) == mmh3.mmh3_x64_128_digest(k, 0)
            h1, h2 = mmh3.hash64(k, 0, True, False)
            assert key_digest(k) == struct.pack("<qq", h1, h2)


def test_bloom_filter_bytes_follow_the_grammar():
    import mmh3
    from lsm.bloom import build_from_keys, num_probes
    assert [num_probes(b) for b in (1, 2, 10, 20, 100)] == [1, 1, 7, 14, 30]
    filt = build_from_keys([b"a", b"bc"], 10)
    assert len(filt) == 9 and filt[-1] == 7       # m = max(8, ceil(2*10/8)) bytes, then k
    bits = bytearray(8)
    for key in (b"a", b"bc"):
        h1, h2 = struct.unpack("<QQ", mmh3.mmh3_x64_128_digest(key, 0))
        for i in range(7):
            b = ((h1 + i * h2) % 2 ** 64) % 64
            bits[b >> 3] |= 1 << (b & 7)
    assert filt == bytes(bits) + b"\x07"


def test_bloom_has_no_false_negatives_and_few_false_positives():
    from lsm.bloom import build_from_keys, may_contain
    keys = [b"user%06d" % i for i in range(5000)]
    filt = build_from_keys(keys, 10)
    assert all(may_contain(filt, k) for k in keys)
    fp = sum(may_contain(filt, b"other%06d" % i) for i in range(5000))
    assert fp < 5000 * 0.03
    assert may_contain(b"", b"x") and may_contain(b"\x00" * 8 + b"\x63", b"x")   # unknown: maybe
