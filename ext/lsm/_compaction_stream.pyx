# cython: language_level=3
"""What a flush or a compaction keeps (LevelDB's DoCompactionWork drop
rules), drained into table builders by lsm/builder.py.

What runs where: ``fill`` runs in C, one call per output table; it adds
each kept entry to a table's build core (``TableBuildCore``, C) by a C call
and reads the core's size in C, so a flush or compaction makes no Python
call per entry (its filter and its ``check``, when given, excepted).  Any
other builder (an object with ``add`` and ``size_estimate``) is called
through Python.

A flush (the iterator a ``FrozenIterator``: a frozen memtable's entries in
a C array; no filter, no ``check``; a core with no compressor, as L0's)
runs without the GIL: the drop rules, the internal keys, the blocks, the
bloom digests, the CRCs, the index and the writes to an OS file, so the
flush leaves the writers the GIL (with it held, the writer of a 1e7-key
load waited for it as long as the flushes ran).  It takes the GIL back only
to hand bytes to a file that is not the OS's (lsm.memfs, lsm.faultfs).
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from lsm._iter cimport InternalIterator
from lsm._coding cimport encode_fixed64
from lsm._keys cimport KIND_DELETE, KIND_VALUE, MAX_SEQ, TAG_SIZE, cmp_user, make_ikey, pack_tag, tag_of, user_of
from lsm._memtable cimport FrozenEntry, FrozenIterator, frozen_bytes, frozen_size
from lsm._table_builder cimport BUILD_NEED_GIL, BUILD_NO_MEMORY, TableBuildCore


class CompactionAborted(Exception):
    """Raised by ``fill`` when the stream's ``check()`` asked it to stop (a
    closing store: HBase's closing region aborts its compactions)."""


cdef enum:
    CHECK_EVERY = 1024       # input entries between two calls of check()
    KEEP = 0                 # _verdict's answers
    DROP = 1
    ASK_FILTER = 2


cdef inline int _verdict(uint64_t last_seq, uint64_t seq, int kind, uint64_t smallest, bint bottommost,
                         bint filtering) noexcept nogil:
    """What becomes of an entry (``seq``, ``kind``) whose user key's entry
    before it had ``last_seq`` (MAX_SEQ + 1: none): the drop rules of the
    class doc, in one place for both loops."""
    if last_seq <= smallest:
        return DROP         # hidden by a newer entry that every snapshot sees
    if kind == KIND_DELETE and seq <= smallest and bottommost:
        return DROP         # tombstone with nothing left below it to hide
    if kind == KIND_VALUE and filtering and last_seq == MAX_SEQ + 1 and seq <= smallest:
        return ASK_FILTER
    return KEEP


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
        cdef int kind, verdict
        cdef Py_ssize_t added = 0
        cdef InternalIterator it = self._it
        cdef TableBuildCore core = builder if type(builder) is TableBuildCore else None
        add = size = None
        if core is None:
            add = builder.add
            size = builder.size_estimate
        elif type(it) is FrozenIterator and core.raw and self._filter is None and self._check is None:
            return self._fill_frozen(<FrozenIterator>it, core, target_bytes)
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
                    break
                self._cur = cur = ik
                self._last_seq = MAX_SEQ + 1
            self.entries_in += 1
            if self._check is not None and self.entries_in % CHECK_EVERY == 0 and self._check():
                raise CompactionAborted()
            verdict = _verdict(self._last_seq, seq, kind, self._smallest, self._bottommost, self._filter is not None)
            if verdict == ASK_FILTER and self._filter(user_of(cur), it.value()):
                if not self._bottommost:
                    _add(core, add, make_ikey(PyBytes_AS_STRING(cur), PyBytes_GET_SIZE(cur) - 8,
                                              pack_tag(seq, KIND_DELETE)), b"")
                    added += 1
            elif verdict != DROP:
                _add(core, add, ik, it.value())
                added += 1
                if seq > self.max_seq:
                    self.max_seq = seq
            self._last_seq = seq
            it.next()
        self.entries_out += added
        return added

    cdef Py_ssize_t _fill_frozen(self, FrozenIterator it, TableBuildCore core, Py_ssize_t target_bytes) except -1:
        """``fill`` of a flush: the loop without the GIL (see the module doc).
        The entries of one user key share its key object (the memtable's
        dict key), so a new user key is a new object."""
        cdef const FrozenEntry* e = it.entries
        cdef Py_ssize_t i = it.pos, n = it.n, added = 0, un, cap = 256
        cdef Py_ssize_t entries_in = 0
        cdef uint64_t seq, last_seq, max_seq = self.max_seq, smallest = self._smallest
        cdef bint bottommost = self._bottommost
        cdef int kind, rc = 0
        cdef unsigned char* ikey = <unsigned char*>malloc(cap)
        cdef unsigned char* grown
        if ikey == NULL:
            raise MemoryError()
        try:
            while i < n:
                with nogil:
                    while i < n:
                        if i == 0 or e[i].key != e[i - 1].key:
                            if target_bytes > 0 and added > 0 and core.estimate() >= <uint64_t>target_bytes:
                                break
                            last_seq = MAX_SEQ + 1
                        else:
                            last_seq = e[i - 1].tag >> 8
                        seq = e[i].tag >> 8
                        kind = e[i].tag & 0xff
                        entries_in += 1
                        if _verdict(last_seq, seq, kind, smallest, bottommost, False) == KEEP:
                            un = frozen_size(e[i].key)
                            if un + TAG_SIZE > cap:
                                grown = <unsigned char*>realloc(ikey, un + TAG_SIZE)
                                if grown == NULL:
                                    rc = BUILD_NO_MEMORY
                                    break
                                ikey, cap = grown, un + TAG_SIZE
                            memcpy(ikey, frozen_bytes(e[i].key), un)
                            encode_fixed64(ikey + un, e[i].tag)
                            rc = core.add_nogil(ikey, un + TAG_SIZE, <const unsigned char*>frozen_bytes(e[i].value),
                                                frozen_size(e[i].value))
                            if rc != 0 and rc != BUILD_NEED_GIL:
                                break
                            added += 1
                            if seq > max_seq:
                                max_seq = seq
                        i += 1
                        if rc == BUILD_NEED_GIL:
                            break
                if rc == BUILD_NEED_GIL:
                    rc = 0
                    core.write_out_pending()
                elif rc != 0:
                    core.raise_error(rc)
                else:
                    break           # the end, or a cut before a new user key
        finally:
            free(ikey)
            it.pos = i
            self.entries_in += entries_in
            self.entries_out += added
            self.max_seq = max_seq
            self._cur = None        # stopped between user keys
            self._last_seq = MAX_SEQ + 1
        return added


cdef inline int _add(TableBuildCore core, object add, bytes ikey, bytes value) except -1:
    """``ikey -> value`` into ``core`` by a C call, or else through ``add``."""
    if core is not None:
        core.add_entry(ikey, value)
    else:
        add(ikey, value)
    return 0
