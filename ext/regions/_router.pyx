"""Routing in C: a table's regions as a layout (``Table``), the region that
holds a key (a bisect over start keys), and the single-key data operations
of the region server (``Router``: route, enter the region's gate, call its
store, exit).  ``RegionServer`` (regions/server.py) holds one ``Router``,
hands it the slow paths at construction (regions in transition, batches
across regions, scans) and binds its data operations as its own; the
regions are ``regions._region.Region``.

Thread-safety: as the region's gate (ext/regions/_region.pyx): routing reads
C fields and a layout replaced whole, and runs no Python code until it has
entered a region, so it needs no lock.
"""
import threading

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.string cimport memcmp

from lsm._api cimport (entry_fn, pairs_bytes, point_get, point_scan_into, point_scan_short,
                      write_pairs, write_put)
from regions._region cimport INTERNAL, READ, WRITE, Region, gate_kind, region_admit, region_leave

#: Scan batch sizes: a range is read in chunks of FIRST_CHUNK entries,
#: doubling up to MAX_CHUNK (RegionServer._chunks_forward).
FIRST_CHUNK = 64
MAX_CHUNK = 4096
cdef Py_ssize_t _FIRST_CHUNK = FIRST_CHUNK, _MAX_CHUNK = MAX_CHUNK


cdef object _write_arg(int kind):
    """``Region.enter``'s ``write`` of ``kind``."""
    return False if kind == READ else True if kind == WRITE else None


cdef object _NO_NAME = object()     # Router._loc_name when no table was routed


cdef inline int _compare(bytes a, bytes b) noexcept:
    cdef Py_ssize_t la = PyBytes_GET_SIZE(a), lb = PyBytes_GET_SIZE(b)
    cdef int c = memcmp(PyBytes_AS_STRING(a), PyBytes_AS_STRING(b), la if la < lb else lb)
    if c:
        return c
    return (la > lb) - (la < lb)


cdef inline bint _short_range(object pair):
    """``pair`` is a ``(start, end)`` of bytes, ``start`` not empty (what
    ``Router.read_range`` reads in one call of a store)."""
    return (type(pair) is tuple and len(<tuple>pair) == 2 and type((<tuple>pair)[0]) is bytes
            and type((<tuple>pair)[1]) is bytes and PyBytes_GET_SIZE((<tuple>pair)[0]) > 0)


cdef object _first_key(object pairs):
    """The key of the first of ``pairs``; None unless ``pairs`` is a
    non-empty list whose first item is a pair of a bytes key."""
    if type(pairs) is not list or not pairs:
        return None
    op = (<list>pairs)[0]
    if type(op) is not tuple or PyTuple_GET_SIZE(op) != 2:
        return None
    key = (<tuple>op)[0]
    return key if type(key) is bytes else None


cdef inline bint _in_range(bytes key, bytes start, object end) noexcept:
    """``start <= key < end``, ``end`` (bytes) None: unbounded."""
    return _compare(key, start) >= 0 and (end is None or _compare(key, <bytes>end) < 0)


cdef Py_ssize_t _len_within(list pairs, bytes start, object end) except -1:
    """The number of ``pairs`` when each is a pair whose key is bytes in
    ``[start, end)`` (``end`` None: unbounded), else 0."""
    cdef Py_ssize_t i, n = len(pairs)
    if end is not None and type(end) is not bytes:
        raise TypeError(f"end must be bytes or None, got {type(end).__name__}")
    for i in range(n):
        op = pairs[i]
        if type(op) is not tuple or PyTuple_GET_SIZE(op) != 2:
            return 0
        key = (<tuple>op)[0]
        if type(key) is not bytes or not _in_range(<bytes>key, start, end):
            return 0
    return n


def split_pairs(list pairs not None, bytes start not None, end=None):
    """``(inside, rest)``: the pairs of ``pairs`` (checked) whose key lies
    in ``[start, end)`` (``end`` None: unbounded) and the others, each in
    order; when every key lies inside, ``inside`` is ``pairs`` and ``rest``
    None.  How a write spanning regions is cut at each region's end
    (``RegionServer._write_parts``), each part one atomic store write."""
    cdef list inside, rest
    cdef tuple op
    if _len_within(pairs, start, end) == len(pairs):
        return pairs, None
    inside, rest = [], []
    for op in pairs:
        (inside if _in_range(<bytes?>op[0], start, end) else rest).append(op)
    return inside, rest


def check_key(key, name="key"):
    if type(key) is not bytes:
        raise TypeError(f"{name} must be bytes, got {type(key).__name__}")


cdef class Table:
    """A table's in-memory state: its ``layout``, (start keys, regions), the
    first start key b"", the start keys bytes in increasing order and the
    regions ``Region``\ s, one each, replaced whole, never changed in place;
    its ``hooks`` (the server's, handed in: what its stores and splits are
    configured with); and ``split_lock``, which serialises its splits,
    garbage collection and deletion.  Setting the layout checks it and
    keeps the two as tuples in C fields, which the router bisects on every
    operation without checking them again."""

    cdef tuple _layout
    cdef tuple _starts
    cdef tuple _regs
    cdef readonly object name, hooks, split_lock

    def __init__(self, name, hooks):
        self.name = name
        self.hooks = hooks
        self.split_lock = threading.Lock()
        self.layout = ([], [])

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
            if not isinstance(regs[i], Region):
                raise TypeError(f"a region must be a Region, got {regs[i]!r}")
        self._layout, self._starts, self._regs = value, starts, regs


cdef inline Region _in_layout(Table t, bytes key):
    """The region of ``t``'s layout holding ``key`` (None before its first
    start key, or when it has no layout yet)."""
    return _bisect_regions(t._starts, t._regs, key)


cdef Region _bisect_regions(tuple starts, tuple regs, bytes key):
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
    return <Region>PyTuple_GET_ITEM(regs, lo - 1)


cdef class Router:
    """The single-key data operations of a region server, in C: route,
    enter the region's gate, call its store, exit.  It holds the server's
    tables (name -> ``Table``) and is handed at construction the server's
    slow paths: ``enter_slow(table, key, write)`` (an unknown table, a
    region in transition: wait and route again), ``write_parts(table,
    batch, sync)`` (a batch that is not one region's) and ``scan(table,
    start, end)`` (a range past one region or one chunk)."""

    cdef dict _map                  # name -> Table
    cdef object _loc_name           # the table name last routed (identity; _NO_NAME: none) ...
    cdef Table _loc_table           # ... and its table: HBase's location cache, one entry
    cdef object _enter_slow, _write_parts, _scan

    def __init__(self, enter_slow, write_parts, scan):
        self._map = {}
        self._loc_name = _NO_NAME
        self._enter_slow, self._write_parts, self._scan = enter_slow, write_parts, scan

    @property
    def tables(self):
        """name -> ``Table``, one dict for the router's life: read it freely,
        change it only through ``put_table``, ``pop_table`` and
        ``clear_tables``, which forget the location cache in the same C call."""
        return self._map

    def put_table(self, name, Table table not None):
        self._map[name] = table
        self._forget_location()

    def pop_table(self, name):
        del self._map[name]
        self._forget_location()

    def clear_tables(self):
        self._map.clear()
        self._forget_location()

    def enter(self, table, key, write):
        """The region of ``table`` holding ``key``, entered (``write``: as
        ``Region.enter``'s), through the slow path when the fast one fails."""
        return self._enter_fast(table, key, gate_kind(write))

    cdef inline void _forget_location(self) noexcept:
        self._loc_name = _NO_NAME
        self._loc_table = None

    cdef Region _enter_fast(self, object table, object key, int kind):
        """The region holding ``key``, entered; the slow path when the table
        is unknown or the region not serving.  The table is found by the
        identity of its name when it is the one routed last (the name's
        dict lookup was the largest single cost of routing); the entry is
        forgotten in the same C call that changes the tables."""
        cdef Table t
        cdef Region r = None
        if type(key) is not bytes:
            check_key(key)
        if table is self._loc_name:
            t = self._loc_table
        else:
            got = self._map.get(table)
            t = None if got is None else <Table?>got
            if t is not None and type(table) is str:
                # An exact str: the lookup ran no Python code, so no removal
                # of the table came in between and the entry is current.
                self._loc_name, self._loc_table = table, t
        if t is not None:
            r = _in_layout(t, <bytes>key)
            if r is not None and not region_admit(r, kind):
                r = None
        if r is None:
            return <Region?>self._enter_slow(table, key, _write_arg(kind))
        return r

    def put(self, table, key, value, sync=None):
        """Set ``key`` of ``table`` to ``value`` (``sync``: as ``lsm.DB.put``)."""
        cdef Region r = self._enter_fast(table, key, WRITE)
        try:
            if r._wpath is not None:
                write_put(r._wpath, key, value, sync)
            else:
                r._db_put(key, value, sync)
        finally:
            region_leave(r)

    def delete(self, table, key, sync=None):
        """Delete ``key`` of ``table`` (no error if it is absent)."""
        cdef Region r = self._enter_fast(table, key, WRITE)
        try:
            r._db.delete(key, sync)
        finally:
            region_leave(r)

    def write(self, table, pairs, sync=None):
        """Apply ``pairs``, a list of ``(key, value)`` tuples (``value`` None:
        delete ``key``), in order.  Atomic when all its keys lie in one
        region (always true for one row): that case is one write of the
        region's store (``lsm.DB.write_pairs``, from C), routed here; any
        other list is checked whole (lsm's ``pairs_bytes``), then goes to
        the server's ``write_parts``, region by region, each part atomic
        (one WAL record, one sync): if a part fails after others were
        applied, ``PartialWriteError`` says which keys were."""
        cdef Region r
        cdef Py_ssize_t n
        key = _first_key(pairs)             # None: not a list of pairs, or empty
        if key is not None:
            # entered as internal work: the keys are counted once applied
            # (a write spanning regions is counted by _write_parts)
            r = self._enter_fast(table, key, INTERNAL)
            try:
                n = _len_within(<list>pairs, <bytes?>r.start, r.end or None)
                if n:
                    if r._wpath is not None:
                        write_pairs(r._wpath, pairs, sync)
                    else:
                        r._db.write_pairs(pairs, sync)
                    r.count_writes(n)
                    return
            finally:
                region_leave(r)
        if type(pairs) is not list:
            raise TypeError(f"pairs must be a list of (key, value) tuples, "
                            f"got {type(pairs).__name__}")
        pairs_bytes(pairs)                  # nothing applied when a pair is bad
        self._write_parts(table, pairs, sync)

    def read_range(self, table, start, end):
        """Every ``(key, value)`` of ``[start, end)`` as one list: ``list(scan(...))``,
        in one read of one store when the range lies in one region and holds
        fewer than a scan chunk's entries (a row: how the data API reads one)."""
        cdef Region r
        cdef list items
        if type(start) is bytes and type(end) is bytes and PyBytes_GET_SIZE(start):
            r = self._enter_fast(table, start, READ)
            try:
                rend = r.end
                if not rend or _compare(<bytes>end, <bytes?>rend) <= 0:
                    if r._point is not None:
                        items = point_scan_short(r._point, <bytes>start, <bytes>end, _MAX_CHUNK)
                    else:
                        items = r._db.scan_short(start, end, _MAX_CHUNK)
                    if len(items) < _MAX_CHUNK:
                        return items
            finally:
                region_leave(r)
        return list(self._scan(table, start, end))

    def read_ranges(self, table, list ranges not None):
        """``[read_range(table, start, end) for start, end in ranges]``, each
        region's ranges read in one call of its store
        (``lsm.DB.scan_short_many``), at one sequence, under one entry of
        its gate (each range counted as a read).  How BatchGetRow reads its
        rows."""
        cdef Py_ssize_t i, n = len(ranges)
        cdef list out = [None] * n, big = [], idxs
        cdef dict groups = {}           # region -> indices of its ranges, in order
        cdef Region r
        for pair in ranges:
            if type(pair) is not tuple or len(<tuple>pair) != 2:
                raise TypeError(f"ranges must hold (start, end) tuples, got {pair!r}")
        t = self._map.get(table)
        starts = None if t is None else (<Table?>t)._starts   # read once: a region in
        regs = None if t is None else (<Table>t)._regs        # transition since is routed
        got = self._one_region(table, starts, regs, ranges)   # again below
        if got is not None:
            return got
        for i in range(n):
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
            if not region_admit(r, READ):      # in transition since located: route each again
                for i in idxs:
                    out[i] = self.read_range(table, *ranges[i])
                continue
            try:
                r.reads += len(idxs) - 1
                got = r._db.scan_short_many([ranges[i] for i in idxs], _MAX_CHUNK)
            finally:
                region_leave(r)
            for i, items in zip(idxs, got):
                if len(<list>items) >= _MAX_CHUNK:
                    big.append(i)
                else:
                    out[i] = items
        for i in big:                   # read whole, across regions, through splits
            pair = ranges[i]
            out[i] = list(self._scan(table, (<tuple>pair)[0], (<tuple>pair)[1]))
        return out

    cdef list _one_region(self, table, tuple starts, tuple regs, list ranges):
        """``read_ranges``' answer when every range is short and lies in one
        region (a table of one region; a batch of neighbouring keys): that
        region's store read once over ``ranges`` as they are, with no grouping
        by region; None, having read nothing, otherwise or when the region is
        in transition (``read_ranges`` then routes each range)."""
        cdef Region r, only = None
        cdef Py_ssize_t i, n = len(ranges)
        cdef list got
        for pair in ranges:
            if not _short_range(pair):
                return None
            r = _bisect_regions(starts, regs, (<tuple>pair)[0])
            if r is None or (only is not None and r is not only):
                return None
            if r.end and _compare(<bytes>(<tuple>pair)[1], <bytes?>r.end) > 0:
                return None
            only = r
        if only is None or not region_admit(only, READ):
            return None
        try:
            only.reads += n - 1
            got = only._db.scan_short_many(ranges, _MAX_CHUNK)
        finally:
            region_leave(only)
        for i in range(n):
            if len(<list>got[i]) >= _MAX_CHUNK:    # read whole, through splits
                pair = ranges[i]
                got[i] = list(self._scan(table, (<tuple>pair)[0], (<tuple>pair)[1]))
        return got

    cdef int _scan_chunks(self, object table, bytes lo, object hi, bint reverse,
                          Py_ssize_t expect, entry_fn fn, void* ctx) except -1:
        """``range_scan_into``: RegionServer._chunks_forward's chunks, or
        with ``reverse`` _chunks_reverse's (its twins: the same regions,
        gates and chunk sizes), each handed to ``fn`` as it is read."""
        cdef Py_ssize_t chunk = _FIRST_CHUNK, n, count = 0
        cdef bint stopped = False
        cdef Region r
        rstart = rend = None
        while hi is None or _compare(lo, <bytes>hi) < 0:
            if reverse:
                r = <Region?>self._enter_slow(table, hi, False, True)
            else:
                r = self._enter_fast(table, lo, READ)
            n = min(chunk, expect) if expect > 0 else chunk
            try:
                if reverse:
                    rstart = <bytes?>r.start
                    sub_lo = (lo if _compare(lo, <bytes>rstart) >= 0 else rstart) or None
                    last = _scan_region(r, sub_lo, hi, n, True, fn, ctx, &count, &stopped)
                else:
                    rend = r.end
                    sub_hi = hi if not rend or (hi is not None
                                                and _compare(<bytes>hi, <bytes?>rend) < 0) else rend
                    last = _scan_region(r, lo or None, sub_hi, n, False, fn, ctx, &count,
                                        &stopped)
            finally:
                region_leave(r)
            if stopped:
                return 0
            expect -= count
            if count == n:                  # a full chunk: on in this region
                chunk = min(chunk * 2, _MAX_CHUNK)
                if reverse:
                    hi = last
                else:
                    lo = <bytes?>last + b"\x00"
            elif reverse:                   # a short one: the next region, or the end
                if _compare(<bytes>rstart, lo) <= 0:
                    return 0
                hi = rstart
            elif not rend or (hi is not None and _compare(<bytes>rend, <bytes>hi) >= 0):
                return 0
            else:
                lo = rend
        return 0

    def get(self, table, key):
        """The value of ``key`` of ``table``, or None."""
        cdef Region r = self._enter_fast(table, key, READ)
        try:
            if r._point is not None:
                return point_get(r._point, key)
            return r._db_get(key)
        finally:
            region_leave(r)


# -- the scan in C, for the layers above (regions/_api.pxd) --------------------
cdef object range_path(object server):
    """The ``Router`` that ``server.read_range`` is bound to (a
    ``RegionServer``'s, bound when it was made), or None: another kind of
    server, or LSM_REGIONS_PUREPYTHON (then its Python methods run, and so
    must its scans)."""
    path = getattr(getattr(server, "read_range", None), "__self__", None)
    return path if type(path) is Router else None


cdef int range_scan_into(object path, object table, object start, object end, bint reverse,
                         Py_ssize_t expect, entry_fn fn, void* ctx) except -1:
    """``RegionServer.scan(table, start, end, reverse, expect)``'s entries
    handed to ``fn(ctx, key, klen, value, vlen)`` in place, in order, until
    the range ends or ``fn`` asks to stop (lsm's ``point_scan_into``, one
    call a chunk): ``path`` a ``range_path``.  Returns 0; 1, having read
    nothing, when the scan is not one it takes (a table the router does not
    hold, a bound not bytes or None): the caller iterates ``scan``, which
    raises what it raises."""
    cdef Router router = <Router>path
    if (type(start) is not bytes and start is not None) or (type(end) is not bytes
                                                            and end is not None):
        return 1
    if table not in router._map:
        return 1
    router._scan_chunks(table, b"" if start is None else start, end, reverse, expect, fn, ctx)
    return 0


cdef object _scan_region(Region r, object lo, object hi, Py_ssize_t n, bint reverse, entry_fn fn,
                         void* ctx, Py_ssize_t* count, bint* stopped):
    """A chunk of the region's store handed to ``fn`` (``point_scan_into``;
    a store without the C path through its ``scan_chunk`` list): the last
    key handed over, ``*count`` entries, ``*stopped`` when ``fn`` said so."""
    cdef list items
    cdef bytes k, v
    if r._point is not None:
        return point_scan_into(r._point, lo, hi, n, reverse, None, fn, ctx, count, stopped)
    items = r._db.scan_chunk(lo, hi, n, reverse)
    count[0], stopped[0] = 0, False
    k = None
    for item in items:
        k, v = <bytes?>(<tuple?>item)[0], <bytes?>(<tuple>item)[1]
        count[0] += 1
        if fn(ctx, <const unsigned char*>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k),
              <const unsigned char*>PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v)):
            stopped[0] = True
            break
    return k
