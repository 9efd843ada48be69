# cython: language_level=3
"""What a flush or a compaction keeps (LevelDB's DoCompactionWork drop
rules), drained into table builders by lsm/builder.py.
"""
from libc.stdint cimport uint64_t

from lsm._iter cimport InternalIterator
from lsm._keys cimport KIND_DELETE, KIND_VALUE, MAX_SEQ, cmp_user_of, ikey_of, pack_tag, tag_of, user_of


class CompactionAborted(Exception):
    """Raised by ``fill`` when the stream's ``check()`` asked it to stop (a
    closing store: HBase's closing region aborts its compactions)."""


cdef enum:
    CHECK_EVERY = 1024       # input entries between two calls of check()


cdef class CompactionStream:
    """The entries a flush or compaction keeps, drained into table builders.

    Drops an entry when a newer entry of the same user key is visible to
    every live snapshot (``seq <= smallest_snapshot``); drops such a newest
    tombstone too when ``bottommost`` (nothing older can lie below); asks
    ``filter_fn(user_key, value)`` about the newest value of each key that
    every snapshot sees, and drops it if true (leaving a tombstone unless
    bottommost, so older versions below cannot resurface).  The caller
    positions ``it``; ``fill`` consumes it.

    ``check``: called every CHECK_EVERY input entries; it may do work (the
    DB flushes a frozen memtable there, as LevelDB's DoCompactionWork does)
    and returns True to abort: ``fill`` then raises ``CompactionAborted``.
    """
    cdef InternalIterator _it
    cdef uint64_t _smallest
    cdef bint _bottommost
    cdef object _filter
    cdef bytes _cur
    cdef uint64_t _last_seq
    cdef public Py_ssize_t entries_in, entries_out
    cdef public uint64_t max_seq
    cdef object _check

    def __init__(self, InternalIterator it, uint64_t smallest_snapshot, bint bottommost, filter_fn=None,
                 check=None):
        self._check = check
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
            tag = tag_of(ik)
            seq = tag >> 8
            kind = tag & 0xff
            if self._cur is None or cmp_user_of(ik, self._cur) != 0:
                if target_bytes > 0 and added > 0 and size() >= target_bytes:
                    return added
                self._cur = user_of(ik)
                self._last_seq = MAX_SEQ + 1
            self.entries_in += 1
            if self._check is not None and self.entries_in % CHECK_EVERY == 0 and self._check():
                raise CompactionAborted()
            if self._last_seq <= self._smallest:
                pass    # hidden by a newer entry that every snapshot sees
            elif kind == KIND_DELETE and seq <= self._smallest and self._bottommost:
                pass    # tombstone with nothing left below it to hide
            elif kind == KIND_VALUE and self._filter is not None and self._last_seq == MAX_SEQ + 1 \
                    and seq <= self._smallest and self._filter(self._cur, it.value()):
                if not self._bottommost:
                    add(ikey_of(self._cur, pack_tag(seq, KIND_DELETE)), b"")
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
