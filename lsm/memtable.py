"""The memtable: recent writes in memory, sorted, with every version.

Layout: a ``dict`` from user key to its newest version, plus a
``SortedList`` of the user keys for ordered reads.  How a key's versions are
held (a chain of ``Version`` objects, newest first) is known only to
ext/lsm/_memtable.pyx (``add_entry``, ``get_version``, ``MemTableIterator``);
``DB.get`` calls ``get_version``.  A point read is one dict lookup (O(1), no
O(log n) search, unlike a skiplist) and a write of an existing key replaces
its dict value with a new head of its chain.  A new key is appended to
``pending`` and merged into the sorted list only when an iterator needs
order: a write-heavy phase pays one sort of the new keys (at flush, or at the
next scan) instead of a sorted insert per put.

Thread-safety: one writer at a time (the DB's write lock), any number of
readers.  A new key enters the dict before ``pending``, so whoever merges it
into the sorted list finds its versions; ``pending`` and the sorted list are
changed and read under ``lock``; dict and list appends are atomic under the
GIL.  One exception: a row read (``_memtable.visible_range``) with no pending
keys and no merge running (``_merging``) walks the sorted list without
taking the lock, running no Python code and allocating no GC-tracked
object, so no merge can start before it ends.  Versions added after an
iterator was created have sequence numbers above its snapshot, so it may or
may not see them: either is correct.

With a prefix extractor (``Options.prefix_extractor``), a new key is also
filed under its prefix in a C hash table (a slot keeps a prefix's first key
and is marked when a second comes), so a short scan within a prefix of one
key reads that key without the sorted keys, and so without merging the
pending ones (RocksDB's prefix-hashed memtables answer a prefix so).

``MemTable`` is a C class (ext/lsm/_memtable.pyx): the write path and the
row read reach its fields without attribute lookups.
"""
from ._memtable import MemTable, PrefixExtractor, fixed_prefix

__all__ = ["MemTable", "PrefixExtractor", "fixed_prefix"]
