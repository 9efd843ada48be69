# cython: language_level=3
"""``DB.get`` in one C call (docs/impl.md, "A point read").

``PointPath(db, state, tables).get(key, snapshot=None)`` walks what ``DB.get`` reads, in
order, and stops at the first entry of ``key`` visible at the read's
sequence: the memtable and the frozen memtable (``_memtable.get_version``),
then the current version's L0 tables newest first and one table per deeper
level (binary search of the level's largest keys against a lookup key built
on the stack), each through ``_table.PointReader.lookup`` (bloom, index,
block cache, in-block search).  It builds no Python object but the value
found (and the block-cache key); only a table not yet open (the DB's
``_table``) or a block-cache miss (the table's ``_fill``) calls back into
Python.

It reads the DB's state as ``DB.get`` did: the memtables, the last
sequence and the closed flag from the DB's ``DBState`` (lsm/_state.pyx, C
fields), ``versions.current`` and the table cache's map (lock-free,
see lsm/cache.py ``TableCache.peek``).  If a compaction deleted a table
between reading the version and opening the file, the read retries on the
new version.  ``PointPath(...).scan_chunk(start, end, limit, reverse, snapshot)`` is
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
from lsm._keys cimport KIND_VALUE, bisect_keys, cmp_user, lower_bound as _lower_bound, pack_tag
from lsm._memtable cimport get_version, visible_range
from lsm._state cimport DBState
from lsm._table cimport PointReader

from lsm._iter import LevelIterator, MergingIterator
from lsm._table import DELETED
from lsm.batch import check_bound, check_key
from lsm.errors import CorruptionError
from lsm.fs import FileMissingError

cdef enum:
    LKBUF = 520
    SHORT_CAP = 64      # keys a source may hold of a short scan before it iterates


cdef class PointPath:
    """The point read of one ``DB`` (see the module doc)."""
    cdef object _db
    cdef DBState _s            # the DB's memtables, last sequence, closed flag
    cdef object _tables        # the TableCache's OrderedDict: number -> Table/TableView

    def __init__(self, db, DBState state not None, tables_map):
        self._db = db
        self._s = state
        self._tables = tables_map

    def get(self, key, snapshot=None):
        """The value of ``key``, or None (``DB.get``)."""
        cdef object db = self._db
        cdef DBState s = self._s
        cdef uint64_t seq
        cdef object v, versions, r
        cdef int attempt
        if type(key) is not bytes or PyBytes_GET_SIZE(key) == 0:
            check_key(key, db.options.max_key_bytes)
        if s.closed:
            db._check_open()
        seq = s.last_seq if snapshot is None else db._snapshot_seq(snapshot)
        v = get_version(s.mem.versions, <bytes>key, seq)
        if v is not None:
            return (<tuple>v)[2] if (<tuple>v)[1] == KIND_VALUE else None
        v = s.imm
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
        if type(limit) is not int or limit < 0:
            raise ValueError(f"limit must be an int >= 0, got {limit!r}")
        if start is not None and type(start) is not bytes:
            check_bound("start", start)
        if end is not None and type(end) is not bytes:
            check_bound("end", end)
        return self._scan([(start, end)], limit, reverse, snapshot, False)[0]

    def scan_short(self, start, end, limit=1000, snapshot=None):
        """``scan_chunk(start, end, limit, False, snapshot)`` for a range
        expected to hold few entries (a row): each source's entries of the
        range are read directly (``_memtable.visible_range``,
        ``PointReader.collect``) and merged, building no iterator; when a
        source holds more than SHORT_CAP keys of it (or the range is not
        two bytes bounds), the iterator path of ``scan_chunk`` reads it."""
        if (type(start) is not bytes or type(end) is not bytes or type(limit) is not int
                or limit < 0 or not _lt(<bytes>start, <bytes>end)):
            return self.scan_chunk(start, end, limit, False, snapshot)
        return self._scan([(start, end)], limit, False, snapshot, True)[0]

    def scan_short_many(self, list ranges not None, limit=1000, snapshot=None):
        """``[scan_short(start, end, limit, snapshot) for start, end in
        ranges]``, every range read at one sequence (the latest, or the
        snapshot's), the DB's state read once (``DB.scan_short_many``)."""
        if type(limit) is not int or limit < 0:
            raise ValueError(f"limit must be an int >= 0, got {limit!r}")
        for pair in ranges:
            if type(pair) is not tuple or len(<tuple>pair) != 2:
                raise TypeError(f"ranges must hold (start, end) tuples, got {pair!r}")
            for bound, name in zip(<tuple>pair, ("start", "end")):
                if bound is not None and type(bound) is not bytes:
                    check_bound(name, bound)
        return self._scan(ranges, limit, False, snapshot, True)

    cdef list _scan(self, list ranges, Py_ssize_t limit, bint reverse, object snapshot,
                    bint short):
        """Checked scans' chunks, one list of entries a ``(start, end)`` of
        ``ranges``, all read at one sequence on the DB's state read once, and
        read again on the new version when a compaction deleted a table under
        them.  ``short``: each range that can be (two bytes bounds, start <
        end) is read as ``scan_short`` reads it."""
        cdef object db = self._db
        cdef DBState s = self._s
        cdef uint64_t seq
        cdef object v, versions, got
        cdef list out
        cdef int attempt
        if s.closed:
            db._check_open()
        seq = s.last_seq if snapshot is None else db._snapshot_seq(snapshot)
        # After seq: every entry at or below it is in these memtables by now.
        mem, imm = s.mem, s.imm
        versions = db.versions
        for attempt in range(3):
            v = versions.current
            out = []
            try:
                for start, end in ranges:
                    got = None
                    if short and start is not None and end is not None and _lt(<bytes>start, <bytes>end):
                        got = self._short(mem, imm, v, seq, <bytes>start, <bytes>end, limit)
                    if got is None:
                        got = self._chunk(mem, imm, v, seq, start, end, limit, reverse)
                    out.append(got)
                return out
            except FileMissingError:
                if v is versions.current:
                    raise
        raise CorruptionError(f"table files keep vanishing under a scan of {ranges!r}")

    cdef object _short(self, object mem, object imm, object v, uint64_t seq, bytes lo, bytes hi,
                       Py_ssize_t limit):
        """The short scan's answer, or None: a source holds too many keys."""
        cdef const unsigned char* uk = <const unsigned char*>PyBytes_AS_STRING(lo)
        cdef Py_ssize_t un = PyBytes_GET_SIZE(lo)
        cdef const unsigned char* hk = <const unsigned char*>PyBytes_AS_STRING(hi)
        cdef Py_ssize_t hn = PyBytes_GET_SIZE(hi)
        cdef unsigned char stack[LKBUF]
        cdef Py_ssize_t i, j, k
        cdef list merged = None, got, files, out
        cdef object m, item
        cdef tuple e
        if un + 8 > LKBUF:
            return None
        memcpy(stack, uk, un)
        encode_fixed64(stack + un, pack_tag(seq, KIND_VALUE))
        for m in (mem, imm):
            if m is not None:
                got = []
                if visible_range(m, lo, hi, seq, got, SHORT_CAP) < 0:
                    return None
                merged = _merge(merged, got)
        for item in <list>v.l0:
            if _lt(<bytes>(<tuple>item)[0], hi) and not _lt(<bytes>(<tuple>item)[1], lo):
                got = []
                if self._table(<object>(<tuple>item)[2]).collect(uk, un, stack, un + 8, hk, hn, seq,
                                                                 got, SHORT_CAP) < 0:
                    return None
                merged = _merge(merged, got)
        for item in <list>v.bounds:
            files = <list>(<tuple>item)[0]
            i = _lower_bound(<list>(<tuple>item)[3], lo)
            j = _lower_bound(<list>(<tuple>item)[2], hi)
            if i < j:
                got = []
                for k in range(i, j):
                    if self._table(files[k]).collect(uk, un, stack, un + 8, hk, hn, seq,
                                                     got, SHORT_CAP) < 0:
                        return None
                merged = _merge(merged, got)
        out = []
        if merged is not None:
            for e in merged:
                if len(out) == limit:
                    break
                if (<uint64_t>e[1] & 0xFF) == KIND_VALUE:
                    out.append((e[0], e[2]))
        return out

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
        cdef Py_ssize_t lkn = un + 8, lo
        cdef object item, r
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
            r = self._table_of((<tuple>item)[3], (<tuple>item)[2]).lookup(uk, un, lk, lkn)
            if r is not None:
                return r
        for item in <list>v.search:
            largest = <list>(<tuple>item)[1]
            lo = bisect_keys(largest, lk, lkn, True)
            if lo < len(largest):
                b = <bytes>(<list>(<tuple>item)[2])[lo]
                if cmp_user(<const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), uk, un) <= 0:
                    r = self._table_of((<list>(<tuple>item)[3])[lo],
                                       (<list>(<tuple>item)[0])[lo]).lookup(uk, un, lk, lkn)
                    if r is not None:
                        return r
        return None

    cdef PointReader _table(self, object f):
        return self._table_of(f.number, f)

    cdef PointReader _table_of(self, object number, object f):
        """The point reader of file ``f`` (numbered ``number``), open or opened."""
        cdef PyObject* t = PyDict_GetItem(self._tables, number)
        if t != NULL:
            return <PointReader>(<object>t).point
        return <PointReader>self._db._table(f).point


cdef inline bint _lt(bytes a, bytes b):
    return cmp_user(<const unsigned char*>PyBytes_AS_STRING(a), PyBytes_GET_SIZE(a),
                    <const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b)) < 0



cdef list _merge(list a, list b):
    """Two ascending lists of ``(user key, tag, value)`` as one: of a user key
    in both, the entry with the larger tag (the newer)."""
    cdef Py_ssize_t i = 0, j = 0, na, nb
    cdef list out
    cdef tuple x, y
    cdef int c
    if not b:
        return a
    if a is None or not a:
        return b
    na, nb = len(a), len(b)
    out = []
    while i < na and j < nb:
        x = <tuple>a[i]
        y = <tuple>b[j]
        c = cmp_user(<const unsigned char*>PyBytes_AS_STRING(x[0]), PyBytes_GET_SIZE(x[0]),
                     <const unsigned char*>PyBytes_AS_STRING(y[0]), PyBytes_GET_SIZE(y[0]))
        if c < 0:
            out.append(x)
            i += 1
        elif c > 0:
            out.append(y)
            j += 1
        else:
            out.append(x if <uint64_t>x[1] > <uint64_t>y[1] else y)
            i += 1
            j += 1
    out.extend(a[i:])
    out.extend(b[j:])
    return out
