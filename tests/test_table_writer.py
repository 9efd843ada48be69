"""The table build core writes blocks in C (ext/lsm/_table_builder.pyx): the
tables it writes are byte for byte those of the Python block writer before
it (golden digests of tables written at ee321ab), every stored block is its
contents in the trailer's grammar (a model: zstandard, zlib's crc32, the
mask), and a flush or compaction adding to the core in C builds the tables
that adding through ``TableBuilder.add`` builds."""
import hashlib
import random
import struct
import threading
import zlib

import pytest
import zstandard

from lsm._compaction_stream import CompactionStream
from lsm._iter import ListIterator
from lsm.block import (TRAILER_SIZE, TYPE_RAW, TYPE_ZSTD, decode_stored_block, encode_stored_block, mask_crc,
                       parse_stored_block)
from lsm.builder import build_tables
from lsm.dbformat import KIND_DELETE, KIND_VALUE, make_internal_key
from lsm.fs import OSFileSystem
from lsm.memfs import MemoryAppendFile, MemoryFileSystem, MemoryReadFile
from lsm.options import Options
from lsm.sstable import FOOTER_SIZE, Table, TableBuilder, decode_handle


def entries(n, seed):
    """``n`` user keys, one to three versions each, some tombstones, values
    from empty to repetitive (compressible) to random."""
    rng = random.Random(seed)
    out, seq = [], 1
    for i in range(n):
        uk = b"user%07d" % i
        for _ in range(rng.choice((1, 1, 1, 3))):
            kind = KIND_DELETE if rng.random() < 0.1 else KIND_VALUE
            val = b"" if kind == KIND_DELETE else (rng.randbytes(rng.randint(0, 40)) * rng.randint(1, 4))
            out.append((make_internal_key(uk, 10 ** 6 - seq, kind), val))
            seq += 1
    return out


def build(items, f=None, **opt):
    f = MemoryAppendFile() if f is None else f
    tb = TableBuilder(f, Options(**opt))
    for k, v in items:
        tb.add(k, v)
    meta = tb.finish()
    return f, meta


# name: (user keys, seed, options, sha256 of the table written at ee321ab)
GOLDEN = {
    "plain": (20000, 1, dict(compression=False),
              "9e7942b0525f3fee55db4de6c95eb8e6ad3cd91b6014e314f0b95813d815e7f8"),
    "small blocks, no filter": (3000, 2, dict(compression=False, block_size=256, restart_interval=1,
                                              bloom_bits_per_key=0),
                                "1c60d4bde27ef8dcb2e78480527d471cc66ecca0061b00a6fd7e9051d99ac514"),
    "empty": (0, 5, dict(), "6b37666f05dd60e81e274eac579393ac33ced31c2ede6abd65e1725142b137a5"),
}
# Compressed tables pin zstd's output too: checked with the zstandard they were written with.
GOLDEN_ZSTD = ("0.25.0", {
    "zstd": (20000, 3, dict(compression=True),
             "ebb8adbe20a240884a25dc5c5a4242d0d025057baa9489c94b9ba8ab962a9f33"),
    "zstd, level 3, small blocks": (3000, 4, dict(compression=True, block_size=512, restart_interval=4,
                                                  compression_level=3),
                                    "150f26607619d1ef2cdede99d15c123dd97c387b378790397f05bbcfa4c20a89"),
})


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_tables_are_byte_identical_to_those_of_the_python_block_writer(name):
    n, seed, opt, digest = GOLDEN[name]
    f, _ = build(entries(n, seed), **opt)
    assert hashlib.sha256(f.getvalue()).hexdigest() == digest


@pytest.mark.skipif(zstandard.__version__ != GOLDEN_ZSTD[0], reason="another zstandard")
@pytest.mark.parametrize("name", sorted(GOLDEN_ZSTD[1]))
def test_compressed_tables_are_byte_identical_to_those_of_the_python_block_writer(name):
    n, seed, opt, digest = GOLDEN_ZSTD[1][name]
    f, _ = build(entries(n, seed), **opt)
    assert hashlib.sha256(f.getvalue()).hexdigest() == digest


def model_stored(contents, compress, level=1):
    """A stored block by lsm/block.py's grammar, written out here."""
    payload, btype = contents, 0
    if compress and contents:
        z = zstandard.ZstdCompressor(level=level, write_content_size=True).compress(contents)
        if len(z) <= len(contents) - len(contents) // 8:
            payload, btype = z, 1
    tail = bytes([btype])
    return payload + tail + struct.pack("<I", mask_crc(zlib.crc32(payload + tail)))


def test_the_trailer_values_are_the_grammars():
    assert (TYPE_RAW, TYPE_ZSTD, TRAILER_SIZE) == (0, 1, 5)


def test_encode_stored_block_is_the_model():
    rng = random.Random(3)
    samples = [b"", b"a", b"abc" * 500, rng.randbytes(1000), rng.randbytes(64) * 2,
               rng.randbytes(100) + b"\0" * 15]       # near the 1/8 rule's edge
    for contents in samples:
        for compress in (False, True):
            for level in (1, 3):
                assert encode_stored_block(contents, compress, level) == \
                    model_stored(contents, compress, level), (contents[:10], compress, level)


def stored_blocks(data):
    """``[(kind, raw stored block)]`` of a table's bytes, from its footer."""
    footer = data[-FOOTER_SIZE:]
    moff, msize, pos = decode_handle(footer, "t")
    ioff, isize, _ = decode_handle(footer[pos:], "t")

    def raw(off, size):
        return data[off:off + size + TRAILER_SIZE]

    index = parse_stored_block(raw(ioff, isize), True, "index")
    metaindex = parse_stored_block(raw(moff, msize), True, "metaindex")
    out = [("data", raw(*decode_handle(h, "t")[:2])) for _, h in index.entries()]
    out += [("meta", raw(*decode_handle(h, "t")[:2])) for _, h in metaindex.entries()]
    return out + [("meta", raw(moff, msize)), ("meta", raw(ioff, isize))]


@pytest.mark.parametrize("compression,level", [(False, 1), (True, 1), (True, 5)])
def test_every_stored_block_is_its_contents_in_the_trailers_grammar(compression, level):
    f, meta = build(entries(4000, 7), compression=compression, compression_level=level, block_size=1024)
    data = f.getvalue()
    blocks = stored_blocks(data)
    assert sum(kind == "data" for kind, _ in blocks) > 50
    for kind, raw in blocks:
        contents = decode_stored_block(raw, True, "b")
        assert raw == model_stored(contents, compression and kind == "data", level)
    if compression:
        assert any(raw[-TRAILER_SIZE] == TYPE_ZSTD for _, raw in blocks)


def test_an_os_file_written_from_the_cores_buffer_holds_the_same_bytes(tmp_path):
    items = entries(20000, 1)
    mem, _ = build(items, compression=False)
    f = OSFileSystem().open_append(str(tmp_path / "t.sst"))
    _, meta = build(items, f=f, compression=False)
    f.close()
    assert (tmp_path / "t.sst").read_bytes() == mem.getvalue() and meta["size"] == len(mem.getvalue())


def test_a_block_larger_than_the_write_buffer_is_stored_whole():
    big = random.Random(1).randbytes(3 * TableBuilder.WRITE_BUFFER)
    items = [(make_internal_key(b"a", 2, KIND_VALUE), b"x"), (make_internal_key(b"b", 1, KIND_VALUE), big),
             (make_internal_key(b"c", 3, KIND_VALUE), b"y")]
    f, meta = build(items, compression=True)
    t = Table.open(MemoryReadFile(f.getvalue()), Options(), name="t.sst")
    t.verify()
    assert t.get(b"b", 10) == (KIND_VALUE, big) and meta["size"] == len(f.getvalue())


class PythonBuilder:
    """A ``TableBuilder`` seen only through its Python API, so that ``fill``
    takes its general path (a Python call per entry)."""

    def __init__(self, builder):
        self.add = builder.add
        self.size_estimate = builder.size_estimate


def drain(items, through_core, target, smallest_snapshot, bottommost, filter_fn, it=None, new_file=None):
    """The tables ``fill`` writes from ``items`` (or from the positioned
    iterator ``it``), cut at ``target`` bytes, into files of ``new_file()``
    (read back by ``read(f)``; default: in memory)."""
    if it is None:
        it = ListIterator([k for k, _ in items], [v for _, v in items])
        it.seek_to_first()
    new_file = new_file or (lambda: (MemoryAppendFile(), MemoryAppendFile.getvalue))
    stream = CompactionStream(it, smallest_snapshot, bottommost, filter_fn)
    options = Options(compression=False, block_size=512)
    tables = []
    while stream.valid():
        f, read = new_file()
        tb = TableBuilder(f, options)
        added = stream.fill(tb.core if through_core else PythonBuilder(tb), target)
        assert added == tb.num_entries
        tb.finish()
        tables.append(read(f))
    return tables, (stream.entries_in, stream.entries_out, stream.max_seq)


@pytest.mark.parametrize("bottommost", [False, True])
def test_fill_adding_in_c_builds_the_tables_python_adding_builds(bottommost):
    items = entries(5000, 9)
    seqs = sorted(struct.unpack("<Q", k[-8:])[0] >> 8 for k, _ in items)
    snapshot = seqs[len(seqs) // 2]

    def drop_some(user_key, value):
        return user_key.endswith(b"7")

    for target, filter_fn in ((0, None), (20000, None), (20000, drop_some)):
        c_tables, c_stats = drain(items, True, target, snapshot, bottommost, filter_fn)
        py_tables, py_stats = drain(items, False, target, snapshot, bottommost, filter_fn)
        assert c_tables == py_tables and c_stats == py_stats
        assert (len(c_tables) > 3) == (target > 0)


def test_build_tables_writes_through_the_core_and_cuts_between_user_keys():
    items = entries(3000, 11)
    it = ListIterator([k for k, _ in items], [v for _, v in items])
    it.seek_to_first()
    fs = MemoryFileSystem()
    fs.makedirs("db")
    numbers = iter(range(1, 1000))
    options = Options(target_file_bytes=16 << 10, compression=False)
    metas = build_tables(CompactionStream(it, 10 ** 9, False), options, fs, "db", lambda: next(numbers),
                         set(), threading.Lock(), True, 1)
    assert len(metas) > 3 and sum(m.entries for m in metas) == len({k[:-8] for k, _ in items})   # the newest of each
    for a, b in zip(metas, metas[1:]):
        assert a.largest[:-8] < b.smallest[:-8]


def memtable_of(items):
    """A memtable holding ``items`` (internal key, value), written in
    sequence order."""
    from lsm.memtable import MemTable
    mem = MemTable()
    for k, v in sorted(items, key=lambda kv: struct.unpack("<Q", kv[0][-8:])[0]):
        tag = struct.unpack("<Q", k[-8:])[0]
        mem.add(tag >> 8, tag & 0xff, k[:-8], v)
    return mem


@pytest.mark.parametrize("in_order", [True, False])
def test_a_flush_drained_without_the_gil_builds_the_tables_the_iterator_builds(tmp_path, monkeypatch, in_order):
    """A frozen memtable's entries (``FrozenIterator``) drain into a raw
    core without the GIL (``_fill_frozen``): the same tables, counts and
    largest sequence as the general loop over the sorted iterator, into an
    OS file (written without the GIL) or a file that needs the GIL (handed
    its bytes between runs of the loop: a small write buffer makes many)."""
    monkeypatch.setattr(TableBuilder, "WRITE_BUFFER", 4096)
    items = entries(4000, 12)
    if not in_order:    # the user keys first written out of order: gathered from the sorted keys
        items = [(b"z" + k, v) if i % 3 == 0 else (k, v) for i, (k, v) in enumerate(items)]
    mem = memtable_of(items)
    seqs = sorted(struct.unpack("<Q", k[-8:])[0] >> 8 for k, _ in items)
    names = iter(range(10 ** 6))

    def os_file():
        path = tmp_path / ("%d.sst" % next(names))
        return OSFileSystem().open_append(str(path)), lambda f: (f.close(), path.read_bytes())[1]

    for target in (0, 20000):
        for snapshot in (0, seqs[len(seqs) // 2], seqs[-1]):     # 0: no version hidden from every snapshot
            it = mem.iterator()
            it.seek_to_first()
            want = drain(None, False, target, snapshot, False, None, it=it)
            for new_file in (None, os_file):
                got = drain(None, True, target, snapshot, False, None, it=mem.flush_iterator(), new_file=new_file)
                assert got == want and (len(want[0]) > 3) == (target > 0)
                assert want[1][0] == len(items) and (want[1][1] < want[1][0]) == (snapshot > 0)


def test_a_flush_to_a_full_disk_fails_as_the_write_with_the_gil_does(tmp_path):
    """The write a flush makes without the GIL reports a failed ``write(2)``
    (ENOSPC, from /dev/full) as ``OSAppendFile.append`` does."""
    import errno
    import os

    from lsm.errors import StorageError
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    mem = memtable_of(entries(20000, 13))
    f = OSFileSystem().open_append("/dev/full")
    tb = TableBuilder(f, Options(compression=False))
    with pytest.raises(StorageError) as nogil:
        CompactionStream(mem.flush_iterator(), 10 ** 9, False).fill(tb.core)
    g = OSFileSystem().open_append("/dev/full")
    with pytest.raises(StorageError) as gil:
        g.append(b"x" * 100)
    f.close()
    g.close()
    assert str(nogil.value) == str(gil.value) and nogil.value.errno == errno.ENOSPC
