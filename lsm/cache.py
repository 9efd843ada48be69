"""Caches of the read path: parsed blocks (bounded bytes) and open tables
(bounded file descriptors).  Both are thread-safe.

``BlockCache`` (in C, ext/lsm/_blockcache.pyx: a hit is on every point
read) bounds the bytes of its entries and replaces by CLOCK, LRU in effect.
Its keys are ``(owner, block_offset)`` where ``owner`` is a per-open-table
id (``Table`` takes one from ``new_owner_id()``), so a file reopened, or two
tables with the same name, never share stale blocks.  Values are immutable
parsed blocks, shared freely between threads.  A table's point reader
(``lsm._table.PointReader``) also keeps the cache slot of each block it
read, and takes a hit from it without the dict (an evicted slot has no
value, and the reader goes back to the dict); the point read does so with
the GIL released, and what the cache drops meanwhile is kept until those
searches are done (ext/lsm/_blockcache.pyx, "Reads without the GIL").

``TableCache`` keeps at most ``capacity`` tables by key; an evicted table is
forgotten, not closed, and closes when its last user drops it.  Several
stores' table caches may share one budget (``SharedTables``, handed in as
``Options.shared_tables``): a region server's regions then hold at most
that many tables open together, whatever their number.
"""
import itertools
import threading
from collections import OrderedDict

from ._blockcache import BlockCache
from .errors import ClosedError

__all__ = ["BlockCache", "TableCache", "SharedTables", "new_owner_id"]

_owner_ids = itertools.count(1)


def new_owner_id() -> int:
    """A process-unique id to prefix one table's block-cache keys."""
    return next(_owner_ids)


class TableCache:
    """LRU of open tables by key (the DB's: file number), at most ``capacity``.

    ``open_fn(key, *args) -> table`` opens one on a miss; it runs outside the
    lock, so a slow open never blocks hits on other tables (two threads
    missing the same key at once may both open it; the loser's table is
    closed).  Eviction only *forgets* a table: its file closes when the last
    reference (an iterator, a read in flight) goes, so a long-lived iterator
    needs no bracket and eviction never closes a table under a reader.

    ``peek(key)`` is the point-read path: one lock-free dict lookup, no LRU
    refresh and no counting (the DB falls back to ``get`` on a miss, which
    refreshes).  It is the one map of open tables.  (The point read's view
    of a version, lsm._read.ReadView, also holds the readers of that
    version's tables it opened, while the version lives, when the version
    has no more files than this cache's capacity.)
    Thread-safe.
    """

    def __init__(self, open_fn, capacity: int, shared: "SharedTables" = None):
        if not callable(open_fn):
            raise TypeError("open_fn must be callable")
        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be an int >= 1, got {capacity!r}")
        if shared is not None and not isinstance(shared, SharedTables):
            raise TypeError(f"shared must be an lsm.cache.SharedTables, got {type(shared).__name__}")
        self._open_fn = open_fn
        self.capacity = capacity
        self._shared = shared           # the budget this cache shares with others, or None
        self._lock = threading.Lock()
        self._map = OrderedDict()          # key -> table
        #: ``peek(key)``: the open table or None, lock-free (see the class doc).
        self.peek = self._map.get
        self._closed = False
        self.hits = 0
        self.misses = 0

    def get(self, key, *args):
        """The open table for ``key``, opening it with ``open_fn(key, *args)`` on a miss."""
        # Lock-free hit: dict get and move_to_end are each atomic under the
        # GIL, and an evicted table stays usable.
        t = self._map.get(key)
        if t is not None and not self._closed:
            try:
                self._map.move_to_end(key)
                if self._shared is not None:
                    self._shared.touch(self, key)
            except KeyError:
                pass
            self.hits += 1
            return t
        with self._lock:
            self._check_open()
            t = self._map.get(key)
            if t is not None:
                self._map.move_to_end(key)
                self.hits += 1
                return t
            self.misses += 1
        table = self._open_fn(key, *args)
        loser = None
        with self._lock:
            closed = self._closed
            if closed:
                loser = table
            else:
                t = self._map.get(key)
                if t is not None:           # another thread won the race
                    loser, table = table, t
                else:
                    self._map[key] = table
                while len(self._map) > self.capacity:
                    old, _t = self._map.popitem(last=False)
                    if self._shared is not None:
                        self._shared.forget(self, old)
        if self._shared is not None and not closed:
            self._shared.add(self, key)     # may evict another store's table (not under our lock)
        if loser is not None:
            loser.close()
        if closed:
            self._check_open()
        return table

    def evict(self, key) -> None:
        """Forget ``key``'s table (e.g. its file was deleted)."""
        with self._lock:
            self._map.pop(key, None)
        if self._shared is not None:
            self._shared.forget(self, key)

    def __len__(self) -> int:
        return len(self._map)

    def _check_open(self):
        if self._closed:
            raise ClosedError("table cache is closed")

    def close(self) -> None:
        """Forget every table; each closes when its last user drops it."""
        with self._lock:
            self._closed = True
            keys = list(self._map)
            self._map.clear()
        if self._shared is not None:
            for key in keys:
                self._shared.forget(self, key)


class SharedTables:
    """One budget of open tables for several ``TableCache`` s (a region
    server's regions): at most ``capacity`` tables across all of them, the
    least recently used forgotten first, whichever store's it is.  An open
    table holds no descriptor (it is mapped: lsm/fs.py) but a mapping and
    its parsed index; this bounds both for the whole process.  Recency is
    that of ``TableCache.get`` (a point read's lock-free ``peek`` does not
    count).  Thread-safe; never calls a cache while holding its own lock."""

    def __init__(self, capacity: int):
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise ValueError(f"capacity must be an int >= 1, got {capacity!r}")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._lru = OrderedDict()           # (id(cache), key) -> cache

    def add(self, cache: TableCache, key) -> None:
        evicted = []
        with self._lock:
            self._lru[(id(cache), key)] = cache
            self._lru.move_to_end((id(cache), key))
            while len(self._lru) > self.capacity:
                (_id, k), c = self._lru.popitem(last=False)
                evicted.append((c, k))
        for c, k in evicted:
            with c._lock:
                c._map.pop(k, None)

    def touch(self, cache: TableCache, key) -> None:
        """Mark a hit (lock-free, as ``TableCache.get``'s; KeyError if gone)."""
        self._lru.move_to_end((id(cache), key))

    def forget(self, cache: TableCache, key) -> None:
        with self._lock:
            self._lru.pop((id(cache), key), None)

    def __len__(self) -> int:
        return len(self._lru)
