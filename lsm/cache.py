"""Caches of the read path: parsed blocks (bounded bytes) and open tables
(bounded file descriptors).  Both are LRU and thread-safe.

``BlockCache`` keys are ``(owner, block_offset)`` where ``owner`` is a
per-open-table id (``Table`` takes one from ``new_owner_id()``), so a file
reopened, or two tables with the same name, never share stale blocks.
Values are immutable parsed blocks, shared freely between threads.

``TableCache`` keeps at most ``capacity`` tables open.  An evicted table is
closed only once nobody still uses it: a caller that keeps a table past
the next cache operation (an iterator, say) holds it with the context
manager ``cache.using(path)``; ``get(path)`` is for use-and-forget lookups.
"""
import itertools
import threading
from collections import OrderedDict
from contextlib import contextmanager

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
    """LRU of open tables by path, at most ``capacity`` open at once.

    ``open_fn(path) -> Table`` opens one; it runs outside the lock, so a slow
    open never blocks hits on other tables (two threads missing the same path
    at once may both open it; the loser's table is closed).  Tables in use
    (``using()``) are closed only after their last user is done, so eviction
    never closes a table under a reader.  Thread-safe.
    """

    def __init__(self, open_fn, capacity: int, close_on_evict: bool = True):
        # close_on_evict=False: an evicted table is only forgotten; its file
        # closes when the last reference (an iterator, a reader in flight)
        # goes.  The DB uses this so that long-lived iterators need no
        # using() bracket.
        self._close_on_evict = close_on_evict
        if not callable(open_fn):
            raise TypeError("open_fn must be callable")
        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be an int >= 1, got {capacity!r}")
        self._open_fn = open_fn
        self.capacity = capacity
        self._lock = threading.Lock()
        self._map = OrderedDict()          # path -> table
        self._users = {}                   # id(table) -> count of using() holders
        self._doomed = {}                  # id(table) -> table evicted while in use
        self._closed = False
        self.hits = 0
        self.misses = 0

    def get(self, path: str):
        """The open table for ``path``, opening it on a miss."""
        return self._get(path, False)

    def _hold(self, table, hold):
        if hold:
            self._users[id(table)] = self._users.get(id(table), 0) + 1
        return table

    def _get(self, path, hold):
        # ``hold`` registers the caller as a user under the same lock as the
        # lookup, so that no eviction can close the table in between.
        if not hold:
            # Lock-free hit (the point-read path): dict get and move_to_end
            # are each atomic under the GIL, and with close_on_evict=False an
            # evicted table stays usable.
            t = self._map.get(path)
            if t is not None and not self._close_on_evict and not self._closed:
                try:
                    self._map.move_to_end(path)
                except KeyError:
                    pass
                self.hits += 1
                return t
        with self._lock:
            self._check_open()
            t = self._map.get(path)
            if t is not None:
                self._map.move_to_end(path)
                self.hits += 1
                return self._hold(t, hold)
            self.misses += 1
        table = self._open_fn(path)
        to_close = []
        with self._lock:
            closed = self._closed
            if closed:
                to_close.append(table)
            else:
                t = self._map.get(path)
                if t is not None:           # another thread won the race
                    to_close.append(table)
                    table = t
                else:
                    self._map[path] = table
                self._hold(table, hold)
                while len(self._map) > self.capacity:
                    _, old = self._map.popitem(last=False)
                    to_close.extend(self._retire(old))
        for t in to_close:
            t.close()
        if closed:
            self._check_open()
        return table

    @contextmanager
    def using(self, path: str):
        """``with cache.using(path) as table:`` keeps the table open inside
        the block even if it is evicted meanwhile."""
        table = self._get(path, True)
        try:
            yield table
        finally:
            close_it = False
            with self._lock:
                n = self._users[id(table)] - 1
                if n:
                    self._users[id(table)] = n
                else:
                    del self._users[id(table)]
                    close_it = self._doomed.pop(id(table), None) is not None
            if close_it:
                table.close()

    def _retire(self, table):
        """Called under the lock: the tables to close now (none if in use)."""
        if not self._close_on_evict:
            return []
        if self._users.get(id(table)):
            self._doomed[id(table)] = table
            return []
        return [table]

    def evict(self, path: str) -> None:
        """Close and forget ``path``'s table (e.g. the file was deleted)."""
        with self._lock:
            t = self._map.pop(path, None)
            to_close = self._retire(t) if t is not None else []
        for t in to_close:
            t.close()

    def __len__(self) -> int:
        return len(self._map)

    def _check_open(self):
        if self._closed:
            raise ClosedError("table cache is closed")

    def close(self) -> None:
        """Close every table not in use; tables in use close when released."""
        with self._lock:
            self._closed = True
            tables = list(self._map.values())
            self._map.clear()
            to_close = [t for tab in tables for t in self._retire(tab)]
        for t in to_close:
            t.close()
