# cython: language_level=3
"""The user-visible iterator (LevelDB's db_iter.cc): an internal iterator
(usually a ``MergingIterator`` of memtables and tables) seen as user keys
and values as of one snapshot, in ``[start, end)``, forward or backward.

Thread-safety: one thread at a time.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from lsm._iter cimport InternalIterator, RawEntry
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

    cdef Py_ssize_t feed(self, Py_ssize_t limit, bint reverse, entry_fn fn, void* ctx,
                         bint* stopped) except -1:
        """``next_batch(limit, reverse)`` handed to ``fn`` entry by entry
        instead of made into a list: the same entries, from the current
        position on (the one a seek found, in the direction it was made
        for).  Forward, the entries after the first are read in place
        (``InternalIterator.entry``) where the iterator can, so an entry
        costs no object; backward, and an entry the iterator cannot lend,
        go through ``key()``/``value()`` as ``next_batch``'s do.  Returns
        how many entries ``fn`` was handed; ``*stopped`` says whether it
        asked to stop.  The iterator is spent afterwards: ``key()`` is the
        last entry handed over (None if none), which is where a caller
        reading in chunks goes on from."""
        cdef Py_ssize_t n = 0
        cdef _KeyBuf last, dead             # the last key handed over, the last deleted
        cdef _KeyBuf* skip = &last          # the key whose older entries are skipped
        cdef const unsigned char* endp = NULL
        cdef Py_ssize_t endn = 0
        cdef InternalIterator it = self._it
        cdef RawEntry e
        cdef bytes k, v, ik, iv
        cdef bint found
        cdef int r = 0
        stopped[0] = False
        if limit <= 0 or not self._valid:
            self._valid, self._key, self._value = False, None, None
            return 0
        k = self._key
        if reverse or not self._forward:
            while True:
                k, v = self._key, self._value
                r = fn(ctx, <const unsigned char*>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k),
                       <const unsigned char*>PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v))
                n += 1
                if r or n == limit:
                    break
                if reverse:
                    self.prev()
                else:
                    self.next()
                if not self._valid:
                    break
            stopped[0] = r != 0
            self._valid, self._key, self._value = False, k, None
            return n
        if self._end is not None:
            endp, endn = <const unsigned char*>PyBytes_AS_STRING(self._end), PyBytes_GET_SIZE(self._end)
        last.p = dead.p = NULL
        last.cap = dead.cap = 0
        try:
            e.key, e.klen = <const unsigned char*>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k)
            e.value = <const unsigned char*>PyBytes_AS_STRING(self._value)
            e.vlen = PyBytes_GET_SIZE(self._value)
            while True:
                # e is a visible entry: hand it over, and skip its older versions
                r = fn(ctx, e.key, e.klen, e.value, e.vlen)
                n += 1
                _keep(&last, e.key, e.klen)
                skip = &last
                if r or n == limit:
                    break
                # the next visible entry (_find_next's walk, in place)
                found = False
                while True:
                    it.next()
                    if not it.valid():
                        break
                    ik = iv = None
                    if it.entry(&e) == 0:
                        ik, iv = it.key(), it.value()     # held while e points into them
                        if PyBytes_GET_SIZE(ik) < 8:
                            raise ValueError(f"an internal key shorter than its tag: {ik!r}")
                        e.key, e.klen = <const unsigned char*>PyBytes_AS_STRING(ik), PyBytes_GET_SIZE(ik) - 8
                        e.tag = tag_of(ik)
                        e.value, e.vlen = <const unsigned char*>PyBytes_AS_STRING(iv), PyBytes_GET_SIZE(iv)
                    if endp != NULL and cmp_user(e.key, e.klen, endp, endn) >= 0:
                        break
                    if (e.tag >> 8) > self._snap:
                        continue
                    if (e.tag & 0xff) == KIND_DELETE:
                        _keep(&dead, e.key, e.klen)
                        skip = &dead
                    elif cmp_user(e.key, e.klen, skip.p, skip.n) > 0:
                        found = True
                        break
                if not found:
                    break
            stopped[0] = r != 0
            self._key = PyBytes_FromStringAndSize(<const char*>last.p, last.n)
        finally:
            free(last.p)
            free(dead.p)
            self._valid, self._value = False, None
        return n


cdef struct _KeyBuf:
    unsigned char* p
    Py_ssize_t n, cap


cdef int _keep(_KeyBuf* b, const unsigned char* key, Py_ssize_t n) except -1:
    """A copy of ``key[:n]`` in ``b`` (grown as needed; the owner frees ``b.p``)."""
    cdef unsigned char* grown
    if n > b.cap or b.p == NULL:
        grown = <unsigned char*>realloc(b.p, n if n > 64 else 64)
        if grown == NULL:
            raise MemoryError()
        b.p, b.cap = grown, (n if n > 64 else 64)
    memcpy(b.p, key, n)
    b.n = n
    return 0
