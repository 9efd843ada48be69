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
new version.  Thread-safety: any number of threads.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from libc.stdint cimport uint64_t
from libc.string cimport memcpy

from lsm._coding cimport encode_fixed64
from lsm._keys cimport KIND_VALUE, cmp_ikey, cmp_user, pack_tag
from lsm._memtable cimport get_version
from lsm._table cimport PointReader

from lsm._table import DELETED
from lsm.batch import check_key
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
