"""Blocks as stored in a table file: compression and the checksummed trailer.

The block contents grammar (entries, restart array) is at the top of
ext/lsm/_block.pyx; this module owns what wraps it on disk::

    stored_block := payload type:uint8 crc:uint32le
    payload      := contents                       (type 0, raw)
                  | zstd frame of contents         (type 1, with content size)
    crc          := mask(crc32(payload ‖ type))    (zlib's crc32: lsm.crc.crc32)
    mask(c)      := ((c >> 15) | (c << 17)) + 0xa282ead8   mod 2**32  (LevelDB's)

The mask keeps a CRC of data that itself embeds CRCs from being trivially
predictable.  A block is compressed only when that saves at least 1/8 of it
(LevelDB's rule): otherwise reading it back would cost a decompression for
little disk saved.

What runs where: blocks are written in C, by the table build core
(ext/lsm/_table_builder.pyx, whose .pxd holds the trailer's values that
this module re-exports); ``encode_stored_block`` here is that same C
encoder, given this thread's compressor.  Blocks are read here (and in C
from a mapped file, lsm._mapped_blocks, handed the values from here).

Thread-safety: zstandard (de)compressor objects are not thread-safe, so each
thread gets its own (compressors thread-local here: ``compressor``; the
decompressor is ``lsm._block.zstd_decompressor``, shared with the reads in C
from a mapping); everything else is pure.
"""
import struct
import threading

import zstandard

from ._block import Block, BlockBuilder, BlockIter, decode_varint, encode_varint
from ._block import zstd_decompressor as _decompressor
from ._table_builder import TRAILER_SIZE, TYPE_RAW, TYPE_ZSTD
from ._table_builder import encode_stored_block as _encode_stored_block
from .crc import crc32, mask_crc, unmask_crc
from .errors import CorruptionError

__all__ = [
    "Block", "BlockBuilder", "BlockIter", "encode_varint", "decode_varint",
    "TYPE_RAW", "TYPE_ZSTD", "TRAILER_SIZE", "mask_crc", "unmask_crc", "compressor",
    "encode_stored_block", "decode_stored_block", "parse_stored_block",
]

_U32 = struct.Struct("<I")

_local = threading.local()


def compressor(level: int):
    """This thread's zstd compressor at ``level`` (what a block's payload is
    compressed with: a frame that records the content size)."""
    c = getattr(_local, "compressors", None)
    if c is None:
        c = _local.compressors = {}
    comp = c.get(level)
    if comp is None:
        comp = c[level] = zstandard.ZstdCompressor(level=level, write_content_size=True)
    return comp


def encode_stored_block(contents: bytes, compress: bool, level: int = 1) -> bytes:
    """``contents`` as written to the file: payload + type + masked CRC (the
    table build core's encoder, in C)."""
    return _encode_stored_block(contents, compressor(level).compress if compress else None)


def _stored_block(raw: bytes, verify: bool, where: str):
    """``(data, n)``: the block contents of ``raw`` (payload + trailer) are
    ``data[:n]`` (``raw`` itself for a raw block: no copy), the CRC checked
    when ``verify``.  CorruptionError naming ``where`` on any problem."""
    if len(raw) < TRAILER_SIZE:
        raise CorruptionError(f"{where}: truncated block ({len(raw)} bytes)")
    n = len(raw) - TRAILER_SIZE
    btype = raw[n]
    if verify:
        (stored,) = _U32.unpack_from(raw, n + 1)
        if crc32(memoryview(raw)[:n + 1]) != unmask_crc(stored):
            raise CorruptionError(f"{where}: block checksum mismatch")
    if btype == TYPE_RAW:
        return raw, n
    if btype == TYPE_ZSTD:
        try:
            data = _decompressor().decompress(memoryview(raw)[:n])
        except zstandard.ZstdError as e:
            raise CorruptionError(f"{where}: bad zstd block: {e}") from None
        return data, len(data)
    raise CorruptionError(f"{where}: unknown block type {btype}")


def decode_stored_block(raw: bytes, verify: bool, where: str) -> bytes:
    """The block contents of ``raw`` (payload + trailer), checking the CRC
    when ``verify``.  CorruptionError naming ``where`` on any problem."""
    data, n = _stored_block(raw, verify, where)
    return data if n == len(data) else data[:n]


def parse_stored_block(raw: bytes, verify: bool, where: str) -> Block:
    """``Block(decode_stored_block(raw, verify, where))``, without copying a
    raw block's contents off its trailer."""
    return Block(*_stored_block(raw, verify, where))
