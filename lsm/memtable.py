"""The memtable: recent writes in memory, sorted, with every version.

Layout: a ``dict`` from user key to its versions ``[(seq, kind, value), ...]``
(oldest first) plus a ``SortedList`` of the user keys.  A point read is one
dict lookup (no O(log n) search, unlike a skiplist), a write of an existing
key is a list append, and only a new key pays for the sorted insert.

Thread-safety: one writer at a time (the DB's write lock), any number of
readers.  A new key enters the dict before the sorted list, so a reader that
finds it in the list always finds its versions; the sorted list is changed
and read under ``lock`` (its updates are not atomic), dict and list appends
are atomic under the GIL.
"""
import threading

from sortedcontainers import SortedList

from ._iter import MemTableIterator

__all__ = ["MemTable"]


class MemTable:
    __slots__ = ("versions", "keys", "lock", "approximate_bytes", "entries", "overhead")

    def __init__(self, entry_overhead: int = 64):
        self.versions = {}
        self.keys = SortedList()
        self.lock = threading.Lock()
        self.approximate_bytes = 0
        self.entries = 0
        self.overhead = entry_overhead

    def add(self, seq: int, kind: int, key: bytes, value: bytes) -> None:
        """Record one write.  Caller holds the DB's write lock."""
        vs = self.versions.get(key)
        if vs is None:
            self.versions[key] = [(seq, kind, value)]
            with self.lock:
                self.keys.add(key)
        else:
            vs.append((seq, kind, value))
        self.approximate_bytes += len(key) + len(value) + self.overhead
        self.entries += 1

    def get(self, key: bytes, seq: int):
        """``(kind, value)`` of the newest version with sequence <= seq, or None."""
        vs = self.versions.get(key)
        if vs is None:
            return None
        for i in range(len(vs) - 1, -1, -1):
            v = vs[i]
            if v[0] <= seq:
                return v[1], v[2]
        return None

    def iterator(self) -> MemTableIterator:
        return MemTableIterator(self.keys, self.versions, self.lock)

    def __len__(self) -> int:
        return self.entries
