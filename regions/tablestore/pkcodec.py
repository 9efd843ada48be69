"""Order-preserving primary-key codec: typed PK tuple <-> row-key bytes.

Format (one record per PK column, concatenated in schema order; a row key is
never written to disk by anyone else, so this grammar is the on-disk format
of Tablestore row keys, and its constants are never renumbered)::

    column   = INF_MIN | INTEGER | STRING | BINARY | INF_MAX
    INF_MIN  = 0x00                                   (range bounds only)
    INTEGER  = 0x10  uint64-BE(value + 2**63)         (9 bytes)
    STRING   = 0x20  escape(utf8 bytes)  0x00 0x01
    BINARY   = 0x30  escape(bytes)       0x00 0x01
    INF_MAX  = 0xFF                                   (range bounds only)
    escape   : every 0x00 byte becomes 0x00 0xFF

Why it orders correctly: memcmp of two encodings of the same schema compares
column by column; integers are offset-binary big-endian (negatives first);
escaped strings compare bytewise and the terminator 0x00 0x01 sorts below
every continuation (a real byte >= 0x01 or an escaped 0x00 0xFF), so a value
sorts before its extensions.  INF_MIN/INF_MAX sort below/above every tag.

Every column is self-delimiting, so a whole row key is too: no row key is a
prefix of another, which lets cell keys append suffixes to a row key and keep
a row's cells contiguous, and makes the partition-key prefix (the first
column's record) cheap to find for region split boundaries.

Callers pass values already validated against the schema (validate.py);
these functions only encode.  Pure functions, thread-safe.
"""
import struct

from .metadata import INF_MAX, INF_MIN

__all__ = ["encode_pk", "decode_pk", "encode_value", "partition_prefix_len", "row_key_len",
           "decode_partition_value", "INTEGER", "STRING", "BINARY"]

INTEGER, STRING, BINARY = "INTEGER", "STRING", "BINARY"

TAG_INF_MIN = 0x00
TAG_INTEGER = 0x10
TAG_STRING = 0x20
TAG_BINARY = 0x30
TAG_INF_MAX = 0xFF
_TERM = b"\x00\x01"
_ESCAPED_ZERO = b"\x00\xff"
_OFFSET = 1 << 63
_pack_q = struct.Struct(">Q").pack
_unpack_q = struct.Struct(">Q").unpack_from


def encode_value(pk_type, value):
    """The record of one PK column (``pk_type`` is the schema's type name)."""
    if value is INF_MIN:
        return b"\x00"
    if value is INF_MAX:
        return b"\xff"
    if pk_type == INTEGER:
        return b"\x10" + _pack_q(value + _OFFSET)
    if isinstance(value, str):
        value = value.encode("utf-8")
    tag = b"\x20" if pk_type == STRING else b"\x30"
    return tag + bytes(value).replace(b"\x00", _ESCAPED_ZERO) + _TERM


def encode_pk(types, values):
    """Row key of the PK ``values`` (a sequence in schema order, one per type)."""
    return b"".join([encode_value(t, v) for t, v in zip(types, values)])


def _decode_one(data, pos):
    if pos >= len(data):
        raise ValueError("corrupt row key: truncated at offset %d" % pos)
    tag = data[pos]
    if tag == TAG_INTEGER:
        if pos + 9 > len(data):
            raise ValueError("corrupt row key: truncated INTEGER at offset %d" % pos)
        return _unpack_q(data, pos + 1)[0] - _OFFSET, pos + 9
    if tag == TAG_STRING or tag == TAG_BINARY:
        end = data.index(_TERM, pos + 1)
        raw = data[pos + 1:end].replace(_ESCAPED_ZERO, b"\x00")
        value = raw.decode("utf-8") if tag == TAG_STRING else bytearray(raw)
        return value, end + 2
    if tag == TAG_INF_MIN:
        return INF_MIN, pos + 1
    if tag == TAG_INF_MAX:
        return INF_MAX, pos + 1
    raise ValueError("corrupt row key: unknown PK tag 0x%02x at offset %d" % (tag, pos))


def decode_pk(data, count, pos=0):
    """Decode ``count`` PK columns from ``data`` at ``pos``: (values list, end offset).

    STRING decodes to ``str``, BINARY to ``bytearray`` (the SDK's read types).
    """
    values = []
    for _ in range(count):
        value, pos = _decode_one(data, pos)
        values.append(value)
    return values, pos


def partition_prefix_len(key):
    """Length of the partition-key record at the start of ``key``."""
    tag = key[0]
    if tag == TAG_INTEGER:
        return 9
    if tag == TAG_STRING or tag == TAG_BINARY:
        return key.index(_TERM, 1) + 2
    return 1


def row_key_len(key):
    """The length of the row key that ``key`` (a stored entry's key: a row
    key and its entry's suffix, cells.py) starts with, or -1 when it starts
    with none.  The row key is the run of column records at the start; the
    run ends at the first byte below 0x10 (a row's suffix starts with one,
    and no tag of a stored key is below 0x10) or at the key's end, and a
    record that is not whole, or an unknown tag, gives -1.  So keys with the
    same row key form one run in key order, as a memtable's prefix index
    needs (``lsm.PrefixExtractor``; ``_rowcodec.ROW_KEY_PREFIX`` is its C
    twin)."""
    pos, n = 0, len(key)
    while pos < n and key[pos] >= 0x10:
        tag = key[pos]
        if tag == TAG_INTEGER:
            if pos + 9 > n:
                return -1
            pos += 9
        elif tag == TAG_STRING or tag == TAG_BINARY:
            end = key.find(_TERM, pos + 1)
            if end < 0:
                return -1
            pos = end + 2
        else:
            return -1
    return pos if pos > 0 else -1


def decode_partition_value(key):
    """The partition-key value a row key (or region boundary) starts with."""
    return _decode_one(key, 0)[0]


def value_text(value) -> str:
    """A primary-key value as text: INF_MIN / INF_MAX by name, BINARY in hex,
    the rest by ``str`` (the console's form fields and the messages that name
    a key use it)."""
    if value is INF_MIN:
        return "INF_MIN"
    if value is INF_MAX:
        return "INF_MAX"
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    return str(value)
