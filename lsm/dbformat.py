"""Internal keys: the one place that packs a user key with its sequence number.

Layout (LevelDB's, written to WAL batches and SSTables; never renumber)::

    internal_key := user_key  tag:fixed64-little-endian
    tag          := (sequence << 8) | kind
    kind         := 0 deletion (tombstone) | 1 value

Order: user keys ascending bytewise (memcmp), then tag descending, so for one
user key the newest entry comes first.  A lookup for ``(key, snapshot_seq)``
seeks to ``lookup_key(key, snapshot_seq)``: the first entry at or after it
with the same user key is the newest one the snapshot may see.

The Cython owner of the same layout (packing, parsing, comparison) is
``ext/lsm/_keys.pxd``; tests/test_dbformat.py checks the two agree.
"""
import struct

__all__ = [
    "KIND_DELETE", "KIND_VALUE", "MAX_SEQ", "TAG_SIZE",
    "make_internal_key", "lookup_key", "parse_internal_key",
    "user_key", "internal_sort_key",
]

KIND_DELETE = 0   # never renumber: written to disk
KIND_VALUE = 1    # never renumber: written to disk
#: Sequence numbers fit in 56 bits so that (seq << 8 | kind) fits in 64.
MAX_SEQ = (1 << 56) - 1
TAG_SIZE = 8

_TAG = struct.Struct("<Q")


def make_internal_key(user_key: bytes, seq: int, kind: int) -> bytes:
    return user_key + _TAG.pack((seq << 8) | kind)


def lookup_key(user_key: bytes, seq: int = MAX_SEQ) -> bytes:
    """The internal key that sorts before every entry of ``user_key`` visible at ``seq``."""
    return user_key + _TAG.pack((seq << 8) | KIND_VALUE)


def parse_internal_key(ikey: bytes):
    """Return ``(user_key, seq, kind)``.

    >>> ikey = make_internal_key(b"k", 5, KIND_VALUE)
    >>> ikey.hex()
    '6b0105000000000000'
    >>> parse_internal_key(ikey)
    (b'k', 5, 1)
    """
    if len(ikey) < TAG_SIZE:
        from .errors import CorruptionError
        raise CorruptionError(f"internal key too short: {len(ikey)} bytes")
    (tag,) = _TAG.unpack_from(ikey, len(ikey) - TAG_SIZE)
    return ikey[:-TAG_SIZE], tag >> 8, tag & 0xFF


def user_key(ikey: bytes) -> bytes:
    return ikey[:-TAG_SIZE]


def internal_sort_key(ikey: bytes):
    """A Python sort key giving internal-key order (for tests and tools):
    user key ascending, then newest first.

    >>> keys = [make_internal_key(b"a", 1, KIND_VALUE), make_internal_key(b"a", 2, KIND_DELETE),
    ...         make_internal_key(b"", 9, KIND_VALUE)]
    >>> [parse_internal_key(k) for k in sorted(keys, key=internal_sort_key)]
    [(b'', 9, 1), (b'a', 2, 0), (b'a', 1, 1)]
    """
    uk, seq, kind = parse_internal_key(ikey)
    return (uk, -((seq << 8) | kind))
