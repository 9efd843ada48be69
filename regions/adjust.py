"""Split-point adjusters: *where* a region may split (HBase's RegionSplitRestriction).

An adjuster is a ``split_boundary(key) -> bytes`` function that maps a row key
to the first key of its indivisible group (for the Tablestore layer: the
encoded partition-key prefix).  It must return a prefix-or-smaller of the key
(``split_boundary(k) <= k``) and be non-decreasing in key order, so that a
group is a contiguous key range that starts at its boundary; a split at a
boundary then never divides a group (every key of the group sorts at or after
it, every key of an earlier group before it).

``adjust_split_point`` applies one to a proposed split point, with the
fallback HBase lacks (HBASE-23620): when the group of the proposed point
starts at or before the region's start, the next group boundary inside the
region is used instead; only a region that is one group cannot split.
"""
from typing import Callable, Iterable, Optional

__all__ = ["KeyPrefix", "DelimitedKeyPrefix", "adjust_split_point"]


class KeyPrefix:
    """Rows sharing their first ``length`` bytes stay together (HBase's
    ``KeyPrefixRegionSplitPolicy`` / ``KeyPrefixRegionSplitRestriction``)."""

    def __init__(self, length: int):
        if isinstance(length, bool) or not isinstance(length, int):
            raise TypeError(f"KeyPrefix length must be an int, got {type(length).__name__}")
        if length < 1:
            raise ValueError(f"KeyPrefix length must be >= 1, got {length}")
        self.length = length

    def __call__(self, key: bytes) -> bytes:
        return bytes(key[:self.length])

    def __repr__(self):
        return f"KeyPrefix({self.length})"


class DelimitedKeyPrefix:
    """Rows sharing the bytes before the first ``delimiter`` stay together
    (HBase's ``DelimitedKeyPrefixRegionSplitPolicy``).  A key without the
    delimiter is its own group, as in HBase."""

    def __init__(self, delimiter: bytes):
        if not isinstance(delimiter, (bytes, bytearray)):
            raise TypeError(f"DelimitedKeyPrefix delimiter must be bytes, got {type(delimiter).__name__}")
        if not delimiter:
            raise ValueError("DelimitedKeyPrefix delimiter must not be empty")
        self.delimiter = bytes(delimiter)

    def __call__(self, key: bytes) -> bytes:
        i = key.find(self.delimiter)
        return bytes(key if i < 0 else key[:i])

    def __repr__(self):
        return f"DelimitedKeyPrefix({self.delimiter!r})"


def _inside(point: bytes, start: bytes, end: bytes) -> bool:
    return point > start and (not end or point < end)


#: The start of the reason given when a region is one key group (a hot partition key).
HOT_REASON = "hot partition key"


def adjust_split_point(point: bytes, start: bytes, end: bytes,
                       split_boundary: Optional[Callable[[bytes], bytes]],
                       keys_after: Callable[[bytes], Iterable[bytes]],
                       first_key: Optional[bytes] = None):
    """Return ``(split_key, None)`` or ``(None, reason)``.

    ``point`` is the proposed split key inside region ``[start, end)`` (empty
    end: unbounded); ``first_key`` the region's smallest key (None: unknown or
    empty region); ``keys_after(p)`` yields the region's keys ``> p`` in order
    (only consumed when the fallback needs it, and only until the next group).
    A split key must lie strictly inside the region and after ``first_key``,
    so that neither daughter starts empty.  ``reason`` explains a refusal.
    """
    floor = max(start, first_key or b"")
    if not (_inside(point, start, end) and point > floor):
        return None, f"split point {point!r} is not inside the region's data"
    if split_boundary is None:
        return point, None
    b = split_boundary(point)
    if not isinstance(b, bytes):
        raise TypeError(f"split_boundary must return bytes, got {type(b).__name__}")
    if b > point:
        raise ValueError(f"split_boundary({point!r}) = {b!r} sorts after the key; "
                         "a boundary must be the first key of the key's group")
    if b > floor:
        return b, None
    for k in keys_after(point):
        b = split_boundary(k)
        if b > floor:
            if _inside(b, start, end):
                return b, None
            break
    return None, (f"{HOT_REASON}: the region holds one key group "
                  f"(boundary {split_boundary(point)!r}) and cannot split inside it")
