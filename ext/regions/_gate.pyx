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
from libc.string cimport memcmp
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE

from lsm import WriteBatch as _WriteBatch

#: Scan batch sizes: a range is read in chunks of FIRST_CHUNK entries,
#: doubling up to MAX_CHUNK (RegionServer._scan_forward).
FIRST_CHUNK = 64
MAX_CHUNK = 4096
cdef Py_ssize_t _MAX_CHUNK = MAX_CHUNK


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

    @property
    def db(self):
        """The region's store (``Region`` sets it); its ``get`` and ``put``
        are kept bound, which saves the Router an attribute lookup an
        operation."""
        return self._db

    @db.setter
    def db(self, value):
        self._db = value
        self._db_get = None if value is None else value.get
        self._db_put = None if value is None else value.put

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

    cpdef bint enter(self, object write):
        """Admit one operation (``write``: True a write, False a read, None
        internal work, not counted); False if the region is not serving."""
        if write is not True and write is not False and write is not None:
            raise TypeError("write must be True, False or None")
        if not self._serving:
            return False
        self.inflight += 1
        if write is True:
            self.writes += 1
        elif write is False:
            self.reads += 1
        return True

    cpdef exit(self):
        self.inflight -= 1
        if self.inflight == 0 and not self._serving:
            with self._cv:
                self._cv.notify_all()

    cpdef count_writes(self, Py_ssize_t n):
        """Count ``n`` more keys written by the admitted write (a batch's
        part: ``writes`` counts keys, as HBase counts each mutation)."""
        self.writes += n


cdef inline int _compare(bytes a, bytes b):
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
    return _route(tables, table, key, write)


cdef object _route(dict tables, object table, bytes key, object write):
    r = _locate(tables, table, key)
    if r is not None and (<Gate>r).enter(write):
        return r
    return None


cdef Gate _locate(dict tables, object table, bytes key):
    """The region of ``tables[table]`` holding ``key``, not entered; None for
    an unknown table."""
    t = tables.get(table)
    if t is None:
        return None
    return _in_layout(t.layout, key)


cdef Gate _in_layout(object layout, bytes key):
    """The region of table layout ``layout`` holding ``key``; None for no
    layout (an unknown table)."""
    if layout is None:
        return None
    cdef list starts = <list>(<tuple?>layout)[0]
    cdef list regs = <list>(<tuple?>layout)[1]
    cdef Py_ssize_t lo = 0, hi = len(starts), mid
    while lo < hi:                       # bisect_right
        mid = (lo + hi) >> 1
        if _compare(key, <bytes>starts[mid]) < 0:
            hi = mid
        else:
            lo = mid + 1
    if lo == 0:
        return None
    return <Gate?>regs[lo - 1]


cdef class Router:
    """The single-key operations of ``RegionServer`` (its base class), in C:
    route, enter the gate, call the region's store, exit.  The subclass
    owns ``_tables`` and ``_enter_slow`` (unknown tables, regions in
    transition)."""

    cdef public dict _tables

    cdef Gate _enter_fast(self, object table, object key, object write):
        if type(key) is not bytes:
            check_key(key)
        r = _route(self._tables, table, key, write)
        if r is None:
            r = self._enter_slow(table, key, write)
        return <Gate?>r

    def put(self, table, key, value, sync=None):
        """Set ``key`` of ``table`` to ``value`` (``sync``: as ``lsm.DB.put``)."""
        cdef Gate r = self._enter_fast(table, key, True)
        try:
            r._db_put(key, value, sync)
        finally:
            r.exit()

    def delete(self, table, key, sync=None):
        """Delete ``key`` of ``table`` (no error if it is absent)."""
        cdef Gate r = self._enter_fast(table, key, True)
        try:
            r.db.delete(key, sync)
        finally:
            r.exit()

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
                r = self._enter_fast(table, (<tuple?>ops[0])[1], None)
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
                    r.exit()
        self._write_parts(table, batch, sync)

    def read_range(self, table, start, end):
        """Every ``(key, value)`` of ``[start, end)`` as one list: ``list(scan(...))``,
        in one read of one store when the range lies in one region and holds
        fewer than a scan chunk's entries (a row: how the data API reads one)."""
        cdef Gate r
        cdef list items
        if type(start) is bytes and type(end) is bytes and PyBytes_GET_SIZE(start):
            r = self._enter_fast(table, start, False)
            try:
                rend = r.end
                if not rend or _compare(<bytes>end, <bytes?>rend) <= 0:
                    items = r.db.scan_short(start, end, _MAX_CHUNK)
                    if len(items) < _MAX_CHUNK:
                        return items
            finally:
                r.exit()
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
        t = self._tables.get(table)
        layout = None if t is None else t.layout     # read once: a region in transition
        for i in range(n):                           # since is routed again below
            pair = ranges[i]
            r = _in_layout(layout, (<tuple>pair)[0]) if _short_range(pair) else None
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
            if not r.enter(False):      # in transition since located: route each again
                for i in idxs:
                    out[i] = self.read_range(table, *ranges[i])
                continue
            try:
                r.reads += len(idxs) - 1
                got = r.db.scan_short_many([ranges[i] for i in idxs], _MAX_CHUNK)
            finally:
                r.exit()
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
        cdef Gate r = self._enter_fast(table, key, False)
        try:
            return r._db_get(key)
        finally:
            r.exit()
