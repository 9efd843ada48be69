"""SSTables and bounded views against a model; golden bytes; corruption."""
import random
import struct
import zlib

import pytest

from lsm.block import mask_crc
from lsm.cache import BlockCache
from lsm.dbformat import (KIND_DELETE, KIND_VALUE, MAX_SEQ, internal_sort_key, make_internal_key,
                          parse_internal_key)
from lsm.errors import ClosedError, CorruptionError
from lsm.options import Options
from lsm.sstable import FOOTER_SIZE, TABLE_MAGIC, Table, TableBuilder
from lsm.memfs import MemoryAppendFile, MemoryReadFile
from lsm.views import TableView

from iterator_conformance import check_iterator, drain


def build(items, **opt):
    options = Options(**opt)
    f = MemoryAppendFile()
    tb = TableBuilder(f, options)
    for k, v in items:
        tb.add(k, v)
    meta = tb.finish()
    assert meta["size"] == len(f.getvalue())
    return f.getvalue(), meta, options


class CountingReadFile(MemoryReadFile):
    """A table's bytes, counting the reads that reach the file; with
    ``mapped`` False it offers no buffer, so every block read is one."""

    reads = 0

    def __init__(self, data, mapped=True):
        super().__init__(data)
        self.mapped = mapped

    def read(self, offset, n):
        self.reads += 1
        return super().read(offset, n)

    def buffer(self):
        return super().buffer() if self.mapped else None


def open_table(data, options, cache=None):
    return Table.open(MemoryReadFile(data), options, cache=cache, name="t.sst")


def make_model(rng, n_users=120):
    """Sorted entries: several versions per key, tombstones, prefix keys."""
    users = sorted({rng.randbytes(rng.randint(1, 5)) for _ in range(n_users)})
    users += [u + b"\x00" for u in users[:10]]
    items, versions, seq = [], {}, 1
    for uk in users:
        for _ in range(rng.choice((1, 1, 2, 4))):
            kind = KIND_DELETE if rng.random() < 0.2 else KIND_VALUE
            value = b"" if kind == KIND_DELETE else rng.randbytes(rng.randint(0, 60))
            items.append((make_internal_key(uk, seq, kind), value))
            versions.setdefault(uk, []).append((seq, kind, value))
            seq += rng.randint(1, 3)
    items.sort(key=lambda kv: internal_sort_key(kv[0]))
    return items, versions


def model_get(versions, uk, seq):
    best = None
    for s, kind, value in versions.get(uk, ()):
        if s <= seq and (best is None or s > best[0]):
            best = (s, kind, value)
    return None if best is None else (best[1], best[2])


@pytest.mark.parametrize("compression", [False, True])
def test_table_round_trip_matches_model(compression):
    rng = random.Random(7)
    items, versions = make_model(rng)
    data, meta, options = build(items, compression=compression, block_size=256, restart_interval=4)
    assert meta["num_entries"] == len(items)
    assert meta["smallest"] == items[0][0] and meta["largest"] == items[-1][0]
    for cache in (None, BlockCache(1 << 20)):
        t = open_table(data, options, cache)
        assert (t.num_entries, t.smallest, t.largest, t.file_size) == \
            (len(items), items[0][0], items[-1][0], len(data))
        check_iterator(t.iterator, items)
        t.verify()
        t.close()


def test_compression_shrinks_compressible_tables():
    items = [(make_internal_key(b"k%06d" % i, i + 1, KIND_VALUE), b"v" * 100) for i in range(500)]
    raw, _, _ = build(items, compression=False)
    small, _, options = build(items, compression=True)
    assert len(small) < len(raw) // 3
    check_iterator(open_table(small, options).iterator, items)


def test_get_sees_newest_version_at_or_below_the_snapshot():
    rng = random.Random(3)
    items, versions = make_model(rng)
    data, _, options = build(items, block_size=128)
    t = open_table(data, options, BlockCache(1 << 20))
    max_seq = max(parse_internal_key(k)[1] for k, _ in items)
    for uk in list(versions)[:80]:
        seqs = {0, 1, max_seq, MAX_SEQ} | {s for s, _, _ in versions[uk]} | \
            {s - 1 for s, _, _ in versions[uk]}
        for s in seqs:
            assert t.get(uk, s) == model_get(versions, uk, s), (uk, s)
    for uk in (b"", b"\xff" * 9, b"\x00"):
        assert t.get(uk, MAX_SEQ) == model_get(versions, uk, MAX_SEQ)


def test_tombstone_is_returned_as_kind_zero():
    items = [(make_internal_key(b"k", 5, KIND_DELETE), b""), (make_internal_key(b"k", 3, KIND_VALUE), b"old")]
    data, _, options = build(items)
    t = open_table(data, options)
    assert t.get(b"k", 10) == (KIND_DELETE, b"")
    assert t.get(b"k", 4) == (KIND_VALUE, b"old")
    assert t.get(b"k", 2) is None


def test_bloom_spares_block_reads_for_missing_keys():
    items = [(make_internal_key(b"key%06d" % i, i + 1, KIND_VALUE), b"v") for i in range(2000)]
    for bits, max_reads in ((10, 60), (0, None)):
        data, _, options = build(items, bloom_bits_per_key=bits)
        f = CountingReadFile(data, mapped=False)
        t = Table.open(f, options, name="b")
        f.reads = 0
        for i in range(2000):       # missing keys inside the table's key range
            assert t.get(b"key%06dx" % i, MAX_SEQ) is None
        if max_reads is None:
            assert f.reads == 1999          # no filter: every probe in range reads a block
        else:
            assert f.reads <= max_reads     # ~1% false positives expected
        for i in range(0, 2000, 97):        # no false negatives
            assert t.get(b"key%06d" % i, MAX_SEQ) == (KIND_VALUE, b"v")


def test_golden_bytes_of_a_tiny_uncompressed_table():
    # Derived by hand from the grammar at the top of lsm/sstable.py.
    ka = b"a" + bytes.fromhex("0101000000000000")      # seq 1, value
    kb = b"b" + bytes.fromhex("0002000000000000")      # seq 2, deletion

    def stored(contents):       # payload, type 0, masked crc32 over payload + type
        return contents + b"\x00" + struct.pack("<I", mask_crc(zlib.crc32(contents + b"\x00")))

    def block(entries):         # restart interval 1 or one restart: shared = 0 everywhere
        body, restarts = b"", []
        for k, v in entries:
            restarts.append(len(body))
            body += bytes([0, len(k), len(v)]) + k + v
        return body + b"".join(struct.pack("<I", r) for r in restarts) + struct.pack("<I", len(restarts))

    data_block = bytes.fromhex("000901") + ka + b"1" + bytes.fromhex("000900") + kb + \
        bytes.fromhex("00000000" "01000000")
    assert len(data_block) == 33                       # stored at 0, 38 bytes with trailer
    props = block([(b"data.bytes", b"\x26"), (b"format.version", b"\x01"), (b"largest", kb),
                   (b"num.data.blocks", b"\x01"), (b"num.entries", b"\x02"),
                   (b"raw.key.bytes", b"\x12"), (b"raw.value.bytes", b"\x01"), (b"smallest", ka)])
    assert len(props) == 177                           # stored at 38 .. 220
    metaindex = block([(b"properties", b"\x26\xb1\x01")])      # handle (38, 177)
    assert len(metaindex) == 24                        # stored at 220 .. 249
    index = block([(kb, b"\x00\x21")])                 # handle (0, 33)
    assert len(index) == 22                            # stored at 249 .. 276
    handles = bytes.fromhex("dc01" "18" "f901" "16").ljust(40, b"\x00")   # (220, 24) (249, 22)
    head = handles + b"\x01\x00\x00\x00"
    footer = head + struct.pack("<I", mask_crc(zlib.crc32(head))) + bytes.fromhex("e273c4b0571d6e9a")
    golden = stored(data_block) + stored(props) + stored(metaindex) + stored(index) + footer
    assert len(golden) == 332 and len(footer) == FOOTER_SIZE
    assert struct.unpack("<Q", golden[-8:])[0] == TABLE_MAGIC

    data, meta, options = build([(ka, b"1"), (kb, b"")], compression=False, bloom_bits_per_key=0)
    assert data == golden
    t = open_table(golden, options)
    assert (t.num_entries, t.smallest, t.largest) == (2, ka, kb)
    assert t.get(b"a", 5) == (KIND_VALUE, b"1") and t.get(b"b", 5) == (KIND_DELETE, b"")


def small_table():
    rng = random.Random(11)
    items = [(make_internal_key(b"k%03d" % i, i + 1, KIND_VALUE if i % 5 else KIND_DELETE),
              b"" if i % 5 == 0 else rng.randbytes(rng.randint(1, 20))) for i in range(40)]
    data, _, options = build(items, block_size=128, compression=True, restart_interval=3)
    return items, data, options


def test_a_flipped_bit_anywhere_is_corruption_never_a_wrong_value():
    items, data, options = small_table()
    truth = {parse_internal_key(k)[0]: (parse_internal_key(k)[2], v) for k, v in items}
    data_size = open_table(data, options).data_size
    for off in range(len(data)):
        bad = bytearray(data)
        bad[off] ^= 1 << (off % 8)
        try:
            t = open_table(bytes(bad), options, BlockCache(1 << 20))
        except CorruptionError:
            assert off >= data_size, f"a flip at {off} in the data region failed open"
            continue
        for uk, expected in truth.items():
            try:
                assert t.get(uk, MAX_SEQ) == expected, f"wrong value after a flip at {off}"
            except CorruptionError:
                pass
        with pytest.raises(CorruptionError):
            it = t.iterator()
            it.seek_to_first()
            while it.valid():
                it.next()
            if off >= data_size:     # the flip was in metadata that open() trusted
                t.verify()
        with pytest.raises(CorruptionError, match="t.sst"):
            t.verify()


def test_truncated_or_foreign_files_are_corruption_naming_the_file():
    _, data, options = small_table()
    for bad in (b"", data[:FOOTER_SIZE - 1], data[:-1], b"\x00" * 100, data[:-8] + b"\x00" * 8):
        with pytest.raises(CorruptionError, match="t.sst"):
            open_table(bad, options)


def test_builder_rejects_misordered_and_bad_entries_and_changes_nothing():
    tb = TableBuilder(MemoryAppendFile(), Options())
    k1, k2 = make_internal_key(b"b", 5, KIND_VALUE), make_internal_key(b"b", 4, KIND_VALUE)
    tb.add(k1, b"x")
    for bad in (k1, make_internal_key(b"b", 6, KIND_VALUE), make_internal_key(b"a", 1, 1), b"short"):
        with pytest.raises(ValueError):
            tb.add(bad, b"v")
    with pytest.raises(TypeError):
        tb.add("b", b"v")
    with pytest.raises(TypeError):
        tb.add(k2, None)
    assert tb.num_entries == 1
    tb.add(k2, b"y")
    meta = tb.finish()
    assert (meta["num_entries"], meta["smallest"], meta["largest"]) == (2, k1, k2)
    with pytest.raises(ValueError):
        tb.add(make_internal_key(b"c", 1, 1), b"")


def test_size_estimate_tracks_the_output():
    f = MemoryAppendFile()
    tb = TableBuilder(f, Options(compression=False, block_size=1024))
    last = 0
    for i in range(1000):
        tb.add(make_internal_key(b"k%05d" % i, i + 1, 1), b"v" * 50)
        est = tb.size_estimate()
        assert est >= last and est >= f.size
        last = est
    # The file lags by the blocks gathered for one append (WRITE_BUFFER)
    # and the block being built, never more.
    assert 0 <= tb.size_estimate() - f.size <= TableBuilder.WRITE_BUFFER + 1100
    size = tb.finish()["size"]
    assert size >= last and size == f.size


def test_the_builder_appends_blocks_write_buffer_bytes_at_a_time():
    f = MemoryAppendFile()
    appends = []
    real_append = f.append
    f.append = lambda data: (appends.append(len(data)), real_append(data))
    tb = TableBuilder(f, Options(compression=False, block_size=1024))
    for i in range(20000):
        tb.add(make_internal_key(b"k%06d" % i, i + 1, 1), b"v" * 50)
    tb.finish()
    assert len(appends) >= 3 and sum(appends) == f.size
    assert all(n >= TableBuilder.WRITE_BUFFER for n in appends[:-1])


def test_empty_table_opens_and_iterates_nothing():
    data, meta, options = build([])
    assert meta["num_entries"] == 0 and meta["smallest"] is None
    t = open_table(data, options)
    assert t.num_entries == 0 and t.smallest is None and t.largest is None
    check_iterator(t.iterator, [])
    assert t.get(b"a", MAX_SEQ) is None
    assert t.block_boundaries() == []
    t.verify()


def test_block_boundaries_and_approximate_offset():
    items = [(make_internal_key(b"k%05d" % i, i + 1, 1), b"v" * 40) for i in range(600)]
    data, _, options = build(items, block_size=512, compression=False)
    t = open_table(data, options)
    bounds = t.block_boundaries()
    assert len(bounds) == t.num_data_blocks > 10
    assert bounds[-1][1] == t.data_size
    keys = [b for b, _ in bounds]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert all(a < b for (_, a), (_, b) in zip(bounds, bounds[1:]))
    # Every boundary key is the last user key of its block: the next key is in a later block.
    offsets = [t.approximate_offset(b"k%05d" % i) for i in range(600)]
    assert offsets == sorted(offsets) and offsets[0] == 0
    for (k, end), (k2, _) in zip(bounds, bounds[1:]):
        assert t.approximate_offset(k) < end <= t.approximate_offset(k + b"\x00")
    assert t.approximate_offset(b"zzz") == t.data_size
    probes = sorted(random.Random(1).randbytes(random.Random(2).randint(0, 7)) for _ in range(200))
    offs = [t.approximate_offset(p) for p in probes]
    assert offs == sorted(offs)


# -- bounded views -----------------------------------------------------------

def view_model(items, lo, hi):
    return [(k, v) for k, v in items
            if (lo is None or k[:-8] >= lo) and (hi is None or k[:-8] < hi)]


def test_view_iterators_get_and_seeks_stay_in_range():
    rng = random.Random(5)
    items, versions = make_model(rng, 80)
    data, _, options = build(items, block_size=200)
    t = open_table(data, options, BlockCache(1 << 20))
    users = sorted(versions)
    bounds = [None, b"", users[0], users[len(users) // 3], users[len(users) // 2] + b"\x00",
              users[-1], b"\xff\xff"]
    for lo in bounds:
        for hi in bounds:
            v = TableView(t, lo, hi)
            model = view_model(items, lo, hi) if not (lo is not None and hi is not None and lo >= hi) else []
            check_iterator(v.iterator, model, max_probes=120)
            assert v.smallest == (model[0][0] if model else None)
            assert v.largest == (model[-1][0] if model else None)
            for uk in users[::7] + [lo or b"", hi or b""]:
                inside = (lo is None or uk >= lo) and (hi is None or uk < hi)
                assert v.get(uk, MAX_SEQ) == (model_get(versions, uk, MAX_SEQ) if inside else None)


def test_empty_views():
    items, _, = make_model(random.Random(9), 30)
    data, _, options = build(items)
    t = open_table(data, options)
    users = sorted({k[:-8] for k, _ in items})
    gap_lo = users[3] + b"\x00\x00"          # between two user keys: no key inside
    for lo, hi in ((b"m", b"m"), (b"z", b"a"), (gap_lo, gap_lo + b"\x00")):
        v = TableView(t, lo, hi)
        check_iterator(v.iterator, view_model(items, lo, hi) if lo < hi else [])
        assert v.smallest is None and v.largest is None
        assert v.get(users[3], MAX_SEQ) is None


def test_view_of_a_view_is_the_intersection():
    items, _ = make_model(random.Random(4), 60)
    data, _, options = build(items, block_size=256)
    t = open_table(data, options)
    users = sorted({k[:-8] for k, _ in items})
    a, b, c, d = users[5], users[20], users[30], users[45]
    outer = TableView(t, a, d)
    for lo, hi, want in ((b, c, (b, c)), (None, c, (a, c)), (b, None, (b, d)), (None, None, (a, d))):
        v = TableView(outer, lo, hi)
        assert (v.lo, v.hi) == want and v.table is t
        check_iterator(v.iterator, view_model(items, *want), max_probes=100)


def test_view_sizes_offsets_and_boundaries_are_clamped():
    items = [(make_internal_key(b"k%05d" % i, i + 1, 1), b"v" * 40) for i in range(600)]
    data, _, options = build(items, block_size=512, compression=False)
    t = open_table(data, options)
    v = TableView(t, b"k00100", b"k00300")
    assert 0 < v.file_size < t.data_size
    assert abs(v.num_entries - 200) < 30
    offs = [v.approximate_offset(b"k%05d" % i) for i in range(0, 600, 5)]
    assert offs == sorted(offs) and offs[0] == 0 and offs[-1] == v.file_size
    bounds = v.block_boundaries()
    assert bounds and all(b"k00100" <= k < b"k00300" for k, _ in bounds)
    cums = [c for _, c in bounds]
    assert cums == sorted(cums) and cums[-1] <= v.file_size
    whole = TableView(t, None, None)
    assert whole.block_boundaries() == t.block_boundaries() and whole.file_size == t.data_size
    empty = TableView(t, b"k2", b"k1")
    assert empty.file_size == 0 and empty.block_boundaries() == [] and empty.num_entries == 0


def test_view_rejects_bad_bounds():
    data, _, options = build([(make_internal_key(b"a", 1, 1), b"")])
    t = open_table(data, options)
    with pytest.raises(TypeError):
        TableView(t, "a", None)
    with pytest.raises(TypeError):
        TableView(t, None, 5)


def test_close_drops_cached_blocks_and_closes_the_file():
    items = [(make_internal_key(b"k%04d" % i, i + 1, 1), b"v" * 30) for i in range(300)]
    data, _, options = build(items, block_size=256)
    cache = BlockCache(1 << 20)
    f = CountingReadFile(data)
    t = Table.open(f, options, cache=cache, name="c")
    it = t.iterator()
    it.seek_to_first()
    while it.valid():
        it.next()
    assert len(cache) == t.num_data_blocks
    reads = f.reads
    t.get(b"k0005", MAX_SEQ)
    assert f.reads == reads          # served from the cache
    TableView(t, None, None, own=False).close()
    assert not f.closed
    TableView(t, None, None, own=True).close()
    assert f.closed and len(cache) == 0
    t.close()                        # idempotent


def test_get_through_the_cache_reads_a_block_once():
    items = [(make_internal_key(b"k%04d" % i, i + 1, 1), b"v%d" % i) for i in range(50)]
    data, _, options = build(items)
    cache = BlockCache(1 << 20)
    f = CountingReadFile(data, mapped=False)
    t = Table.open(f, options, cache=cache, name="g")
    opened_reads = f.reads
    assert t.get(b"k0007", MAX_SEQ) == (KIND_VALUE, b"v7")
    assert t.get(b"k0008", MAX_SEQ) == (KIND_VALUE, b"v8")
    s = cache.stats()
    assert (s["misses"], s["hits"], f.reads - opened_reads) == (1, 1, 1)


def test_data_blocks_are_read_in_c_from_the_files_buffer():
    """A table over a buffer (memfs bytes here, a mapping on disk) reads its
    data blocks in C (PointReader.attach_source): the same answers, and no
    read through the file's ``read``; a raw block is searched in place, a
    compressed one decompressed and cached."""
    items = [(make_internal_key(b"k%04d" % i, i + 1, KIND_VALUE), b"v%d" % i + b"x" * 60)
             for i in range(400)]
    for compression in (False, True):
        data, _, options = build(items, compression=compression, block_size=512)
        f = CountingReadFile(data)
        cache = BlockCache(1 << 20)
        t = Table.open(f, options, cache=cache, name="t.sst")
        opened = f.reads
        for _ in range(2):
            for k, v in items:
                assert t.get(parse_internal_key(k)[0], MAX_SEQ) == (KIND_VALUE, v)
        assert (len(cache) > 0) == compression, compression
        if compression:
            assert cache.stats()["misses"] == len(cache)      # each block decompressed once
        cache.erase_prefix(t._owner)
        assert drain(t.iterator()) == items   # an iterator's blocks the same way
        assert f.reads == opened
        assert (cache.stats()["misses"] == 2 * len(cache) > 0) == compression
        t.close()
        assert f.buffer() is None


@pytest.mark.parametrize("compression, at", [(False, 100), (True, 20)], ids=["raw", "compressed"])
def test_a_corrupt_block_read_in_c_is_reported_as_the_file_path_reports_it(compression, at):
    """A flipped byte inside the first data block (in place for a raw block,
    the zstd frame for a compressed one), read from the buffer in C: the
    point read and the iterator raise the file path's error, on every read
    (a bad block is never taken as checked); other blocks read on."""
    items = [(make_internal_key(b"k%04d" % i, i + 1, KIND_VALUE), b"%d" % i * 20) for i in range(200)]
    data, _, options = build(items, compression=compression, block_size=512)
    bad = bytearray(data)
    bad[at] ^= 0x10
    t = Table.open(MemoryReadFile(bytes(bad)), options, cache=BlockCache(1 << 20), name="t.sst")
    for _ in range(2):
        with pytest.raises(CorruptionError, match="t.sst: block at 0: block: block checksum mismatch"):
            t.get(b"k0000", MAX_SEQ)
        with pytest.raises(CorruptionError, match="t.sst: block at 0: block: block checksum mismatch"):
            t.iterator().seek_to_first()
    assert t.get(b"k0199", MAX_SEQ) == (KIND_VALUE, b"199" * 20)


def test_closing_a_mapped_table_read_in_c_releases_the_mapping(tmp_path):
    from lsm.fs import OSFileSystem
    items = [(make_internal_key(b"k%04d" % i, i + 1, KIND_VALUE), b"v" * 50) for i in range(300)]
    data, _, options = build(items, compression=False)
    path = tmp_path / "t.sst"
    path.write_bytes(data)
    f = OSFileSystem().open_read(str(path))
    t = Table.open(f, options, cache=BlockCache(1 << 20), name=str(path))
    assert t.get(b"k0123", MAX_SEQ) == (KIND_VALUE, b"v" * 50)
    t.close()                            # the point reader lets go of the mapping first
    assert f.buffer() is None


def test_an_iterator_reads_raw_blocks_of_a_mapped_table_in_place(tmp_path):
    """Raw blocks of a mapped table are iterated where they are, uncached
    (as point reads read them); compressed ones through the cache.  A block
    read in place keeps the mapping alive: closed under an iterator, the
    table's current block still reads right, and the next one says closed."""
    from lsm.fs import OSFileSystem
    items = [(make_internal_key(b"k%04d" % i, i + 1, KIND_VALUE), b"v%d" % i + b"x" * 60)
             for i in range(400)]
    for compression in (False, True):
        data, _, options = build(items, compression=compression, block_size=512)
        path = tmp_path / ("t%d.sst" % compression)
        path.write_bytes(data)
        f = OSFileSystem().open_read(str(path))
        cache = BlockCache(1 << 20)
        t = Table.open(f, options, cache=cache, name=str(path))
        it = t.iterator()
        assert drain(it) == items
        it.seek(items[123][0])
        assert (it.key(), it.value()) == items[123]
        assert (len(cache) > 0) == compression, compression
        t.close()
        assert (it.key(), it.value()) == items[123]   # the block read before the close
        with pytest.raises(ClosedError):
            for _ in range(len(items)):
                it.next()


def test_a_mapping_still_held_is_unmapped_when_its_last_holder_lets_go(tmp_path):
    """A table closed while a search without the GIL may still read its
    mapping (lsm._mapped_blocks.MappedBlocks, kept by ``bury``): the file closes,
    and the map stays readable to its holder until it lets go."""
    from lsm.fs import OSFileSystem
    path = tmp_path / "f"
    path.write_bytes(b"abc" * 1000)
    f = OSFileSystem().open_read(str(path))
    held = memoryview(f.buffer())
    f.close()
    assert f.buffer() is None
    with pytest.raises(ClosedError):
        f.read(0, 3)
    assert held[:6] == b"abcabc"
    m = held.obj
    held.release()
    m.close()                            # nothing holds it now: it can be unmapped
    assert m.closed


def test_a_read_of_a_closed_table_says_so():
    items = [(make_internal_key(b"k%03d" % i, 1, KIND_VALUE), b"v" * 50) for i in range(100)]
    data, _, options = build(items, compression=False)
    t = open_table(data, options, BlockCache(1 << 20))
    assert t.get(b"k000", MAX_SEQ) == (KIND_VALUE, b"v" * 50)      # its block is cached
    t.close()
    with pytest.raises(ClosedError, match="t.sst: read of a closed table"):
        t.get(b"k099", MAX_SEQ)
