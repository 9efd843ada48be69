# cython: language_level=3
"""``DB.get`` in one C call (docs/impl.md, "A point read").

``PointPath(db).get(key, snapshot=None)`` walks what ``DB.get`` reads, in
order, and stops at the first entry of ``key`` visible at the read's
sequence: the memtable and the frozen memtable (``_memtable.get_version``),
then the current version's L0 tables newest first and one table per deeper
level (binary search of the level's largest keys against a lookup key built
on the stack), each through ``_table.PointReader.lookup`` (bloom, index,
block cache, in-block search).  It builds no Python object but the value
found (and the block-cache key); only a table not yet open (the DB's
``_table``) or a block-cache miss (the table's ``_fill``) calls back into
Python.

It reads the DB's state as ``DB.get`` did: ``_mem``, ``_imm``,
``_last_seq``, ``versions.current`` and the table cache's map (lock-free,
see lsm/cache.py ``TableCache.peek``).  If a compaction deleted a table
between reading the version and opening the file, the read retries on the
new version.  ``PointPath(db).scan_chunk(start, end, limit, reverse, snapshot)`` is
``DB.scan_chunk``: the first ``limit`` entries of ``[start, end)`` read in
one call.  It builds the merging iterator of only the sources that may hold
the range, as ``DB.iterator`` does, but without pinning the version: every
table it needs is opened before it returns, and an open table outlives the
deletion of its file (lsm/cache.py), so only an open that finds the file
gone can fail, and that read retries on the new version, as ``get`` does.
``DB.iterator`` followed by ``next_batch`` is its twin; the tests compare
them.

Thread-safety: any number of threads.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from libc.stdint cimport uint64_t
from libc.string cimport memcpy

from lsm._coding cimport encode_fixed64
from lsm._db_iter cimport DBIterator
from lsm._iter cimport InternalIterator
from lsm._keys cimport KIND_VALUE, cmp_ikey, cmp_user, pack_tag
from lsm._memtable cimport get_version
from lsm._table cimport PointReader

from lsm._iter import LevelIterator, MergingIterator
from lsm._table import DELETED
from lsm.batch import check_bound, check_key
from lsm.errors import CorruptionError
from lsm.fs import FileMissingError

cdef enum:
    LKBUF = 520


cdef class PointPath:
    """The point read of one ``DB`` (see the module doc)."""
    cdef object _db
    cdef object _tables        # the TableCache's OrderedDict: number -> Table/TableView

    def __init__(self, db, tables_map):
        self._db = db
        self._tables = tables_map

    def get(self, key, snapshot=None):
        """The value of ``key``, or None (``DB.get``)."""
        cdef object db = self._db
        cdef uint64_t seq
        cdef object v, versions, r
        cdef int attempt
        if type(key) is not bytes or PyBytes_GET_SIZE(key) == 0:
            check_key(key, db.options.max_key_bytes)
        if db._closed:
            db._check_open()
        seq = db._last_seq if snapshot is None else db._snapshot_seq(snapshot)
        v = get_version(db._mem.versions, <bytes>key, seq)
        if v is not None:
            return (<tuple>v)[2] if (<tuple>v)[1] == KIND_VALUE else None
        v = db._imm
        if v is not None:
            v = get_version(v.versions, <bytes>key, seq)
            if v is not None:
                return (<tuple>v)[2] if (<tuple>v)[1] == KIND_VALUE else None
        versions = db.versions
        for attempt in range(3):
            v = versions.current
            try:
                r = self._from_version(v, <bytes>key, seq)
            except FileMissingError:
                # A compaction deleted the file after we read the version:
                # the data is in the new version.
                if v is versions.current:
                    raise
                continue
            return None if r is None or r is DELETED else r
        raise CorruptionError(f"table files keep vanishing under a read of {key!r}")

    def scan_chunk(self, start=None, end=None, limit=1000, bint reverse=False, snapshot=None):
        """The first ``limit`` ``(key, value)`` of ``[start, end)`` (the last
        ones with ``reverse``) as one list (``DB.scan_chunk``)."""
        cdef object db = self._db
        cdef uint64_t seq
        cdef object v, versions
        cdef int attempt
        if type(limit) is not int or limit < 0:
            raise ValueError(f"limit must be an int >= 0, got {limit!r}")
        if start is not None and type(start) is not bytes:
            check_bound("start", start)
        if end is not None and type(end) is not bytes:
            check_bound("end", end)
        if db._closed:
            db._check_open()
        seq = db._last_seq if snapshot is None else db._snapshot_seq(snapshot)
        # After seq: every entry at or below it is in these memtables by now.
        mem, imm = db._mem, db._imm
        versions = db.versions
        for attempt in range(3):
            v = versions.current
            try:
                return self._chunk(mem, imm, v, seq, start, end, limit, reverse)
            except FileMissingError:
                if v is versions.current:
                    raise
        raise CorruptionError(f"table files keep vanishing under a scan of [{start!r}, {end!r})")

    cdef list _chunk(self, object mem, object imm, object v, uint64_t seq, object lo, object hi,
                     Py_ssize_t limit, bint reverse):
        cdef list children = []
        cdef object m, item, files
        cdef list largest, smallest_users, largest_users
        cdef Py_ssize_t i, j
        cdef InternalIterator it
        cdef DBIterator dbi
        for m in (mem, imm):
            if m is not None:
                m = m.iterator(lo, hi)
                if m is not None:
                    children.append(m)
        for item in <list>v.l0:
            if ((hi is None or _lt(<bytes>(<tuple>item)[0], hi))
                    and (lo is None or not _lt(<bytes>(<tuple>item)[1], lo))):
                children.append(self._iter(<object>(<tuple>item)[2]))
        for item in <list>v.bounds:
            files = (<tuple>item)[0]
            smallest_users = <list>(<tuple>item)[2]
            largest_users = <list>(<tuple>item)[3]
            i = 0 if lo is None else _lower_bound(largest_users, <bytes>lo)
            j = len(files) if hi is None else _lower_bound(smallest_users, <bytes>hi)
            if j - i == 1:
                children.append(self._iter((<list>files)[i]))
            elif j - i > 1:
                # Opened now, not lazily: nothing pins the version after this call.
                largest = <list>(<tuple>item)[1]
                children.append(LevelIterator(largest[i:j], [self._iter(f) for f in files[i:j]]
                                              .__getitem__))
        if len(children) == 1:
            it = <InternalIterator>children[0]
        elif children:
            it = MergingIterator(children)
        else:
            return []
        dbi = DBIterator(it, seq, lo, hi, None)
        if reverse:
            dbi.seek_to_last()
        else:
            dbi.seek_to_first()
        return dbi.next_batch(limit, reverse)

    cdef InternalIterator _iter(self, object f):
        cdef PyObject* t = PyDict_GetItem(self._tables, f.number)
        if t != NULL:
            return (<object>t).iterator()
        return self._db._table(f).iterator()

    cdef object _from_version(self, object v, bytes key, uint64_t seq):
        cdef const unsigned char* uk = <const unsigned char*>PyBytes_AS_STRING(key)
        cdef Py_ssize_t un = PyBytes_GET_SIZE(key)
        cdef unsigned char stack[LKBUF]
        cdef unsigned char* lk = stack
        cdef bytes heap = None
        cdef Py_ssize_t lkn = un + 8, lo, hi, mid
        cdef object item, f, r, files
        cdef list largest
        cdef bytes b
        if lkn > LKBUF:
            heap = bytes(lkn)
            lk = <unsigned char*>PyBytes_AS_STRING(heap)
        memcpy(lk, uk, un)
        encode_fixed64(lk + un, pack_tag(seq, KIND_VALUE))
        for item in <list>v.l0:
            b = <bytes>(<tuple>item)[0]
            if cmp_user(<const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), uk, un) > 0:
                continue
            b = <bytes>(<tuple>item)[1]
            if cmp_user(uk, un, <const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b)) > 0:
                continue
            r = self._table(<object>(<tuple>item)[2]).lookup(uk, un, lk, lkn)
            if r is not None:
                return r
        for item in <list>v.search:
            files = (<tuple>item)[0]
            largest = <list>(<tuple>item)[1]
            lo, hi = 0, len(largest)
            while lo < hi:
                mid = (lo + hi) >> 1
                b = <bytes>largest[mid]
                if cmp_ikey(<const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), lk, lkn) < 0:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < len(largest):
                f = (<list>files)[lo]
                b = <bytes>f.smallest_user
                if cmp_user(<const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), uk, un) <= 0:
                    r = self._table(f).lookup(uk, un, lk, lkn)
                    if r is not None:
                        return r
        return None

    cdef PointReader _table(self, object f):
        cdef PyObject* t = PyDict_GetItem(self._tables, f.number)
        if t != NULL:
            return <PointReader>(<object>t).point
        return <PointReader>self._db._table(f).point


cdef inline bint _lt(bytes a, bytes b):
    return cmp_user(<const unsigned char*>PyBytes_AS_STRING(a), PyBytes_GET_SIZE(a),
                    <const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b)) < 0


cdef Py_ssize_t _lower_bound(list keys, bytes target):
    """bisect_left of user keys."""
    cdef Py_ssize_t lo = 0, hi = len(keys), mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if _lt(<bytes>keys[mid], target):
            lo = mid + 1
        else:
            hi = mid
    return lo
