"""The region server's hot path in C: a region's gate and the routing of a
key to its region (``regions/region.py`` and ``regions/server.py`` say what
they mean; this module only makes them cheap).

Atomic by the GIL: ``enter``, ``exit`` and ``count_writes`` read and write C
fields and run no Python code until they are done, so no other thread runs
in between and the per-call lock of a Python gate is not needed.  State
changes (``state = ...``, a Python attribute store) are atomic the same way.
Only the rare wake-up in ``exit`` (the last operation leaving a closing
gate) takes the region's condition.  A free-threaded Python would need a
critical section around each method.
"""
cimport cython
from libc.string cimport memcmp
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.object cimport PyObject

from lsm import PUREPYTHON as _PUREPYTHON, WriteBatch as _WriteBatch
from lsm._read import PointPath as _PointPath
from lsm._write import WritePath as _WritePath
from lsm._api cimport point_get, point_scan_short, write_put

#: Scan batch sizes: a range is read in chunks of FIRST_CHUNK entries,
#: doubling up to MAX_CHUNK (RegionServer._chunks_forward).
FIRST_CHUNK = 64
MAX_CHUNK = 4096
cdef Py_ssize_t _MAX_CHUNK = MAX_CHUNK


cdef enum:
    READ = 0            # what a gate admits (Gate.enter's write False, True, None)
    WRITE = 1
    INTERNAL = 2


cdef int _kind(object write) except -1:
    if write is False:
        return READ
    if write is True:
        return WRITE
    if write is None:
        return INTERNAL
    raise TypeError("write must be True, False or None")


cdef object _write_arg(int kind):
    """``Gate.enter``'s ``write`` of ``kind``."""
    return False if kind == READ else True if kind == WRITE else None


cdef object _NO_NAME = object()     # Router._loc_name when no table was routed


cdef class Gate:
    """A region's gate (HBase's region read/write lock): its ``state``, the
    operations in flight, and the client reads and writes admitted.
    ``open_state``: the state in which it admits; ``cv``: the condition that
    ``close_gate`` waits on (taken here only to wake it)."""

    cdef object _state, _open
    cdef bint _serving
    cdef public Py_ssize_t inflight
    cdef public long long reads, writes
    cdef public object _cv
    #: The region's key range (``Region`` sets it): C fields, as the Router
    #: reads them on every operation.
    cdef public object start, end
    cdef object _db, _db_get, _db_put    # the store, and its get and put bound once
    cdef object _point                   # the PointPath its get is bound to, or None
    cdef object _wpath                   # the WritePath its put is bound to, or None
    cdef object _spath                   # the PointPath its scan_short is bound to, or None

    @property
    def db(self):
        """The region's store (``Region`` sets it); its ``get`` and ``put``
        are kept bound, which saves the Router an attribute lookup an
        operation, and when its ``get`` is an ``lsm.DB``'s point read
        (``lsm._read.PointPath.get``) the Router calls that in C, and its
        ``put`` and ``scan_short`` likewise (``lsm._write.WritePath.put``,
        ``PointPath.scan_short``)."""
        return self._db

    @db.setter
    def db(self, value):
        self._db = value
        self._db_get = None if value is None else value.get
        self._db_put = None if value is None else value.put
        self._point = self._wpath = self._spath = None
        if _PUREPYTHON:                 # the switch (lsm/purepython.py): the store's methods
            return
        point = getattr(self._db_get, "__self__", None)
        self._point = point if type(point) is _PointPath else None
        wpath = getattr(self._db_put, "__self__", None)
        self._wpath = wpath if type(wpath) is _WritePath else None
        spath = getattr(getattr(value, "scan_short", None), "__self__", None)
        self._spath = spath if type(spath) is _PointPath else None

    def __init__(self, open_state, cv):
        self._open = open_state
        self._cv = cv
        self.state = open_state

    @property
    def state(self):
        return self._state

    @state.setter
    def state(self, value):
        self._state = value
        self._serving = value is self._open

    def enter(self, write):
        """Admit one operation (``write``: True a write, False a read, None
        internal work, not counted); False if the region is not serving."""
        return self._admit(_kind(write))

    def exit(self):
        """The admitted operation is done."""
        self._leave()

    @cython.final
    cdef inline bint _admit(self, int kind):
        """``enter`` from C (no lookup of a Python override): ``kind`` READ,
        WRITE or INTERNAL."""
        if not self._serving:
            return False
        self.inflight += 1
        if kind == WRITE:
            self.writes += 1
        elif kind == READ:
            self.reads += 1
        return True

    @cython.final
    cdef inline int _leave(self) except -1:
        """``exit`` from C."""
        self.inflight -= 1
        if self.inflight == 0 and not self._serving:
            self._wake()
        return 0

    cdef int _wake(self) except -1:
        """The last operation left a gate that is not serving: wake ``close_gate``."""
        with self._cv:
            self._cv.notify_all()
        return 0

    cpdef count_writes(self, Py_ssize_t n):
        """Count ``n`` more keys written by the admitted write (a batch's
        part: ``writes`` counts keys, as HBase counts each mutation)."""
        self.writes += n


cdef inline int _compare(bytes a, bytes b) noexcept:
    cdef Py_ssize_t la = PyBytes_GET_SIZE(a), lb = PyBytes_GET_SIZE(b)
    cdef int c = memcmp(PyBytes_AS_STRING(a), PyBytes_AS_STRING(b), la if la < lb else lb)
    if c:
        return c
    return (la > lb) - (la < lb)


cdef inline bint _inside(bytes key, bytes start, end):
    """``key`` in ``[start, end)``, an empty or None end unbounded."""
    return _compare(key, start) >= 0 and (not end or _compare(key, <bytes?>end) < 0)


cdef inline bint _short_range(object pair):
    """``pair`` is a ``(start, end)`` of bytes, ``start`` not empty (what
    ``Router.read_range`` reads in one call of a store)."""
    return (type(pair) is tuple and len(<tuple>pair) == 2 and type((<tuple>pair)[0]) is bytes
            and type((<tuple>pair)[1]) is bytes and PyBytes_GET_SIZE((<tuple>pair)[0]) > 0)


def split_ops(list ops, bytes start not None, end):
    """``(mine, rest)``: the (kind, key, value) ops whose key lies in
    ``[start, end)`` (an empty or None end: unbounded; a region's
    ``contains``) and the others, each in order.  ``mine`` is ``ops``
    itself when every key is inside."""
    cdef list mine = [], rest = []
    for op in ops:
        if _inside(<bytes?>(<tuple?>op)[1], start, end):
            mine.append(op)
        else:
            rest.append(op)
    if not rest:
        return ops, rest
    return mine, rest


def check_key(key, name="key"):
    if type(key) is not bytes:
        raise TypeError(f"{name} must be bytes, got {type(key).__name__}")


def route(dict tables, object table, bytes key, object write):
    """The region of ``tables[table]`` holding ``key``, entered (``write`` as
    for ``Gate.enter``); None when the caller must take the slow path (an
    unknown table, a region not serving).  A table's ``layout`` is its
    (start keys, regions), the first start key b""."""
    return _route(tables, table, key, _kind(write))


cdef Gate _route(dict tables, object table, bytes key, int kind):
    t = tables.get(table)
    if t is None:
        return None
    cdef Gate r = _in_layout(<TableLayout?>t, key)
    if r is not None and r._admit(kind):
        return r
    return None


cdef class TableLayout:
    """A table's ``layout``: (start keys, regions), the first start key b"",
    the start keys bytes in increasing order and the regions ``Gate``\ s,
    one each; replaced whole, never changed in place (the server's
    ``_Table`` derives from this).  Setting it checks it and keeps the
    two as tuples in C fields, which the Router bisects on every operation
    without checking them again."""

    cdef tuple _layout
    cdef tuple _starts
    cdef tuple _regs

    @property
    def layout(self):
        return self._layout

    @layout.setter
    def layout(self, value):
        if type(value) is not tuple or len(<tuple>value) != 2:
            raise TypeError(f"a table layout is a (start keys, regions) tuple, got {value!r}")
        starts, regs = tuple(value[0]), tuple(value[1])
        if len(starts) != len(regs):
            raise ValueError(f"a table layout of {len(starts)} start keys and {len(regs)} regions")
        if starts and starts[0] != b"":
            raise ValueError(f"a table layout's first start key must be b'', got {starts[0]!r}")
        for i in range(len(starts)):
            if type(starts[i]) is not bytes:
                raise TypeError(f"a start key must be bytes, got {starts[i]!r}")
            if i and not _compare(<bytes>starts[i - 1], <bytes>starts[i]) < 0:
                raise ValueError(f"start keys out of order: {starts[i - 1]!r}, {starts[i]!r}")
            if not isinstance(regs[i], Gate):
                raise TypeError(f"a region must be a Gate, got {regs[i]!r}")
        self._layout, self._starts, self._regs = value, starts, regs


cdef inline Gate _in_layout(TableLayout t, bytes key):
    """The region of ``t``'s layout holding ``key`` (None before its first
    start key, or when it has no layout yet)."""
    return _bisect_regions(t._starts, t._regs, key)


cdef Gate _bisect_regions(tuple starts, tuple regs, bytes key):
    """The region of ``regs`` (a layout's, checked when set) whose start
    key in ``starts`` is the last <= ``key``; None for an empty layout.
    The first start key is b"", which every key is >= (one region: no
    compare)."""
    if starts is None or PyTuple_GET_SIZE(starts) == 0:
        return None
    cdef Py_ssize_t lo = 1, hi = PyTuple_GET_SIZE(starts), mid
    while lo < hi:                       # bisect_right over starts[1:]
        mid = (lo + hi) >> 1
        if _compare(key, <bytes>PyTuple_GET_ITEM(starts, mid)) < 0:
            hi = mid
        else:
            lo = mid + 1
    return <Gate>PyTuple_GET_ITEM(regs, lo - 1)


cdef class Router:
    """The single-key operations of ``RegionServer`` (its base class), in C:
    route, enter the gate, call the region's store, exit.  The subclass
    owns ``_tables`` and ``_enter_slow`` (unknown tables, regions in
    transition)."""

    cdef dict _map                  # name -> TableLayout (the subclass's ``_tables``)
    cdef object _loc_name           # the table name last routed (identity; _NO_NAME: none) ...
    cdef TableLayout _loc_table     # ... and its table: HBase's location cache, one entry

    def __cinit__(self, *args, **kwargs):
        self._map = {}
        self._loc_name = _NO_NAME

    @property
    def _tables(self):
        """name -> table (a ``TableLayout``).  Assigned whole, or changed
        through ``_put_table`` and ``_pop_table``: each forgets the
        location cache in the same C call."""
        return self._map

    @_tables.setter
    def _tables(self, dict value not None):
        self._map = value
        self._forget_location()

    def _put_table(self, name, TableLayout table not None):
        self._map[name] = table
        self._forget_location()

    def _pop_table(self, name):
        del self._map[name]
        self._forget_location()

    cdef inline void _forget_location(self) noexcept:
        self._loc_name = _NO_NAME
        self._loc_table = None

    cdef Gate _enter_fast(self, object table, object key, int kind):
        """The region holding ``key``, entered; the slow path when the table
        is unknown or the region not serving.  The table is found by the
        identity of its name when it is the one routed last (the name's
        dict lookup was the largest single cost of routing); the entry is
        forgotten in the same C call that changes ``_tables``."""
        cdef TableLayout t
        cdef Gate r = None
        if type(key) is not bytes:
            check_key(key)
        if table is self._loc_name:
            t = self._loc_table
        else:
            got = self._map.get(table)
            t = None if got is None else <TableLayout?>got
            if t is not None and type(table) is str:
                # An exact str: the lookup ran no Python code, so no removal
                # of the table came in between and the entry is current.
                self._loc_name, self._loc_table = table, t
        if t is not None:
            r = _in_layout(t, <bytes>key)
            if r is not None and not r._admit(kind):
                r = None
        if r is None:
            return <Gate?>self._enter_slow(table, key, _write_arg(kind))
        return r

    def put(self, table, key, value, sync=None):
        """Set ``key`` of ``table`` to ``value`` (``sync``: as ``lsm.DB.put``)."""
        cdef Gate r = self._enter_fast(table, key, WRITE)
        try:
            if r._wpath is not None:
                write_put(r._wpath, key, value, sync)
            else:
                r._db_put(key, value, sync)
        finally:
            r._leave()

    def delete(self, table, key, sync=None):
        """Delete ``key`` of ``table`` (no error if it is absent)."""
        cdef Gate r = self._enter_fast(table, key, WRITE)
        try:
            r.db.delete(key, sync)
        finally:
            r._leave()

    def write(self, table, batch, sync=None):
        """Apply ``batch`` (an ``lsm.WriteBatch``).  Atomic when all its keys lie
        in one region (always true for one row): that case is one write of
        the region's store, routed here; a batch spanning regions goes to the
        subclass's ``_write_parts``, region by region, each part atomic (one
        WAL record, one sync): if a part fails after others were applied,
        ``PartialWriteError`` says which keys were."""
        cdef Gate r
        cdef list ops
        cdef Py_ssize_t i, n
        if type(batch) is _WriteBatch:
            ops = <list?>batch.ops
            n = len(ops)
            if n:
                # entered as internal work: the keys are counted once applied
                # (a batch spanning regions is counted by _write_parts)
                r = self._enter_fast(table, (<tuple?>ops[0])[1], INTERNAL)
                try:
                    start, end = <bytes?>r.start, r.end
                    for i in range(n):
                        if not _inside(<bytes?>(<tuple?>ops[i])[1], start, end):
                            break
                    else:
                        r.db.write(batch, sync)
                        r.count_writes(n)
                        return
                finally:
                    r._leave()
        self._write_parts(table, batch, sync)

    def read_range(self, table, start, end):
        """Every ``(key, value)`` of ``[start, end)`` as one list: ``list(scan(...))``,
        in one read of one store when the range lies in one region and holds
        fewer than a scan chunk's entries (a row: how the data API reads one)."""
        cdef Gate r
        cdef list items
        if type(start) is bytes and type(end) is bytes and PyBytes_GET_SIZE(start):
            r = self._enter_fast(table, start, READ)
            try:
                rend = r.end
                if not rend or _compare(<bytes>end, <bytes?>rend) <= 0:
                    if r._spath is not None:
                        items = point_scan_short(r._spath, <bytes>start, <bytes>end, _MAX_CHUNK)
                    else:
                        items = r.db.scan_short(start, end, _MAX_CHUNK)
                    if len(items) < _MAX_CHUNK:
                        return items
            finally:
                r._leave()
        return list(self.scan(table, start, end))

    def read_ranges(self, table, list ranges not None):
        """``[read_range(table, start, end) for start, end in ranges]``, each
        region's ranges read in one call of its store
        (``lsm.DB.scan_short_many``), at one sequence, under one entry of
        its gate (each range counted as a read).  How BatchGetRow reads its
        rows."""
        cdef Py_ssize_t i, n = len(ranges)
        cdef list out = [None] * n, big = [], idxs
        cdef dict groups = {}           # region -> indices of its ranges, in order
        cdef Gate r
        for pair in ranges:
            if type(pair) is not tuple or len(<tuple>pair) != 2:
                raise TypeError(f"ranges must hold (start, end) tuples, got {pair!r}")
        t = self._map.get(table)
        starts = None if t is None else (<TableLayout?>t)._starts   # read once: a region in
        regs = None if t is None else (<TableLayout>t)._regs        # transition since is routed
        for i in range(n):                                           # again below
            pair = ranges[i]
            r = _bisect_regions(starts, regs, (<tuple>pair)[0]) if _short_range(pair) else None
            if r is None:               # not one short range of a known table
                out[i] = self.read_range(table, (<tuple>pair)[0], (<tuple>pair)[1])
            elif r.end and _compare(<bytes>(<tuple>pair)[1], <bytes?>r.end) > 0:
                big.append(i)           # runs past its region's end
            else:
                idxs = groups.get(r)
                if idxs is None:
                    groups[r] = [i]
                else:
                    idxs.append(i)
        for r, idxs in groups.items():
            if not r._admit(READ):      # in transition since located: route each again
                for i in idxs:
                    out[i] = self.read_range(table, *ranges[i])
                continue
            try:
                r.reads += len(idxs) - 1
                got = r.db.scan_short_many([ranges[i] for i in idxs], _MAX_CHUNK)
            finally:
                r._leave()
            for i, items in zip(idxs, got):
                if len(<list>items) >= _MAX_CHUNK:
                    big.append(i)
                else:
                    out[i] = items
        for i in big:                   # read whole, across regions, through splits
            pair = ranges[i]
            out[i] = list(self.scan(table, (<tuple>pair)[0], (<tuple>pair)[1]))
        return out

    def get(self, table, key):
        """The value of ``key`` of ``table``, or None."""
        cdef Gate r = self._enter_fast(table, key, READ)
        try:
            if r._point is not None:
                return point_get(r._point, key)
            return r._db_get(key)
        finally:
            r._leave()
