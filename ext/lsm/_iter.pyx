# cython: language_level=3
"""Internal iterators and how they compose (LevelDB's iterator.h, merger.cc,
two_level_iterator.cc).

Every iterator speaks the one interface of ``_iter.pxd``: entries are
``(internal key, value)`` in internal-key order (user key ascending, then
sequence descending; see lsm/dbformat.py and _keys.pxd).  Features are built
by composition, as in LevelDB:

* ``ListIterator``      a sorted Python list of (ikey, value): tests, small runs.
* ``LevelIterator``     concatenates the non-overlapping tables of one level,
                        opening each table lazily.
* ``MergingIterator``   merges any number of children (memtables, L0 tables,
                        level iterators) into one ordered stream.

Elsewhere: the memtable's iterator in _memtable.pyx, blocks and tables in
_block.pyx and _table_iter.pyx, the user-visible ``DBIterator`` in _db_iter.pyx,
the drop logic of flush and compaction in _compaction_stream.pyx.

Thread-safety: an iterator is used by one thread at a time.
"""
from lsm._keys cimport cmp_ikeys


def compare_internal_keys(bytes a, bytes b):
    """-1, 0 or 1: the internal-key order (for Python code and tests)."""
    cdef int r = cmp_ikeys(a, b)
    return (r > 0) - (r < 0)


cdef class InternalIterator:
    """Base of every internal iterator; subclasses override every method
    (``entry`` where they hold the entry's bytes: 0 here, read key()/value())."""

    cdef int entry(self, RawEntry* e) except -1:
        return 0

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
        if cmp_ikeys(<bytes>keys[mid], target) < 0:
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
        if i < len(self._keys) and cmp_ikeys(<bytes>self._keys[i], ikey) == 0:
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

    cdef int entry(self, RawEntry* e) except -1:
        return self._cur.entry(e)


cdef class MergingIterator(InternalIterator):
    """Merges children into one stream in internal-key order.

    Internal keys are unique across children (each write has its own
    sequence number), so there are no ties to break.  A linear scan for the
    smallest child beats a heap for the handful of children a DB has.  Each
    child's current key is kept (``_keys``, None when the child is
    invalid): a step re-reads only the child that moved, so it builds one
    key object, not one per child, and ``key()`` returns the kept one.
    """
    cdef list _children
    cdef list _keys
    cdef Py_ssize_t _ci          # index of the current child, -1: invalid
    cdef InternalIterator _cur
    cdef bint _forward

    def __init__(self, list children):
        self._children = children
        self._keys = [None] * len(children)
        self._cur = None
        self._ci = -1
        self._forward = True

    cdef inline _load(self, Py_ssize_t i):
        cdef InternalIterator c = <InternalIterator>self._children[i]
        self._keys[i] = c.key() if c.valid() else None

    cdef _load_all(self):
        cdef Py_ssize_t i
        for i in range(len(self._children)):
            self._load(i)

    cdef _pick(self, bint smallest):
        cdef Py_ssize_t i, best = -1
        cdef object k
        cdef bytes bk = None
        for i in range(len(self._keys)):
            k = self._keys[i]
            if k is not None and (best < 0 or (cmp_ikeys(<bytes>k, bk) < 0) == smallest):
                best = i
                bk = <bytes>k
        self._ci = best
        self._cur = <InternalIterator>self._children[best] if best >= 0 else None

    cpdef bint valid(self):
        return self._ci >= 0

    cpdef seek_to_first(self):
        cdef InternalIterator c
        for c in self._children:
            c.seek_to_first()
        self._forward = True
        self._load_all()
        self._pick(True)

    cpdef seek_to_last(self):
        cdef InternalIterator c
        for c in self._children:
            c.seek_to_last()
        self._forward = False
        self._load_all()
        self._pick(False)

    cpdef seek(self, bytes ikey):
        cdef InternalIterator c
        for c in self._children:
            c.seek(ikey)
        self._forward = True
        self._load_all()
        self._pick(True)

    cpdef seek_for_prev(self, bytes ikey):
        cdef InternalIterator c
        for c in self._children:
            c.seek_for_prev(ikey)
        self._forward = False
        self._load_all()
        self._pick(False)

    cpdef next(self):
        cdef InternalIterator c
        cdef bytes k
        if not self._forward:
            # Every other child is at or before key(): move them after it.
            k = <bytes>self._keys[self._ci]
            for c in self._children:
                if c is not self._cur:
                    c.seek(k)
                    if c.valid() and cmp_ikeys(c.key(), k) == 0:
                        c.next()
            self._forward = True
            self._load_all()
        self._cur.next()
        self._load(self._ci)
        self._pick(True)

    cpdef prev(self):
        cdef InternalIterator c
        cdef bytes k
        if self._forward:
            # Every other child is after key(): move them before it.
            k = <bytes>self._keys[self._ci]
            for c in self._children:
                if c is not self._cur:
                    c.seek_for_prev(k)
                    if c.valid() and cmp_ikeys(c.key(), k) == 0:
                        c.prev()
            self._forward = False
            self._load_all()
        self._cur.prev()
        self._load(self._ci)
        self._pick(False)

    cpdef bytes key(self):
        if self._ci < 0:
            raise ValueError("key() on an invalid iterator")
        return <bytes>self._keys[self._ci]

    cpdef bytes value(self):
        if self._ci < 0:
            raise ValueError("value() on an invalid iterator")
        return self._cur.value()

    cdef int entry(self, RawEntry* e) except -1:
        if self._ci < 0:
            raise ValueError("entry() on an invalid iterator")
        return self._cur.entry(e)
