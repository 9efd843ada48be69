"""Write batches and their WAL record encoding (the one owner of that format).

A WAL record (payload of one lsm.wal log record) is one atomic batch::

    record := sequence:fixed64le  count:fixed32le  entry{count}
    entry  := kind:uint8  key_len:fixed32le  key  [value_len:fixed32le  value]   (value iff kind == 1)

Entry ``i`` gets sequence number ``sequence + i``.  Kinds are those of
lsm/dbformat.py (0 deletion, 1 value; never renumber).  ``DB.write_pairs``
writes the same record from ``(key, value)`` pairs (value None: a deletion),
no WriteBatch made (ext/lsm/_write_batch.pxd reads either shape).  Fixed-width lengths
rather than varints: a record is built and parsed by ``struct`` in one call
per field, which is what Python does fastest.
"""
import struct

from ._write_batch import WriteBatch  # in C (ext/lsm/_write_batch.pyx): the write path reads it
from .arguments import check_bound, check_key, check_value  # noqa: F401 -- re-exported
from .dbformat import KIND_DELETE, KIND_VALUE
from .errors import CorruptionError

__all__ = ["WriteBatch", "encode_record", "decode_record", "replay", "check_key", "check_value", "check_bound"]

_HEADER = struct.Struct("<QI")
_LEN = struct.Struct("<I")
_KIND_LEN = struct.Struct("<BI")


def encode_record(seq: int, ops) -> bytes:
    """Encode ``ops`` (a list of (kind, key, value)) as one WAL record."""
    parts = [_HEADER.pack(seq, len(ops))]
    append = parts.append
    for kind, key, value in ops:
        append(_KIND_LEN.pack(kind, len(key)))
        append(key)
        if kind == KIND_VALUE:
            append(_LEN.pack(len(value)))
            append(value)
    return b"".join(parts)


def encode_single(seq: int, kind: int, key: bytes, value: bytes) -> bytes:
    """``encode_record(seq, [(kind, key, value)])``: the reference the C writer's
    record of one put or delete (ext/lsm/_log_writer.pyx, _write_batch.pxd) is tested against."""
    if kind == KIND_VALUE:
        return b"".join((_HEADER.pack(seq, 1), _KIND_LEN.pack(kind, len(key)), key, _LEN.pack(len(value)), value))
    return b"".join((_HEADER.pack(seq, 1), _KIND_LEN.pack(kind, len(key)), key))


def decode_record(data: bytes):
    """Return ``(sequence, [(kind, key, value), ...])``; CorruptionError on bad bytes."""
    try:
        seq, count = _HEADER.unpack_from(data, 0)
        pos = _HEADER.size
        ops = []
        for _ in range(count):
            kind, klen = _KIND_LEN.unpack_from(data, pos)
            pos += 5
            key = data[pos:pos + klen]
            pos += klen
            if kind == KIND_VALUE:
                (vlen,) = _LEN.unpack_from(data, pos)
                pos += 4
                value = data[pos:pos + vlen]
                pos += vlen
            elif kind == KIND_DELETE:
                value = b""
            else:
                raise CorruptionError(f"WAL record: unknown entry kind {kind}")
            if len(key) != klen or (kind == KIND_VALUE and len(value) != vlen):
                raise CorruptionError("WAL record: entry runs past the end of the record")
            ops.append((kind, key, value))
    except struct.error as e:
        raise CorruptionError(f"WAL record truncated: {e}") from None
    if pos != len(data):
        raise CorruptionError(f"WAL record: {len(data) - pos} trailing bytes")
    return seq, ops


def replay(records):
    """``(seq, kind, key, value)`` of every entry of ``records`` (WAL record
    payloads, e.g. a ``LogReader``), in order: the one WAL replay loop.

    >>> list(replay([encode_record(7, [(KIND_VALUE, b"a", b"1"), (KIND_DELETE, b"b", b"")])]))
    [(7, 1, b'a', b'1'), (8, 0, b'b', b'')]
    """
    for rec in records:
        seq, ops = decode_record(rec)
        for i, (kind, key, value) in enumerate(ops):
            yield seq + i, kind, key, value

