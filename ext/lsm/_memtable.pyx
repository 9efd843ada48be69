# cython: language_level=3
"""The memtable's C side (LevelDB's memtable.cc): the one owner of how a
key's versions are held, and the memtable's internal iterator.

Representation (lsm/memtable.py keeps the dict and the sorted keys): a dict
from user key to its newest ``Version`` (``seq``, ``kind``, ``value``), each
Version linking to the one before it (``prev``; None for the oldest).  A
Version is not a GC object at all (``cython.no_gc``: it holds only bytes
and an older Version, so it can be in no cycle): a write allocates nothing
the cyclic GC counts or walks, and the dict, holding only bytes and
Versions, stays untracked, so full collections skip the memtable whatever
its size (what the GC cost before: docs/performance.md, 2026-11-25, "A
memtable version is not a GC object").
With a ``PrefixExtractor``, new keys are also filed in a C hash table by
prefix (``_index_key``; ``visible_range`` reads a prefix of one key from
it), and a prefix's one key's slot holds its newest Version too, which
knows its slot (``slotp``) and is replaced by the next write of the key
there without a probe (``_record``), so a row read finds it without a
probe of the dict (``prefix_one``).  Only this module looks inside:
``add_version``, ``add_entry``, ``add_entries``, ``get_version`` and
``MemTableIterator``; ``add_entry`` and ``add_entries`` also keep the
memtable's pending keys and charge (``MemTable.add`` and ``add_all`` are
them, and so is the DB's write path, lsm/_write.pyx).

Thread-safety: one writer (the DB's write lock) and any number of readers;
replacing a dict value and appending to the pending list are atomic under the GIL.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_Next, PyDict_SetDefault
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_REFCNT, PyObject
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp

from lsm._keys cimport cmp_user, ikey_of, lower_bound as _lower_bound, pack_tag, tag_of, user_of

import threading
from bisect import bisect_left as _bisect_left, bisect_right as _bisect_right

from sortedcontainers import SortedList

cdef enum:
    FIRST_CHUNK = 8     # keys loaded by a seek (a row read needs a few)
    CHUNK = 128         # ... doubling up to this many on each later load


# Up to 2**18 freed Versions are kept for reuse (Cython's freelist, under the
# GIL): a flushed memtable's Versions become the next memtable's, without
# pymalloc freeing their arenas and the writer faulting fresh pages in (a
# 189k-key insert in 1,000-op batches: 110 -> 75-85 ns a key).  At most 12 MB.
@cython.final
@cython.no_gc
@cython.freelist(262144)
cdef class Version:
    """One version of a key in a memtable: its sequence, kind and value, and
    the key's version before it (``prev``, None for the oldest)."""

    def __repr__(self):
        return f"Version({self.seq}, {self.kind}, {self.value!r})"

    def __eq__(self, other):
        """Equal versions, and equal chains before them (walked, not recursed)."""
        cdef Version a = self, b
        if type(other) is not Version:
            return False
        b = <Version>other
        while a is not None and b is not None:
            if a is b:
                return True
            if a.seq != b.seq or a.kind != b.kind or a.value != b.value:
                return False
            a, b = a.prev, b.prev
        return a is None and b is None

    __hash__ = None

    def chain(self):
        """This version and the ones before it, oldest first."""
        return _oldest_first(self)

    def __dealloc__(self):
        # Free the chain behind this version iteratively: left to the fields'
        # own release, a chain of a key written a million times would free
        # each version from inside the next one's dealloc, a C recursion
        # that overflows the stack.  (No trashcan: a Version is no GC
        # object.)  Stop at a version someone else still holds.
        cdef Version p = self.prev
        cdef Version older
        self.prev = None
        while p is not None and Py_REFCNT(p) == 1:   # held here only
            older = p.prev
            p.prev = None
            p = older        # frees the version just unlinked: its prev is None
            older = None     # (p must be held once, for the next test)


cdef inline Version _version(uint64_t seq, int kind, bytes value, Version prev):
    cdef Version v = Version.__new__(Version)
    v.seq, v.kind, v.value, v.prev, v.slotp = seq, kind, value, prev, 0
    return v


cdef list _oldest_first(Version v):
    """The chain from ``v`` back, oldest first."""
    cdef list out = []
    while v is not None:
        out.append(v)
        v = v.prev
    out.reverse()
    return out


# -- the prefix index (RocksDB's prefix extractor and hashed memtable) --------
cdef class PrefixExtractor:
    """What a key's prefix is, for the memtable's prefix index
    (``Options.prefix_extractor``; RocksDB's ``SliceTransform``).

    A C function gives the length of a key's prefix, or -1 when the key has
    none.  The contract, which makes a prefix's keys one run in key order:
    for keys ``a <= k <= b``, ``len(a) == n == len(b)`` of their prefixes
    and ``a[:n] == b[:n]`` imply that ``k``'s prefix is ``a[:n]`` too.
    ``fixed_prefix(n)`` is one (any key of at least ``n`` bytes); other
    modules make theirs in C (regions.tablestore: a row key's, _rowcodec).
    ``prefix_len(key)`` calls the function (tests check it against twins)."""

    def __init__(self):
        raise TypeError("PrefixExtractor is made by fixed_prefix() or in C")

    def prefix_len(self, key):
        """The length of ``key``'s prefix, or -1: it has none."""
        if type(key) is not bytes:
            raise TypeError(f"key must be bytes, got {type(key).__name__}")
        return self.fn(<const unsigned char*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), self.arg)

    def __repr__(self):
        return f"<PrefixExtractor {self.name}>"


cdef Py_ssize_t _fixed_len(const unsigned char* key, Py_ssize_t n, Py_ssize_t arg) noexcept nogil:
    return arg if n >= arg else -1


def fixed_prefix(Py_ssize_t length):
    """The extractor whose prefix is a key's first ``length`` bytes (keys
    shorter have none; RocksDB's ``NewFixedPrefixTransform``)."""
    cdef PrefixExtractor pe
    if length < 1:
        raise ValueError(f"a fixed prefix's length must be >= 1, got {length}")
    pe = PrefixExtractor.__new__(PrefixExtractor)
    pe.fn, pe.arg, pe.name = _fixed_len, length, f"fixed:{length}"
    return pe


cdef enum:
    FIRST_SLOTS = 64    # the prefix table's first size (a power of two)

cdef extern from *:
    """
    #define LSM_MULTI ((uint32_t)0x80000000u)
    """
    # In Slot.plen: more than one key has the slot's prefix and hash.
    const uint32_t MULTI "LSM_MULTI"


cdef inline uint32_t _hash(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """FNV-1a of p[:n], its bits mixed (murmur3's finalizer), folded to 32."""
    cdef uint64_t h = 0xcbf29ce484222325ULL
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ p[i]) * 0x100000001b3ULL
    h ^= h >> 33
    h *= 0xff51afd7ed558ccdULL
    h ^= h >> 33
    return <uint32_t>h


cdef Slot* _find(Slot* slots, Py_ssize_t nslots, uint32_t h, uint32_t plen) noexcept:
    """The slot of the prefixes of hash ``h`` and length ``plen``, or the
    empty slot where it would go (open addressing, linear probing; never
    full: see _grow).  A slot is found by the hash and length alone, without
    reading a key (a cache miss): prefixes whose hashes collide share a
    slot, which is then MULTI, as a prefix of several keys is."""
    cdef size_t mask = <size_t>nslots - 1, i = <size_t>h & mask
    while slots[i].key != NULL and (slots[i].hash != h or (slots[i].plen & ~MULTI) != plen):
        i = (i + 1) & mask
    return &slots[i]


cdef int _grow(MemTable mem) except -1:
    """Double the prefix table (or make it), keeping it at most 3/4 full; its
    bytes are charged to the memtable (``approximate_bytes``)."""
    cdef Py_ssize_t n = mem._nslots * 2 if mem._nslots else FIRST_SLOTS, i
    cdef Slot* slots = <Slot*>calloc(n, sizeof(Slot))
    cdef size_t mask = <size_t>n - 1, j
    if slots == NULL:
        raise MemoryError()
    for i in range(mem._nslots):
        if mem._slots[i].key != NULL:
            j = <size_t>mem._slots[i].hash & mask
            while slots[j].key != NULL:
                j = (j + 1) & mask
            slots[j] = mem._slots[i]
            if slots[j].version != NULL:
                (<Version>slots[j].version).slotp = <uint32_t>(j + 1)
    free(mem._slots)
    mem.approximate_bytes += (n - mem._nslots) * <Py_ssize_t>sizeof(Slot)   # charged as entries are
    mem._slots, mem._nslots = slots, n
    return 0


cdef int _index_key(MemTable mem, PrefixExtractor pe, bytes key, Version v) except -1:
    """File the new ``key``, whose newest Version is ``v``, in the memtable's
    prefix table: the first key of a prefix is kept in its slot with ``v``;
    a second one marks the slot MULTI (its prefix is read through the
    sorted keys).  Runs no Python code and allocates no Python object (see
    ``visible_range``)."""
    cdef const unsigned char* kp = <const unsigned char*>PyBytes_AS_STRING(key)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(key), p
    cdef uint32_t h
    cdef Slot* slot
    p = pe.fn(kp, n, pe.arg)
    if p < 0 or p > n or p >= <Py_ssize_t>MULTI:
        return 0
    if (mem._nused + 1) * 4 > mem._nslots * 3:
        _grow(mem)
    h = _hash(kp, p)
    slot = _find(mem._slots, mem._nslots, h, <uint32_t>p)
    if slot.key == NULL:
        Py_INCREF(key)
        Py_INCREF(v)
        slot.hash, slot.plen, slot.key, slot.version = h, <uint32_t>p, <PyObject*>key, <PyObject*>v
        v.slotp = <uint32_t>(slot - mem._slots) + 1
        mem._nused += 1
    elif not slot.plen & MULTI:
        slot.plen |= MULTI
        _unslot(slot)
    return 0


cdef inline void _unslot(Slot* slot) noexcept:
    """The slot no longer holds a Version."""
    cdef PyObject* old = slot.version
    if old != NULL:
        (<Version>old).slotp = 0
        slot.version = NULL
        Py_DECREF(<object>old)


cdef inline void _refile(MemTable mem, Version old, Version v) noexcept:
    """``v``, the newest Version of a key whose newest was ``old``, in the
    slot that held ``old`` (if one did: the key is its prefix's one key).
    The slot is found from ``old`` (its ``slotp``), with no hash or probe:
    a write of a key already there costs one store to its slot."""
    cdef Slot* slot
    if old.slotp == 0:
        return
    slot = &mem._slots[old.slotp - 1]
    Py_INCREF(v)
    slot.version = <PyObject*>v
    v.slotp, old.slotp = old.slotp, 0
    Py_DECREF(old)                   # held by v.prev too


cdef inline int _record(MemTable mem, dict versions, list pending, bytes key, uint64_t seq,
                        int kind, bytes value) except -1:
    """``add_version`` in ``mem`` (``versions`` its dict, ``pending`` its
    pending keys): a new key also appended to the pending keys, and with a
    prefix extractor filed by prefix, an existing key's newest Version kept
    in its slot."""
    cdef Version v = _version(seq, kind, value, None)
    cdef PyObject* vs = PyDict_SetDefault(versions, key, v)
    if vs == <PyObject*>v:
        pending.append(key)          # list.append is atomic under the GIL
        if mem.prefix_extractor is not None:
            _index_key(mem, mem.prefix_extractor, key, v)
        return 1
    v.prev = <Version>vs             # linked before a reader can find it
    versions[key] = v
    _refile(mem, v.prev, v)
    return 0


cdef void _free_slots(Slot* slots, Py_ssize_t nslots) noexcept:
    cdef Py_ssize_t i
    for i in range(nslots):
        if slots[i].key != NULL:
            Py_DECREF(<object>slots[i].key)
            _unslot(&slots[i])
    free(slots)


cdef int prefix_one(MemTable mem, bytes lo, bytes hi, uint64_t seq, PyObject** key,
                    PyObject** version) noexcept:
    """The prefix table's answer for ``[lo, hi)``: -2 when it cannot answer
    (no table, ``[lo, hi)`` not within one prefix, or the prefix has more
    than one key), 0 when no key of the memtable lies in the range, 1 when
    one does: its key in ``*key`` and its newest Version with sequence <=
    ``seq`` in ``*version`` (NULL: none).  Both borrowed, held by the
    memtable: valid while the caller holds the GIL and runs no Python code.
    Allocates nothing (a short read of a row: ``lsm._read``)."""
    cdef PrefixExtractor pe = mem.prefix_extractor
    cdef const unsigned char* lp = <const unsigned char*>PyBytes_AS_STRING(lo)
    cdef const unsigned char* hp = <const unsigned char*>PyBytes_AS_STRING(hi)
    cdef const unsigned char* kp
    cdef Py_ssize_t ln = PyBytes_GET_SIZE(lo), hn = PyBytes_GET_SIZE(hi), p, kn
    cdef Slot* slot
    cdef PyObject* v
    if pe is None:
        return -2
    p = pe.fn(lp, ln, pe.arg)
    # Every key of [lo, hi) has the prefix lo[:p] when lo and hi both have it
    # (PrefixExtractor's contract).
    if (p < 0 or p > ln or p > hn or p >= <Py_ssize_t>MULTI or pe.fn(hp, hn, pe.arg) != p
            or memcmp(lp, hp, p) != 0):
        return -2
    if mem._nslots == 0:
        return 0
    slot = _find(mem._slots, mem._nslots, _hash(lp, p), <uint32_t>p)
    if slot.key == NULL:
        return 0                        # no key has the prefix
    if slot.plen & MULTI:
        return -2
    kp = <const unsigned char*>PyBytes_AS_STRING(<object>slot.key)   # the prefix's one key
    kn = PyBytes_GET_SIZE(<object>slot.key)                          # (its hash's, at least)
    if cmp_user(kp, kn, lp, ln) < 0 or cmp_user(kp, kn, hp, hn) >= 0:
        return 0
    key[0] = slot.key
    v = slot.version
    while v != NULL and (<Version>v).seq > seq:
        v = <PyObject*>(<Version>v).prev if (<Version>v).prev is not None else NULL
    version[0] = v
    return 1


cdef void prefix_prefetch(MemTable mem, bytes lo, bint key) noexcept:
    """Ask the CPU for what ``prefix_one`` of a range from ``lo`` will read
    first: the slot of ``lo``'s prefix, or (``key``) the key that slot
    holds.  A batch of short reads calls it for all its ranges, the slots
    first, then the keys, before reading any: their cache misses overlap
    instead of following one another (``lsm._read``, ``_scan``)."""
    cdef PrefixExtractor pe = mem.prefix_extractor
    cdef const unsigned char* lp = <const unsigned char*>PyBytes_AS_STRING(lo)
    cdef Py_ssize_t p
    cdef Slot* slot
    if pe is None or mem._nslots == 0:
        return
    p = pe.fn(lp, PyBytes_GET_SIZE(lo), pe.arg)
    if p < 0 or p > PyBytes_GET_SIZE(lo):
        return
    slot = &mem._slots[<size_t>_hash(lp, p) & (<size_t>mem._nslots - 1)]
    if not key:
        lsm_prefetch(slot)
    elif slot.key != NULL:
        lsm_prefetch(slot.key)
        lsm_prefetch(slot.version)


cdef int _prefix_walk(MemTable mem, bytes lo, bytes hi, uint64_t seq, list hits,
                      Py_ssize_t cap) except -3:
    """``_visible_walk`` through the prefix table (``prefix_one``): -2 when
    it cannot answer, else as ``_visible_walk``."""
    cdef PyObject* k = NULL
    cdef PyObject* v = NULL
    cdef int rc = prefix_one(mem, lo, hi, seq, &k, &v)
    if rc <= 0:
        return rc
    if cap == 0:
        return -1
    if v != NULL:
        hits.append(<object>k)
        hits.append(<object>v)
    return 0


cpdef bint add_version(dict versions, bytes key, uint64_t seq, int kind, bytes value):
    """Record one version of ``key`` in ``versions``, a dict that is no
    MemTable's (a memtable's writes are ``_record``'s, which keeps its
    prefix table); True when the key is new.  A new key
    costs one dict lookup (``setdefault``: the lookup of a large dict is a
    cache miss, most of a write's memtable time); a key already there, a
    second one to put the new version in front of its chain."""
    cdef Version v = _version(seq, kind, value, None)
    cdef PyObject* vs = PyDict_SetDefault(versions, key, v)
    if vs == <PyObject*>v:
        return True
    v.prev = <Version>vs           # linked before a reader can find it
    versions[key] = v
    return False


cpdef add_entry(MemTable mem, uint64_t seq, int kind, bytes key, bytes value):
    """``MemTable.add``: one write recorded (a new key also appended to the
    memtable's pending keys) and charged (key + value + ``overhead``
    bytes).  Caller holds the DB's write lock."""
    _record(mem, mem.versions, mem._pending, key, seq, kind, value)
    mem.approximate_bytes += PyBytes_GET_SIZE(key) + PyBytes_GET_SIZE(value) + mem.overhead
    mem.entries += 1


cpdef add_entries(MemTable mem, uint64_t seq, list ops):
    """``MemTable.add_all``: ``add_entry`` of each (kind, key, value) of
    ``ops`` at sequences ``seq``, ``seq + 1``, ...  Runs no Python code, so
    no other thread sees the batch half-added.  Caller holds the DB's write
    lock."""
    cdef Py_ssize_t i, total = 0, overhead = mem.overhead
    cdef dict versions = mem.versions
    cdef list pending = mem._pending
    cdef tuple op
    cdef bytes key, value
    for i in range(len(ops)):
        op = <tuple?>ops[i]
        key = <bytes?>op[1]
        value = <bytes?>op[2]
        _record(mem, versions, pending, key, seq + i, <int>op[0], value)
        total += PyBytes_GET_SIZE(key) + PyBytes_GET_SIZE(value) + overhead
    mem.approximate_bytes += total
    mem.entries += len(ops)


cpdef Version get_version(dict versions, bytes key, uint64_t seq):
    """The newest Version of ``key`` with sequence <= ``seq``, or None."""
    cdef object vs = versions.get(key)
    cdef Version v
    if vs is None:
        return None
    v = <Version>vs
    while v is not None and v.seq > seq:
        v = v.prev
    return v


cpdef int visible_range(MemTable mem, bytes lo, bytes hi, uint64_t seq, list out,
                        Py_ssize_t cap) except -2:
    """Append to ``out`` ``(user key, tag, value)`` of the newest version with
    sequence <= ``seq`` of each user key of ``[lo, hi)`` in ``mem``,
    ascending.  Returns 0, or -1 (``out`` then holds a partial answer) when
    more than ``cap`` keys lie in the range."""
    cdef list hits = []
    cdef int rc
    cdef Py_ssize_t i
    cdef Version v
    # The prefix index answers without the sorted list when [lo, hi) lies
    # within one prefix: one dict lookup instead of two bisects.  Either walk
    # runs no Python code and allocates no GC-tracked object (so no
    # collection, no finalizer): under the GIL no other thread runs (no
    # write, and no merge can start) before it ends.
    rc = _prefix_walk(mem, lo, hi, seq, hits, cap)
    if rc == -2:
        if mem._pending or mem._merging:
            with mem.lock:
                if mem._pending:
                    mem._merge_pending()
                rc = _visible_walk(mem, lo, hi, seq, hits, cap)
        else:
            # Nothing to merge and no merge running (``_merging``).
            rc = _visible_walk(mem, lo, hi, seq, hits, cap)
    for i in range(0, len(hits), 2):
        v = <Version>hits[i + 1]
        out.append((hits[i], pack_tag(v.seq, v.kind), v.value))
    return rc


cdef int _visible_walk(MemTable mem, bytes lo, bytes hi, uint64_t seq, list hits,
                       Py_ssize_t cap) except -2:
    """``visible_range``'s walk, the pending keys merged: appends each key
    found and its visible Version to ``hits``."""
    cdef dict versions = mem.versions
    cdef list maxes, lists, sub
    cdef Py_ssize_t pos, idx, n, found = 0
    cdef object sl = mem._sorted
    cdef Version v
    # The keys from lo, walked in SortedList's own layout (see _chunk_after).
    maxes, lists = sl._maxes, sl._lists
    n = len(lists)
    pos = _lower_bound(maxes, lo)
    if pos == n:
        return 0
    sub = <list>lists[pos]
    idx = _lower_bound(sub, lo)
    while True:
        if idx == len(sub):
            pos += 1
            if pos == n:
                return 0
            sub = <list>lists[pos]
            idx = 0
        k = <bytes>sub[idx]
        if cmp_user(<const unsigned char*>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k),
                    <const unsigned char*>PyBytes_AS_STRING(hi), PyBytes_GET_SIZE(hi)) >= 0:
            return 0
        if found == cap:
            return -1
        found += 1
        idx += 1
        v = get_version(versions, k, seq)
        if v is not None:
            hits.append(k)
            hits.append(v)




cdef class MemTableIterator(InternalIterator):
    """Iterates a memtable: a SortedList of user keys and a dict mapping each
    user key to its versions (see the module doc for their representation).

    The memtable may be written concurrently: positions are re-found by key
    under ``lock`` whenever a new chunk of keys is needed, so a concurrent
    insert never makes the iterator skip or repeat a key.  Versions appended
    to a key after the iterator entered it are newer than any snapshot taken
    before, so they are not visited (``_vn`` is the count seen on entry).
    """
    cdef object _sorted      # SortedList of user keys
    cdef dict _versions
    cdef object _lock
    cdef list _chunk         # user keys, in iteration direction
    cdef Py_ssize_t _ci      # index into _chunk
    cdef list _vers          # versions of the current user key, oldest first, if more than one
    cdef Version _one        # ... or its only version (no list a key for most keys)
    cdef bint _valid
    cdef Py_ssize_t _vn      # how many versions the key had when entered
    cdef Py_ssize_t _vi      # current version index; newest first means _vi counts down
    cdef bint _forward
    cdef bytes _key          # cached internal key of the current entry
    cdef Py_ssize_t _want    # keys to load next (FIRST_CHUNK after a seek, doubling)

    def __init__(self, sorted_keys, dict versions, lock):
        self._sorted = sorted_keys
        self._versions = versions
        self._lock = lock
        self._chunk = []
        self._ci = 0
        self._vers = None
        self._one = None
        self._valid = False
        self._forward = True
        self._key = None
        self._want = FIRST_CHUNK

    cdef _load_forward(self, object after, bint inclusive):
        with self._lock:
            self._chunk = _chunk_after(self._sorted, after, inclusive, self._grow())
        self._ci = 0
        self._forward = True

    cdef _load_backward(self, object before, bint inclusive):
        with self._lock:
            self._chunk = _chunk_before(self._sorted, before, inclusive, self._grow())
        self._ci = 0
        self._forward = False

    cdef inline Py_ssize_t _grow(self):
        cdef Py_ssize_t n = self._want
        self._want = n * 2 if n < CHUNK else CHUNK
        return n

    cdef _enter_key(self, bint newest_first):
        """Make the chunk's current key current; position on a version."""
        cdef object v
        self._key = None
        if self._ci >= len(self._chunk):
            self._valid = False
            self._vers = self._one = None
            return
        v = self._versions[self._chunk[self._ci]]
        self._valid = True
        if (<Version>v).prev is None:
            self._one, self._vers, self._vn = <Version>v, None, 1
        else:
            self._one, self._vers = None, _oldest_first(<Version>v)
            self._vn = len(self._vers)
        self._vi = self._vn - 1 if newest_first else 0

    cdef inline Version _at(self, Py_ssize_t i):
        return self._one if self._vers is None else <Version>self._vers[i]

    cdef inline uint64_t _tag(self, Py_ssize_t i):
        cdef Version v = self._at(i)
        return pack_tag(v.seq, v.kind)

    cpdef bint valid(self):
        return self._valid

    cpdef seek_to_first(self):
        self._want = FIRST_CHUNK
        self._load_forward(None, True)
        self._enter_key(True)

    cpdef seek_to_last(self):
        self._want = FIRST_CHUNK
        self._load_backward(None, True)
        self._enter_key(False)

    cpdef seek(self, bytes ikey):
        self._want = FIRST_CHUNK
        cdef bytes uk = user_of(ikey)
        cdef uint64_t tag = tag_of(ikey)
        self._load_forward(uk, True)
        self._enter_key(True)
        if self._valid and self._chunk[self._ci] == uk:
            # skip versions newer than the target (tag order is descending)
            while self._vi >= 0 and self._tag(self._vi) > tag:
                self._vi -= 1
            if self._vi < 0:
                self._next_key()

    cpdef seek_for_prev(self, bytes ikey):
        self._want = FIRST_CHUNK
        cdef bytes uk = user_of(ikey)
        cdef uint64_t tag = tag_of(ikey)
        self._load_backward(uk, True)
        self._enter_key(False)
        if self._valid and self._chunk[self._ci] == uk:
            while self._vi < self._vn and self._tag(self._vi) < tag:
                self._vi += 1
            if self._vi >= self._vn:
                self._prev_key()

    cdef _next_key(self):
        cdef bytes uk = self._chunk[self._ci]
        if not self._forward:
            self._load_forward(uk, False)
        else:
            self._ci += 1
            if self._ci >= len(self._chunk):
                self._load_forward(uk, False)
        self._enter_key(True)

    cdef _prev_key(self):
        cdef bytes uk = self._chunk[self._ci]
        if self._forward:
            self._load_backward(uk, False)
        else:
            self._ci += 1
            if self._ci >= len(self._chunk):
                self._load_backward(uk, False)
        self._enter_key(False)

    cpdef next(self):
        if not self._valid:
            raise ValueError("next() on an invalid iterator")
        self._vi -= 1
        self._key = None
        if self._vi < 0:
            self._next_key()

    cpdef prev(self):
        if not self._valid:
            raise ValueError("prev() on an invalid iterator")
        self._vi += 1
        self._key = None
        if self._vi >= self._vn:
            self._prev_key()

    cpdef bytes key(self):
        if not self._valid:
            raise ValueError("key() on an invalid iterator")
        if self._key is None:
            self._key = ikey_of(<bytes>self._chunk[self._ci], self._tag(self._vi))
        return self._key

    cpdef bytes value(self):
        if not self._valid:
            raise ValueError("value() on an invalid iterator")
        return self._at(self._vi).value

    cdef int entry(self, RawEntry* e) except -1:
        cdef bytes uk
        cdef Version v
        if not self._valid:
            raise ValueError("entry() on an invalid iterator")
        uk = <bytes>self._chunk[self._ci]       # held by the chunk, the value by its Version
        v = self._at(self._vi)
        e.key, e.klen = <const unsigned char*>PyBytes_AS_STRING(uk), PyBytes_GET_SIZE(uk)
        e.tag = pack_tag(v.seq, v.kind)
        if v.value is None:
            return 0
        e.value = <const unsigned char*>PyBytes_AS_STRING(v.value)
        e.vlen = PyBytes_GET_SIZE(v.value)
        return 1


cdef bint _ascending(const FrozenEntry* e, Py_ssize_t n) noexcept nogil:
    """Whether the user keys of ``e[:n]`` (a key's versions share its key
    object) ascend from one key object to the next."""
    cdef Py_ssize_t i
    for i in range(1, n):
        if e[i].key != e[i - 1].key and cmp_user(
                <const unsigned char*>frozen_bytes(e[i - 1].key), frozen_size(e[i - 1].key),
                <const unsigned char*>frozen_bytes(e[i].key), frozen_size(e[i].key)) >= 0:
            return False
    return True


cdef class FrozenIterator(InternalIterator):
    """A frozen memtable's entries, forward from the first, gathered once
    (when made, under the GIL) into a C array in internal-key order: for
    each version, its user key and its value (the objects, kept alive by the
    memtable's dict, which this holds) and its tag.  A flush drains the array
    in C without the GIL (lsm._compaction_stream); ``key``/``value`` serve
    every other reader.  Nothing may write the memtable while it is used (a
    flush's memtable is frozen).

    The order: when the dict's own order (the order each key was first
    written) is ascending, as after a sequential load, the dict is walked,
    with no lookup a key (a flush of an in-order load spent a third of its
    time in those lookups, each a cache miss); else the sorted keys are, each
    looked up.  Forward only: ``seek_to_first``, ``next``."""

    def __cinit__(self, *args, **kwargs):
        self.entries = NULL

    def __dealloc__(self):
        free(self.entries)

    def __init__(self, MemTable mem not None):
        cdef Py_ssize_t cap = mem.entries + 1, pos = 0
        cdef PyObject* k
        cdef PyObject* v
        cdef bint ordered
        self._versions = mem.versions
        self.entries = <FrozenEntry*>malloc(cap * sizeof(FrozenEntry))
        if self.entries == NULL:
            raise MemoryError()
        self.cap = cap
        self.n = 0
        while PyDict_Next(self._versions, &pos, &k, &v):
            self._gather(k, <Version>v)
        with nogil:         # the keys' bytes read without the GIL: nothing changes them
            ordered = _ascending(self.entries, self.n)
        if not ordered:
            self.n = 0
            for key in mem.keys:            # merges the pending keys
                self._gather(<PyObject*>key, <Version>self._versions[key])
        self.pos = 0

    cdef int _gather(self, PyObject* key, Version v) except -1:
        """Append ``key``'s versions, newest first."""
        cdef FrozenEntry* e
        while v is not None:
            if self.n == self.cap:
                e = <FrozenEntry*>realloc(self.entries, 2 * self.cap * sizeof(FrozenEntry))
                if e == NULL:
                    raise MemoryError()
                self.entries, self.cap = e, 2 * self.cap
            e = self.entries + self.n
            e.key = key
            e.value = <PyObject*>v.value
            e.tag = pack_tag(v.seq, v.kind)
            self.n += 1
            v = v.prev
        return 0

    cpdef bint valid(self):
        return self.pos < self.n

    cpdef seek_to_first(self):
        self.pos = 0

    cpdef next(self):
        if self.pos >= self.n:
            raise ValueError("next() on an invalid iterator")
        self.pos += 1

    cpdef bytes key(self):
        if self.pos >= self.n:
            raise ValueError("key() on an invalid iterator")
        return ikey_of(<bytes>self.entries[self.pos].key, self.entries[self.pos].tag)

    cpdef bytes value(self):
        if self.pos >= self.n:
            raise ValueError("value() on an invalid iterator")
        return <bytes>self.entries[self.pos].value

    cpdef seek_to_last(self):
        raise NotImplementedError("FrozenIterator is forward only, from the first")

    cpdef seek(self, bytes ikey):
        raise NotImplementedError("FrozenIterator is forward only, from the first")

    cpdef seek_for_prev(self, bytes ikey):
        raise NotImplementedError("FrozenIterator is forward only, from the first")

    cpdef prev(self):
        raise NotImplementedError("FrozenIterator is forward only, from the first")


# A chunk of the sorted keys, read from SortedList's own layout: sorted
# sublists (``_lists``) and their last keys (``_maxes``).  Two bisects and
# list slices, instead of stepping SortedList.irange's generator key by key
# (through irange that was most of a short scan).

cdef list _chunk_after(object sl, object after, bint inclusive, Py_ssize_t want):
    """Up to ``want`` keys >= ``after`` (> with not ``inclusive``; None: from the first), ascending."""
    cdef list maxes = sl._maxes, lists = sl._lists, sub, out
    cdef Py_ssize_t pos = 0, idx = 0, n = len(lists)
    if after is not None:
        pos = _bisect_left(maxes, after) if inclusive else _bisect_right(maxes, after)
        if pos == n:
            return []
        sub = <list>lists[pos]
        idx = _bisect_left(sub, after) if inclusive else _bisect_right(sub, after)
    out = []
    while pos < n and len(out) < want:
        sub = <list>lists[pos]
        out.extend(sub[idx:idx + want - len(out)])
        pos += 1
        idx = 0
    return out


cdef list _chunk_before(object sl, object before, bint inclusive, Py_ssize_t want):
    """Up to ``want`` keys <= ``before`` (< with not ``inclusive``; None: from the last), descending."""
    cdef list maxes = sl._maxes, lists = sl._lists, sub, out
    cdef Py_ssize_t pos, idx, lo, n = len(lists)
    if n == 0:
        return []
    pos = n - 1 if before is None else _bisect_left(maxes, before)
    if pos == n:
        pos = n - 1
        idx = len(<list>lists[pos])
    else:
        sub = <list>lists[pos]
        if before is None:
            idx = len(sub)
        else:
            idx = _bisect_right(sub, before) if inclusive else _bisect_left(sub, before)
    out = []
    while pos >= 0 and len(out) < want:
        sub = <list>lists[pos]
        lo = idx - (want - len(out))
        if lo < 0:
            lo = 0
        out.extend(reversed(sub[lo:idx]))
        pos -= 1
        if pos >= 0:
            idx = len(<list>lists[pos])
    return out


# -- the memtable ------------------------------------------------------------
cdef class MemTable:
    """The memtable (lsm/memtable.py documents it): ``versions``, the dict
    from user key to its versions; ``_sorted``, the SortedList of the user
    keys merged so far; ``_pending``, the keys added since, in arrival order;
    ``lock``, taken to merge them and to read the sorted list while one may
    run; ``_merging``, set while a merge changes the sorted list (so that a
    row read can tell, without the lock, that none runs); the charge
    (``approximate_bytes``: key + value + ``overhead`` a write) and the
    number of writes (``entries``).  C fields: the write path and the row
    read reach them without attribute lookups."""

    def __init__(self, Py_ssize_t entry_overhead=64, PrefixExtractor prefix_extractor=None):
        self.prefix_extractor = prefix_extractor
        self.versions = {}
        self._sorted = SortedList()
        self._pending = []
        self.lock = threading.Lock()
        self._merging = False
        self.approximate_bytes = 0
        self.entries = 0
        self.overhead = entry_overhead

    def add(self, uint64_t seq, int kind, bytes key, bytes value):
        """Record one write (``add_entry``).  Caller holds the DB's write lock."""
        add_entry(self, seq, kind, key, value)

    def add_all(self, uint64_t seq, ops):
        """``add`` each (kind, key, value) of ``ops`` at ``seq``, ``seq + 1``, ...
        in one C call (``add_entries``).  Caller holds the DB's write lock."""
        add_entries(self, seq, ops if type(ops) is list else list(ops))

    def use_prefix_extractor(self, PrefixExtractor prefix_extractor):
        """Index the keys by ``prefix_extractor``'s prefixes from now on (None:
        no index): the keys already here are filed first, in a new table,
        taken into use in one step.  Caller holds the DB's write lock."""
        cdef Slot* old = self._slots
        cdef Py_ssize_t n = self._nslots, pos = 0
        cdef PyObject* k
        cdef PyObject* v
        # Filed into an empty table first: no reader walks it meanwhile (no
        # Python code runs until the swap below).  The old table is freed
        # first, its Versions told they are in no slot, before the new one
        # tells them where they are.
        self.prefix_extractor = None
        self._slots, self._nslots, self._nused = NULL, 0, 0
        _free_slots(old, n)
        if prefix_extractor is not None:
            while PyDict_Next(self.versions, &pos, &k, &v):
                _index_key(self, prefix_extractor, <bytes>k, <Version>v)
            self.prefix_extractor = prefix_extractor

    def __dealloc__(self):
        _free_slots(self._slots, self._nslots)

    def get(self, bytes key, uint64_t seq):
        """``(kind, value)`` of the newest version with sequence <= seq, or None."""
        cdef Version v = get_version(self.versions, key, seq)
        return None if v is None else (v.kind, v.value)

    @property
    def keys(self):
        """The sorted user keys (merges pending ones first)."""
        with self.lock:
            self._merge_pending()
        return self._sorted

    def _merge_pending(self):
        # Caller holds self.lock.  Swap first: a concurrent add appends to
        # the new list, never to the one being merged.
        cdef list pending = self._pending
        self._pending = []
        if pending:
            self._merging = True
            try:
                self._sorted.update(pending)
            finally:
                self._merging = False

    def has_keys_in(self, lo, hi):
        """Whether a user key lies in ``[lo, hi)`` (None: unbounded), pending
        ones included."""
        with self.lock:
            self._merge_pending()
            return self._has_keys_in(lo, hi)

    cdef bint _has_keys_in(self, lo, hi) except -1:
        # Caller holds self.lock, pending keys merged.  SortedList keeps
        # sorted sublists (_lists) and their last keys (_maxes): two bisects,
        # without SortedList's positional index.
        cdef list maxes = self._sorted._maxes
        cdef list sub
        cdef Py_ssize_t pos
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
        """An ordered iterator of internal entries (``MemTableIterator``); for
        a scan bounded by ``[lo, hi)``, None when no key lies in it (a
        bounded scan leaves such a memtable out)."""
        with self.lock:
            self._merge_pending()
            if (lo is not None or hi is not None) and not self._has_keys_in(lo, hi):
                return None
        return MemTableIterator(self._sorted, self.versions, self.lock)

    def flush_iterator(self):
        """The iterator a flush drains, forward from the first, once nothing
        writes this memtable any more: a ``FrozenIterator``."""
        return FrozenIterator(self)

    def __len__(self):
        return self.entries
