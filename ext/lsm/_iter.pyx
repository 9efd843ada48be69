# cython: language_level=3
"""Internal iterators and the user-visible DB iterator.

Every iterator here speaks the one interface of ``_iter.pxd``: entries are
``(internal key, value)`` in internal-key order (user key ascending, then
sequence descending; see lsm/dbformat.py).  Features are built by composition,
as in LevelDB:

* ``ListIterator``      a sorted Python list of (ikey, value): tests, small runs.
* ``MemTableIterator``  over the memtable (sorted user keys + version lists).
* ``LevelIterator``     concatenates the non-overlapping tables of one level,
                        opening each table lazily.
* ``MergingIterator``   merges any number of children (memtables, L0 tables,
                        level iterators) into one ordered stream.
* ``DBIterator``        hides sequence numbers, older versions and tombstones:
                        yields each user key once, as seen by a snapshot, in
                        ``[start, end)``, forward or backward.

``CompactionStream`` is the drop logic of flush and compaction.

Thread-safety: an iterator is used by one thread at a time.  The memtable
iterator reads the shared memtable under the memtable's lock, in chunks.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from libc.stdint cimport uint64_t
from libc.string cimport memcpy

from lsm._keys cimport cmp_ikey, cmp_user, decode_fixed64

import struct

cdef object _TAG = struct.Struct("<Q")
cdef object _pack_tag = _TAG.pack
cdef uint64_t MAX_SEQ = (<uint64_t>1 << 56) - 1
cdef enum:
    KIND_DELETE = 0
    KIND_VALUE = 1
    CHUNK = 128


cdef inline int _cmp(bytes a, bytes b) noexcept:
    return cmp_ikey(<const unsigned char*>PyBytes_AS_STRING(a), PyBytes_GET_SIZE(a),
                    <const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))


cdef inline int _cmp_user_of(bytes ikey, bytes ukey) noexcept:
    """Compare the user part of an internal key with a user key."""
    return cmp_user(<const unsigned char*>PyBytes_AS_STRING(ikey), PyBytes_GET_SIZE(ikey) - 8,
                    <const unsigned char*>PyBytes_AS_STRING(ukey), PyBytes_GET_SIZE(ukey))


cdef inline uint64_t _tag_of(bytes ikey) noexcept:
    return decode_fixed64(<const unsigned char*>PyBytes_AS_STRING(ikey) + PyBytes_GET_SIZE(ikey) - 8)


cdef inline bytes _user(bytes ikey):
    """The user key of an internal key (a copy without the 8-byte tag)."""
    return PyBytes_FromStringAndSize(PyBytes_AS_STRING(ikey), PyBytes_GET_SIZE(ikey) - 8)


def compare_internal_keys(bytes a, bytes b):
    """-1, 0 or 1: the internal-key order (for Python code and tests)."""
    return _cmp(a, b)


cdef class InternalIterator:
    """Base of every internal iterator; subclasses override every method."""

    cpdef bint valid(self):
        return False

    cpdef seek_to_first(self):
        raise NotImplementedError

    cpdef seek_to_last(self):
        raise NotImplementedError

    cpdef seek(self, bytes ikey):
        raise NotImplementedError

    cpdef seek_for_prev(self, bytes ikey):
        raise NotImplementedError

    cpdef next(self):
        raise NotImplementedError

    cpdef prev(self):
        raise NotImplementedError

    cpdef bytes key(self):
        raise NotImplementedError

    cpdef bytes value(self):
        raise NotImplementedError


def lower_bound(list keys, bytes target):
    """First index i with keys[i] >= target in internal-key order."""
    return _lower_bound(keys, target)


cdef Py_ssize_t _lower_bound(list keys, bytes target):
    """First index i with keys[i] >= target (internal order)."""
    cdef Py_ssize_t lo = 0, hi = len(keys), mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if _cmp(<bytes>keys[mid], target) < 0:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef class ListIterator(InternalIterator):
    """Iterator over parallel sorted lists of internal keys and values."""
    cdef list _keys
    cdef list _values
    cdef Py_ssize_t _pos

    def __init__(self, list keys, list values):
        self._keys = keys
        self._values = values
        self._pos = -1

    cpdef bint valid(self):
        return 0 <= self._pos < len(self._keys)

    cpdef seek_to_first(self):
        self._pos = 0

    cpdef seek_to_last(self):
        self._pos = len(self._keys) - 1

    cpdef seek(self, bytes ikey):
        self._pos = _lower_bound(self._keys, ikey)

    cpdef seek_for_prev(self, bytes ikey):
        cdef Py_ssize_t i = _lower_bound(self._keys, ikey)
        if i < len(self._keys) and _cmp(<bytes>self._keys[i], ikey) == 0:
            self._pos = i
        else:
            self._pos = i - 1

    cpdef next(self):
        self._pos += 1

    cpdef prev(self):
        self._pos -= 1

    cpdef bytes key(self):
        return self._keys[self._pos]

    cpdef bytes value(self):
        return self._values[self._pos]


cdef class MemTableIterator(InternalIterator):
    """Iterates a memtable: a SortedList of user keys and a dict mapping each
    user key to its versions ``[(seq, kind, value), ...]``, oldest first.

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
    cdef list _vers          # versions of the current user key, oldest first (shared, append-only)
    cdef Py_ssize_t _vn      # len(_vers) when the key was entered
    cdef Py_ssize_t _vi      # current version index; newest first means _vi counts down
    cdef bint _forward
    cdef bytes _key          # cached internal key of the current entry

    def __init__(self, sorted_keys, dict versions, lock):
        self._sorted = sorted_keys
        self._versions = versions
        self._lock = lock
        self._chunk = []
        self._ci = 0
        self._vers = None
        self._forward = True
        self._key = None

    cdef _load_forward(self, object after, bint inclusive):
        with self._lock:
            self._chunk = _take(self._sorted.irange(after, None, (inclusive, True)), CHUNK)
        self._ci = 0
        self._forward = True

    cdef _load_backward(self, object before, bint inclusive):
        with self._lock:
            self._chunk = _take(self._sorted.irange(None, before, (True, inclusive), reverse=True), CHUNK)
        self._ci = 0
        self._forward = False

    cdef _enter_key(self, bint newest_first):
        """Make the chunk's current key current; position on a version."""
        cdef object v
        self._key = None
        if self._ci >= len(self._chunk):
            self._vers = None
            return
        v = self._versions[self._chunk[self._ci]]
        # one version: a bare tuple (see MemTable.add); more: a list
        self._vers = [v] if type(v) is tuple else <list>v
        self._vn = len(self._vers)
        self._vi = self._vn - 1 if newest_first else 0

    cdef inline uint64_t _tag(self, Py_ssize_t i):
        cdef tuple v = <tuple>self._vers[i]
        return (<uint64_t>v[0] << 8) | <int>v[1]

    cpdef bint valid(self):
        return self._vers is not None

    cpdef seek_to_first(self):
        self._load_forward(None, True)
        self._enter_key(True)

    cpdef seek_to_last(self):
        self._load_backward(None, True)
        self._enter_key(False)

    cpdef seek(self, bytes ikey):
        cdef bytes uk = _user(ikey)
        cdef uint64_t tag = _tag_of(ikey)
        self._load_forward(uk, True)
        self._enter_key(True)
        if self._vers is not None and self._chunk[self._ci] == uk:
            # skip versions newer than the target (tag order is descending)
            while self._vi >= 0 and self._tag(self._vi) > tag:
                self._vi -= 1
            if self._vi < 0:
                self._next_key()

    cpdef seek_for_prev(self, bytes ikey):
        cdef bytes uk = _user(ikey)
        cdef uint64_t tag = _tag_of(ikey)
        self._load_backward(uk, True)
        self._enter_key(False)
        if self._vers is not None and self._chunk[self._ci] == uk:
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
        self._vi -= 1
        self._key = None
        if self._vi < 0:
            self._next_key()

    cpdef prev(self):
        self._vi += 1
        self._key = None
        if self._vi >= self._vn:
            self._prev_key()

    cpdef bytes key(self):
        cdef tuple v
        cdef bytes uk
        cdef Py_ssize_t n
        cdef char* p
        cdef uint64_t tag
        cdef int i
        if self._key is None:
            v = <tuple>self._vers[self._vi]
            uk = <bytes>self._chunk[self._ci]
            n = PyBytes_GET_SIZE(uk)
            tag = (<uint64_t>v[0] << 8) | <int>v[1]
            self._key = PyBytes_FromStringAndSize(NULL, n + 8)
            p = PyBytes_AS_STRING(self._key)
            memcpy(p, PyBytes_AS_STRING(uk), n)
            for i in range(8):
                p[n + i] = <char>((tag >> (8 * i)) & 0xff)
        return self._key

    cpdef bytes value(self):
        return (<tuple>self._vers[self._vi])[2]


cdef list _take(object it, Py_ssize_t n):
    cdef list out = []
    for x in it:
        out.append(x)
        if len(out) >= n:
            break
    return out


cdef class LevelIterator(InternalIterator):
    """Concatenates the tables of one sorted, non-overlapping level.

    ``largest`` holds each table's largest internal key; ``open_table(i)``
    returns an InternalIterator over table ``i`` (opened lazily, so a scan
    of a small range touches only the tables it needs).
    """
    cdef list _largest
    cdef object _open
    cdef Py_ssize_t _index
    cdef InternalIterator _cur

    def __init__(self, list largest, open_table):
        self._largest = largest
        self._open = open_table
        self._index = -1
        self._cur = None

    cdef _set(self, Py_ssize_t i):
        if i == self._index and self._cur is not None:
            return
        self._index = i
        if 0 <= i < len(self._largest):
            self._cur = self._open(i)
        else:
            self._cur = None

    cdef _skip_forward(self):
        while self._cur is not None and not self._cur.valid():
            if self._index + 1 >= len(self._largest):
                self._cur = None
                return
            self._set(self._index + 1)
            self._cur.seek_to_first()

    cdef _skip_backward(self):
        while self._cur is not None and not self._cur.valid():
            if self._index <= 0:
                self._cur = None
                return
            self._set(self._index - 1)
            self._cur.seek_to_last()

    cpdef bint valid(self):
        return self._cur is not None and self._cur.valid()

    cpdef seek_to_first(self):
        self._set(0)
        if self._cur is not None:
            self._cur.seek_to_first()
            self._skip_forward()

    cpdef seek_to_last(self):
        self._set(len(self._largest) - 1)
        if self._cur is not None:
            self._cur.seek_to_last()
            self._skip_backward()

    cpdef seek(self, bytes ikey):
        self._set(_lower_bound(self._largest, ikey))
        if self._cur is not None:
            self._cur.seek(ikey)
            self._skip_forward()

    cpdef seek_for_prev(self, bytes ikey):
        cdef Py_ssize_t i = _lower_bound(self._largest, ikey)
        if i >= len(self._largest):
            i = len(self._largest) - 1
        self._set(i)
        if self._cur is not None:
            self._cur.seek_for_prev(ikey)
            self._skip_backward()

    cpdef next(self):
        self._cur.next()
        self._skip_forward()

    cpdef prev(self):
        self._cur.prev()
        self._skip_backward()

    cpdef bytes key(self):
        return self._cur.key()

    cpdef bytes value(self):
        return self._cur.value()


cdef class MergingIterator(InternalIterator):
    """Merges children into one stream in internal-key order.

    Internal keys are unique across children (each write has its own
    sequence number), so there are no ties to break.  A linear scan for the
    smallest child beats a heap for the handful of children a DB has.
    """
    cdef list _children
    cdef InternalIterator _cur
    cdef bint _forward

    def __init__(self, list children):
        self._children = children
        self._cur = None
        self._forward = True

    cdef _find_smallest(self):
        cdef InternalIterator c, best = None
        cdef bytes bk = None, k
        for c in self._children:
            if c.valid():
                k = c.key()
                if best is None or _cmp(k, bk) < 0:
                    best = c
                    bk = k
        self._cur = best

    cdef _find_largest(self):
        cdef InternalIterator c, best = None
        cdef bytes bk = None, k
        for c in self._children:
            if c.valid():
                k = c.key()
                if best is None or _cmp(k, bk) > 0:
                    best = c
                    bk = k
        self._cur = best

    cpdef bint valid(self):
        return self._cur is not None and self._cur.valid()

    cpdef seek_to_first(self):
        cdef InternalIterator c
        for c in self._children:
            c.seek_to_first()
        self._forward = True
        self._find_smallest()

    cpdef seek_to_last(self):
        cdef InternalIterator c
        for c in self._children:
            c.seek_to_last()
        self._forward = False
        self._find_largest()

    cpdef seek(self, bytes ikey):
        cdef InternalIterator c
        for c in self._children:
            c.seek(ikey)
        self._forward = True
        self._find_smallest()

    cpdef seek_for_prev(self, bytes ikey):
        cdef InternalIterator c
        for c in self._children:
            c.seek_for_prev(ikey)
        self._forward = False
        self._find_largest()

    cpdef next(self):
        cdef InternalIterator c
        cdef bytes k
        if not self._forward:
            # Every other child is at or before key(): move them after it.
            k = self._cur.key()
            for c in self._children:
                if c is not self._cur:
                    c.seek(k)
                    if c.valid() and _cmp(c.key(), k) == 0:
                        c.next()
            self._forward = True
        self._cur.next()
        self._find_smallest()

    cpdef prev(self):
        cdef InternalIterator c
        cdef bytes k
        if self._forward:
            # Every other child is after key(): move them before it.
            k = self._cur.key()
            for c in self._children:
                if c is not self._cur:
                    c.seek_for_prev(k)
                    if c.valid() and _cmp(c.key(), k) == 0:
                        c.prev()
            self._forward = False
        self._cur.prev()
        self._find_largest()

    cpdef bytes key(self):
        return self._cur.key()

    cpdef bytes value(self):
        return self._cur.value()


cdef class DBIterator:
    """User-visible entries of an internal iterator, as of ``snapshot_seq``.

    Each user key in ``[start, end)`` appears once, with its newest value of
    sequence <= snapshot_seq, unless that newest entry is a tombstone.  The
    direction logic is LevelDB's DBIter: going forward the internal iterator
    sits on the current entry; going backward it sits just before all the
    entries of the current user key.
    """
    cdef InternalIterator _it
    cdef uint64_t _snap
    cdef bytes _start
    cdef bytes _end
    cdef bint _valid
    cdef bint _forward
    cdef bytes _key
    cdef bytes _value
    cdef public object pin     # keeps the version/snapshot alive while iterating

    def __init__(self, InternalIterator it, uint64_t snapshot_seq, start=None, end=None, pin=None):
        self._it = it
        self._snap = snapshot_seq
        self._start = start
        self._end = end
        self._valid = False
        self._forward = True
        self.pin = pin

    def valid(self):
        return self._valid

    def key(self):
        return self._key

    def value(self):
        return self._value

    cdef bint _past_end(self, bytes ikey) noexcept:
        return self._end is not None and _cmp_user_of(ikey, self._end) >= 0

    cdef bint _before_start(self, bytes ikey) noexcept:
        return self._start is not None and _cmp_user_of(ikey, self._start) < 0

    cdef _find_next(self, bint skipping, bytes skip):
        """Forward: the first visible user entry at or after the iterator."""
        cdef bytes ik
        cdef uint64_t tag
        cdef InternalIterator it = self._it
        while it.valid():
            ik = it.key()
            if self._past_end(ik):
                break
            tag = _tag_of(ik)
            if (tag >> 8) <= self._snap:
                if (tag & 0xff) == KIND_DELETE:
                    skip = _user(ik)
                    skipping = True
                elif not skipping or _cmp_user_of(ik, skip) > 0:
                    self._key = _user(ik)
                    self._value = it.value()
                    self._valid = True
                    return
            it.next()
        self._valid = False
        self._key = None
        self._value = None

    cdef _find_prev(self):
        """Backward: the visible user entry just before the iterator's key."""
        cdef bytes ik
        cdef uint64_t tag
        cdef int kind = KIND_DELETE
        cdef InternalIterator it = self._it
        self._key = None
        self._value = None
        while it.valid():
            ik = it.key()
            if self._before_start(ik):
                break
            tag = _tag_of(ik)
            if (tag >> 8) <= self._snap:
                if kind != KIND_DELETE and _cmp_user_of(ik, self._key) < 0:
                    break   # passed every entry of the saved key
                kind = tag & 0xff
                if kind == KIND_DELETE:
                    self._key = None
                    self._value = None
                else:
                    self._key = _user(ik)
                    self._value = it.value()
            it.prev()
        if kind == KIND_DELETE:
            self._valid = False
            self._key = None
            self._value = None
            self._forward = True
        else:
            self._valid = True

    def seek_to_first(self):
        self._forward = True
        if self._start is not None:
            self._it.seek(self._start + _pack_tag((MAX_SEQ << 8) | KIND_VALUE))
        else:
            self._it.seek_to_first()
        self._find_next(False, None)

    def seek_to_last(self):
        self._forward = False
        if self._end is not None:
            self._it.seek(self._end + _pack_tag((MAX_SEQ << 8) | KIND_VALUE))
            if self._it.valid():
                self._it.prev()
            else:
                self._it.seek_to_last()
        else:
            self._it.seek_to_last()
        self._find_prev()

    def seek(self, bytes target):
        """First visible key >= target (clamped to the bounds)."""
        if self._start is not None and cmp_user(<const unsigned char*>PyBytes_AS_STRING(target),
                PyBytes_GET_SIZE(target), <const unsigned char*>PyBytes_AS_STRING(self._start),
                PyBytes_GET_SIZE(self._start)) < 0:
            target = self._start
        self._forward = True
        self._it.seek(target + _pack_tag((self._snap << 8) | KIND_VALUE))
        self._find_next(False, None)

    def seek_for_prev(self, bytes target):
        """Last visible key <= target (clamped to the bounds)."""
        if self._end is not None and cmp_user(<const unsigned char*>PyBytes_AS_STRING(target),
                PyBytes_GET_SIZE(target), <const unsigned char*>PyBytes_AS_STRING(self._end),
                PyBytes_GET_SIZE(self._end)) >= 0:
            self.seek_to_last()
            return
        self._forward = False
        # position after every entry of target, then walk back
        self._it.seek(target + _pack_tag(0))
        if self._it.valid():
            if _cmp_user_of(self._it.key(), target) == 0:
                self._it.next()
        if self._it.valid():
            self._it.prev()
        else:
            self._it.seek_to_last()
        self._find_prev()

    def next(self):
        cdef bytes skip
        if not self._forward:
            self._forward = True
            skip = self._key
            if not self._it.valid():
                self._it.seek_to_first()
            else:
                self._it.next()
            self._find_next(True, skip)
            return
        skip = self._key
        self._it.next()
        self._find_next(True, skip)

    def prev(self):
        cdef bytes saved
        if self._forward:
            saved = self._key
            while True:
                self._it.prev()
                if not self._it.valid():
                    self._valid = False
                    self._key = None
                    self._value = None
                    return
                if _cmp_user_of(self._it.key(), saved) < 0:
                    break
            self._forward = False
        self._find_prev()

    def next_batch(self, Py_ssize_t n, bint reverse=False):
        """Up to ``n`` (key, value) pairs from the current position on,
        moving in the given direction; the iterator is left after them."""
        cdef list out = []
        while self._valid and len(out) < n:
            out.append((self._key, self._value))
            if reverse:
                self.prev()
            else:
                self.next()
        return out


cdef class CompactionStream:
    """The entries a flush or compaction keeps, drained into table builders.

    Drops an entry when a newer entry of the same user key is visible to
    every live snapshot (``seq <= smallest_snapshot``); drops such a newest
    tombstone too when ``bottommost`` (nothing older can lie below); asks
    ``filter_fn(user_key, value)`` about the newest value of each key that
    every snapshot sees, and drops it if true (leaving a tombstone unless
    bottommost, so older versions below cannot resurface).  The caller
    positions ``it``; ``fill`` consumes it.
    """
    cdef InternalIterator _it
    cdef uint64_t _smallest
    cdef bint _bottommost
    cdef object _filter
    cdef bytes _cur
    cdef uint64_t _last_seq
    cdef public Py_ssize_t entries_in, entries_out
    cdef public uint64_t max_seq

    def __init__(self, InternalIterator it, uint64_t smallest_snapshot, bint bottommost, filter_fn=None):
        self._it = it
        self._smallest = smallest_snapshot
        self._bottommost = bottommost
        self._filter = filter_fn
        self._cur = None
        self._last_seq = MAX_SEQ + 1
        self.entries_in = self.entries_out = 0
        self.max_seq = 0

    def valid(self):
        return self._it.valid()

    def fill(self, builder, Py_ssize_t target_bytes=0):
        """Add kept entries to ``builder`` until the iterator ends or, when
        ``target_bytes`` > 0, the builder holds that much and the next entry
        starts a new user key (a key never spans two tables of a level).
        Returns the number of entries added."""
        cdef bytes ik
        cdef uint64_t tag, seq
        cdef int kind
        cdef Py_ssize_t added = 0
        cdef InternalIterator it = self._it
        add = builder.add
        size = builder.size_estimate
        while it.valid():
            ik = it.key()
            tag = _tag_of(ik)
            seq = tag >> 8
            kind = tag & 0xff
            if self._cur is None or _cmp_user_of(ik, self._cur) != 0:
                if target_bytes > 0 and added > 0 and size() >= target_bytes:
                    return added
                self._cur = _user(ik)
                self._last_seq = MAX_SEQ + 1
            self.entries_in += 1
            if self._last_seq <= self._smallest:
                pass    # hidden by a newer entry that every snapshot sees
            elif kind == KIND_DELETE and seq <= self._smallest and self._bottommost:
                pass    # tombstone with nothing left below it to hide
            elif kind == KIND_VALUE and self._filter is not None and self._last_seq == MAX_SEQ + 1 \
                    and seq <= self._smallest and self._filter(self._cur, it.value()):
                if not self._bottommost:
                    add(self._cur + _pack_tag((seq << 8) | KIND_DELETE), b"")
                    added += 1
            else:
                add(ik, it.value())
                added += 1
                if seq > self.max_seq:
                    self.max_seq = seq
            self._last_seq = seq
            it.next()
        self.entries_out += added
        return added
