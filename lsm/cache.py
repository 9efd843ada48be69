"""Caches of the read path: parsed blocks (bounded bytes) and open tables
(bounded file descriptors).  Both are LRU and thread-safe.

``BlockCache`` keys are ``(owner, block_offset)`` where ``owner`` is a
per-open-table id (``Table`` takes one from ``new_owner_id()``), so a file
reopened, or two tables with the same name, never share stale blocks.
Values are immutable parsed blocks, shared freely between threads.

``TableCache`` keeps at most ``capacity`` tables by key; an evicted table is
forgotten, not closed, and closes when its last user drops it.
"""
import itertools
import threading
from collections import OrderedDict

from .errors import ClosedError

__all__ = ["BlockCache", "TableCache", "new_owner_id"]

_owner_ids = itertools.count(1)


def new_owner_id() -> int:
    """A process-unique id to prefix one table's block-cache keys."""
    return next(_owner_ids)


class BlockCache:
    """LRU by charge (bytes).  ``capacity_bytes == 0`` caches nothing.

    An entry bigger than the whole capacity is not inserted.  Thread-safe:
    one lock, held only for dictionary operations.
    """

    def __init__(self, capacity_bytes: int):
        if not isinstance(capacity_bytes, int) or capacity_bytes < 0:
            raise ValueError(f"capacity_bytes must be an int >= 0, got {capacity_bytes!r}")
        self.capacity = capacity_bytes
        self._lock = threading.Lock()
        self._map = OrderedDict()          # key -> (value, charge)
        self._by_owner = {}                # owner -> set of keys
        self.usage = 0
        self.hits = 0
        self.misses = 0

    def get(self, key):
        """The cached value or None; counts a hit or a miss.

        Lock-free: ``OrderedDict.get`` and ``move_to_end`` are each atomic
        under the GIL; an entry evicted between the two is simply a hit on a
        value that is still valid (blocks are immutable).  The counters are
        approximate under concurrency.
        """
        entry = self._map.get(key)
        if entry is None:
            self.misses += 1
            return None
        try:
            self._map.move_to_end(key)
        except KeyError:
            pass
        self.hits += 1
        return entry[0]

    def insert(self, key, value, charge: int) -> None:
        """Cache ``value`` under ``key`` (replacing any), evicting the least
        recently used entries until usage fits the capacity."""
        if charge < 0:
            raise ValueError(f"charge must be >= 0, got {charge}")
        if charge > self.capacity:
            return
        with self._lock:
            old = self._map.pop(key, None)
            if old is not None:
                self.usage -= old[1]
            self._map[key] = (value, charge)
            self._by_owner.setdefault(key[0], set()).add(key)
            self.usage += charge
            while self.usage > self.capacity:
                k, (_, c) = self._map.popitem(last=False)
                self.usage -= c
                self._forget_owner_key(k)

    def _forget_owner_key(self, key) -> None:
        keys = self._by_owner.get(key[0])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_owner[key[0]]

    def erase(self, key) -> None:
        with self._lock:
            old = self._map.pop(key, None)
            if old is not None:
                self.usage -= old[1]
                self._forget_owner_key(key)

    def erase_prefix(self, owner) -> int:
        """Drop every entry whose key starts with ``owner`` (a closed table's
        blocks); returns how many were dropped."""
        with self._lock:
            keys = self._by_owner.pop(owner, ())
            for k in keys:
                self.usage -= self._map.pop(k)[1]
            return len(keys)

    def __len__(self) -> int:
        return len(self._map)

    def stats(self) -> dict:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "usage": self.usage,
                    "capacity": self.capacity, "entries": len(self._map)}


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
    refreshes).  It is the one map of open tables; there is no second cache.
    Thread-safe.
    """

    def __init__(self, open_fn, capacity: int):
        if not callable(open_fn):
            raise TypeError("open_fn must be callable")
        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be an int >= 1, got {capacity!r}")
        self._open_fn = open_fn
        self.capacity = capacity
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
                    self._map.popitem(last=False)
        if loser is not None:
            loser.close()
        if closed:
            self._check_open()
        return table

    def evict(self, key) -> None:
        """Forget ``key``'s table (e.g. its file was deleted)."""
        with self._lock:
            self._map.pop(key, None)

    def __len__(self) -> int:
        return len(self._map)

    def _check_open(self):
        if self._closed:
            raise ClosedError("table cache is closed")

    def close(self) -> None:
        """Forget every table; each closes when its last user drops it."""
        with self._lock:
            self._closed = True
            self._map.clear()
