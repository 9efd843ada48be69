"""SSTables: immutable sorted files of (internal key, value), and bounded views.

File layout (LevelDB's table format, adapted; worked byte-level example in
docs/formats/sstable.md)::

    table      := data_block* filter_block? properties_block metaindex_block
                  index_block footer
    *_block    := stored block: payload type:uint8 crc:uint32le   (lsm/block.py)
    data_block := block of (internal key -> value), restart_interval entries
                  between restarts (ext/lsm/_block.pyx); zstd-compressed when
                  options.compression and it saves >= 1/8, else raw
    filter     := bloom filter over the table's user keys (ext/lsm/_bloom.pyx),
                  stored raw
    properties := block (restart interval 1) of name -> value, names sorted:
                    b"data.bytes"       varint64  end of the last data block
                    b"format.version"   varint64
                    b"largest"          last internal key   (absent if empty)
                    b"num.data.blocks"  varint64
                    b"num.entries"      varint64
                    b"raw.key.bytes"    varint64
                    b"raw.value.bytes"  varint64
                    b"smallest"         first internal key  (absent if empty)
    metaindex  := block (restart interval 1) of name -> handle:
                    b"filter.mmh3" (absent when bloom_bits_per_key == 0),
                    b"properties"
    index      := block (restart interval 1): for each data block, in order,
                  its LAST internal key -> handle.  Lookups take the first
                  entry >= the target (LevelDB's ceiling convention).
    handle     := offset:varint64 size:varint64   (size excludes the trailer)
    footer     := metaindex_handle index_handle zero padding to 40 bytes
                  format_version:uint32le                  (= 1)
                  footer_crc:uint32le  mask(crc32(first 44 footer bytes))
                  magic:fixed64le                          (= TABLE_MAGIC)
                  (56 bytes, at file_size - 56)

Metadata blocks (filter, properties, metaindex, index) are always stored raw
and always checksum-verified on open; data blocks are verified on every read
from the file when options.verify_checksums.  Any mismatch raises
CorruptionError naming the file: a flipped bit never becomes a wrong value.

Thread-safety: ``Table`` (and ``views.TableView``) are immutable after open and may
be used by many threads at once (``ReadFile.read`` must be thread-safe);
their iterators belong to one thread.  ``TableBuilder`` is single-threaded.
"""
import struct

from . import bloom
from ._block import decode_handle as _decode_handle
from ._iter import compare_internal_keys
from ._table import PointReader, index_boundaries
from ._table_builder import TableBuildCore
from ._table_iter import TwoLevelIter
from .block import (BlockBuilder, TRAILER_SIZE, compressor, decode_stored_block, decode_varint,
                    encode_varint, mask_crc, parse_stored_block, TYPE_RAW, TYPE_ZSTD, unmask_crc)
from .cache import new_owner_id
from .crc import crc32
from .dbformat import MAX_SEQ, lookup_key, user_key
from .errors import ClosedError, CorruptionError
from .purepython import bind_c_calls, c_call

__all__ = ["TableBuilder", "Table", "TABLE_MAGIC", "FORMAT_VERSION", "FOOTER_SIZE"]

TABLE_MAGIC = 0x9A6E1D57B0C473E2   # never change: identifies our table files
FORMAT_VERSION = 1                 # never renumber; bump for a new layout
FOOTER_SIZE = 56
_HANDLES_SIZE = 40
_FOOTER_TAIL = struct.Struct("<IIQ")   # format_version, footer_crc, magic
PROPERTIES_NAME = b"properties"        # never change: metaindex name
_BLOCK_OVERHEAD = 128                  # cache charge of a parsed block beyond its bytes


def encode_handle(offset: int, size: int) -> bytes:
    return encode_varint(offset) + encode_varint(size)


def decode_handle(data: bytes, where: str):
    """``(offset, size, next_pos)`` of the handle at the start of ``data``."""
    try:
        return _decode_handle(data, 0)
    except CorruptionError:
        raise CorruptionError(f"{where}: bad block handle") from None


def encode_footer(metaindex_handle: bytes, index_handle: bytes) -> bytes:
    handles = (metaindex_handle + index_handle).ljust(_HANDLES_SIZE, b"\0")
    head = handles + struct.pack("<I", FORMAT_VERSION)
    return head + struct.pack("<IQ", mask_crc(crc32(head)), TABLE_MAGIC)


class TableBuilder:
    """Writes one table to ``f`` (an ``AppendFile``) from entries added in
    strictly increasing internal-key order.

    What runs where: everything per entry and per data block runs in the
    build core (``core``: ``lsm._table_builder.TableBuildCore``, C): the
    data blocks, their compression, trailers and index entries, the bloom
    digests, and the appends to ``f``; ``finish`` here writes, once, the
    metadata blocks and the footer.  ``finish()`` neither syncs nor closes
    ``f``: the caller owns the file.  After an I/O error, ``abandon()``.

    Blocks are handed to ``f`` ``WRITE_BUFFER`` bytes at a time, not one by
    one: a table is read only once finished, and an append that large is
    written with the GIL released (lsm._fileio), so a flush or compaction
    writing in the background leaves the foreground threads running.
    """

    #: Bytes of blocks gathered before one append to the file.
    WRITE_BUFFER = 256 << 10

    def __init__(self, f, options):
        self._options = options
        self._core = TableBuildCore(
            f, options.block_size, options.restart_interval, options.bloom_bits_per_key > 0,
            compressor(options.compression_level) if options.compression else None, self.WRITE_BUFFER)
        bind_c_calls(self)          # ``add`` below becomes its core's

    @property
    def core(self) -> TableBuildCore:
        """The build core, for C callers that add entries to it directly
        (``CompactionStream.fill``)."""
        return self._core

    @c_call("_core")
    def add(self, ikey: bytes, value: bytes) -> None:
        """Append an entry; ValueError unless ``ikey`` is > every earlier key.
        Runs as ``TableBuildCore.add``, one C call."""
        self._core.add(ikey, value)

    @property
    def num_entries(self) -> int:
        return self._core.num_entries

    @property
    def smallest(self):
        """The first internal key added (None before any)."""
        return self._core.smallest

    @property
    def largest(self):
        """The last internal key added (None before any)."""
        return self._core.largest

    def size_estimate(self) -> int:
        """Bytes written so far plus the data block being built (the name
        ``BlockBuilder.size_estimate`` has too)."""
        return self._core.size_estimate()

    def finish(self) -> dict:
        core, options = self._core, self._options
        if core.closed:
            raise ValueError("finish() after finish() or abandon()")
        core.flush_data_block()
        core.closed = True
        data_bytes = core.offset
        meta = []
        if options.bloom_bits_per_key > 0:
            filt = bloom.build(core.filter_digests(), options.bloom_bits_per_key)
            meta.append((bloom.FILTER_BLOCK_NAME, core.store_block(filt)))
        props = {b"data.bytes": data_bytes, b"format.version": FORMAT_VERSION,
                 b"num.data.blocks": core.num_data_blocks, b"num.entries": core.num_entries,
                 b"raw.key.bytes": core.raw_key_bytes, b"raw.value.bytes": core.raw_value_bytes}
        pb = BlockBuilder(1)
        for name in sorted(list(props) + ([b"largest", b"smallest"] if core.num_entries else [])):
            v = props.get(name)
            pb.add(name, encode_varint(v) if v is not None else
                   (core.largest if name == b"largest" else core.smallest))
        meta.append((PROPERTIES_NAME, core.store_block(pb.finish())))
        mb = BlockBuilder(1)
        for name, handle in sorted(meta):
            mb.add(name, handle)
        metaindex_handle = core.store_block(mb.finish())
        index_handle = core.store_block(core.index_block())
        core.write_out(encode_footer(metaindex_handle, index_handle))
        return {"size": core.offset, "num_entries": core.num_entries,
                "smallest": core.smallest, "largest": core.largest}

    def abandon(self) -> None:
        """Stop building; the caller deletes the partial file."""
        self._core.abandon()


class _BlockReader:
    """The block reads of one open table file.  It holds no reference to its
    ``Table``, so the table's ``PointReader`` (which calls ``fill``) makes no
    reference cycle: a table's file closes as soon as its last user drops it
    (TableCache's contract), not at some later cyclic garbage collection."""

    __slots__ = ("f", "name", "verify", "cache", "owner", "data_size")

    def __init__(self, f, name, verify, cache, owner):
        self.f, self.name, self.verify, self.cache, self.owner = f, name, verify, cache, owner
        self.data_size = 0          # set once the properties are read

    def read(self, off, size, verify, end, parse=True):
        # Hot on every cache miss: the error text is built only on error.
        f = self.f
        if f is None:
            raise ClosedError(f"{self.name}: read of a closed table")
        try:
            if off + size + TRAILER_SIZE > end:
                raise CorruptionError("handle past the end of its section")
            raw = f.read(off, size + TRAILER_SIZE)
            if parse:
                return parse_stored_block(raw, verify, "block")
            return decode_stored_block(raw, verify, "block")
        except CorruptionError as e:
            raise CorruptionError(f"{self.name}: block at {off}: {e}") from None

    def fill(self, off, size):
        """Read a data block from the file into the cache (after a miss)."""
        blk = self.read(off, size, self.verify, self.data_size)
        if self.cache is not None:
            self.cache.insert((self.owner, off), blk, len(blk.data) + _BLOCK_OVERHEAD)
        return blk


class Table:
    """An open table file: footer, index, properties and filter in memory,
    data blocks read through the (optional) shared ``BlockCache``."""

    @classmethod
    def open(cls, f, options, *, cache=None, name: str = "") -> "Table":
        return cls(f, options, cache, name)

    def __init__(self, f, options, cache=None, name=""):
        self.name = name or "<table>"
        self._cache = cache
        self._owner = new_owner_id()
        self._blocks = _BlockReader(f, self.name, options.verify_checksums, cache, self._owner)
        self._read_block = self._blocks.read
        self._fill = self._blocks.fill
        self._boundaries = None
        self.file_size = size = f.size
        if size < FOOTER_SIZE:
            raise CorruptionError(f"{self.name}: file too short for a table ({size} bytes)")
        footer = f.read(size - FOOTER_SIZE, FOOTER_SIZE)
        version, crc, magic = _FOOTER_TAIL.unpack_from(footer, _HANDLES_SIZE)
        if magic != TABLE_MAGIC:
            raise CorruptionError(f"{self.name}: bad table magic {magic:#x}")
        if crc32(footer[:_HANDLES_SIZE + 4]) != unmask_crc(crc):
            raise CorruptionError(f"{self.name}: footer checksum mismatch")
        if version != FORMAT_VERSION:
            raise CorruptionError(f"{self.name}: unsupported table format version {version}")
        moff, msize, pos = decode_handle(footer, self.name)
        ioff, isize, _ = decode_handle(footer[pos:], self.name)
        self._meta_end = size - FOOTER_SIZE
        self._index = self._read_block(ioff, isize, True, self._meta_end)
        self._metaindex = metaindex = dict(
            self._read_block(moff, msize, True, self._meta_end).entries())
        if PROPERTIES_NAME not in metaindex:
            raise CorruptionError(f"{self.name}: no properties block")
        props = dict(self._read_meta(metaindex[PROPERTIES_NAME]).entries())
        try:
            self.data_size = decode_varint(props[b"data.bytes"])[0]
            self.num_entries = decode_varint(props[b"num.entries"])[0]
            self.num_data_blocks = decode_varint(props[b"num.data.blocks"])[0]
            self.raw_key_bytes = decode_varint(props[b"raw.key.bytes"])[0]
            self.raw_value_bytes = decode_varint(props[b"raw.value.bytes"])[0]
        except KeyError as e:
            raise CorruptionError(f"{self.name}: property {e.args[0]!r} missing") from None
        self.smallest = props.get(b"smallest")
        self.largest = props.get(b"largest")
        if (self.smallest is None) != (self.num_entries == 0) or self.data_size > self._meta_end:
            raise CorruptionError(f"{self.name}: inconsistent properties")
        self._blocks.data_size = self.data_size
        fh = metaindex.get(bloom.FILTER_BLOCK_NAME)
        self._filter = None if fh is None else self._read_meta(fh, parse=False)
        #: ``get(user_key, seq)``: ``(kind, value)`` of the newest entry of
        #: ``user_key`` with sequence <= ``seq``, or None; a bloom miss reads
        #: no block.  The point-read path in one C call (_table.PointReader).
        self.point = PointReader(self._filter, self._index, self._cache, self._owner, self._fill)
        buf = f.buffer()
        if buf is not None:     # a mapped file: the point read reads raw blocks in C
            self.point.attach_source(buf, self.data_size, options.verify_checksums, TYPE_RAW,
                                     TRAILER_SIZE, _BLOCK_OVERHEAD, TYPE_ZSTD)
        self.get = self.point.get

    # -- block access (reads and fills: _BlockReader) -------------------------
    def _read_meta(self, handle, parse=True):
        off, size, _ = decode_handle(handle, self.name)
        return self._read_block(off, size, True, self._meta_end, parse)

    def _data_block(self, off, size):
        """The loader of data blocks: cache first, then the file."""
        cache = self._cache
        blk = cache.get((self._owner, off)) if cache is not None else None
        return blk if blk is not None else self._fill(off, size)

    # -- reads -------------------------------------------------------------
    def may_contain(self, user_key: bytes) -> bool:
        """False only when the bloom filter rules ``user_key`` out."""
        return self._filter is None or bloom.may_contain(self._filter, user_key)

    def iterator(self):
        """A two-level iterator over every entry (InternalIterator)."""
        return TwoLevelIter(self._index, self._data_block, self.point)

    def approximate_offset(self, user_key: bytes) -> int:
        """File offset of the data block where ``user_key`` is or would be;
        ``data_size`` past the last block.  Monotonic in ``user_key``."""
        h = self._index.find_handle(lookup_key(user_key, MAX_SEQ))
        return self.data_size if h is None else h[0]

    def block_boundaries(self, max_points: int = 0):
        """``[(last user key of block i, data bytes through block i)]``.

        ``max_points`` > 0: only about that many, evenly spaced (every k-th
        block and the last), read straight from the index: what a split
        point search needs, at a cost that does not grow with the table.
        """
        if max_points > 0 and self.num_data_blocks > max_points:
            try:
                return index_boundaries(self._index, TRAILER_SIZE, self.num_data_blocks // max_points)
            except CorruptionError as e:
                raise CorruptionError(f"{self.name}: {e}") from None
        if self._boundaries is None:
            try:
                self._boundaries = index_boundaries(self._index, TRAILER_SIZE)
            except CorruptionError as e:
                raise CorruptionError(f"{self.name}: {e}") from None
        return list(self._boundaries)

    def verify(self) -> None:
        """Re-read every block from the file, checking every checksum, the
        order of all keys, the index, the properties and the filter."""
        for name, h in self._metaindex.items():
            self._read_meta(h, parse=name != bloom.FILTER_BLOCK_NAME)
        expect_off, count, prev, first = 0, 0, None, None
        for last, h in self._index.entries():
            off, size, _ = decode_handle(h, self.name)
            if off != expect_off:
                raise CorruptionError(f"{self.name}: data block at {off}, expected {expect_off}")
            it = self._read_block(off, size, True, self.data_size).iterator()
            it.seek_to_first()
            if not it.valid():
                raise CorruptionError(f"{self.name}: empty data block at {off}")
            while it.valid():
                k = it.key()
                if prev is not None and not _ikey_less(prev, k):
                    raise CorruptionError(f"{self.name}: keys out of order in block at {off}")
                if not self.may_contain(user_key(k)):
                    raise CorruptionError(f"{self.name}: bloom filter misses a key")
                first = k if first is None else first
                prev = k
                count += 1
                it.next()
            if prev != last:
                raise CorruptionError(f"{self.name}: index key differs from block {off}'s last key")
            expect_off = off + size + TRAILER_SIZE
        if expect_off != self.data_size or count != self.num_entries or \
                first != self.smallest or prev != self.largest:
            raise CorruptionError(f"{self.name}: properties disagree with the data blocks")

    def close(self) -> None:
        """Close the file and drop this table's cached blocks.  Idempotent."""
        f, self._blocks.f = self._blocks.f, None
        if f is not None:
            self.point.detach_source()
            f.close()
            if self._cache is not None:
                self._cache.erase_prefix(self._owner)


def _ikey_less(a: bytes, b: bytes) -> bool:
    return compare_internal_keys(a, b) < 0
