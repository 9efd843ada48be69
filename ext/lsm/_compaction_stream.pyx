# cython: language_level=3
"""What a flush or a compaction keeps (LevelDB's DoCompactionWork drop
rules), drained into table builders by lsm/builder.py.

What runs where: ``fill`` runs in C, one call per output table; it adds
each kept entry to a table's build core (``TableBuildCore``, C) by a C call
and reads the core's size in C, so a flush or compaction makes no Python
call per entry (its filter and its ``check``, when given, excepted).  Any
other builder (an object with ``add`` and ``size_estimate``) is called
through Python.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t

from lsm._iter cimport InternalIterator
from lsm._keys cimport KIND_DELETE, KIND_VALUE, MAX_SEQ, cmp_user, make_ikey, pack_tag, tag_of, user_of
from lsm._table_builder cimport TableBuildCore


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
    cdef bytes _cur                  # the first internal key seen of the current user key
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
        """Add kept entries to ``builder`` (a ``TableBuildCore``, or any
        object with ``add(ikey, value)`` and ``size_estimate()``) until the
        iterator ends or, when ``target_bytes`` > 0, the builder holds that
        much and the next entry starts a new user key (a key never spans two
        tables of a level).  Returns the number of entries added."""
        cdef bytes ik, cur
        cdef uint64_t tag, seq
        cdef int kind
        cdef Py_ssize_t added = 0
        cdef InternalIterator it = self._it
        cdef TableBuildCore core = builder if type(builder) is TableBuildCore else None
        add = size = None
        if core is None:
            add = builder.add
            size = builder.size_estimate
        while it.valid():
            ik = it.key()
            tag = tag_of(ik)
            seq = tag >> 8
            kind = tag & 0xff
            cur = self._cur
            if cur is None or cmp_user(<const unsigned char*>PyBytes_AS_STRING(ik), PyBytes_GET_SIZE(ik) - 8,
                                       <const unsigned char*>PyBytes_AS_STRING(cur),
                                       PyBytes_GET_SIZE(cur) - 8) != 0:
                if target_bytes > 0 and added > 0 and \
                        (core.size_estimate() if core is not None else size()) >= target_bytes:
                    return added
                self._cur = cur = ik
                self._last_seq = MAX_SEQ + 1
            self.entries_in += 1
            if self._check is not None and self.entries_in % CHECK_EVERY == 0 and self._check():
                raise CompactionAborted()
            if self._last_seq <= self._smallest:
                pass    # hidden by a newer entry that every snapshot sees
            elif kind == KIND_DELETE and seq <= self._smallest and self._bottommost:
                pass    # tombstone with nothing left below it to hide
            elif kind == KIND_VALUE and self._filter is not None and self._last_seq == MAX_SEQ + 1 \
                    and seq <= self._smallest and self._filter(user_of(cur), it.value()):
                if not self._bottommost:
                    _add(core, add, make_ikey(PyBytes_AS_STRING(cur), PyBytes_GET_SIZE(cur) - 8,
                                              pack_tag(seq, KIND_DELETE)), b"")
                    added += 1
            else:
                _add(core, add, ik, it.value())
                added += 1
                if seq > self.max_seq:
                    self.max_seq = seq
            self._last_seq = seq
            it.next()
        self.entries_out += added
        return added


cdef inline int _add(TableBuildCore core, object add, bytes ikey, bytes value) except -1:
    """``ikey -> value`` into ``core`` by a C call, or else through ``add``."""
    if core is not None:
        core.add_entry(ikey, value)
    else:
        add(ikey, value)
    return 0
