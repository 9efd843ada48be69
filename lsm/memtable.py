"""The memtable: recent writes in memory, sorted, with every version.

Layout: a ``dict`` from user key to its versions, plus a ``SortedList`` of
the user keys for ordered reads.  How a key's versions are held (a bare
tuple or a list) is known only to ext/lsm/_memtable.pyx (``add_entry``,
``get_version``, ``MemTableIterator``); ``DB.get`` calls ``get_version``.
A point read is one dict lookup (no O(log n) search, unlike a skiplist) and a
write of an existing key is a list append.  A new key is appended to
``pending`` and merged into the sorted list only when an iterator needs
order: a write-heavy phase pays one sort of the new keys (at flush, or at the
next scan) instead of a Python-level sorted insert per put, which costs
3-9 us at memtable sizes.

Thread-safety: one writer at a time (the DB's write lock), any number of
readers.  A new key enters the dict before ``pending``, so whoever merges it
into the sorted list finds its versions; ``pending`` and the sorted list are
changed and read under ``lock``; dict and list appends are atomic under the
GIL.  One exception: a row read (``_memtable.visible_range``) with no pending
keys and the lock free walks the sorted list without taking it, running no
Python code and allocating no GC-tracked object, so no merge can start
before it ends.  Versions added after an iterator was created have sequence numbers
above its snapshot, so it may or may not see them: either is correct.
"""
import threading
from bisect import bisect_left as _bisect_left

from sortedcontainers import SortedList

from ._memtable import InsertionOrderIterator, MemTableIterator, add_entries, add_entry, get_version, keys_in_order

__all__ = ["MemTable"]


class MemTable:
    __slots__ = ("versions", "_sorted", "_pending", "lock", "approximate_bytes", "entries", "overhead")

    def __init__(self, entry_overhead: int = 64):
        self.versions = {}
        self._sorted = SortedList()
        self._pending = []
        self.lock = threading.Lock()
        self.approximate_bytes = 0
        self.entries = 0
        self.overhead = entry_overhead

    def add(self, seq: int, kind: int, key: bytes, value: bytes) -> None:
        """Record one write (``_memtable.add_entry``).  Caller holds the DB's write lock."""
        add_entry(self, seq, kind, key, value)

    def add_all(self, seq: int, ops) -> None:
        """``add`` each (kind, key, value) of ``ops`` at ``seq``, ``seq + 1``, ...
        in one C call (``_memtable.add_entries``).  Caller holds the DB's write lock."""
        add_entries(self, seq, ops)

    def get(self, key: bytes, seq: int):
        """``(kind, value)`` of the newest version with sequence <= seq, or None."""
        v = get_version(self.versions, key, seq)
        return None if v is None else (v[1], v[2])

    @property
    def keys(self) -> SortedList:
        """The sorted user keys (merges pending ones first)."""
        with self.lock:
            self._merge_pending()
        return self._sorted

    def _merge_pending(self):
        # Caller holds self.lock.  Swap first: a concurrent add appends to
        # the new list, never to the one being merged.
        pending, self._pending = self._pending, []
        if pending:
            self._sorted.update(pending)

    def has_keys_in(self, lo, hi) -> bool:
        """Whether a user key lies in ``[lo, hi)`` (None: unbounded), pending
        ones included."""
        with self.lock:
            self._merge_pending()
            return self._has_keys_in(lo, hi)

    def _has_keys_in(self, lo, hi) -> bool:
        # Caller holds self.lock, pending keys merged.  SortedList keeps
        # sorted sublists (_lists) and their last keys (_maxes): two bisects,
        # without SortedList's positional index.
        maxes = self._sorted._maxes
        if not maxes:
            return False
        if lo is None:
            first = self._sorted._lists[0][0]
        else:
            pos = _bisect_left(maxes, lo)
            if pos == len(maxes):
                return False
            sub = self._sorted._lists[pos]
            first = sub[_bisect_left(sub, lo)]
        return hi is None or first < hi

    def iterator(self, lo=None, hi=None):
        """An ordered iterator of internal entries (see ext/lsm/_memtable.pyx);
        for a scan bounded by ``[lo, hi)``, None when no key lies in it (a
        bounded scan leaves such a memtable out)."""
        with self.lock:
            self._merge_pending()
            if (lo is not None or hi is not None) and not self._has_keys_in(lo, hi):
                return None
        return MemTableIterator(self._sorted, self.versions, self.lock)

    def flush_iterator(self):
        """The iterator a flush drains, forward from the first, once nothing
        writes this memtable any more: when its keys were first written in
        ascending order (a sequential load), its dict walked in the dict's
        own order (``InsertionOrderIterator``: no lookup a key); else
        ``iterator()``."""
        if keys_in_order(self.versions):
            return InsertionOrderIterator(self.versions)
        return self.iterator()

    def __len__(self) -> int:
        return self.entries
