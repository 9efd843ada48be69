# cython: language_level=3
"""The user-visible iterator (LevelDB's db_iter.cc): an internal iterator
(usually a ``MergingIterator`` of memtables and tables) seen as user keys
and values as of one snapshot, in ``[start, end)``, forward or backward.

Thread-safety: one thread at a time.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t

from lsm._iter cimport InternalIterator
from lsm._keys cimport KIND_DELETE, KIND_VALUE, MAX_SEQ, cmp_user, cmp_user_of, ikey_of, lookup_ikey, tag_of, user_of


cdef class DBIterator:
    """User-visible entries of an internal iterator, as of ``snapshot_seq``.

    Each user key in ``[start, end)`` appears once, with its newest value of
    sequence <= snapshot_seq, unless that newest entry is a tombstone.  The
    direction logic is LevelDB's DBIter: going forward the internal iterator
    sits on the current entry; going backward it sits just before all the
    entries of the current user key.
    """

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
        return self._end is not None and cmp_user_of(ikey, self._end) >= 0

    cdef bint _before_start(self, bytes ikey) noexcept:
        return self._start is not None and cmp_user_of(ikey, self._start) < 0

    cdef _find_next(self, bint skipping, bytes skip):
        """Forward: the first visible user entry at or after the iterator."""
        cdef bytes ik
        cdef uint64_t tag
        cdef InternalIterator it = self._it
        while it.valid():
            ik = it.key()
            if self._past_end(ik):
                break
            tag = tag_of(ik)
            if (tag >> 8) <= self._snap:
                if (tag & 0xff) == KIND_DELETE:
                    skip = user_of(ik)
                    skipping = True
                elif not skipping or cmp_user_of(ik, skip) > 0:
                    self._key = user_of(ik)
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
            tag = tag_of(ik)
            if (tag >> 8) <= self._snap:
                if kind != KIND_DELETE and cmp_user_of(ik, self._key) < 0:
                    break   # passed every entry of the saved key
                kind = tag & 0xff
                if kind == KIND_DELETE:
                    self._key = None
                    self._value = None
                else:
                    self._key = user_of(ik)
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
            self._it.seek(lookup_ikey(self._start, MAX_SEQ))
        else:
            self._it.seek_to_first()
        self._find_next(False, None)

    def seek_to_last(self):
        self._forward = False
        if self._end is not None:
            self._it.seek(lookup_ikey(self._end, MAX_SEQ))
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
        self._it.seek(lookup_ikey(target, self._snap))
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
        self._it.seek(ikey_of(target, 0))
        if self._it.valid():
            if cmp_user_of(self._it.key(), target) == 0:
                self._it.next()
        if self._it.valid():
            self._it.prev()
        else:
            self._it.seek_to_last()
        self._find_prev()

    cpdef next(self):
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

    cpdef prev(self):
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
                if cmp_user_of(self._it.key(), saved) < 0:
                    break
            self._forward = False
        self._find_prev()

    def begin(self, bint reverse=False):
        """Position at the first entry in the given direction and make this
        a Python iterator of ``(key, value)`` in that direction (``DB.scan``)."""
        self._reverse = reverse
        if reverse:
            self.seek_to_last()
        else:
            self.seek_to_first()
        return self

    def __iter__(self):
        return self

    def __next__(self):
        if not self._valid:
            raise StopIteration
        item = (self._key, self._value)
        if self._reverse:
            self.prev()
        else:
            self.next()
        return item

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
