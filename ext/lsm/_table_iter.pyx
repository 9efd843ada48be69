# cython: language_level=3
"""A table's iterators: the two-level iterator (index block -> data blocks,
LevelDB's two_level_iterator) and the iterator bounded to a key range (a
view of a parent's table, lsm/views.py).  The file layout they read is
documented at the top of lsm/sstable.py.

No file I/O here: the two-level iterator asks a Python ``loader(offset,
size) -> Block``, or the table's ``PointReader`` (lsm._table) for a block
of its mapped file.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t

from lsm._keys cimport TAG_FIRST, cmp_ikey, cmp_user, ikey_of
from lsm._iter cimport InternalIterator, RawEntry
from lsm._block cimport Block, BlockIter
from lsm._table cimport PointReader

from lsm.arguments import check_bound


cdef class TwoLevelIter(InternalIterator):
    """Index block -> data blocks.  ``loader(offset, size)`` returns the
    parsed ``Block`` (through the block cache); it may raise CorruptionError,
    which propagates.  ``reader``, the table's PointReader, when given:
    a raw block of its mapped file is read in place, uncached, as its point
    reads read it, a cached block found and a compressed one read from the
    mapping in C (``PointReader.iter_block``), and only the others go
    through ``loader``.  One thread at a time; the table must stay open.
    """
    cdef BlockIter index
    cdef BlockIter data
    cdef object loader
    cdef PointReader reader
    cdef uint64_t data_off
    cdef bint have_data

    def __init__(self, Block index not None, loader, PointReader reader=None):
        self.index = index.iterator()
        self.loader = loader
        self.reader = reader
        self.data = None
        self.have_data = False

    cdef int _init_data(self) except -1:
        cdef uint64_t off, size
        cdef Block blk
        if not self.index.valid():
            self.data = None
            self.have_data = False
            return 0
        self.index.value_handle(&off, &size)
        if self.have_data and off == self.data_off:
            return 0
        self.data = None
        self.have_data = False
        blk = None
        if self.reader is not None:
            blk = self.reader.iter_block(off, size, self.index.restart_index)
        if blk is None:
            blk = self.loader(off, size)
        self.data = blk.iterator()
        self.data_off = off
        self.have_data = True
        return 0

    cdef int _skip_forward(self) except -1:
        while self.data is None or not self.data.valid():
            if not self.index.valid():
                self.data = None
                self.have_data = False
                return 0
            self.index._parse_next()
            self._init_data()
            if self.data is not None:
                self.data.seek_to_first()
        return 0

    cdef int _skip_backward(self) except -1:
        while self.data is None or not self.data.valid():
            if not self.index.valid():
                self.data = None
                self.have_data = False
                return 0
            self.index.prev()
            self._init_data()
            if self.data is not None:
                self.data.seek_to_last()
        return 0

    cpdef bint valid(self):
        return self.data is not None and self.data.cur < self.data.limit

    cpdef seek_to_first(self):
        self.index.seek_to_first()
        self._init_data()
        if self.data is not None:
            self.data.seek_to_first()
        self._skip_forward()

    cpdef seek_to_last(self):
        self.index.seek_to_last()
        self._init_data()
        if self.data is not None:
            self.data.seek_to_last()
        self._skip_backward()

    cpdef seek(self, bytes ikey):
        self.index.seek(ikey)
        self._init_data()
        if self.data is not None:
            self.data.seek(ikey)
        self._skip_forward()

    cpdef seek_for_prev(self, bytes ikey):
        self.seek(ikey)
        if not self.valid():
            self.seek_to_last()
        elif cmp_ikey(self.data.kbuf, self.data.klen, <const unsigned char*>PyBytes_AS_STRING(ikey),
                      PyBytes_GET_SIZE(ikey)) > 0:
            self.prev()

    cpdef next(self):
        if not self.valid():
            raise ValueError("next() on an invalid iterator")
        self.data._parse_next()
        if self.data.cur >= self.data.limit:
            self._skip_forward()

    cpdef prev(self):
        if not self.valid():
            raise ValueError("prev() on an invalid iterator")
        self.data.prev()
        self._skip_backward()

    cpdef bytes key(self):
        if not self.valid():
            raise ValueError("key() on an invalid iterator")
        return PyBytes_FromStringAndSize(<char*>self.data.kbuf, self.data.klen)

    cpdef bytes value(self):
        if not self.valid():
            raise ValueError("value() on an invalid iterator")
        return PyBytes_FromStringAndSize(<char*>self.data.ptr + self.data.voff, self.data.vlen)

    cdef int entry(self, RawEntry* e) except -1:
        if not self.valid():
            raise ValueError("entry() on an invalid iterator")
        return self.data.entry(e)




cdef class BoundedIter(InternalIterator):
    """Any internal iterator restricted to user keys in ``[lo, hi)``
    (``None`` = unbounded).  It never yields or lands outside the range, in
    either direction or on any seek.  One thread at a time.
    """
    cdef InternalIterator inner
    cdef bytes lo, hi
    cdef bytes cur_key
    cdef bint ok

    def __init__(self, InternalIterator inner not None, lo, hi):
        check_bound("lo", lo)
        check_bound("hi", hi)
        self.inner = inner
        self.lo = lo
        self.hi = hi
        self.ok = False

    cdef inline int _check(self, bint check_lo, bint check_hi) except -1:
        cdef bytes k
        cdef Py_ssize_t kn
        self.ok = False
        self.cur_key = None
        if not self.inner.valid():
            return 0
        k = self.inner.key()
        kn = PyBytes_GET_SIZE(k) - 8
        if check_hi and self.hi is not None and cmp_user(
                <const unsigned char*>PyBytes_AS_STRING(k), kn,
                <const unsigned char*>PyBytes_AS_STRING(self.hi), PyBytes_GET_SIZE(self.hi)) >= 0:
            return 0
        if check_lo and self.lo is not None and cmp_user(
                <const unsigned char*>PyBytes_AS_STRING(k), kn,
                <const unsigned char*>PyBytes_AS_STRING(self.lo), PyBytes_GET_SIZE(self.lo)) < 0:
            return 0
        self.ok = True
        self.cur_key = k
        return 0

    cdef inline bint _below_lo(self, bytes ikey):
        return self.lo is not None and cmp_user(
            <const unsigned char*>PyBytes_AS_STRING(ikey), PyBytes_GET_SIZE(ikey) - 8,
            <const unsigned char*>PyBytes_AS_STRING(self.lo), PyBytes_GET_SIZE(self.lo)) < 0

    cdef inline bint _at_or_above_hi(self, bytes ikey):
        return self.hi is not None and cmp_user(
            <const unsigned char*>PyBytes_AS_STRING(ikey), PyBytes_GET_SIZE(ikey) - 8,
            <const unsigned char*>PyBytes_AS_STRING(self.hi), PyBytes_GET_SIZE(self.hi)) >= 0

    cpdef bint valid(self):
        return self.ok

    cpdef seek_to_first(self):
        if self.lo is None:
            self.inner.seek_to_first()
        else:
            self.inner.seek(ikey_of(self.lo, TAG_FIRST))
        self._check(False, True)

    cpdef seek_to_last(self):
        if self.hi is None:
            self.inner.seek_to_last()
        else:
            # The last entry before the first entry of user key hi.
            self.inner.seek(ikey_of(self.hi, TAG_FIRST))
            if self.inner.valid():
                self.inner.prev()
            else:
                self.inner.seek_to_last()
        self._check(True, False)

    cpdef seek(self, bytes ikey):
        if ikey is None or PyBytes_GET_SIZE(ikey) < 8:
            raise ValueError("seek needs an internal key (>= 8 bytes)")
        if self._below_lo(ikey):
            self.seek_to_first()
        else:
            self.inner.seek(ikey)
            self._check(False, True)

    cpdef seek_for_prev(self, bytes ikey):
        if ikey is None or PyBytes_GET_SIZE(ikey) < 8:
            raise ValueError("seek_for_prev needs an internal key (>= 8 bytes)")
        if self._at_or_above_hi(ikey):
            self.seek_to_last()
        else:
            self.inner.seek_for_prev(ikey)
            self._check(True, False)

    cpdef next(self):
        if not self.ok:
            raise ValueError("next() on an invalid iterator")
        self.inner.next()
        self._check(False, True)

    cpdef prev(self):
        if not self.ok:
            raise ValueError("prev() on an invalid iterator")
        self.inner.prev()
        self._check(True, False)

    cpdef bytes key(self):
        if not self.ok:
            raise ValueError("key() on an invalid iterator")
        return self.cur_key

    cpdef bytes value(self):
        if not self.ok:
            raise ValueError("value() on an invalid iterator")
        return self.inner.value()
