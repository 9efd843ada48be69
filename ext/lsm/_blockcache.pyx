# cython: language_level=3
"""The block cache in C (``lsm.cache.BlockCache``; lsm/cache.py's module doc
says what it caches and how keys are made).

Replacement is CLOCK (second chance), LevelDB's LRU in effect at a fraction
of the cost of a hit: a hit is one dict lookup and one flag set, with no
reordering.  Entries sit in a ring (a deque) in insertion order; when the
usage exceeds the capacity the hand takes the oldest entry: referenced since
it last passed, it gets a second chance (flag cleared, back to the end),
otherwise it is evicted.  Erased entries are marked dead and their values
dropped at once; their shells leave the ring when the hand reaches them, or
all together when they outnumber the live ones.

Keys are ``(owner, offset)`` pairs.  Inside, a pair of an owner below 2**23
and an offset below 2**40 (every table of a process that opened fewer than
8 million) is the one int ``owner << 40 | offset``: a dict probe then hashes
and compares one int, not a tuple of two (what that saves a probe:
docs/performance.md, 2026-11-25, "three cache-miss cuts").  Other pairs stay
tuples.

Thread-safety: ``lookup``/``get`` take no lock: they run C code only (a dict
lookup of an int key, a flag, a counter), atomic under the GIL;
a value evicted meanwhile is still valid (blocks are immutable).  Changes
(``insert``, ``erase``, ``erase_prefix``) hold ``_lock``.  The counters are
exact under the GIL.

Reads without the GIL.  ``lsm._read`` searches a table's blocks with the GIL
released, through the blocks' slots (``_Slot.block``, a borrowed pointer),
or in place in a table file's mapping (``lsm._mapped_blocks.MappedBlocks``).
Another thread may meanwhile drop a slot's block, replace a reader's slot
or close a table, which would free what the search reads.  So nothing such a search can reach
is freed while one is in flight: a search registers with ``read_enter()``
before it releases the GIL and leaves with ``read_exit()`` after it takes
it back; what is dropped meanwhile is handed to ``bury()``, which keeps it
until every search that could have seen it has left.  Two epochs do it
(the scheme of epoch-based reclamation): searches register in the current
one; what is buried goes to the current one's grave; once the other epoch
has no search left, its grave is emptied and, if the current grave holds
anything, the epochs swap; once no search at all is in flight, both graves
are emptied.  An object buried in epoch E is freed only after
the epoch before E drained (at the swap away from E, which comes after the
burial) and E drained: every search that started before the burial.  All
three run with the GIL held, so plain counters suffice.
"""
import threading
from collections import deque

cimport cython
from cpython.dict cimport PyDict_GetItem
from cpython.long cimport PyLong_FromUnsignedLongLong
from cpython.object cimport PyObject
from libc.stdint cimport uint64_t

__all__ = ["BlockCache"]


DEF OFFSET_BITS = 40
DEF OWNER_LIMIT = 1 << 23


# The reclamation epochs (module doc, "Reads without the GIL").
cdef Py_ssize_t _active[2]
cdef int _epoch = 0
cdef list _graves = [[], []]
_active[0] = 0
_active[1] = 0


cdef int read_enter() noexcept:
    """Register a search about to release the GIL; returns its epoch."""
    _active[_epoch] += 1
    return _epoch


cdef void read_exit(int epoch) noexcept:
    """The search of ``epoch`` holds the GIL again and reads nothing more."""
    _active[epoch] -= 1
    if _active[0] == 0 and _active[1] == 0:
        # No search in flight: nothing buried can be seen any more.
        if <list>_graves[0]:
            _graves[0] = []
        if <list>_graves[1]:
            _graves[1] = []
    elif _active[epoch] == 0:
        _reclaim()


cdef int bury(object o) except -1:
    """Keep ``o`` (dropped from a slot) until no search that could see it is in flight."""
    if _active[0] == 0 and _active[1] == 0:
        return 0             # no search in flight: it may go now
    (<list>_graves[_epoch]).append(o)
    _reclaim()
    return 0


cdef void _reclaim() noexcept:
    global _epoch
    cdef int other = 1 - _epoch
    if _active[other] != 0:
        return
    if <list>_graves[other]:
        _graves[other] = []
    if <list>_graves[_epoch]:
        _epoch = other


def reclaim_stats():
    """``(searches in flight per epoch, objects kept per epoch, current
    epoch)``, for tests."""
    return ((_active[0], _active[1]), (len(_graves[0]), len(_graves[1])), _epoch)


cdef inline object _key(object owner, uint64_t offset):
    """The dict key of ``(owner, offset)`` (module doc)."""
    cdef Py_ssize_t o
    if type(owner) is int and offset < (<uint64_t>1 << OFFSET_BITS):
        o = owner
        if 0 <= o < OWNER_LIMIT:
            return PyLong_FromUnsignedLongLong((<uint64_t>o << OFFSET_BITS) | offset)
    return (owner, offset)


@cython.no_gc
cdef class _Slot:
    """One entry (declared in _blockcache.pxd).  A table's PointReader keeps
    the slots of its blocks to skip the dict on a hit; an evicted or erased
    slot has ``value`` None."""


cdef class BlockCache:
    """LRU-like by charge (bytes), CLOCK replacement (module doc).
    ``capacity_bytes == 0`` caches nothing; an entry bigger than the whole
    capacity is not inserted.  Thread-safe."""

    def __init__(self, capacity_bytes):
        if type(capacity_bytes) is not int or capacity_bytes < 0:
            raise ValueError(f"capacity_bytes must be an int >= 0, got {capacity_bytes!r}")
        self.capacity = capacity_bytes
        self.usage = 0
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._acquire, self._release = self._lock.acquire, self._lock.release
        self._map = {}
        self._set_ring(deque())
        self._dead = 0
        self._by_owner = {}

    cdef void _set_ring(self, object ring) except *:
        self._ring = ring
        self._append, self._popleft = ring.append, ring.popleft

    cdef object lookup(self, object owner, uint64_t offset):
        """The block cached for ``(owner, offset)``, or None (counts a hit or a miss)."""
        return self._get(_key(owner, offset))

    cdef _Slot slot_of(self, object owner, uint64_t offset):
        """The live slot of ``(owner, offset)``, or None (counts nothing)."""
        cdef PyObject* p = PyDict_GetItem(self._map, _key(owner, offset))
        return <_Slot>p if p != NULL else None

    cdef object _get(self, object key):
        cdef PyObject* p = PyDict_GetItem(self._map, key)
        if p == NULL:
            self.misses += 1
            return None
        (<_Slot>p).referenced = True
        self.hits += 1
        return (<_Slot>p).value

    def get(self, key):
        """The value cached for ``key`` = ``(owner, offset)``, or None; counts
        a hit or a miss."""
        return self._get(self._key_of(key))

    cdef object _key_of(self, object key):
        owner, offset = key
        if type(offset) is int and offset >= 0:
            return _key(owner, offset)
        return (owner, offset)

    def insert(self, key, value, Py_ssize_t charge):
        """Cache ``value`` under ``key`` (replacing any), evicting entries
        until usage fits the capacity."""
        if charge < 0:
            raise ValueError(f"charge must be >= 0, got {charge}")
        owner, offset = key
        if type(offset) is int and 0 <= offset < (<uint64_t>1 << 63):
            self._insert(self._key_of(key), owner, offset, value, charge)
        else:
            self._insert(self._key_of(key), owner, 0, value, charge)

    cdef int put(self, object owner, uint64_t offset, object value, Py_ssize_t charge) except -1:
        """``insert((owner, offset), value, charge)`` from C (a table's
        point read caching the block it read; ``charge`` >= 0)."""
        if offset < (<uint64_t>1 << 63):
            return self._insert(_key(owner, offset), owner, offset, value, charge)
        return self._insert(_key(owner, offset), owner, 0, value, charge)

    cdef int _insert(self, object key, object owner, uint64_t offset, object value,
                     Py_ssize_t charge) except -1:
        """``insert``'s work: ``key`` the dict key of ``(owner, offset)``,
        ``offset`` the slot's (0 when the key's is not a table offset)."""
        cdef _Slot s
        if charge > self.capacity:
            return 0
        s = _Slot.__new__(_Slot)
        s.key, s.owner, s.value, s.charge = key, owner, value, charge
        s.block = <void*>value
        s.offset = offset
        cdef set keys
        self._acquire()
        try:
            self._drop(key)
            self._map[key] = s
            self._append(s)
            keys = self._by_owner.get(owner)
            if keys is None:
                keys = self._by_owner[owner] = set()
            keys.add(key)
            self.usage += charge
            while self.usage > self.capacity:
                s = self._popleft()
                if s.dead:
                    self._dead -= 1
                elif s.referenced:
                    s.referenced = False
                    self._append(s)
                else:
                    self._drop(s.key)
                    self._dead -= 1      # popped already: not a shell in the ring
        finally:
            self._release()
        return 0

    cdef void _drop(self, object key) except *:
        """Forget the entry of dict key ``key`` (caller holds ``_lock``); its
        shell stays in the ring."""
        cdef _Slot s = self._map.pop(key, None)
        if s is None:
            return
        self.usage -= s.charge
        s.dead = True
        s.block = NULL
        bury(s.value)
        s.value = None
        self._dead += 1
        cdef set keys = self._by_owner.get(s.owner)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_owner[s.owner]

    cdef void _compact(self) except *:
        """Drop the dead shells from the ring once they outnumber the live entries."""
        if self._dead > len(self._map):
            self._set_ring(deque([s for s in self._ring if not (<_Slot>s).dead]))
            self._dead = 0

    def erase(self, key) -> None:
        key = self._key_of(key)
        with self._lock:
            self._drop(key)
            self._compact()

    def erase_prefix(self, owner) -> int:
        """Drop every entry whose key starts with ``owner`` (a closed table's
        blocks); returns how many were dropped."""
        with self._lock:
            keys = list(self._by_owner.get(owner, ()))
            for k in keys:
                self._drop(k)
            self._compact()
            return len(keys)

    def __len__(self) -> int:
        return len(self._map)

    def stats(self) -> dict:
        return {"hits": self.hits, "misses": self.misses, "usage": self.usage,
                "capacity": self.capacity, "entries": len(self._map)}

    def audit(self) -> dict:
        """Internal consistency, for tests: ``{"usage": sum of live charges,
        "owner_keys": keys indexed by owner, "ring_live": live entries in
        the ring, "ring_dead": dead shells}``."""
        with self._lock:
            live = [s for s in self._ring if not (<_Slot>s).dead]
            return {"usage": sum((<_Slot>s).charge for s in self._map.values()),
                    "owner_keys": sum(len(v) for v in self._by_owner.values()),
                    "ring_live": len(live), "ring_dead": len(self._ring) - len(live),
                    "dead_count": self._dead}
